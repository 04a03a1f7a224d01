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

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::frag::{Atom, Fragment};
use crate::mem::{AsyncCopy, Ldmatrix, Mem, Recast, Space, V4};
use crate::mma::mma_m16n8k16;
use crate::real::Real;
use crate::sync::sync_threads;
use crate::tma::{BulkCopy, TensorMap};
use crate::unroll;
use core::marker::PhantomData;
use layout_core::{
    const_ok, make_coord_tensor, make_tiled_copy_a, make_tiled_copy_b, make_tiled_copy_tv,
    make_tiled_mma_permuted, CopyAtom, Engine, FlatTensor, IntTuple, Layout, MmaAtom, Operand,
    Swizzle, TiledMma, TvCoords, SM75_U32X4_LDSM_N, SM80_16X8X16_F32BF16BF16F32_TN,
    SM80_16X8X16_F32F16F16F32_TN,
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

/// Thread `tid`'s `ldmatrix.x4` element offsets in a stage at k-step 0: `[A, B]`. Lane `l` gives
/// row `l % 8` of matrix `q = l / 8`: for A, word `q` of m-tile 0 ([`ldsm_origin`] of the atom's
/// A layout, from the warp's origin in [`A_PLAN`]); for B, word `q % 2` of n-tile `q / 2` (the
/// n-tile pair 0 of [`B_PLAN`]), from B's tile at [`A_ELEMS`]. The m-tiles and n-tile pairs are
/// [`A_ROWS`] and [`B_ROWS`] rows further, where the swizzle commutes; k-step `ks` is the offset
/// XOR `16 ks` ([`KSTEP_IS_XOR`]).
#[inline(always)]
pub fn ldsm_offsets(tid: i64) -> [i64; 2] {
    let a = LDSM_A.0.call(tid) + LDSM_A.1.call(0);
    let b = LDSM_B.0.call(tid) + LDSM_B.1.call(0);
    [SW.apply(a), SW.apply(b)]
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

/// The parameters of `gemm_tma` (sm_90): the copy engine's maps of A and B (engine `T`: boxes of
/// `BM x BK` and `BN x BK`, the 128-byte swizzle), then the GEMM.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GemmMapParams<T, A, C> {
    /// A's tensor map.
    pub a_map: T,
    /// B's tensor map.
    pub b_map: T,
    /// The GEMM.
    pub g: GemmParams<A, C>,
}

/// `gemm_sm80`, inputs `I`, output `O`, the stages filled by `cp.async`; `BUG` a broken copy for
/// the simulated GPU's tests (0: none): 1 leaves out the barrier before a stage is refilled, 2
/// the `cp.async` wait before a stage is read, 3 swaps the words of a B fragment, 4 the barrier
/// between the accumulators' staging and the epilogue, 5 drops thread 0's first store to C, 6
/// never advances the stage it reads (stage 0 throughout, refilled under its readers).
pub struct Gemm<I, O, const BUG: u8 = 0>(PhantomData<(I, O)>);

/// `gemm_sm80`'s partitioning and MMAs with the stages filled by the copy engine (sm_90): thread
/// 0 arms stage `s`'s mbarrier with the stage's bytes and issues A's and B's boxes; every thread
/// waits for the barrier's phase of that use of the stage. The boxes land swizzled by the
/// 128-byte mode, which is [`SW`] (checked on the host).
pub struct GemmTma<I, O>(PhantomData<(I, O)>);

impl<I: GemmIn + Default, O: Real, const BUG: u8> Kernel for Gemm<I, O, BUG> {
    type Shared = I;
    type Params<M: Space> = GemmParams<M::Global<I>, M::Global<O>>;

    #[inline(always)]
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        p.mnk()?;
        Ok(p)
    }

    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem: i64) -> Geometry {
        Geometry {
            grid: [p.blocks(), 1],
            threads: THREADS,
            smem_bytes: SMEM_BYTES,
        }
    }

    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<I>>) {
        let [m, n, k] = p.mnk().unwrap_or([1, 1, 1]);
        let blk = raster(c.block[0], (m + BM - 1) / BM, (n + BN - 1) / BN);
        if chunked(&p.a) && chunked(&p.b) {
            let chunks = Chunks::<M, I> {
                a: Fast::new(&LOAD_A, &p.a, blk[0], c.thread),
                b: Fast::new(&LOAD_B, &p.b, blk[1], c.thread),
                k,
            };
            tile::<M, I, O, _, BUG>(p, blk, c.smem, c.thread, &chunks)
        } else {
            let elements = Elements {
                a: &p.a,
                b: &p.b,
                blk,
                tid: c.thread,
            };
            tile::<M, I, O, _, BUG>(p, blk, c.smem, c.thread, &elements)
        }
    }
}

impl<I: GemmIn + Default, O: Real> Kernel for GemmTma<I, O> {
    type Shared = I;
    type Params<M: Space> = GemmMapParams<M::TensorMap<I>, M::Global<I>, M::Global<O>>;

    #[inline(always)]
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        p.g.mnk()?;
        Ok(p)
    }

    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem: i64) -> Geometry {
        Geometry {
            grid: [p.g.blocks(), 1],
            threads: THREADS,
            smem_bytes: TMA_SMEM_BYTES,
        }
    }

    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<I>>) {
        let [m, n, _] = p.g.mnk().unwrap_or([1, 1, 1]);
        let blk = raster(c.block[0], (m + BM - 1) / BM, (n + BN - 1) / BN);
        // the stages from the first 1024-byte boundary (the swizzle's repeat), a barrier each after
        let s0 = c
            .smem
            .advance(((1024 - c.smem.addr() % 1024) % 1024 / 2) as i64);
        let bars = s0.advance(STAGES * STAGE_ELEMS);
        if c.thread == 0 {
            unroll!(s < STAGES as usize => { bars.advance(4 * s as i64).mbarrier_init(1) });
            p.a_map.acquire();
            p.b_map.acquire();
        }
        sync_threads();
        let copies = Boxes::<M, I> {
            a: &p.a_map,
            b: &p.b_map,
            blk,
            bars,
            tid: c.thread,
        };
        tile::<M, I, O, _, 0>(&p.g, blk, s0, c.thread, &copies)
    }
}

/// 16-bit elements of a stage: A's `BM x BK`, then B's `BN x BK`.
pub const STAGE_ELEMS: i64 = A_ELEMS + B_ELEMS;

/// Can a tile of `t` (16-bit) be loaded by 16-byte chunks: K-stride 1, rows 16-byte aligned?
#[inline(always)]
fn chunked<T: Copy, E: Mem<T>>(t: &FlatTensor<E, 2>) -> bool {
    let d = t.layout().stride();
    // a chunk's offset from the thread's first, `K + (N - 1) ROW_STEP d[0]`, fits 32 bits
    let far = (t.shape()[1] + 8 * ROW_STEP * d[0]) < i32::MAX as i64;
    d[1] == 1 && d[0] % 8 == 0 && d[0] >= 0 && far && t.engine().aligned16()
}

/// How the stages are filled: `load` starts k-tile `kt` of the block's tiles of A and B into
/// stage `si` (at `s`), `commit` ends a k-tile's loads, `wait(kt, si)` waits until k-tile `kt`
/// has landed in stage `si`, as far as this thread's part goes (a block barrier follows).
trait Load<M: Space, I: Copy> {
    /// Starts k-tile `kt` into stage `si` at `s`.
    unsafe fn load(&self, kt: i64, si: i64, s: M::Shared<I>);
    /// `cp.async`: a commit group.
    #[inline(always)]
    fn commit(&self, smem: &M::Shared<I>) {
        smem.commit()
    }
    /// `cp.async`: all but the `STAGES - 2` newest groups.
    #[inline(always)]
    unsafe fn wait(&self, _kt: i64, _si: i64, smem: &M::Shared<I>) {
        smem.wait_groups::<{ (STAGES - 2) as u32 }>()
    }
}

/// One operand's `cp.async`s when its tiles move by 16-byte chunks. A thread's chunks lie
/// [`ROW_STEP`] rows apart in one column (checked at compile time): one source position, the
/// rows' pitch and the first chunk's place in a stage describe them all.
struct Fast<G, const N: usize> {
    src: G,
    /// Elements between chunks, in 32 bits (`chunked`).
    pitch: i32,
    dst: i64,
    /// Bit `q`: chunk `q`'s row exists.
    rows_ok: u32,
    col: i64,
}

impl<G: Engine, const N: usize> Fast<G, N> {
    /// Thread `tid`'s chunks of `t`'s block tile `row0` by the copy `plan`.
    #[inline(always)]
    fn new(plan: &TvCoords<2>, t: &FlatTensor<G, 2>, row0: i64, tid: i64) -> Self {
        let o = plan.get_slice(tid).origin();
        let row = row0 * plan.tile()[0] + o[0];
        let mut rows_ok = 0;
        unroll!(q < N => {
            if row + q as i64 * ROW_STEP < t.shape()[0] {
                rows_ok |= 1 << q;
            }
        });
        Fast {
            src: t.at([row, o[1]]),
            pitch: (ROW_STEP * t.layout().stride()[0]) as i32,
            dst: SW.apply(o[0] * BK + o[1]),
            rows_ok,
            col: o[1],
        }
    }

    /// Starts k-tile `kt` (of a `K`-long row) into the stage at `s`; chunks past the matrix are
    /// zero-filled (and read nothing).
    #[inline(always)]
    unsafe fn issue<T: Copy, S: AsyncCopy + Engine>(&self, kt: i64, k: i64, s: S)
    where
        S::Space: Space<Global<T> = G>,
    {
        // the k-tile and K in 32 bits (`prepare`: K < 2^31 - BK)
        let (kt, k) = (kt as i32, k as i32);
        let ok = if kt * BK as i32 + self.col as i32 > k - 1 {
            0
        } else {
            self.rows_ok
        };
        // the k-tile's start from a 32-bit product (no 64-bit recurrence for LLVM to turn into
        // a pointer per chunk), each chunk a loop-invariant step from it
        let src = self.src.advance((opaque(kt) * BK as i32) as i64);
        unroll!(q < N => {
            let d = s.advance(self.dst + q as i64 * ROW_STEP * BK);
            let g = src.advance(q as i64 * self.pitch as i64);
            d.copy_async_v4_zfill::<T>(&g, ok & (1 << q) != 0);
        });
    }
}

/// `x`, recomputed wherever control passes (an empty asm with effects, which LLVM keeps in place,
/// where [`opaque`]'s pure one may be hoisted): what derives from it is computed after it, not
/// before a loop around it and kept live through the loop (attention's stores of O: the
/// staging's and O's addresses of every chunk, hoisted out of the unit loop and spilled).
#[inline(always)]
pub(crate) fn fresh(mut x: i32) -> i32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: an empty template; the register comes back as it went in
    unsafe {
        core::arch::asm!("// {0}", inout(reg32) x, options(nomem, nostack, preserves_flags))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x = core::hint::black_box(x);
    }
    x
}

/// `x`, which LLVM cannot see through (an empty asm), so what is derived from it is computed where
/// it is used: gemm_sm80's k-tile sources stay one step per k-tile plus a loop-invariant step per
/// chunk (not an induction pointer per chunk), gemm_sm90's epilogue addresses are not hoisted out
/// of its tile loop (a pointer per chunk and element, spilled).
#[inline(always)]
pub(crate) fn opaque(mut x: i32) -> i32 {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: an empty template; the register comes back as it went in
    unsafe {
        core::arch::asm!("// {0}", inout(reg32) x, options(pure, nomem, nostack, preserves_flags))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    {
        x = core::hint::black_box(x);
    }
    x
}

/// Both operands by 16-byte chunks.
struct Chunks<M: Space, I: Copy> {
    a: Fast<M::Global<I>, { CHUNKS_A as usize }>,
    b: Fast<M::Global<I>, { CHUNKS_B as usize }>,
    k: i64,
}

impl<M: Space, I: Copy> Load<M, I> for Chunks<M, I> {
    #[inline(always)]
    unsafe fn load(&self, kt: i64, _si: i64, s: M::Shared<I>) {
        self.a.issue::<I, _>(kt, self.k, s);
        self.b.issue::<I, _>(kt, self.k, s.advance(A_ELEMS));
    }
}

/// Element by element (another major, unaligned rows): each chunk of 8 read, zeros past the
/// matrix, and stored as one 16-byte write.
struct Elements<'a, A> {
    a: &'a FlatTensor<A, 2>,
    b: &'a FlatTensor<A, 2>,
    blk: [i64; 2],
    tid: i64,
}

impl<M: Space, I: GemmIn> Load<M, I> for Elements<'_, M::Global<I>> {
    #[inline(always)]
    unsafe fn load(&self, kt: i64, _si: i64, s: M::Shared<I>) {
        let [bm, bn] = self.blk;
        load_stage::<I, _, _, CHUNKS_A>(&LOAD_A, self.a, bm, kt, s, self.tid);
        load_stage::<I, _, _, CHUNKS_B>(&LOAD_B, self.b, bn, kt, s.advance(A_ELEMS), self.tid);
    }
}

/// Thread `tid`'s `N` chunks of k-tile `kt` of `t` (`rows x K`, block rows from `row0`) by the
/// copy `plan`, into the stage at `s`: any strides, zeros past the matrix. A chunk is 8
/// consecutive elements of a row ([`chunks_along_rows`]): one position and the K-stride reach
/// them, which keeps the loop's registers to a chunk's (a partition of the whole tile held 96
/// offsets, and spilled).
#[inline(always)]
unsafe fn load_stage<I: GemmIn, E: Mem<I>, S: Mem<I> + Engine, const N: i64>(
    plan: &TvCoords<2>,
    t: &FlatTensor<E, 2>,
    row0: i64,
    kt: i64,
    s: S,
    tid: i64,
) {
    let o = plan.get_slice(tid).origin();
    let ([m, k], dk) = (t.shape(), t.layout().stride()[1]);
    // a loop, not unrolled: this path is for layouts the chunks cannot take, not for speed
    let mut q = 0;
    while q < N {
        let c = plan.value(8 * q);
        let (row, col) = (row0 * plan.tile()[0] + o[0] + c[0], kt * BK + o[1] + c[1]);
        // the chunk's elements inside the matrix (its first `inside`), read one by one into the
        // 128 bits' halves: a loop, so that nothing per element stays in registers across the
        // main loop
        let inside = if row < m { (k - col).min(8) } else { 0 };
        let (mut at, mut lo, mut hi) = (t.at([row, col]), 0u64, 0u64);
        let mut e = 0;
        while e < inside {
            let x = (at.read().to_bits() as u64) << (16 * (e % 4));
            if e < 4 {
                lo |= x
            } else {
                hi |= x
            }
            at = at.advance(dk);
            e += 1;
        }
        let w = [lo as u32, (lo >> 32) as u32, hi as u32, (hi >> 32) as u32];
        s.advance(SW.apply((o[0] + c[0]) * BK + o[1] + c[1]))
            .write_v4(V4(w));
        q += 1;
    }
}

/// Are value `8 q + e` of every thread of `plan` at value `8 q`'s row and `e` columns on (a chunk
/// is 8 consecutive elements of a row)?
const fn chunks_along_rows(plan: &TvCoords<2>) -> bool {
    let mut v = 0;
    while v < plan.values() {
        let (a, b) = (plan.value(v), plan.value(v - v % 8));
        if a[0] != b[0] || a[1] != b[1] + v % 8 {
            return false;
        }
        v += 1;
    }
    true
}
const _: () = assert!(
    chunks_along_rows(&LOAD_A) && chunks_along_rows(&LOAD_B),
    "a chunk of the stage copies is 8 consecutive elements of a row"
);

/// Both operands by the copy engine: thread 0 arms stage `si`'s barrier and issues A's and B's
/// boxes into the stage.
struct Boxes<'a, M: Space, I: Copy> {
    a: &'a M::TensorMap<I>,
    b: &'a M::TensorMap<I>,
    blk: [i64; 2],
    bars: M::Shared<I>,
    tid: i64,
}

impl<M: Space, I: Copy> Load<M, I> for Boxes<'_, M, I> {
    #[inline(always)]
    unsafe fn load(&self, kt: i64, si: i64, s: M::Shared<I>) {
        if self.tid == 0 {
            let bar = self.bars.advance(4 * si);
            bar.mbarrier_arrive(STAGE_BYTES as u32);
            s.tma_load(self.a, [self.blk[0] * BM, kt * BK], &bar);
            s.advance(A_ELEMS)
                .tma_load(self.b, [self.blk[1] * BN, kt * BK], &bar);
        }
    }
    #[inline(always)]
    fn commit(&self, _: &M::Shared<I>) {}
    #[inline(always)]
    unsafe fn wait(&self, kt: i64, si: i64, _: &M::Shared<I>) {
        self.bars
            .advance(4 * si)
            .mbarrier_wait(((kt / STAGES) & 1) as u32)
    }
}

/// A thread's fragments of one k-step: A's `MMA_M` m-tiles, B's `MMA_N` n-tiles.
type Frags = ([[u32; 4]; MMA_M as usize], [[u32; 2]; MMA_N as usize]);

/// The fragments of k-step `ks` from the stage at `s`, by `ldmatrix.x4` at the thread's offsets
/// `o` ([`ldsm_offsets`]); m-tile `i` is `i A_ROWS` rows further, n-tile pair `jj` `jj B_ROWS`.
#[inline(always)]
unsafe fn fragments<S: Ldmatrix + Engine, const BUG: u8>(s: S, o: [i64; 2], ks: usize) -> Frags {
    let x = 16 * ks as i64;
    let mut a = [[0u32; 4]; MMA_M as usize];
    unroll!(i < MMA_M as usize => {
        a[i] = s.advance((o[0] ^ x) + i as i64 * A_ROWS * BK).ldmatrix_x4();
    });
    let mut b = [[0u32; 2]; MMA_N as usize];
    unroll!(jj < (MMA_N / 2) as usize => {
        let r = s.advance(A_ELEMS + (o[1] ^ x) + jj as i64 * B_ROWS * BK).ldmatrix_x4();
        b[2 * jj] = if BUG == 3 { [r[1], r[0]] } else { [r[0], r[1]] };
        b[2 * jj + 1] = [r[2], r[3]];
    });
    (a, b)
}

/// The k-step at which a k-tile's `cp.async`s for the stage `STAGES - 1` ahead are issued: the
/// second, so that the first's fragment reads for the next k-step are not interleaved with the
/// copies' address arithmetic (k-step 0: the next fragments arrive later and the MMAs wait on
/// them; measured 0.5-1% slower on the H100 and the H200, docs/perf.md, session 27). Any k-step
/// after the barrier that ends the previous k-tile is correct: the stage refilled was last read
/// before it.
const LOAD_STEP: usize = if K_STEPS > 1 { 1 } else { 0 };

/// The main loop over `ktiles` k-tiles of the stages from `s0`, filled by `load`. Fragments are
/// double-buffered: the next k-step's are read while the current one's MMAs run, and the barrier
/// before the last k-step of a tile lets the next tile's first fragments be read during that
/// step's MMAs. Returns the accumulators, `(i, j)` at `i + MMA_M j`.
#[inline(always)]
unsafe fn mainloop<M: Space, I: GemmIn, L: Load<M, I>, const BUG: u8>(
    ktiles: i64,
    s0: M::Shared<I>,
    offs: [i64; 2],
    load: &L,
) -> [[f32; 4]; (MMA_M * MMA_N) as usize] {
    // k-tiles and stages counted in 32 bits (`prepare` bounds K): uniform 32-bit arithmetic
    let (ktiles, stages) = (ktiles as i32, STAGES as i32);
    let stage = |s: i32| s0.advance(s as i64 * STAGE_ELEMS);
    let mut acc = [[0f32; 4]; (MMA_M * MMA_N) as usize];
    let mut kt = 0;
    while kt < stages - 1 {
        if kt < ktiles {
            load.load(kt as i64, kt as i64, stage(kt));
        }
        load.commit(&s0);
        kt += 1;
    }
    load.wait(0, 0, &s0);
    sync_threads();
    let (mut read, mut write) = (0, stages - 1);
    let mut frag = [fragments::<_, BUG>(stage(0), offs, 0); 2];
    let mut kt = 0;
    while kt < ktiles {
        unroll!(ks < K_STEPS as usize => {
            if ks as i64 == K_STEPS - 1 {
                // the next k-tile's stage; after the last k-tile there is none, and the step
                // below reads this one's again (filled: the simulated GPU refuses a read of a
                // stage never written, though the GPU would discard it)
                let more = kt + 1 < ktiles;
                let next_stage = if read == stages - 1 { 0 } else { read + 1 };
                if more && BUG != 2 {
                    load.wait(kt as i64 + 1, next_stage as i64, &s0);
                }
                read = if more && BUG != 6 { next_stage } else { read };
                if BUG != 1 {
                    sync_threads();
                }
            }
            let next = (ks + 1) % K_STEPS as usize;
            frag[(ks + 1) % 2] = fragments::<_, BUG>(stage(read), offs, next);
            if ks == LOAD_STEP {
                if kt + stages - 1 < ktiles {
                    load.load((kt + stages - 1) as i64, write as i64, stage(write));
                }
                load.commit(&s0);
                write = if write == stages - 1 { 0 } else { write + 1 };
            }
            let (a, b) = &frag[ks % 2];
            unroll!(j < MMA_N as usize => {
                unroll!(i < MMA_M as usize => {
                    mma_m16n8k16::<I>(&a[i], &b[j], &mut acc[i + MMA_M as usize * j]);
                });
            });
        });
        kt += 1;
    }
    s0.wait_groups::<0>();
    sync_threads();
    acc
}

/// Block tile `blk` of C: the main loop over the stages from `s0` filled by `load`, the
/// accumulators times `alpha` staged in `f32` over the stages, then the epilogue.
#[inline(always)]
unsafe fn tile<M: Space, I: GemmIn, O: Real, L: Load<M, I>, const BUG: u8>(
    p: &GemmParams<M::Global<I>, M::Global<O>>,
    blk: [i64; 2],
    s0: M::Shared<I>,
    tid: i64,
    load: &L,
) {
    let ktiles = (p.a.shape()[1] + BK - 1) / BK;
    let acc = mainloop::<M, I, L, BUG>(ktiles, s0, ldsm_offsets(tid), load);
    let staged = s0.recast::<f32>();
    let tc = C_PLAN.thread(tid);
    unroll!(j < MMA_N as usize => {
        unroll!(i < MMA_M as usize => {
            let v = i + MMA_M as usize * j;
            unroll!(h < 2 => {
                let c = C_PLAN.value(4 * v as i64 + 2 * h as i64);
                let at = (tc[0] + c[0]) * C_PITCH + tc[1] + c[1];
                staged.advance(at).write_pair([p.alpha * acc[v][2 * h], p.alpha * acc[v][2 * h + 1]]);
            });
        });
    });
    if BUG != 4 {
        sync_threads();
    }
    let plan = if O::BITS == 32 { &STORE_32 } else { &STORE_16 };
    let from = if BUG == 5 && tid == 0 {
        128 / O::BITS
    } else {
        0
    };
    store_tile(&p.c, p.beta, plan, blk, tid, staged, C_PITCH, from)
}

/// Thread `t`'s part of the copy `plan` (one of [`store_plan`]'s, 16 bytes of `O` per access),
/// from value `from` on, of the `f32` tile at `s` (rows `pitch` apart), plus `beta C`, into C's
/// tile `blk` of `plan.tile()`: whole 16-byte accesses where the tile lies inside C with aligned
/// rows, else element by element predicated by C's bounds. C is read (when `beta != 0`) through
/// L1, not the read-only path: the launch writes it.
///
/// # Safety
/// `c` inside its memory; `s` the block's shared memory holding the tile, written before (a
/// barrier between); `plan` covers the tile with 16-byte accesses of `O`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn store_tile<O: Real, G: Mem<O>, S: Mem<f32>>(
    c: &FlatTensor<G, 2>,
    beta: f32,
    plan: &TvCoords<2>,
    blk: [i64; 2],
    t: i64,
    s: S,
    pitch: i64,
    from: i64,
) {
    let v = 128 / O::BITS;
    let tile = plan.tile();
    let id = make_coord_tensor(c.shape()).local_tile(tile, blk);
    let thr = plan.get_slice(t);
    let (dst, pred, o) = (
        thr.partition_D(&c.local_tile(tile, blk)),
        thr.partition_S(&id),
        thr.origin(),
    );
    let d = c.layout().stride();
    let whole = id.covers(tile) && d[1] == 1 && d[0] % v == 0 && c.engine().aligned16();
    let read_c = beta != 0.0;
    let mut a = from;
    while a < plan.values() {
        let x = plan.value(a);
        let at = s.advance((o[0] + x[0]) * pitch + o[1] + x[1]);
        let second = if v == 8 {
            at.advance(4).read_v4()
        } else {
            V4::default()
        };
        let f = Fragment::<f32, 2>::from_atoms([at.read_v4(), second]);
        if whole {
            let g = dst.at(a);
            // one branch around C's read and the sum (a select per element would keep both)
            let out = if read_c {
                let mut old = [0f32; 8];
                unroll!(q < 2 => {
                    if (4 * q as i64) < v {
                        let w = g.advance(4 * q as i64).read_quad();
                        unroll!(e < 4 => { old[4 * q + e] = w[e].to_f32() });
                    }
                });
                Atom::<O>::from_fn(|e| f.get(e) + beta * old[e])
            } else {
                Atom::<O>::from_fn(|e| f.get(e))
            };
            g.write_v4(out.atoms()[0]);
        } else {
            unroll!(e < 8 => {
                if (e as i64) < v && pred.elem_less(a + e as i64) {
                    let g = dst.at(a + e as i64);
                    let mut r = f.get(e);
                    if read_c {
                        r += beta * g.read().to_f32();
                    }
                    g.write(O::from_f32(r));
                }
            });
        }
        a += v;
    }
}

/// The epilogue's copy for 32-bit outputs (4 per access).
pub const STORE_32: TvCoords<2> = store_plan(4, 32, THREADS, [BM, BN]);
/// The epilogue's copy for 16-bit outputs (8 per access).
pub const STORE_16: TvCoords<2> = store_plan(8, 16, THREADS, [BM, BN]);
