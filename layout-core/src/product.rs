//! Products (tiling): `logical_product` and the rank-sensitive `blocked_product` /
//! `raked_product`, the zipped / tiled / flat rearrangements, and `tile_to_shape`.
//!
//! ```text
//! Layout Shape : (M, N, L, ...)        Tiler : <TileM, TileN>
//! logical_product : ((M,TileM), (N,TileN), L, ...)
//! zipped_product  : ((M,N), (TileM,TileN,L,...))
//! tiled_product   : ((M,N), TileM, TileN, L, ...)
//! flat_product    : (M, N, TileM, TileN, L, ...)
//! ```

use crate::coalesce::coalesce_profile;
use crate::complement::complement_into;
use crate::composition::compose_into;
use crate::error::{LayoutError, Result};
use crate::int_tuple::{IntTuple, Span, MAX_LEAVES};
use crate::layout::{in_place, product_of, Layout};
use crate::tiler::{by_mode, flat_modes, hier_unzip, tiled_modes, Splitter, Tiler};
use crate::tri;

/// `logical_product(A, B) = (A, complement(A, size(A) * cosize(B)) o B)`: mode 0 is `A`, mode 1
/// places one unique replica of `A` at each element of `B`.
///
/// Post-conditions (seed 003):
/// - `rank(R) == 2`
/// - `compatible(A, layout<0>(R))` (mode 0 is `A` itself)
/// - `compatible(B, layout<1>(R))` (mode 1 has `B`'s size and mode sizes)
/// - for injective `A` and `B`, `R` is injective (replicas never overlap)
///
/// # Example
/// Seed 003's 1-D logical product of `(2,2):(4,1)` by `6:1` (equal to its 1-D logical divide),
/// and by `(4,2):(2,1)` (8 tiles):
/// ```
/// use layout_core::*;
/// let l = |s: &str| Layout::parse(s).unwrap();
/// let r = logical_product(&l("(2,2):(4,1)"), &l("6:1")).unwrap();
/// assert_eq!(r.to_string(), "((2,2),(2,3)):((4,1),(2,8))");
/// assert_eq!(r, logical_divide(&l("(4,2,3):(2,1,8)"), &l("4:2")).unwrap());
/// let r8 = logical_product(&l("(2,2):(4,1)"), &l("(4,2):(2,1)")).unwrap();
/// assert_eq!(r8.get(1).unwrap().size(), 8);
/// ```
pub const fn logical_product(a: &Layout, b: &Layout) -> Result<Layout> {
    let mut out = Err(LayoutError::Capacity);
    product_at(a, b, &mut out);
    out
}

#[cfg_attr(not(target_arch = "nvptx64"), inline(never))]
const fn product_at(a: &Layout, b: &Layout, out: &mut Result<Layout>) {
    in_place!(out, r => product_into(a, a.whole(), b, r))
}

/// [`logical_product`] of the part `sp` of `a` (a mode of it, or all) and `B`, appended to the
/// build `r` as one mode of it.
pub(crate) const fn product_into(a: &Layout, sp: Span, b: &Layout, r: &mut Layout) -> Result<()> {
    let (s, d) = a.leaves_in(sp);
    let cot = match product_of(s).checked_mul(b.cosize()) {
        Some(v) => v,
        None => return Err(LayoutError::Overflow),
    };
    let mut c = Layout::raw();
    tri!(complement_into(s, d, cot, &mut c));
    tri!(c.check());
    tri!(r.put_open());
    tri!(r.put_span(a, sp));
    tri!(compose_into(c.shapes(), c.strides(), b, r));
    r.put_close()
}

/// `logical_product` by a tiler: mode `i` of `A` times `B_i` (`_` keeps it).
///
/// Post-conditions: `rank(R) == rank(A)` for a by-mode tiler; mode `i` of `R` is
/// `logical_product(mode i of A, B_i)`.
///
/// # Example
/// Seed 003's 2-D by-mode product: the 2x5 row-major block `(2,5):(5,1)` by `<3:5, 4:6>`:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(2,5):(5,1)").unwrap();
/// let r = logical_product_tiler(&a, &Tiler::parse("<3:5,4:6>").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "((2,3),(5,4)):((5,10),(1,30))");
/// ```
pub const fn logical_product_tiler(a: &Layout, t: &Tiler) -> Result<Layout> {
    by_mode(a, t, Splitter::Product)
}

/// `zipped_product(A, B)`: `((M,N,...), (TileM,TileN,...,L,...))`.
///
/// Post-conditions: `rank(R) == 2`; mode 0 holds `A`'s modes (by-mode: `A_i` for `i < rank(B)`);
/// the same image as `logical_product_tiler(A, B)`.
///
/// # Example
/// Seed 003's 2-D by-mode product example in the `zipped_product` arrangement of its table:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(2,5):(5,1)").unwrap();
/// let r = zipped_product(&a, &Tiler::parse("<3:5,4:6>").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "((2,5),(3,4)):((5,1),(10,30))");
/// ```
pub const fn zipped_product(a: &Layout, t: &Tiler) -> Result<Layout> {
    hier_unzip(a, t, Splitter::Product)
}

/// `tiled_product(A, B)`: `((M,N,...), TileM, TileN, ..., L, ...)`.
///
/// # Example
/// Seed 003's 2-D by-mode product example in the `tiled_product` arrangement of its table:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(2,5):(5,1)").unwrap();
/// let r = tiled_product(&a, &Tiler::parse("<3:5,4:6>").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "((2,5),3,4):((5,1),10,30)");
/// ```
pub const fn tiled_product(a: &Layout, t: &Tiler) -> Result<Layout> {
    tiled_modes(&tri!(zipped_product(a, t)))
}

/// `flat_product(A, B)`: `(M, N, ..., TileM, TileN, ..., L, ...)`.
///
/// # Example
/// Seed 003's 2-D by-mode product example in the `flat_product` arrangement of its table:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(2,5):(5,1)").unwrap();
/// let r = flat_product(&a, &Tiler::parse("<3:5,4:6>").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "(2,5,3,4):(5,1,10,30)");
/// ```
pub const fn flat_product(a: &Layout, t: &Tiler) -> Result<Layout> {
    flat_modes(&tri!(zipped_product(a, t)))
}

/// `blocked_product(A, B)`: `A` as a block, laid out as the tiles of `B`; both padded to rank
/// `R = max(rank A, rank B)`, `logical_product` taken once over the whole, and like modes
/// reassociated ("zipped"): mode `i` is `(A_i, B'_i)`. As in current CuTe (and seed 000's worked
/// example), the modes are not coalesced; `coalesce(R, profile)` does that when wanted.
///
/// Post-conditions:
/// - `rank(R) == max(rank(A), rank(B))`
/// - `size(mode i of R) == size(A_i) * size(B_i)`
/// - mode `i` of `R` is `(A_i, T_i)` where `T` is mode 1 of `logical_product(A, B)` (padded): the
///   same elements as the logical product, regrouped")
///
/// # Example
/// Seed 000's blocked product with `M0, M1, N0, N1 = 2, 2, 2, 3` (the element at
/// `((0,1),(1,1))`, i.e. `(2,3)`, is `storage[18]`), then coalesced by mode; and seed 003's 2x5
/// row-major block in a 3x4 column-major arrangement:
/// ```
/// use layout_core::*;
/// let l = |s: &str| Layout::parse(s).unwrap();
/// let t = |s: &str| IntTuple::parse(s).unwrap();
/// let r = blocked_product(&l("(2,2):(1,2)"), &l("(2,3):(3,1)")).unwrap();
/// assert_eq!(r.to_string(), "((2,2),(2,3)):((1,12),(2,4))");
/// assert_eq!(r.crd2idx(&t("((0,1),(1,1))")).unwrap(), 18);
/// assert_eq!(r.crd2idx(&t("(2,3)")).unwrap(), 18);
/// assert_eq!(coalesce_profile(&r, &t("(1,1)")).unwrap().to_string(), "((2,2),6):((1,12),2)");
/// let r = blocked_product(&l("(2,5):(5,1)"), &l("(3,4):(1,3)")).unwrap();
/// assert_eq!(r.to_string(), "((2,3),(5,4)):((5,10),(1,30))");
/// ```
pub const fn blocked_product(a: &Layout, b: &Layout) -> Result<Layout> {
    zip_product(a, b, false)
}

/// `raked_product(A, B)`: like [`blocked_product`] but mode `i` is `(B'_i, A_i)`: the tiles of
/// `B` are interleaved ("raked", a cyclic distribution) inside each block position.
///
/// Post-conditions: as [`blocked_product`], with the roles in each mode swapped.
///
/// # Example
/// Seed 003's raked product of the 2x5 row-major block and the 3x4 column-major arrangement:
/// ```
/// use layout_core::*;
/// let l = |s: &str| Layout::parse(s).unwrap();
/// let r = raked_product(&l("(2,5):(5,1)"), &l("(3,4):(1,3)")).unwrap();
/// assert_eq!(r.to_string(), "((3,2),(4,5)):((10,5),(30,1))");
/// ```
pub const fn raked_product(a: &Layout, b: &Layout) -> Result<Layout> {
    zip_product(a, b, true)
}

const fn zip_product(a: &Layout, b: &Layout, raked: bool) -> Result<Layout> {
    let mut out = Err(LayoutError::Capacity);
    zip_product_at(a, b, raked, &mut out);
    out
}

#[cfg_attr(not(target_arch = "nvptx64"), inline(never))]
const fn zip_product_at(a: &Layout, b: &Layout, raked: bool, out: &mut Result<Layout>) {
    in_place!(out, r => zip_product_into(a, b, raked, r))
}

const fn zip_product_into(a: &Layout, b: &Layout, raked: bool, out: &mut Layout) -> Result<()> {
    let n = if a.rank() > b.rank() {
        a.rank()
    } else {
        b.rank()
    };
    let pa = tri!(pad(a, n));
    let pb = tri!(pad(b, n));
    let mut p = Layout::raw();
    tri!(product_into(&pa, pa.whole(), &pb, &mut p));
    let (p0, p1) = (tri!(p.span(0)), tri!(p.span(1)));
    tri!(out.put_open());
    let mut i = 0;
    while i < n {
        let (x, y) = (tri!(p.span_within(p0, i)), tri!(p.span_within(p1, i)));
        let (first, second) = if raked { (y, x) } else { (x, y) };
        tri!(out.put_open());
        tri!(out.put_span(&p, first));
        tri!(out.put_span(&p, second));
        tri!(out.put_close());
        i += 1;
    }
    out.put_close()
}

/// `append<R>(L)` with an integral `L` of rank 1 kept as the tuple `(L)`.
const fn pad(l: &Layout, n: usize) -> Result<Layout> {
    let mut p = Layout::raw();
    tri!(p.put_open());
    tri!(p.put_modes_of(l, l.whole()));
    let mut k = l.rank();
    while k < n {
        tri!(p.put_leaf(1, 0));
        k += 1;
    }
    tri!(p.put_close());
    Ok(p)
}

/// `tile_to_shape(block, shape, order)`: repeats `block` (padded to `rank(shape)`) as a
/// `blocked_product` with the tiles ordered by `order` (`None`: column-major), until it has the
/// target `shape`, then coalesces mode by mode.
///
/// Admissible when each mode size of the block divides the target's ([`LayoutError::NotDivisible`]).
///
/// Post-conditions:
/// - `rank(R) == rank(shape)`, `size(mode i of R) == size(mode i of shape)`
/// - `R` restricted to the first tile is `block` (as a function of its coordinates)
pub const fn tile_to_shape(
    block: &Layout,
    shape: &IntTuple,
    order: Option<&IntTuple>,
) -> Result<Layout> {
    tri!(shape.check_shape());
    let r = shape.rank();
    if block.rank() > r {
        return Err(LayoutError::RankMismatch {
            expected: r,
            found: block.rank(),
        });
    }
    let pb = tri!(pad(block, r));
    let bs = tri!(pb.shape().product_each());
    let ts = tri!(shape.product_each());
    let (bl, tl) = (bs.leaves(), ts.leaves());
    let mut ps = [0i64; MAX_LEAVES];
    let mut i = 0;
    while i < r {
        if tl[i] % bl[i] != 0 {
            return Err(LayoutError::NotDivisible {
                value: tl[i],
                by: bl[i],
            });
        }
        ps[i] = tl[i] / bl[i];
        i += 1;
    }
    let prod_shape = tri!(IntTuple::from_ints(ps.split_at(r).0));
    let tiles = match order {
        Some(o) => tri!(Layout::ordered(prod_shape, *o)),
        None => tri!(Layout::col_major(prod_shape)),
    };
    coalesce_profile(&tri!(blocked_product(&pb, &tiles)), &prod_shape)
}
