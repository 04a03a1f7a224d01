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

/// Runs `$body` with `$v` bound to each of `0..16` in turn, unrolled: a register array indexed by
/// a run-time value would go to local memory.
macro_rules! unroll16 {
    ($v:ident => $body:expr) => {
        unroll16!(@ $v => $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $v:ident => $body:expr; $($n:literal)*) => {
        $({
            let $v: i64 = $n;
            $body;
        })*
    };
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
    pub const LAYOUT: ComposedLayout = ComposedLayout::new(
        const_ok!(Swizzle::new(5, Self::M, 6 - Self::M)),
        const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&[TILE, TILE])),
            &[TILE, 1]
        )),
    );
}
impl<T> SmemTile for Swizzled<T> {
    const NAME: &'static str = "swizzle";
    const ELEMS: i64 = Self::LAYOUT.cosize();
    #[inline(always)]
    fn offset(i: i64, j: i64) -> i64 {
        Self::LAYOUT.swizzle.apply(Self::LAYOUT.layout.dot(&[i, j]))
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
    /// all loads issued before the first store.
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
        let (r0, c0) = (by * TILE, bx * TILE);
        let at = |v: i64| {
            let x = TV.call(t + v * THREADS);
            (x % TILE, x / TILE)
        };
        let mut regs: [Option<M::E>; VALUES as usize] = [None; VALUES as usize];
        unroll16!(v => {
            let (i, j) = at(v);
            let c = [r0 + i, c0 + j];
            if self.input.contains(c) {
                regs[v as usize] = Some(m.load_global(self.input.dot(c)));
            }
        });
        unroll16!(v => {
            if let Some(e) = regs[v as usize] {
                let (i, j) = at(v);
                m.store_shared(S::offset(i, j), e);
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
        let (r0, c0) = (bx * TILE, by * TILE);
        unroll16!(v => {
            let x = TV.call(t + v * THREADS);
            let (i, j) = (x % TILE, x / TILE);
            let c = [r0 + i, c0 + j];
            if self.output.contains(c) {
                let e = m.load_shared(S::offset(j, i));
                m.store_global(self.output.dot(c), e);
            }
        });
    }
}
