//! Division (tiling): `logical_divide` and its zipped / tiled / flat rearrangements.
//!
//! ```text
//! Layout Shape : (M, N, L, ...)        Tiler : <TileM, TileN>
//! logical_divide : ((TileM,RestM), (TileN,RestN), L, ...)
//! zipped_divide  : ((TileM,TileN), (RestM,RestN,L,...))
//! tiled_divide   : ((TileM,TileN), RestM, RestN, L, ...)
//! flat_divide    : (TileM, TileN, RestM, RestN, L, ...)
//! ```

use crate::complement::complement;
use crate::composition::composition;
use crate::error::Result;
use crate::layout::Layout;
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
pub const fn logical_divide(a: &Layout, b: &Layout) -> Result<Layout> {
    let c = tri!(complement(b, a.size()));
    composition(a, &tri!(Layout::concat(&[*b, c])))
}

/// `logical_divide` by a tiler: mode `i` of `A` divided by `B_i` (`_` keeps it); a layout tiler
/// divides `A` as a whole.
///
/// Post-conditions: `rank(R) == rank(A)` for a by-mode tiler; mode `i` of `R` is
/// `logical_divide(mode i of A, B_i)`.
pub const fn logical_divide_tiler(a: &Layout, t: &Tiler) -> Result<Layout> {
    by_mode(a, t, Splitter::Divide)
}

/// `zipped_divide(A, B)`: `((TileM,TileN,...), (RestM,RestN,...,L,...))`.
///
/// Post-conditions: `rank(R) == 2`; `layout<0>(R) == composition(A, B)` as a function
/// (seed 003); `R` is `logical_divide_tiler(A, B)` with its modes regrouped (same image).
pub const fn zipped_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    hier_unzip(a, t, Splitter::Divide)
}

/// `tiled_divide(A, B)`: `((TileM,TileN,...), RestM, RestN, ..., L, ...)`.
///
/// Post-conditions: mode 0 is mode 0 of `zipped_divide(A, B)`, the other modes are the modes of
/// its mode 1; the same function of 1-D coordinates.
pub const fn tiled_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    tiled_modes(&tri!(zipped_divide(a, t)))
}

/// `flat_divide(A, B)`: `(TileM, TileN, ..., RestM, RestN, ..., L, ...)`.
///
/// Post-conditions: the modes of mode 0, then those of mode 1, of `zipped_divide(A, B)`; the same
/// function of 1-D coordinates.
pub const fn flat_divide(a: &Layout, t: &Tiler) -> Result<Layout> {
    flat_modes(&tri!(zipped_divide(a, t)))
}
