//! Partitioning a layout by tiles and by threads (seed 004): `inner_partition` / `local_tile`
//! keep a tile and select which one by the rest coordinate; `outer_partition` / `local_partition`
//! keep the rest and select a thread's element of each tile. Each returns the sub-layout and the
//! offset its origin moved by (a tensor adds the offset to its engine).

use crate::divide::zipped_divide;
use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::Layout;
use crate::tiler::Tiler;
use crate::tri;

/// `repeat<r>(_)`: `_` for `r == 1`, else `(_,..,_)`.
const fn holes(r: usize) -> Result<IntTuple> {
    if r == 1 {
        return Ok(IntTuple::hole());
    }
    let mut t = IntTuple::empty();
    let mut i = 0;
    while i < r {
        tri!(t.push(&IntTuple::hole()));
        i += 1;
    }
    Ok(t)
}

/// `append<r>(c, _)` for a tuple `c`; an integer `c` stays as it is.
const fn append_holes(c: &IntTuple, r: usize) -> Result<IntTuple> {
    if !c.is_tuple() {
        return Ok(*c);
    }
    let mut t = *c;
    if t.rank() > r {
        return Err(LayoutError::RankMismatch {
            expected: r,
            found: t.rank(),
        });
    }
    while t.rank() < r {
        tri!(t.push(&IntTuple::hole()));
    }
    Ok(t)
}

const fn pair(a: &IntTuple, b: &IntTuple) -> Result<IntTuple> {
    let mut t = IntTuple::empty();
    tri!(t.push(a));
    tri!(t.push(b));
    Ok(t)
}

/// `inner_partition(L, T, c)`: `zipped_divide(L, T)` sliced at `(_, c)` — the tile at rest
/// coordinate `c` (modes of `c` that are `_` stay, after the tile's modes).
///
/// Post-condition: with `(R, o)` the result, `o + R(x) == zipped_divide(L, T)(x, c)` for every
/// tile coordinate `x` (and the kept rest modes).
pub const fn inner_partition(l: &Layout, tiler: &Tiler, c: &IntTuple) -> Result<(Layout, i64)> {
    let zd = tri!(zipped_divide(l, tiler));
    let (r0, r1) = (tri!(zd.get(0)).rank(), tri!(zd.get(1)).rank());
    let coord = tri!(pair(&tri!(holes(r0)), &tri!(append_holes(c, r1))));
    zd.slice(&coord)
}

/// `outer_partition(L, T, c)`: `zipped_divide(L, T)` sliced at `(c, _)` — element `c` of every
/// tile.
///
/// Post-condition: with `(R, o)` the result, `o + R(y) == zipped_divide(L, T)(c, y)` for every
/// rest coordinate `y`.
pub const fn outer_partition(l: &Layout, tiler: &Tiler, c: &IntTuple) -> Result<(Layout, i64)> {
    let zd = tri!(zipped_divide(l, tiler));
    let (r0, r1) = (tri!(zd.get(0)).rank(), tri!(zd.get(1)).rank());
    let coord = tri!(pair(&tri!(append_holes(c, r0)), &tri!(holes(r1))));
    zd.slice(&coord)
}

/// `local_tile(L, tile_shape, c)`: the tile of shape `tile_shape` at tile coordinate `c`
/// (`inner_partition` by the shape).
///
/// # Example
/// Seed 004's `local_tile` examples on row-major tensors (the offset is where the tile starts):
/// tile `(1,1)` of a 4x6, tile `(1,2)` of a 4x6x8, and every tile of block row 0 (`(0,_)`):
/// ```
/// use layout_core::*;
/// let l = |s: &str| Layout::parse(s).unwrap();
/// let t = |s: &str| IntTuple::parse(s).unwrap();
/// let (r, off) = local_tile(&l("(4,6):(6,1)"), &t("(2,2)"), &t("(1,1)")).unwrap();
/// assert_eq!((r.to_string(), off), ("(2,2):(6,1)".into(), 14));
/// let (r, off) = local_tile(&l("(4,6,8):(48,8,1)"), &t("(2,2)"), &t("(1,2)")).unwrap();
/// assert_eq!((r.to_string(), off), ("(2,2,8):(48,8,1)".into(), 128));
/// let (r, off) = local_tile(&l("(4,6):(6,1)"), &t("(2,2)"), &t("(0,_)")).unwrap();
/// assert_eq!((r.to_string(), off), ("(2,2,3):(6,1,2)".into(), 0));
/// ```
pub const fn local_tile(l: &Layout, tile: &IntTuple, c: &IntTuple) -> Result<(Layout, i64)> {
    inner_partition(l, &tri!(Tiler::shape(tile)), c)
}

/// `local_tile(L, tile_shape, c, proj)`: the modes where `proj` is `X` are left out of the tile
/// shape and of the coordinate first (`dice(proj, ·)`).
///
/// # Example
/// Seed 004's `Step<_1,X,_1>` example: the `(M,K)` tensor `(4,8):(8,1)` cut by the `(2,2,4)`
/// tiler at `(0,0,_)`, the `N` mode left out:
/// ```
/// use layout_core::*;
/// let t = |s: &str| IntTuple::parse(s).unwrap();
/// let a = Layout::parse("(4,8):(8,1)").unwrap();
/// let (r, off) = local_tile_proj(&a, &t("(2,2,4)"), &t("(0,0,_)"), &t("(1,X,1)")).unwrap();
/// assert_eq!((r.to_string(), off), ("(2,4,2):(8,1,4)".into(), 0));
/// ```
pub const fn local_tile_proj(
    l: &Layout,
    tile: &IntTuple,
    c: &IntTuple,
    proj: &IntTuple,
) -> Result<(Layout, i64)> {
    local_tile(l, &tri!(dice_tuple(proj, tile)), &tri!(dice_tuple(proj, c)))
}

/// `local_partition(L, thr, i)`: thread `i` of the thread layout `thr` takes its element of every
/// `shape(thr)` tile: `outer_partition(L, product_each(shape(thr)), thr.get_flat_coord(i))`.
///
/// Post-condition: over all `i < size(thr)` the results are disjoint and together cover `L`'s
/// elements of the tiled region exactly once.
///
/// # Example
/// Seed 004's `local_partition` example: thread 1 of the `(4,2)` thread layout over the
/// column-major 8x6 tensor:
/// ```
/// use layout_core::*;
/// let l = |s: &str| Layout::parse(s).unwrap();
/// let (r, off) = local_partition(&l("(8,6):(1,8)"), &l("(4,2):(1,4)"), 1).unwrap();
/// assert_eq!((r.to_string(), off), ("(2,3):(4,16)".into(), 1));
/// ```
pub const fn local_partition(l: &Layout, thr: &Layout, i: i64) -> Result<(Layout, i64)> {
    if i < 0 || i >= thr.size() {
        return Err(LayoutError::IndexOutOfRange {
            index: i,
            size: thr.size(),
        });
    }
    let tiler = tri!(Tiler::shape(&tri!(thr.shape().product_each())));
    outer_partition(l, &tiler, &flat_coord(thr, i))
}

/// `local_partition(L, thr, i, proj)`: the thread layout diced by `proj` first.
///
/// # Example
/// Seed 004's `local_partition` with `Step<_1,X>`: thread 1 over the 8x6 tensor, the `K` mode
/// kept whole:
/// ```
/// use layout_core::*;
/// let l = |s: &str| Layout::parse(s).unwrap();
/// let proj = IntTuple::parse("(1,X)").unwrap();
/// let (r, off) = local_partition_proj(&l("(8,6):(1,8)"), &l("(4,2):(1,4)"), 1, &proj).unwrap();
/// assert_eq!((r.to_string(), off), ("(2,6):(4,8)".into(), 1));
/// ```
pub const fn local_partition_proj(
    l: &Layout,
    thr: &Layout,
    i: i64,
    proj: &IntTuple,
) -> Result<(Layout, i64)> {
    local_partition(l, &tri!(thr.dice(proj)), i)
}

/// `L.get_flat_coord(i)`: the flat natural coordinate that `L` maps to `i` (`(i / d) % s` per
/// leaf; `0` for stride-0 leaves); an integer for an integer shape. Meant for `0 <= i` (a thread
/// index); [`local_partition`] checks `i < size(L)`.
pub const fn flat_coord(l: &Layout, i: i64) -> IntTuple {
    let (s, d) = (l.shapes(), l.strides());
    let mut c = [0i64; crate::int_tuple::MAX_LEAVES];
    let mut k = 0;
    while k < s.len() {
        // in i128: `i64::MIN / -1` overflows i64 (the remainder is below `s[k]` and fits)
        c[k] = if d[k] == 0 {
            0
        } else {
            ((i as i128 / d[k] as i128) % s[k] as i128) as i64
        };
        k += 1;
    }
    if l.shape().is_int() {
        return IntTuple::int(c[0]);
    }
    match IntTuple::from_ints(c.split_at(s.len()).0) {
        Ok(t) => t,
        Err(_) => IntTuple::empty(), // unreachable: at most MAX_LEAVES leaves
    }
}

/// `dice(proj, t)` on a tuple: the top-level modes of `t` where `proj` is not `_`/`X`.
pub const fn dice_tuple(proj: &IntTuple, t: &IntTuple) -> Result<IntTuple> {
    if !proj.is_tuple() {
        return Ok(*t);
    }
    if !t.is_tuple() || t.rank() != proj.rank() {
        return Err(LayoutError::ProfileMismatch);
    }
    let mut r = IntTuple::empty();
    let mut i = 0;
    while i < proj.rank() {
        if !tri!(proj.get(i)).is_hole() {
            tri!(r.push(&tri!(t.get(i))));
        }
        i += 1;
    }
    Ok(r)
}
