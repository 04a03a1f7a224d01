//! Where a kernel's thread runs: its block and thread indices, the grid, and its block's shared
//! memory as an engine. The device fills it from the special registers and the dynamic shared
//! memory; the simulated GPU (`host::sim`) runs the same kernel function for every thread of a
//! block as a coroutine, with a `Ctx` of its own (shared memory a checked host buffer per block).
//!
//! A kernel is one function of its thread ([`Kernel::thread`]), written as CUDA C++ writes one:
//! barriers, warp shuffles and reductions ([`crate::sync`]) and asynchronous copies
//! ([`AsyncCopy`](crate::mem::AsyncCopy)) where the algorithm needs them, inside ordinary loops
//! and branches.

use crate::mem::Space;

/// A thread's place in the launch, and its block's shared memory.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<S> {
    /// `(blockIdx.x, blockIdx.y)`.
    pub block: [i64; 2],
    /// `(gridDim.x, gridDim.y)`.
    pub grid: [i64; 2],
    /// `threadIdx.x` (blocks are one-dimensional).
    pub thread: i64,
    /// The block's rank in its cluster (`%cluster_ctarank`: `blockIdx.x % Kernel::CLUSTER`).
    pub rank: i64,
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

/// A kernel, declared once: its parameters, the launch its layouts ask for, and the function of
/// its thread. From an implementation come the PTX entry point (`kernels!` in `lib.rs`), the
/// host's typed launcher (`host::runtime::gpu::Gpu::launch`), its simulated execution (`host::sim`), and
/// the registry (the crate's `KERNELS`).
pub trait Kernel {
    /// Blocks per cluster, consecutive along x (1: no clusters). The grid's x extent must be a
    /// multiple of it; the entry needs `.reqnctapercluster` of it on the device
    /// (`ptx_directives!`). The blocks of a cluster run at once and reach each other's shared
    /// memory ([`Dsm`](crate::mem::Dsm)) and barriers ([`crate::sync::cluster_sync`]).
    const CLUSTER: i64 = 1;
    /// The element type of its shared memory (`()` when it has none).
    type Shared: Copy + Default;
    /// The parameters in memory space `M` ([`Space`]): a `#[repr(C)]` struct of tensors (over
    /// `M::Global<T>` engines, of any element types) and scalars, passed by value as the
    /// kernel's one parameter.
    type Params<M: Space>: Copy;
    /// Checks the parameters against what the kernel needs of their layouts (ranks are in the
    /// types; e.g. equal shapes, a unit stride for 128-bit accesses), and returns them with what
    /// the kernel relies on made static (`FlatTensor::with_static_stride`). `Err` names the
    /// violated condition: the host launcher refuses to launch, and the device, running the same
    /// function on the same bytes, takes `Ok` for granted (`device::run`). Mark it
    /// `#[inline(always)]`: optimized on its own before it is inlined into the entry point, its
    /// `Result` can be left in a stack frame of the kernel (RMSNorm's was, 16 bytes).
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str>;
    /// The launch for `p` on a device of `sms` multiprocessors with `smem_limit` bytes of shared
    /// memory per block.
    fn geometry<M: Space>(p: &Self::Params<M>, sms: i64, smem_limit: i64) -> Geometry;
    /// Thread `c.thread` of block `c.block`, from start to end: every thread of the block runs
    /// it, and meets the others at the barriers and warp collectives of [`crate::sync`]. Its
    /// shared memory can be filled from its tensors by asynchronous copies
    /// ([`AsyncCopy`](crate::mem::AsyncCopy)).
    ///
    /// # Safety
    /// `p` must be prepared, its engines must reach its tensors' memory, and `c.smem` must reach
    /// `geometry(p).smem_bytes` bytes.
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>);
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
}
