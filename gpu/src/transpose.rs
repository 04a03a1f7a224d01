//! The tiled transpose: `dst[j][i] = src[i][j]` for a row-major `rows x cols` `src`, through a
//! shared-memory tile.
//!
//! Block `(bx, by)` moves the 64x64 input tile at rows `64 by ..`, columns `64 bx ..`. [`TV`] maps
//! (thread, value) to a tile coordinate. Phase 1 (before the barrier) reads the input tile with it,
//! a warp reading 32 consecutive elements of a row, and writes the tile into shared memory in
//! row order; phase 2 uses the same layout for the *output* tile — a warp writes 32 consecutive
//! elements of an output row — so it reads shared memory down a column. The shared-memory tile
//! layout ([`SmemTile`]) keeps those column reads free of bank conflicts: rows padded by one
//! 32-bit word ([`Padded`]) or a `Swizzle` of the 32-bit words ([`Swizzled`]).
//! Every access outside `rows x cols` is predicated off.

use core::marker::PhantomData;
use layout_core::{const_ok, ComposedLayout, FlatLayout, IntTuple, Layout, Swizzle};

/// The tile edge.
pub const TILE: i64 = 64;
/// Threads per block (one dimension).
pub const THREADS: i64 = 256;
/// Values per thread and phase.
pub const VALUES: i64 = TILE * TILE / THREADS;
/// (thread, value) -> column-major tile coordinate `i + 64 j` (row `i`, column `j`), with
/// thread `t = (tx, ty)` in `(32, 8)` and value `v = (c, k)` in `(2, 8)`: row `ty + 8k`, column
/// `tx + 32c`. Consecutive threads of a warp take consecutive columns of one row.
pub const TV: Layout = const_ok!(Layout::parse("((32,8),(2,8)):((64,1),(2048,8))"));

/// [`TV`] as two layouts into the tile's rows and columns: `TV(x) == ROWS(x) + 64 COLS(x)`, each
/// leaf of `TV` moving along one coordinate only (what composing with an identity tensor gives in
/// CuTe). Being layouts, each splits as `thread part + value part`: a thread computes its part
/// once, and the value part is a constant in the unrolled loops.
pub const ROWS: Layout = split(&TV, TILE, false);
/// See [`ROWS`].
pub const COLS: Layout = split(&TV, TILE, true);

/// The row (`col == false`) or column part of `l` over a column-major `rows x _` codomain: leaf
/// strides below `rows` move along rows, multiples of `rows` along columns. Evaluated at compile
/// time: a layout that does not split is a compile error.
const fn split(l: &Layout, rows: i64, col: bool) -> Layout {
    let (s, d) = (l.shapes(), l.strides());
    let mut out = [0i64; layout_core::MAX_LEAVES];
    let mut reach = 0; // the largest row a coordinate reaches
    let mut k = 0;
    while k < d.len() {
        let along_cols = d[k] % rows == 0;
        if !along_cols {
            reach += (s[k] - 1) * d[k];
        }
        out[k] = match (along_cols, col) {
            (true, true) => d[k] / rows,
            (false, false) => d[k],
            _ => 0,
        };
        k += 1;
    }
    assert!(
        reach < rows,
        "a coordinate's row part reaches past the tile"
    );
    const_ok!(Layout::from_parts(l.shape(), out.split_at(d.len()).0))
}

const _: () = assert!(VALUES == 16, "unroll16 covers the values");

/// How a transpose thread reaches memory.
pub trait TransposeMem {
    /// One element in registers.
    type E: Copy;
    /// The input element at `off`.
    ///
    /// # Safety
    /// `off` must be inside the input.
    unsafe fn load_global(&mut self, off: i64) -> Self::E;
    /// Writes the output element at `off`.
    ///
    /// # Safety
    /// `off` must be inside the output.
    unsafe fn store_global(&mut self, off: i64, v: Self::E);
    /// The block's shared tile at `off`.
    ///
    /// # Safety
    /// `off` must be inside the block's shared memory.
    unsafe fn load_shared(&mut self, off: i64) -> Self::E;
    /// Writes the block's shared tile at `off`.
    ///
    /// # Safety
    /// `off` must be inside the block's shared memory.
    unsafe fn store_shared(&mut self, off: i64, v: Self::E);
}

/// A shared-memory layout for the 64x64 tile: `(row, column) -> element offset`.
pub trait SmemTile {
    /// Its name, as the kernels' names carry it.
    const NAME: &'static str;
    /// Elements of shared memory it spans.
    const ELEMS: i64;
    /// The offset of tile element `(i, j)`.
    fn offset(i: i64, j: i64) -> i64;
}

/// Rows padded by one 32-bit word: `(64,64):(64 + 4/sizeof(T), 1)`.
pub struct Padded<T>(PhantomData<T>);
impl<T> Padded<T> {
    /// The layout.
    pub const LAYOUT: Layout = const_ok!(Layout::from_parts(
        const_ok!(IntTuple::from_ints(&[TILE, TILE])),
        &[TILE + 4 / core::mem::size_of::<T>() as i64, 1]
    ));
}
impl<T> SmemTile for Padded<T> {
    const NAME: &'static str = "pad";
    const ELEMS: i64 = Self::LAYOUT.cosize();
    #[inline(always)]
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
    /// The layout.
    pub const LAYOUT: ComposedLayout = const_ok!(ComposedLayout::new(
        const_ok!(Swizzle::new(5, Self::M, 6 - Self::M)),
        const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&[TILE, TILE])),
            &[TILE, 1]
        )),
    ));
}
impl<T> SmemTile for Swizzled<T> {
    const NAME: &'static str = "swizzle";
    const ELEMS: i64 = Self::LAYOUT.cosize();
    #[inline(always)]
    fn offset(i: i64, j: i64) -> i64 {
        Self::LAYOUT
            .swizzle()
            .apply(Self::LAYOUT.layout().dot(&[i, j]))
    }
}

/// The global tensors of a transpose, `(rows, cols):(cols, 1)` in and `(cols, rows):(rows, 1)` out.
#[derive(Clone, Copy, Debug)]
pub struct Problem {
    /// The input.
    pub input: FlatLayout<2>,
    /// The output.
    pub output: FlatLayout<2>,
}

/// The thread and value modes of [`ROWS`] and [`COLS`].
const ROWS_T: Layout = const_ok!(ROWS.get(0));
const ROWS_V: Layout = const_ok!(ROWS.get(1));
const COLS_T: Layout = const_ok!(COLS.get(0));
const COLS_V: Layout = const_ok!(COLS.get(1));

/// Thread `t`'s part of its tile coordinates.
#[inline(always)]
const fn thread_part(t: i64) -> (i64, i64) {
    (ROWS_T.call(t), COLS_T.call(t))
}

/// Value `v`'s part (a constant where `v` is).
#[inline(always)]
const fn value_part(v: i64) -> (i64, i64) {
    (ROWS_V.call(v), COLS_V.call(v))
}

/// Thread `t` on the tile at tile row `br`, tile column `bc` of `g`: its part of the tile
/// coordinates, its first element's coordinates in `g`, whether the whole tile is inside `g` (no
/// predicates needed), and that element's offset.
#[inline(always)]
const fn start(g: &FlatLayout<2>, br: i64, bc: i64, t: i64) -> ((i64, i64), (i64, i64), bool, i64) {
    let (ti, tj) = thread_part(t);
    let (i0, j0) = (br * TILE + ti, bc * TILE + tj);
    let inside = g.contains([br * TILE + TILE - 1, bc * TILE + TILE - 1]);
    ((ti, tj), (i0, j0), inside, g.dot([i0, j0]))
}

impl Problem {
    /// A `rows x cols` transpose; `None` when the extents are not positive or overflow.
    #[inline(always)]
    pub const fn new(rows: i64, cols: i64) -> Option<Self> {
        match (
            FlatLayout::row_major([rows, cols]),
            FlatLayout::row_major([cols, rows]),
        ) {
            (Ok(input), Ok(output)) => Some(Self { input, output }),
            _ => None,
        }
    }
    /// The grid: `(ceil(cols / 64), ceil(rows / 64))` blocks.
    pub const fn grid(&self) -> (i64, i64) {
        let [rows, cols] = self.input.shape();
        ((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE)
    }

    /// Phase 1 of thread `t` in block `(bx, by)`: its values of the input tile into shared memory,
    /// all loads issued before the first store. A tile wholly inside the input is moved without
    /// predicates.
    ///
    /// # Safety
    /// `m` must reach the whole input and a shared tile of `S::ELEMS` elements.
    #[inline(always)]
    pub unsafe fn load_tile<S: SmemTile, M: TransposeMem>(
        &self,
        m: &mut M,
        bx: i64,
        by: i64,
        t: i64,
    ) {
        let ((ti, tj), (i0, j0), inside, g0) = start(&self.input, by, bx, t);
        let mut regs: [Option<M::E>; VALUES as usize] = [None; VALUES as usize];
        unroll16!(v => {
            let (vi, vj) = value_part(v);
            if inside || self.input.contains([i0 + vi, j0 + vj]) {
                regs[v as usize] = Some(m.load_global(g0 + self.input.dot([vi, vj])));
            }
        });
        unroll16!(v => {
            if let Some(e) = regs[v as usize] {
                let (vi, vj) = value_part(v);
                m.store_shared(S::offset(ti + vi, tj + vj), e);
            }
        });
    }

    /// Phase 2 of thread `t` in block `(bx, by)`, after the barrier: its values of the output tile
    /// (output row `64 bx + i` is input column `64 bx + i`) from shared memory.
    ///
    /// # Safety
    /// `m` must reach the whole output and the shared tile phase 1 wrote.
    #[inline(always)]
    pub unsafe fn store_tile<S: SmemTile, M: TransposeMem>(
        &self,
        m: &mut M,
        bx: i64,
        by: i64,
        t: i64,
    ) {
        let ((ti, tj), (i0, j0), inside, g0) = start(&self.output, bx, by, t);
        unroll16!(v => {
            let (vi, vj) = value_part(v);
            if inside || self.output.contains([i0 + vi, j0 + vj]) {
                let e = m.load_shared(S::offset(tj + vj, ti + vi));
                m.store_global(g0 + self.output.dot([vi, vj]), e);
            }
        });
    }
}
