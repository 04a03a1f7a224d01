//! `complement`: the layout of the repetitions of a layout, up to a cotarget size.

use crate::composition::ceil_div;
use crate::error::{LayoutError, Result};
use crate::int_tuple::{IntTuple, MAX_LEAVES};
use crate::layout::{in_place, Layout};
use crate::tri;

/// `complement(A, M)`: the ordered layout `R` that fills the holes of `A`'s image and then repeats
/// it until `M` is covered.
///
/// With `A`'s modes sorted by stride (size-1 and stride-0 modes ignored), each stride `d_i` is the
/// end of a hole that `R` fills with `d_i / c` elements at stride `c`, the extent `c = s * d` of
/// the modes so far; a last mode of `ceil(M / c)` at stride `c` repeats everything.
///
/// Admissible when `A` is injective in this sense: each sorted stride `d_i >= c` (else
/// [`LayoutError::NotInjective`]), strides non-negative, `M >= 1`.
///
/// Post-conditions (seed 003):
/// - `cosize(make_layout(A, R)) >= M`
/// - `cosize(R) >= round_up(M, cosize(A))` (when `A` is compact; `R` repeats `A`'s extent)
/// - `R(i-1) < R(i)` for `1 <= i < size(R)` (ordered)
/// - `R(i) != A(j)` for `1 <= i < size(R)`, `0 <= j < size(A)` (disjoint images)
///
/// # Example
/// Seed 003's six complements with cotarget 24, the fourth computed at compile time:
/// ```
/// use layout_core::*;
/// const C: Layout = const_ok!(complement(&const_ok!(Layout::parse("4:2")), 24));
/// assert_eq!(C.to_string(), "(2,3):(1,8)");
/// for (a, want) in [("4:1", "6:4"), ("6:4", "4:1"), ("(4,6):(1,4)", "1:0"),
///                   ("(2,4):(1,6)", "3:2"), ("(2,2):(1,6)", "(3,2):(2,12)")] {
///     let r = complement(&Layout::parse(a).unwrap(), 24).unwrap();
///     assert_eq!(r.to_string(), want);
/// }
/// ```
pub const fn complement(a: &Layout, cotarget: i64) -> Result<Layout> {
    let mut out = Err(LayoutError::Capacity);
    complement_at(a, cotarget, &mut out);
    out
}

#[cfg_attr(not(target_arch = "nvptx64"), inline(never))]
const fn complement_at(a: &Layout, cotarget: i64, out: &mut Result<Layout>) {
    in_place!(out, r => complement_into(a.shapes(), a.strides(), cotarget, r))
}

/// [`complement`] of the flat `a_s:a_d`, appended to the build `r` as one mode of it.
pub(crate) const fn complement_into(
    s: &[i64],
    d: &[i64],
    cotarget: i64,
    r: &mut Layout,
) -> Result<()> {
    if cotarget < 1 {
        return Err(LayoutError::NonPositiveShape { value: cotarget });
    }
    let n = s.len();
    let mut k = 0;
    let mut least = 0;
    while k < n {
        if d[k] < least {
            least = d[k];
        }
        k += 1;
    }
    if least < 0 {
        return Err(LayoutError::NegativeStride { value: least });
    }
    // the leaves that matter (size > 1, stride != 0), sorted by (stride, shape) by insertion
    let mut order = [0usize; MAX_LEAVES];
    let mut m = 0;
    k = 0;
    while k < n {
        if d[k] != 0 && s[k] != 1 {
            let mut j = m;
            while j > 0
                && (d[k] < d[order[j - 1]] || (d[k] == d[order[j - 1]] && s[k] < s[order[j - 1]]))
            {
                order[j] = order[j - 1];
                j -= 1;
            }
            order[j] = k;
            m += 1;
        }
        k += 1;
    }
    // each sorted stride ends a hole of `st / cur` elements at stride `cur`; modes that merge
    // (coalesce) are merged as they are written
    let open = tri!(r.open_group());
    let mut out = 0;
    let (mut last_s, mut last_d) = (1i64, 0i64);
    let mut cur: i64 = 1;
    let mut q = 0;
    while q <= m {
        let (hs, hd) = if q < m {
            let (sh, st) = (s[order[q]], d[order[q]]);
            if st < cur {
                return Err(LayoutError::NotInjective {
                    stride: st,
                    extent: cur,
                });
            }
            let h = (if cur == 1 { st } else { st / cur }, cur);
            cur = match sh.checked_mul(st) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            h
        } else {
            // the last mode repeats everything up to the cotarget
            (ceil_div(cotarget, cur), cur)
        };
        q += 1;
        if hs == 1 {
            continue;
        }
        if out > 0 && matches!(last_s.checked_mul(last_d), Some(x) if x == hd) {
            last_s *= hs;
            r.set_last_shape(last_s);
        } else {
            tri!(r.put_leaf(hs, hd));
            out += 1;
            last_s = hs;
            last_d = hd;
        }
    }
    if out == 0 {
        tri!(r.put_leaf(1, 0));
        out = 1;
    }
    r.close_group(open, out)
}

/// `complement(A, shape)`: the cotarget is `size(shape)`.
pub const fn complement_shape(a: &Layout, cotarget: &IntTuple) -> Result<Layout> {
    complement(a, tri!(cotarget.size()))
}

/// `complement(A)`: the cotarget is `cosize(A)`, so `R` only fills the holes of `A`.
pub const fn complement_default(a: &Layout) -> Result<Layout> {
    complement(a, a.cosize())
}
