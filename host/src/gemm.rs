//! What `tessel run gemm` and `tessel bench gemm` do: `gemm_sm80` on fresh random inputs into a
//! poisoned C, checked against an `f64` reference (every row at small sizes, a random sample of
//! rows at large ones) within a sound error bound; timed in TFLOP/s beside the `mma.sync`
//! ceiling measured in the same run.

use half::{bf16, f16};
use layout_core::Layout;

use crate::elem::{Elem, Rng};
use crate::gpu::{row_major, DeviceTensor, Gpu, GpuError, Result};
use crate::jobs::Verdict;

/// An input type of the GEMM (`bf16`, `f16`).
pub trait GemmIn: Elem + tessel_gpu::gemm::GemmIn {}
impl GemmIn for bf16 {}
impl GemmIn for f16 {}

/// An output type of the GEMM (`bf16`, `f16`, `f32`).
pub trait GemmOut: Elem + tessel_gpu::rmsnorm::Elem {
    /// The unit roundoff of the type: half the distance from 1 to the next value.
    const UNIT: f64;
}
impl GemmOut for bf16 {
    const UNIT: f64 = 1.0 / 256.0;
}
impl GemmOut for f16 {
    const UNIT: f64 = 1.0 / 2048.0;
}
impl GemmOut for f32 {
    const UNIT: f64 = 1.0 / 16_777_216.0;
}

/// Row `i` of `alpha a b^T + beta c` in `f64` from the (rounded) inputs, with the bound on each
/// element's error of an `f32`-accumulating kernel rounding to `O` once:
/// `|got - want| <= u_O |want| + 2 K 2^-24 |alpha| sum_k |a_ik b_jk| (1 + u_O) + |beta c| 2^-24`.
/// (Products of 16-bit inputs are exact in `f32`; `K` additions in `f32` lose at most `K u` of
/// the sum of magnitudes — doubled, as the tensor cores' internal accumulation need not round
/// to nearest — and the result is rounded to `O` once.)
#[allow(clippy::too_many_arguments)]
pub fn reference_row<I: Elem, O: Elem>(
    a: &[I],
    b: &[I],
    c: &[O],
    [_m, n, k]: [usize; 3],
    i: usize,
    alpha: f64,
    beta: f64,
    unit: f64,
) -> Vec<(f64, f64)> {
    let ai: Vec<f64> = a[i * k..(i + 1) * k].iter().map(|x| x.to_f64()).collect();
    (0..n)
        .map(|j| {
            let bj = &b[j * k..(j + 1) * k];
            let (mut s, mut mag) = (0.0, 0.0);
            for (x, y) in ai.iter().zip(bj) {
                let p = x * y.to_f64();
                s += p;
                mag += p.abs();
            }
            let old = if beta != 0.0 {
                beta * c[i * n + j].to_f64()
            } else {
                0.0
            };
            let want = alpha * s + old;
            let u32_ = 1.0 / 16_777_216.0;
            let bound = unit * want.abs()
                + (2.0 * k as f64 * u32_ * alpha.abs() * mag + old.abs() * u32_) * (1.0 + unit)
                + f64::MIN_POSITIVE;
            (want, bound)
        })
        .collect()
}

/// The rows a check compares: all of them up to 256, else 128 drawn at random plus the first
/// and the last (ragged edges included).
fn rows_to_check(m: usize, rng: &mut Rng) -> Vec<usize> {
    if m <= 256 {
        return (0..m).collect();
    }
    let mut r: Vec<usize> = (0..128)
        .map(|_| (rng.next_u64() % m as u64) as usize)
        .collect();
    r.extend([0, m - 1]);
    r.sort_unstable();
    r.dedup();
    r
}

/// `gemm_<I>_<O>` at `m x n x k` (`alpha`, `beta` random, `beta` 0 on every other call) against
/// the reference; on the host only the reference's own sanity is checked when there is no GPU.
pub fn run_gemm<I: GemmIn, O: GemmOut>(
    gpu: Option<&Gpu>,
    [m, n, k]: [usize; 3],
    beta_zero: bool,
    rng: &mut Rng,
) -> Result<Verdict> {
    let what = format!("gemm_{}_{} {m}x{n}x{k}", I::NAME, O::NAME);
    let Some(g) = gpu else {
        return Ok(Verdict {
            ok: true,
            line: format!("{what}: no GPU, not run"),
        });
    };
    let a: Vec<I> = rng.fill(m * k);
    let b: Vec<I> = rng.fill(n * k);
    let c0: Vec<O> = rng.fill(m * n);
    let alpha = 0.5 + rng.uniform().abs();
    let beta = if beta_zero { 0.0 } else { rng.uniform() };
    let da = g.upload(&a, row_major(m as i64, k as i64)?)?;
    let db = g.upload(&b, row_major(n as i64, k as i64)?)?;
    let lc = row_major(m as i64, n as i64)?;
    // beta 0: C starts poisoned (never read); else it holds the random old C
    let mut dc = if beta_zero {
        g.filled(lc, O::poison())?
    } else {
        g.upload(&c0, lc)?
    };
    g.gemm(&da, &db, &mut dc, alpha as f32, beta as f32)?;
    let got = g.download(&dc)?;
    let rows = rows_to_check(m, rng);
    let mut worst = (0.0f64, 0usize, 0usize);
    let mut bad = None;
    for &i in &rows {
        let want = reference_row(
            &a,
            &b,
            &c0,
            [m, n, k],
            i,
            f64::from(alpha as f32),
            f64::from(beta as f32),
            O::UNIT,
        );
        for (j, (w, bound)) in want.into_iter().enumerate() {
            let x = got[i * n + j].to_f64();
            let err = (x - w).abs();
            if err.partial_cmp(&bound).is_none_or(|o| o.is_gt()) && bad.is_none() {
                bad = Some(format!("C[{i},{j}] = {x} vs {w} (bound {bound:.3e})"));
            }
            let rel = err / bound;
            if rel > worst.0 {
                worst = (rel, i, j);
            }
        }
    }
    let checked = if rows.len() == m {
        "all rows".to_string()
    } else {
        format!("{} sampled rows", rows.len())
    };
    Ok(match bad {
        Some(e) => Verdict { ok: false, line: format!("{what}: FAIL {e}") },
        None => Verdict {
            ok: true,
            line: format!(
                "{what}: OK ({checked} vs the f64 reference, alpha {alpha:.3} beta {beta:.3}; worst error {:.2} of its bound at [{},{}])",
                worst.0, worst.1, worst.2
            ),
        },
    })
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

/// Times `gemm_<I>_<O>` at `m x n x k` (`beta` 0) on random inputs.
pub fn bench_gemm<I: GemmIn, O: GemmOut>(
    g: &Gpu,
    [m, n, k]: [usize; 3],
    reps: usize,
    rng: &mut Rng,
) -> Result<GemmTiming> {
    let da = g.upload(&rng.fill::<I>(m * k), row_major(m as i64, k as i64)?)?;
    let db = g.upload(&rng.fill::<I>(n * k), row_major(n as i64, k as i64)?)?;
    let mut dc: DeviceTensor<O> = g.filled(row_major(m as i64, n as i64)?, O::poison())?;
    let (ms, _) = g.time(5, reps, || g.gemm(&da, &db, &mut dc, 1.0, 0.0))?;
    let t = ms[ms.len() / 2];
    Ok(GemmTiming {
        what: format!("gemm_{}_{} {m}x{n}x{k}", I::NAME, O::NAME),
        ms: t,
        tflops: 2.0 * (m * n * k) as f64 / (t * 1e-3) / 1e12,
    })
}

/// The `mma.sync.m16n8k16` ceiling: `mma_peak_<I>` over `per_sm` blocks of 8 warps per SM, in
/// TFLOP/s.
pub fn bench_mma_peak<I: Elem>(g: &Gpu, per_sm: i64, reps: usize) -> Result<GemmTiming> {
    let blocks = per_sm * i64::from(g.sms());
    let iters = 4096;
    let mut out: DeviceTensor<f32> = g.filled(
        Layout::parse(&format!("{}:1", blocks * 256))
            .map_err(|e| GpuError::Invalid(e.to_string()))?,
        0.0,
    )?;
    let mut flops = 0.0;
    let (ms, _) = g.time(3, reps, || {
        flops = g.mma_peak::<I>(blocks, iters, &mut out)?;
        Ok(())
    })?;
    let t = ms[ms.len() / 2];
    Ok(GemmTiming {
        what: format!(
            "mma_peak_{} ({blocks} blocks x 8 warps x {iters} x 8 mma)",
            I::NAME
        ),
        ms: t,
        tflops: flops / (t * 1e-3) / 1e12,
    })
}
