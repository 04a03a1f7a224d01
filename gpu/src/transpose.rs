//! The tiled transpose: `dst(j, i) = src(i, j)` for a `rows x cols` `src` (any row stride) and a
//! `cols x rows` `dst`, through a shared-memory tile.
//!
//! Written as seed 002 reads, like the copy ([`crate::copy`]): block `(bx, by)` takes the 64x64
//! input tile at tile coordinate `(by, bx)` and the output tile at `(bx, by)` — `local_tile` of the
//! tensors and of their identity tensors. One tiled copy, [`COPY`], given by its thread-value layout
//! [`TV`] (a warp on 32 consecutive elements of a row at every value), partitions every tile:
//!
//! - first, the thread's values of the input tile (`partition_S`) into the shared tile
//!   (`partition_D`), all 16 loads issued before the first store where the tile is whole;
//! - after `__syncthreads()`, its values of the output tile (`partition_D`) from the shared
//!   tile read transposed (`select<1,0>` of its layout, `partition_S`), so that a warp reads shared
//!   memory down a column and writes 32 consecutive elements of an output row.
//!
//! The shared tile's layout ([`SmemTile`]) keeps those column reads free of bank conflicts: rows
//! padded by one 32-bit word ([`Padded`]) or a swizzle of the 32-bit words ([`Swizzled`], through a
//! [`SwizzleEngine`]). A tile wholly inside the matrix moves without predicates; in the others
//! each value is predicated by its coordinate (`elem_less` of the identity tile's partition).
//!
//! The led kernels (`Transpose<T, S, true>`, the entries `transpose_{pad,swizzle}_led_<T>`) are
//! for a `dst` whose row stride is not a whole number of 32-byte sectors (odd widths; [`led`]
//! tells): each output row's 64-element window is shifted back to the sector boundary below it,
//! so that no warp's store starts mid-sector. The block stages a sector's worth of input rows
//! more ([`Transpose::LEAD`]) and writes row `j`'s window from where it starts
//! (`Transpose::aligned_rows_out`). It takes the ragged transpose from 72% to 79% of a copy on
//! the H100 (`docs/perf.md`: partial sectors were only part of what unaligned rows cost). Either
//! kernel is correct for any strides; the host launches the led one where [`led`] says, so the
//! other keeps the short body of the aligned case. The pairs' led kernel
//! ([`TransposePairsLed`], `transpose_pairs_led_<T>`) stages the same rows, each read as pairs
//! from the pair boundary at or below its first column, and writes each window as pairs.

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::mem::{Mem, Space, SwizzleEngine};
use crate::sync::sync_threads;
use core::marker::PhantomData;
use layout_core::{
    const_ok, make_coord_tensor, make_tiled_copy_from_tv, tiles_of, ComposedLayout, CoordTensor,
    Engine, FlatLayout, FlatTensor, IntTuple, Layout, Swizzle, ThrCoordTensor, ThrCoords,
    TiledCopy, TvCoords,
};

/// The tile edge.
pub const TILE: i64 = 64;
/// The tile's shape.
pub const TILER: [i64; 2] = [TILE, TILE];
/// Threads per block (one dimension).
pub const THREADS: i64 = 256;
/// Values per thread on each side of the barrier.
pub const VALUES: i64 = TILE * TILE / THREADS;
/// (thread, value) -> column-major tile coordinate `i + 64 j` (row `i`, column `j`), with
/// thread `t = (tx, ty)` in `(32, 8)` and value `v = (c, k)` in `(2, 8)`: row `ty + 8k`, column
/// `tx + 32c`. Consecutive threads of a warp take consecutive columns of one row.
pub const TV: Layout = const_ok!(Layout::parse("((32,8),(2,8)):((64,1),(2048,8))"));
/// The tiled copy of [`TV`] over a 64x64 tile, one element per access (a raked product, which
/// `make_tiled_copy_tv` builds, keeps a thread's values adjacent: [`TV`] spreads them).
pub const COPY: TiledCopy = const_ok!(make_tiled_copy_from_tv(
    &TV,
    &const_ok!(IntTuple::from_ints(&TILER))
));
/// [`COPY`]'s partition of a tile, as coordinates.
pub const PLAN: TvCoords<2> = const_ok!(TvCoords::new(&COPY, TILER));

const _: () = assert!(
    PLAN.threads() == THREADS && PLAN.values() == VALUES && VALUES == 16,
    "unroll16 covers a thread's values"
);

/// The transpose's parameters, one by-value kernel parameter: `src` `(rows, cols)` and `dst`
/// `(cols, rows)`, each with unit stride along its rows (mode 1).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TransposeParams<E> {
    /// The input.
    pub src: FlatTensor<E, 2>,
    /// The output.
    pub dst: FlatTensor<E, 2>,
}

/// Both transposes' condition: `dst`'s shape is `src`'s transposed, unit strides along the rows
/// (mode 1) of both (made static), any row stride.
fn prepare<E: Engine>(p: TransposeParams<E>) -> Result<TransposeParams<E>, &'static str> {
    let [rows, cols] = p.src.shape();
    let transposed = p.dst.shape() == [cols, rows];
    match (
        p.src.with_static_stride(1, 1),
        p.dst.with_static_stride(1, 1),
    ) {
        (Some(src), Some(dst)) if transposed => Ok(TransposeParams { src, dst }),
        (Some(_), Some(_)) => {
            Err("transpose needs dst of shape (cols, rows) for src of shape (rows, cols)")
        }
        _ => Err("transpose needs unit strides along the rows (mode 1) of src and dst"),
    }
}

/// A shared-memory layout for the 64x64 tile of elements of type `T`.
pub trait SmemTile<T: Copy> {
    /// Its name, as the kernels' names carry it.
    const NAME: &'static str;
    /// `(row, column) -> position` in the tile's engine ([`SmemTile::Engine`]).
    const LAYOUT: Layout;
    /// Elements of shared memory it spans.
    const ELEMS: i64;
    /// The engine through which the tile reaches the block's shared memory `M`.
    type Engine<M: Mem<T>>: Mem<T>;
    /// That engine over `smem`.
    fn engine<M: Mem<T>>(smem: M) -> Self::Engine<M>;
    /// The element of shared memory that tile element `(i, j)` is: `engine o LAYOUT` at `(i, j)`.
    fn offset(i: i64, j: i64) -> i64;
}

/// Rows padded by one 32-bit word: `(64,64):(64 + 4/sizeof(T), 1)`.
pub struct Padded<T>(PhantomData<T>);
impl<T: Copy> SmemTile<T> for Padded<T> {
    const NAME: &'static str = "pad";
    const LAYOUT: Layout = const_ok!(Layout::from_parts(
        const_ok!(IntTuple::from_ints(&TILER)),
        &[TILE + 4 / core::mem::size_of::<T>() as i64, 1]
    ));
    const ELEMS: i64 = Self::LAYOUT.cosize();
    type Engine<M: Mem<T>> = M;
    #[inline(always)]
    fn engine<M: Mem<T>>(smem: M) -> M {
        smem
    }
    fn offset(i: i64, j: i64) -> i64 {
        Self::LAYOUT.dot(&[i, j])
    }
}

/// The 32-bit words of each row permuted by the row index: `Sw<5, M, 6-M> o (64,64):(64,1)` with
/// `M = log2(4/sizeof(T))` — word `w` of row `i` is stored at word `w ^ (i % 32)` of that row.
pub struct Swizzled<T>(PhantomData<T>);
impl<T> Swizzled<T> {
    /// log2 of the elements per 32-bit word.
    const M: i64 = (4 / core::mem::size_of::<T>()).trailing_zeros() as i64;
    /// The swizzle.
    pub const SWIZZLE: Swizzle = const_ok!(Swizzle::new(5, Self::M, 6 - Self::M));
    /// The swizzled layout, `Sw o (64,64):(64,1)`.
    pub const SWIZZLED: ComposedLayout = const_ok!(ComposedLayout::new(
        Self::SWIZZLE,
        const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&TILER)),
            &[TILE, 1]
        )),
    ));
}
impl<T: Copy> SmemTile<T> for Swizzled<T> {
    const NAME: &'static str = "swizzle";
    /// The layout under the swizzle; the engine applies the swizzle.
    const LAYOUT: Layout = *Self::SWIZZLED.layout();
    const ELEMS: i64 = Self::SWIZZLED.cosize();
    type Engine<M: Mem<T>> = SwizzleEngine<M>;
    #[inline(always)]
    fn engine<M: Mem<T>>(smem: M) -> SwizzleEngine<M> {
        SwizzleEngine::new(smem, Self::SWIZZLE)
    }
    fn offset(i: i64, j: i64) -> i64 {
        Self::SWIZZLE.apply(Self::LAYOUT.dot(&[i, j]))
    }
}

/// Do `dst`'s rows start at different offsets within a 32-byte sector (a row stride of `T`s
/// that is not a whole number of sectors)? Then the led transpose (`Transpose<T, S, true>`)
/// writes each output row's window shifted back to a sector boundary, so that no store writes
/// part of a sector.
pub const fn led<T>(dst_row_stride: i64) -> bool {
    dst_row_stride % (STORE_ALIGN / core::mem::size_of::<T>() as i64) != 0
}

/// The transpose of elements `T` through shared tile `S` (a [`Kernel`]); `LED`: each output row's
/// window starts at a sector ([`led`]).
pub struct Transpose<T, S, const LED: bool = false>(PhantomData<(T, S)>);

impl<T: Copy + Default, S: SmemTile<T>, const LED: bool> Transpose<T, S, LED> {
    /// The shared tile, `(row, column)`, flat.
    const SMEM: FlatLayout<2> = const_ok!(FlatLayout::from_layout(&S::LAYOUT));
    /// Elements per [`STORE_ALIGN`] bytes: a sector.
    pub const ALIGN: i64 = STORE_ALIGN / core::mem::size_of::<T>() as i64;
    /// Input rows above its tile that a block stages when the output's rows are not
    /// aligned (`Transpose::aligned_rows_out`): `STORE_ALIGN` bytes' worth.
    pub const LEAD: i64 = Self::ALIGN;
    /// The shared tile with the [`LEAD`](Transpose::LEAD) rows above it: `(LEAD + 64, 64)` with
    /// the tile's strides; row `r` holds input row `64 by - LEAD + r`.
    const SMEM_LED: FlatLayout<2> = const_ok!(FlatLayout::new(
        [Self::LEAD + TILE, TILE],
        Self::SMEM.stride()
    ));
    /// [`SMEM_LED`](Transpose::SMEM_LED) read as an output tile: `(column, row)`.
    const SMEM_LED_T: FlatLayout<2> = const_ok!(FlatLayout::new(
        [TILE, Self::LEAD + TILE],
        [Self::SMEM.stride()[1], Self::SMEM.stride()[0]]
    ));
    /// Elements of shared memory the led tile spans: its last element's offset, plus one (a
    /// swizzle moves elements within their row of 64: the rows span as many).
    const ELEMS_LED: i64 =
        (Self::LEAD + TILE - 1) * Self::SMEM.stride()[0] + (TILE - 1) * Self::SMEM.stride()[1] + 1;

    /// The shared tile read as an output tile: `select<1,0>` of its layout, `(j, i) -> (i, j)`.
    const SMEM_T: FlatLayout<2> =
        const_ok!(FlatLayout::from_layout(&const_ok!(Layout::concat(&[
            const_ok!(S::LAYOUT.get(1)),
            const_ok!(S::LAYOUT.get(0))
        ]))));

    /// Tiles along each mode of a tensor of `shape` (the last ones overhanging its edges).
    pub const fn tiles(shape: [i64; 2]) -> [i64; 2] {
        tiles_of(shape, TILER)
    }
}

impl<T: Copy + Default, S: SmemTile<T>, const LED: bool> Transpose<T, S, LED> {
    /// Step 0 when the output's rows are not sector-aligned: block `(bx, by)` stages input rows
    /// `64 by - LEAD .. 64 by + 64` of its 64 columns in the led tile `smem` (`(LEAD + 64, 64)`,
    /// unit column stride; [`SMEM_LED`] for this kernel): the tile as
    /// in the aligned case, into rows `LEAD..`, then the `LEAD` rows above it, 8 at a time
    /// ([`PLAN8`]: two values a thread), each value predicated by its coordinate.
    ///
    /// # Safety
    /// As [`Kernel::thread`].
    ///
    /// [`SMEM_LED`]: Transpose::SMEM_LED
    #[inline(always)]
    unsafe fn led_rows_in<E: Mem<T>, M: Mem<T>, L: Mem<T>>(
        p: &TransposeParams<E>,
        c: &Ctx<M>,
        smem: &FlatTensor<L, 2>,
    ) {
        let (thr, [bx, by]) = (PLAN.get_slice(c.thread), c.block);
        let id = make_coord_tensor(p.src.shape());
        let tile = [by, bx];
        // rows LEAD.. of the led tile: the aligned case's tile, one sector's rows further on
        let below = FlatTensor::new(
            smem.engine()
                .advance(Self::LEAD * smem.layout().stride()[0]),
            FlatLayout::new(TILER, smem.layout().stride()).unwrap_unchecked(),
        );
        move_values(
            &thr,
            &p.src.local_tile(TILER, tile),
            &below,
            &id.local_tile(TILER, tile),
        );
        let thr8 = PLAN8.get_slice(c.thread);
        let mut q = 0;
        while q < Self::LEAD / 8 {
            // input rows 64 by - LEAD + 8q .. + 8 (8-row tile 8 by - LEAD / 8 + q)
            let t8 = [8 * by - Self::LEAD / 8 + q, bx];
            if t8[0] >= 0 {
                let (s8, d8) = (
                    thr8.partition_S(&p.src.local_tile(TILER8, t8)),
                    thr8.partition_D(&smem.local_tile(TILER8, [q, 0])),
                );
                let c8 = thr8.partition_S(&id.local_tile(TILER8, t8));
                let mut v = 0;
                while v < 2 {
                    if c8.elem_less(v) {
                        d8.at(v).write(s8.at(v).read());
                    }
                    v += 1;
                }
            }
            q += 1;
        }
    }

    /// Step 1 when the output's rows are not sector-aligned: block `(bx, by)` writes output row
    /// `j = 64 bx + jj`'s window `64 by - s_j .. 64 by - s_j + 64`, `s_j` the sector offset of
    /// `dst(j, 64 by)`, so that every warp's 32 consecutive stores start a sector. The windows of
    /// a row's blocks tile it (`s_j` does not depend on `by`: 64 elements are whole sectors).
    /// Rows 16 apart share `s_j` (16 rows of 2 bytes or more are whole sectors), so a thread's
    /// rows `8k` from its first take one of two shifts, by the parity of `k`. A block whose
    /// windows all lie inside the output (rows `64 bx ..` inside, `by >= 1` and the window's
    /// end inside) moves its values without predicates; the others predicate each value by its
    /// coordinate, both ends.
    ///
    /// `smem_t` is the led tile read as an output tile, `(column, row)` ([`SMEM_LED_T`] for this
    /// kernel).
    ///
    /// # Safety
    /// As [`Kernel::thread`], after [`Transpose::led_rows_in`] into the same tile and the barrier.
    ///
    /// [`SMEM_LED_T`]: Transpose::SMEM_LED_T
    #[inline(always)]
    unsafe fn aligned_rows_out<E: Mem<T>, M: Mem<T>, L: Mem<T>>(
        p: &TransposeParams<E>,
        c: &Ctx<M>,
        smem_t: &FlatTensor<L, 2>,
    ) {
        let (thr, [bx, by]) = (PLAN.get_slice(c.thread), c.block);
        let g = thr.partition_D(&p.dst.local_tile(TILER, [bx, by]));
        let [out_rows, out_cols] = p.dst.shape();
        // `dst(j, 64 by + ii)`'s sector offset is `s_j + ii` (mod a sector)
        let shift = |v: i64| {
            let [_, ii] = thr.coord(v);
            (g.at(v).misalignment(STORE_ALIGN as usize) - ii).rem_euclid(Self::ALIGN)
        };
        let shifts = [shift(0), shift(2)];
        let s_of = |v: i64| shifts[(PLAN.value(v)[0] / 8 % 2) as usize];
        let mut r = [T::default(); VALUES as usize];
        if windows_inside(TILE, c.block, p.dst.shape()) {
            unroll16!(v => {
                let [jj, ii] = thr.coord(v);
                r[v as usize] = smem_t.at([jj, Self::LEAD + ii - s_of(v)]).read();
            });
            unroll16!(v => g.at(v).advance(-s_of(v)).write(r[v as usize]));
            return;
        }
        let mut ok = [false; VALUES as usize];
        unroll16!(v => {
            let [jj, ii] = thr.coord(v);
            let s = s_of(v);
            let (j, i) = (TILE * bx + jj, TILE * by + ii - s);
            ok[v as usize] = j < out_rows && i >= 0 && i < out_cols;
            if ok[v as usize] {
                r[v as usize] = smem_t.at([jj, Self::LEAD + ii - s]).read();
            }
        });
        unroll16!(v => if ok[v as usize] {
            g.at(v).advance(-s_of(v)).write(r[v as usize]);
        });
    }
}

/// The thread's rows of [`PLAN`] are `8k` from its first, values `2k` and `2k + 1`
/// ([`Transpose::aligned_rows_out`] takes the shifts of values 0 and 2 as those of even and odd
/// `k`).
const _: () = assert!(PLAN.value(0)[0] == 0 && PLAN.value(2)[0] == 8 && PLAN.value(15)[0] == 56);

/// [`PLAN`]'s values of thread `thr` of a tile from `s` to `d`; `c` is the identity tile of the tensor
/// that bounds it. A tile it covers moves without predicates, all 16 loads issued before the
/// first store; in the others each value moves where `elem_less` (the ragged edges).
///
/// # Safety
/// The values inside the tensor must be inside both tensors' memory.
#[inline(always)]
unsafe fn move_values<T: Copy + Default, A: Mem<T>, B: Mem<T>>(
    thr: &ThrCoords<'_, 2>,
    s: &FlatTensor<A, 2>,
    d: &FlatTensor<B, 2>,
    c: &CoordTensor<2>,
) {
    let (t_s, t_d) = (thr.partition_S(s), thr.partition_D(d));
    // each value's engines, once for both paths (a swizzled one costs a few instructions)
    let mut a_s = [t_s.at(0); VALUES as usize];
    let mut a_d = [t_d.at(0); VALUES as usize];
    unroll16!(v => {
        a_s[v as usize] = t_s.at(v);
        a_d[v as usize] = t_d.at(v);
    });
    if c.covers(TILER) {
        let mut r = [T::default(); VALUES as usize];
        unroll16!(v => r[v as usize] = a_s[v as usize].read());
        unroll16!(v => a_d[v as usize].write(r[v as usize]));
    } else {
        let t_c = thr.partition_S(c);
        unroll16!(v => if t_c.elem_less(v) {
            a_d[v as usize].write(a_s[v as usize].read());
        });
    }
}

/// Do all of block `(bx, by)`'s output windows (rows `e bx .. e (bx + 1)`, elements from `e by -
/// LEAD` to `e (by + 1)`, for `e x e` tiles) lie inside an output of shape `out`? Its rows inside,
/// `by >= 1` and `e (by + 1)` at most the output's columns.
#[inline(always)]
fn windows_inside(e: i64, [bx, by]: [i64; 2], [out_rows, out_cols]: [i64; 2]) -> bool {
    e * (bx + 1) <= out_rows && by >= 1 && e * (by + 1) <= out_cols
}

/// The boundary (bytes) the unaligned-output path starts each output row's window at: a 32-byte
/// sector (a 128-byte line measured no faster, with four times the extra rows: `docs/perf.md`).
pub const STORE_ALIGN: i64 = 32;

/// The 8-row tiles of the led rows.
pub const TILER8: [i64; 2] = [8, TILE];
/// (thread, value) -> column-major coordinate `i + 8 j` of an 8x64 tile: thread `(tx, ty)` in
/// `(32, 8)`, value `c` in 2: row `ty`, column `tx + 32c` (as [`TV`] on one row of its values).
pub const TV8: Layout = const_ok!(Layout::parse("((32,8),2):((8,1),256)"));
/// [`TV8`]'s partition of an 8x64 tile.
pub const PLAN8: TvCoords<2> = const_ok!(TvCoords::new(
    &const_ok!(make_tiled_copy_from_tv(
        &TV8,
        &const_ok!(IntTuple::from_ints(&TILER8))
    )),
    TILER8
));

impl<T: Copy + Default, S: SmemTile<T>, const LED: bool> Kernel for Transpose<T, S, LED> {
    type Shared = T;
    type Params<M: Space> = TransposeParams<M::Global<T>>;

    /// `dst`'s shape is `src`'s transposed; unit strides along the rows (mode 1) of both, where a
    /// warp's 32 accesses are consecutive. Any row stride.
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        prepare(p)
    }

    /// A block per input tile, `(ceil(cols / 64), ceil(rows / 64))`, of [`THREADS`] threads with
    /// the shared tile — led (`LED`), `ceil((rows + LEAD) / 64)` tiles along the rows (the
    /// windows shift back by up to a sector) and the led tile.
    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem_limit: i64) -> Geometry {
        let [rows, cols] = p.src.shape();
        let [tr, tc] = Self::tiles([if LED { rows + Self::LEAD } else { rows }, cols]);
        let elems = if LED { Self::ELEMS_LED } else { S::ELEMS };
        Geometry {
            grid: [tc, tr],
            threads: THREADS,
            smem_bytes: elems * core::mem::size_of::<T>() as i64,
        }
    }

    /// The input tile into the shared tile; after the barrier, the output tile from the shared
    /// tile (led: `Transpose::led_rows_in`, `Transpose::aligned_rows_out`).
    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let smem = |l| FlatTensor::new(S::engine(c.smem), l);
        if LED {
            Self::led_rows_in(p, c, &smem(Self::SMEM_LED));
            sync_threads();
            Self::aligned_rows_out(p, c, &smem(Self::SMEM_LED_T));
            return;
        }
        let thr = PLAN.get_slice(c.thread);
        let [bx, by] = c.block;
        let id = |t: &FlatTensor<M::Global<T>, 2>, at| {
            make_coord_tensor(t.shape()).local_tile(TILER, at)
        };
        let (src, dst) = (
            p.src.local_tile(TILER, [by, bx]),
            p.dst.local_tile(TILER, [bx, by]),
        );
        move_values(&thr, &src, &smem(Self::SMEM), &id(&p.src, [by, bx]));
        sync_threads();
        move_values(&thr, &smem(Self::SMEM_T), &dst, &id(&p.dst, [bx, by]));
    }
}

/// The led transpose moving pairs (a [`Kernel`]; the entries `transpose_pairs_led_<T>`): for a
/// `dst` whose rows are not whole sectors ([`led`]). As `Transpose<T, S, true>` it stages a
/// sector's worth of input rows above its 64x64 tile and writes output row `j`'s window
/// `64 by - s_j ..` from the sector it starts at; here both halves move pairs, one access of twice
/// the element's width.
///
/// - Before the barrier, `TransposePairsLed::pair_rows_in` reads each staged input row `r` as the
///   32 pairs from the pair boundary at or below its column `64 bx` (`a_r` elements below, 0 or 1),
///   and a 33rd where `a_r = 1`, into the led tile (`TransposePairsLed::led_tile`): `(LEAD + 64,
///   66):(S, 1)`, column `c` holding input column `64 bx - 1 + c`, rows `S` elements apart with `S`
///   of the parity of `src`'s row stride and a base that puts every pair on a pair boundary. Where
///   `src`'s rows are an odd number of elements apart (the ragged case), `S = 67`: rows two apart
///   are 67 words apart, and a warp's column reads after the barrier fall in 32 banks for 16-bit
///   elements (an even row stride takes `S = 66`, 2-way conflicts there).
/// - After it, `TransposePairsLed::pair_rows_out` writes each window as 32 pairs, a warp's store
///   128 bytes of whole sectors for 16-bit elements; a pair's two elements are read from the tile
///   one by one (the window's shift may be odd).
///
/// Blocks whose staged pairs would reach past the input's edges stage element by element
/// (`Transpose::led_rows_in`); blocks whose windows reach past the output's edges write element
/// by element (`Transpose::aligned_rows_out`; predicated pairs there cost 8 registers and a
/// block per SM: `docs/perf.md`). Before the pairs were staged, 16-bit elements moved at 73-75%
/// of a copy on the H200 (`docs/perf.md`); a 128x128 tile for 16-bit elements, as the quads',
/// measured slower.
pub struct TransposePairsLed<T>(PhantomData<T>);

/// The led transpose whose edge paths [`TransposePairsLed`] takes (its shared tile unused).
type Led<T> = Transpose<T, Padded<T>, true>;

/// (thread, value) -> pair `h + 2m + 80q` of the 16-bit staged rows as `(2, 40, 32)` pairs (row
/// `2m + h`, pair `q`): thread `(tx, ty)` in `(32, 8)`, value `k` in 10: row `ty + 8k`, pair `tx`.
/// A warp reads the 32 pairs of a row.
pub const PAIR_LED_TV16: Layout = const_ok!(Layout::parse("((32,8),10):((80,1),8)"));
/// As [`PAIR_LED_TV16`] for 32-bit elements, whose 72 staged rows are `(2, 36, 32)` pairs.
pub const PAIR_LED_TV32: Layout = const_ok!(Layout::parse("((32,8),9):((72,1),8)"));

/// The partition of the staged rows `(2, rows / 2, 32)` by `tv`.
const fn pair_led_plan(tv: &Layout, rows: i64) -> TvCoords<3> {
    let tiler = [2, rows / 2, PAIRS];
    const_ok!(TvCoords::new(
        &const_ok!(make_tiled_copy_from_tv(
            tv,
            &const_ok!(IntTuple::from_ints(&tiler))
        )),
        tiler
    ))
}

impl<T: Copy + Default> TransposePairsLed<T> {
    /// Input rows staged: `LEAD` above the tile, and its 64.
    const ROWS: i64 = Led::<T>::LEAD + TILE;
    /// The led tile's row: the block's 64 columns and one on either side.
    const COLS: i64 = TILE + 2;
    /// Elements of shared memory: `ROWS` rows of at most `COLS + 1` elements, from an offset of
    /// at most 1.
    pub const ELEMS: i64 = Self::ROWS * (Self::COLS + 1);
    /// The staged rows' partition into the threads' pairs.
    const IN: TvCoords<3> = if core::mem::size_of::<T>() == 2 {
        pair_led_plan(&PAIR_LED_TV16, Self::ROWS)
    } else {
        pair_led_plan(&PAIR_LED_TV32, Self::ROWS)
    };
    /// The output tile's partition into the threads' pairs: [`PAIR_IN`]'s (a warp on the 32 pairs
    /// of one row).
    const OUT: TvCoords<2> = PAIR_IN;
    /// The value whose row is 8 below a thread's first (rows 16 apart share a shift: a thread's
    /// rows `ty + 8k` take the shifts of values 0 and `V8`, by the parity of `k`).
    const V8: i64 = 1;
    /// Every staged row's 32 pairs, at most 16 a thread; 8 output pairs a thread, [`V8`](Self::V8)
    /// as said.
    const _SHAPE: () = assert!(
        Self::IN.threads() == THREADS
            && 8 * Self::IN.values() == Self::ROWS
            && Self::IN.values() <= 16
            && Self::ROWS <= THREADS
            && Self::OUT.threads() == THREADS
            && Self::OUT.values() == 8
            && Self::OUT.value(Self::V8)[0] == 8
            && Self::OUT.value(Self::V8)[1] == 0
    );

    /// The led tile's row stride for a `src` row stride `ld`: `COLS`, or one more
    /// where `ld` is odd (of `ld`'s parity, so that every row's pairs fall on pair boundaries).
    pub const fn row_stride(ld: i64) -> i64 {
        Self::COLS + ld.rem_euclid(2)
    }

    /// Block `(bx, by)`'s led tile: `first = src(64 by - LEAD, 64 bx)`, the first staged element;
    /// `a = [a_0, a_1]`, the elements from the pair boundary at or below `src(64 by - LEAD + h,
    /// 64 bx)` to it (rows two apart share it: `2 ld` elements are whole pairs); and the tile
    /// `(ROWS, COLS):(S, 1)` from element `1 - a_0` of shared memory (`S`
    /// [`row_stride`](Self::row_stride)), column `c` holding input column `64 bx - 1 + c`.
    /// Row `2m + h`'s pairs from `a_h` below column `64 bx`, at tile column `1 - a_h`, then start
    /// on pair boundaries: `1 - a_0 + (2m + h) S + 1 - a_h` is even (`S = ld`, `a_1 = a_0 + ld`
    /// modulo 2).
    #[inline(always)]
    fn led_tile<P: Mem<T>, M: Mem<T>>(
        p: &TransposeParams<P>,
        c: &Ctx<M>,
    ) -> (P, [i64; 2], FlatTensor<M, 2>) {
        let [bx, by] = c.block;
        let ld = p.src.layout().stride()[0];
        let first = p.src.at([TILE * by - Led::<T>::LEAD, TILE * bx]);
        let pair = 2 * core::mem::size_of::<T>();
        let a = [
            first.misalignment(pair),
            first.advance(ld).misalignment(pair),
        ];
        let shape = [Self::ROWS, Self::COLS];
        // SAFETY: positive extents, small strides
        let layout =
            unsafe { FlatLayout::new(shape, [Self::row_stride(ld), 1]).unwrap_unchecked() };
        (first, a, FlatTensor::new(c.smem.advance(1 - a[0]), layout))
    }

    /// May block `(bx, by)` stage pairs? Its windows lie inside the output ([`windows_inside`]:
    /// rows `64 by - LEAD .. 64 by + 64` inside the input) and columns `64 bx - 1 ..= 64 bx + 64`
    /// inside the input.
    #[inline(always)]
    fn pairs_inside<P: Engine>(p: &TransposeParams<P>, [bx, by]: [i64; 2]) -> bool {
        let cols = p.src.shape()[1];
        windows_inside(TILE, [bx, by], p.dst.shape()) && bx >= 1 && TILE * (bx + 1) < cols
    }

    /// Step 0 in a block that [may](Self::pairs_inside): the staged rows into the led tile as
    /// pairs, `(h, m, q)` for pair `q` of row `2m + h` from `a_h` below column `64 bx`, in `src`
    /// `(2, ROWS / 2, 33):(ld - a_1 + a_0, 2 ld, 2)` from `a_0` below `first` (`first` and `a` as
    /// [`led_tile`](Self::led_tile) gives them) and in the tile `(.., ..):(S - a_1 + a_0, 2 S,
    /// 2)` from column `1 - a_0` of its first row. The thread's [`IN`](Self::IN) pairs, and pair
    /// 32 of row `t` where `a_t = 1` (threads `t < ROWS`), all loaded before the first store.
    ///
    /// # Safety
    /// As [`Kernel::thread`], in a block that may stage pairs.
    #[inline(always)]
    unsafe fn pair_rows_in<P: Mem<T>, M: Mem<T>>(
        p: &TransposeParams<P>,
        c: &Ctx<M>,
        first: P,
        a: [i64; 2],
        tile: &FlatTensor<M, 2>,
    ) {
        let ld = p.src.layout().stride()[0];
        let s = tile.layout().stride()[0];
        let shape = [2, Self::ROWS / 2, PAIRS + 1];
        let d = a[1] - a[0];
        let src = FlatTensor::new(
            first.advance(-a[0]),
            FlatLayout::new(shape, [ld - d, 2 * ld, 2]).unwrap_unchecked(),
        );
        let smem = FlatTensor::new(
            tile.engine().advance(1 - a[0]),
            FlatLayout::new(shape, [s - d, 2 * s, 2]).unwrap_unchecked(),
        );
        let thr = Self::IN.get_slice(c.thread);
        let (t_s, t_m) = (thr.partition_S(&src), thr.partition_D(&smem));
        let n = Self::IN.values();
        let mut r = [[T::default(); 2]; 16];
        unroll16!(v => if v < n {
            r[v as usize] = t_s.at(v).read_pair();
        });
        // the pair that ends row `t`'s 64 columns, where they start one element below a pair
        let [h, m] = [c.thread % 2, c.thread / 2];
        let last = c.thread < Self::ROWS && if h == 0 { a[0] == 1 } else { a[1] == 1 };
        let mut e = [T::default(); 2];
        if last {
            e = src.at([h, m, PAIRS]).read_pair();
        }
        unroll16!(v => if v < n {
            t_m.at(v).write_pair(r[v as usize]);
        });
        if last {
            smem.at([h, m, PAIRS]).write_pair(e);
        }
    }

    /// Step 1 in a block whose windows lie inside the output ([`windows_inside`]): output row `j =
    /// 64 bx + jj`'s window `64 by - s_j .. 64 by - s_j + 64` (`s_j` the sector offset of `dst(j,
    /// 64 by)`), as pairs `dst(j, 64 by - s_j + 2q ..+ 2)` = input rows `64 by - s_j + 2q ..+ 2`
    /// of column `j`: `smem_t(jj, LEAD - s_j + 2q ..+ 2)`, `smem_t` the led tile read as an output
    /// tile (`(column, row)`). The windows of a row's blocks tile it. The thread's 8 pairs, their
    /// 16 reads before their 8 stores, without predicates.
    ///
    /// # Safety
    /// As [`Kernel::thread`], after the staging and the barrier, in a block whose windows lie
    /// inside the output.
    #[inline(always)]
    unsafe fn pair_rows_out<P: Mem<T>, M: Mem<T>>(
        p: &TransposeParams<P>,
        c: &Ctx<M>,
        smem_t: &FlatTensor<M, 2>,
    ) {
        let (thr, [bx, by]) = (Self::OUT.get_slice(c.thread), c.block);
        // 64 is even: whole pairs from the window's sector on
        let t_d = thr.partition_D(
            &p.dst
                .local_tile(TILER, [bx, by])
                .pairs_along(1)
                .unwrap_unchecked(),
        );
        // `dst(j, 64 by + 2q)`'s sector offset is `s_j + 2q` (mod a sector)
        let shift = |v: i64| {
            let [_, q] = thr.coord(v);
            (t_d.at(v).misalignment(STORE_ALIGN as usize) - 2 * q).rem_euclid(Led::<T>::ALIGN)
        };
        let shifts = [shift(0), shift(Self::V8)];
        let s_of = |v: i64| shifts[(Self::OUT.value(v)[0] / 8 % 2) as usize];
        let mut r = [[T::default(); 2]; 8];
        unroll8!(v => {
            let [jj, q] = thr.coord(v);
            let i = Led::<T>::LEAD + 2 * q - s_of(v);
            r[v as usize] = [smem_t.at([jj, i]).read(), smem_t.at([jj, i + 1]).read()];
        });
        unroll8!(v => t_d.at(v).advance(-s_of(v)).write_pair(r[v as usize]));
    }
}

impl<T: Copy + Default> Kernel for TransposePairsLed<T> {
    type Shared = T;
    type Params<M: Space> = TransposeParams<M::Global<T>>;

    /// As [`Transpose`]'s.
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        prepare(p)
    }

    /// The led transposes' grid (`ceil((rows + LEAD) / 64)` tiles along the rows), with the led
    /// tile of [`ELEMS`](Self::ELEMS) elements.
    fn geometry<M: Space>(p: &Self::Params<M>, sms: i64, smem_limit: i64) -> Geometry {
        Geometry {
            smem_bytes: Self::ELEMS * core::mem::size_of::<T>() as i64,
            ..Led::<T>::geometry::<M>(p, sms, smem_limit)
        }
    }

    /// The staged rows into the led tile as pairs (`TransposePairsLed::pair_rows_in`) where
    /// the block may, else element by element (`Transpose::led_rows_in`); after the barrier,
    /// the output windows as pairs (`TransposePairsLed::pair_rows_out`) in a block whose
    /// windows lie inside the output, else element by element (`Transpose::aligned_rows_out`).
    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let () = Self::_SHAPE;
        let (first, a, tile) = Self::led_tile(p, c);
        // the block's 64 columns: tile columns 1 .. 65
        let [s, _] = tile.layout().stride();
        let cols = tile.engine().advance(1);
        if Self::pairs_inside(p, c.block) {
            Self::pair_rows_in(p, c, first, a, &tile);
        } else {
            let staged = FlatLayout::new([Self::ROWS, TILE], [s, 1]).unwrap_unchecked();
            Led::<T>::led_rows_in(p, c, &FlatTensor::new(cols, staged));
        }
        sync_threads();
        let smem_t = FlatTensor::new(
            cols,
            FlatLayout::new([TILE, Self::ROWS], [1, s]).unwrap_unchecked(),
        );
        if windows_inside(TILE, c.block, p.dst.shape()) {
            Self::pair_rows_out(p, c, &smem_t);
        } else {
            Led::<T>::aligned_rows_out(p, c, &smem_t);
        }
    }
}

/// Pairs per tile row.
pub const PAIRS: i64 = TILE / 2;
/// The tile in pairs: 64 rows of 32 pairs of adjacent elements.
pub const PAIR_TILER: [i64; 2] = [TILE, PAIRS];
/// (thread, value) -> pair `r + 64 c` of an input tile (row `r`, elements `2c` and `2c + 1`):
/// thread `(tx, ty)` in `(32, 8)`, value `k` in 8: row `ty + 8k`, pair `tx`. A warp reads the 32
/// pairs of a row: 128 bytes of 16-bit elements, 256 of 32-bit ones.
pub const PAIR_TV_IN: Layout = const_ok!(Layout::parse("((32,8),8):((64,1),8)"));
/// (thread, value) -> pair `r + 64 c` of an output tile: value `(h, k)` in `(2, 4)`: row
/// `2(ty + 8k) + h`, pair `tx`. The two rows `2p`, `2p + 1` of a value pair are the columns `2p`,
/// `2p + 1` of the input tile's rows `2tx`, `2tx + 1`: a 2x2 block transposed in registers.
pub const PAIR_TV_OUT: Layout = const_ok!(Layout::parse("((32,8),(2,4)):((64,2),(1,16))"));
/// [`PAIR_TV_IN`]'s partition of a tile of pairs.
pub const PAIR_IN: TvCoords<2> = const_ok!(TvCoords::new(
    &const_ok!(make_tiled_copy_from_tv(
        &PAIR_TV_IN,
        &const_ok!(IntTuple::from_ints(&PAIR_TILER))
    )),
    PAIR_TILER
));
/// [`PAIR_TV_OUT`]'s partition of a tile of pairs.
pub const PAIR_OUT: TvCoords<2> = const_ok!(TvCoords::new(
    &const_ok!(make_tiled_copy_from_tv(
        &PAIR_TV_OUT,
        &const_ok!(IntTuple::from_ints(&PAIR_TILER))
    )),
    PAIR_TILER
));
/// The shared tile of pairs, `(r % 2, r / 2, c) -> element`: pair `c` of row `r` at element
/// `64 (r % 2) + 130 (r / 2) + 2c`, rows two by two with one pair of padding after each two. A
/// warp's pair reads after the barrier (rows `2q` or `2q + 1` for lanes `q`, one pair column) then
/// fall in distinct banks, as its row writes before it do: `tessel analyze` and
/// `host/tests/exec.rs` check both.
pub const PAIR_SMEM: FlatLayout<3> = const_ok!(FlatLayout::new([2, PAIRS, PAIRS], [64, 130, 2]));

/// [`PAIR_SMEM`] element by element: element `(i, j)` of the input tile at `[i % 2, i / 2, j % 2,
/// j / 2]`.
pub const PAIR_SMEM_ELEMS: FlatLayout<4> =
    const_ok!(FlatLayout::new([2, PAIRS, 2, PAIRS], [64, 130, 1, 2]));

/// The coordinate in [`PAIR_SMEM_ELEMS`] of element `(i, j)` of the input tile.
#[inline(always)]
const fn pair_elem([i, j]: [i64; 2]) -> [i64; 4] {
    [i % 2, i / 2, j % 2, j / 2]
}

const _: () = assert!(
    PAIR_IN.values() == 8 && PAIR_OUT.values() == 8 && PAIR_IN.threads() == THREADS,
    "unroll8 covers a thread's pairs"
);

/// The transpose moving pairs of adjacent elements (a [`Kernel`]): a 64x64 tile wholly inside both
/// tensors, with rows starting on pair boundaries, goes through the shared tile [`PAIR_SMEM`] as
/// pairs (one access of twice the element's width, half the instructions of [`Transpose`]); after
/// the barrier each thread reads two pairs from consecutive input rows and writes their transpose,
/// two pairs of consecutive output rows. The other tiles (the ragged edges, odd row strides or a
/// base off a pair boundary) go through the same shared tile element by element
/// ([`PAIR_SMEM_ELEMS`]), as [`Transpose`] moves its tiles: [`PLAN`]'s values, all 16 loads before
/// the first store in a whole tile, predicated by `elem_less` in the others.
pub struct TransposePairs<T>(PhantomData<T>);

impl<T: Copy + Default> TransposePairs<T> {
    /// Elements of shared memory: [`PAIR_SMEM`]'s last pair included.
    pub const ELEMS: i64 = PAIR_SMEM.dot([1, PAIRS - 1, PAIRS - 1]) + 2;

    /// May this block move its tile as pairs? The tile is whole and both tiles' rows start on
    /// pair boundaries.
    #[inline(always)]
    fn pairs<A: Mem<T>, B: Mem<T>>(
        s: &FlatTensor<A, 2>,
        d: &FlatTensor<B, 2>,
        c: &CoordTensor<2>,
    ) -> bool {
        c.covers(TILER)
            && s.layout().stride()[0] % 2 == 0
            && d.layout().stride()[0] % 2 == 0
            && s.engine().aligned_pair()
            && d.engine().aligned_pair()
    }

    /// A tile that cannot move as pairs: thread `t`'s [`PLAN`] values of the input tile `s` into
    /// the shared tile element by element, then, after the barrier, of the output tile `d` from
    /// it (`d(a, b)` = input `(b, a)`); `cs` and `cd` are the identity tiles of `s` and `d`.
    ///
    /// # Safety
    /// The values inside the tensor must be inside both tensors' memory.
    #[inline(always)]
    unsafe fn elements<E: Mem<T>, M: Mem<T>>(
        t: i64,
        (s, cs): (&FlatTensor<E, 2>, &CoordTensor<2>),
        (d, cd): (&FlatTensor<E, 2>, &CoordTensor<2>),
        smem: &FlatTensor<M, 4>,
    ) {
        let thr = PLAN.get_slice(t);
        let t_s = thr.partition_S(s);
        let to = |v: i64| smem.at(pair_elem(thr.coord(v)));
        move16(|v| t_s.at(v), to, cs.covers(TILER), &thr.partition_S(cs));
        sync_threads();
        let t_d = thr.partition_D(d);
        let from = |v: i64| {
            let [a, b] = thr.coord(v);
            smem.at(pair_elem([b, a]))
        };
        move16(from, |v| t_d.at(v), cd.covers(TILER), &thr.partition_S(cd));
    }
}

/// The 16 values `dst(v) = src(v)`: all loads before the first store when `whole`, else
/// each where `c.elem_less(v)`.
///
/// # Safety
/// `src(v)` and `dst(v)` must be inside their tensors' memory where they are moved.
#[inline(always)]
unsafe fn move16<T: Copy + Default, A: Mem<T>, B: Mem<T>>(
    src: impl Fn(i64) -> A,
    dst: impl Fn(i64) -> B,
    whole: bool,
    c: &ThrCoordTensor<'_, 2>,
) {
    if whole {
        let mut r = [T::default(); VALUES as usize];
        unroll16!(v => r[v as usize] = src(v).read());
        unroll16!(v => dst(v).write(r[v as usize]));
    } else {
        unroll16!(v => if c.elem_less(v) {
            dst(v).write(src(v).read());
        });
    }
}

/// A block per `tiler` input tile, `(ceil(cols / tiler[1]), ceil(rows / tiler[0]))`, of
/// [`THREADS`] threads with `elems` elements of shared memory: the pair and quad transposes'
/// launch.
fn tile_grid<T, E: Engine>(p: &TransposeParams<E>, tiler: [i64; 2], elems: i64) -> Geometry {
    let [tr, tc] = tiles_of(p.src.shape(), tiler);
    Geometry {
        grid: [tc, tr],
        threads: THREADS,
        smem_bytes: elems * core::mem::size_of::<T>() as i64,
    }
}

impl<T: Copy + Default> Kernel for TransposePairs<T> {
    type Shared = T;
    type Params<M: Space> = TransposeParams<M::Global<T>>;

    /// As [`Transpose`]'s: `dst` of `src`'s shape transposed, unit strides along the rows.
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        prepare(p)
    }

    /// As [`Transpose`]'s, with the shared tile of pairs.
    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem_limit: i64) -> Geometry {
        tile_grid::<T, M::Global<T>>(p, TILER, Self::ELEMS)
    }

    /// The input tile's pairs into the shared tile; after the barrier, each thread's four 2x2
    /// blocks from the shared tile, transposed, into the output tile. A tile that cannot move as
    /// pairs moves element by element (`TransposePairs::elements`).
    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let [bx, by] = c.block;
        let src = p.src.local_tile(TILER, [by, bx]);
        let dst = p.dst.local_tile(TILER, [bx, by]);
        let id = make_coord_tensor(p.src.shape()).local_tile(TILER, [by, bx]);
        if !Self::pairs(&src, &dst, &id) {
            let id_d = make_coord_tensor(p.dst.shape()).local_tile(TILER, [bx, by]);
            let smem = FlatTensor::new(c.smem, PAIR_SMEM_ELEMS);
            Self::elements(c.thread, (&src, &id), (&dst, &id_d), &smem);
            return;
        }
        let smem = FlatTensor::new(c.smem, PAIR_SMEM);
        // a whole 64x64 tile: 64 rows of 32 pairs (64 is even)
        let pairs = |t: &FlatTensor<M::Global<T>, 2>| t.pairs_along(1).unwrap_unchecked();
        let thr = PAIR_IN.get_slice(c.thread);
        let t_s = thr.partition_S(&pairs(&src));
        let mut r = [[T::default(); 2]; 8];
        unroll8!(v => r[v as usize] = t_s.at(v).read_pair());
        unroll8!(v => {
            let [row, col] = thr.coord(v);
            smem.at([row % 2, row / 2, col]).write_pair(r[v as usize]);
        });
        sync_threads();
        let thr = PAIR_OUT.get_slice(c.thread);
        let t_d = thr.partition_D(&pairs(&dst));
        unroll4!(kk => {
            // output rows 2p and 2p + 1, pair q: input rows 2q and 2q + 1, pair p
            let [row, q] = thr.coord(2 * kk);
            let pp = row / 2;
            let a = smem.at([0, q, pp]).read_pair();
            let b = smem.at([1, q, pp]).read_pair();
            t_d.at(2 * kk).write_pair([a[0], b[0]]);
            t_d.at(2 * kk + 1).write_pair([a[1], b[1]]);
        });
    }
}

/// Quads (4 adjacent elements) per row of a 64-wide tile.
pub const QUADS: i64 = TILE / 4;
/// The 64x64 tile in quads: 64 rows of 16 quads.
pub const QUAD_TILER: [i64; 2] = [TILE, QUADS];
/// (thread, value) -> quad `r + 64 q` of a 64x64 input tile (row `r`, elements `4q .. 4q + 4`):
/// thread `(q, s)` in `(16, 16)`, value `k` in 4: row `s + 16k`, quad `q`. A half-warp reads the
/// 16 quads of a row: 256 bytes of 32-bit elements.
pub const QUAD_TV_IN: Layout = const_ok!(Layout::parse("((16,16),4):((64,1),16)"));
/// (thread, value) -> quad `r + 64 q` of a 64x64 output tile: thread `(b, a)` in `(16, 16)`,
/// value `k` in 4: row `4a + k`, quad `b`. The four rows `4a .. 4a + 4` of quad `b` are the
/// columns `4a .. 4a + 4` of the input tile's rows `4b .. 4b + 4`: a 4x4 block transposed in
/// registers.
pub const QUAD_TV_OUT: Layout = const_ok!(Layout::parse("((16,16),4):((64,4),1)"));
/// The 64x64 quad tile's swizzle, `Sw<4,2,6>`: quad `q` of row `r` is stored at quad
/// `q ^ (r / 4 % 16)` of that row. A half-warp's quad reads after the barrier (rows `4b + i` for
/// lanes `b`, one quad column) then fall in distinct banks, as its row writes before it do;
/// `tessel analyze` and `tests/analyze_kernels.rs` check both.
pub const QUAD_SWIZZLE: Swizzle = const_ok!(Swizzle::new(4, 2, 6));
/// The 64x64 shared tile element by element, under [`QUAD_SWIZZLE`]: `(64,64):(64,1)`.
pub const QUAD_SMEM: FlatLayout<2> = const_ok!(FlatLayout::new(TILER, [TILE, 1]));

/// The wide quad tile's edge, for 16-bit elements: 128 elements, rows of 256 bytes both in the
/// input and in the output (the 64-wide tile's are 128 bytes).
pub const WIDE: i64 = 128;
/// The 128x128 tile in quads: 128 rows of 32 quads.
pub const WIDE_TILER: [i64; 2] = [WIDE, WIDE / 4];
/// (thread, value) -> quad `r + 128 q` of a 128x128 input tile: thread `(q, s)` in `(32, 8)`,
/// value `k` in 16: row `s + 8k`, quad `q`. A warp reads the 32 quads of a row, 256 bytes.
pub const WIDE_TV_IN: Layout = const_ok!(Layout::parse("((32,8),16):((128,1),8)"));
/// (thread, value) -> quad `r + 128 q` of a 128x128 output tile: thread `(b, a)` in `(32, 8)`,
/// value `(k, j)` in `(4, 4)`: row `4a + 32j + k`, quad `b`: four 4x4 blocks, each as in
/// [`QUAD_TV_OUT`]. A warp writes the 32 quads of an output row, 256 bytes.
pub const WIDE_TV_OUT: Layout = const_ok!(Layout::parse("((32,8),(4,4)):((128,4),(1,32))"));
/// The wide tile's swizzle, `Sw<4,2,7>`: quad `q` of row `r` at quad `q ^ (r / 4 % 16)`, so a
/// half-warp's reads after the barrier (rows `4b + i`, lanes `b`, one quad column) fall in distinct
/// banks.
pub const WIDE_SWIZZLE: Swizzle = const_ok!(Swizzle::new(4, 2, 7));
/// The 128x128 shared tile element by element, under [`WIDE_SWIZZLE`]: `(128,128):(128,1)`.
pub const WIDE_SMEM: FlatLayout<2> = const_ok!(FlatLayout::new([WIDE, WIDE], [WIDE, 1]));

/// A quad TV layout's partition of a tile of quads.
const fn quad_plan(tv: &Layout, tiler: [i64; 2]) -> TvCoords<2> {
    const_ok!(TvCoords::new(
        &const_ok!(make_tiled_copy_from_tv(
            tv,
            &const_ok!(IntTuple::from_ints(&tiler))
        )),
        tiler
    ))
}

/// The transpose moving quads of adjacent elements (a [`Kernel`]) through an `E x E` tile (`E` 64
/// or [`WIDE`]): a tile wholly inside both tensors, with rows starting on quad boundaries, goes
/// through the swizzled shared tile ([`QUAD_SWIZZLE`] over [`QUAD_SMEM`], or [`WIDE_SWIZZLE`] over
/// [`WIDE_SMEM`]) as quads, one access of four times the element's width (a quarter of
/// [`Transpose`]'s accesses, half of [`TransposePairs`]'); after the barrier each thread reads four
/// quads from consecutive input rows and writes their transpose, four quads of consecutive output
/// rows (once per 4x4 block it owns: 1 at `E = 64`, 4 at 128). The other tiles (the ragged edges,
/// row strides that are not multiples of 4, a base off a quad boundary) go element by element
/// through padded 64x64 tiles ([`Padded`]: plain offsets, where a swizzled element costs registers
/// that would cap every block's residency), one per 64x64 part, [`PLAN`]'s values as
/// [`TransposePairs`] moves them.
pub struct TransposeQuads<T, const E: i64 = 64>(PhantomData<T>);

impl<T: Copy + Default, const E: i64> TransposeQuads<T, E> {
    /// The tile.
    pub const TILER: [i64; 2] = [E, E];
    /// Its 64x64 parts per edge (the element-by-element path's tiles).
    const PARTS: i64 = E / TILE;
    /// The input tile's partition into the threads' quads.
    const IN: TvCoords<2> = if E == WIDE {
        quad_plan(&WIDE_TV_IN, WIDE_TILER)
    } else {
        quad_plan(&QUAD_TV_IN, QUAD_TILER)
    };
    /// The output tile's partition into the threads' 4x4 blocks, four values each.
    const OUT: TvCoords<2> = if E == WIDE {
        quad_plan(&WIDE_TV_OUT, WIDE_TILER)
    } else {
        quad_plan(&QUAD_TV_OUT, QUAD_TILER)
    };
    /// The shared tile's swizzle.
    const SWIZZLE: Swizzle = if E == WIDE {
        WIDE_SWIZZLE
    } else {
        QUAD_SWIZZLE
    };
    /// The shared tile element by element, row-major.
    const SMEM: FlatLayout<2> = if E == WIDE { WIDE_SMEM } else { QUAD_SMEM };
    /// The padded tile of the element-by-element path.
    const PAD: FlatLayout<2> = const_ok!(FlatLayout::from_layout(&Padded::<T>::LAYOUT));
    /// Elements of shared memory: the quads' `E x E` tile (a swizzle moves quads within their
    /// row) or the padded tiles, the larger.
    pub const ELEMS: i64 = if Self::PARTS * Self::PARTS * Padded::<T>::ELEMS > E * E {
        Self::PARTS * Self::PARTS * Padded::<T>::ELEMS
    } else {
        E * E
    };
    /// `E` is 64 or [`WIDE`]; a thread has at most 16 quads, 4 per 4x4 block.
    const _SHAPE: () = assert!(
        (E == TILE || E == WIDE)
            && Self::IN.threads() == THREADS
            && Self::OUT.threads() == THREADS
            && Self::IN.values() <= 16
            && Self::OUT.values() == Self::IN.values()
            && Self::OUT.values() % 4 == 0
    );

    /// The shared tile with `layout`, through the swizzle.
    #[inline(always)]
    fn smem<M: Mem<T>>(smem: M, layout: FlatLayout<2>) -> FlatTensor<SwizzleEngine<M>, 2> {
        FlatTensor::new(SwizzleEngine::new(smem, Self::SWIZZLE), layout)
    }

    /// May this block move its tile as quads? The tile is whole and both tiles' rows start on
    /// quad boundaries.
    #[inline(always)]
    fn quads<A: Mem<T>, B: Mem<T>>(
        s: &FlatTensor<A, 2>,
        d: &FlatTensor<B, 2>,
        c: &CoordTensor<2>,
    ) -> bool {
        c.covers(Self::TILER)
            && s.layout().stride()[0] % 4 == 0
            && d.layout().stride()[0] % 4 == 0
            && s.engine().aligned_quad()
            && d.engine().aligned_quad()
    }

    /// The element-by-element path: each 64x64 part `(i, j)` of the block's input tile through
    /// its padded shared tile, [`PLAN`]'s 16 values at a time; after the barrier, each part's
    /// transpose into the output.
    ///
    /// # Safety
    /// As [`Kernel::thread`].
    #[inline(always)]
    unsafe fn elements<E2: Mem<T>, M: Mem<T>>(p: &TransposeParams<E2>, c: &Ctx<M>) {
        let [bx, by] = c.block;
        let thr = PLAN.get_slice(c.thread);
        // input part n = (i, j) of the tile: 64x64 tile (P by + i, P bx + j) of src, and its
        // padded shared tile
        let part = |n: i64| {
            let (i, j) = (n / Self::PARTS, n % Self::PARTS);
            let smem = FlatTensor::new(c.smem.advance(n * Padded::<T>::ELEMS), Self::PAD);
            ([Self::PARTS * by + i, Self::PARTS * bx + j], smem)
        };
        let mut n = 0;
        while n < Self::PARTS * Self::PARTS {
            let (at, smem) = part(n);
            let t_s = thr.partition_S(&p.src.local_tile(TILER, at));
            let id = make_coord_tensor(p.src.shape()).local_tile(TILER, at);
            let to = |v: i64| smem.at(thr.coord(v));
            move16(|v| t_s.at(v), to, id.covers(TILER), &thr.partition_S(&id));
            n += 1;
        }
        sync_threads();
        let mut n = 0;
        while n < Self::PARTS * Self::PARTS {
            let ([i, j], smem) = part(n);
            let t_d = thr.partition_D(&p.dst.local_tile(TILER, [j, i]));
            let id = make_coord_tensor(p.dst.shape()).local_tile(TILER, [j, i]);
            let from = |v: i64| {
                let [a, b] = thr.coord(v);
                smem.at([b, a])
            };
            move16(from, |v| t_d.at(v), id.covers(TILER), &thr.partition_S(&id));
            n += 1;
        }
    }
}

impl<T: Copy + Default, const E: i64> Kernel for TransposeQuads<T, E> {
    type Shared = T;
    type Params<M: Space> = TransposeParams<M::Global<T>>;

    /// As [`Transpose`]'s: `dst` of `src`'s shape transposed, unit strides along the rows.
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        prepare(p)
    }

    /// A block per `E x E` input tile, with the swizzled tile (or the padded ones).
    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem_limit: i64) -> Geometry {
        tile_grid::<T, M::Global<T>>(p, Self::TILER, Self::ELEMS)
    }

    /// The input tile's quads into the shared tile; after the barrier, each thread's 4x4 blocks
    /// from the shared tile, transposed, into the output tile. A tile that cannot move as quads
    /// moves element by element (`TransposeQuads::elements`).
    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let () = Self::_SHAPE;
        let [bx, by] = c.block;
        let src = p.src.local_tile(Self::TILER, [by, bx]);
        let dst = p.dst.local_tile(Self::TILER, [bx, by]);
        let id = make_coord_tensor(p.src.shape()).local_tile(Self::TILER, [by, bx]);
        if !Self::quads(&src, &dst, &id) {
            Self::elements(p, c);
            return;
        }
        // a whole tile: E rows of E / 4 quads (E is a multiple of 4)
        let quads = |t: &FlatTensor<M::Global<T>, 2>| t.vectors_along(1, 4).unwrap_unchecked();
        let smem = Self::smem(c.smem, Self::SMEM)
            .vectors_along(1, 4)
            .unwrap_unchecked();
        let n = Self::IN.values();
        let thr = Self::IN.get_slice(c.thread);
        let (t_s, t_m) = (thr.partition_S(&quads(&src)), thr.partition_D(&smem));
        let mut r = [[T::default(); 4]; 16];
        unroll16!(v => if v < n {
            r[v as usize] = t_s.at(v).read_quad();
        });
        unroll16!(v => if v < n {
            t_m.at(v).write_quad(r[v as usize]);
        });
        sync_threads();
        let thr = Self::OUT.get_slice(c.thread);
        let t_d = thr.partition_D(&quads(&dst));
        unroll4!(j => if 4 * j < n {
            // output rows 4a + k (values 4j + k), quad b: input rows 4b + i, quad a
            let [row, b] = thr.coord(4 * j);
            let a = row / 4;
            let mut q = [[T::default(); 4]; 4];
            unroll4!(i => q[i as usize] = smem.at([4 * b + i, a]).read_quad());
            unroll4!(k => {
                let k = k as usize;
                t_d.at(4 * j + k as i64).write_quad([q[0][k], q[1][k], q[2][k], q[3][k]]);
            });
        });
    }
}
