//! The host side of the LayerNorm example: the f64 definition, the kernel on the host's simulated
//! GPU, the GPU run checked against both (bit for bit against the simulated GPU), and the timing
//! beside a device-to-device copy of the same bytes.

use layernorm_kernels::{LayerNorm, LayerNormParams};
use tessel::prelude::*;

/// The kernels' PTX, built by `build.rs`.
pub const PTX: &[(&str, &str)] = include_ptx!("layernorm_kernels");

/// `eps` of every run (torch's default).
pub const EPS: f32 = 1e-5;

/// An element type the example runs: `f32` or `bf16`.
pub trait Dtype: Elem + Real {
    /// Bits of its significand after the point (23, 7).
    const MANT: i32;
}
impl Dtype for f32 {
    const MANT: i32 = 23;
}
impl Dtype for bf16 {
    const MANT: i32 = 7;
}

/// A LayerNorm kernel for `T` (one of the `W`s the kernel crate builds), as the GPU and the
/// simulated GPU take it.
pub trait Norm<T: Dtype>:
    Entry<Params<Device> = LayerNormParams<Gmem<T>>> + Kernel<Params<Sim> = LayerNormParams<HostMem<T>>>
{
    /// Tiles to stage for rows of `n` in `smem` bytes per block.
    fn staged_for(n: i64, smem: i64) -> i64;
}
macro_rules! norms {
    ($($t:ty: $($w:literal)*;)*) => {$($(
        impl Norm<$t> for LayerNorm<$t, $w> {
            fn staged_for(n: i64, smem: i64) -> i64 {
                LayerNorm::<$t, $w>::staged_for(n, smem)
            }
        }
    )*)*};
}
norms! { f32: 1 2 4; bf16: 1 2 4; }

pub use tessel::matrix::Shape;

/// A problem's inputs: `x` (rows with an offset of their own, uniform in `[-4, 4)` around it, NaN
/// in the padding), `w` in `[0.5, 1.5)`, `b` in `[-1, 1)`.
pub struct Inputs<T> {
    /// `x`'s buffer.
    pub x: Vec<T>,
    /// The weights.
    pub w: Vec<T>,
    /// The biases.
    pub b: Vec<T>,
}

impl<T: Dtype> Inputs<T> {
    /// Fresh random inputs for `s` from `rng`.
    pub fn random(s: Shape, rng: &mut Rng) -> Self {
        let offset: Vec<f64> = (0..s.rows).map(|_| 4.0 * rng.uniform()).collect();
        let x = (0..s.len())
            .map(|i| {
                let v = offset[i / s.ld] + 4.0 * rng.uniform();
                T::from_f64(if s.inside(i) { v } else { f64::NAN })
            })
            .collect();
        let w = (0..s.cols).map(|_| T::from_f64(1.0 + 0.5 * rng.uniform())).collect();
        let b = (0..s.cols).map(|_| T::from_f64(rng.uniform())).collect();
        Self { x, w, b }
    }
}

/// The LayerNorm of each row in f64 (from the rounded inputs); padding elements are 0.
pub fn reference<T: Dtype>(a: &Inputs<T>, s: Shape) -> Vec<f64> {
    let mut y = vec![0.0; a.x.len()];
    for r in 0..s.rows {
        let row: Vec<f64> = a.x[r * s.ld..r * s.ld + s.cols].iter().map(|v| v.to_f64()).collect();
        let n = s.cols as f64;
        let mean = row.iter().sum::<f64>() / n;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        let rstd = 1.0 / (var + EPS as f64).sqrt();
        for (c, v) in row.iter().enumerate() {
            y[r * s.ld + c] = (v - mean) * rstd * a.w[c].to_f64() + a.b[c].to_f64();
        }
    }
    y
}

/// What the simulated GPU produced: the output buffer (padding as it was) and the writes per
/// element.
pub struct HostRun<T> {
    /// `y`'s buffer.
    pub y: Vec<T>,
    /// Writes per element.
    pub writes: Vec<u32>,
}

/// Kernel `K` run on the CPU's simulated GPU over checked host memory, `y` starting as `y0`,
/// `staged` tiles of each row through shared memory. `Err` names what the kernel refuses or what
/// the simulator found (an access outside a tensor, a race, a deadlock, with its sites).
pub fn host_execution<T: Dtype, K: Norm<T>>(
    a: &Inputs<T>,
    y0: &[T],
    s: Shape,
    staged: i64,
) -> Result<HostRun<T>, String> {
    let (mut x, mut w, mut b) = (a.x.clone(), a.w.clone(), a.b.clone());
    let mut reads = [vec![0u32; x.len()], vec![0u32; w.len()], vec![0u32; b.len()]];
    let (mut y, mut writes) = (y0.to_vec(), vec![0u32; y0.len()]);
    let (l, lv) = (s.flat()?, FlatLayout::new([s.cols as i64], [1]).map_err(|e| e.to_string())?);
    let [rx, rw, rb] = &mut reads;
    // SAFETY: the buffers outlive the run below and are reached only through the engines.
    let p = unsafe {
        LayerNormParams {
            x: FlatTensor::new(HostMem::new(&mut x, rx), l),
            w: FlatTensor::new(HostMem::new(&mut w, rw), lv),
            b: FlatTensor::new(HostMem::new(&mut b, rb), lv),
            y: FlatTensor::new(HostMem::new(&mut y, &mut writes), l),
            eps: EPS,
            staged,
        }
    };
    let p = K::prepare::<Sim>(p).map_err(str::to_string)?;
    let g = K::geometry::<Sim>(&p, 132, 0);
    sim::launch::<K>(&p, g, sim::Options::default()).map_err(|e| e.to_string())?;
    if reads.iter().flatten().any(|&r| r != 0) {
        return Err("the kernel wrote an input".into());
    }
    Ok(HostRun { y, writes })
}

/// How far `got` is from `want` at its worst, in units of the tolerance `tol (|want| + 1)` (`> 1`
/// fails), with the element. Padding must hold `pad` bit for bit; a non-finite element is
/// infinitely far.
pub fn distance<T: Dtype>(got: &[T], want: &[f64], tol: f64, s: Shape, pad: T) -> (f64, usize) {
    let mut worst = (0.0, 0);
    for (i, g) in got.iter().enumerate() {
        let d = match (s.inside(i), g.to_f64()) {
            (false, _) if g.bits() == pad.bits() => 0.0,
            (true, g) if g.is_finite() => (g - want[i]).abs() / (tol * (want[i].abs() + 1.0)),
            _ => f64::INFINITY,
        };
        if d.is_nan() || d > worst.0 {
            worst = (if d.is_nan() { f64::INFINITY } else { d }, i);
        }
    }
    worst
}

/// The first element whose bits differ between `a` and `b`.
pub fn first_difference<T: Dtype>(a: &[T], b: &[T]) -> Option<usize> {
    (0..a.len().max(b.len())).find(|&i| a.get(i).map(|v| v.bits()) != b.get(i).map(|v| v.bits()))
}

/// The tolerance against the f64 definition: half an ulp of `T` (the output's rounding) plus
/// `2^-18` for the `f32` sums and `rsqrt`.
pub fn reference_tolerance<T: Dtype>() -> f64 {
    2f64.powi(-T::MANT - 1) + 2f64.powi(-18)
}

/// Checks kernel `K` on the simulated GPU for `s` (fresh random inputs, poisoned output) against
/// the definition and for exactly-once writes; `Ok` is a report line.
pub fn check_host<T: Dtype, K: Norm<T>>(
    s: Shape,
    staged: i64,
    rng: &mut Rng,
) -> Result<String, String> {
    let a = Inputs::<T>::random(s, rng);
    let run = host_execution::<T, K>(&a, &vec![T::poison(); a.x.len()], s, staged)?;
    if let Some(i) = (0..a.x.len()).find(|&i| run.writes[i] != u32::from(s.inside(i))) {
        return Err(format!("the simulated GPU wrote element {i} {} times", run.writes[i]));
    }
    let (d, i) = distance(&run.y, &reference(&a, s), reference_tolerance::<T>(), s, T::poison());
    if d > 1.0 {
        return Err(format!(
            "{}: element {i} is {:?}, {d:.2} tolerances from f64",
            K::NAME,
            run.y[i]
        ));
    }
    Ok(format!(
        "{} {}x{} (ld {}, staged {staged}): simulated GPU writes every element once, within {d:.2} of the tolerance of f64",
        K::NAME, s.rows, s.cols, s.ld
    ))
}

/// Kernel `K` on the GPU for `s` (fresh random inputs, output poisoned), compared bit for bit
/// with the simulated GPU and within tolerance with f64; `Ok` is a report line.
pub fn check_gpu<T: Dtype, K: Norm<T>>(
    gpu: &Gpu,
    module: &Module,
    s: Shape,
    rng: &mut Rng,
) -> Result<String, String> {
    let e = |e: GpuError| e.to_string();
    let a = Inputs::<T>::random(s, rng);
    let (l, lv) =
        (s.layout()?, Layout::parse(&format!("{}:1", s.cols)).map_err(|e| e.to_string())?);
    let (dx, dw, db) = (
        gpu.upload(&a.x, l).map_err(e)?,
        gpu.upload(&a.w, lv).map_err(e)?,
        gpu.upload(&a.b, lv).map_err(e)?,
    );
    let dy = gpu.filled(l, T::poison()).map_err(e)?;
    let staged = K::staged_for(s.cols as i64, gpu.smem_per_block());
    let p = LayerNormParams {
        x: dx.param("x").map_err(e)?,
        w: dw.param("w").map_err(e)?,
        b: db.param("b").map_err(e)?,
        y: dy.param("y").map_err(e)?,
        eps: EPS,
        staged,
    };
    module.launch::<K>(p).map_err(e)?;
    let y = gpu.download(&dy).map_err(e)?;
    let host = host_execution::<T, K>(&a, &vec![T::poison(); a.x.len()], s, staged)?;
    if let Some(i) = first_difference(&y, &host.y) {
        return Err(format!(
            "{} {}x{}: element {i} is {:?} on the GPU, {:?} on the simulated GPU",
            K::NAME,
            s.rows,
            s.cols,
            y[i],
            host.y[i]
        ));
    }
    let (d, i) = distance(&y, &reference(&a, s), reference_tolerance::<T>(), s, T::poison());
    if d > 1.0 {
        return Err(format!(
            "{} {}x{}: element {i} is {:?}, {d:.2} tolerances from f64",
            K::NAME,
            s.rows,
            s.cols,
            y[i]
        ));
    }
    Ok(format!(
        "{} {}x{} (ld {}): GPU = simulated GPU bit for bit, f64 within {d:.2} of the tolerance, padding untouched",
        K::NAME, s.rows, s.cols, s.ld
    ))
}

/// Median milliseconds of a kernel and of a device-to-device copy of `x`, timed in turn.
pub struct Timing {
    /// Tiles of each row staged in shared memory.
    pub staged: i64,
    /// The kernel.
    pub ms: f64,
    /// `cuMemcpyDtoD` of `x` into `y`.
    pub copy_ms: f64,
    /// Bytes of `x` read and `y` written.
    pub bytes: f64,
}

/// Times kernel `K` on `s` beside the copy, `reps` launches each.
pub fn bench<T: Dtype, K: Norm<T>>(
    gpu: &Gpu,
    module: &Module,
    s: Shape,
    reps: usize,
    rng: &mut Rng,
) -> Result<Timing, GpuError> {
    let a = Inputs::<T>::random(s, rng);
    let l = s.layout().map_err(GpuError::Invalid)?;
    let lv =
        Layout::parse(&format!("{}:1", s.cols)).map_err(|e| GpuError::Invalid(e.to_string()))?;
    let (dx, dw, db) = (gpu.upload(&a.x, l)?, gpu.upload(&a.w, lv)?, gpu.upload(&a.b, lv)?);
    let mut dy = gpu.filled(l, T::poison())?;
    let staged = K::staged_for(s.cols as i64, gpu.smem_per_block());
    let p = LayerNormParams {
        x: dx.param("x")?,
        w: dw.param("w")?,
        b: db.param("b")?,
        y: dy.param("y")?,
        eps: EPS,
        staged,
    };
    let ms = gpu.time_interleaved(
        5,
        reps,
        &mut [&mut || module.launch::<K>(p), &mut || gpu.memcpy(&dx, &mut dy)],
    )?;
    let median = |v: &[f64]| v[v.len() / 2];
    Ok(Timing {
        staged,
        ms: median(&ms[0]),
        copy_ms: median(&ms[1]),
        bytes: 2.0 * (s.len() * std::mem::size_of::<T>()) as f64,
    })
}
