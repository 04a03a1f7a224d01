//! Host executions of the kernels: each kernel's own steps (`tessel_gpu::copy`, `axpby`,
//! `rmsnorm`, `transpose`, through [`run`]) on the CPU for every block and thread, with host memory
//! in place of global and shared memory. Each produces the output the device must produce, and
//! counts how often every output element was written: the threads must cover the output exactly
//! once.

use crate::elem::Elem;
use crate::elem::TransposeTile;
use layout_core::{Engine, FlatLayout, FlatTensor};
use tessel_gpu::axpby::{Axpby, AxpbyParams};
use tessel_gpu::copy;
use tessel_gpu::copy::{CopyParams, VecCopy};
use tessel_gpu::ctx::{Carry, Collective, Ctx, Geometry, Kernel};
use tessel_gpu::mem::{AsyncCopy, Mem, V4};
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

/// A host buffer as a kernel's engine ([`Mem`]): every access is bounds-checked (out of range
/// panics, naming the offset), 128-bit accesses must be 16-byte aligned from the buffer's start
/// (as device buffers are), and every write is counted. It is `Copy`, like a device pointer: it
/// points into buffers that outlive the host execution that made it.
#[derive(Debug)]
pub struct HostMem<T> {
    data: *mut T,
    writes: *mut u32,
    len: i64,
    pos: i64,
    strict: bool,
    /// Asynchronous copies started and not yet waited for (element index, bytes), or null: then
    /// an asynchronous copy lands at once.
    in_flight: *mut Vec<(i64, V4)>,
}
impl<T> Clone for HostMem<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for HostMem<T> {}

impl<T> HostMem<T> {
    /// The engine at element 0 of `data`, counting writes in `writes` (as long as `data`).
    ///
    /// # Safety
    /// Both buffers must outlive every use of the engine and of the engines advanced from it,
    /// and nothing else may access them meanwhile.
    pub unsafe fn new(data: &mut [T], writes: &mut [u32]) -> Self {
        assert_eq!(data.len(), writes.len(), "one write count per element");
        Self {
            data: data.as_mut_ptr(),
            writes: writes.as_mut_ptr(),
            len: data.len() as i64,
            pos: 0,
            strict: false,
            in_flight: std::ptr::null_mut(),
        }
    }
    /// The same engine, where reading an element that was never written panics (shared memory:
    /// such a read is a missing barrier or a wrong layout).
    pub fn strict(self) -> Self {
        Self {
            strict: true,
            ..self
        }
    }
    /// The same engine, where an asynchronous copy into it ([`AsyncCopy`]) is recorded in
    /// `in_flight` and lands (is written, and counted) only at the copying thread's
    /// `wait_all`: a read before the wait reads an element never written, which a strict engine
    /// panics on.
    ///
    /// # Safety
    /// `in_flight` must be valid, and outlive every use of the engine and of the engines advanced
    /// from it; nothing else may access it while they are in use.
    pub unsafe fn with_async_copies(self, in_flight: *mut Vec<(i64, V4)>) -> Self {
        Self { in_flight, ..self }
    }
    fn check_written(&self, i: usize, n: usize) {
        if self.strict {
            for k in i..i + n {
                // SAFETY: `k` was bounds-checked by the caller
                assert!(
                    unsafe { *self.writes.add(k) } > 0,
                    "element {k} read before it was written"
                );
            }
        }
    }
    fn check(&self, n: i64, what: &str) -> usize {
        assert!(
            self.pos >= 0 && self.pos + n <= self.len,
            "{what} of {n} elements at {} outside the buffer of {}",
            self.pos,
            self.len
        );
        self.pos as usize
    }
    fn check_pair(&self, what: &str) -> usize {
        self.check_vector(2, what)
    }
    fn check_quad(&self, what: &str) -> usize {
        self.check_vector(4, what)
    }
    /// An access of `n` elements at once: aligned to `n` elements.
    fn check_vector(&self, n: i64, what: &str) -> usize {
        assert_eq!(
            self.pos % n,
            0,
            "{what}: an access of {n} elements at element {} is not aligned to {n} elements",
            self.pos
        );
        self.check(n, what)
    }
    fn check_v4(&self, what: &str) -> usize {
        let size = std::mem::size_of::<T>() as i64;
        assert_eq!(
            (self.pos * size) % 16,
            0,
            "{what}: 128-bit access at element {} is not 16-byte aligned",
            self.pos
        );
        self.check(16 / size, what)
    }
}

impl<T> Engine for HostMem<T> {
    fn advance(self, off: i64) -> Self {
        Self {
            pos: self.pos + off,
            ..self
        }
    }
    fn fmt_origin(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "host[{}]+{}", self.len, self.pos)
    }
}

impl<T: Copy> Mem<T> for HostMem<T> {
    unsafe fn read(&self) -> T {
        let i = self.check(1, "read");
        self.check_written(i, 1);
        *self.data.add(i)
    }
    unsafe fn write(&self, v: T) {
        let i = self.check(1, "write");
        *self.data.add(i) = v;
        *self.writes.add(i) += 1;
    }
    unsafe fn read_v4(&self) -> V4 {
        let i = self.check_v4("vector read");
        self.check_written(i, 16 / std::mem::size_of::<T>());
        let mut v = V4::default();
        std::ptr::copy_nonoverlapping(
            self.data.add(i) as *const u8,
            v.0.as_mut_ptr() as *mut u8,
            16,
        );
        v
    }
    fn aligned16(&self) -> bool {
        (self.pos * std::mem::size_of::<T>() as i64) % 16 == 0
    }
    /// Checked as two elements, and aligned to twice the element's size from the buffer's start.
    unsafe fn read_pair(&self) -> [T; 2] {
        let i = self.check_pair("pair read");
        self.check_written(i, 2);
        [*self.data.add(i), *self.data.add(i + 1)]
    }
    unsafe fn write_pair(&self, v: [T; 2]) {
        let i = self.check_pair("pair write");
        for (k, x) in v.into_iter().enumerate() {
            *self.data.add(i + k) = x;
            *self.writes.add(i + k) += 1;
        }
    }
    fn aligned_pair(&self) -> bool {
        self.pos % 2 == 0
    }
    /// Checked as four elements, and aligned to four times the element's size from the buffer's
    /// start.
    unsafe fn read_quad(&self) -> [T; 4] {
        let i = self.check_quad("quad read");
        self.check_written(i, 4);
        std::array::from_fn(|k| *self.data.add(i + k))
    }
    unsafe fn write_quad(&self, v: [T; 4]) {
        let i = self.check_quad("quad write");
        for (k, x) in v.into_iter().enumerate() {
            *self.data.add(i + k) = x;
            *self.writes.add(i + k) += 1;
        }
    }
    fn aligned_quad(&self) -> bool {
        self.pos % 4 == 0
    }
    /// From the buffer's start, as a device buffer's start is 256-byte aligned.
    fn misalignment(&self, bytes: usize) -> i64 {
        let size = std::mem::size_of::<T>() as i64;
        (self.pos * size).rem_euclid(bytes as i64) / size
    }
    unsafe fn write_v4(&self, v: V4) {
        let i = self.check_v4("vector write");
        std::ptr::copy_nonoverlapping(v.0.as_ptr() as *const u8, self.data.add(i) as *mut u8, 16);
        for k in 0..16 / std::mem::size_of::<T>() {
            *self.writes.add(i + k) += 1;
        }
    }
}

impl<T: Copy, U: Copy> AsyncCopy<HostMem<T>> for HostMem<U> {
    /// Reads the 16 bytes at `src` now (checked) and checks the destination; they land at the
    /// thread's [`AsyncCopy::wait_all`] when the engine records copies in flight, else at once.
    unsafe fn copy_async_v4(&self, src: &HostMem<T>) {
        let v = src.read_v4();
        self.check_v4("asynchronous copy");
        match self.in_flight.as_mut() {
            Some(log) => log.push((self.pos, v)),
            None => self.write_v4(v),
        }
    }
    /// Lands the copies in flight: writes them (each counted as a write).
    unsafe fn wait_all(&self) {
        if let Some(log) = self.in_flight.as_mut() {
            for (pos, v) in std::mem::take(log) {
                self.advance(pos - self.pos).write_v4(v);
            }
        }
    }
}

/// Runs kernel `K` on the host over `geometry`: for every block, each step for all its threads
/// in turn, the collectives between the steps performed as the device does (a barrier is the
/// end of a step; a warp's sum is the same butterfly), with a fresh shared-memory buffer per
/// block in which a read of an element not yet written panics. An asynchronous copy into shared
/// memory lands at its thread's wait ([`HostMem::with_async_copies`]); a thread that ends a step
/// with copies in flight panics. `p` must be prepared.
pub fn run<K: Kernel>(p: &K::Params<HostMem<K::T>>, geometry: Geometry) {
    let shared = std::mem::size_of::<K::Shared>().max(1) as i64;
    let nthreads = geometry.threads as usize;
    for by in 0..geometry.grid[1] {
        for bx in 0..geometry.grid[0] {
            let n = (geometry.smem_bytes / shared) as usize;
            let mut smem = vec![K::Shared::default(); n];
            let mut written = vec![0u32; n];
            let mut copies = Vec::new();
            let in_flight: *mut Vec<(i64, V4)> = &mut copies;
            // SAFETY: the three buffers outlive this block's steps; `in_flight` is read below
            // only between two steps of a thread, when no engine is in use.
            let s = unsafe {
                HostMem::new(&mut smem, &mut written)
                    .strict()
                    .with_async_copies(in_flight)
            };
            let ctx = |thread: usize| Ctx {
                block: [bx, by],
                grid: geometry.grid,
                thread: thread as i64,
                smem: s,
            };
            let mut carry = vec![K::Carry::default(); nthreads];
            for k in 0..=K::COLLECTIVES.len() {
                if k > 0 {
                    match K::COLLECTIVES[k - 1] {
                        Collective::SyncThreads => {}
                        Collective::WarpSum => warp_reduce(&mut carry, |a, b| a + b),
                        Collective::WarpMax => warp_reduce(&mut carry, f32::max),
                    }
                }
                for (t, c) in carry.iter_mut().enumerate() {
                    // SAFETY: host memory; every access is checked and panics out of range.
                    *c = unsafe { K::step(k, p, &ctx(t), *c) };
                    // SAFETY: as above
                    let left = unsafe { (*in_flight).len() };
                    assert!(
                        left == 0,
                        "thread {t} of block ({bx}, {by}) ended step {k} with {left} asynchronous copies not waited for"
                    );
                }
            }
        }
    }
}

/// Each warp's carried values ([`Carry::value`]) replaced by their reduction by `op`, combined as
/// `shfl.sync.bfly` with masks 16, 8, 4, 2, 1 combines them on the device (so the results are
/// bit-equal); the rest of each carry unchanged.
fn warp_reduce<C: Carry>(v: &mut [C], op: impl Fn(f32, f32) -> f32) {
    for w in v.chunks_mut(32) {
        for mask in [16, 8, 4, 2, 1] {
            let before: Vec<f32> = w.iter().map(C::value).collect();
            for (i, x) in w.iter_mut().enumerate() {
                *x = x.with_value(op(before[i], before[(i ^ mask) % before.len()]));
            }
        }
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
    Axpby<T>: Kernel<T = T, Shared = (), Params<HostMem<T>> = AxpbyParams<HostMem<T>>>,
{
    let mut xin = x.0.to_vec();
    let mut xreads = vec![0u32; xin.len()];
    let mut out = y.0.to_vec();
    let mut writes = vec![0u32; out.len()];
    // SAFETY: the buffers outlive the run below and are reached only through the engines.
    let p = unsafe {
        AxpbyParams {
            x: FlatTensor::new(HostMem::new(&mut xin, &mut xreads).advance(x.1), *x.2),
            y: FlatTensor::new(HostMem::new(&mut out, &mut writes).advance(y.1), *y.2),
            alpha,
            beta,
        }
    };
    let p = Axpby::<T>::prepare::<HostMem<T>>(p).map_err(str::to_string)?;
    run::<Axpby<T>>(&p, Axpby::<T>::geometry::<HostMem<T>>(&p, 132, 0));
    assert!(xreads.iter().all(|&r| r == 0), "axpby wrote x");
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
            dst: vector(HostMem::new(&mut out, &mut writes), n),
        }
    };
    let g = Geometry {
        grid: [grid, 1],
        threads: copy::THREADS,
        smem_bytes: 0,
    };
    run::<VecCopy<T>>(&p, g);
    assert!(reads.iter().all(|&r| r == 0), "the copy wrote its source");
    Run { out, writes }
}

/// `K`'s `prepare`, `geometry` (for an H100: 132 SMs, 227 KiB of shared memory a block) and
/// [`run`] of `p`, or `prepare`'s refusal.
fn run_prepared<K: Kernel>(p: K::Params<HostMem<K::T>>) -> Result<(), &'static str> {
    let p = K::prepare::<HostMem<K::T>>(p)?;
    let g = K::geometry::<HostMem<K::T>>(&p, 132, 232_448);
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
            dst: FlatTensor::new(HostMem::new(&mut out, &mut writes), dst_layout),
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
        let p = RmsNorm::<T, W>::prepare(p)?;
        run::<RmsNorm<T, W>>(&p, RmsNorm::<T, W>::geometry(&p, 132, i64::MAX));
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
            y: FlatTensor::new(HostMem::new(&mut out, &mut writes), ly),
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
