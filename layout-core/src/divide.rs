//! Division (tiling): `logical_divide` and its zipped / tiled / flat rearrangements.
//!
//! ```text
//! Layout Shape : (M, N, L, ...)        Tiler : <TileM, TileN>
//! logical_divide : ((TileM,RestM), (TileN,RestN), L, ...)
//! zipped_divide  : ((TileM,TileN), (RestM,RestN,L,...))
//! tiled_divide   : ((TileM,TileN), RestM, RestN, L, ...)
//! flat_divide    : (TileM, TileN, RestM, RestN, L, ...)
//! ```

use crate::complement::complement_into;
use crate::composition::compose_into;
use crate::error::{LayoutError, Result};
use crate::layout::{in_place, product_of, Layout};
use crate::tiler::{by_mode, flat_modes, hier_unzip, tiled_modes, Splitter, Tiler};
use crate::tri;

/// `logical_divide(A, B) = A o (B, complement(B, size(A)))`: mode 0 holds the elements `B` points
/// to (the tile), mode 1 iterates over the tiles.
///
/// Post-conditions:
/// - `rank(R) == 2`
/// - mode 0 of `R` equals `composition(A, B)` as a function
/// - `R(i) == A(C(i))` for all `0 <= i < size(R)`, `C = (B, complement(B, size(A)))`
/// - `size(R) == size(A)` when `size(B)` tiles divide `A` (`cosize` of the tiling `== size(A)`)
///
/// # Example
/// Seed 003's 1-D logical divide of `(4,2,3):(2,1,8)` by `4:2`:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(4,2,3):(2,1,8)").unwrap();
/// let r = logical_divide(&a, &Layout::parse("4:2").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "((2,2),(2,3)):((4,1),(2,8))");
/// ```
pub const fn logical_divide(a: &Layout, b: &Layout) -> Result<Layout> {
    let mut out = Err(LayoutError::Capacity);
    divide_at(a, b, &mut out);
    out
}

#[cfg_attr(not(target_arch = "nvptx64"), inline(never))]
const fn divide_at(a: &Layout, b: &Layout, out: &mut Result<Layout>) {
    in_place!(out, r => divide_into(a.shapes(), a.strides(), b, r))
}

/// [`logical_divide`] of the flat `a_s:a_d` (only `A`'s leaves matter) by `B`, appended to the
/// build `r` as one mode of it.
pub(crate) const fn divide_into(
    a_s: &[i64],
    a_d: &[i64],
    b: &Layout,
    r: &mut Layout,
) -> Result<()> {
    let mut bc = Layout::raw();
    tri!(bc.put_open());
    tri!(bc.put_layout(b));
    tri!(complement_into(
        b.shapes(),
        b.strides(),
        product_of(a_s),
        &mut bc
    ));
    tri!(bc.put_close());
    tri!(bc.check());
    compose_into(a_s, a_d, &bc, r)
}

/// `logical_divide` by a tiler: mode `i` of `A` divided by `B_i` (`_` keeps it); a layout tiler
/// divides `A` as a whole.
///
/// Post-conditions: `rank(R) == rank(A)` for a by-mode tiler; mode `i` of `R` is
/// `logical_divide(mode i of A, B_i)`.
///
/// # Example
/// Seed 003's 2-D logical divide of `(9,(4,8)):(59,(13,1))` by `<3:3, (2,4):(1,8)>`: shape
/// `((3,3),(8,4))`, the first mode of each mode the composition `(3,(2,4)):(177,(13,2))`:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(9,(4,8)):(59,(13,1))").unwrap();
/// let r = logical_divide_tiler(&a, &Tiler::parse("<3:3,(2,4):(1,8)>").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "((3,3),((2,4),(2,2))):((177,59),((13,2),(26,1)))");
/// assert_eq!(r.get(0).unwrap().get(0).unwrap().to_string(), "3:177");
/// assert_eq!(r.get(1).unwrap().get(0).unwrap().to_string(), "(2,4):(13,2)");
/// ```
pub const fn logical_divide_tiler(a: &Layout, t: &Tiler) -> Result<Layout> {
    by_mode(a, t, Splitter::Divide)
}

/// `zipped_divide(A, B)`: `((TileM,TileN,...), (RestM,RestN,...,L,...))`.
///
/// Post-conditions: `rank(R) == 2`; `layout<0>(R) == composition(A, B)` as a function
/// (seed 003); `R` is `logical_divide_tiler(A, B)` with its modes regrouped (same image).
///
/// # Example
/// Seed 003's zipped divide (its 2-D divide example): shape `((3,8),(3,4))`, mode 0 the
/// composition, and tile `(1,2)` at offset `zd(0,(1,2))`:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(9,(4,8)):(59,(13,1))").unwrap();
/// let b = Tiler::parse("<3:3,(2,4):(1,8)>").unwrap();
/// let zd = zipped_divide(&a, &b).unwrap();
/// assert_eq!(zd.to_string(), "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))");
/// assert_eq!(zd.get(0).unwrap(), composition_tiler(&a, &b).unwrap());
/// let at = |s: &str| IntTuple::parse(s).unwrap();
/// assert_eq!(zd.crd2idx(&at("(0,(1,2))")), zd.get(1).unwrap().crd2idx(&at("(1,2)")));
/// ```
pub const fn zipped_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    hier_unzip(a, t, Splitter::Divide)
}

/// `tiled_divide(A, B)`: `((TileM,TileN,...), RestM, RestN, ..., L, ...)`.
///
/// Post-conditions: mode 0 is mode 0 of `zipped_divide(A, B)`, the other modes are the modes of
/// its mode 1; the same function of 1-D coordinates.
///
/// # Example
/// Seed 003's 2-D divide example in the `tiled_divide` arrangement of its table:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(9,(4,8)):(59,(13,1))").unwrap();
/// let r = tiled_divide(&a, &Tiler::parse("<3:3,(2,4):(1,8)>").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "((3,(2,4)),3,(2,2)):((177,(13,2)),59,(26,1))");
/// ```
pub const fn tiled_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    tiled_modes(&tri!(zipped_divide(a, t)))
}

/// `flat_divide(A, B)`: `(TileM, TileN, ..., RestM, RestN, ..., L, ...)`.
///
/// Post-conditions: the modes of mode 0, then those of mode 1, of `zipped_divide(A, B)`; the same
/// function of 1-D coordinates.
///
/// # Example
/// Seed 003's 2-D divide example in the `flat_divide` arrangement of its table (shape
/// `(3,8,3,4)` mode by mode):
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(9,(4,8)):(59,(13,1))").unwrap();
/// let r = flat_divide(&a, &Tiler::parse("<3:3,(2,4):(1,8)>").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "(3,(2,4),3,(2,2)):(177,(13,2),59,(26,1))");
/// assert_eq!(r.shape().product_each().unwrap().to_string(), "(3,8,3,4)");
/// ```
pub const fn flat_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    flat_modes(&tri!(zipped_divide(a, t)))
}
