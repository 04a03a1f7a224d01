//! `complement`: the layout of the repetitions of a layout, up to a cotarget size.

use crate::coalesce::{coalesce, from_flat};
use crate::composition::ceil_div;
use crate::error::{LayoutError, Result};
use crate::int_tuple::{IntTuple, MAX_LEAVES};
use crate::layout::Layout;
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
pub const fn complement(a: &Layout, cotarget: i64) -> Result<Layout> {
    if cotarget < 1 {
        return Err(LayoutError::NonPositiveShape { value: cotarget });
    }
    let s = a.shapes();
    let d = a.strides();
    let n = s.len();
    // selection sort of the leaf indices by (stride, shape)
    let mut order = [0usize; MAX_LEAVES];
    let mut k = 0;
    while k < n {
        order[k] = k;
        k += 1;
    }
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n {
            let (x, y) = (order[i], order[j]);
            if d[y] < d[x] || (d[y] == d[x] && s[y] < s[x]) {
                order[i] = y;
                order[j] = x;
            }
            j += 1;
        }
        i += 1;
    }
    let mut rs = [0i64; MAX_LEAVES + 1];
    let mut rd = [0i64; MAX_LEAVES + 1];
    let mut m = 0;
    let mut cur: i64 = 1;
    let mut q = 0;
    while q < n {
        let (sh, st) = (s[order[q]], d[order[q]]);
        q += 1;
        if st < 0 {
            return Err(LayoutError::NegativeStride { value: st });
        }
        if st == 0 || sh == 1 {
            continue;
        }
        if st < cur {
            return Err(LayoutError::NotInjective {
                stride: st,
                extent: cur,
            });
        }
        rs[m] = st / cur;
        rd[m] = cur;
        m += 1;
        cur = match sh.checked_mul(st) {
            Some(v) => v,
            None => return Err(LayoutError::Overflow),
        };
    }
    rs[m] = ceil_div(cotarget, cur);
    rd[m] = cur;
    m += 1;
    if m > MAX_LEAVES {
        return Err(LayoutError::Capacity);
    }
    coalesce(&tri!(from_flat(&rs, &rd, m)))
}

/// `complement(A, shape)`: the cotarget is `size(shape)`.
pub const fn complement_shape(a: &Layout, cotarget: &IntTuple) -> Result<Layout> {
    complement(a, tri!(cotarget.size()))
}

/// `complement(A)`: the cotarget is `cosize(A)`, so `R` only fills the holes of `A`.
pub const fn complement_default(a: &Layout) -> Result<Layout> {
    complement(a, a.cosize())
}
