//! The tensor cores' ceiling for `wgmma.mma_async.m64n256k16.f32.bf16.bf16` (sm_90a): each
//! warpgroup multiplies the same shared-memory tiles (A `64 x 64`, B `256 x 64`, bf16, K-major,
//! 128-byte swizzle, described by layout-core's `make_gmma_desc`) again and again into its 128
//! accumulator registers, four k-blocks per commit group, one group in flight; no global memory
//! in the loop. Its rate is the ceiling a Hopper GEMM (issue 11) is measured against. The
//! accumulators are 128 scalar locals (an array of them would go to local memory).

use crate::gemm_sm90::k_major_descs;
use layout_core::GmmaDescriptor;

/// Threads per block: three warpgroups.
pub const THREADS: i64 = 384;
/// Floating-point operations of one instruction: `2 * 64 * 256 * 16`.
pub const FLOPS_PER_WGMMA: i64 = 2 * 64 * 256 * 16;
/// K-blocks (16 each) of the tiles: wgmma instructions per commit group.
pub const K_BLOCKS: i64 = crate::gemm_sm90::K_BLOCKS;
/// Bytes of A's tile (`64 x 64` bf16), then B's (`256 x 64`).
pub const A_BYTES: i64 = 64 * 64 * 2;
/// See [`A_BYTES`].
pub const B_BYTES: i64 = 256 * 64 * 2;
/// Dynamic shared memory: both tiles and 1024 bytes to align them.
pub const SMEM_BYTES: i64 = A_BYTES + B_BYTES + 1024;

/// A's descriptors per k-block, the tile at shared address 0 (`gemm_sm90`'s stage layout).
pub const DESC_A: [GmmaDescriptor; K_BLOCKS as usize] = k_major_descs(64);
/// B's.
pub const DESC_B: [GmmaDescriptor; K_BLOCKS as usize] = k_major_descs(256);

/// The parameters: one `f32` per thread of the grid, rounds, a seed for the tiles' contents.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct WgmmaPeakParams<E> {
    /// One sum per thread.
    pub out: E,
    /// Commit groups of [`K_BLOCKS`] instructions per warpgroup.
    pub iters: i64,
    /// Makes the tiles' contents unknown to the compiler.
    pub seed: u32,
}

impl<E> WgmmaPeakParams<E> {
    /// Floating-point operations of a launch of `blocks` blocks.
    pub fn flops(&self, blocks: i64) -> f64 {
        (blocks * THREADS / 128) as f64 * (self.iters * K_BLOCKS * FLOPS_PER_WGMMA) as f64
    }
}

/// `wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16` on descriptors `a`, `b`, accumulating
/// into the 128 named locals.

/// The kernel.
///
/// # Safety
/// `p.out` must hold one `f32` per thread of the launch ([`THREADS`] per block, 1-D grid), and
/// the launch [`SMEM_BYTES`] of dynamic shared memory.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
#[inline(always)]
pub unsafe fn wgmma_peak(p: WgmmaPeakParams<crate::mem::Gmem<f32>>) {
    use crate::device::{
        block_x, dynamic_smem, smem_addr, st_shared_u32, store_global, sync_threads, thread_x,
    };
    use core::arch::asm;
    let tid = thread_x();
    let base = smem_addr(dynamic_smem::<u8>());
    let s = (base + 1023) & !1023;
    // small finite bf16 pairs in both tiles
    let mut w = tid;
    while w < (A_BYTES + B_BYTES) / 4 {
        let x = p.seed ^ (w as u32).wrapping_mul(0x9e37_79b9);
        st_shared_u32(s + 4 * w as u32, (x & 0x03ff_03ff) | 0x3c00_3c00);
        w += THREADS;
    }
    // the generic proxy's writes, seen by the tensor cores' async proxy
    asm!(
        "fence.proxy.async.shared::cta;",
        options(nostack, preserves_flags)
    );
    sync_threads();
    let (sa, sb) = ((s >> 4) as u64, ((s + A_BYTES as u32) >> 4) as u64);
    let mut d0 = 0f32;
    let mut d1 = 0f32;
    let mut d2 = 0f32;
    let mut d3 = 0f32;
    let mut d4 = 0f32;
    let mut d5 = 0f32;
    let mut d6 = 0f32;
    let mut d7 = 0f32;
    let mut d8 = 0f32;
    let mut d9 = 0f32;
    let mut d10 = 0f32;
    let mut d11 = 0f32;
    let mut d12 = 0f32;
    let mut d13 = 0f32;
    let mut d14 = 0f32;
    let mut d15 = 0f32;
    let mut d16 = 0f32;
    let mut d17 = 0f32;
    let mut d18 = 0f32;
    let mut d19 = 0f32;
    let mut d20 = 0f32;
    let mut d21 = 0f32;
    let mut d22 = 0f32;
    let mut d23 = 0f32;
    let mut d24 = 0f32;
    let mut d25 = 0f32;
    let mut d26 = 0f32;
    let mut d27 = 0f32;
    let mut d28 = 0f32;
    let mut d29 = 0f32;
    let mut d30 = 0f32;
    let mut d31 = 0f32;
    let mut d32 = 0f32;
    let mut d33 = 0f32;
    let mut d34 = 0f32;
    let mut d35 = 0f32;
    let mut d36 = 0f32;
    let mut d37 = 0f32;
    let mut d38 = 0f32;
    let mut d39 = 0f32;
    let mut d40 = 0f32;
    let mut d41 = 0f32;
    let mut d42 = 0f32;
    let mut d43 = 0f32;
    let mut d44 = 0f32;
    let mut d45 = 0f32;
    let mut d46 = 0f32;
    let mut d47 = 0f32;
    let mut d48 = 0f32;
    let mut d49 = 0f32;
    let mut d50 = 0f32;
    let mut d51 = 0f32;
    let mut d52 = 0f32;
    let mut d53 = 0f32;
    let mut d54 = 0f32;
    let mut d55 = 0f32;
    let mut d56 = 0f32;
    let mut d57 = 0f32;
    let mut d58 = 0f32;
    let mut d59 = 0f32;
    let mut d60 = 0f32;
    let mut d61 = 0f32;
    let mut d62 = 0f32;
    let mut d63 = 0f32;
    let mut d64 = 0f32;
    let mut d65 = 0f32;
    let mut d66 = 0f32;
    let mut d67 = 0f32;
    let mut d68 = 0f32;
    let mut d69 = 0f32;
    let mut d70 = 0f32;
    let mut d71 = 0f32;
    let mut d72 = 0f32;
    let mut d73 = 0f32;
    let mut d74 = 0f32;
    let mut d75 = 0f32;
    let mut d76 = 0f32;
    let mut d77 = 0f32;
    let mut d78 = 0f32;
    let mut d79 = 0f32;
    let mut d80 = 0f32;
    let mut d81 = 0f32;
    let mut d82 = 0f32;
    let mut d83 = 0f32;
    let mut d84 = 0f32;
    let mut d85 = 0f32;
    let mut d86 = 0f32;
    let mut d87 = 0f32;
    let mut d88 = 0f32;
    let mut d89 = 0f32;
    let mut d90 = 0f32;
    let mut d91 = 0f32;
    let mut d92 = 0f32;
    let mut d93 = 0f32;
    let mut d94 = 0f32;
    let mut d95 = 0f32;
    let mut d96 = 0f32;
    let mut d97 = 0f32;
    let mut d98 = 0f32;
    let mut d99 = 0f32;
    let mut d100 = 0f32;
    let mut d101 = 0f32;
    let mut d102 = 0f32;
    let mut d103 = 0f32;
    let mut d104 = 0f32;
    let mut d105 = 0f32;
    let mut d106 = 0f32;
    let mut d107 = 0f32;
    let mut d108 = 0f32;
    let mut d109 = 0f32;
    let mut d110 = 0f32;
    let mut d111 = 0f32;
    let mut d112 = 0f32;
    let mut d113 = 0f32;
    let mut d114 = 0f32;
    let mut d115 = 0f32;
    let mut d116 = 0f32;
    let mut d117 = 0f32;
    let mut d118 = 0f32;
    let mut d119 = 0f32;
    let mut d120 = 0f32;
    let mut d121 = 0f32;
    let mut d122 = 0f32;
    let mut d123 = 0f32;
    let mut d124 = 0f32;
    let mut d125 = 0f32;
    let mut d126 = 0f32;
    let mut d127 = 0f32;
    asm!(
        "wgmma.fence.sync.aligned;",
        options(nostack, preserves_flags)
    );
    let mut i = 0;
    while i < p.iters {
        wgmma_m64n256k16!("bf16", DESC_A[0].desc + sa, DESC_B[0].desc + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
        wgmma_m64n256k16!("bf16", DESC_A[1].desc + sa, DESC_B[1].desc + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
        wgmma_m64n256k16!("bf16", DESC_A[2].desc + sa, DESC_B[2].desc + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
        wgmma_m64n256k16!("bf16", DESC_A[3].desc + sa, DESC_B[3].desc + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
        asm!(
            "wgmma.commit_group.sync.aligned;",
            "wgmma.wait_group.sync.aligned 1;",
            options(nostack, preserves_flags)
        );
        i += 1;
    }
    asm!(
        "wgmma.wait_group.sync.aligned 0;",
        options(nostack, preserves_flags)
    );
    let sum = d0
        + d1
        + d2
        + d3
        + d4
        + d5
        + d6
        + d7
        + d8
        + d9
        + d10
        + d11
        + d12
        + d13
        + d14
        + d15
        + d16
        + d17
        + d18
        + d19
        + d20
        + d21
        + d22
        + d23
        + d24
        + d25
        + d26
        + d27
        + d28
        + d29
        + d30
        + d31
        + d32
        + d33
        + d34
        + d35
        + d36
        + d37
        + d38
        + d39
        + d40
        + d41
        + d42
        + d43
        + d44
        + d45
        + d46
        + d47
        + d48
        + d49
        + d50
        + d51
        + d52
        + d53
        + d54
        + d55
        + d56
        + d57
        + d58
        + d59
        + d60
        + d61
        + d62
        + d63
        + d64
        + d65
        + d66
        + d67
        + d68
        + d69
        + d70
        + d71
        + d72
        + d73
        + d74
        + d75
        + d76
        + d77
        + d78
        + d79
        + d80
        + d81
        + d82
        + d83
        + d84
        + d85
        + d86
        + d87
        + d88
        + d89
        + d90
        + d91
        + d92
        + d93
        + d94
        + d95
        + d96
        + d97
        + d98
        + d99
        + d100
        + d101
        + d102
        + d103
        + d104
        + d105
        + d106
        + d107
        + d108
        + d109
        + d110
        + d111
        + d112
        + d113
        + d114
        + d115
        + d116
        + d117
        + d118
        + d119
        + d120
        + d121
        + d122
        + d123
        + d124
        + d125
        + d126
        + d127;
    store_global(
        p.out
            .0
            .wrapping_offset((block_x() * THREADS + tid) as isize),
        sum,
    );
}
