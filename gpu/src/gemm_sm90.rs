//! `gemm_sm90`: warp-specialized and persistent, `C = alpha A B^T + beta C` with `wgmma` (sm_90a)
//! on stages the copy engine fills.
//!
//! - One block per SM, [`THREADS`] threads: warpgroup 0 is the producer, warpgroups 1 and 2 the
//!   consumers. `setmaxnreg` moves registers from the producer (40) to the consumers (232).
//! - The blocks walk the `128 x 256` tiles of C: tile `block + i * grid`, in [`raster`] order.
//! - The producer's thread 0 fills [`STAGES`] stages (`BM x BK` of A and `BN x BK` of B, the
//!   128-byte swizzle of `gemm`'s tensor maps) with the copy engine: it waits for a stage's
//!   *empty* barrier, arms its *full* barrier with the stage's bytes and issues the two boxes. It
//!   runs ahead across tiles, so the next tile's first stages load during this tile's epilogue.
//! - Each consumer warpgroup computes `64 x 256` of the tile
//!   (`make_tiled_mma(SM90_64x256x16_F32BF16BF16_SS, (2,1))`, [`C_PLAN`]): per k-tile it waits
//!   for the stage's full barrier, issues four `wgmma.m64n256k16` on descriptors from
//!   layout-core's `make_gmma_desc_k` ([`DESC_A`], [`DESC_B`]), leaves them in flight and waits
//!   for the previous k-tile's, whose stage one thread of the warpgroup then releases (one arrival
//!   of the two the empty barrier expects).
//! - The epilogue keeps the tile's last stage (both warpgroups wait for each other's last wgmmas
//!   on a named barrier), so the producer's loads of the next tile go on in the other stages.
//!   Each warpgroup stages its `64 x 256` of C there in [`EPI_N`]-column chunks of `f32` (times
//!   `alpha`), and copies each chunk to C by [`STORE_16`] / [`STORE_32`] (16-byte accesses of
//!   whole rows, `beta C` added; ragged edges element by element, predicated by C's bounds),
//!   then releases the stage.

use crate::gemm::{store_plan, BK, BM, BN, STAGE_BYTES};
use layout_core::{
    const_ok, make_gmma_desc_k, make_tiled_mma, ComposedLayout, GmmaMajor, IntTuple, Layout,
    Operand, Swizzle, TiledMma, TvCoords, SM90_64X256X16_F32BF16BF16_SS,
};

/// Threads: the producer warpgroup and two consumer warpgroups.
pub const THREADS: i64 = 384;
/// Threads that compute (the tiled MMA's).
pub const CONSUMERS: i64 = 256;
/// Shared-memory stages.
pub const STAGES: i64 = 4;
/// Registers per producer thread after `setmaxnreg.dec`.
pub const PRODUCER_REGS: u32 = 40;
/// Registers per consumer thread after `setmaxnreg.inc`.
pub const CONSUMER_REGS: u32 = 232;
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
    assert!(MMA.tile_mnk[0] == BM && MMA.tile_mnk[1] == BN && MMA.threads() == CONSUMERS);
    assert!(C_PLAN.values() == 128, "128 accumulators per thread");
    // accumulators 2i and 2i + 1 are neighbours in a row (one 8-byte shared-memory store)
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
/// Columns of C per epilogue chunk.
pub const EPI_N: i64 = 64;
/// Row pitch (`f32` elements) of a chunk in shared memory: padded so that a warp's 8-byte
/// writes of 8 rows take the fewest wavefronts.
pub const EPI_PITCH: i64 = EPI_N + 8;
/// Bytes of a warpgroup's chunk: in its half of the kept stage.
pub const EPI_BYTES: i64 = 64 * EPI_PITCH * 4;
/// The epilogue's copy of a chunk to 16-bit C (8 per access), a warpgroup's threads.
pub const STORE_16: TvCoords<2> = store_plan(8, 16, 128, [64, EPI_N]);
/// To `f32` C (4 per access).
pub const STORE_32: TvCoords<2> = store_plan(4, 32, 128, [64, EPI_N]);
/// Does accumulator `v` of consumer thread `t` lie in the thread's warpgroup's 64 rows and in
/// chunk `v / (128 / chunks)` of its columns?
const fn chunks_line_up() -> bool {
    let per = 128 / (BN / EPI_N);
    let mut t = 0;
    while t < CONSUMERS {
        let o = C_PLAN.thread(t);
        let mut v = 0;
        while v < 128 {
            let c = C_PLAN.value(v);
            let (r, col) = (
                o[0] + c[0] - 64 * (t / 128),
                o[1] + c[1] - EPI_N * (v / per),
            );
            if r < 0 || r >= 64 || col < 0 || col >= EPI_N {
                return false;
            }
            v += 1;
        }
        t += 1;
    }
    true
}
const _: () = {
    assert!(
        chunks_line_up(),
        "a chunk of accumulators is a 64 x EPI_N block"
    );
    assert!(2 * EPI_BYTES <= STAGE_BYTES, "two chunks fit in a stage");
};
/// Shared memory: 1024 bytes to align the stages, the stages, a full and an empty barrier per
/// stage.
pub const SMEM_BYTES: i64 = 1024 + STAGES * STAGE_BYTES + 16 * STAGES;
const _: () = {
    assert!(MMA.threads() == CONSUMERS && THREADS == CONSUMERS + 128);
    // the register file (64 K) holds the block after the moves; counts are multiples of 8
    assert!(128 * PRODUCER_REGS + (CONSUMERS as u32) * CONSUMER_REGS <= 65536);
    assert!(PRODUCER_REGS.is_multiple_of(8) && CONSUMER_REGS.is_multiple_of(8));
    assert!(SMEM_BYTES <= 227 * 1024, "an SM's shared memory");
};

/// The tile of C that a block takes on its `i`-th turn: `block + i * grid` of `tiles`, in
/// [`raster`] order, or `None` past the last.
#[inline(always)]
pub const fn tile_of(block: i64, grid: i64, i: i64, tiles_mn: [i64; 2]) -> Option<[i64; 2]> {
    let t = block + i * grid;
    if t >= tiles_mn[0] * tiles_mn[1] {
        None
    } else {
        Some(crate::gemm::raster(t, tiles_mn[0], tiles_mn[1]))
    }
}
pub use crate::gemm::raster;

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod dev {
    use super::*;
    use crate::device::{
        block_x, dynamic_smem, grid_x, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_init,
        mbarrier_wait, named_barrier, smem_addr, st_shared_v2, sync_threads, tensormap_acquire,
        thread_x, tma_load_2d, trap,
    };
    use crate::gemm::dev::store_tile;
    use crate::gemm::{GemmIn, GemmTmaParams, A_ELEMS};
    use crate::mem::Gmem;
    use crate::rmsnorm::Elem;
    use core::arch::asm;

    /// The kernel.
    ///
    /// # Safety
    /// As `gemm::gemm_tma` (the same parameters and tensor maps), with [`THREADS`] threads,
    /// [`SMEM_BYTES`] of shared memory and any number of blocks.
    #[inline(always)]
    pub unsafe fn gemm_sm90<I: GemmIn, O: Elem>(t: GemmTmaParams<Gmem<I>, Gmem<O>>) {
        let p = &t.g;
        let Ok([m, n, k]) = p.mnk() else { trap() };
        let tiles = [(m + BM - 1) / BM, (n + BN - 1) / BN];
        let ktiles = (k + BK - 1) / BK;
        let s0 = (smem_addr(dynamic_smem::<u8>()) + 1023) & !1023;
        let stage = |s: i64| s0 + (s * STAGE_BYTES) as u32;
        let full = |s: i64| s0 + (STAGES * STAGE_BYTES + 8 * s) as u32;
        let empty = |s: i64| s0 + (STAGES * STAGE_BYTES + 8 * (STAGES + s)) as u32;
        let tid = thread_x();
        if tid == 0 {
            let mut s = 0;
            while s < STAGES {
                mbarrier_init(full(s), 1);
                mbarrier_init(empty(s), 2);
                s += 1;
            }
            tensormap_acquire(t.a_map);
            tensormap_acquire(t.b_map);
        }
        sync_threads();
        let (block, grid) = (block_x(), grid_x());
        if tid < 128 {
            asm!("setmaxnreg.dec.sync.aligned.u32 {r};", r = const PRODUCER_REGS,
                 options(nostack, preserves_flags));
            if tid != 0 {
                return;
            }
            // k-tile `it` of the block (over all its tiles) goes to stage `it % STAGES`, its
            // `it / STAGES`-th use
            let mut it = 0i64;
            let mut i = 0;
            while let Some(blk) = tile_of(block, grid, i, tiles) {
                let mut kt = 0;
                while kt < ktiles {
                    let (s, round) = (it % STAGES, it / STAGES);
                    if round > 0 {
                        mbarrier_wait(empty(s), ((round - 1) & 1) as u32);
                    }
                    mbarrier_arrive_expect_tx(full(s), STAGE_BYTES as u32);
                    let k0 = (kt * BK) as i32;
                    tma_load_2d(stage(s), t.a_map, k0, (blk[0] * BM) as i32, full(s));
                    let b = stage(s) + (2 * A_ELEMS) as u32;
                    tma_load_2d(b, t.b_map, k0, (blk[1] * BN) as i32, full(s));
                    it += 1;
                    kt += 1;
                }
                i += 1;
            }
            return;
        }
        asm!("setmaxnreg.inc.sync.aligned.u32 {r};", r = const CONSUMER_REGS,
             options(nostack, preserves_flags));
        let ct = tid - 128;
        let wg = ct / 128;
        // this warpgroup's 64 rows of A: 64 rows of 128 bytes into the stage
        let wg_rows = (wg * 64 * 128) as u32;
        let signals = ct % 128 == 0;
        let tc = C_PLAN.thread(ct);
        macro_rules! consumer {
            ($($d:ident)*) => {
                $(let mut $d = 0f32;)*
                let mut it = 0i64;
                let mut i = 0;
                while let Some(blk) = tile_of(block, grid, i, tiles) {
                    let mut kt = 0;
                    while kt < ktiles {
                        let s = it % STAGES;
                        mbarrier_wait(full(s), ((it / STAGES) & 1) as u32);
                        let sa = ((stage(s) + wg_rows) >> 4) as u64;
                        let sb = ((stage(s) + (2 * A_ELEMS) as u32) >> 4) as u64;
                        asm!("wgmma.fence.sync.aligned;", options(nostack, preserves_flags));
                        let mut kb = 0;
                        while kb < K_BLOCKS {
                            // the tile's first k-block overwrites the accumulators
                            let acc = (kt > 0 || kb > 0) as u32;
                            let (da, db) = (DESC_A[kb as usize] + sa, DESC_B[kb as usize] + sb);
                            if I::BF16 {
                                wgmma_m64n256k16!("bf16", da, db, acc; $($d)*);
                            } else {
                                wgmma_m64n256k16!("f16", da, db, acc; $($d)*);
                            }
                            kb += 1;
                        }
                        asm!("wgmma.commit_group.sync.aligned;",
                             "wgmma.wait_group.sync.aligned 1;",
                             options(nostack, preserves_flags));
                        // the previous k-tile's wgmmas are done: its stage is free
                        if kt > 0 && signals {
                            mbarrier_arrive(empty((it + STAGES - 1) % STAGES));
                        }
                        it += 1;
                        kt += 1;
                    }
                    asm!("wgmma.wait_group.sync.aligned 0;", options(nostack, preserves_flags));
                    // both warpgroups' wgmmas are done with the last stage: it stages C
                    named_barrier(1, CONSUMERS as u32);
                    let kept = (it + STAGES - 1) % STAGES;
                    let out = Chunk {
                        at: stage(kept) + (wg * EPI_BYTES) as u32,
                        origin: [tc[0] - 64 * wg, tc[1]],
                        alpha: p.alpha,
                    };
                    let plan = if O::BITS == 32 { &STORE_32 } else { &STORE_16 };
                    unroll4!(chunk => {
                        const { assert!(BN / EPI_N == 4) };
                        let out = Chunk { origin: [out.origin[0], out.origin[1] - EPI_N * chunk], ..out };
                        let pick = |v: i64| v / (128 / 4) == chunk;
                        each_pair!(out, pick, 0; $($d)*);
                        named_barrier(2 + wg as u32, 128);
                        let at = [2 * blk[0] + wg, (BN / EPI_N) * blk[1] + chunk];
                        store_tile(p, plan, at, ct % 128, out.at, EPI_PITCH);
                        named_barrier(2 + wg as u32, 128);
                    });
                    if signals {
                        mbarrier_arrive(empty(kept));
                    }
                    i += 1;
                }
            };
        }
        consumer!(d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
    }

    /// A warpgroup's staging of one chunk of C: shared address of its `64 x EPI_N` `f32` tile
    /// (pitch [`EPI_PITCH`]), the thread's [`C_PLAN`] origin relative to the chunk.
    #[derive(Clone, Copy)]
    struct Chunk {
        at: u32,
        origin: [i64; 2],
        alpha: f32,
    }
    impl Chunk {
        /// Accumulators `v` and `v + 1` (neighbours in a row, checked in `gemm_sm90`), times
        /// alpha, into the chunk.
        #[inline(always)]
        unsafe fn pair(&self, v: i64, x: f32, y: f32) {
            let c = C_PLAN.value(v);
            let (r, col) = (self.origin[0] + c[0], self.origin[1] + c[1]);
            let at = self.at + 4 * (r * EPI_PITCH + col) as u32;
            st_shared_v2(at, [(self.alpha * x).to_bits(), (self.alpha * y).to_bits()]);
        }
    }
}
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub use dev::gemm_sm90;
