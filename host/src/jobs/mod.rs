//! What `tessel run` and `tessel bench` do for each kernel: fresh random input, a poisoned output,
//! the device's result compared with the host execution of the same partitioning (which is itself
//! checked against the definition and for exactly-once coverage), and timings beside a
//! device-to-device copy of the same bytes.
//!
//! [`attention`]: the attention forward's check; [`gemm`]: the GEMMs' checks and timings; [`peer`]: peers (torch) timed in the same run.

pub mod attention;
pub mod gemm;
pub mod peer;

use std::mem::size_of;

use layout_core::{FlatLayout, Layout};
use tessel_gpu::axpby::{Axpby, AxpbyParams};
use tessel_gpu::copy::VecCopy;
use tessel_gpu::ctx::{Entry, Kernel};
use tessel_gpu::mem::{Device, Gmem};
use tessel_gpu::real::Real;

use crate::checks::exec;
use crate::elem::{Elem, RmsElem, Rng, TransposeTile};
use crate::runtime::gpu::{row_major, DeviceTensor, Gpu, GpuError, Result};
use crate::tune::{CopyConfig, RmsConfig, TransposeConfig};

/// The outcome of one check.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Did everything agree?
    pub ok: bool,
    /// One line saying what was compared and what came out.
    pub line: String,
    /// Nothing was compared (no GPU, and beyond what the host execution runs): `ok` says only
    /// that nothing failed.
    pub skipped: bool,
}

impl Verdict {
    /// A check run without a GPU: its host lines (`ok`: whether they passed), or where it ran
    /// none, a line saying so (skipped, not passed).
    pub fn without_gpu(what: &str, mut lines: Vec<String>, ok: bool) -> Verdict {
        let skipped = lines.is_empty();
        if skipped {
            lines.push(format!(
                "{what}: not run (no GPU; the host execution runs up to 2^25 multiply-adds)"
            ));
        }
        Verdict {
            ok,
            skipped,
            line: lines.join("\n"),
        }
    }
}

fn first_mismatch<T: Elem>(a: &[T], b: &[T]) -> Option<(usize, usize)> {
    let bad = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.bits() != y.bits())
        .count();
    let first = a.iter().zip(b).position(|(x, y)| x.bits() != y.bits())?;
    Some((first, bad))
}

/// Checks a host execution: exactly-once coverage and `want` (the definition), bit for bit.
fn check_host<T: Elem>(run: &exec::Run<T>, want: &[T]) -> std::result::Result<(), String> {
    if let Some((i, w)) = run.coverage_error() {
        return Err(format!("host execution wrote element {i} {w} times"));
    }
    if let Some((i, bad)) = first_mismatch(&run.out, want) {
        return Err(format!(
            "host execution differs from the definition at {i} ({bad} elements): {:?} vs {:?}",
            run.out[i], want[i]
        ));
    }
    Ok(())
}

fn finish<T: Elem>(
    what: String,
    host: &exec::Run<T>,
    want: &[T],
    device: Option<Vec<T>>,
) -> Verdict {
    if let Err(e) = check_host(host, want) {
        return Verdict {
            skipped: false,
            ok: false,
            line: format!("{what}: FAIL {e}"),
        };
    }
    let n = want.len();
    match device {
        None => Verdict {
            skipped: false,
            ok: true,
            line: format!("{what}: host execution OK ({n} elements, each written exactly once, equal to the definition)"),
        },
        Some(dev) => match first_mismatch(&dev, &host.out) {
            None => Verdict {
                skipped: false,
                ok: true,
                line: format!("{what}: PASS device = host execution, bit-exact ({n} elements, poisoned output all overwritten)"),
            },
            Some((i, bad)) => Verdict {
                skipped: false,
                ok: false,
                line: format!(
                    "{what}: FAIL device differs from host at {i} ({bad} of {n} elements): {:?} vs {:?}{}",
                    dev[i],
                    host.out[i],
                    if dev[i].bits() == T::poison().bits() { " (never written)" } else { "" }
                ),
            },
        },
    }
}

/// The copy of `n` random elements; on the device too when `gpu` is given, in configuration
/// `cfg` (the host execution is the vector copy's: every configuration's result is `src`).
pub fn run_copy<T: Elem>(
    gpu: Option<&Gpu>,
    n: usize,
    cfg: CopyConfig,
    rng: &mut Rng,
) -> Result<Verdict> {
    if n == 0 {
        return Err(GpuError::Invalid("copy needs n >= 1".into()));
    }
    let src: Vec<T> = rng.fill(n);
    // the default grid: a block per tile
    let grid = VecCopy::<T>::grid(n as i64, i64::MAX);
    let host = exec::copy(&src, grid, T::poison());
    let device = match gpu {
        None => None,
        Some(g) => {
            let l = vector(n)?;
            let s = g.upload(&src, l)?;
            let mut d = g.filled(l, T::poison())?;
            g.copy_with(&s, &mut d, cfg)?;
            g.sync()?;
            Some(g.download(&d)?)
        }
    };
    let what = if cfg == CopyConfig::DEFAULT {
        String::new()
    } else {
        format!(" {cfg}")
    };
    Ok(finish(
        format!("copy {} n={n}{what}", T::NAME),
        &host,
        &src,
        device,
    ))
}

/// The transpose of a random `rows x cols` matrix through shared tile `S`, with shared-memory
/// carveout and blocks resident per SM `(carveout, resident)` (0: the driver's, as many as fit;
/// [`Gpu::transpose_with`]).
pub fn run_transpose<T: Elem, S: TransposeTile<T>>(
    gpu: Option<&Gpu>,
    (rows, cols): (usize, usize),
    (carveout, resident): (i64, i64),
    rng: &mut Rng,
) -> Result<Verdict> {
    if rows == 0 || cols == 0 {
        return Err(GpuError::Invalid("transpose needs rows, cols >= 1".into()));
    }
    let src: Vec<T> = rng.fill(rows * cols);
    let want: Vec<T> = (0..rows * cols)
        .map(|k| {
            let (j, i) = (k / rows, k % rows); // output (j, i) = input (i, j)
            src[i * cols + j]
        })
        .collect();
    let host = exec::transpose::<T, S>(&src, rows as i64, cols as i64, T::poison());
    let device = match gpu {
        None => None,
        Some(g) => {
            let lin = layouts(rows, cols)?;
            let s = g.upload(&src, lin.0)?;
            let mut d = g.filled(lin.1, T::poison())?;
            g.transpose_with::<T, S>(&s, &mut d, carveout, resident)?;
            g.sync()?;
            Some(g.download(&d)?)
        }
    };
    let what = format!(
        "transpose_{}{} {} {rows}x{cols}",
        S::TILE,
        TransposeConfig::knobs(carveout, resident),
        T::NAME
    );
    Ok(finish(what, &host, &want, device))
}

/// `(rows,cols):(cols,1)` and its transpose's `(cols,rows):(rows,1)`.
fn layouts(rows: usize, cols: usize) -> Result<(Layout, Layout)> {
    let (r, c) = (rows as i64, cols as i64);
    Ok((row_major(r, c)?, row_major(c, r)?))
}

/// `n:1`.
fn vector(n: usize) -> Result<Layout> {
    Layout::int(n as i64, 1).map_err(|e| GpuError::Invalid(e.to_string()))
}

/// One benchmark result: a kernel and the device-to-device copy of the same bytes, timed in the
/// same run.
#[derive(Debug, Clone)]
pub struct Timing {
    /// The kernel and its size.
    pub what: String,
    /// Bytes read plus bytes written.
    pub bytes: f64,
    /// Median milliseconds of the kernel.
    pub ms: f64,
    /// Median milliseconds of `cuMemcpyDtoD` of the same bytes.
    pub memcpy_ms: f64,
    /// Spread of the kernel's runs: (fastest, slowest) milliseconds.
    pub spread: (f64, f64),
    /// The host's microseconds per launch call (enqueued ahead of the device: not in `ms`).
    pub host_us: f64,
    /// The configuration that ran, where the kernel has several, and where it came from (set by
    /// the caller that chose it, e.g. `w4/s232448 (tuned)`).
    pub config: Option<String>,
}

impl Timing {
    /// The timing of a kernel that reads `read` bytes and writes as many: `k` its runs'
    /// milliseconds and `m` the memcpy's, both sorted (`Gpu::time`); no configuration.
    fn of(what: String, read: usize, (k, m): (&[f64], &[f64]), host_us: f64) -> Self {
        Timing {
            what,
            bytes: 2.0 * read as f64,
            ms: median(k),
            memcpy_ms: median(m),
            spread: (k[0], k[k.len() - 1]),
            host_us,
            config: None,
        }
    }
    /// This timing, of configuration `cfg`.
    fn with(self, cfg: impl std::fmt::Display) -> Self {
        Timing {
            config: Some(cfg.to_string()),
            ..self
        }
    }
    /// GB/s of the kernel (bytes read + written).
    pub fn gbps(&self) -> f64 {
        self.bytes / self.ms / 1e6
    }
    /// GB/s of the memcpy.
    pub fn memcpy_gbps(&self) -> f64 {
        self.bytes / self.memcpy_ms / 1e6
    }
    /// The kernel's bandwidth as a fraction of the memcpy's.
    pub fn ratio(&self) -> f64 {
        self.memcpy_ms / self.ms
    }
}

fn median(ms: &[f64]) -> f64 {
    ms[ms.len() / 2]
}

/// Times `kernel` (given `dst`, which it may write) and `cuMemcpyDtoD` of `src` into `dst` in the
/// same run; the bytes are `src` read and as many written (a kernel that moves other bytes passes
/// `src` and `dst` buffers whose copy moves as many as it does).
fn timed<T: Elem>(
    g: &Gpu,
    what: String,
    reps: usize,
    src: &DeviceTensor<T>,
    dst: &mut DeviceTensor<T>,
    mut kernel: impl FnMut(&mut DeviceTensor<T>) -> Result<()>,
) -> Result<Timing> {
    let (k, host_us) = g.time(5, reps, || kernel(dst))?;
    let (m, _) = g.time(5, reps, || g.memcpy(src, dst))?;
    Ok(Timing::of(
        what,
        src.len() * size_of::<T>(),
        (&k, &m),
        host_us,
    ))
}

/// Times the copy of `n` elements in each configuration of `cfgs`, and a memcpy of the same
/// bytes once; one timing per configuration, in order.
pub fn bench_copy<T: Elem>(
    g: &Gpu,
    n: usize,
    cfgs: &[CopyConfig],
    reps: usize,
    rng: &mut Rng,
) -> Result<Vec<Timing>> {
    let l = vector(n)?;
    let s = g.upload(&rng.fill::<T>(n), l)?;
    let mut d = g.filled(l, T::poison())?;
    let (m, _) = g.time(5, reps, || g.memcpy(&s, &mut d))?;
    let mut out = vec![];
    for &cfg in cfgs {
        let (k, host_us) = g.time(5, reps, || g.copy_with(&s, &mut d, cfg))?;
        let what = format!("copy_{} n={n}", T::NAME);
        out.push(Timing::of(what, s.len() * size_of::<T>(), (&k, &m), host_us).with(cfg));
    }
    Ok(out)
}

/// Times the transpose of `rows x cols` through shared tile `S` with shared-memory carveout and
/// blocks resident per SM `(carveout, resident)` (0: the driver's, as many as fit), and a memcpy
/// of the same bytes.
pub fn bench_transpose<T: Elem, S: TransposeTile<T>>(
    g: &Gpu,
    (rows, cols): (usize, usize),
    (carveout, resident): (i64, i64),
    reps: usize,
    rng: &mut Rng,
) -> Result<Timing> {
    let (lin, lout) = layouts(rows, cols)?;
    let s = g.upload(&rng.fill::<T>(rows * cols), lin)?;
    let mut d = g.filled(lout, T::poison())?;
    let what = format!(
        "transpose_{}_{}{} {rows}x{cols}",
        S::TILE,
        T::NAME,
        TransposeConfig::knobs(carveout, resident)
    );
    timed(g, what, reps, &s, &mut d, |d| {
        g.transpose_with::<T, S>(&s, d, carveout, resident)
    })
}

/// `y = x / sqrt(mean(x^2) + eps) * w` in f64, from the same (rounded) inputs.
pub fn rmsnorm_reference<T: Elem>(x: &[T], w: &[T], cols: usize, eps: f64) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|row| {
            let ms = row.iter().map(|v| v.to_f64().powi(2)).sum::<f64>() / cols as f64;
            let r = 1.0 / (ms + eps).sqrt();
            row.iter()
                .zip(w)
                .map(move |(v, w)| v.to_f64() * r * w.to_f64())
        })
        .collect()
}

/// `||y - ref|| / ||ref||`, or infinity when an element is not finite (a poisoned one).
pub fn rel_error<T: Elem>(y: &[T], want: &[f64]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for (a, b) in y.iter().zip(want) {
        let a = a.to_f64();
        if !a.is_finite() {
            return f64::INFINITY;
        }
        num += (a - b) * (a - b);
        den += b * b;
    }
    (num / den.max(f64::MIN_POSITIVE)).sqrt()
}

/// What every RMSNorm kernel takes: `M >= 1` rows of `N` elements, `N` a positive multiple of 8.
pub fn rmsnorm_size(rows: usize, cols: usize) -> Result<()> {
    if rows == 0 || cols < 8 || cols & 7 != 0 {
        return Err(GpuError::Invalid(format!(
            "rmsnorm needs M >= 1 and N a positive multiple of 8, got {rows}x{cols}"
        )));
    }
    Ok(())
}

/// The RMSNorm tolerance: f32 arithmetic, or bf16 rounding of the output.
pub fn rmsnorm_tolerance<T: Elem>() -> f64 {
    if std::mem::size_of::<T>() == 4 {
        1e-5
    } else {
        1e-2
    }
}

/// RMSNorm of `x` (row-major `rows x cols`) by `w` on `g`, into a poisoned output: the result.
pub(crate) fn rmsnorm_on<T: RmsElem>(
    g: &Gpu,
    x: &[T],
    w: &[T],
    (rows, cols): (usize, usize),
    eps: f32,
    cfg: RmsConfig,
) -> Result<Vec<T>> {
    let (lx, lw) = (row_major(rows as i64, cols as i64)?, vector(cols)?);
    let (dx, dw) = (g.upload(x, lx)?, g.upload(w, lw)?);
    let mut dy = g.filled(lx, T::poison())?;
    g.rmsnorm_with(&dx, &dw, &mut dy, eps, cfg)?;
    g.sync()?;
    g.download(&dy)
}

/// RMSNorm of a random `rows x cols` matrix in configuration `cfg` (`None`: the default for the
/// device, or for an H100's shared memory without one): the device's output (and the host
/// execution's) against the f64 reference, and the host execution's writes for exactly-once
/// coverage.
pub fn run_rmsnorm<T: RmsElem>(
    gpu: Option<&Gpu>,
    rows: usize,
    cols: usize,
    cfg: Option<RmsConfig>,
    rng: &mut Rng,
) -> Result<Verdict> {
    let eps = 1e-6f32;
    rmsnorm_size(rows, cols)?;
    let x: Vec<T> = rng.fill(rows * cols);
    let w: Vec<T> = rng.fill(cols);
    let want = rmsnorm_reference(&x, &w, cols, eps as f64);
    // stage as the device does (an H100's 227 KiB per block where there is no GPU)
    let smem = gpu.map_or(232_448, |g| g.rmsnorm_smem());
    let cfg = cfg.unwrap_or_else(|| RmsConfig::default_for::<T>(cols as i64, smem));
    let staged = T::staged_for(cfg.warps, cols as i64, cfg.smem);
    let host = exec::rmsnorm(
        &x,
        &w,
        rows as i64,
        cols as i64,
        eps,
        (cfg.warps, staged),
        T::poison(),
    );
    let what = format!("rmsnorm {} {rows}x{cols} {cfg}", T::NAME);
    let tol = rmsnorm_tolerance::<T>();
    if let Some((i, n)) = host.coverage_error() {
        return Ok(Verdict {
            skipped: false,
            ok: false,
            line: format!("{what}: FAIL host execution wrote element {i} {n} times"),
        });
    }
    let host_err = rel_error(&host.out, &want);
    if host_err > tol {
        return Ok(Verdict {
            skipped: false,
            ok: false,
            line: format!("{what}: FAIL host execution error {host_err:.2e} > {tol:.0e}"),
        });
    }
    let Some(g) = gpu else {
        return Ok(Verdict {
            skipped: false,
            ok: true,
            line: format!("{what}: host execution OK (error {host_err:.2e} vs f64, tolerance {tol:.0e}; each element written exactly once)"),
        });
    };
    let y = rmsnorm_on(g, &x, &w, (rows, cols), eps, cfg)?;
    let err = rel_error(&y, &want);
    let same = crate::elem::same_bits(&y, &host.out);
    let ok = err <= tol;
    Ok(Verdict {
        skipped: false,
        ok,
        line: format!(
            "{what}: {} device error {err:.2e} vs f64 (tolerance {tol:.0e}; host execution {host_err:.2e}); {same} of {} elements bit-equal to the host execution",
            if ok { "PASS" } else { "FAIL" },
            y.len()
        ),
    })
}

/// Times RMSNorm of `rows x cols` in each configuration of `cfgs`, and a memcpy of the same
/// bytes (x read, y written) once: a timing per configuration, in order.
pub fn bench_rmsnorm<T: RmsElem>(
    g: &Gpu,
    (rows, cols): (usize, usize),
    cfgs: &[RmsConfig],
    reps: usize,
    rng: &mut Rng,
) -> Result<Vec<Timing>> {
    let lx = row_major(rows as i64, cols as i64)?;
    let x = g.upload(&rng.fill::<T>(rows * cols), lx)?;
    let w = g.upload(&rng.fill::<T>(cols), vector(cols)?)?;
    let mut y = g.filled(lx, T::poison())?;
    let (m, _) = g.time(5, reps, || g.memcpy(&x, &mut y))?;
    let mut out = vec![];
    for &cfg in cfgs {
        let (k, host_us) = g.time(5, reps, || g.rmsnorm_with(&x, &w, &mut y, 1e-6, cfg))?;
        let what = format!("rmsnorm_{} {rows}x{cols}", T::NAME);
        out.push(Timing::of(what, x.len() * size_of::<T>(), (&k, &m), host_us).with(cfg));
    }
    Ok(out)
}

/// The layouts `axpby` is checked over, for an `m x n` matrix: `(name, offset, layout, buffer
/// length)` — row-major, padded with rows still 16-byte aligned, padded so that they are not
/// (no 128-bit path), column-major, and a block inside a larger row-major matrix.
fn axpby_layouts(m: i64, n: i64) -> Result<Vec<(&'static str, i64, FlatLayout<2>, usize)>> {
    let flat = |s: [i64; 2], d: [i64; 2]| {
        FlatLayout::new(s, d).map_err(|e| GpuError::Invalid(format!("{s:?}:{d:?}: {e}")))
    };
    let len = |off: i64, l: &FlatLayout<2>| (off + l.dot([m - 1, n - 1]) + 1) as usize;
    let mut v = vec![];
    for (name, off, l) in [
        ("row-major", 0, flat([m, n], [n, 1])?),
        ("padded", 0, flat([m, n], [n + 8, 1])?),
        ("padded, unaligned rows", 0, flat([m, n], [n + 3, 1])?),
        ("column-major", 0, flat([m, n], [1, m])?),
        (
            "block of a larger matrix",
            16 * (n + 64) + 32,
            flat([m, n], [n + 64, 1])?,
        ),
    ] {
        v.push((name, off, l, len(off, &l)));
    }
    Ok(v)
}

/// `y = alpha x + beta y` over random `m x n` matrices in each layout of `axpby_layouts`: the
/// host execution against the definition (each of `y`'s elements written once, nothing else
/// written), and the device against the host execution, bit for bit.
pub fn run_axpby<T: Elem + Real>(
    gpu: Option<&Gpu>,
    m: usize,
    n: usize,
    rng: &mut Rng,
) -> Result<Vec<Verdict>>
where
    Axpby<T>: Entry<Shared = (), Params<Device> = AxpbyParams<Gmem<T>>>,
    Axpby<T>: Kernel<Params<crate::sim::Sim> = AxpbyParams<exec::HostMem<T>>>,
{
    if m == 0 || n == 0 {
        return Err(GpuError::Invalid("axpby needs M, N >= 1".into()));
    }
    let (alpha, beta) = (1.5f32, -0.75f32);
    let mut out = vec![];
    for (name, off, l, len) in axpby_layouts(m as i64, n as i64)? {
        let what = format!("axpby {} {m}x{n} {name} {}:{:?}", T::NAME, off, l.stride());
        let (x, y): (Vec<T>, Vec<T>) = (rng.fill(len), rng.fill(len));
        // the definition, element by element
        let mut want = y.clone();
        let mut image = vec![false; len];
        for i in 0..m as i64 {
            for j in 0..n as i64 {
                let k = (off + l.dot([i, j])) as usize;
                let (xv, yv) = (T::widen(x[k].bits()), T::widen(y[k].bits()));
                want[k] = T::from_bits(T::narrow(alpha.mul_add(xv, beta * yv)));
                image[k] = true;
            }
        }
        let host =
            exec::axpby((&x, off, &l), (&y, off, &l), alpha, beta).map_err(GpuError::Invalid)?;
        let covered = host
            .writes
            .iter()
            .zip(&image)
            .position(|(&w, &inside)| w != u32::from(inside));
        let verdict = if let Some(k) = covered {
            Verdict {
                skipped: false,
                ok: false,
                line: format!(
                    "{what}: FAIL host execution wrote element {k} {} times",
                    host.writes[k]
                ),
            }
        } else if let Some((k, bad)) = first_mismatch(&host.out, &want) {
            Verdict {
                skipped: false,
                ok: false,
                line: format!("{what}: FAIL host execution differs from the definition at {k} ({bad} elements)"),
            }
        } else if let Some(g) = gpu {
            let layout = l
                .to_layout()
                .map_err(|e| GpuError::Invalid(e.to_string()))?;
            let dx = g.upload_buffer(&x)?.view(off, layout)?;
            let mut dy = g.upload_buffer(&y)?.view(off, layout)?;
            g.axpby(&dx, &mut dy, alpha, beta)?;
            g.sync()?;
            let dev = g.download(&dy)?;
            match first_mismatch(&dev, &host.out) {
                None => Verdict {
                    skipped: false,
                    ok: true,
                    line: format!("{what}: PASS device = host execution, bit-exact ({len} elements of the buffer, {} in the tensor)", m * n),
                },
                Some((k, bad)) => Verdict {
                    skipped: false,
                    ok: false,
                    line: format!("{what}: FAIL device differs from host at {k} ({bad} of {len} elements)"),
                },
            }
        } else {
            Verdict {
                skipped: false,
                ok: true,
                line: format!("{what}: host execution OK (each element of y written once, nothing else written, equal to the definition)"),
            }
        };
        out.push(verdict);
    }
    Ok(out)
}

/// Times `y = alpha x + beta y` over row-major `m x n` matrices (x and y read, y written) and a
/// memcpy of the same bytes.
pub fn bench_axpby<T: Elem + Real>(
    g: &Gpu,
    m: usize,
    n: usize,
    reps: usize,
    rng: &mut Rng,
) -> Result<Timing>
where
    Axpby<T>: Entry<Shared = (), Params<Device> = AxpbyParams<Gmem<T>>>,
{
    let l = row_major(m as i64, n as i64)?;
    let x = g.upload(&rng.fill::<T>(m * n), l)?;
    let mut y = g.upload(&rng.fill::<T>(m * n), l)?;
    // a memcpy of 1.5 m n elements moves the same 3 m n elements' bytes
    let half = m * n * 3 / 2;
    let s = g.upload(&rng.fill::<T>(half), vector(half)?)?;
    let mut d = g.filled(vector(half)?, T::poison())?;
    let what = format!("axpby_{} {m}x{n}", T::NAME);
    timed(g, what, reps, &s, &mut d, |_| {
        g.axpby(&x, &mut y, 1.0001, -0.5)
    })
}
