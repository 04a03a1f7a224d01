//! The host side of the softmax example: the f64 definition, the host execution of the kernel
//! (the kernel crate's own steps on the CPU), the GPU run checked against both, and the timing
//! beside a device-to-device copy of the same bytes.

use softmax_kernels::{Softmax, SoftmaxParams};
use tessel::prelude::*;

/// The kernels' PTX, built by `build.rs`.
pub const PTX: &[(&str, &str)] = include_ptx!("softmax_kernels");

/// An element type the example runs: `f32`, `bf16` or `f16`.
pub trait Dtype: Elem + Real {
    /// Its softmax kernel, as the GPU and the host execution take it.
    type K: Entry<Params<Device> = SoftmaxParams<Gmem<Self>>>
        + Kernel<Params<Sim> = SoftmaxParams<HostMem<Self>>>;
    /// Bits of its significand after the point (23, 7, 10): one ulp is `2^-MANT` relative.
    const MANT: i32;
    /// The absolute error allowed besides the relative one: `2^-126` where the device flushes
    /// subnormal results to zero (`f32`, `bf16`), one subnormal step of `f16` (`2^-24`).
    const TINY: f64;
}
impl Dtype for f32 {
    type K = Softmax<f32>;
    const MANT: i32 = 23;
    const TINY: f64 = 1.1754943508222875e-38;
}
impl Dtype for bf16 {
    type K = Softmax<bf16>;
    const MANT: i32 = 7;
    const TINY: f64 = 1.1754943508222875e-38;
}
impl Dtype for f16 {
    type K = Softmax<f16>;
    const MANT: i32 = 10;
    const TINY: f64 = 5.960464477539063e-8;
}

pub use tessel::matrix::Shape;

/// A random input: elements uniform in `[-8, 8)`, so the exponents span `e^-16 ..= 1`.
pub fn random_input<T: Dtype>(s: Shape, rng: &mut Rng) -> Vec<T> {
    (0..s.len())
        .map(|i| {
            let v = 8.0 * rng.uniform();
            T::from_f64(if s.inside(i) { v } else { f64::NAN })
        })
        .collect()
}

/// The softmax of each row of `x` in f64 (from the rounded inputs); padding elements are 0.
pub fn reference<T: Dtype>(x: &[T], s: Shape) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for r in 0..s.rows {
        let row = &x[r * s.ld..r * s.ld + s.cols];
        let m = row.iter().map(|v| v.to_f64()).fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v.to_f64() - m).exp()).sum();
        for (c, v) in row.iter().enumerate() {
            y[r * s.ld + c] = (v.to_f64() - m).exp() / sum;
        }
    }
    y
}

/// What a host execution produced: the output buffer (padding left as it was) and how often each
/// element was written.
pub struct HostRun<T> {
    /// `y`'s buffer.
    pub y: Vec<T>,
    /// Writes per element.
    pub writes: Vec<u32>,
}

/// The kernel run on the CPU's simulated GPU: every thread of every block runs the kernel's
/// function, over checked host memory. `y` starts as `y0`; `staged` tiles of each row go through
/// shared memory. `Err` names what the kernel refuses, or what the simulator found (an access
/// outside `x` or `y`, a shared-memory race, a shuffle under divergent lanes, with its sites).
pub fn host_execution<T: Dtype>(
    x: &[T],
    y0: &[T],
    s: Shape,
    staged: i64,
) -> Result<HostRun<T>, String> {
    let (mut xin, mut reads) = (x.to_vec(), vec![0u32; x.len()]);
    let (mut y, mut writes) = (y0.to_vec(), vec![0u32; y0.len()]);
    let l = s.flat()?;
    // SAFETY: the four buffers outlive the run below and are reached only through the engines.
    let p = unsafe {
        SoftmaxParams {
            x: FlatTensor::new(HostMem::new(&mut xin, &mut reads), l),
            y: FlatTensor::new(HostMem::new(&mut y, &mut writes), l),
            staged,
        }
    };
    let p = T::K::prepare::<Sim>(p).map_err(str::to_string)?;
    let g = T::K::geometry::<Sim>(&p, 132, 0);
    sim::launch::<T::K>(&p, g, sim::Options::default()).map_err(|e| e.to_string())?;
    if reads.iter().any(|&r| r != 0) {
        return Err("the kernel wrote x".into());
    }
    Ok(HostRun { y, writes })
}

/// How far `got` is from `want`, in units of the tolerance: `|got - want| / (tol |want| + TINY)`
/// at its worst over the matrix (`> 1` fails), with the worst element's index. Padding must hold
/// `pad` (bit for bit); a non-finite element is infinitely far.
pub fn distance<T: Dtype>(
    got: &[T],
    want: impl Fn(usize) -> f64,
    tol: f64,
    s: Shape,
    pad: T,
) -> (f64, usize) {
    let mut worst = (0.0, 0);
    for (i, g) in got.iter().enumerate() {
        let d = if !s.inside(i) {
            if g.bits() == pad.bits() {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            let (g, w) = (g.to_f64(), want(i));
            if !g.is_finite() {
                f64::INFINITY
            } else {
                (g - w).abs() / (tol * w.abs() + T::TINY)
            }
        };
        if d > worst.0 || d.is_nan() {
            worst = (if d.is_nan() { f64::INFINITY } else { d }, i);
        }
    }
    worst
}

/// The tolerance against the f64 definition: half an ulp of `T` (the output's rounding) plus
/// `2^-16` for the `f32` arithmetic (`ex2.approx`, the sums).
pub fn reference_tolerance<T: Dtype>() -> f64 {
    2f64.powi(-T::MANT - 1) + 2f64.powi(-16)
}

/// The tolerance between the GPU and the host execution: their exponentials differ in the last
/// bits (`ex2.approx` on the device), so the `f32` results differ by a few ulp, and a 16-bit
/// result may round to the neighbouring value: one ulp of `T`, at least `2^-16`.
pub fn host_tolerance<T: Dtype>() -> f64 {
    2f64.powi(-T::MANT).max(2f64.powi(-16))
}

/// Checks the host execution of `s` (random input, seeded by `rng`) against the definition and
/// for exactly-once coverage; `Ok` is a report line.
pub fn check_host<T: Dtype>(s: Shape, staged: i64, rng: &mut Rng) -> Result<String, String> {
    let x = random_input::<T>(s, rng);
    let run = host_execution(&x, &vec![T::poison(); x.len()], s, staged)?;
    if let Some(i) = (0..x.len()).find(|&i| run.writes[i] != u32::from(s.inside(i))) {
        return Err(format!("host execution wrote element {i} {} times", run.writes[i]));
    }
    let want = reference(&x, s);
    let (d, i) = distance(&run.y, |i| want[i], reference_tolerance::<T>(), s, T::poison());
    if d > 1.0 {
        return Err(format!(
            "host execution: element {i} is {:?}, the definition {} ({d:.2} tolerances off)",
            run.y[i], want[i]
        ));
    }
    Ok(format!(
        "{} {}x{} (ld {}, staged {staged}): host execution writes every element once, within {d:.2} of the tolerance of f64",
        <T::K as Entry>::NAME,
        s.rows,
        s.cols,
        s.ld
    ))
}

/// `softmax_<T>` on the GPU for `s` (random input, output poisoned first), compared with the host
/// execution and the f64 definition; `Ok` is a report line.
pub fn check_gpu<T: Dtype>(
    gpu: &Gpu,
    module: &Module,
    s: Shape,
    rng: &mut Rng,
) -> Result<String, String> {
    let e = |e: GpuError| e.to_string();
    let x = random_input::<T>(s, rng);
    let l = s.layout()?;
    let dx = gpu.upload(&x, l).map_err(e)?;
    let dy = gpu.filled(l, T::poison()).map_err(e)?;
    let staged = Softmax::<T>::staged_for(s.cols as i64, gpu.smem_per_block());
    module
        .launch::<T::K>(SoftmaxParams {
            x: dx.param("x").map_err(e)?,
            y: dy.param("y").map_err(e)?,
            staged,
        })
        .map_err(e)?;
    let y = gpu.download(&dy).map_err(e)?;
    let host = host_execution(&x, &vec![T::poison(); x.len()], s, staged)?;
    let (dh, ih) = distance(&y, |i| host.y[i].to_f64(), host_tolerance::<T>(), s, T::poison());
    let want = reference(&x, s);
    let (dr, ir) = distance(&y, |i| want[i], reference_tolerance::<T>(), s, T::poison());
    let name = <T::K as Entry>::NAME;
    if dh > 1.0 {
        return Err(format!(
            "{name} {}x{}: element {ih} is {:?} on the GPU, {:?} in the host execution",
            s.rows, s.cols, y[ih], host.y[ih]
        ));
    }
    if dr > 1.0 {
        return Err(format!(
            "{name} {}x{}: element {ir} is {:?} on the GPU, {} by the definition",
            s.rows, s.cols, y[ir], want[ir]
        ));
    }
    Ok(format!(
        "{name} {}x{} (ld {}): GPU = host execution within {dh:.2} and f64 within {dr:.2} of their tolerances, padding untouched",
        s.rows, s.cols, s.ld
    ))
}

/// Median milliseconds of the kernel and of a device-to-device copy of the same bytes, timed in
/// turn launch by launch.
pub struct Timing {
    /// Tiles of each row staged in shared memory.
    pub staged: i64,
    /// The kernel.
    pub ms: f64,
    /// `cuMemcpyDtoD` of `x` into `y`.
    pub copy_ms: f64,
    /// Bytes read and written.
    pub bytes: f64,
}

/// Times `softmax_<T>` on `s` beside the copy, `reps` times each, staging rows in at most `smem`
/// bytes of shared memory per block (the device's limit when `None`; less leaves room for more
/// blocks per multiprocessor, and the rest of a longer row is read again from memory).
pub fn bench<T: Dtype>(
    gpu: &Gpu,
    module: &Module,
    s: Shape,
    reps: usize,
    smem: Option<i64>,
    rng: &mut Rng,
) -> Result<Timing, GpuError> {
    let l = s.layout().map_err(GpuError::Invalid)?;
    let dx = gpu.upload(&random_input::<T>(s, rng), l)?;
    let mut dy = gpu.filled(l, T::poison())?;
    let limit = smem.map_or(gpu.smem_per_block(), |b| b.min(gpu.smem_per_block()));
    let staged = Softmax::<T>::staged_for(s.cols as i64, limit);
    let p = SoftmaxParams { x: dx.param("x")?, y: dy.param("y")?, staged };
    let ms = gpu.time_interleaved(
        5,
        reps,
        &mut [&mut || module.launch::<T::K>(p), &mut || gpu.memcpy(&dx, &mut dy)],
    )?;
    let median = |v: &[f64]| v[v.len() / 2];
    Ok(Timing {
        staged,
        ms: median(&ms[0]),
        copy_ms: median(&ms[1]),
        bytes: 2.0 * (s.len() * std::mem::size_of::<T>()) as f64,
    })
}
