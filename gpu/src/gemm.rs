//! `gemm_sm80`: `C = alpha A B^T + beta C` on the tensor cores with `mma.sync.m16n8k16`, A `M x K`
//! and B `N x K`, 16-bit inputs (`bf16` or `f16`), `f32` accumulation, output `bf16`, `f16` or
//! `f32`.
//!
//! Everything a thread does is derived from `const` layouts:
//!
//! - [`MMA`]: the tiled MMA, `make_tiled_mma(SM80_16x8x16_F32*_TN, (2,4):(1,2),
//!   Tile<_, (8,4,2):(1,16,8), _>)`: 8 warps, a 32x64x16 tile per step (each warp's two n8 atoms
//!   adjacent), repeated over the block tile [`BM`]` x `[`BN`]; its `partition_A/B/C` as
//!   coordinates ([`A_PLAN`], [`B_PLAN`], [`C_PLAN`]): 4 x 8 atoms, 64x64 of C per warp.
//! - A block takes `local_tile(A, (BM, BK), (bm, k))` and `local_tile(B, (BN, BK), (bn, k))` for
//!   each k-tile, through [`STAGES`] shared-memory stages filled by `cp.async` (128-bit, a
//!   predicated-off chunk zero-filled), the tiled copy [`load_plan`] deciding which thread moves
//!   which chunk.
//! - The stages are K-major tiles swizzled by `Sw<log2(BK/8),3,3>` ([`SW`]): the 8 rows an
//!   `ldmatrix` phase reads land in 8 different 16-byte bank groups.
//! - Each warp reads its fragments with `ldmatrix.x4`: the lane addresses are
//!   `make_tiled_copy_A/B(Copy_Atom<SM75_U32x4_LDSM_N>, MMA)`'s partitions of the stages
//!   ([`LDSM_A`], [`LDSM_B`]); independently, [`ldsm_delivers`] proves from the MMA atom's
//!   layouts that the matrices `ldmatrix` delivers are the atom's fragments.
//! - The accumulators go through shared memory (`f32`, rows padded by 8 elements), and leave it
//!   as 128-bit stores of whole output rows; ragged edges are predicated by the identity tile
//!   (`elem_less`).
//!
//! Operands whose K-stride is not 1 or whose rows are not 16-byte aligned (another major, a `K`
//! not a multiple of 8) are loaded element by element into the same stages: slower, same result.

use layout_core::{
    const_ok, make_tiled_copy_a, make_tiled_copy_b, make_tiled_copy_tv, make_tiled_mma_permuted,
    CopyAtom, FlatTensor, IntTuple, Layout, MmaAtom, Operand, Swizzle, TiledMma, TvCoords,
    SM75_U32X4_LDSM_N, SM80_16X8X16_F32BF16BF16F32_TN, SM80_16X8X16_F32F16F16F32_TN,
};

/// Block tile rows (of A and C).
pub const BM: i64 = 128;
/// Block tile columns (rows of B, columns of C).
pub const BN: i64 = 256;
/// K per stage.
pub const BK: i64 = 64;
/// Shared-memory stages of the cp.async pipeline.
pub const STAGES: i64 = 3;
/// Threads per block: 8 warps.
pub const THREADS: i64 = 256;
/// Blocks along M that the raster keeps together (L2 reuse of B).
pub const GROUP_M: i64 = 8;

const fn lay(s: &str) -> Layout {
    const_ok!(Layout::parse(s))
}

/// The warps' layout over the MMA tile: `(2, 4)`, column-major.
pub const ATOM_LAYOUT: Layout = lay("(2,4):(1,2)");
/// The tiled MMA (bf16 atom; the f16 one has the same layouts, checked below).
pub const MMA: TiledMma = const_ok!(make_tiled_mma_permuted(
    &SM80_16X8X16_F32BF16BF16F32_TN,
    &ATOM_LAYOUT,
    &[None, Some(PERMUTATION_N), None]
));
/// The N permutation (CuTe's `Tile<_, (8,4,2):(1,16,8), _>`): each warp's two n8 atoms of a
/// 64-wide step are adjacent (n `16 w .. 16 w + 16`), so that one `ldmatrix.x4` reads both.
pub const PERMUTATION_N: Layout = lay("(8,4,2):(1,16,8)");
const _: () = {
    let f = SM80_16X8X16_F32F16F16F32_TN;
    let b = SM80_16X8X16_F32BF16BF16F32_TN;
    assert!(f.a.equals(&b.a) && f.b.equals(&b.b) && f.c.equals(&b.c));
};
/// K-steps per stage.
pub const K_STEPS: i64 = BK / MMA.tile_mnk[2];
/// Atoms per thread along M and N in a k-step: a thread's A (B) values of a stage over the
/// atom's 8 (4) and the k-steps.
pub const MMA_M: i64 = A_PLAN.values() / 8 / K_STEPS;
/// See [`MMA_M`].
pub const MMA_N: i64 = B_PLAN.values() / 4 / K_STEPS;
const _: () = assert!(
    MMA_M == 4 && MMA_N == 8 && K_STEPS <= 4 && MMA.threads() == THREADS,
    "the unrolled loops cover 4 x 8 MMA tiles, up to 4 k-steps, 256 threads"
);

/// A's partition of a `BM x BK` stage (`partition_A`), as coordinates: thread origin, values
/// `(8, MMA_M, K_STEPS)`.
pub const A_PLAN: TvCoords<2> = const_ok!(TvCoords::of_mma(&MMA, Operand::A, [BM, BK]));
/// B's partition of a `BN x BK` stage: values `(4, MMA_N, K_STEPS)`.
pub const B_PLAN: TvCoords<2> = const_ok!(TvCoords::of_mma(&MMA, Operand::B, [BN, BK]));
/// C's partition of the block tile: values `(4, MMA_M, MMA_N)`.
pub const C_PLAN: TvCoords<2> = const_ok!(TvCoords::of_mma(&MMA, Operand::C, [BM, BN]));

/// Does accumulator block `(i, j)` of each warp (C's values `4 (i + MMA_M j) ..`) sit at the
/// rows of its `i`-th A atom and the columns of its `j`-th B atom (as the main loop pairs them)?
const fn fragments_line_up() -> bool {
    let mut w = 0;
    while w < THREADS / 32 {
        let (c, a, b) = (
            C_PLAN.thread(32 * w),
            A_PLAN.thread(32 * w),
            B_PLAN.thread(32 * w),
        );
        let mut i = 0;
        while i < MMA_M {
            let mut j = 0;
            while j < MMA_N {
                let cv = C_PLAN.value(4 * (i + MMA_M * j));
                let (av, bv) = (A_PLAN.value(8 * i), B_PLAN.value(4 * j));
                if c[0] + cv[0] != a[0] + av[0] || c[1] + cv[1] != b[0] + bv[0] {
                    return false;
                }
                j += 1;
            }
            i += 1;
        }
        w += 1;
    }
    true
}
const _: () = assert!(
    fragments_line_up(),
    "accumulator (i, j) is A atom i times B atom j"
);

/// Column-major `(rows, cols)` coordinate of index `i` in a tile of `rows` rows.
const fn coord(i: i64, rows: i64) -> [i64; 2] {
    [i % rows, i / rows]
}

/// The origin of the 8x8 matrix that `ldmatrix` delivers in word `q`: where word `q` of lane 0
/// lies in the atom's `rows x 16` operand tile (its TV layout `tv`).
pub const fn ldsm_origin(tv: &Layout, rows: i64, q: i64) -> [i64; 2] {
    coord(tv.call(32 * 2 * q), rows)
}

/// Does `ldmatrix` (non-transposed, `words` matrices) deliver the atom's fragment? Lane `l`
/// receives in word `q` the elements `(l / 4, 2 (l % 4) + h)` of matrix `q`, whose rows lanes
/// `8q..8q+8` address from [`ldsm_origin`]; the atom's TV layout must put value `2q + h` of lane
/// `l` at exactly that element.
pub const fn ldsm_delivers(tv: &Layout, rows: i64, words: i64) -> bool {
    let mut l = 0;
    while l < 32 {
        let mut q = 0;
        while q < words {
            let o = ldsm_origin(tv, rows, q);
            let mut h = 0;
            while h < 2 {
                let want = coord(tv.call(l + 32 * (2 * q + h)), rows);
                if want[0] != o[0] + l / 4 || want[1] != o[1] + 2 * (l % 4) + h {
                    return false;
                }
                h += 1;
            }
            q += 1;
        }
        l += 1;
    }
    true
}
const _: () = {
    let a: &MmaAtom = &SM80_16X8X16_F32BF16BF16F32_TN;
    assert!(
        ldsm_delivers(&a.a, 16, 4),
        "ldmatrix.x4 delivers A's fragment"
    );
    assert!(
        ldsm_delivers(&a.b, 8, 2),
        "ldmatrix.x2 delivers B's fragment"
    );
};

/// The stages' swizzle: `Sw<log2(BK / 8), 3, 3>` over a K-major `rows x BK` tile of 16-bit
/// elements (16-byte chunks, `BK / 8` per row, XORed with the row's low bits).
pub const SW: Swizzle = const_ok!(Swizzle::new((BK / 8).trailing_zeros() as i64, 3, 3));
/// Is `Sw(x + d) == Sw(x) + d` for every `x` (the swizzle acts inside blocks of `d` elements)?
const fn sw_commutes(d: i64) -> bool {
    let mut x = 0;
    while x < 4 * d {
        if SW.apply(x + d) != SW.apply(x) + d {
            return false;
        }
        x += 1;
    }
    true
}
/// Rows from m-tile `i` to `i + 1` of a thread's A values (CuTe's `MMA_M` mode).
pub const A_ROWS: i64 = A_PLAN.value(8)[0];
/// Rows from n-tile pair `jj` to `jj + 1` of a thread's B values (two `MMA_N` steps: one
/// `ldmatrix.x4` reads a pair).
pub const B_ROWS: i64 = B_PLAN.value(4 * 2)[0];
/// Do the m-tiles (n-tile pairs) lie `A_ROWS` (`B_ROWS`) rows apart in the same columns, where
/// the swizzle commutes, so that one address per k-step and lane serves them all?
const fn steps_commute() -> bool {
    let mut i = 0;
    while i < MMA_M {
        let c = A_PLAN.value(8 * i);
        if c[0] != i * A_ROWS || c[1] != 0 {
            return false;
        }
        i += 1;
    }
    let mut j = 0;
    while j < MMA_N {
        let c = B_PLAN.value(4 * j);
        let h = B_PLAN.value(4)[0];
        if c[0] != (j / 2) * B_ROWS + (j % 2) * h || c[1] != 0 {
            return false;
        }
        j += 1;
    }
    sw_commutes(A_ROWS * BK) && sw_commutes(B_ROWS * BK)
}
/// Is k-step `ks`'s place in a row the k-step 0 place XOR `16 ks` (elements), for every row and
/// both 8-element halves a lane can start at? (Adding `16 ks` to a column below 16 sets bits the
/// column does not have, and the swizzle is linear over XOR and leaves `16 ks` alone.)
pub const KSTEP_IS_XOR: bool = {
    let mut ok = true;
    let mut r = 0;
    while r < 64 {
        let mut c = 0;
        while c < 16 {
            let mut ks = 0;
            while ks < K_STEPS {
                let x = r * BK + c;
                ok &= SW.apply(x + 16 * ks) == SW.apply(x) ^ (16 * ks);
                ks += 1;
            }
            c += 8;
        }
        r += 1;
    }
    ok
};
const _: () = assert!(
    KSTEP_IS_XOR && K_STEPS * 16 == BK && K_STEPS % 2 == 0,
    "k-steps by XOR, an even number of them (the fragments alternate between two buffers)"
);
const _: () = assert!(
    steps_commute(),
    "one ldmatrix address per k-step and lane serves every m-tile and n-tile pair"
);

/// Thread `tid`'s `ldmatrix.x4` byte offsets in a stage at k-step 0: `[A, B]`. Lane `l` gives
/// row `l % 8` of matrix `q = l / 8`: for A, word `q` of m-tile 0 ([`ldsm_origin`] of the atom's
/// A layout, from the warp's origin in [`A_PLAN`]); for B, word `q % 2` of n-tile `q / 2` (the
/// n-tile pair 0 of [`B_PLAN`]). The m-tiles and n-tile pairs are [`A_ROWS`] and [`B_ROWS`] rows
/// further, where the swizzle commutes; k-step `ks` is the offset XOR `32 ks`
/// ([`KSTEP_IS_XOR`]).
#[inline(always)]
pub fn ldsm_offsets(tid: i64) -> [i64; 2] {
    let a = LDSM_A.0.call(tid) + LDSM_A.1.call(0);
    let b = LDSM_B.0.call(tid) + LDSM_B.1.call(0);
    [2 * SW.apply(a), 2 * SW.apply(b)]
}

/// `make_tiled_copy_A(Copy_Atom<SM75_U32x4_LDSM_N, 16-bit>, MMA)`'s partition of a K-major
/// `BM x BK` stage: `(thread -> origin, value -> offset)`, unswizzled element offsets.
pub const LDSM_A: (Layout, Layout) = ldsm_partition(Operand::A, BM);
/// The same of B (`make_tiled_copy_B`) over a `BN x BK` stage.
pub const LDSM_B: (Layout, Layout) = ldsm_partition(Operand::B, BN);

const fn ldsm_partition(op: Operand, rows: i64) -> (Layout, Layout) {
    let atom = const_ok!(CopyAtom::new(&SM75_U32X4_LDSM_N, 16));
    let copy = match op {
        Operand::A => const_ok!(make_tiled_copy_a(&atom, &MMA)),
        _ => const_ok!(make_tiled_copy_b(&atom, &MMA)),
    };
    let stage = const_ok!(Layout::from_parts(
        const_ok!(IntTuple::from_ints(&[rows, BK])),
        &[BK, 1]
    ));
    const_ok!(copy.partition_modes_s(&stage))
}

/// Does copy value `8 c` of thread `t` (one `ldmatrix.x4` per `c`: m-tile `i` or n-tile pair `jj`
/// of k-step `ks`) lie at `c`'s step of rows and k-step columns from value 0, and are those the
/// MMA partitions' places?
const fn ldsm_steps(p: &(Layout, Layout), rows: i64, per_k: i64) -> bool {
    let mut ks = 0;
    while ks < K_STEPS {
        let mut c = 0;
        while c < per_k {
            if p.1.call(8 * (c + per_k * ks)) != c * rows * BK + 16 * ks {
                return false;
            }
            c += 1;
        }
        ks += 1;
    }
    true
}
const _: () = assert!(
    ldsm_steps(&LDSM_A, A_ROWS, MMA_M) && ldsm_steps(&LDSM_B, B_ROWS, MMA_N / 2),
    "the ldmatrix copies step by A_ROWS / B_ROWS rows and 16 columns per k-step"
);

/// Elements (16-bit) of A's and B's tiles in one stage.
pub const A_ELEMS: i64 = BM * BK;
/// See [`A_ELEMS`].
pub const B_ELEMS: i64 = BN * BK;
/// Bytes per stage.
pub const STAGE_BYTES: i64 = 2 * (A_ELEMS + B_ELEMS);
/// Row pitch (elements, `f32`) of the accumulators' tile in shared memory: padded so that a
/// warp's 8-byte writes of 8 rows fall in distinct banks.
pub const C_PITCH: i64 = BN + 8;
/// Bytes of shared memory per block: the pipeline, reused for the accumulators.
pub const SMEM_BYTES: i64 = {
    let pipe = STAGES * STAGE_BYTES;
    let c = 4 * BM * C_PITCH;
    if pipe > c {
        pipe
    } else {
        c
    }
};

/// The tiled copy of a stage: 16-byte chunks, `BK / 8` threads along a row, the rest down the
/// rows, over a `rows x BK` tile.
pub const fn load_plan(rows: i64) -> TvCoords<2> {
    let per_row = BK / 8;
    let thr = const_ok!(Layout::from_parts(
        const_ok!(IntTuple::from_ints(&[THREADS / per_row, per_row])),
        &[per_row, 1]
    ));
    let val = const_ok!(Layout::from_parts(
        const_ok!(IntTuple::from_ints(&[1, 8])),
        &[1, 1]
    ));
    let copy = const_ok!(make_tiled_copy_tv(&thr, &val, 128, 16));
    const_ok!(TvCoords::new(&copy, [rows, BK]))
}
/// Rows between a thread's chunks in a stage copy.
pub const ROW_STEP: i64 = THREADS / (BK / 8);
/// Do thread `t`'s chunks lie `ROW_STEP` rows apart in one column, where the swizzle commutes?
const fn chunks_in_a_column(plan: &TvCoords<2>) -> bool {
    let mut q = 0;
    while q < plan.values() / 8 {
        let c = plan.value(8 * q);
        if c[0] != q * ROW_STEP || c[1] != 0 {
            return false;
        }
        q += 1;
    }
    sw_commutes(ROW_STEP * BK)
}
/// A's stage copy: chunks per thread `BM BK / 8 / THREADS`.
pub const LOAD_A: TvCoords<2> = load_plan(BM);
/// B's stage copy.
pub const LOAD_B: TvCoords<2> = load_plan(BN);
/// Chunks per thread of A and B.
pub const CHUNKS_A: i64 = LOAD_A.values() / 8;
/// See [`CHUNKS_A`].
pub const CHUNKS_B: i64 = LOAD_B.values() / 8;
const _: () = assert!(
    CHUNKS_A <= 8 && CHUNKS_B <= 8 && chunks_in_a_column(&LOAD_A) && chunks_in_a_column(&LOAD_B),
    "the loads unroll up to 8 chunks, ROW_STEP rows apart"
);

/// The epilogue's copy of an `f32` tile of `tile` (in shared memory) to C by `threads` threads:
/// `v` elements (16 bytes of output of `bits` bits) per access, consecutive threads along a row.
pub const fn store_plan(v: i64, bits: i64, threads: i64, tile: [i64; 2]) -> TvCoords<2> {
    let per_row = tile[1] / v;
    let thr = const_ok!(Layout::from_parts(
        const_ok!(IntTuple::from_ints(&[threads / per_row, per_row])),
        &[per_row, 1]
    ));
    let val = const_ok!(Layout::from_parts(
        const_ok!(IntTuple::from_ints(&[1, v])),
        &[1, 1]
    ));
    let copy = const_ok!(make_tiled_copy_tv(&thr, &val, 128, bits));
    const_ok!(TvCoords::new(&copy, tile))
}

/// GEMM's parameters, one by-value kernel parameter: `a` `(M, K)`, `b` `(N, K)`, `c` `(M, N)`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GemmParams<A, C> {
    /// `M x K`.
    pub a: FlatTensor<A, 2>,
    /// `N x K`.
    pub b: FlatTensor<A, 2>,
    /// `M x N`, read when `beta != 0`, written.
    pub c: FlatTensor<C, 2>,
    /// Scales `A B^T`.
    pub alpha: f32,
    /// Scales the old `C` (not read when 0).
    pub beta: f32,
}

impl<A: layout_core::Engine, C: layout_core::Engine> GemmParams<A, C> {
    /// `(M, N, K)` when the shapes agree: `Err` names the violated condition.
    pub fn mnk(&self) -> Result<[i64; 3], &'static str> {
        let [m, k] = self.a.shape();
        let [n, kb] = self.b.shape();
        if kb != k {
            return Err("gemm needs A (M,K) and B (N,K) of one K");
        }
        if self.c.shape() != [m, n] {
            return Err("gemm needs C of shape (M,N)");
        }
        if m < 1 || n < 1 || k < 1 {
            return Err("gemm needs M, N, K >= 1");
        }
        if k > i32::MAX as i64 - BK {
            return Err("gemm needs K < 2^31 - BK (the loads count k in 32 bits)");
        }
        Ok([m, n, k])
    }
    /// Blocks: one per `BM x BN` tile of C.
    pub fn blocks(&self) -> i64 {
        let [m, n, _] = self.mnk().unwrap_or([0, 0, 0]);
        ((m + BM - 1) / BM) * ((n + BN - 1) / BN)
    }
}

/// The parameters of `gemm_tma` (sm_90): tensor maps of A and B in global memory, then
/// [`GemmParams`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GemmTmaParams<A, C> {
    /// A's tensor map: boxes of `BM x BK`, 128-byte swizzle.
    pub a_map: *const u8,
    /// B's tensor map: boxes of `BN x BK`, 128-byte swizzle (`gemm_sm90`: `B_BOX_ROWS x BK`).
    pub b_map: *const u8,
    /// C's tensor map for `gemm_sm90`'s stores (boxes of `64 x c_box_cols`, 128-byte swizzle),
    /// or null: then C is written by the threads (and always when `beta != 0`). `gemm_tma`
    /// ignores it.
    pub c_map: *const u8,
    /// The GEMM.
    pub g: GemmParams<A, C>,
}

/// Shared memory of `gemm_tma`: the stages (the accumulators reuse them), 1024 bytes to align
/// them for the 128-byte swizzle, a barrier per stage.
pub const TMA_SMEM_BYTES: i64 = SMEM_BYTES + 1024 + 8 * STAGES;
const _: () = assert!(
    BK * 2 == 128 && STAGE_BYTES % 1024 == 0 && (2 * A_ELEMS) % 1024 == 0,
    "the copy engine's 128-byte swizzle is the stages' (rows of BK = 64 16-bit elements), each box 1024-aligned"
);

/// The block tile `(bm, bn)` of linear block `b`: column-major in groups of [`GROUP_M`] block
/// rows, so that blocks running together share the tiles of B they read.
pub const fn raster(b: i64, tiles_m: i64, tiles_n: i64) -> [i64; 2] {
    let per_group = GROUP_M * tiles_n;
    if per_group <= 0 {
        return [0, 0];
    }
    let first = (b / per_group) * GROUP_M;
    let rows = if tiles_m - first < GROUP_M {
        tiles_m - first
    } else {
        GROUP_M
    };
    if rows <= 0 {
        return [tiles_m, 0];
    }
    let r = b % per_group;
    [first + r % rows, r / rows]
}

/// A 16-bit input element type of the tensor cores: `mma.sync`'s ([`crate::mma::MmaIn`]).
pub use crate::mma::MmaIn as GemmIn;

#[cfg(target_arch = "nvptx64")]
pub use dev::{gemm, gemm_tma};

#[cfg(target_arch = "nvptx64")]
pub(crate) mod dev {
    use super::*;
    use crate::device::{
        block_x, cp_async_16_zfill, cp_async_commit, cp_async_wait, dynamic_smem, ld_shared_v4,
        ldmatrix_x4, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, mma_16x8x16,
        smem_addr, st_shared_v2, st_shared_v4, sync_threads, tensormap_acquire, thread_x,
        tma_load_2d, trap,
    };
    use crate::mem::{Gmem, Mem, V4};
    use crate::real::Real;
    use layout_core::make_coord_tensor;

    /// Can a tile of `t` (16-bit) be loaded by 16-byte chunks: K-stride 1, rows 16-byte aligned?
    fn chunked<I: Copy>(t: &FlatTensor<Gmem<I>, 2>) -> bool {
        let d = t.layout().stride();
        d[1] == 1 && d[0] % 8 == 0 && t.engine().aligned16()
    }

    /// Loads k-tile `kt` of `t` (`rows x K`, block rows from `row0`) into the stage at shared
    /// address `s` element by element, by the copy `plan`: any layout, zeros past the matrix.
    #[inline(always)]
    unsafe fn load_stage<I: GemmIn, const N: i64>(
        plan: &TvCoords<2>,
        t: &FlatTensor<Gmem<I>, 2>,
        row0: i64,
        kt: i64,
        s: u32,
    ) {
        let tile = [plan.tile()[0], BK];
        let id = make_coord_tensor(t.shape()).local_tile(tile, [row0, kt]);
        let thr = plan.get_slice(thread_x());
        let src = thr.partition_S(&t.local_tile(tile, [row0, kt]));
        let pred = thr.partition_S(&id);
        let o = thr.origin();
        let mut q = 0;
        while q < N {
            let v = 8 * q;
            let c = plan.value(v);
            let mut w = [0u32; 4];
            unroll8!(e => if pred.elem_less(v + e) {
                let x = src.at(v + e).read();
                w[(e / 2) as usize] |= I::narrow(x.to_f32()) << (16 * (e % 2));
            });
            st_shared_v4(
                s + 2 * SW.apply((o[0] + c[0]) * BK + o[1] + c[1]) as u32,
                V4(w),
            );
            q += 1;
        }
    }

    /// A lane's `ldmatrix` byte offsets in a stage at k-step 0: of its A matrices (m-tile 0;
    /// m-tile `i` is `i A_STEP` further) and of its B matrices (n-tiles 0 and 1; pair `jj` is
    /// `jj B_STEP` further). K-step `ks` is the offset XOR `32 ks` ([`KSTEP_IS_XOR`]).
    struct LdsmOffsets {
        a: u32,
        b: u32,
    }
    /// Bytes from m-tile `i` to `i + 1` of a warp's A ([`A_ROWS`] rows), and from n-tile pair
    /// `jj` to `jj + 1` of its B ([`B_ROWS`]): the swizzle commutes with both.
    const A_STEP: u32 = (2 * A_ROWS * BK) as u32;
    /// See [`A_STEP`].
    const B_STEP: u32 = (2 * B_ROWS * BK) as u32;

    /// The fragments of k-step `ks` from the stage at `s`.
    #[inline(always)]
    unsafe fn fragments(
        s: u32,
        o: &LdsmOffsets,
        ks: usize,
    ) -> ([[u32; 4]; MMA_M as usize], [[u32; 2]; MMA_N as usize]) {
        let mut a = [[0u32; 4]; MMA_M as usize];
        unroll4!(i => a[i as usize] = ldmatrix_x4(s + (o.a ^ (32 * ks as u32)) + i as u32 * A_STEP));
        let sb = s + (2 * A_ELEMS) as u32;
        let mut b = [[0u32; 2]; MMA_N as usize];
        unroll4!(jj => {
            let r = ldmatrix_x4(sb + (o.b ^ (32 * ks as u32)) + jj as u32 * B_STEP);
            b[2 * jj as usize] = [r[0], r[1]];
            b[2 * jj as usize + 1] = [r[2], r[3]];
        });
        (a, b)
    }

    /// The cp.async loads of one operand when its tiles move by 16-byte chunks. A thread's
    /// chunks lie [`ROW_STEP`] rows apart in the same column (checked at compile time), so one
    /// source pointer, its row's pitch and the first chunk's place in a stage describe them all.
    struct Fast<const N: usize> {
        src: *const u8,
        pitch: usize,
        dst: u32,
        /// Bit `q`: chunk `q`'s row exists.
        rows_ok: u32,
        col: i32,
    }

    impl<const N: usize> Fast<N> {
        /// Thread `thread_x()`'s chunks of `t`'s block tile `row0` by the copy `plan`.
        #[inline(always)]
        unsafe fn new<I: Copy>(plan: &TvCoords<2>, t: &FlatTensor<Gmem<I>, 2>, row0: i64) -> Self {
            let o = plan.get_slice(thread_x()).origin();
            let row = row0 * plan.tile()[0] + o[0];
            let mut rows_ok = 0;
            unroll8!(q => if q < N as i64 && row + q * ROW_STEP < t.shape()[0] {
                rows_ok |= 1 << q;
            });
            Fast {
                src: t.at([row, o[1]]).0 as *const u8,
                pitch: (2 * ROW_STEP * t.layout().stride()[0]) as usize,
                dst: 2 * SW.apply(o[0] * BK + o[1]) as u32,
                rows_ok,
                col: o[1] as i32,
            }
        }
        /// Starts k-tile `kt` (of a `K`-long row) into the stage at `s`; chunks past the matrix
        /// are zero-filled (and read nothing).
        #[inline(always)]
        unsafe fn issue(&self, kt: i32, k: i32, s: u32) {
            let ok = if kt * BK as i32 + self.col < k {
                self.rows_ok
            } else {
                0
            };
            let src = self.src.wrapping_add((2 * kt * BK as i32) as usize);
            unroll8!(q => if q < N as i64 {
                let g = src.wrapping_add(q as usize * self.pitch);
                let d = s + self.dst + (2 * q * ROW_STEP * BK) as u32;
                cp_async_16_zfill(d, g, if ok & (1 << q) != 0 { 16 } else { 0 });
            });
        }
    }

    /// How a stage is filled: `load(kt, s)` starts k-tile `kt` of A's and B's block tiles into
    /// the stage at `s`.
    trait Load {
        /// Starts k-tile `kt` into stage `si` (at shared address `s`).
        unsafe fn load(&self, kt: i64, si: i64, s: u32);
        /// Ends the loads of one k-tile (cp.async: a commit group).
        #[inline(always)]
        unsafe fn commit(&self) {
            cp_async_commit()
        }
        /// Waits until k-tile `kt` (in stage `si`) has landed, as far as this thread's part goes
        /// (a block barrier follows). cp.async: all but the `STAGES - 2` newest groups.
        #[inline(always)]
        unsafe fn wait(&self, _kt: i64, _si: i64) {
            cp_async_wait::<{ (STAGES - 2) as u32 }>()
        }
    }
    /// Both operands by 16-byte chunks.
    struct FastPair {
        a: Fast<{ CHUNKS_A as usize }>,
        b: Fast<{ CHUNKS_B as usize }>,
        k: i32,
    }
    impl Load for FastPair {
        #[inline(always)]
        unsafe fn load(&self, kt: i64, _si: i64, s: u32) {
            self.a.issue(kt as i32, self.k, s);
            self.b.issue(kt as i32, self.k, s + (2 * A_ELEMS) as u32);
        }
    }
    /// Element by element (another major, unaligned rows).
    struct Slow<'a, I: Copy, O: Copy> {
        p: &'a GemmParams<Gmem<I>, Gmem<O>>,
        blk: [i64; 2],
    }
    impl<I: GemmIn, O: Copy> Load for Slow<'_, I, O> {
        #[inline(always)]
        unsafe fn load(&self, kt: i64, _si: i64, s: u32) {
            let (p, [bm, bn]) = (self.p, self.blk);
            load_stage::<I, CHUNKS_A>(&LOAD_A, &p.a, bm, kt, s);
            load_stage::<I, CHUNKS_B>(&LOAD_B, &p.b, bn, kt, s + (2 * A_ELEMS) as u32);
        }
    }

    /// The main loop over `ktiles` k-tiles, filling the stages by `load`. Fragments are double-buffered: those of the next k-step are read while the current
    /// one's MMAs run, and the barrier before the last k-step of a tile lets the next tile's
    /// first fragments be read during that step's MMAs.
    #[inline(always)]
    unsafe fn mainloop<I: GemmIn, L: Load>(
        ktiles: i64,
        s0: u32,
        offs: &LdsmOffsets,
        load: &L,
    ) -> [[f32; 4]; (MMA_M * MMA_N) as usize] {
        let stage = |s: i64| s0 + (s * STAGE_BYTES) as u32;
        let mut acc = [[0f32; 4]; (MMA_M * MMA_N) as usize];
        let mut kt = 0;
        while kt < STAGES - 1 {
            if kt < ktiles {
                load.load(kt, kt, stage(kt));
            }
            load.commit();
            kt += 1;
        }
        load.wait(0, 0);
        sync_threads();
        let (mut read, mut write) = (0, STAGES - 1);
        let mut frag = [fragments(stage(0), offs, 0); 2];
        let mut kt = 0;
        while kt < ktiles {
            unroll4!(ks => if ks < K_STEPS {
                if ks == K_STEPS - 1 {
                    read = if read == STAGES - 1 { 0 } else { read + 1 };
                    if kt + 1 < ktiles {
                        load.wait(kt + 1, read);
                    }
                    sync_threads();
                }
                let next = ((ks + 1) % K_STEPS) as usize;
                frag[((ks + 1) % 2) as usize] = fragments(stage(read), offs, next);
                if ks == 0 {
                    if kt + STAGES - 1 < ktiles {
                        load.load(kt + STAGES - 1, write, stage(write));
                    }
                    load.commit();
                    write = if write == STAGES - 1 { 0 } else { write + 1 };
                }
                let (a, b) = &frag[(ks % 2) as usize];
                unroll8!(j => unroll4!(i => {
                    let (x, y, d) = (&a[i as usize], &b[j as usize], &mut acc[(i + MMA_M * j) as usize]);
                    if I::BF16 {
                        mma_16x8x16::<true>(x, y, d)
                    } else {
                        mma_16x8x16::<false>(x, y, d)
                    }
                }));
            });
            kt += 1;
        }
        cp_async_wait::<0>();
        sync_threads();
        acc
    }

    /// The kernel: one block per `BM x BN` tile of C.
    ///
    /// # Safety
    /// `p` from the host launcher (shapes agreeing, tensors inside their buffers), launched with
    /// [`THREADS`] threads, `blocks()` blocks and [`SMEM_BYTES`] of dynamic shared memory.
    #[inline(always)]
    pub unsafe fn gemm<I: GemmIn, O: Real>(p: GemmParams<Gmem<I>, Gmem<O>>) {
        let Ok([m, n, k]) = p.mnk() else { trap() };
        let [bm, bn] = raster(block_x(), (m + BM - 1) / BM, (n + BN - 1) / BN);
        let s0 = smem_addr(dynamic_smem::<u8>());
        if chunked(&p.a) && chunked(&p.b) {
            let fast = FastPair {
                a: Fast::new(&LOAD_A, &p.a, bm),
                b: Fast::new(&LOAD_B, &p.b, bn),
                k: k as i32,
            };
            tile(&p, [bm, bn], s0, &fast)
        } else {
            let slow = Slow {
                p: &p,
                blk: [bm, bn],
            };
            tile(&p, [bm, bn], s0, &slow)
        }
    }

    /// Block tile `blk` of C: the main loop filling the stages at `s0` by `load`, then the
    /// epilogue.
    #[inline(always)]
    unsafe fn tile<I: GemmIn, O: Real, L: Load>(
        p: &GemmParams<Gmem<I>, Gmem<O>>,
        blk: [i64; 2],
        s0: u32,
        load: &L,
    ) {
        let tid = thread_x();
        let ktiles = (p.a.shape()[1] + BK - 1) / BK;
        let [a_off, b_off] = ldsm_offsets(tid);
        let offs = LdsmOffsets {
            a: a_off as u32,
            b: b_off as u32,
        };
        let acc = mainloop::<I, _>(ktiles, s0, &offs, load);
        // the accumulators, times alpha, into the f32 tile in shared memory
        let tc = C_PLAN.thread(tid);
        unroll8!(j => unroll4!(i => {
            let d = &acc[(i + MMA_M * j) as usize];
            unroll2!(h => {
                let c = C_PLAN.value(4 * (i + MMA_M * j) + 2 * h);
                let at = s0 + 4 * ((tc[0] + c[0]) * C_PITCH + tc[1] + c[1]) as u32;
                let (x, y) = (p.alpha * d[2 * h as usize], p.alpha * d[2 * h as usize + 1]);
                st_shared_v2(at, [x.to_bits(), y.to_bits()]);
            });
        }));
        sync_threads();
        epilogue::<O>(p, blk, s0);
    }

    /// Both operands by the copy engine (sm_90): thread 0 arms stage `si`'s barrier with the
    /// stage's bytes and issues one box of A and one of B into it; every thread waits for the
    /// barrier's phase of that use of the stage. The boxes land swizzled by the 128-byte mode,
    /// which is [`SW`] (checked on the host: `TmaSwizzle::B128.swizzle(2)`).
    struct TmaPair {
        a: *const u8,
        b: *const u8,
        blk: [i64; 2],
        bars: u32,
    }

    impl TmaPair {
        /// The block's tile of C and its stages for a kernel fed by the copy engine: the tile
        /// ([`raster`]), the stages' shared address (the dynamic shared memory's first 1024-byte
        /// boundary), and the loader, its barriers (one per stage, after the stages) initialised
        /// and the tensor maps fenced in by thread 0, a block barrier after.
        ///
        /// # Safety
        /// Every thread of the block calls it; `t`'s maps as [`gemm_tma`] needs them, and
        /// [`TMA_SMEM_BYTES`] of dynamic shared memory.
        #[inline(always)]
        unsafe fn new<I: GemmIn, O: Real>(
            t: &GemmTmaParams<Gmem<I>, Gmem<O>>,
        ) -> ([i64; 2], u32, TmaPair) {
            let Ok([m, n, _]) = t.g.mnk() else { trap() };
            let blk = raster(block_x(), (m + BM - 1) / BM, (n + BN - 1) / BN);
            let base = smem_addr(dynamic_smem::<u8>());
            let s0 = (base + 1023) & !1023;
            let bars = s0 + (STAGES * STAGE_BYTES) as u32;
            if thread_x() == 0 {
                let mut s = 0;
                while s < STAGES {
                    mbarrier_init(bars + 8 * s as u32, 1);
                    s += 1;
                }
                tensormap_acquire(t.a_map);
                tensormap_acquire(t.b_map);
            }
            sync_threads();
            let load = TmaPair {
                a: t.a_map,
                b: t.b_map,
                blk,
                bars,
            };
            (blk, s0, load)
        }
    }
    impl Load for TmaPair {
        #[inline(always)]
        unsafe fn load(&self, kt: i64, si: i64, s: u32) {
            if thread_x() == 0 {
                let bar = self.bars + 8 * si as u32;
                mbarrier_arrive_expect_tx(bar, STAGE_BYTES as u32);
                let k0 = (kt * BK) as i32;
                tma_load_2d(s, self.a, k0, (self.blk[0] * BM) as i32, bar);
                tma_load_2d(
                    s + (2 * A_ELEMS) as u32,
                    self.b,
                    k0,
                    (self.blk[1] * BN) as i32,
                    bar,
                );
            }
        }
        #[inline(always)]
        unsafe fn commit(&self) {}
        #[inline(always)]
        unsafe fn wait(&self, kt: i64, si: i64) {
            mbarrier_wait(self.bars + 8 * si as u32, ((kt / STAGES) & 1) as u32)
        }
    }

    /// `gemm_sm80`'s partitioning and MMAs with the stages filled by the copy engine (sm_90):
    /// one block per tile, the stages 1024-byte aligned, one `mbarrier` per stage after them.
    ///
    /// # Safety
    /// As [`gemm`], with `t.a_map` and `t.b_map` tensor maps of `t.g.a` and `t.g.b` (boxes
    /// `BM x BK` and `BN x BK`, 128-byte swizzle) and [`TMA_SMEM_BYTES`] of shared memory.
    #[inline(always)]
    pub unsafe fn gemm_tma<I: GemmIn, O: Real>(t: GemmTmaParams<Gmem<I>, Gmem<O>>) {
        let (blk, s0, load) = TmaPair::new(&t);
        tile(&t.g, blk, s0, &load)
    }

    /// The f32 tile in shared memory (`alpha A B^T`) plus `beta C` into C's tile `(bm, bn)`.
    #[inline(always)]
    unsafe fn epilogue<O: Real>(
        p: &GemmParams<Gmem<impl GemmIn>, Gmem<O>>,
        blk: [i64; 2],
        s0: u32,
    ) {
        let plan = if O::BITS == 32 { &STORE_32 } else { &STORE_16 };
        store_tile(p, plan, blk, thread_x(), s0, C_PITCH)
    }

    /// Thread `t`'s part of the copy `plan` (one of [`store_plan`]'s, 16 bytes of `O` per
    /// access) of the `f32` tile at shared address `s0` (rows `pitch` elements apart), plus
    /// `beta C`, into C's tile `blk` of `plan.tile()`: whole 16-byte accesses where the tile lies
    /// inside C with aligned rows, else element by element predicated by C's bounds.
    #[inline(always)]
    pub(crate) unsafe fn store_tile<O: Real>(
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
                    let old = crate::device::load_v4_rw(g.0 as *const u32);
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

/// The epilogue's copy for 32-bit outputs (4 per access).
pub const STORE_32: TvCoords<2> = store_plan(4, 32, THREADS, [BM, BN]);
/// The epilogue's copy for 16-bit outputs (8 per access).
pub const STORE_16: TvCoords<2> = store_plan(8, 16, THREADS, [BM, BN]);
