//! Thread-value layouts and tiled copies (seed 002): `make_tiled_copy_tv(atom, thr, val)` with a
//! copy atom of 32, 64 or 128 bits that one thread issues, `partition_S` / `partition_D` of a
//! tensor for thread `tid`, and `retile`.
//!
//! The construction is CuTe's: `layout_mn = raked_product(thr, val)` maps a tile coordinate
//! `(m, n)` to `(thread, value)`; its right inverse, shaped `(size(thr), size(val))`, is the TV
//! layout `(thread, value) -> m + M n`; the tile is `product_each(shape(layout_mn))`. The value
//! mode is then split by the atom, `(atom_vals, rest)`, so that mode 0 of a thread's partition is
//! one atom's access. `make_tiled_copy_from_tv` takes the TV layout as given instead (one element
//! per access).

use crate::composition::composition;
use crate::divide::zipped_divide;
use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::inverse::right_inverse;
use crate::layout::Layout;
use crate::product::raked_product;
use crate::tensor::{Engine, Tensor};
use crate::tiler::Tiler;
use crate::tri;

/// A tiled copy: which thread moves which element of a tile, in atoms of `atom_vals` elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledCopy {
    /// `(thread, value) -> m + M n`, the TV layout over the tile.
    pub layout_tv: Layout,
    /// `(thread, (atom_value, atom))` -> `m + M n`: the TV layout with the value mode split by the
    /// atom.
    pub thrval: Layout,
    /// The tile's shape `(M, N)`.
    pub tile: IntTuple,
    /// Elements per atom: `atom_bits / elem_bits`.
    pub atom_vals: i64,
}

/// [`make_tiled_copy_tv`] of `threads` and `values` both row-major (`LayoutRight`): thread `t`
/// at `(t / threads[1], t % threads[1])` of the thread grid, its values `values[0] x values[1]`
/// row-major, the tile `(threads[0] values[0], threads[1] values[1])`: the cut of a row-wise
/// kernel. Post-conditions as [`make_tiled_copy_tv`]'s.
pub const fn make_tiled_copy_row_major(
    threads: [i64; 2],
    values: [i64; 2],
    atom_bits: i64,
    elem_bits: i64,
) -> Result<TiledCopy> {
    let thr = tri!(Layout::row_major(tri!(IntTuple::from_ints(&threads))));
    let val = tri!(Layout::row_major(tri!(IntTuple::from_ints(&values))));
    make_tiled_copy_tv(&thr, &val, atom_bits, elem_bits)
}

/// `make_tiled_copy(Copy_Atom<atom_bits, elem_bits>, thr, val)`.
///
/// Post-conditions: `layout_tv` is a bijection from `(size(thr), size(val))` onto the tile's
/// `size(tile)` elements (each element moved by exactly one thread, once); each atom's
/// `atom_vals` values are consecutive in the value mode.
pub const fn make_tiled_copy_tv(
    thr: &Layout,
    val: &Layout,
    atom_bits: i64,
    elem_bits: i64,
) -> Result<TiledCopy> {
    if !(atom_bits == 32 || atom_bits == 64 || atom_bits == 128) {
        return Err(LayoutError::UnsupportedAtom { bits: atom_bits });
    }
    if elem_bits <= 0 {
        return Err(LayoutError::NonPositiveShape { value: elem_bits });
    }
    if atom_bits % elem_bits != 0 {
        return Err(LayoutError::NotDivisible {
            value: atom_bits,
            by: elem_bits,
        });
    }
    let atom_vals = atom_bits / elem_bits;
    let nv = val.size();
    if nv % atom_vals != 0 {
        return Err(LayoutError::NotDivisible {
            value: nv,
            by: atom_vals,
        });
    }
    let layout_mn = tri!(raked_product(thr, val));
    let tile = tri!(layout_mn.shape().product_each());
    let tv_shape = tri!(IntTuple::from_ints(&[thr.size(), nv]));
    let layout_tv = tri!(composition(
        &tri!(right_inverse(&layout_mn)),
        &tri!(Layout::col_major(tv_shape))
    ));
    let split = tri!(Layout::from_parts(
        tri!(IntTuple::from_ints(&[atom_vals, nv / atom_vals])),
        // a single atom's mode is `1:0`, as CuTe writes size-1 modes
        &[1, if nv == atom_vals { 0 } else { atom_vals }]
    ));
    let thrval = tri!(Layout::concat(&[
        tri!(layout_tv.get(0)),
        tri!(composition(&tri!(layout_tv.get(1)), &split)),
    ]));
    Ok(TiledCopy {
        layout_tv,
        thrval,
        tile,
        atom_vals,
    })
}

/// `make_tiled_copy_impl(Copy_Atom<UniversalCopy<T>>, layout_tv, tile)`: the tiled copy whose TV
/// layout `(thread, value) -> m + M n` is given directly, over a tile of shape `tile`, each value
/// one access of one element (`atom_vals == 1`).
///
/// For TV layouts that [`make_tiled_copy_tv`]'s raked product cannot give, where a thread's values
/// are spread across the tile rather than adjacent: e.g. the transpose's
/// `((32,8),(2,8)):((64,1),(2048,8))` over `(64,64)`, thread `(x, y)` at row `y`, column `x`, and
/// its value `(c, k)` `8 k` rows and `32 c` columns further (a warp on 32 consecutive elements of
/// a row at every value).
///
/// Post-conditions: those of [`make_tiled_copy_tv`] (`layout_tv` a bijection onto the tile's
/// elements, checked: `Err(NotBijective)` otherwise; `Err(RankMismatch)` for a TV layout that is
/// not `(thread, value)`); `thrval` is `layout_tv` with the value mode as `(1, values)`.
pub const fn make_tiled_copy_from_tv(layout_tv: &Layout, tile: &IntTuple) -> Result<TiledCopy> {
    if layout_tv.rank() != 2 {
        return Err(LayoutError::RankMismatch {
            expected: 2,
            found: layout_tv.rank(),
        });
    }
    let size = tri!(Layout::col_major(*tile)).size();
    let reached = tri!(right_inverse(layout_tv)).size();
    if layout_tv.size() != size || reached != size {
        return Err(LayoutError::NotBijective { size, reached });
    }
    let vals = tri!(layout_tv.get(1));
    let nv = vals.size();
    let split = tri!(Layout::from_parts(
        tri!(IntTuple::from_ints(&[1, nv])),
        &[1, if nv == 1 { 0 } else { 1 }]
    ));
    let thrval = tri!(Layout::concat(&[
        tri!(layout_tv.get(0)),
        tri!(composition(&vals, &split)),
    ]));
    Ok(TiledCopy {
        layout_tv: *layout_tv,
        thrval,
        tile: *tile,
        atom_vals: 1,
    })
}

/// The size of mode `i` of `l` (0 when `l` has no such mode): a TV layout's threads (mode 0) or
/// values (mode 1).
pub(crate) const fn mode_size(l: &Layout, i: usize) -> i64 {
    match l.get(i) {
        Ok(m) => m.size(),
        Err(_) => 0,
    }
}

impl TiledCopy {
    /// Threads.
    pub const fn threads(&self) -> i64 {
        mode_size(&self.layout_tv, 0)
    }
    /// Values per thread and tile.
    pub const fn values(&self) -> i64 {
        mode_size(&self.layout_tv, 1)
    }
    /// Thread `tid`'s part of a tensor with layout `l` (rank 2, tiled by the copy's tile):
    /// `((atom_vals, atoms), rest_m, rest_n)` and the offset of its origin. `partition_S` and
    /// `partition_D` are this, for the source and the destination.
    ///
    /// Post-condition: over all `tid < threads()`, the partitions' elements are those of `l`
    /// over whole tiles, each exactly once.
    pub const fn partition(&self, l: &Layout, tid: i64) -> Result<(Layout, i64)> {
        if tid < 0 || tid >= self.threads() {
            return Err(LayoutError::IndexOutOfRange {
                index: tid,
                size: self.threads(),
            });
        }
        let (thr, vals) = tri!(self.partition_modes(l));
        Ok((vals, thr.call(tid)))
    }
    /// The two halves of every thread's partition of `l`: `thread -> offset of its origin`, and
    /// the layout of its values `((atom_vals, atoms), rest_m, rest_n)`, the same for all threads.
    /// For a `const` `l` both are constants; a kernel then evaluates only the first, at its
    /// thread index.
    pub const fn partition_modes(&self, l: &Layout) -> Result<(Layout, Layout)> {
        let zd = tri!(zipped_divide(l, &tri!(Tiler::shape(&self.tile))));
        let tv = tri!(composition(&tri!(zd.get(0)), &self.thrval));
        let rest = tri!(zd.get(1));
        let mut r = Layout::empty();
        tri!(r.push(&tri!(tv.get(1))));
        let mut k = 0;
        while k < rest.rank() {
            tri!(r.push(&tri!(rest.get(k))));
            k += 1;
        }
        Ok((tri!(tv.get(0)), r))
    }
    /// `retile(L)`: a thread's values (any layout of `values()` elements per tile, e.g. a
    /// register fragment) regrouped as `((atom_vals, atoms), rest...)`, mode 0 one atom.
    pub const fn retile(&self, l: &Layout) -> Result<Layout> {
        if l.size() % self.atom_vals != 0 {
            return Err(LayoutError::NotDivisible {
                value: l.size(),
                by: self.atom_vals,
            });
        }
        let shape = tri!(IntTuple::from_ints(&[
            self.atom_vals,
            l.size() / self.atom_vals
        ]));
        composition(l, &tri!(Layout::col_major(shape)))
    }
}

/// One thread's view of a tiled copy (`get_slice(tid)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThrCopy {
    /// The tiled copy.
    pub copy: TiledCopy,
    /// The thread.
    pub tid: i64,
}

impl TiledCopy {
    /// `get_slice(tid)`: thread `tid`'s view (`Err` when `tid >= threads()`).
    pub const fn get_slice(&self, tid: i64) -> Result<ThrCopy> {
        if tid < 0 || tid >= self.threads() {
            return Err(LayoutError::IndexOutOfRange {
                index: tid,
                size: self.threads(),
            });
        }
        Ok(ThrCopy { copy: *self, tid })
    }
}

impl ThrCopy {
    /// `partition_S(tensor)`: the thread's source values, `((atom_vals, atoms), rest_m, rest_n)`.
    #[allow(non_snake_case)]
    pub fn partition_S<E: Engine>(&self, t: &Tensor<E>) -> Result<Tensor<E>> {
        t.try_with_layout(self.copy.partition(t.layout(), self.tid)?)
    }
    /// `partition_D(tensor)`: the thread's destination values (the same partition: the atoms
    /// move whole values, so source and destination are cut alike).
    #[allow(non_snake_case)]
    pub fn partition_D<E: Engine>(&self, t: &Tensor<E>) -> Result<Tensor<E>> {
        self.partition_S(t)
    }
}
