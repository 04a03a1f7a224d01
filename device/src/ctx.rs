//! Where a kernel's thread runs: its block and thread indices, the grid, and its block's shared
//! memory as an engine. The device fills it from the special registers and the dynamic shared
//! memory; the host execution runs the same kernel functions for every block and thread with a
//! `Ctx` of its own (shared memory a checked host buffer per block).
//!
//! A kernel with a barrier or a warp-level collective is written as steps: each step is a
//! function of the parameters, the context and the value carried from the step before (a
//! [`Carry`]: an `f32`, or a kernel's struct of registers around one); between two steps comes a
//! [`Collective`]. The device runs the steps one after the other with the
//! collective in between; the host runs each step for every thread of a block before the
//! collective, which it then performs over the carried values exactly as the device does.

/// What happens between two steps of a kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collective {
    /// `__syncthreads()`: every thread of the block has finished the step before; the carried
    /// value passes through unchanged.
    SyncThreads,
    /// The carried `f32` summed over the warp by a butterfly (`shfl.sync.bfly` with masks 16, 8,
    /// 4, 2, 1), in every lane: the host adds in the same order, so the sums are bit-equal.
    WarpSum,
    /// The carried `f32`'s maximum over the warp by the same butterfly (`max.f32`, in which a NaN
    /// loses to a number, as in `f32::max`), in every lane.
    WarpMax,
}

/// What a thread carries from one step to the next: the `f32` a warp collective reduces
/// ([`Carry::value`]) and, in a kernel that keeps values in registers across a collective, those
/// values. Most kernels carry a bare `f32`.
pub trait Carry: Copy + Default {
    /// The value a [`Collective::WarpSum`] or [`Collective::WarpMax`] reduces.
    fn value(&self) -> f32;
    /// `self` with its value replaced by `v` (the reduction), the rest unchanged.
    fn with_value(self, v: f32) -> Self;
}

impl Carry for f32 {
    #[inline(always)]
    fn value(&self) -> f32 {
        *self
    }
    #[inline(always)]
    fn with_value(self, v: f32) -> f32 {
        v
    }
}

/// A thread's place in the launch, and its block's shared memory.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<S> {
    /// `(blockIdx.x, blockIdx.y)`.
    pub block: [i64; 2],
    /// `(gridDim.x, gridDim.y)`.
    pub grid: [i64; 2],
    /// `threadIdx.x` (blocks are one-dimensional).
    pub thread: i64,
    /// The block's dynamic shared memory, element 0.
    pub smem: S,
}

/// A launch's shape, as a kernel computes it from its parameters' layouts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Blocks in x and y.
    pub grid: [i64; 2],
    /// Threads per block.
    pub threads: i64,
    /// Bytes of dynamic shared memory per block.
    pub smem_bytes: i64,
}

/// A kernel, declared once: its parameters, the launch its layouts ask for, its steps and the
/// collectives between them. From an implementation come the PTX entry point
/// (`kernels!` in `lib.rs`), the host's typed launcher (`host::gpu::Gpu::launch`) and its host
/// execution (`tessel::exec::run`), and the registry (the crate's `KERNELS`).
pub trait Kernel {
    /// The element type of the kernel's tensors.
    type T: Copy;
    /// The element type of its shared memory (`()` when it has none).
    type Shared: Copy + Default;
    /// The parameters with engine `E`: a `#[repr(C)]` struct of tensors and scalars, passed by
    /// value as the kernel's one parameter.
    type Params<E: layout_core::Engine>: Copy;
    /// What a thread carries from a step to the next (`f32` unless registers cross a collective).
    type Carry: Carry;
    /// What lies between step `k` and step `k + 1`; the kernel has `COLLECTIVES.len() + 1` steps.
    const COLLECTIVES: &'static [Collective];
    /// Checks the parameters against what the kernel needs of their layouts (ranks are in the
    /// types; e.g. equal shapes, a unit stride for 128-bit accesses), and returns them with what
    /// the kernel relies on made static (`FlatTensor::with_static_stride`). `Err` names the
    /// violated condition; the device traps on it, the host launcher refuses to launch.
    fn prepare<E: layout_core::Engine>(p: Self::Params<E>)
        -> Result<Self::Params<E>, &'static str>;
    /// The launch for `p` on a device of `sms` multiprocessors with `smem_limit` bytes of shared
    /// memory per block.
    fn geometry<E: layout_core::Engine>(p: &Self::Params<E>, sms: i64, smem_limit: i64)
        -> Geometry;
    /// Step `k` of thread `c.thread`, given the value carried from step `k - 1` (the default for
    /// the first); returns the value carried to the next. Its shared memory can be filled from its tensors by
    /// asynchronous copies ([`AsyncCopy`](crate::mem::AsyncCopy)).
    ///
    /// # Safety
    /// `p` must be prepared, its engines must reach its tensors' memory, `c.smem` must reach
    /// `geometry(p).smem_bytes` bytes, and the steps must run in order with the collectives
    /// between them.
    unsafe fn step<
        E: crate::mem::Mem<Self::T>,
        S: crate::mem::Mem<Self::Shared> + crate::mem::AsyncCopy<E>,
    >(
        k: usize,
        p: &Self::Params<E>,
        c: &Ctx<S>,
        carry: Self::Carry,
    ) -> Self::Carry;
}

/// A kernel's PTX entry point: the name `kernels!` (in `lib.rs`) gave an instance of a
/// [`Kernel`].
pub trait Entry: Kernel {
    /// The entry point's name, e.g. `copy_f32`.
    const NAME: &'static str;
}

/// A registry entry: what the host, the tests and the CLI know of a kernel without its types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The PTX entry point.
    pub name: &'static str,
    /// Bytes of its one by-value parameter (the `Params` struct), as the PTX declares it.
    pub param_bytes: usize,
    /// The collectives between its steps.
    pub collectives: &'static [Collective],
}
