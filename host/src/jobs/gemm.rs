//! What `tessel run gemm` and `tessel bench gemm` do.
//!
//! `run`: `gemm_sm80` on fresh random inputs into a poisoned C (or a random C when `beta != 0`),
//! compared with
//! - the `f64` reference within [`gemm_tolerance`](crate::blas::gemm_tolerance)'s bound: every
//!   element up to 2^30 multiply-adds, else every element of a random sample of rows (the first
//!   and last included);
//! - the kernel's own function on the simulated GPU ([`gemm_sm80`](crate::checks::gemm_sm80)) up to 2^25
//!   multiply-adds: every element written exactly once, no shared-memory race, within the bound
//!   of the reference;
//! - at the same sizes (K a multiple of 8), `gemm_sm90`'s own function on the simulated GPU
//!   ([`gemm_sm90`](crate::checks::gemm_sm90)) on the device's clusters (else [`SM90_CLUSTERS`]): every
//!   element written exactly once, no race, within the bound;
//! - the GPU's results against the simulated GPU's: the count of bit-equal elements, reported
//!   (the tensor cores' order of addition within an instruction is not specified, so a
//!   difference within the bound is not a failure);
//! - cuBLAS on the same inputs, every element, within [`pair_bound`] (the sum of the two
//!   results' bounds, from magnitudes `|A| |B|^T` that cuBLAS computes too).
//!
//! `bench`: TFLOP/s of `gemm_sm80` and of cuBLAS on the same inputs in the same run, beside the
//! `mma.sync` ceiling measured by a register-only microbenchmark.

use layout_core::Layout;

use crate::blas::{self, gemm_reference_and_tolerance, pair_bound, Blas};
use crate::checks::gemm_sm80::{Fill, Inputs};
use crate::elem::{Elem, Rng};
use crate::jobs::Verdict;
use crate::runtime::gpu::{row_major, DeviceTensor, Gpu, GpuError, MappedGemm, Result};

pub use crate::checks::gemm_sm80::{GemmIn, GemmOut};

/// The simulated GPU's schedule for a check: `TESSEL_SIM_SEED` when set (a failing check's
/// replay), else drawn from `rng`.
pub(crate) fn sim_seed(rng: &mut Rng) -> u64 {
    std::env::var("TESSEL_SIM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| rng.next_u64() % 1_000_000)
}

/// The most multiply-adds checked against the full `f64` reference (beyond: sampled rows).
pub const FULL_REFERENCE: usize = 1 << 30;
/// The most multiply-adds run by the host execution.
pub const HOST_EXECUTION: usize = 1 << 25;
/// The most multiply-adds over whole tiles (pairs of `BM` rows, `BN` columns, `BK` of K: what
/// the simulated wgmmas compute) of `gemm_sm90` on the simulated GPU: degenerate shapes (one
/// row, a long K) cost far more than `m n k`.
pub const SM90_HOST_WORK: usize = 1 << 31;

/// `gemm_sm90`'s multiply-adds over whole tiles at `m x n x k`.
fn sm90_padded_work([m, n, k]: [usize; 3]) -> usize {
    use tessel_gpu::gemm::{BK, BM, BN};
    use tessel_gpu::gemm_sm90::CLUSTER_M;
    let pair = (CLUSTER_M * BM) as usize;
    let up = |x: usize, t: usize| x.div_ceil(t) * t;
    up(m, pair) * up(n, BN as usize) * up(k, BK as usize)
}

/// The clusters of `gemm_sm90` on the simulated GPU when no device says how many fit at once (an
/// H100 SXM's 132 SMs hold 66 clusters of two).
pub const SM90_CLUSTERS: i64 = 66;

/// The rows a check compares with the reference: all of them when `m n k` is at most
/// [`FULL_REFERENCE`], else up to 64 drawn at random plus the first and the last.
pub(crate) fn rows_to_check([m, n, k]: [usize; 3], rng: &mut Rng) -> Vec<usize> {
    if m * n * k <= FULL_REFERENCE {
        return (0..m).collect();
    }
    let mut r: Vec<usize> = (0..64)
        .map(|_| (rng.next_u64() % m as u64) as usize)
        .collect();
    r.extend([0, m - 1]);
    r.sort_unstable();
    r.dedup();
    r
}

/// `rows` of `a` (`(M,K)` row-major) packed.
pub(crate) fn take_rows<T: Copy>(a: &[T], cols: usize, rows: &[usize]) -> Vec<T> {
    rows.iter()
        .flat_map(|&i| a[i * cols..(i + 1) * cols].iter().copied())
        .collect()
}

/// `gemm_<I>_<O>` at `m x n x k`, checked as the module says; `beta` 0 (C poisoned, not read)
/// when `beta_zero`, else random.
pub fn run_gemm<I: GemmIn, O: GemmOut + blas::GemmOut<I>>(
    gpu: Option<&Gpu>,
    mnk: [usize; 3],
    beta_zero: bool,
    rng: &mut Rng,
) -> Result<Verdict>
where
    f32: blas::GemmOut<I>,
{
    let [m, n, k] = mnk;
    let what = format!("gemm_{}_{} {m}x{n}x{k}", I::NAME, O::NAME);
    let x = Inputs::<I, O> {
        mnk,
        a: rng.fill(m * k),
        b: rng.fill(n * k),
        c: rng.fill(m * n),
        alpha: (0.5 + rng.uniform().abs()) as f32,
        beta: if beta_zero { 0.0 } else { rng.uniform() as f32 },
    };
    let mut lines = vec![];
    let mut ok = true;
    // a check's line (a macro: other lines are pushed between the checks)
    macro_rules! say {
        ($pass:expr, $line:expr $(,)?) => {{
            let pass: bool = $pass;
            ok &= pass;
            lines.push(format!(
                "{what}: {} {}",
                if pass { "OK" } else { "FAIL" },
                $line
            ));
        }};
    }
    // the kernels' own functions on the simulated GPU (small sizes), against the reference; their
    // results kept for the GPU's
    let (mut sim80, mut sim90) = (None, None);
    if m * n * k <= HOST_EXECUTION {
        let (want, tol) =
            gemm_reference_and_tolerance::<I, O>(&x.a, &x.b, &x.c, m, n, k, x.alpha, x.beta);
        let seed = sim_seed(rng);
        match crate::checks::gemm_sm80::simulate::<I, O, 0>(&x, Fill::CpAsync, seed) {
            Ok(c) => {
                let chk = blas::check_gemm(&c, &want, &tol, n);
                say!(chk.ok(), format!("simulated (seed {seed}): each C element written once, no shared-memory race; vs the f64 reference: {chk}"));
                sim80 = Some(c);
            }
            Err(e) => say!(false, format!("simulated (seed {seed}): {e}")),
        }
        // gemm_sm90 on the device's clusters if known
        let clusters = gpu
            .map(|g| g.sm90_clusters())
            .filter(|&c| c > 0)
            .unwrap_or(SM90_CLUSTERS);
        let who = format!("gemm_sm90 simulated on {clusters} clusters (seed {seed})");
        let padded = sm90_padded_work([m, n, k]);
        if k % 8 != 0 {
            lines.push(format!(
                "{what}: {who}: not run (K not a multiple of 8: the copy engine's rows are multiples of 16 bytes)"
            ));
        } else if padded > SM90_HOST_WORK {
            lines.push(format!(
                "{what}: {who}: not run ({padded} multiply-adds over whole tiles, beyond 2^{})",
                SM90_HOST_WORK.ilog2()
            ));
        } else {
            match crate::checks::gemm_sm90::simulate::<I, O, 0>(&x, clusters, seed) {
                Ok(c) => {
                    let chk = blas::check_gemm(&c, &want, &tol, n);
                    say!(chk.ok(), format!("{who}: each C element written once, no race (wgmma's and the copy engine's accesses included); vs the f64 reference: {chk}"));
                    sim90 = Some(c);
                }
                Err(e) => say!(false, format!("{who}: {e}")),
            }
        }
    }
    let Some(g) = gpu else {
        return Ok(Verdict::without_gpu(&what, lines, ok));
    };
    let got = device_gemm(g, &x, mnk, |a, b, c| g.gemm(a, b, c, x.alpha, x.beta))?;
    // the f64 reference, at every row or a sample of them
    let rows = rows_to_check(mnk, rng);
    let (ra, rc, rg) = (
        take_rows(&x.a, k, &rows),
        take_rows(&x.c, n, &rows),
        take_rows(&got, n, &rows),
    );
    let r = rows.len();
    let (want, tol) =
        gemm_reference_and_tolerance::<I, O>(&ra, &x.b, &rc, r, n, k, x.alpha, x.beta);
    let chk = blas::check_gemm(&rg, &want, &tol, n);
    let which = if r == m {
        "every element".to_string()
    } else {
        format!("{r} sampled rows")
    };
    say!(
        chk.ok(),
        format!("GPU vs the f64 reference ({which}): {chk}"),
    );
    if let Some(sim) = &sim80 {
        lines.push(format!("{what}: {}", bit_equality(&got, sim)));
    }
    // the stages filled by the copy engine: TMA loads (sm_90), wgmma (sm_90a PTX); rows of a
    // multiple of 16 bytes
    for kind in MappedGemm::ALL {
        if g.has_mapped_gemm::<I, O>(kind) && k % 8 == 0 {
            let got = device_gemm(g, &x, mnk, |a, b, c| {
                let maps = crate::runtime::tma::GemmMaps::new(g, a, b, c)?;
                g.gemm_mapped(kind, &maps, a, b, c, x.alpha, x.beta)
            })?;
            let chk = blas::check_gemm(&take_rows(&got, n, &rows), &want, &tol, n);
            say!(
                chk.ok(),
                format!(
                    "{} ({}) vs the f64 reference ({which}): {chk}",
                    kind.name(),
                    kind.what()
                ),
            );
            if let (MappedGemm::Sm90, Some(sim)) = (kind, &sim90) {
                lines.push(format!("{what}: gemm_sm90 {}", bit_equality(&got, sim)));
            }
        }
    }
    // the other majors (A M-major, B N-major: the element loads) on the same inputs
    if m * n * k <= HOST_EXECUTION && r == m {
        let t = |v: &[I], rows: usize| -> Vec<I> {
            (0..rows * k)
                .map(|e| v[(e % rows) * k + e / rows])
                .collect()
        };
        let col = |rows: usize| {
            Layout::from_parts(
                layout_core::IntTuple::from_ints(&[rows as i64, k as i64]).expect("a shape"),
                &[1, rows as i64],
            )
            .map_err(|e| GpuError::Invalid(e.to_string()))
        };
        let da = g.upload(&t(&x.a, m), col(m)?)?;
        let db = g.upload(&t(&x.b, n), col(n)?)?;
        let lc = row_major(m as i64, n as i64)?;
        let mut dc = if x.beta == 0.0 {
            g.filled(lc, O::poison())?
        } else {
            g.upload(&x.c, lc)?
        };
        g.gemm(&da, &db, &mut dc, x.alpha, x.beta)?;
        let chk = blas::check_gemm(&g.download(&dc)?, &want, &tol, n);
        say!(
            chk.ok(),
            format!("GPU, A M-major and B N-major, vs the f64 reference (every element): {chk}"),
        );
    }
    // cuBLAS, every element
    match Blas::new(g) {
        Ok(blas) => {
            let theirs = device_gemm(g, &x, mnk, |a, b, c| blas.gemm_tn(a, b, c, x.alpha, x.beta))?;
            let mag = magnitudes(g, &blas, &x, mnk)?;
            let mut worst = (0.0f64, 0usize);
            for (idx, (mine, th)) in got.iter().zip(&theirs).enumerate() {
                let (i, j) = (idx / n, idx % n);
                let cij = if x.beta == 0.0 {
                    0.0
                } else {
                    x.c[idx].to_f64()
                };
                let big = f64::from(x.alpha).abs() * mag[idx] + f64::from(x.beta).abs() * cij.abs();
                let bound = pair_bound::<O>(th.to_f64(), big, k);
                let err = (mine.to_f64() - th.to_f64()).abs();
                let rel = if err.is_finite() {
                    err / bound
                } else {
                    f64::INFINITY
                };
                if rel > worst.0 || (idx == 0 && rel.is_nan()) {
                    worst = (rel, i * n + j);
                }
            }
            let (i, j) = (worst.1 / n, worst.1 % n);
            say!(worst.0 <= 1.0, format!("GPU vs cuBLAS (every element): worst {:.3} of the bound at [{i},{j}] ({:?} vs {:?})", worst.0, got[worst.1], theirs[worst.1]));
        }
        Err(e) => lines.push(format!("{what}: cuBLAS not compared ({e})")),
    }
    Ok(Verdict {
        skipped: false,
        ok,
        line: lines.join("\n"),
    })
}

/// How many elements of the GPU's C have the simulated GPU's bits, as a line. Not a check: the
/// tensor cores add each instruction's products in an order (and with an alignment) the PTX ISA
/// leaves unspecified, which the simulated GPU does not reproduce (it adds them exactly in `f64`
/// and rounds once per instruction); both are checked against the `f64` reference's bound.
fn bit_equality<O: GemmOut>(gpu: &[O], sim: &[O]) -> String {
    let same = crate::elem::same_bits(gpu, sim);
    format!(
        "GPU vs the simulated GPU: {same} of {} elements bit-equal (not a check: the tensor cores' order of addition within an instruction is unspecified)",
        gpu.len()
    )
}

/// Runs `f(a, b, c)` on the device copies of the inputs (C poisoned when `beta` is 0) and
/// returns C.
fn device_gemm<I: GemmIn, O: GemmOut>(
    g: &Gpu,
    x: &Inputs<I, O>,
    [m, n, k]: [usize; 3],
    f: impl FnOnce(&DeviceTensor<I>, &DeviceTensor<I>, &mut DeviceTensor<O>) -> Result<()>,
) -> Result<Vec<O>> {
    let da = g.upload(&x.a, row_major(m as i64, k as i64)?)?;
    let db = g.upload(&x.b, row_major(n as i64, k as i64)?)?;
    let lc = row_major(m as i64, n as i64)?;
    let mut dc = if x.beta == 0.0 {
        g.filled(lc, O::poison())?
    } else {
        g.upload(&x.c, lc)?
    };
    f(&da, &db, &mut dc)?;
    g.download(&dc)
}

/// `|A| |B|^T` in `f32` by cuBLAS (the magnitudes of each element's products), enlarged by its
/// own worst rounding (`3 (K + 1) 2^-23` relative) so that it bounds the exact sums.
fn magnitudes<I: GemmIn, O: GemmOut>(
    g: &Gpu,
    blas: &Blas,
    x: &Inputs<I, O>,
    [m, n, k]: [usize; 3],
) -> Result<Vec<f64>>
where
    f32: blas::GemmOut<I>,
{
    let abs = |v: &[I]| -> Vec<I> { v.iter().map(|e| I::from_f64(e.to_f64().abs())).collect() };
    let da = g.upload(&abs(&x.a), row_major(m as i64, k as i64)?)?;
    let db = g.upload(&abs(&x.b), row_major(n as i64, k as i64)?)?;
    let mut dc = g.filled(row_major(m as i64, n as i64)?, 0f32)?;
    blas.gemm_tn(&da, &db, &mut dc, 1.0, 0.0)?;
    let grow = 1.0 + 3.0 * (k + 1) as f64 * 2f64.powi(-23);
    Ok(g.download(&dc)?
        .into_iter()
        .map(|v| f64::from(v) * grow)
        .collect())
}

/// A GEMM timing.
#[derive(Debug, Clone)]
pub struct GemmTiming {
    /// What was timed.
    pub what: String,
    /// Median milliseconds.
    pub ms: f64,
    /// `2 M N K / time`, in TFLOP/s.
    pub tflops: f64,
}

impl GemmTiming {
    fn of(what: String, ms: &[f64], flops: f64) -> Self {
        let t = ms[ms.len() / 2];
        GemmTiming {
            what,
            ms: t,
            tflops: flops / (t * 1e-3) / 1e12,
        }
    }
}

/// One size's timings: `gemm_sm80`, its TMA variant (sm_90), cuBLAS (when it loads).
#[derive(Debug)]
pub struct GemmBench {
    /// `gemm_<I>_<O>`.
    pub ours: GemmTiming,
    /// `gemm_tma_<I>_<O>` and `gemm_sm90_<I>_<O>`, those the loaded PTX has ([`MappedGemm`]).
    pub mapped: Vec<Result<GemmTiming>>,
    /// cuBLAS on the same inputs.
    pub blas: Option<Result<GemmTiming>>,
}

/// Times `gemm_<I>_<O>`, `gemm_tma_<I>_<O>`, `gemm_sm90_<I>_<O>` and cuBLAS at `m x n x k`
/// (`beta` 0) on the same random inputs in the same run, launch by launch in turn
/// ([`Gpu::time_interleaved`]: each sees the device as hot as the others), each into its own C.
pub fn bench_gemm<I: GemmIn, O: GemmOut + blas::GemmOut<I>>(
    g: &Gpu,
    [m, n, k]: [usize; 3],
    reps: usize,
    rng: &mut Rng,
) -> Result<GemmBench> {
    let da = g.upload(&rng.fill::<I>(m * k), row_major(m as i64, k as i64)?)?;
    let db = g.upload(&rng.fill::<I>(n * k), row_major(n as i64, k as i64)?)?;
    let c = || -> Result<DeviceTensor<O>> { g.filled(row_major(m as i64, n as i64)?, O::poison()) };
    let flops = 2.0 * (m * n * k) as f64;
    let what = |who: &str| format!("{who}_{}_{} {m}x{n}x{k}", I::NAME, O::NAME);
    let blas = match Blas::new(g) {
        Ok(b) => Some(b),
        Err(GpuError::NoBlas(_)) => None,
        Err(e) => return Err(e),
    };
    let mapped: Vec<MappedGemm> = MappedGemm::ALL
        .into_iter()
        .filter(|&kind| g.has_mapped_gemm::<I, O>(kind))
        .collect();
    let mut c_ours = c()?;
    let mut ours = || g.gemm(&da, &db, &mut c_ours, 1.0, 0.0);
    // gemm_sm90 twice: C by the copy engine, and (its maps without C's) by its threads
    let mapped: Vec<(MappedGemm, bool)> = mapped
        .into_iter()
        .flat_map(|kind| {
            let twice = kind == MappedGemm::Sm90;
            [(kind, true)]
                .into_iter()
                .chain(twice.then_some((kind, false)))
        })
        .collect();
    let mut c_mapped = mapped
        .iter()
        .map(|&(_, c_map)| {
            let dc = c()?;
            let mut maps = crate::runtime::tma::GemmMaps::new(g, &da, &db, &dc)?;
            if !c_map {
                maps.c = None;
            }
            Ok((dc, maps))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut mapped_fs: Vec<_> = mapped
        .iter()
        .zip(&mut c_mapped)
        .map(|(&(kind, _), (dc, maps))| {
            let (da, db) = (&da, &db);
            move || g.gemm_mapped(kind, maps, da, db, dc, 1.0, 0.0)
        })
        .collect();
    let mut c_blas = c()?;
    let mut theirs = || match &blas {
        Some(b) => b.gemm_tn(&da, &db, &mut c_blas, 1.0, 0.0),
        None => Ok(()),
    };
    let mut fs: Vec<&mut dyn FnMut() -> Result<()>> = vec![&mut ours];
    for f in &mut mapped_fs {
        fs.push(f);
    }
    if blas.is_some() {
        fs.push(&mut theirs);
    }
    let ms = g.time_interleaved(5, reps, &mut fs)?;
    let ours = GemmTiming::of(what("gemm"), &ms[0], flops);
    let mapped = mapped
        .iter()
        .zip(&ms[1..])
        .map(|(&(kind, c_map), ms)| {
            let mut who = what(kind.name());
            if kind == MappedGemm::Sm90 {
                let c = tessel_gpu::gemm_sm90::CLUSTER_M;
                who += &format!(" ({} clusters of {c})", g.sm90_clusters());
                if !c_map {
                    who += ", C stored by its threads";
                }
            }
            Ok(GemmTiming::of(who, ms, flops))
        })
        .collect();
    let blas = blas
        .is_some()
        .then(|| Ok(GemmTiming::of(what("cublas"), &ms[ms.len() - 1], flops)));
    Ok(GemmBench { ours, mapped, blas })
}

/// The wgmma ceiling (`wgmma_peak_bf16`, sm_90a PTX): one block of three warpgroups per SM, in
/// TFLOP/s; `None` when the loaded PTX has no wgmma (not built for `sm_90a`).
pub fn bench_wgmma_peak(g: &Gpu, reps: usize) -> Option<Result<GemmTiming>> {
    let blocks = i64::from(g.sms());
    let iters = 2048;
    let run = || -> Result<GemmTiming> {
        let threads = blocks * tessel_gpu::wgmma_peak::THREADS;
        let l =
            Layout::parse(&format!("{threads}:1")).map_err(|e| GpuError::Invalid(e.to_string()))?;
        let mut out: DeviceTensor<f32> = g.filled(l, 0.0)?;
        let mut flops = 0.0;
        let (ms, _) = g.time(3, reps, || {
            flops = g.wgmma_peak(blocks, iters, &mut out)?;
            Ok(())
        })?;
        Ok(GemmTiming::of(
            format!("wgmma_peak_bf16 ({blocks} blocks x 3 warpgroups x {iters} x 4 m64n256k16)"),
            &ms,
            flops,
        ))
    };
    match run() {
        Err(GpuError::Invalid(e)) if e.contains("no kernel") => None,
        r => Some(r),
    }
}

/// The `mma.sync.m16n8k16` ceiling: `mma_peak_<I>` over `per_sm` blocks of 8 warps per SM, in
/// TFLOP/s.
pub fn bench_mma_peak<I: Elem>(g: &Gpu, per_sm: i64, reps: usize) -> Result<GemmTiming> {
    let blocks = per_sm * i64::from(g.sms());
    let iters = 4096;
    let threads = blocks * tessel_gpu::mma_peak::THREADS;
    let l = Layout::parse(&format!("{threads}:1")).map_err(|e| GpuError::Invalid(e.to_string()))?;
    let mut out: DeviceTensor<f32> = g.filled(l, 0.0)?;
    let mut flops = 0.0;
    let (ms, _) = g.time(3, reps, || {
        flops = g.mma_peak::<I>(blocks, iters, &mut out)?;
        Ok(())
    })?;
    Ok(GemmTiming::of(
        format!(
            "mma_peak_{} ({blocks} blocks x 8 warps x {iters} x 8 mma)",
            I::NAME
        ),
        &ms,
        flops,
    ))
}

#[cfg(test)]
mod tests {
    use tessel_gpu::gemm::raster;

    /// The raster numbers the block tiles one to one, whatever the tile counts.
    #[test]
    fn the_raster_is_a_bijection() {
        for tm in 1..40 {
            for tn in 1..12 {
                let mut seen = vec![false; (tm * tn) as usize];
                for b in 0..tm * tn {
                    let [m, n] = raster(b, tm, tn);
                    assert!(
                        (0..tm).contains(&m) && (0..tn).contains(&n),
                        "{tm}x{tn}: {b}"
                    );
                    let i = (m + tm * n) as usize;
                    assert!(!seen[i], "{tm}x{tn}: tile ({m},{n}) twice");
                    seen[i] = true;
                }
            }
        }
    }
}
