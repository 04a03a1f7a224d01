//! The tensor cores' ceiling for `mma.sync.m16n8k16` (f32 accumulate): each warp runs
//! [`CHAINS`] independent chains of the instruction on register operands, `iters` rounds, and
//! writes one sum per thread (so that nothing is dead code). No memory traffic inside the loop:
//! its rate is the instruction's peak on the device, the ceiling `gemm_sm80` is measured against.

/// Independent accumulator chains per warp (the instruction's latency hidden by as many in
/// flight).
pub const CHAINS: i64 = 8;
/// Threads per block.
pub const THREADS: i64 = 256;
/// Floating-point operations of one instruction: `2 * 16 * 8 * 16`.
pub const FLOPS_PER_MMA: i64 = 2 * 16 * 8 * 16;

/// The parameters: `out` (one `f32` per thread of the grid), rounds, and a seed for the operands.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PeakParams<E> {
    /// One sum per thread.
    pub out: E,
    /// Rounds of [`CHAINS`] instructions per warp.
    pub iters: i64,
    /// Makes the operands unknown to the compiler.
    pub seed: u32,
}

impl<E> PeakParams<E> {
    /// Floating-point operations of a launch of `blocks` blocks.
    pub fn flops(&self, blocks: i64) -> f64 {
        (blocks * THREADS / 32) as f64 * (self.iters * CHAINS * FLOPS_PER_MMA) as f64
    }
}

/// The kernel.
///
/// # Safety
/// `p.out` must hold one `f32` per thread of the launch ([`THREADS`] per block, 1-D grid).
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn mma_peak<const BF16: bool>(p: PeakParams<crate::mem::Gmem<f32>>) {
    use crate::device::{block_x, mma_16x8x16, store_global, thread_x};
    let t = block_x() * THREADS + thread_x();
    let x = p.seed ^ (t as u32).wrapping_mul(0x9e37_79b9);
    // small finite 16-bit pairs (exponent bits kept low)
    let w = |k: u32| (x.rotate_left(k) & 0x3c00_3c00) | 0x0001_0001;
    let a = [w(1), w(5), w(9), w(13)];
    let b = [w(17), w(21)];
    // distinct starting values: identical chains could be merged by the compiler
    let mut acc = [[0f32; 4]; CHAINS as usize];
    unroll8!(c => acc[c as usize] = [c as f32; 4]);
    let mut i = 0;
    while i < p.iters {
        unroll8!(c => if BF16 {
            mma_16x8x16::<true>(&a, &b, &mut acc[c as usize])
        } else {
            mma_16x8x16::<false>(&a, &b, &mut acc[c as usize])
        });
        i += 1;
    }
    let mut s = 0f32;
    unroll8!(c => unroll4!(e => s += acc[c as usize][e as usize]));
    store_global(p.out.0.wrapping_offset(t as isize), s);
}
