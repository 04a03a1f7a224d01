//! `coalesce` and `filter`: simplify a layout without changing it as a function of 1-D coordinates.

use crate::error::{LayoutError, Result};
use crate::int_tuple::{IntTuple, MAX_LEAVES};
use crate::layout::Layout;
use crate::tri;

/// The layout of the flat modes `s[..n]:d[..n]`: `s0:d0` when `n == 1`, `(s0,..):(d0,..)` else.
pub(crate) const fn from_flat(s: &[i64], d: &[i64], n: usize) -> Result<Layout> {
    let mut l = Layout::raw();
    tri!(l.put_flat(s, d, n));
    tri!(l.check());
    Ok(l)
}

/// Merges the flat modes `s[..n]:d[..n]` in place as [`coalesce`] does; returns how many remain
/// (at least 1: `1:0` when all have size 1).
pub(crate) const fn coalesce_flat(s: &mut [i64], d: &mut [i64], n: usize) -> usize {
    let mut m = 0;
    let mut i = 0;
    while i < n {
        let (si, di) = (s[i], d[i]);
        if si == 1 {
            // size-1 modes never contribute
        } else if m > 0 && matches!(s[m - 1].checked_mul(d[m - 1]), Some(x) if x == di) {
            // (a product past i64 equals no stride)
            s[m - 1] *= si;
        } else {
            s[m] = si;
            d[m] = di;
            m += 1;
        }
        i += 1;
    }
    if m == 0 {
        s[0] = 1;
        d[0] = 0;
        m = 1;
    }
    m
}

/// `coalesce(L)`: the flattest layout that is the same function of 1-D coordinates.
///
/// Size-1 modes are dropped and a mode `s1:d1` following `s0:d0` merges into `s0*s1:d0` when
/// `d1 == s0*d0`.
///
/// Post-conditions (seed 003):
/// - `size(R) == size(L)`
/// - `depth(R) <= 1`
/// - `R(i) == L(i)` for all `0 <= i < size(L)`
///
/// # Example
/// Seed 003's coalesce example, its four two-mode cases, and seed 000's `(M,N):(1,M)`:
/// ```
/// use layout_core::*;
/// let c = |s: &str| coalesce(&Layout::parse(s).unwrap()).unwrap().to_string();
/// assert_eq!(c("(2,(1,6)):(1,(6,2))"), "12:1");
/// assert_eq!(c("(5,1):(3,7)"), "5:3");
/// assert_eq!(c("(1,5):(3,7)"), "5:7");
/// assert_eq!(c("(5,4):(3,15)"), "20:3");
/// assert_eq!(c("(5,4):(3,7)"), "(5,4):(3,7)");
/// assert_eq!(c("(4,6):(1,4)"), "24:1");
/// ```
pub const fn coalesce(l: &Layout) -> Result<Layout> {
    let (mut s, mut d) = ([0i64; MAX_LEAVES], [0i64; MAX_LEAVES]);
    let n = l.leaves_into(&mut s, &mut d);
    let n = coalesce_flat(&mut s, &mut d, n);
    from_flat(&s, &d, n)
}

/// `coalesce(L, profile)`: coalesce each mode of `L` at the leaves of `profile` (whose values are
/// only flags); modes past `rank(profile)` are kept as they are.
///
/// Post-conditions: `rank(R) == rank(L)` when `profile` is a tuple, each mode `i < rank(profile)`
/// is `coalesce(mode i of L, profile_i)`, and `R(c) == L(c)` for every 1-D coordinate.
///
/// # Example
/// Seed 003's by-mode coalesce (profile `(1,1)`), and seed 000's `((M,N),K,L)` with
/// `M,N,K,L = 2,3,4,5` (profile `(1,1,1)`):
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(2,(1,6)):(1,(6,2))").unwrap();
/// let r = coalesce_profile(&a, &IntTuple::parse("(1,1)").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "(2,6):(1,2)");
/// let b = Layout::parse("((2,3),4,5):((1,2),6,24)").unwrap();
/// let r = coalesce_profile(&b, &IntTuple::parse("(1,1,1)").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "(6,4,5):(1,6,24)");
/// ```
pub const fn coalesce_profile(l: &Layout, profile: &IntTuple) -> Result<Layout> {
    by_mode(l, profile, false)
}

/// `filter(L)`: `coalesce` after replacing stride-0 modes by size 1, i.e. the layout of the distinct
/// elements (`1:0` when there are none).
///
/// Post-conditions: `depth(R) <= 1`; `R` has no stride-0 mode unless `R == 1:0`; the image of `R`
/// equals the image of `L`, and `size(R) == size(L) / prod(sizes of L's stride-0 modes)`.
pub const fn filter(l: &Layout) -> Result<Layout> {
    let s = l.shapes();
    let d = l.strides();
    let mut fs = [1i64; MAX_LEAVES];
    let mut i = 0;
    while i < s.len() {
        if d[i] != 0 {
            fs[i] = s[i];
        }
        i += 1;
    }
    let f = tri!(Layout::from_parts(l.shape().with_leaves(&fs), d));
    let c = tri!(coalesce(&f));
    if c.size() == 1 {
        return Layout::int(1, 0);
    }
    Ok(c)
}

/// `filter(L, profile)`: `filter` applied at the leaves of `profile`, like [`coalesce_profile`].
pub const fn filter_profile(l: &Layout, profile: &IntTuple) -> Result<Layout> {
    by_mode(l, profile, true)
}

const fn by_mode(l: &Layout, profile: &IntTuple, is_filter: bool) -> Result<Layout> {
    if profile.is_int() {
        return if is_filter { filter(l) } else { coalesce(l) };
    }
    let r = profile.rank();
    if l.rank() < r {
        return Err(LayoutError::RankMismatch {
            expected: r,
            found: l.rank(),
        });
    }
    let mut out = Layout::empty();
    let mut i = 0;
    while i < l.rank() {
        let m = tri!(l.get(i));
        let m = if i < r {
            tri!(by_mode(&m, &tri!(profile.get(i)), is_filter))
        } else {
            m
        };
        tri!(out.push(&m));
        i += 1;
    }
    Ok(out)
}
