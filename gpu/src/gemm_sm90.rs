//! `gemm_sm90`: `C = alpha A B^T + beta C` with `wgmma` (sm_90a) on stages the copy engine fills;
//! warp-specialized, persistent, in clusters of two blocks that share B's tile.
//!
//! - [`THREADS`] threads per block: warpgroup 0 is the producer, warpgroups 1 and 2 the
//!   consumers. `setmaxnreg` moves registers from the producer (40) to the consumers (232).
//! - Clusters of [`CLUSTER_M`] blocks, as many as fit on the GPU at once (one block per SM), walk
//!   the pairs of `128 x 256` tiles of C that share B's tile ([`tile_of`], [`raster`] order).
//! - The producer's thread 0 fills [`STAGES`] stages with the copy engine ([`loads`]): it waits
//!   for a stage's *empty* barrier, arms its *full* barrier with the stage's bytes, loads its
//!   `BM x BK` box of A, and half of B's `BN x BK`, multicast to both blocks of the cluster (each
//!   block's B traffic from L2 halves). It runs ahead across tiles, so the next tile's first
//!   stages load during this tile's epilogue.
//! - Each consumer warpgroup computes `64 x 256` of the tile
//!   (`make_tiled_mma(SM90_64x256x16_F32BF16BF16_SS, (2,1))`, [`C_PLAN`]): per k-tile it waits
//!   for the stage's full barrier, issues four `wgmma.m64n256k16` on descriptors from
//!   layout-core's `make_gmma_desc_k` ([`descriptors`]), leaves them in flight and waits for the
//!   previous k-tile's, whose stage one thread of the warpgroup then releases in both blocks
//!   (the empty barrier expects an arrival from each consumer warpgroup of the cluster, as the
//!   partner's producer writes into this block's stage too).
//! - The epilogue keeps the tile's last stage (both warpgroups wait for each other's last wgmmas
//!   on a named barrier), so the producer's loads of the next tile go on in the other stages.
//!   Each warpgroup stages its `64 x 256` of C there in [`EPI_N`]-column chunks of `f32` (times
//!   `alpha`, [`chunk_coord`]), and copies each chunk to C by [`STORE_16`] / [`STORE_32`]
//!   (16-byte accesses of whole rows, `beta C` added; ragged edges element by element,
//!   predicated by C's bounds), then releases the stage.

use crate::gemm::{store_plan, BK, BM, BN, STAGE_BYTES};
use layout_core::{
    const_ok, make_gmma_descs_k, make_tiled_mma, ComposedLayout, GmmaDescriptor, GmmaMajor,
    IntTuple, Layout, Operand, Swizzle, TiledMma, TvCoords, SM90_64X256X16_F32BF16BF16_SS,
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
/// The wgmma descriptors of a `rows x BK` 16-bit K-major tile with the 128-byte swizzle (the
/// stages' layout) at shared address 0, one per k-block of 16.
pub const fn k_major_descs(rows: i64) -> [GmmaDescriptor; K_BLOCKS as usize] {
    const_ok!(make_gmma_descs_k(&tile(rows), 16, GmmaMajor::K))
}
/// A warpgroup's A (`64 x BK` of the stage, K-major, 128-byte swizzle) per k-block, at shared
/// address 0.
pub const DESC_A: [GmmaDescriptor; K_BLOCKS as usize] = k_major_descs(64);
/// B's (`BN x BK`).
pub const DESC_B: [GmmaDescriptor; K_BLOCKS as usize] = k_major_descs(BN);
/// Columns of C per epilogue chunk.
pub const EPI_N: i64 = 64;
/// Row pitch (`f32` elements) of a chunk in shared memory: padded so that a warp's 8-byte
/// writes of 8 rows take the fewest wavefronts.
pub const EPI_PITCH: i64 = EPI_N + 8;
/// Bytes of a warpgroup's chunk: in its half of the kept stage.
pub const EPI_BYTES: i64 = 64 * EPI_PITCH * 4;
/// The copy engine's stores of C (when `beta` is 0 and C has a tensor map): each warpgroup
/// stages a chunk in C's own type as boxes of 64 rows of 128 bytes (`c_box_cols` columns),
/// swizzled by the 128-byte mode ([`C_BOX_SWIZZLE`], on byte offsets), and one thread stores
/// them; the copy engine leaves out what lies outside C.
pub const fn c_box_cols(bits: i64) -> i64 {
    1024 / bits
}
/// The 128-byte swizzle on byte offsets: the 16-byte unit (bits 4..7) XOR the row within 8
/// (bits 7..10). layout-core's `SwizzleMode::B128` for 8-bit units, checked below.
pub const C_BOX_SWIZZLE: Swizzle = const_ok!(Swizzle::new(3, 4, 3));
const _: () = {
    let sw = const_ok!(layout_core::SwizzleMode::B128.swizzle(8));
    assert!(sw.params().0 == 3 && sw.params().1 == 4 && sw.params().2 == 3);
    // each warpgroup's boxes start on 1024-byte boundaries (the swizzle's pattern is the
    // address's) and fit in its part of the kept stage
    assert!(EPI_BYTES % 1024 == 0 && EPI_N % c_box_cols(32) == 0 && EPI_N % c_box_cols(16) == 0);
    assert!((EPI_N / c_box_cols(32)) * 64 * 128 <= EPI_BYTES);
};
/// Byte offset of element `(r, c)` of a `64 x EPI_N` chunk of `bits`-bit elements staged as
/// boxes for the copy engine: box `c / c_box_cols(bits)` (8 KB each), then the swizzled row.
#[inline(always)]
pub const fn c_box_offset(bits: i64, r: i64, c: i64) -> i64 {
    let w = c_box_cols(bits);
    (c / w) * 64 * 128 + C_BOX_SWIZZLE.apply(r * 128 + (c % w) * bits / 8)
}
/// The epilogue's copy of a chunk to 16-bit C (8 per access), a warpgroup's threads.
pub const STORE_16: TvCoords<2> = store_plan(8, 16, 128, [64, EPI_N]);
/// To `f32` C (4 per access).
pub const STORE_32: TvCoords<2> = store_plan(4, 32, 128, [64, EPI_N]);
/// Does each consumer thread's origin lie in its warpgroup's 64 rows, and each accumulator's
/// [`chunk_coord`] in its chunk's staging tile?
const fn chunks_line_up() -> bool {
    let mut vals = [[0i64; 2]; 128];
    let mut v = 0;
    while v < 128 {
        vals[v] = C_PLAN.value(v as i64);
        v += 1;
    }
    let mut t = 0;
    while t < CONSUMERS {
        let o = C_PLAN.thread(t);
        // the warpgroup's rows of the tile
        if o[0] / 64 != t / 128 {
            return false;
        }
        let mut v = 0;
        while v < 128 {
            let (_, [r, col]) = place_in_chunk(o, vals[v as usize], v);
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
/// stage (the full one expects the producer's arrival and the stage's bytes, the empty one an
/// arrival from each consumer warpgroup of the cluster).
pub const SMEM_BYTES: i64 = 1024 + STAGES * STAGE_BYTES + 16 * STAGES;
const _: () = {
    assert!(MMA.threads() == CONSUMERS && THREADS == CONSUMERS + 128);
    // the register file (64 K) holds the block after the moves; counts are multiples of 8
    assert!(128 * PRODUCER_REGS + (CONSUMERS as u32) * CONSUMER_REGS <= 65536);
    assert!(PRODUCER_REGS.is_multiple_of(8) && CONSUMER_REGS.is_multiple_of(8));
    assert!(SMEM_BYTES <= 227 * 1024, "an SM's shared memory");
};

/// Blocks per cluster, along M: the two blocks of a cluster take the tiles `(2 m, n)` and
/// `(2 m + 1, n)`, which share B's tile.
pub const CLUSTER_M: i64 = 2;
/// Rows of B each block of a cluster loads (and multicasts to both): its box in B's tensor map.
pub const B_BOX_ROWS: i64 = BN / CLUSTER_M;
/// Where B's rows start in a stage (bytes): after A's.
pub const B_AT: i64 = 2 * BM * BK;
const _: () = assert!(
    (2 * B_BOX_ROWS * BK) % 1024 == 0 && B_AT % 1024 == 0,
    "each box starts on a 1024-byte boundary: the 128-byte swizzle's pattern is the stage's"
);

/// The pairs of tiles (rows `2 m`, `2 m + 1`, one column of B's tiles) of `tiles_mn` tiles:
/// more clusters than this would have nothing to do.
#[inline(always)]
pub const fn tile_pairs(tiles_mn: [i64; 2]) -> i64 {
    (tiles_mn[0] + CLUSTER_M - 1) / CLUSTER_M * tiles_mn[1]
}

/// The tile of C that block `rank` of cluster `cluster` (of `clusters`) takes on its `i`-th
/// turn, or `None` past the last: the clusters walk the pairs of tiles (rows `2 m`, `2 m + 1`)
/// `cluster + i * clusters`, in [`raster`] order over the pairs, and each block takes its row of
/// the pair. When M has an odd number of tiles, the last pairs' second tile lies outside C: that
/// block still loads (its half of B is its partner's) and writes nothing.
#[inline(always)]
pub const fn tile_of(
    cluster: i64,
    clusters: i64,
    rank: i64,
    i: i64,
    tiles_mn: [i64; 2],
) -> Option<[i64; 2]> {
    let pairs_m = (tiles_mn[0] + CLUSTER_M - 1) / CLUSTER_M;
    let t = cluster + i * clusters;
    if t >= tile_pairs(tiles_mn) {
        None
    } else {
        let [pm, n] = crate::gemm::raster(t, pairs_m, tiles_mn[1]);
        Some([CLUSTER_M * pm + rank, n])
    }
}
pub use crate::gemm::raster;

/// The stage and the use of it (its phase count) of the block's k-tile `it`, counted over all
/// the block's turns: stage `it % STAGES`, use `it / STAGES`. The producer waits for the empty
/// barrier's phase `(use - 1) & 1` before a use after the first, the consumers for the full
/// barrier's phase `use & 1`.
#[inline(always)]
pub const fn slot(it: i64) -> (i64, i64) {
    (it % STAGES, it / STAGES)
}

/// The stage a tile's epilogue keeps, given the k-tile count `it` after the tile's last: the
/// last k-tile's.
#[inline(always)]
pub const fn kept_stage(it: i64) -> i64 {
    slot(it - 1).0
}

/// Warpgroup `wg`'s epilogue staging in the kept stage at shared address `stage`.
#[inline(always)]
pub const fn staging_at(stage: u32, wg: i64) -> u32 {
    stage + (wg * EPI_BYTES) as u32
}

/// A copy-engine load of one k-tile: the box of `map` at `coords` (innermost, K, first) to shared
/// byte offset `at` of a stage, in the blocks of `mask` (bit `r`: rank `r`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxLoad {
    /// `false`: A's map (`BM x BK` boxes); `true`: B's (`B_BOX_ROWS x BK`).
    pub b: bool,
    /// The box's coordinates `(k, row)`.
    pub coords: [i64; 2],
    /// Bytes into the stage.
    pub at: i64,
    /// The blocks it lands in.
    pub mask: u16,
}

/// The loads block `rank` issues for k-tile `kt` of its tile `blk`: its A box, and its half of
/// B's tile, multicast to both blocks of the cluster. Together, the two blocks' loads fill each
/// stage once: A's `BM x BK` at 0, B's `BN x BK` at [`B_AT`].
pub const fn loads(blk: [i64; 2], kt: i64, rank: i64) -> [BoxLoad; 2] {
    [
        BoxLoad {
            b: false,
            coords: [kt * BK, blk[0] * BM],
            at: 0,
            mask: 1 << rank,
        },
        BoxLoad {
            b: true,
            coords: [kt * BK, blk[1] * BN + rank * B_BOX_ROWS],
            at: B_AT + rank * B_BOX_ROWS * BK * 2,
            mask: (1 << CLUSTER_M) - 1,
        },
    ]
}

/// The shared-memory descriptors of warpgroup `wg`'s A and of B for k-block `kb` of the stage at
/// shared address `stage` (1024-aligned).
#[inline(always)]
pub const fn descriptors(stage: u32, wg: i64, kb: i64) -> [u64; 2] {
    // the warpgroup's 64 rows of A: 64 rows of 128 bytes into the stage
    let a = ((stage as i64 + wg * 64 * BK * 2) >> 4) as u64;
    let b = ((stage as i64 + B_AT) >> 4) as u64;
    [DESC_A[kb as usize].desc + a, DESC_B[kb as usize].desc + b]
}

/// Where accumulator `v` of the consumer thread whose [`C_PLAN`] origin is `o` goes in the
/// epilogue: chunk `v / 32` of its warpgroup's (`o[0] / 64`) staging, at `(row, column)` of the
/// chunk's `64 x EPI_N` tile.
#[inline(always)]
pub const fn chunk_coord(o: [i64; 2], v: i64) -> (i64, [i64; 2]) {
    place_in_chunk(o, C_PLAN.value(v), v)
}
/// [`chunk_coord`] given accumulator `v`'s [`C_PLAN`] value `c`.
#[inline(always)]
const fn place_in_chunk(o: [i64; 2], c: [i64; 2], v: i64) -> (i64, [i64; 2]) {
    let chunk = v / (128 / (BN / EPI_N));
    (chunk, [o[0] % 64 + c[0], o[1] + c[1] - EPI_N * chunk])
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
mod dev {
    use super::*;
    use crate::device::{
        barrier_cluster, bulk_commit, bulk_wait, bulk_wait_read, cluster_rank, cluster_x,
        clusters_x, dynamic_smem, fence_proxy_async_shared, mbarrier_arrive_cluster,
        mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, named_barrier, smem_addr,
        st_shared_u32, st_shared_v2, tensormap_acquire, thread_x, tma_load_2d,
        tma_load_2d_multicast, tma_store_2d, trap,
    };
    use crate::device::{ld_shared_v4, load_v4_rw};
    use crate::gemm::{GemmIn, GemmParams, GemmTmaParams};
    use crate::mem::{Gmem, Mem, V4};
    use crate::real::Real;
    use core::arch::asm;
    use layout_core::make_coord_tensor;

    /// The kernel.
    ///
    /// # Safety
    /// As `gemm::gemm_tma` (the same parameters; B's tensor map with boxes of [`B_BOX_ROWS`]` x
    /// BK`), with [`THREADS`] threads, [`SMEM_BYTES`] of shared memory, clusters of
    /// [`CLUSTER_M`] blocks, and any number of clusters.
    #[inline(always)]
    pub unsafe fn gemm_sm90<I: GemmIn, O: Real>(t: GemmTmaParams<Gmem<I>, Gmem<O>>) {
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
                mbarrier_init(empty(s), 2 * CLUSTER_M as u32);
                s += 1;
            }
            tensormap_acquire(t.a_map);
            tensormap_acquire(t.b_map);
            if !t.c_map.is_null() {
                tensormap_acquire(t.c_map);
            }
        }
        // the partner's barriers are initialised before anything reaches them
        barrier_cluster();
        let (cluster, clusters, rank) = (cluster_x(), clusters_x(), cluster_rank());
        let turn = |i: i64| tile_of(cluster, clusters, rank, i, tiles);
        if tid < 128 {
            crate::sync::setmaxnreg_dec::<PRODUCER_REGS>();
            if tid == 0 {
                // k-tile `it` of the block (over all its tiles) goes to stage `it % STAGES`,
                // its `it / STAGES`-th use; the stage is free once both blocks' consumers
                // released its previous use (the partner's half of B lands here too)
                let mut it = 0i64;
                let mut i = 0;
                while let Some(blk) = turn(i) {
                    let mut kt = 0;
                    while kt < ktiles {
                        let (s, round) = slot(it);
                        if round > 0 {
                            mbarrier_wait(empty(s), ((round - 1) & 1) as u32);
                        }
                        mbarrier_arrive_expect_tx(full(s), STAGE_BYTES as u32);
                        let [a, b] = loads(blk, kt, rank);
                        let (ka, kb) = (a.coords[0] as i32, b.coords[0] as i32);
                        let at = stage(s) + a.at as u32;
                        tma_load_2d(at, t.a_map, ka, a.coords[1] as i32, full(s));
                        let at = stage(s) + b.at as u32;
                        tma_load_2d_multicast(at, t.b_map, kb, b.coords[1] as i32, full(s), b.mask);
                        it += 1;
                        kt += 1;
                    }
                    i += 1;
                }
            }
        } else {
            crate::sync::setmaxnreg_inc::<CONSUMER_REGS>();
            consume::<I, O>(&t, tid - 128, ktiles, stage, full, empty, turn);
        }
        // no block leaves while its partner may still signal its barriers
        barrier_cluster();
    }

    /// A consumer thread (`ct` of [`CONSUMERS`]): its warpgroup's wgmmas over each turn's
    /// k-tiles, each stage released to both blocks' producers, then the epilogue.
    #[inline(always)]
    unsafe fn consume<I: GemmIn, O: Real>(
        t: &GemmTmaParams<Gmem<I>, Gmem<O>>,
        ct: i64,
        ktiles: i64,
        stage: impl Fn(i64) -> u32,
        full: impl Fn(i64) -> u32,
        empty: impl Fn(i64) -> u32,
        turn: impl Fn(i64) -> Option<[i64; 2]>,
    ) {
        let p = &t.g;
        // C by the copy engine: it has a map, and the old C is not read
        let by_copy_engine = !t.c_map.is_null() && p.beta == 0.0;
        let wg = ct / 128;
        let o = C_PLAN.thread(ct);
        let signals = ct % 128 == 0;
        let release = |s: i64| {
            if signals {
                let mut r = 0;
                while r < CLUSTER_M {
                    mbarrier_arrive_cluster(empty(s), r);
                    r += 1;
                }
            }
        };
        macro_rules! consumer {
            ($($d:ident)*) => {
                $(let mut $d = 0f32;)*
                let mut it = 0i64;
                let mut i = 0;
                while let Some(blk) = turn(i) {
                    let mut kt = 0;
                    while kt < ktiles {
                        let (s, round) = slot(it);
                        mbarrier_wait(full(s), (round & 1) as u32);
                        asm!("wgmma.fence.sync.aligned;", options(nostack, preserves_flags));
                        let mut kb = 0;
                        while kb < K_BLOCKS {
                            // the tile's first k-block overwrites the accumulators
                            let acc = (kt > 0 || kb > 0) as u32;
                            let [da, db] = descriptors(stage(s), wg, kb);
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
                        if kt > 0 {
                            release(slot(it - 1).0);
                        }
                        it += 1;
                        kt += 1;
                    }
                    asm!("wgmma.wait_group.sync.aligned 0;", options(nostack, preserves_flags));
                    // both warpgroups' wgmmas are done with the last stage: it stages C
                    named_barrier(1, CONSUMERS as u32);
                    let kept = kept_stage(it);
                    let out = Chunk {
                        at: staging_at(stage(kept), wg),
                        o,
                        alpha: p.alpha,
                    };
                    let plan = if O::BITS == 32 { &STORE_32 } else { &STORE_16 };
                    unroll4!(chunk => {
                        const { assert!(BN / EPI_N == 4) };
                        let pick = |v: i64| chunk_coord(o, v).0 == chunk;
                        if by_copy_engine {
                            // the previous chunk's boxes have left the staging
                            if chunk > 0 {
                                if signals {
                                    bulk_wait_read::<0>();
                                }
                                named_barrier(2 + wg as u32, 128);
                            }
                            let out = Boxes::<O> { out, _o: core::marker::PhantomData };
                            each_pair!(out, pick, 0; $($d)*);
                            fence_proxy_async_shared();
                            named_barrier(2 + wg as u32, 128);
                            if signals {
                                let w = c_box_cols(O::BITS);
                                let row = (BM * blk[0] + 64 * wg) as i32;
                                let mut b = 0;
                                while b < EPI_N / w {
                                    let col = BN * blk[1] + EPI_N * chunk + w * b;
                                    tma_store_2d(t.c_map, out.out.at + (b * 64 * 128) as u32, col as i32, row);
                                    b += 1;
                                }
                                bulk_commit();
                            }
                        } else {
                            each_pair!(out, pick, 0; $($d)*);
                            named_barrier(2 + wg as u32, 128);
                            let at = [2 * blk[0] + wg, (BN / EPI_N) * blk[1] + chunk];
                            store_tile(p, plan, at, ct % 128, out.at, EPI_PITCH);
                            named_barrier(2 + wg as u32, 128);
                        }
                    });
                    if by_copy_engine && signals {
                        // the staging is read (the stage may be refilled); the writes land later
                        bulk_wait_read::<0>();
                    }
                    release(kept);
                    i += 1;
                }
                if by_copy_engine && signals {
                    bulk_wait::<0>();
                }
            };
        }
        consumer!(d0 d1 d2 d3 d4 d5 d6 d7 d8 d9 d10 d11 d12 d13 d14 d15 d16 d17 d18 d19 d20 d21 d22 d23 d24 d25 d26 d27 d28 d29 d30 d31 d32 d33 d34 d35 d36 d37 d38 d39 d40 d41 d42 d43 d44 d45 d46 d47 d48 d49 d50 d51 d52 d53 d54 d55 d56 d57 d58 d59 d60 d61 d62 d63 d64 d65 d66 d67 d68 d69 d70 d71 d72 d73 d74 d75 d76 d77 d78 d79 d80 d81 d82 d83 d84 d85 d86 d87 d88 d89 d90 d91 d92 d93 d94 d95 d96 d97 d98 d99 d100 d101 d102 d103 d104 d105 d106 d107 d108 d109 d110 d111 d112 d113 d114 d115 d116 d117 d118 d119 d120 d121 d122 d123 d124 d125 d126 d127);
    }

    /// A warpgroup's staging of one chunk of C: shared address of its `64 x EPI_N` `f32` tile
    /// (pitch [`EPI_PITCH`]), the consumer thread's [`C_PLAN`] origin, alpha.
    #[derive(Clone, Copy)]
    struct Chunk {
        at: u32,
        o: [i64; 2],
        alpha: f32,
    }
    /// The chunk staged in C's type for the copy engine: [`c_box_offset`]s.
    #[derive(Clone, Copy)]
    struct Boxes<O> {
        out: Chunk,
        _o: core::marker::PhantomData<O>,
    }
    impl<O: Real> Boxes<O> {
        /// Accumulators `v` and `v + 1`, times alpha, as `O`, at their [`chunk_coord`].
        #[inline(always)]
        unsafe fn pair(&self, v: i64, x: f32, y: f32) {
            let (_, [r, col]) = chunk_coord(self.out.o, v);
            let at = self.out.at + c_box_offset(O::BITS, r, col) as u32;
            let (x, y) = (self.out.alpha * x, self.out.alpha * y);
            if O::BITS == 32 {
                st_shared_v2(at, [x.to_bits(), y.to_bits()]);
            } else {
                st_shared_u32(at, O::narrow2(x, y));
            }
        }
    }
    impl Chunk {
        /// Accumulators `v` and `v + 1` (neighbours in a row, checked above), times alpha, at
        /// their [`chunk_coord`].
        #[inline(always)]
        unsafe fn pair(&self, v: i64, x: f32, y: f32) {
            let (_, [r, col]) = chunk_coord(self.o, v);
            let at = self.at + 4 * (r * EPI_PITCH + col) as u32;
            st_shared_v2(at, [(self.alpha * x).to_bits(), (self.alpha * y).to_bits()]);
        }
    }

    // gemm_sm80's epilogue copy, on shared addresses: until gemm_sm90 is a kernel of the model
    /// Thread `t`'s part of the copy `plan` (one of [`store_plan`]'s, 16 bytes of `O` per
    /// access) of the `f32` tile at shared address `s0` (rows `pitch` elements apart), plus
    /// `beta C`, into C's tile `blk` of `plan.tile()`: whole 16-byte accesses where the tile lies
    /// inside C with aligned rows, else element by element predicated by C's bounds.
    #[inline(always)]
    unsafe fn store_tile<O: Real>(
        p: &GemmParams<Gmem<impl GemmIn>, Gmem<O>>,
        plan: &TvCoords<2>,
        blk: [i64; 2],
        t: i64,
        s0: u32,
        pitch: i64,
    ) {
        let v = 128 / O::BITS;
        let tile = plan.tile();
        let id = make_coord_tensor(p.c.shape()).local_tile(tile, blk);
        let thr = plan.get_slice(t);
        let dst = thr.partition_D(&p.c.local_tile(tile, blk));
        let pred = thr.partition_S(&id);
        let o = thr.origin();
        let d = p.c.layout().stride();
        let whole = id.covers(tile) && d[1] == 1 && d[0] % v == 0 && p.c.engine().aligned16();
        let read_c = p.beta != 0.0;
        let mut a = 0;
        while a < plan.values() {
            let c = plan.value(a);
            let at = s0 + 4 * ((o[0] + c[0]) * pitch + o[1] + c[1]) as u32;
            let mut f = [0f32; 8];
            let x = ld_shared_v4(at);
            unroll4!(w => f[w as usize] = f32::from_bits(x.0[w as usize]));
            if v == 8 {
                let y = ld_shared_v4(at + 16);
                unroll4!(w => f[4 + w as usize] = f32::from_bits(y.0[w as usize]));
            }
            if whole {
                let g = dst.at(a);
                if read_c {
                    let old = load_v4_rw(g.0 as *const u32);
                    unroll8!(e => if e < v {
                        let word = old.0[(e * O::BITS / 32) as usize] >> ((e * O::BITS) % 32);
                        f[e as usize] += p.beta * O::widen(word);
                    });
                }
                let mut out = [0u32; 4];
                unroll4!(w => {
                    let w = w as usize;
                    out[w] = if O::BITS == 32 {
                        f[w].to_bits()
                    } else {
                        O::narrow2(f[2 * w], f[2 * w + 1])
                    };
                });
                g.write_v4(V4(out));
            } else {
                unroll8!(e => if e < v && pred.elem_less(a + e) {
                    let g = dst.at(a + e);
                    let mut r = f[e as usize];
                    if read_c {
                        r += p.beta * g.read().to_f32();
                    }
                    g.write(O::from_f32(r));
                });
            }
            a += v;
        }
    }
}

#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
pub use dev::gemm_sm90;
