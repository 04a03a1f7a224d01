//! Host executions of the kernels: each kernel's own function (`tessel_gpu::copy`, `axpby`,
//! `rmsnorm`, `transpose`) on the simulated GPU ([`crate::sim`], through [`run`]), with host
//! buffers in place of global memory. Each produces the output the device must produce, and
//! counts how often every output element was written: the threads must cover the output exactly
//! once.

use crate::elem::Elem;
use crate::elem::TransposeTile;
pub use crate::sim::HostMem;
use crate::sim::{self, Options, Sim};
use layout_core::{Engine, FlatLayout, FlatTensor};
use tessel_gpu::axpby::{Axpby, AxpbyParams};
use tessel_gpu::copy;
use tessel_gpu::copy::{CopyParams, VecCopy};
use tessel_gpu::ctx::{Geometry, Kernel};
use tessel_gpu::real::Real;
use tessel_gpu::rmsnorm::{RmsNorm, RmsParams};
use tessel_gpu::transpose::TransposeParams;

/// What a host execution produced.
#[derive(Debug, Clone)]
pub struct Run<T> {
    /// The output.
    pub out: Vec<T>,
    /// How many times each output element was written.
    pub writes: Vec<u32>,
}

impl<T> Run<T> {
    /// The first output element not written exactly once, with its count.
    pub fn coverage_error(&self) -> Option<(usize, u32)> {
        self.writes
            .iter()
            .position(|&w| w != 1)
            .map(|i| (i, self.writes[i]))
    }
}

/// Runs kernel `K` over `geometry` on the simulated GPU ([`sim::launch`], the schedule of
/// [`Options::default`]); a fault the simulator finds in one of tessel's kernels is a bug, and
/// panics with its report. `p` must be prepared.
pub fn run<K: Kernel>(p: &K::Params<Sim>, geometry: Geometry) {
    if let Err(e) = sim::launch::<K>(p, geometry, Options::default()) {
        panic!("the simulated GPU: {e}");
    }
}

/// `y = alpha x + beta y` on the host: `x` and `y` are the tensors `x_off o x_layout` and
/// `y_off o y_layout` over the buffers `x` and `y` (any rank-2 layouts, one shape), with the
/// kernel's tiles, threads and predicates; `Err` when the layouts do not fit the kernel. The
/// returned run's `out` is `y`'s buffer after the kernel; elements outside `y`'s layout must stay
/// unwritten.
pub fn axpby<T: Copy + Real>(
    x: (&[T], i64, &FlatLayout<2>),
    y: (&[T], i64, &FlatLayout<2>),
    alpha: f32,
    beta: f32,
) -> Result<Run<T>, String>
where
    Axpby<T>: Kernel<Shared = (), Params<Sim> = AxpbyParams<HostMem<T>>>,
{
    let mut xin = x.0.to_vec();
    let mut xreads = vec![0u32; xin.len()];
    let mut out = y.0.to_vec();
    let mut writes = vec![0u32; out.len()];
    // SAFETY: the buffers outlive the run below and are reached only through the engines.
    let p = unsafe {
        AxpbyParams {
            x: FlatTensor::new(HostMem::new(&mut xin, &mut xreads).advance(x.1), *x.2),
            y: FlatTensor::new(
                HostMem::new(&mut out, &mut writes).once().advance(y.1),
                *y.2,
            ),
            alpha,
            beta,
        }
    };
    let p = Axpby::<T>::prepare::<Sim>(p).map_err(str::to_string)?;
    run::<Axpby<T>>(&p, Axpby::<T>::geometry::<Sim>(&p, 132, 0));
    assert!(xreads.iter().all(|&r| r == 0), "axpby wrote x");
    sim::written_once(&mut writes);
    Ok(Run { out, writes })
}

/// A vector `n:1` over a host buffer.
fn vector<T>(m: HostMem<T>, n: usize) -> FlatTensor<HostMem<T>, 1> {
    FlatTensor::new(
        m,
        FlatLayout::new([n as i64], [1]).expect("a vector's layout"),
    )
}

/// The copy kernel on the host, with `grid` blocks of `copy::THREADS` threads; `dst` starts as
/// `poison`.
pub fn copy<T: Copy + Default>(src: &[T], grid: i64, poison: T) -> Run<T> {
    let n = src.len();
    let mut input = src.to_vec();
    let mut reads = vec![0u32; n];
    let mut out = vec![poison; n];
    let mut writes = vec![0u32; n];
    // SAFETY: the four buffers outlive the loop below and are reached only through the engines.
    let p = unsafe {
        CopyParams {
            src: vector(HostMem::new(&mut input, &mut reads), n),
            dst: vector(HostMem::new(&mut out, &mut writes).once(), n),
        }
    };
    let g = Geometry {
        grid: [grid, 1],
        threads: copy::THREADS,
        smem_bytes: 0,
    };
    run::<VecCopy<T>>(&p, g);
    assert!(reads.iter().all(|&r| r == 0), "the copy wrote its source");
    sim::written_once(&mut writes);
    Run { out, writes }
}

/// `K`'s `prepare`, `geometry` (for an H100: 132 SMs, 227 KiB of shared memory a block) and
/// [`run`] of `p`, or `prepare`'s refusal.
fn run_prepared<K: Kernel>(p: K::Params<Sim>) -> Result<(), &'static str> {
    let p = K::prepare::<Sim>(p)?;
    let g = K::geometry::<Sim>(&p, 132, 232_448);
    run::<K>(&p, g);
    Ok(())
}

/// The transpose kernel of `S` (`S::Kernel`, or `S::Led` where [`TransposeTile::led`] says) on
/// the host ([`run`]): `src` (a buffer of at least the cosize of `src_layout`, a `(rows, cols)`
/// tensor) into an output of `dst_layout` that starts as `poison`. The kernel's `prepare` refusal comes back as `Err`; every access is checked (shared
/// memory per block: an element read before it is written panics), and the source must not be
/// written.
pub fn transpose_layouts<T: Elem, S: TransposeTile<T>>(
    src: &[T],
    src_layout: FlatLayout<2>,
    dst_layout: FlatLayout<2>,
    poison: T,
) -> Result<Run<T>, &'static str> {
    let cosize = |l: &FlatLayout<2>| l.to_layout().expect("a flat layout").cosize() as usize;
    assert!(src.len() >= cosize(&src_layout), "input size");
    let mut input = src.to_vec();
    let mut reads = vec![0u32; input.len()];
    let mut out = vec![poison; cosize(&dst_layout)];
    let mut writes = vec![0u32; out.len()];
    // SAFETY: the four buffers outlive the run below and are reached only through the engines.
    let p = unsafe {
        TransposeParams {
            src: FlatTensor::new(HostMem::new(&mut input, &mut reads), src_layout),
            dst: FlatTensor::new(HostMem::new(&mut out, &mut writes).once(), dst_layout),
        }
    };
    if S::led(dst_layout.stride()[0], src_layout.shape()[0]) {
        run_prepared::<S::Led>(p)?;
    } else {
        run_prepared::<S::Kernel>(p)?;
    }
    assert!(
        reads.iter().all(|&r| r == 0),
        "the transpose wrote its source"
    );
    sim::written_once(&mut writes);
    Ok(Run { out, writes })
}

/// The transpose kernel of `S` on the host: `src` `(rows,cols):(cols,1)` into
/// `(cols,rows):(rows,1)` ([`transpose_layouts`]).
pub fn transpose<T: Elem, S: TransposeTile<T>>(
    src: &[T],
    rows: i64,
    cols: i64,
    poison: T,
) -> Run<T> {
    assert_eq!(src.len() as i64, rows * cols, "input size");
    let l = |m, n| FlatLayout::row_major([m, n]).expect("positive extents");
    transpose_layouts::<T, S>(src, l(rows, cols), l(cols, rows), poison)
        .expect("row-major layouts the transpose takes")
}

/// `cosize(l)` of a layout with non-negative strides: the buffer length it needs.
fn cosize<const N: usize>(l: &FlatLayout<N>) -> usize {
    let last = l.shape().map(|s| s - 1);
    (l.dot(last) + 1) as usize
}

/// The RMSNorm kernel on the host, through its declaration ([`run`] over its `prepare`d
/// parameters and its `geometry`): `x` and `y` of layouts `lx` and `ly` (non-negative strides) over
/// buffers of their cosizes, `y` starting as `poison` (elements between padded rows stay so), `w`
/// of layout `lw`; `warps` warps per row (`RmsNorm<T, warps>`), `staged` tiles of each row staged
/// in shared memory. `Err` is the kernel's refusal (`prepare`'s condition, or a `warps` with no
/// kernel). Each thread has its own staging slots, as on the device; a slot read before its copy
/// landed, or a warp's sum read before it was written, panics, as does any access outside a
/// buffer.
#[allow(clippy::too_many_arguments)]
pub fn rmsnorm_strided<T: Elem + Real>(
    x: &[T],
    lx: FlatLayout<2>,
    w: &[T],
    lw: FlatLayout<1>,
    ly: FlatLayout<2>,
    eps: f32,
    (warps, staged): (i64, i64),
    poison: T,
) -> Result<Run<T>, &'static str> {
    fn go<T: Real, const W: i64>(p: RmsParams<HostMem<T>>) -> Result<(), &'static str> {
        let p = RmsNorm::<T, W>::prepare::<Sim>(p)?;
        run::<RmsNorm<T, W>>(&p, RmsNorm::<T, W>::geometry::<Sim>(&p, 132, i64::MAX));
        Ok(())
    }
    assert!(
        x.len() >= cosize(&lx),
        "x's buffer is shorter than its layout"
    );
    assert!(
        w.len() >= cosize(&lw),
        "w's buffer is shorter than its layout"
    );
    let (mut x, mut w) = (x.to_vec(), w.to_vec());
    let (mut x_writes, mut w_writes) = (vec![0u32; x.len()], vec![0u32; w.len()]);
    let mut out = vec![poison; cosize(&ly)];
    let mut writes = vec![0u32; out.len()];
    // SAFETY: the six buffers outlive the run below and are reached only through the engines.
    let p = unsafe {
        RmsParams {
            x: FlatTensor::new(HostMem::new(&mut x, &mut x_writes), lx),
            w: FlatTensor::new(HostMem::new(&mut w, &mut w_writes), lw),
            y: FlatTensor::new(HostMem::new(&mut out, &mut writes).once(), ly),
            eps,
            staged,
        }
    };
    match warps {
        1 => go::<T, 1>(p),
        2 => go::<T, 2>(p),
        4 => go::<T, 4>(p),
        8 => go::<T, 8>(p),
        16 => go::<T, 16>(p),
        _ => Err("rmsnorm has kernels for 1, 2, 4, 8 and 16 warps per row"),
    }?;
    assert!(
        x_writes.iter().chain(&w_writes).all(|&n| n == 0),
        "rmsnorm wrote its input"
    );
    sim::written_once(&mut writes);
    Ok(Run { out, writes })
}

/// The RMSNorm kernel on the host for a row-major `rows x cols` `x` and `y` and `w` `cols:1`
/// ([`rmsnorm_strided`]), `warps` per row, staging `staged` tiles per row; panics where the
/// kernel refuses.
pub fn rmsnorm<T: Elem + Real>(
    x: &[T],
    w: &[T],
    rows: i64,
    cols: i64,
    eps: f32,
    (warps, staged): (i64, i64),
    poison: T,
) -> Run<T> {
    assert_eq!(x.len() as i64, rows * cols, "x size");
    assert_eq!(w.len() as i64, cols, "w size");
    let lx = FlatLayout::row_major([rows, cols]).expect("an M x N layout");
    let lw = FlatLayout::row_major([cols]).expect("an N layout");
    rmsnorm_strided(x, lx, w, lw, lx, eps, (warps, staged), poison)
        .unwrap_or_else(|why| panic!("{rows}x{cols}: {why}"))
}
