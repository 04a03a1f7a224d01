//! `attention`: the forward pass of scaled dot-product attention on Hopper, `O = softmax(scale
//! Q K^T + mask) V` with each row's log-sum-exp, as FlashAttention computes it: a unit of work
//! is [`query_rows`] query rows of one head ([`Unit`]), the keys and values streamed through
//! shared memory in tiles of [`key_rows`] rows, the softmax kept online (a running row maximum
//! and sum, the output rescaled as the maximum grows), so neither `S = Q K^T` nor `P` ever leaves
//! the chip.
//!
//! The block is warpgroups in FlashAttention-3's roles: a producer and [`consumers`] (three at
//! `D = 64`, two past it). The producer (warpgroup 0, one thread working, its registers given to
//! the others by `setmaxnreg`) loads each unit's Q and its key/value tiles into a ring of
//! [`STAGES`] stages by the copy engine, each stage (and Q) behind a full mbarrier (the copy
//! engine's bytes) and an empty one (every consumer done with it); the ring runs on from one unit
//! to the next, so a persistent block (a block per multiprocessor; under the causal mask each
//! takes the next unit from a counter in global memory as it is ready for one,
//! [`AttentionParams::sched`]) loads the next unit's Q and first tiles while the consumers
//! finish the last one. Each
//! consumer warpgroup owns 64 query rows: per tile, `S = Q K^T` by wgmma from shared memory (Q
//! and K K-major), the row maxima over the quad of lanes that holds a row, `P = 2^(S scale log2 e
//! - m)` (`ex2.approx`), the output and row sums rescaled, `P` rounded to 16 bits and packed in
//! the registers where the next wgmma reads A (the accumulators' layout is the register A
//! layout), and `O += P V` by wgmma with A in registers and V N-major from shared memory. O
//! leaves through shared memory ([`Attention::store_o`]): the accumulators' pairs into the
//! warpgroup's staging, then whole rows out at 16 bytes a thread (a row's 2-byte pieces from
//! the registers straight to global memory took a quarter of the consumers' time at `S = 1k`).
//!
//! Tensors (`bf16` or `f16`, of any strides the copy engine takes: the head dimension
//! contiguous, the others multiples of 16 bytes apart): Q `(B, H, Sq, D)`, K and V `(B, Hkv, Sk,
//! D)` (heads `h` of a batch share key/value head `h / (H / Hkv)`: MHA, GQA, MQA), O `(B, H, Sq,
//! D)` (any strides, the head dimension contiguous), the log-sum-exp `(B, H, Sq)` in `f32`
//! (natural log, `scale` applied: FlashAttention's `softmax_lse`). torch's `(B, H, S, D)` and
//! FlashAttention's `(B, S, H, D)` are the same tensors with their strides swapped. Variable
//! lengths (FlashAttention's `varlen`):
//! the sequences of a batch packed one after another along `S` of tensors with one batch entry,
//! `(1, H, total, D)`, sequence `b`'s queries at `cu_seqlens[0][b] .. cu_seqlens[0][b + 1]`, its
//! keys at `cu_seqlens[1][b] ..`; `seq` then holds the longest lengths. A query row that sees no
//! key (an empty key sequence) gets O of 0 and the log-sum-exp `+inf` (FlashAttention's
//! convention: `e^(s - lse)` is 0 in the backward pass).
//!
//! Head dimensions `D` of 64, 96, 128, 192 and 256: Q, K, V are read through rank-4 tensor maps
//! with boxes of `1 x 1 x rows x 64` (the 128-byte swizzle), a tile in shared memory as whole
//! panels of 64 columns (at `D = 96` the second panel's last 32 columns are the copy engine's
//! zeros past the tensor, which no wgmma reads); key tiles of 128 rows up to `D = 128` (176 at
//! `D = 128` without the mask from [`LONG_KEYS`] keys on), of 64 past it (the stages then fit in
//! shared memory). A tile that runs past a sequence's keys reads the copy engine's zeros (or,
//! packed, the next sequence's rows), which the mask gives probability 0. A sequence's query
//! tiles end with its last row ([`first_row`]): where `BM` does not divide its length the first
//! tile starts before the sequence (its rows there read the copy engine's zeros or, packed, the
//! previous sequence's rows, and are computed and not stored); under the causal mask the short
//! tile is then the one that sees the fewest keys. `CAUSAL`: key `j` is seen by
//! query `i` where `j <= i` (torch's `is_causal`, the top-left diagonal), and the longest (last)
//! query tiles of each group of heads are taken first.

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::gemm::fresh;
use crate::math::{exp2_approx, log2_approx, LOG2_E};
use crate::mem::{AsyncCopy, Atomic, Mem, Recast, Space};
use crate::mma::MmaIn;
use crate::sync::{
    named_barrier, quad_reduce, setmaxnreg_dec, setmaxnreg_inc, shfl_idx, sync_threads,
};
use crate::tma::{BulkCopy, TensorMap};
use crate::unroll;
use crate::wgmma::{
    accumulators, gmma_desc, gmma_desc_advance, warpgroup_arrive, warpgroup_commit_batch,
    warpgroup_wait, wgmma_rs, wgmma_ss,
};
use core::f32::consts::LN_2;
use core::marker::PhantomData;
use layout_core::{
    const_ok, make_gmma_desc, ComposedLayout, Engine, FlatTensor, GmmaDescriptor, GmmaMajor,
    IntTuple, Layout, Swizzle,
};

/// Query rows per consumer warpgroup (one wgmma's M).
pub const WG_ROWS: i64 = 64;

/// Consumer warpgroups of the kernel with head dimension `d`: three at `d = 64` (192 query rows,
/// FlashAttention-3's tile: a third warpgroup keeps the tensor cores fed while two run their
/// softmax), two past it (their accumulators need the registers).
pub const fn consumers(d: i64) -> i64 {
    if d == 64 {
        3
    } else {
        2
    }
}

/// Query rows per block at head dimension `d`.
pub const fn query_rows(d: i64) -> i64 {
    WG_ROWS * consumers(d)
}

/// Key rows per tile of the kernel at head dimension `d`, mask `causal` and `sk` keys (its `BN`,
/// the registry's): 128 up to `d = 128`, 64 past it (a block's shared memory then holds Q and two
/// stages of K and V); 176 at `d = 128` without the mask from [`LONG_KEYS`] keys on
/// (FlashAttention-3's tile: a tile's fixed costs, its waits, the rescaling of O, the row
/// maxima's reductions, spread over 11 k-blocks of `P V` rather than 8; measured +4% at 8k and
/// +7% at 16k keys, but -6% at 1k, where 176 does not divide the keys and the staging of O
/// takes two passes).
pub const fn key_rows(d: i64, causal: bool, sk: i64) -> i64 {
    if d == 128 && !causal && sk >= LONG_KEYS {
        176
    } else if d <= 128 {
        128
    } else {
        64
    }
}

/// Keys from which the `d = 128` kernel without the mask takes tiles of 176 rows ([`key_rows`]).
pub const LONG_KEYS: i64 = 4096;
/// Bytes of keys and values that the units at work at once should share in L2: about a third of
/// the H100's 50 MiB and a quarter of the H200's 60 MiB.
pub const L2_SHARE: i64 = 16 << 20;

/// Heads whose units are taken together ([`Attention::unit`]): as many as have their keys and
/// values (`sk` rows of `d` 16-bit columns each) within [`L2_SHARE`], at least one.
pub const fn heads_together(sk: i64, d: i64) -> i64 {
    if sk <= 0 || d <= 0 || sk > L2_SHARE / (4 * d) {
        return 1;
    }
    // a 32-bit division (both within 2^24; the divisor at least 1 for the compiler too: no
    // division's panic path in the kernel)
    let per_head = (4 * sk * d) as u32;
    let g = (L2_SHARE as u32 / if per_head > 0 { per_head } else { 1 }) as i64;
    if g > 1 {
        g
    } else {
        1
    }
}

/// Unit `u` of `heads` heads of `q_tiles` query tiles each, taken `g` heads together
/// ([`Attention::unit`]): `(x, head)`, `x` the tile's place in its head's order.
///
/// Post-conditions, for `q_tiles, heads, g >= 1`: over `u` in `0..q_tiles heads` each pair `(x,
/// head)` of `0..q_tiles` and `0..heads` comes once; `x` never decreases within a group of
/// heads, nor the group as `u` grows. In 32 bits (the kernel's producer has 40 registers).
pub const fn unit_order(u: i32, q_tiles: i32, heads: i32, g: i32) -> (i32, i32) {
    // (divisors at least 1 for the compiler too: no division's panic path in the kernel)
    let per_group = if g * q_tiles > 0 { g * q_tiles } else { 1 };
    // the group's first head, its heads (the last group may have fewer), the unit in it
    let (first, x) = (u / per_group * g, u % per_group);
    let n = if heads - first < g { heads - first } else { g };
    let n = if n < 1 { 1 } else { n };
    (x / n, first + x % n)
}

/// The first query row (of its sequence, `sq` rows) of query tile `qt` of `bm` rows: the tiles
/// end with the sequence's last row, so the first starts `(bm - sq % bm) % bm` rows before the
/// sequence where `bm` does not divide `sq`. Under the causal mask the short tile is then the one
/// that sees the fewest keys: at `D = 64` (192 rows) and 1k queries a head's tiles take 27 key
/// tiles where tiles from row 0 took 32 (measured +10.7% at 1k, +4% at 2k and 4k, H200).
///
/// Post-conditions, for `bm, sq >= 1`: the tiles `0..ceil(sq / bm)` cover `0..sq`, each row in
/// one; tile 0's first row is in `-bm < first <= 0`; the last ends at row `sq - 1`.
pub const fn first_row(bm: i64, qt: i64, sq: i64) -> i64 {
    let bm = if bm > 0 { bm } else { 1 };
    bm * qt - (bm - sq % bm) % bm
}

/// The key tiles (of `bn` keys, `sk` in all) that consumer warpgroup `wg` of a unit takes, the
/// unit's first row `first` ([`first_row`]) and its key tiles `tiles`: none where the
/// warpgroup's 64 rows all come before the sequence (the short first tile's), under the causal
/// mask those up to its last row, else all. The producer releases the stages of the unit's
/// other tiles for it (they hold nothing its rows see: at `D = 64` and 1k queries a head's
/// warpgroups take 72 key tiles where the units' 81). In 32 bits (the consumers' registers are
/// the accumulators').
///
/// Post-conditions, for `bn >= 1`, `sk >= 0`, the unit's rows within the sequence's end and
/// `tiles` the unit's ([`Attention::unit`]): the result is the fewest leading tiles that hold
/// every key that a row of the warpgroup's in the sequence (row `>= 0`) sees, at most `tiles`.
pub const fn warpgroup_tiles(first: i32, wg: i32, [sk, tiles, bn]: [i32; 3], causal: bool) -> i32 {
    let bn = if bn > 0 { bn } else { 1 };
    // one past the warpgroup's last row
    let end = first + WG_ROWS as i32 * (wg + 1);
    let seen = if end <= 0 {
        0
    } else if causal && end < sk {
        end
    } else {
        sk
    };
    let n = (seen + bn - 1) / bn;
    if n < tiles {
        n
    } else {
        tiles
    }
}

/// Key/value stages.
pub const STAGES: i64 = 2;
/// Columns of a panel: 64 16-bit elements, one 128-byte swizzled row (the copy engine's box).
pub const PANEL: i64 = 64;
/// Registers per producer thread after `setmaxnreg.dec` with two consumer warpgroups, and per
/// consumer thread after `setmaxnreg.inc`: `(65536 / 384 rounded down to 8) * 3 = 40 + 2 * 232`.
pub const REGS_2: [u32; 2] = [40, 232];
/// As [`REGS_2`] with three consumer warpgroups: `65536 / 512 * 4 = 32 + 3 * 160`.
pub const REGS_3: [u32; 2] = [32, 160];

/// The most shared memory a block of sm_90 may have, in bytes (227 KiB).
pub const SMEM_LIMIT: i64 = 227 * 1024;

/// Columns a head dimension `d` takes in shared memory: whole panels of [`PANEL`] (the copy
/// engine fills the columns past `d` with zeros, which no wgmma reads).
pub const fn padded(d: i64) -> i64 {
    (d + PANEL - 1) / PANEL * PANEL
}

/// Shared memory of a block with head dimension `d` and key tiles of `bn` rows, before O's
/// staging: 1024 bytes to align, Q (`query_rows(d) x padded(d)`), the stages (K and V, `bn x
/// padded(d)` each), a full and an empty mbarrier for Q and for each stage's K and its V, and
/// the producer's two [`Slot`]s.
pub const fn smem_unstaged(d: i64, bn: i64) -> i64 {
    1024 + 2 * (query_rows(d) * padded(d) + STAGES * 2 * bn * padded(d))
        + 8 * 2 * (1 + 2 * STAGES)
        + 4 * 2 * SLOT
}

/// Columns of O the consumers stage in shared memory at a time ([`staged`]): the padded head
/// dimension where it fits beside Q and the stages, else half of it (at `d = 256`).
pub const fn staged_cols(d: i64, bn: i64) -> i64 {
    if smem_unstaged(d, bn) + 2 * query_rows(d) * padded(d) <= SMEM_LIMIT {
        padded(d)
    } else {
        padded(d) / 2
    }
}

/// The columns of O that pass `pass` stages, `ec` at a time ([`staged_cols`]): `min(d - ec pass,
/// ec)`, 0 past the last pass.
pub const fn pass_cols(d: i64, ec: i64, pass: i64) -> i64 {
    let rest = d - ec * pass;
    if rest < 0 {
        0
    } else if rest < ec {
        rest
    } else {
        ec
    }
}

/// Where element `(row, 8 c + e)` of a warpgroup's staged O (64 rows of `cols` columns, `cols`
/// a multiple of 64) is: 16-byte chunk `c` of a row at chunk `c ^ (row % 8)`, so that the
/// accumulators' pairs (eight rows, four pairs each) land in 32 different banks and a row's
/// chunks are read back whole.
pub const fn staged(row: i64, c: i64, cols: i64) -> i64 {
    row * cols + 8 * (c ^ (row % 8))
}

/// Shared memory of a block with head dimension `d` and key tiles of `bn` rows:
/// [`smem_unstaged`]'s and O's staging (`query_rows(d) x` [`staged_cols`]).
pub const fn smem_bytes(d: i64, bn: i64) -> i64 {
    smem_unstaged(d, bn) + 2 * query_rows(d) * staged_cols(d, bn)
}

/// The descriptor of k-block 0 of a K-major panel (`rows x 64`, 128-byte swizzle) at address 0:
/// Q's (A) and K's (B). The k-block `kb` of a `rows x d` tile of such panels is at element
/// `(kb / 4) rows 64 + (kb % 4) 16` of it.
const DESC_QK: GmmaDescriptor = const_ok!(make_gmma_desc(
    &const_ok!(ComposedLayout::new(
        const_ok!(Swizzle::new(3, 3, 3)),
        const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&[64, PANEL])),
            &[PANEL, 1]
        ))
    )),
    16,
    GmmaMajor::K
));

/// The descriptor of k-block 0 of V as wgmma's B (`d x bn`, N-major): V's tile is `bn` rows of
/// `padded(d) / 64` panels of 64 columns (128-byte swizzle), so element `(n, k)` of B is at `n %
/// 64 + 64 k + (n / 64) 64 bn`; k-block `kb` starts `16 kb` rows on.
pub const fn desc_v(d: i64, bn: i64) -> GmmaDescriptor {
    let shape = const_ok!(IntTuple::parse("((1,1),1)"));
    let shape = shape.with_leaves(&[PANEL, padded(d) / PANEL, bn]);
    let l = const_ok!(Layout::from_parts(shape, &[1, PANEL * bn, PANEL]));
    let sw = const_ok!(ComposedLayout::new(const_ok!(Swizzle::new(3, 3, 3)), l));
    const_ok!(make_gmma_desc(&sw, 16, GmmaMajor::MN))
}

/// The parameters: tensor maps of Q, K, V (engine `T`), O (engine `O`), the log-sum-exp (engine
/// `L`), the cumulative sequence offsets and the scheduler's counters (engine `C`), the sizes and
/// the scale.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AttentionParams<T, O, L, C> {
    /// `(B, H, Sq, D)` (packed: `(1, H, total, D)`), boxes of `1 x 1 x query_rows(D) x 64`, the
    /// 128-byte swizzle.
    pub q: T,
    /// `(B, Hkv, Sk, D)` (packed: `(1, Hkv, total, D)`), boxes of `1 x 1 x bn x 64`, the 128-byte
    /// swizzle.
    pub k: T,
    /// As `k`.
    pub v: T,
    /// As Q.
    pub o: FlatTensor<O, 4>,
    /// `(B, H, Sq)` (packed: `(1, H, total)`): each query row's `ln sum_j e^(scale s_ij)`.
    pub lse: FlatTensor<L, 3>,
    /// With `packed`, the queries' and the keys' offsets along S, `B + 1` each, ascending;
    /// otherwise not read (tensors of one element serve).
    pub cu_seqlens: [FlatTensor<C, 1>; 2],
    /// The scheduler's two counters in global memory, 0 before a launch and left 0 by it: the
    /// next unit of work, which each block's producer takes by an atomic addition (under the
    /// causal mask; without it the blocks take their units in turn and leave the counters
    /// alone), and the blocks done taking (the last of them sets both back to 0). A buffer of
    /// two zeros serves every launch after it on one stream (launches on several streams at
    /// once: one each).
    pub sched: FlatTensor<C, 1>,
    /// Variable lengths: the sequences packed along S, where `cu_seqlens` says; otherwise every
    /// sequence `seq` long.
    pub packed: bool,
    /// `[B, H, Hkv]`.
    pub heads: [i64; 3],
    /// `[Sq, Sk]`: the lengths, or with `cu_seqlens` the longest.
    pub seq: [i64; 2],
    /// The scores' scale (`1 / sqrt(D)` usually).
    pub scale: f32,
}

/// A unit of a launch's work: query tile `qt` of head `hq` of one sequence (its key/value head
/// `hk`), the tile's first row in the sequence ([`first_row`]), the sequence's lengths `sq` and
/// `sk`, where its rows start along S (`q0`, `k0`), its batch coordinate `bc` (0 when packed)
/// and the key tiles its rows see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Query tile.
    pub qt: i64,
    /// The tile's first row of the sequence (negative in a first tile that starts before it).
    pub first: i64,
    /// Query head.
    pub hq: i64,
    /// Key/value head.
    pub hk: i64,
    /// Query rows of the sequence.
    pub sq: i64,
    /// Key rows of the sequence.
    pub sk: i64,
    /// The sequence's first query row along S.
    pub q0: i64,
    /// Its first key row along S.
    pub k0: i64,
    /// Its batch coordinate.
    pub bc: i64,
    /// Key tiles the unit's rows see (at least 1 under [`Attention::OVERLAP`], else 0 for a
    /// sequence without keys).
    pub tiles: i64,
}

impl Unit {
    /// Whether the unit has query rows (a query tile past a shorter sequence's rows has none).
    #[inline(always)]
    pub const fn live(&self) -> bool {
        self.first < self.sq
    }
}

/// 32-bit words of a [`Slot`].
pub const SLOT: i64 = 11;

/// The producer's word to the consumers on a unit of work, in the block's shared memory: two
/// slots of [`SLOT`] 32-bit words, unit `n`'s in slot `n % 2`, written before the arrival on Q's
/// full barrier that the consumers wait for (so they read it once Q is there) and rewritten only
/// after every consumer thread has released the next unit's Q. Words: the query tile (-1: no
/// more units), then at the offsets below the unit's key tiles, its sequence's key and query
/// lengths, first query row along S, batch coordinate, the query head, the tile's first row
/// of the sequence ([`first_row`]), and each consumer warpgroup's key tiles. The consumers hold
/// none of it through their key tiles but what the tiles need: the rest is read again for the
/// stores (registers are the accumulators').
pub struct Slot;

impl Slot {
    /// Key tiles.
    pub const TILES: i64 = 1;
    /// Key length.
    pub const SK: i64 = 2;
    /// Query length.
    pub const SQ: i64 = 3;
    /// First query row along S.
    pub const Q0: i64 = 4;
    /// Batch coordinate.
    pub const BC: i64 = 5;
    /// Query head.
    pub const HQ: i64 = 6;
    /// The tile's first row of the sequence.
    pub const FIRST: i64 = 7;
    /// Consumer warpgroup `wg`'s key tiles ([`warpgroup_tiles`]) at `MINE + wg`, under
    /// [`Attention::OWN_TILES`] (the producer releases the stages of the unit's other tiles for
    /// it).
    pub const MINE: i64 = 8;

    /// Writes unit `w` at `at`, with the key tiles (of `bn` rows) of each of `consumers`
    /// warpgroups under the mask `causal` (none written for `consumers` 0).
    ///
    /// # Safety
    /// `at` the first word of a slot no thread reads meanwhile.
    #[inline(always)]
    pub unsafe fn write<E: Mem<i32>>(at: &E, w: &Unit, [bn, consumers]: [i64; 2], causal: bool) {
        let words = [
            (0, w.qt),
            (Self::TILES, w.tiles),
            (Self::SK, w.sk),
            (Self::SQ, w.sq),
            (Self::Q0, w.q0),
            (Self::BC, w.bc),
            (Self::HQ, w.hq),
            (Self::FIRST, w.first),
        ];
        unroll!(i < 8 => {
            let (f, v) = words[i];
            at.advance(f).write(v as i32);
        });
        let [first, sk, tiles] = [w.first, w.sk, w.tiles].map(|v| v as i32);
        unroll!(wg < 3 => {
            if (wg as i64) < consumers {
                let n = warpgroup_tiles(first, wg as i32, [sk, tiles, bn as i32], causal);
                at.advance(Self::MINE + wg as i64).write(n);
            }
        });
    }
}

/// The mask of key tile `j` (`[j, sk, row0]`: the sequence's keys and the thread's first row;
/// tiles of `bn` keys) on thread `t`'s scores `sc`: keys past the sequence's, and under `CAUSAL`
/// past the row, made `-inf`; a tile wholly inside both left as it is.
///
/// This and `rescale!` and `exponentiate!` are the online softmax's steps as macros, expanded
/// in each consumer loop's own scope: as `#[inline(always)]` functions the loop of the entries
/// without the overlap compiled to other code, and `D = 64` causal measured 2% slower (H200,
/// session 46).
macro_rules! mask {
    ($sc:expr, [$j:expr, $sk:expr, $row0:expr], $r0:expr, $t:expr, $bn:expr) => {
        let (j, sk, row0) = ($j, $sk, $row0);
        let (bn32, r032) = ($bn as i32, $r0 as i32);
        let col0 = bn32 * j + 2 * ($t % 4) as i32;
        if bn32 * (j + 1) > sk || (CAUSAL && bn32 * (j + 1) > row0 - r032 + 1) {
            // accumulator i: column 8 (i / 4) + i % 2 of the thread's, row 8 (i % 4 / 2)
            unroll!(g < SV / 8 => {
                unroll!(e < 8 => {
                    let i = 8 * g + e;
                    let (col, row) = (col0 + 8 * (i / 4) as i32 + (i % 2) as i32, row0 + 8 * (e % 4 / 2) as i32);
                    if col >= sk || (CAUSAL && col > row) {
                        $sc[i] = f32::NEG_INFINITY;
                    }
                });
            });
        }
    };
}

/// The rows' maxima `m` brought up to the masked scores `sc`, their sums `l` scaled to the new
/// maxima; evaluates to `[base, alpha]`: per row the new maximum times `scale2` (0 for a row with
/// every key masked so far: no `inf - inf`), and the factor O's row scales by.
macro_rules! rescale {
    ($sc:expr, $m:expr, $l:expr, $scale2:expr) => {{
        let mut mx = $m;
        unroll!(g < SV / 8 => {
            unroll!(e < 8 => { mx[e % 4 / 2] = mx[e % 4 / 2].max($sc[8 * g + e]) });
        });
        let mut base = [0f32; 2];
        let mut alpha = [0f32; 2];
        unroll!(r < 2 => {
            mx[r] = quad_reduce(mx[r], f32::max);
            base[r] = if mx[r] == f32::NEG_INFINITY { 0.0 } else { mx[r] * $scale2 };
            alpha[r] = exp2_approx($m[r] * $scale2 - base[r]);
            $m[r] = mx[r];
            $l[r] *= alpha[r];
        });
        [base, alpha]
    }};
}

/// `sc` made `P = 2^(S scale2 - base)` (`rescale!`'s base), P's rows added into the sums `l`.
macro_rules! exponentiate {
    ($sc:expr, $l:expr, $base:expr, $scale2:expr) => {
        let base = $base;
        unroll!(g < SV / 8 => {
            unroll!(e < 8 => {
                let (i, r) = (8 * g + e, e % 4 / 2);
                let x = exp2_approx(crate::math::fma($sc[i], $scale2, -base[r]));
                $sc[i] = x;
                $l[r] += x;
            });
        });
    };
}

/// The kernel, inputs and output `I`, head dimension `D = 2 OV` (64, 96, 128, 192 or 256), key
/// tiles of `BN = 2 SV` rows (64, 128 or 176, [`key_rows`]; the block's shared memory within
/// [`SMEM_LIMIT`]: 64 for `D` past 128), `CAUSAL` the mask; `BUG` a broken copy for the simulated
/// GPU's tests (0: none): 1 releases a stage before the wgmmas that read it have completed, 2
/// refills a stage without waiting for its release, 3 leaves out the fence before `P V`, 4 reads
/// `S` without waiting for its wgmmas, 5 loads the next unit's Q without waiting for its release, 6
/// copies O out of its staging without waiting for the warpgroup's writes, 7 (causal) leaves the
/// scheduler's counters as the launch ends, 8 leaves the stages of the tiles a warpgroup's rows
/// do not see ([`warpgroup_tiles`]) unreleased.
pub struct Attention<I, const OV: usize, const SV: usize, const CAUSAL: bool, const BUG: u8 = 0>(
    PhantomData<I>,
);

impl<I: MmaIn + Default, const OV: usize, const SV: usize, const CAUSAL: bool, const BUG: u8>
    Attention<I, OV, SV, CAUSAL, BUG>
{
    /// Head dimension.
    pub const D: i64 = 2 * OV as i64;
    /// Key rows per tile.
    pub const BN: i64 = 2 * SV as i64;
    /// Columns of Q, K, V in shared memory: `D` in whole panels.
    pub const DP: i64 = padded(Self::D);
    /// Consumer warpgroups ([`consumers`]).
    pub const CONSUMERS: i64 = consumers(Self::D);
    /// Query rows per block.
    pub const BM: i64 = query_rows(Self::D);
    /// Threads: the producer warpgroup and the consumers.
    pub const THREADS: i64 = 128 * (1 + Self::CONSUMERS);
    /// Columns of O staged at a time ([`staged_cols`]).
    pub const EC: i64 = staged_cols(Self::D, Self::BN);
    const DESC_V: GmmaDescriptor = desc_v(Self::D, Self::BN);
    /// Whether the consumers overlap a tile's softmax with the previous tile's `P V`
    /// (FlashAttention-3's pipelining inside a warpgroup, [`Attention::thread`]): with key tiles of
    /// 176 rows (`D = 128` without the mask from [`LONG_KEYS`] keys), where it measured +1.2-1.8%
    /// from 4k keys (H200, session 45); elsewhere it held even (tiles of 128) or lost up to 19% (`D = 64`: three consumers
    /// of 160 registers have no room for O, `S` and the packed `P` at once).
    pub const OVERLAP: bool = Self::BN == 176;
    /// Whether each consumer warpgroup takes only the key tiles its own rows see
    /// ([`warpgroup_tiles`], the producer releasing the stages of the rest for it): where key
    /// tiles are shorter than query tiles (`D = 64`: 128 keys to 192 rows; past `D = 128`: 64 to
    /// 128), so that under the causal mask a warpgroup's rows can end tiles before the unit's.
    /// Measured +8.4 / +4.0 / +2.3 / +1.2 / +0.8% at `D = 64` causal (1k-16k), +0.2-1.1% full,
    /// +2.1% at `D = 256` causal 1k (H200, session 46). Not at `D = 96` and 128 (tiles of 128
    /// keys and rows, and never with the overlap), where only the short first tiles of ragged
    /// sequences gain and every length lost 0.2-0.4% (the producer's reads per tile).
    pub const OWN_TILES: bool = Self::BN < Self::BM;
    /// Query tiles per head: of the longest sequence.
    pub const fn q_tiles<T, O, L, C>(p: &AttentionParams<T, O, L, C>) -> i64 {
        (p.seq[0] + Self::BM - 1) / Self::BM
    }

    /// Units of work: a query tile of a head of a sequence each.
    pub const fn units<T, O, L, C>(p: &AttentionParams<T, O, L, C>) -> i64 {
        Self::q_tiles(p) * p.heads[0] * p.heads[1]
    }

    /// Unit `u` of a launch on `p`: the heads (of every sequence, one after another) in groups,
    /// a group's units one query tile after another, each tile of every head of the group in
    /// turn ([`unit_order`]). Under the causal mask groups of [`heads_together`] and the longest
    /// (last) query tiles first: the blocks at work at once read the keys and values of a few
    /// heads (shared in L2), and the last units taken are the shortest (measured 5-8% faster
    /// than a head at a time). Without it a head at a time (measured 1-2% faster than groups).
    ///
    /// Post-condition: `u` in `0..units(p)` to (query tile, head of a sequence) is one-to-one.
    ///
    /// # Safety
    /// With `p.packed`, `p.cu_seqlens` readable where `prepare` checked them to be.
    #[inline(always)]
    pub unsafe fn unit<M: Space>(p: &<Self as Kernel>::Params<M>, u: i64) -> Unit {
        let q_tiles = Self::q_tiles(p).max(1);
        let [_, h, hkv] = p.heads;
        // the group's place and head: under the causal mask in 32 bits (`prepare` checked the
        // units, so the heads, fewer than 2^31; the producer has 40 registers, 32 beside three
        // consumers, and spilled in 64), without it in 64 (in 32 ptxas took the producer's
        // loop out of the uniform registers)
        // (heads per key/value head: `prepare` has checked `h` a multiple of `hkv >= 1`; at
        // least 1 for the compiler too, no division's panic path in the kernel)
        let [qt, b, hq, hk] = if CAUSAL {
            let [h, hkv] = [h, hkv].map(|v| v as i32);
            let heads = (p.heads[0] as i32 * h).max(1);
            let g = (heads_together(p.seq[1], Self::D) as i32).min(heads);
            let (x, bh) = unit_order(u as i32, q_tiles as i32, heads, g);
            let (h, group) = (h.max(1), (h / hkv.max(1)).max(1));
            let hq = bh % h;
            [q_tiles as i32 - 1 - x, bh / h, hq, hq / group].map(|v| v as i64)
        } else {
            let (x, bh) = (u % q_tiles, u / q_tiles);
            let (h, group) = (h.max(1), (h / hkv.max(1)).max(1));
            [x, bh / h, bh % h, bh % h / group]
        };
        let (sq, sk, q0, k0, bc) = if p.packed {
            let at = |c: &FlatTensor<M::Global<i32>, 1>, i: i64| c.at([i]).read() as i64;
            let [cq, ck] = &p.cu_seqlens;
            let (q0, k0) = (at(cq, b), at(ck, b));
            (at(cq, b + 1) - q0, at(ck, b + 1) - k0, q0, k0, 0)
        } else {
            (p.seq[0], p.seq[1], 0, 0, b)
        };
        // the tile's first row, and the key tiles its rows see
        let first = first_row(Self::BM, qt, sq);
        let seen = if CAUSAL { sk.min(first + Self::BM) } else { sk };
        // (under the overlap at least one: a sequence without keys has its rows' O of 0 and
        // log-sum-exp +inf from a tile that the mask takes whole)
        let tiles = (seen + Self::BN - 1) / Self::BN;
        let tiles = if Self::OVERLAP { tiles.max(1) } else { tiles };
        Unit {
            qt,
            first,
            hq,
            hk,
            sq,
            sk,
            q0,
            k0,
            bc,
            tiles,
        }
    }

    /// Pass `PASS` of a consumer warpgroup's store of O (columns `EC PASS ..` of its 64 rows,
    /// `o` thread `t`'s accumulators times `inv`, its rows' `1 / l`): the accumulators' pairs
    /// into the warpgroup's staging `stage` ([`staged`]), then whole rows out, 16 bytes a thread
    /// (an element at a time where O's row is not 16-byte aligned), to rows `at[2] ..` of head
    /// `at[1]`, batch coordinate `at[0]`, of `out`, the rows `at[3] .. at[4]` only (the rest
    /// lie outside the sequence). Named barrier `1 + wg` before the writes (the staging's last
    /// reads done) and between the writes and the reads.
    ///
    /// # Safety
    /// `stage` this warpgroup's `64 x EC` elements of shared memory; `out` inside its memory at
    /// the rows stored.
    #[inline(always)]
    pub unsafe fn store_o<M: Space, const PASS: usize>(
        o: &[f32; OV],
        inv: [f32; 2],
        stage: &M::Shared<I>,
        out: &FlatTensor<M::Global<I>, 4>,
        at: [i64; 5],
        wg: i64,
        t: i64,
    ) {
        // where registers are short (D = 64's 160 a thread; the accumulators of D = 256, and of
        // D = 128 with key tiles of 176, where O is staged in two passes), the thread's index as
        // a value of this unit's: else LLVM computes the addresses below once before the unit
        // loop and keeps them (ptxas spilled them); elsewhere it may (measured faster at D = 128
        // with key tiles of 128)
        let fresh_t = Self::D == 64 || Self::EC < Self::DP;
        let (ec, t) = (Self::EC, if fresh_t { fresh(t as i32) as i64 } else { t });
        let r0 = 16 * (t / 32) + t % 32 / 4;
        let wg_bar = || named_barrier(1 + wg as u32, 128);
        wg_bar();
        unroll!(r < 2 => {
            let row = r0 + 8 * r as i64;
            // chunk c = 8 g + e of the pass: accumulators 4 i + 2 r + {0, 1}, columns
            // 8 i + 2 (t % 4) + {0, 1}
            unroll!(g < (Self::EC / 64) as usize => {
                unroll!(e < 8 => {
                    let c = 8 * g + e;
                    let i = (Self::EC / 8) as usize * PASS + c;
                    if i < OV / 4 {
                        let x = I::narrow2(o[4 * i + 2 * r] * inv[r], o[4 * i + 2 * r + 1] * inv[r]);
                        let w = staged(row, c as i64, ec) + 2 * (t % 4);
                        stage.advance(w).recast::<u32>().write(x);
                    }
                });
            });
        });
        if BUG != 6 {
            wg_bar();
        }
        // chunk k of the pass's 64 x `chunks` (row k / chunks), 16 bytes at a time where
        // `aligned` (a macro, not a closure: as a closure the other entries' PTX changed)
        let chunks = pass_cols(Self::D, ec, PASS as i64) / 8;
        macro_rules! copy {
            ($k:expr, |$to:ident| $aligned:expr) => {
                let (row, c) = ($k / chunks, $k % chunks);
                if at[3] <= row && row < at[4] {
                    let from = stage.advance(staged(row, c, ec));
                    let $to = out.at([at[0], at[1], at[2] + row, ec * PASS as i64 + 8 * c]);
                    if $aligned {
                        $to.write_v4(from.read_v4());
                    } else {
                        unroll!(e < 8 => { $to.advance(e as i64).write(from.advance(e as i64).read()) });
                    }
                }
            };
        }
        if Self::OVERLAP {
            // a thread's chunks unrolled, so that the shared reads go out together, each aligned
            // where O's origin is and its strides are multiples of 8: +0.3-0.6% in these
            // entries, where the same in the others lost 1-3% (H200, session 47)
            let [sb, sh, ss, _] = out.layout().stride();
            let aligned = out.at([0; 4]).aligned16() && (sb | sh | ss) % 8 == 0;
            unroll!(i < ((WG_ROWS * pass_cols(Self::D, Self::EC, PASS as i64) / 8 + 127) / 128) as usize => {
                let k = t + 128 * i as i64;
                if k < WG_ROWS * chunks {
                    copy!(k, |to| aligned);
                }
            });
        } else {
            let mut k = t;
            while k < WG_ROWS * chunks {
                copy!(k, |to| to.aligned16());
                k += 128;
            }
        }
    }

    /// Issues `S = Q K^T` of one tile into `sc` as a group of its own (not waited for; after a
    /// `wgmma.fence` if `fence`): Q's k-block 0 at `dq`, K's at `dk`, k-block `kb` in panel `kb /
    /// 4`, columns `16 (kb % 4)` of it.
    #[inline(always)]
    unsafe fn scores(dq: u64, dk: u64, sc: &mut [f32; SV], fence: bool) {
        if fence {
            warpgroup_arrive();
        }
        unroll!(kb < (OV / 8) => {
            let (pn, col) = (kb as i64 / 4, 16 * (kb as i64 % 4));
            let da = gmma_desc_advance::<I>(dq, pn * Self::BM * PANEL + col);
            let db = gmma_desc_advance::<I>(dk, pn * Self::BN * PANEL + col);
            wgmma_ss::<I, SV, false, false>(da, db, sc, kb > 0);
        });
        warpgroup_commit_batch();
    }

    /// Issues `O += P V` as a group of its own (not waited for; after a `wgmma.fence` if
    /// `fence`): P packed in `pp` ([`Attention::pack`], A from registers), V's k-block 0 at `dv`,
    /// k-block `kb` 16 rows on.
    #[inline(always)]
    unsafe fn pv(pp: &[u32; SV], dv: u64, o: &mut [f32; OV], fence: bool) {
        if fence {
            warpgroup_arrive();
        }
        unroll!(kb < SV / 8 => {
            let a = [pp[4 * kb], pp[4 * kb + 1], pp[4 * kb + 2], pp[4 * kb + 3]];
            let db = gmma_desc_advance::<I>(dv, 16 * kb as i64 * PANEL);
            wgmma_rs::<I, OV, true>(a, db, o, true);
        });
        warpgroup_commit_batch();
    }

    /// P rounded to 16 bits, in pairs, where `P V` reads A: k-block `kb` is accumulators `8 kb ..
    /// 8 kb + 8` (the accumulators' layout is the register A layout); the first `SV / 2` words.
    #[inline(always)]
    fn pack(sc: &[f32; SV]) -> [u32; SV] {
        let mut pp = [0u32; SV];
        unroll!(g < SV / 8 => {
            unroll!(e < 4 => { pp[4 * g + e] = I::narrow2(sc[8 * g + 2 * e], sc[8 * g + 2 * e + 1]) });
        });
        pp
    }

    /// The online softmax of key tile `j` (`[j, sk, row0]`: with the sequence's keys and this
    /// thread's first row) on thread `t`'s scores `sc`: `mask!`, `rescale!`,
    /// `exponentiate!`. Returns the factor by which O's rows scale.
    #[inline(always)]
    fn softmax(
        sc: &mut [f32; SV],
        m: &mut [f32; 2],
        l: &mut [f32; 2],
        [j, sk, row0]: [i32; 3],
        r0: i64,
        t: i64,
        scale2: f32,
    ) -> [f32; 2] {
        mask!(sc, [j, sk, row0], r0, t, Self::BN);
        let [base, alpha] = rescale!(sc, *m, l, scale2);
        exponentiate!(sc, l, base, scale2);
        alpha
    }

    /// A consumer warpgroup's stores of a unit (its word `w`, the tile's first row `first`):
    /// thread `t`'s rows' log-sum-exp from their maxima `m` and sums `l`, rows past the
    /// sequence's left out, and O / l through the warpgroup's staging `stage`
    /// ([`Attention::store_o`], `EC` columns at a time). The word is read here, not kept through
    /// the unit's tiles: the registers are the accumulators'.
    ///
    /// # Safety
    /// As [`Attention::store_o`]; `w` the unit's slot, unwritten meanwhile.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn epilogue<M: Space>(
        p: &<Self as Kernel>::Params<M>,
        w: &M::Shared<i32>,
        o: &[f32; OV],
        m: [f32; 2],
        l: [f32; 2],
        first: i32,
        stage: &M::Shared<I>,
        wg: i64,
        t: i64,
        scale2: f32,
    ) {
        let r0 = 16 * (t / 32) + t % 32 / 4;
        let first = first as i64 + WG_ROWS * wg;
        let [sq, q0, bc, hq] =
            [Slot::SQ, Slot::Q0, Slot::BC, Slot::HQ].map(|f| w.advance(f).read() as i64);
        let mut inv = [0f32; 2];
        unroll!(r < 2 => {
            let row = first + r0 + 8 * r as i64;
            let sum = quad_reduce(l[r], |a, b| a + b);
            // a row that saw no key: O of 0, the log-sum-exp +inf
            inv[r] = if sum > 0.0 { 1.0 / sum } else { 0.0 };
            if t % 4 == 0 && 0 <= row && row < sq {
                let base = if m[r] == f32::NEG_INFINITY { 0.0 } else { m[r] * scale2 };
                let lse = if sum > 0.0 { (base + log2_approx(sum)) * LN_2 } else { f32::INFINITY };
                p.lse.at([bc, hq, q0 + row]).write(lse);
            }
        });
        // O with its head dimension's stride the constant 1 (`prepare` checked it): the
        // columns' offsets are then constants, not values the compiler computes once before
        // every unit and keeps (spilled) through them
        let Some(o_t) = p.o.with_static_stride(3, 1) else {
            return;
        };
        let at = [bc, hq, q0 + first, -first, sq - first];
        Self::store_o::<M, 0>(o, inv, stage, &o_t, at, wg, t);
        if Self::DP > Self::EC {
            Self::store_o::<M, 1>(o, inv, stage, &o_t, at, wg, t);
        }
    }

    const SHAPES: () = assert!(
        matches!(Self::D, 64 | 96 | 128 | 192 | 256)
            && matches!(Self::BN, 64 | 128 | 176)
            && smem_bytes(Self::D, Self::BN) <= SMEM_LIMIT,
        "attention: D of 64, 96, 128, 192 or 256, BN of 64, 128 or 176, within the shared memory"
    );
}

impl<I: MmaIn + Default, const OV: usize, const SV: usize, const CAUSAL: bool, const BUG: u8> Kernel
    for Attention<I, OV, SV, CAUSAL, BUG>
{
    type Shared = I;
    type Params<M: Space> =
        AttentionParams<M::TensorMap<I>, M::Global<I>, M::Global<f32>, M::Global<i32>>;

    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        let [b, h, hkv] = p.heads;
        let [sq, sk] = p.seq;
        if b < 1 || h < 1 || hkv < 1 || sq < 1 || sk < 1 {
            return Err("attention needs batch, heads, key/value heads and lengths of at least 1");
        }
        if h % hkv != 0 {
            return Err("attention needs heads a multiple of the key/value heads");
        }
        let [cq, ck] = p.cu_seqlens.map(|c| c.shape()[0]);
        let varlen = p.packed;
        if varlen && (cq != b + 1 || ck != b + 1) {
            return Err(
                "attention needs cu_seqlens of B + 1 offsets each for the queries and keys",
            );
        }
        // element by element: an array's comparison is a `memcmp` call, which PTX has not
        let ([ob, oh, os, od], [lb, lh, ls]) = (p.o.shape(), p.lse.shape());
        if ob != (if varlen { 1 } else { b })
            || oh != h
            || od != Self::D
            || (!varlen && os != sq)
            || lb != ob
            || lh != oh
            || ls != os
        {
            return Err(
                "attention needs O of (B, H, Sq, D) and the log-sum-exp of (B, H, Sq), \
                        packed (1, H, total, D) and (1, H, total) with cu_seqlens",
            );
        }
        // units counted in 32 bits (the scheduler's counter, [`unit_order`])
        if Self::units(&p) >= i32::MAX as i64 {
            return Err("attention needs fewer than 2^31 units of work (query tiles x heads)");
        }
        if p.sched.shape()[0] != 2 {
            return Err("attention needs the scheduler's counters: 2 elements of global memory");
        }
        if p.o.with_static_stride(3, 1).is_none() {
            return Err("attention needs O's head dimension contiguous (stride 1)");
        }
        if !(p.scale.is_finite() && p.scale > 0.0) {
            return Err("attention needs a finite positive scale");
        }
        Ok(p)
    }

    /// Persistent: a block per multiprocessor (at most one per unit of work), so that a unit's Q
    /// and first key tiles load while the last unit's final tiles and stores run. Under the
    /// causal mask each block takes the next unit from [`AttentionParams::sched`] as its
    /// producer is ready for one, so units of uneven length go to whichever block frees first;
    /// without it, its units in turn (`block`, `block + blocks`, ...).
    fn geometry<M: Space>(p: &Self::Params<M>, sms: i64, _smem: i64) -> Geometry {
        let units = Self::units(p);
        Geometry {
            grid: [units.min(sms.max(1)), 1],
            threads: Self::THREADS,
            smem_bytes: smem_bytes(Self::D, Self::BN),
        }
    }

    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<I>>) {
        #[allow(clippy::let_unit_value)]
        let () = Self::SHAPES;
        let (d, bn) = (Self::DP, Self::BN);
        let tid = c.thread;
        let (blocks, units) = (c.grid[0], Self::units(p));
        // Q, the stages, the barriers: from the first 1024-byte boundary
        let q = c
            .smem
            .advance(((1024 - c.smem.addr() % 1024) % 1024 / 2) as i64);
        let k_at = |s: i64| q.advance(Self::BM * d + 2 * s * bn * d);
        let v_at = |s: i64| k_at(s).advance(bn * d);
        // O's staging, this warpgroup's 64 rows at `staging(wg)`
        let staging = |wg: i64| k_at(STAGES).advance(WG_ROWS * wg * Self::EC);
        let q_full = k_at(STAGES).advance(Self::BM * Self::EC);
        let q_empty = q_full.advance(4);
        // stage s's K and V, each behind a full and an empty barrier of its own
        let full_k = |s: i64| q_empty.advance(4 + 4 * s);
        let full_v = |s: i64| full_k(STAGES + s);
        let empty_k = |s: i64| full_k(2 * STAGES + s);
        let empty_v = |s: i64| full_k(3 * STAGES + s);
        // the producer's word to the consumers on unit `n`: slot `n % 2` ([`Slot`])
        let slot = |n: i64| full_k(4 * STAGES).recast::<i32>().advance(SLOT * (n & 1));
        if tid == 0 {
            q_full.mbarrier_init(1);
            q_empty.mbarrier_init((128 * Self::CONSUMERS) as u32);
            unroll!(s < STAGES as usize => {
                full_k(s as i64).mbarrier_init(1);
                full_v(s as i64).mbarrier_init(1);
                empty_k(s as i64).mbarrier_init(Self::CONSUMERS as u32);
                empty_v(s as i64).mbarrier_init(Self::CONSUMERS as u32);
            });
        }
        sync_threads();
        if tid < 128 {
            if Self::CONSUMERS == 3 {
                setmaxnreg_dec::<{ REGS_3[0] }>();
            } else {
                setmaxnreg_dec::<{ REGS_2[0] }>();
            }
            if tid == 0 {
                p.q.acquire();
                p.k.acquire();
                p.v.acquire();
                // units loaded, key tiles loaded (over every unit: the stages' ring runs on)
                let (mut n, mut jj) = (0, 0);
                let (next, done) = (p.sched.at([0]), p.sched.at([1]));
                // the next unit: under the causal mask the counter's (the first block ready
                // takes it), else this block's next in turn (`block`, `block + blocks`, ..:
                // units of equal length)
                let take = |u: i64| match CAUSAL {
                    true => next.atomic_add(1) as i64,
                    false => u + blocks,
                };
                let mut u = if CAUSAL { take(0) } else { c.block[0] };
                // (compared in 32 bits: the causal mask's producer spilled in 64)
                while (u as i32) < units as i32 {
                    let w = Self::unit::<M>(p, u);
                    if w.live() {
                        // unit n - 1's Q released by every consumer thread, and with it slot
                        // n % 2 (unit n - 2's: read before n - 1's release)
                        if n > 0 && BUG != 5 {
                            q_empty.mbarrier_wait(((n - 1) & 1) as u32);
                        }
                        let mines = if Self::OWN_TILES { Self::CONSUMERS } else { 0 };
                        Slot::write(&slot(n), &w, [bn, mines], CAUSAL);
                        q_full.mbarrier_arrive((2 * Self::BM * d) as u32);
                        unroll!(pn < 4 => {
                            if (pn as i64) < d / PANEL {
                                let at = PANEL * pn as i64;
                                let row = [w.bc, w.hq, w.q0 + w.first, at];
                                q.advance(Self::BM * at).tma_load(&p.q, row, &q_full);
                            }
                        });
                        let mut j = 0;
                        while j < w.tiles {
                            // K first (released after S, needed before V)
                            let (s, ph) = (jj % STAGES, ((jj / STAGES - 1) & 1) as u32);
                            let row = |pn: i64| [w.bc, w.hk, w.k0 + bn * j, PANEL * pn];
                            // (without the overlap K's barriers stand for the whole stage)
                            let (kv, vv) = if Self::OVERLAP { (2, 2) } else { (4, 0) };
                            let (full_v, empty_v) = if Self::OVERLAP {
                                (full_v(s), empty_v(s))
                            } else {
                                (full_k(s), empty_k(s))
                            };
                            if jj >= STAGES && BUG != 2 {
                                empty_k(s).mbarrier_wait(ph);
                            }
                            full_k(s).mbarrier_arrive((kv * bn * d) as u32);
                            unroll!(pn < 4 => {
                                if (pn as i64) < d / PANEL {
                                    let to = k_at(s).advance(bn * PANEL * pn as i64);
                                    to.tma_load(&p.k, row(pn as i64), &full_k(s));
                                }
                            });
                            // the stage released here for each warpgroup whose rows see
                            // nothing of it ([`Attention::OWN_TILES`]: the phase the release
                            // counts for is the one filled now)
                            if Self::OWN_TILES {
                                unroll!(g < 3 => {
                                    let mine = slot(n).advance(Slot::MINE + g as i64);
                                    if (g as i64) < Self::CONSUMERS && BUG != 8 && mine.read() as i64 <= j {
                                        empty_k(s).mbarrier_arrive(0);
                                    }
                                });
                            }
                            if Self::OVERLAP {
                                if jj >= STAGES && BUG != 2 {
                                    empty_v.mbarrier_wait(ph);
                                }
                                full_v.mbarrier_arrive((vv * bn * d) as u32);
                            }
                            unroll!(pn < 4 => {
                                if (pn as i64) < d / PANEL {
                                    let to = v_at(s).advance(bn * PANEL * pn as i64);
                                    to.tma_load(&p.v, row(pn as i64), &full_v);
                                }
                            });
                            j += 1;
                            jj += 1;
                        }
                        n += 1;
                    }
                    u = take(u);
                }
                // the counters back to 0 for the next launch, by the last block done taking
                // (every other block's additions to `next` ordered before its own to `done`)
                if CAUSAL && done.atomic_add_acq_rel(1) as i64 == blocks - 1 && BUG != 7 {
                    next.write(0);
                    done.write(0);
                }
                // no more: a unit of query tile -1, and no bytes to wait for
                if n > 0 {
                    q_empty.mbarrier_wait(((n - 1) & 1) as u32);
                }
                slot(n).write(-1);
                q_full.mbarrier_arrive(0);
            }
            return;
        }
        if Self::CONSUMERS == 3 {
            setmaxnreg_inc::<{ REGS_3[1] }>();
        } else {
            setmaxnreg_inc::<{ REGS_2[1] }>();
        }
        let (wg, t) = (tid / 128 - 1, tid % 128);
        // this thread's rows of the warpgroup's 64 (the accumulators' layout): r0 and r0 + 8
        let r0 = 16 * (t / 32) + t % 32 / 4;
        let q_wg = q.advance(WG_ROWS * wg * PANEL);
        // Q's descriptor (k-block 0's): each k-block's is it moved on by a constant
        let dq = gmma_desc(&q_wg, DESC_QK);
        let scale2 = p.scale * LOG2_E;
        // units taken, key tiles taken (as the producer's; in 32 bits, a register each: the
        // accumulators need the rest)
        let (mut n, mut jj) = (0i32, 0i32);
        loop {
            // the unit's word, and its Q
            q_full.mbarrier_wait((n & 1) as u32);
            let w = slot(n as i64);
            if w.read() < 0 {
                break;
            }
            let (tiles, sk) = (w.advance(Slot::TILES).read(), w.advance(Slot::SK).read());
            let first = w.advance(Slot::FIRST).read();
            let row0 = first + (WG_ROWS * wg + r0) as i32;
            let stage = |jj: i32| {
                (
                    (jj % STAGES as i32) as i64,
                    ((jj / STAGES as i32) & 1) as u32,
                )
            };
            // this thread done with the unit's S of tile j (K of stage s): K released, and Q
            // after the unit's last (and with it the unit's slot before: the producer rewrites
            // it after the next unit's release)
            let release_k = |j: i32, s: i64| {
                if t == 0 {
                    empty_k(s).mbarrier_arrive(0);
                }
                if j + 1 == tiles {
                    q_empty.mbarrier_arrive(0);
                }
            };
            // this warpgroup done with tile j's P V (V of stage s; BUG 1 releases it before)
            let release_v = |s: i64| {
                if BUG != 1 && t == 0 {
                    empty_v(s).mbarrier_arrive(0);
                }
            };
            if Self::OVERLAP {
                let mut o = accumulators::<OV>();
                let (mut m, mut l) = ([f32::NEG_INFINITY; 2], [0f32; 2]);
                let mut sc = accumulators::<SV>();
                // FlashAttention-3's overlap inside a warpgroup: tile j's softmax runs while
                // tile j - 1's P V is in flight, issued with tile j's S. Tile 0 first: its S,
                // softmax, P.
                let (s, ph) = stage(jj);
                full_k(s).mbarrier_wait(ph);
                Self::scores(dq, gmma_desc(&k_at(s), DESC_QK), &mut sc, true);
                if BUG != 4 {
                    warpgroup_wait::<0>();
                }
                release_k(0, s);
                Self::softmax(&mut sc, &mut m, &mut l, [0, sk, row0], r0, t, scale2);
                let mut pp = Self::pack(&sc);
                let mut j = 1i32;
                while j < tiles {
                    let ((s, ph), (sv, phv)) = (stage(jj + 1), stage(jj));
                    full_k(s).mbarrier_wait(ph);
                    full_v(sv).mbarrier_wait(phv);
                    // tile j's S, and tile j - 1's P V
                    Self::scores(dq, gmma_desc(&k_at(s), DESC_QK), &mut sc, true);
                    Self::pv(&pp, gmma_desc(&v_at(sv), Self::DESC_V), &mut o, BUG != 3);
                    // S done (P V may run on)
                    if BUG != 4 {
                        warpgroup_wait::<1>();
                    }
                    release_k(j, s);
                    let alpha =
                        Self::softmax(&mut sc, &mut m, &mut l, [j, sk, row0], r0, t, scale2);
                    // P V done: tile j - 1's V released, O rescaled, tile j's P packed
                    if BUG == 1 && t == 0 {
                        empty_v(sv).mbarrier_arrive(0);
                    }
                    warpgroup_wait::<0>();
                    release_v(sv);
                    unroll!(g < OV / 16 => {
                        unroll!(e < 16 => { o[16 * g + e] *= alpha[e % 4 / 2] });
                    });
                    pp = Self::pack(&sc);
                    j += 1;
                    jj += 1;
                }
                // the last tile's P V
                let (sv, phv) = stage(jj);
                full_v(sv).mbarrier_wait(phv);
                Self::pv(&pp, gmma_desc(&v_at(sv), Self::DESC_V), &mut o, BUG != 3);
                if BUG == 1 && t == 0 {
                    empty_v(sv).mbarrier_arrive(0);
                }
                warpgroup_wait::<0>();
                release_v(sv);
                jj += 1;
                Self::epilogue::<M>(p, &w, &o, m, l, first, &staging(wg), wg, t, scale2);
            } else {
                let mut o = accumulators::<OV>();
                let (mut m, mut l) = ([f32::NEG_INFINITY; 2], [0f32; 2]);
                // the key tiles this warpgroup's rows see ([`Attention::OWN_TILES`]), lane 0's:
                // so ptxas knows the count the same across the warp (read by each lane, the
                // loop's stage and descriptor arithmetic left the uniform registers and every
                // entry lost 4-8%, H200, session 46)
                let mine = match Self::OWN_TILES {
                    true => shfl_idx(w.advance(Slot::MINE + wg).read() as u32, 0) as i32,
                    false => tiles,
                };
                let mut j = 0i32;
                while j < mine {
                    let s = (jj % STAGES as i32) as i64;
                    full_k(s).mbarrier_wait(((jj / STAGES as i32) & 1) as u32);
                    // S = Q K^T
                    let mut sc = accumulators::<SV>();
                    // the stage's K and V descriptors, as Q's
                    let (dk, dv) = (
                        gmma_desc(&k_at(s), DESC_QK),
                        gmma_desc(&v_at(s), Self::DESC_V),
                    );
                    warpgroup_arrive();
                    unroll!(kb < (OV / 8) => {
                        // k-block kb: panel kb / 4, columns 16 (kb % 4) of it
                        let (pn, col) = (kb as i64 / 4, 16 * (kb as i64 % 4));
                        let da = gmma_desc_advance::<I>(dq, pn * Self::BM * PANEL + col);
                        let db = gmma_desc_advance::<I>(dk, pn * bn * PANEL + col);
                        wgmma_ss::<I, SV, false, false>(da, db, &mut sc, kb > 0);
                    });
                    warpgroup_commit_batch();
                    if BUG != 4 {
                        warpgroup_wait::<0>();
                    }
                    // the unit's last S: this thread is done with Q (and with the unit's slot
                    // before: the producer rewrites it after the next unit's release)
                    if j + 1 == mine {
                        q_empty.mbarrier_arrive(0);
                    }
                    // the mask, the rows' new maxima, O rescaled, P and its row sums
                    mask!(sc, [j, sk, row0], r0, t, bn);
                    let [base, alpha] = rescale!(sc, m, l, scale2);
                    unroll!(g < OV / 16 => {
                        unroll!(e < 16 => { o[16 * g + e] *= alpha[e % 4 / 2] });
                    });
                    exponentiate!(sc, l, base, scale2);
                    // P V: k-block kb of P is accumulators 8 kb .. 8 kb + 8
                    if BUG != 3 {
                        warpgroup_arrive();
                    }
                    unroll!(kb < SV / 8 => {
                        let pk = |i: usize| I::narrow2(sc[8 * kb + 2 * i], sc[8 * kb + 2 * i + 1]);
                        let a = [pk(0), pk(1), pk(2), pk(3)];
                        let db = gmma_desc_advance::<I>(dv, 16 * kb as i64 * PANEL);
                        wgmma_rs::<I, OV, true>(a, db, &mut o, true);
                    });
                    warpgroup_commit_batch();
                    // this warpgroup is done with the stage once its wgmmas are
                    if BUG == 1 && t == 0 {
                        empty_k(s).mbarrier_arrive(0);
                    }
                    warpgroup_wait::<0>();
                    if BUG != 1 && t == 0 {
                        empty_k(s).mbarrier_arrive(0);
                    }
                    j += 1;
                    jj += 1;
                }
                // past this warpgroup's tiles the ring runs on: the producer released their
                // stages for it (the unit's tiles read again, not kept through the loop)
                if Self::OWN_TILES {
                    jj += w.advance(Slot::TILES).read() - j;
                }
                // a warpgroup without keys released Q all the same
                if mine == 0 {
                    q_empty.mbarrier_arrive(0);
                }
                // O / l and the log-sum-exp, rows past the sequence's left out (the unit's word read
                // again, not kept through the loop: the registers are the accumulators')
                let [sq, q0, bc, hq] =
                    [Slot::SQ, Slot::Q0, Slot::BC, Slot::HQ].map(|f| w.advance(f).read() as i64);
                let mut inv = [0f32; 2];
                unroll!(r < 2 => {
                    let row = row0 as i64 + 8 * r as i64;
                    let sum = quad_reduce(l[r], |a, b| a + b);
                    // a row that saw no key: O of 0, the log-sum-exp +inf
                    inv[r] = if sum > 0.0 { 1.0 / sum } else { 0.0 };
                    if t % 4 == 0 && 0 <= row && row < sq {
                        let base = if m[r] == f32::NEG_INFINITY { 0.0 } else { m[r] * scale2 };
                        let lse = if sum > 0.0 { (base + log2_approx(sum)) / LOG2_E } else { f32::INFINITY };
                        p.lse.at([bc, hq, q0 + row]).write(lse);
                    }
                });
                // O with its head dimension's stride the constant 1 (`prepare` checked it): the
                // columns' offsets are then constants, not values the compiler computes once before
                // every unit and keeps (spilled) through them
                let Some(o_t) = p.o.with_static_stride(3, 1) else {
                    return;
                };
                // O through shared memory, `EC` columns at a time ([`Attention::store_o`])
                let first = row0 as i64 - r0;
                let at = [bc, hq, q0 + first, -first, sq - first];
                Self::store_o::<M, 0>(&o, inv, &staging(wg), &o_t, at, wg, t);
                if Self::DP > Self::EC {
                    Self::store_o::<M, 1>(&o, inv, &staging(wg), &o_t, at, wg, t);
                }
            }
            n += 1;
        }
    }
}
