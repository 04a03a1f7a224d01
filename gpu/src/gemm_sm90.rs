//! `gemm_sm90` (first version): `C = alpha A B^T + beta C` with `wgmma` (sm_90a) on stages the
//! copy engine fills. The same block tile as `gemm_sm80` (128x256, BK 64, 128-byte swizzle: the
//! stages and tensor maps are `gemm`'s), two consumer warpgroups, each `64 x 256` of C:
//! `make_tiled_mma(SM90_64x256x16_F32BF16BF16_SS, (2,1))`. Per k-tile every thread waits for the
//! stage's `mbarrier`, each warpgroup issues four `wgmma.m64n256k16` (k-blocks of 16) on
//! shared-memory descriptors from layout-core's `make_gmma_desc_k` and leaves them in flight
//! while it waits for the previous k-tile's; a block barrier then releases that k-tile's stage to
//! thread 0's next TMA loads. The accumulators (128 scalar locals
//! per thread) leave through `gemm_sm80`'s staging tile and epilogue, placed by the tiled MMA's
//! `partition_C` ([`C_PLAN`]). Not yet: warp specialization, `setmaxnreg`, a persistent scheduler, clusters.

use crate::gemm::{BK, BM, BN};
use layout_core::{
    const_ok, make_gmma_desc_k, make_tiled_mma, ComposedLayout, GmmaMajor, IntTuple, Layout,
    Operand, Swizzle, TiledMma, TvCoords, SM90_64X256X16_F32BF16BF16_SS,
};

/// Threads: two warpgroups.
pub const THREADS: i64 = 256;
/// K-blocks (wgmma's K = 16) per stage.
pub const K_BLOCKS: i64 = BK / 16;
/// The tiled MMA: the 64x256x16 atom on two warpgroups along M.
pub const MMA: TiledMma = const_ok!(make_tiled_mma(
    &SM90_64X256X16_F32BF16BF16_SS.mma,
    &const_ok!(Layout::parse("(2,1):(1,0)"))
));
/// Its partition of the block's C tile: thread origin, values `0..128` in the wgmma's
/// accumulator order.
pub const C_PLAN: TvCoords<2> = const_ok!(TvCoords::of_mma(&MMA, Operand::C, [BM, BN]));
const _: () = {
    assert!(MMA.tile_mnk[0] == BM && MMA.tile_mnk[1] == BN && MMA.threads() == THREADS);
    assert!(C_PLAN.values() == 128, "128 accumulators per thread");
    // accumulators 2i and 2i + 1 are neighbours in a row (one 8-byte store)
    let mut v = 0;
    while v < 128 {
        let (a, b) = (C_PLAN.value(v), C_PLAN.value(v + 1));
        assert!(a[0] == b[0] && a[1] + 1 == b[1]);
        v += 2;
    }
};

const fn tile(rows: i64) -> ComposedLayout {
    const_ok!(ComposedLayout::new(
        const_ok!(Swizzle::new(3, 3, 3)),
        const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&[rows, BK])),
            &[BK, 1]
        ))
    ))
}
const fn descs(rows: i64) -> [u64; K_BLOCKS as usize] {
    let t = tile(rows);
    let mut d = [0u64; K_BLOCKS as usize];
    let mut k = 0;
    while k < K_BLOCKS {
        d[k as usize] = const_ok!(make_gmma_desc_k(&t, 16, GmmaMajor::K, k)).desc;
        k += 1;
    }
    d
}
/// A warpgroup's A (`64 x BK` of the stage, K-major, 128-byte swizzle) per k-block, at shared
/// address 0.
pub const DESC_A: [u64; K_BLOCKS as usize] = descs(64);
/// B's (`BN x BK`).
pub const DESC_B: [u64; K_BLOCKS as usize] = descs(BN);
/// Shared memory: the stages (the epilogue's staging tile reuses them), 1024 bytes to align
/// them, a barrier per stage.
pub const SMEM_BYTES: i64 = crate::gemm::TMA_SMEM_BYTES;

/// The kernel.
///
/// # Safety
/// As `gemm::gemm_tma` (the same parameters and tensor maps), with [`THREADS`] threads and
/// [`SMEM_BYTES`] of shared memory.
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
#[inline(always)]
pub unsafe fn gemm_sm90<I: crate::gemm::GemmIn, O: crate::rmsnorm::Elem>(
    t: crate::gemm::GemmTmaParams<crate::mem::Gmem<I>, crate::mem::Gmem<O>>,
) {
    use crate::device::{st_shared_v2, sync_threads, thread_x};
    use crate::gemm::dev::{Load, TmaPair};
    use crate::gemm::{A_ELEMS, C_PITCH, STAGES, STAGE_BYTES};
    use core::arch::asm;
    let p = t.g;
    // the stages, their barriers and thread 0's loads are gemm_tma's
    let (blk, s0, tma) = TmaPair::new(&t);
    let tid = thread_x();
    let stage = |s: i64| s0 + (s * STAGE_BYTES) as u32;
    let ktiles = (p.a.shape()[1] + BK - 1) / BK;
    let load = |kt: i64, si: i64| {
        if kt < ktiles {
            tma.load(kt, si, stage(si));
        }
    };
    let mut s = 0;
    while s < STAGES - 1 {
        load(s, s);
        s += 1;
    }
    // the warpgroup's rows of A: 64 rows of 128 bytes further per warpgroup
    let wg = (tid / 128) as u32;
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
    let (mut read, mut write) = (0i64, STAGES - 1);
    let mut kt = 0;
    while kt < ktiles {
        tma.wait(kt, read);
        let sa = ((stage(read) + wg * 64 * 128) >> 4) as u64;
        let sb = ((stage(read) + (2 * A_ELEMS) as u32) >> 4) as u64;
        asm!(
            "wgmma.fence.sync.aligned;",
            options(nostack, preserves_flags)
        );
        if I::BF16 {
            wgmma_m64n256k16!("bf16", DESC_A[0] + sa, DESC_B[0] + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
            wgmma_m64n256k16!("bf16", DESC_A[1] + sa, DESC_B[1] + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
            wgmma_m64n256k16!("bf16", DESC_A[2] + sa, DESC_B[2] + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
            wgmma_m64n256k16!("bf16", DESC_A[3] + sa, DESC_B[3] + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
        } else {
            wgmma_m64n256k16!("f16", DESC_A[0] + sa, DESC_B[0] + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
            wgmma_m64n256k16!("f16", DESC_A[1] + sa, DESC_B[1] + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
            wgmma_m64n256k16!("f16", DESC_A[2] + sa, DESC_B[2] + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
            wgmma_m64n256k16!("f16", DESC_A[3] + sa, DESC_B[3] + sb; d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
        }
        // this k-tile's wgmmas stay in flight; the previous k-tile's are done
        asm!(
            "wgmma.commit_group.sync.aligned;",
            "wgmma.wait_group.sync.aligned 1;",
            options(nostack, preserves_flags)
        );
        // every warpgroup is done with the previous k-tile's stage: the slot of k-tile
        // kt + STAGES - 1
        sync_threads();
        load(kt + STAGES - 1, write);
        read = if read == STAGES - 1 { 0 } else { read + 1 };
        write = if write == STAGES - 1 { 0 } else { write + 1 };
        kt += 1;
    }
    asm!(
        "wgmma.wait_group.sync.aligned 0;",
        options(nostack, preserves_flags)
    );
    // the accumulators, times alpha, into the f32 staging tile (the stages are free)
    let tc = C_PLAN.thread(tid);
    let put = |v: i64, x: f32, y: f32| {
        let c = C_PLAN.value(v);
        let at = s0 + 4 * ((tc[0] + c[0]) * C_PITCH + tc[1] + c[1]) as u32;
        st_shared_v2(at, [(p.alpha * x).to_bits(), (p.alpha * y).to_bits()]);
    };
    put(0, d0, d1);
    put(2, d2, d3);
    put(4, d4, d5);
    put(6, d6, d7);
    put(8, d8, d9);
    put(10, d10, d11);
    put(12, d12, d13);
    put(14, d14, d15);
    put(16, d16, d17);
    put(18, d18, d19);
    put(20, d20, d21);
    put(22, d22, d23);
    put(24, d24, d25);
    put(26, d26, d27);
    put(28, d28, d29);
    put(30, d30, d31);
    put(32, d32, d33);
    put(34, d34, d35);
    put(36, d36, d37);
    put(38, d38, d39);
    put(40, d40, d41);
    put(42, d42, d43);
    put(44, d44, d45);
    put(46, d46, d47);
    put(48, d48, d49);
    put(50, d50, d51);
    put(52, d52, d53);
    put(54, d54, d55);
    put(56, d56, d57);
    put(58, d58, d59);
    put(60, d60, d61);
    put(62, d62, d63);
    put(64, d64, d65);
    put(66, d66, d67);
    put(68, d68, d69);
    put(70, d70, d71);
    put(72, d72, d73);
    put(74, d74, d75);
    put(76, d76, d77);
    put(78, d78, d79);
    put(80, d80, d81);
    put(82, d82, d83);
    put(84, d84, d85);
    put(86, d86, d87);
    put(88, d88, d89);
    put(90, d90, d91);
    put(92, d92, d93);
    put(94, d94, d95);
    put(96, d96, d97);
    put(98, d98, d99);
    put(100, d100, d101);
    put(102, d102, d103);
    put(104, d104, d105);
    put(106, d106, d107);
    put(108, d108, d109);
    put(110, d110, d111);
    put(112, d112, d113);
    put(114, d114, d115);
    put(116, d116, d117);
    put(118, d118, d119);
    put(120, d120, d121);
    put(122, d122, d123);
    put(124, d124, d125);
    put(126, d126, d127);
    sync_threads();
    crate::gemm::dev::epilogue::<O>(&p, blk, s0);
}
