//! Where a kernel's thread runs: its block and thread indices, the grid, and its block's shared
//! memory as an engine. The device fills it from the special registers and the dynamic shared
//! memory; the host execution runs the same kernel functions for every block and thread with a
//! `Ctx` of its own (shared memory a checked host buffer per block).
//!
//! A kernel with a barrier or a warp-level collective is written as steps: each step is a
//! function of the parameters, the context and the value carried from the step before; between
//! two steps comes a [`Collective`]. The device runs the steps one after the other with the
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
