//! The cut of a row-wise kernel (RMSNorm, LayerNorm, softmax): each row of an `M x N` matrix gets
//! `warps` warps, a block `32 max(4, warps)` threads (so `rows = 4 / warps` rows when `warps < 4`,
//! else one), and the tiled copy of `(rows, 32 warps)` row-major threads of `(1, v)` values gives
//! each thread one 128-bit atom (`v` elements) of its row per tile: tiles of
//! `(rows, 32 warps v)`, block `b` walking the tiles `(b, k)` along its rows. A thread's
//! [`RowSlice`] gives its atom of each tile: of a tensor, of a vector broadcast over the rows, and
//! of the identity tensor that predicates it.

use crate::ctx::Geometry;
use crate::frag::Atom;
use crate::mem::Mem;
use crate::real::Real;
use layout_core::{
    const_ok, make_coord_tensor, make_tiled_copy_row_major, CoordTensor, Engine, FlatTensor,
    ThrCoordTensor, ThrCoords, ThrTensor, TvCoords,
};

/// A row-wise kernel's cut of its tiles, for `warps` warps per row and elements of `bits` bits.
/// Use it as a constant (an associated `const`, or `&const { Rows::new(..) }`): a copy in a local
/// variable puts its tables on the thread's stack.
#[derive(Clone, Copy, Debug)]
pub struct Rows {
    /// Warps per row: 1, 2, 4, 8 or 16.
    pub warps: i64,
    /// Elements per 128-bit atom.
    pub v: i64,
    /// Threads per block: `32 max(4, warps)`.
    pub threads: i64,
    /// Rows per block: `threads / (32 warps)`.
    pub rows: i64,
    /// The tile: `rows` rows of `32 warps v` columns.
    pub tiler: [i64; 2],
    /// A thread's values of a tile, as coordinates: one atom, `v` consecutive columns of a row.
    pub plan: TvCoords<2>,
}

impl Rows {
    /// The cut for `warps` warps per row (a divisor of 16) and elements of `bits` bits (a divisor
    /// of 128); a constant (it panics at compile time otherwise).
    pub const fn new(warps: i64, bits: i64) -> Self {
        assert!(warps >= 1 && 16 % warps == 0, "warps per row divide 16");
        let v = 128 / bits;
        let threads = 32 * if warps < 4 { 4 } else { warps };
        let rows = threads / (32 * warps);
        let tiler = [rows, 32 * warps * v];
        let copy = const_ok!(make_tiled_copy_row_major(
            [rows, 32 * warps],
            [1, v],
            128,
            bits
        ));
        let plan = const_ok!(TvCoords::new(&copy, tiler));
        assert!(
            plan.values() == v && plan.threads() == threads,
            "one atom per thread"
        );
        Self {
            warps,
            v,
            threads,
            rows,
            tiler,
            plan,
        }
    }

    /// Tiles along a row of `n` elements.
    pub const fn tiles(&self, n: i64) -> i64 {
        ceil_div(n, self.tiler[1])
    }

    /// The launch: a block of `threads` per `rows` rows of `m`, `smem_bytes` of shared memory.
    pub const fn geometry(&self, m: i64, smem_bytes: i64) -> Geometry {
        Geometry {
            grid: [ceil_div(m, self.rows), 1],
            threads: self.threads,
            smem_bytes,
        }
    }

    /// Are `t`'s rows 16-byte aligned (its origin and its row stride in elements), so that its
    /// whole atoms may move as 128-bit accesses ([`RowSlice::whole_tiles`])?
    #[inline(always)]
    pub fn aligned<T: Copy, E: Mem<T>>(&self, t: &FlatTensor<E, 2>) -> bool {
        t.engine().aligned16() && t.layout().stride()[0] % self.v == 0
    }

    /// A row-wise kernel's checks of its input `x` and output `y`: unit column strides (returned
    /// made static), one shape `(M, N)`, `y`'s rows disjoint (no two threads write one element),
    /// and with `whole` (every atom whole and 16-byte aligned: 128-bit accesses) `N` and both
    /// row strides multiples of `v`. `Err` names the condition that fails.
    #[inline(always)]
    pub fn check<E: Engine>(
        &self,
        x: FlatTensor<E, 2>,
        y: FlatTensor<E, 2>,
        whole: bool,
    ) -> Result<[FlatTensor<E, 2>; 2], &'static str> {
        let (Some(x), Some(y)) = (x.with_static_stride(1, 1), y.with_static_stride(1, 1)) else {
            return Err("a row-wise kernel needs unit column strides in x and y");
        };
        let (n, ld) = (
            x.shape()[1],
            [x.layout().stride()[0], y.layout().stride()[0]],
        );
        if y.shape() != x.shape() {
            Err("a row-wise kernel needs x and y of the same shape")
        } else if whole && n % self.v != 0 {
            Err("a row-wise kernel needs N a multiple of the vector width (16 bytes: 4 f32, 8 bf16)")
        } else if whole && (ld[0] % self.v != 0 || ld[1] % self.v != 0) {
            Err("a row-wise kernel needs row strides that are multiples of the vector width (16-byte aligned rows)")
        } else if x.shape()[0] > 1 && ld[1].unsigned_abs() < n as u64 {
            Err("a row-wise kernel needs y's rows not to overlap (|row stride| >= N)")
        } else {
            Ok([x, y])
        }
    }

    /// The check of a vector of a row-wise kernel (`w`, `b`): `N` elements, unit stride (returned
    /// made static).
    #[inline(always)]
    pub fn check_vector<E: Engine>(
        w: FlatTensor<E, 1>,
        n: i64,
    ) -> Result<FlatTensor<E, 1>, &'static str> {
        match w.with_static_stride(0, 1) {
            Some(w) if w.shape() == [n] => Ok(w),
            _ => Err("a row-wise kernel needs its vectors (w, b) of N elements with unit strides"),
        }
    }

    /// `get_slice`: thread `thread` of block `block` over a matrix of `shape` `(M, N)`.
    #[inline(always)]
    pub const fn get_slice(&self, block: i64, thread: i64, shape: [i64; 2]) -> RowSlice<'_> {
        RowSlice {
            thr: self.plan.get_slice(thread),
            tiler: self.tiler,
            v: self.v,
            block,
            id: make_coord_tensor(shape),
        }
    }
}

/// `ceil(a / b)` for `a >= 0`, `b > 0`: tiles of `b` covering `a`.
#[inline(always)]
const fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// One thread's atoms of the tiles `(block, k)` of an `(M, N)` matrix ([`Rows::get_slice`]).
#[derive(Clone, Copy, Debug)]
pub struct RowSlice<'a> {
    thr: ThrCoords<'a, 2>,
    tiler: [i64; 2],
    v: i64,
    block: i64,
    id: CoordTensor<2>,
}

impl<'a> RowSlice<'a> {
    /// Tiles along the row: `ceil(N / tiler[1])`.
    #[inline(always)]
    pub const fn tiles(&self) -> i64 {
        ceil_div(self.id.bound()[1], self.tiler[1])
    }

    /// The atom's coordinates in tile `k`, in the whole matrix (its predicates).
    #[inline(always)]
    pub fn coords(&self, k: i64) -> ThrCoordTensor<'a, 2> {
        self.thr
            .partition_S(&self.id.local_tile(self.tiler, [self.block, k]))
    }

    /// Is the atom's first element of tile `k` inside the matrix? (Its whole atom, when the
    /// elements per atom divide `N`.)
    #[inline(always)]
    pub fn inside(&self, k: i64) -> bool {
        self.coords(k).elem_less(0)
    }

    /// Is every element of the atom of tile `k` inside the matrix?
    #[inline(always)]
    pub fn whole(&self, k: i64) -> bool {
        self.coords(k).elem_less(self.v - 1)
    }

    /// The atom of tile `(block, k)` of `t`, an `(M, N)` tensor.
    #[inline(always)]
    pub fn part<E: Engine>(&self, t: &FlatTensor<E, 2>, k: i64) -> ThrTensor<'a, E, 2> {
        self.thr
            .partition_S(&t.local_tile(self.tiler, [self.block, k]))
    }

    /// The leading tiles `0..w` in which the atom is [`whole`](RowSlice::whole) and, with
    /// `aligned` (16-byte aligned rows), may move as one 128-bit access: none for a row past `M`
    /// or rows not aligned. A loop tests `k < w` first, one comparison, and the identity tensor
    /// only past it.
    ///
    /// Post-condition: with `aligned`, `whole(k)` exactly for `k < w` (`k >= 0`).
    #[inline(always)]
    pub fn whole_tiles(&self, aligned: bool) -> i64 {
        let [r, c] = self.coords(0).coord(0);
        let [m, n] = self.id.bound();
        if !aligned || r >= m || c + self.v > n {
            0
        } else {
            (n - self.v - c) / self.tiler[1] + 1
        }
    }

    /// The atom of tile `(block, k)` of `t`: one 128-bit load where `whole` (the atom whole and
    /// 16-byte aligned: `k <` [`whole_tiles`](RowSlice::whole_tiles)), else element by element
    /// under the identity tensor's predicate, `fill` outside the matrix.
    ///
    /// # Safety
    /// `t` of the matrix's shape, its memory reaching it.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn load<T: Real, E: Mem<T>>(
        &self,
        t: &FlatTensor<E, 2>,
        k: i64,
        whole: bool,
        fill: f32,
    ) -> Atom<T> {
        if whole {
            Atom::load(&self.part(t, k))
        } else {
            Atom::load_if(&self.part(t, k), &self.coords(k), fill)
        }
    }

    /// Writes `a` to the atom of tile `(block, k)` of `t` as [`RowSlice::load`] reads it: one
    /// 128-bit store, or its elements inside the matrix one by one.
    ///
    /// # Safety
    /// As [`RowSlice::load`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn store<T: Real, E: Mem<T>>(
        &self,
        a: &Atom<T>,
        t: &FlatTensor<E, 2>,
        k: i64,
        whole: bool,
    ) {
        if whole {
            a.store(&self.part(t, k))
        } else {
            a.store_if(&self.part(t, k), &self.coords(k))
        }
    }

    /// The atom of tile `(0, k)` of the vector `w` (`N` elements) broadcast over the rows: the
    /// elements of `w` at the atom's columns.
    #[inline(always)]
    pub fn part_of_row<E: Engine>(&self, w: &FlatTensor<E, 1>, k: i64) -> ThrTensor<'a, E, 2> {
        self.thr.partition_S(&w.broadcast_tile(self.tiler, k))
    }
}

#[cfg(test)]
mod tests {
    use super::Rows;

    #[test]
    fn blocks_of_four_rows_or_one() {
        let one = Rows::new(1, 16);
        assert_eq!((one.threads, one.rows, one.tiler), (128, 4, [4, 256]));
        let two = Rows::new(2, 32);
        assert_eq!((two.threads, two.rows, two.tiler), (128, 2, [2, 256]));
        let many = Rows::new(16, 32);
        assert_eq!((many.threads, many.rows, many.tiler), (512, 1, [1, 2048]));
        assert_eq!(many.tiles(2048), 1);
        assert_eq!(many.tiles(2049), 2);
        // thread 33 of two warps per row: row 0, columns 4 * 33 ..
        assert_eq!(two.plan.get_slice(33).coord(0), [0, 132]);
        assert_eq!(two.plan.get_slice(64).coord(3), [1, 3]);
    }

    #[test]
    fn a_row_slice_predicates_and_partitions_its_atoms() {
        use layout_core::{Counting, FlatLayout, FlatTensor};
        let zero = Counting {
            start: 0,
            codomain: None,
        };
        // 4 rows of one warp, 4 f32 per atom: tiles (4, 128); a 6 x 130 matrix, row stride 200
        let cut = Rows::new(1, 32);
        let x = FlatTensor::new(zero, FlatLayout::new([6, 130], [200, 1]).unwrap());
        let w = FlatTensor::new(zero, FlatLayout::new([130], [3]).unwrap());
        // block 1, thread 32 + 5: row 4 + 1, columns 20.. of each tile
        let s = cut.get_slice(1, 37, x.shape());
        assert_eq!(s.tiles(), 2);
        assert_eq!(s.coords(1).coord(2), [5, 128 + 22]);
        assert!(s.inside(0) && s.whole(0) && !s.inside(1) && !s.whole(1));
        assert_eq!(s.part(&x, 1).at(2).start, 5 * 200 + 150);
        assert_eq!(s.part_of_row(&w, 1).at(2).start, 3 * 150);
        // thread 32 * 2: row 6, past M
        assert!(!cut.get_slice(1, 64, x.shape()).inside(0));
        // a straddling atom: thread 0's atom of tile 1 is columns 128..132 of 130
        let s = cut.get_slice(0, 0, x.shape());
        assert!(s.inside(1) && !s.whole(1));
        // whole_tiles: the tiles whole(k) holds in, for every thread of both blocks
        for (b, t) in (0..2).flat_map(|b| (0..128).map(move |t| (b, t))) {
            let s = cut.get_slice(b, t, x.shape());
            let w = s.whole_tiles(true);
            assert!(
                (0..4).all(|k| s.whole(k) == (k < w)),
                "block {b} thread {t}: {w}"
            );
            assert_eq!(s.whole_tiles(false), 0);
        }
    }
}
