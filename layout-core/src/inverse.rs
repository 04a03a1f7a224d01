//! `right_inverse` and `left_inverse`.

use crate::coalesce::{coalesce, from_flat};
use crate::complement::complement_default;
use crate::error::{LayoutError, Result};
use crate::int_tuple::MAX_LEAVES;
use crate::layout::Layout;
use crate::tri;

/// `right_inverse(L)`: the largest compact `R` with `L(R(i)) == i`.
///
/// Starting from index 1, it follows the chain of strides `1, s0, s0*s1, ...`: each leaf of `L` whose
/// stride is the next index in the chain contributes its shape, with the stride of that leaf in the
/// column-major enumeration of `L`'s coordinates.
///
/// Post-conditions:
/// - `L(R(i)) == i` for all `0 <= i < size(R)`
/// - `R` is coalesced (`depth(R) <= 1`) and `size(R)` divides `size(L)` when `L` is injective
pub const fn right_inverse(l: &Layout) -> Result<Layout> {
    let s = l.shapes();
    let d = l.strides();
    let n = s.len();
    // column-major position of each leaf in L's 1-D coordinate
    let mut pos = [0i64; MAX_LEAVES];
    let mut acc = 1;
    let mut k = 0;
    while k < n {
        pos[k] = acc;
        acc *= s[k];
        k += 1;
    }
    let mut rs = [1i64; MAX_LEAVES];
    let mut rd = [0i64; MAX_LEAVES];
    let mut m = 0;
    let mut cur: i64 = 1;
    let mut used = [false; MAX_LEAVES];
    loop {
        let mut found = n;
        let mut i = 0;
        while i < n {
            if !used[i] && s[i] > 1 && d[i] == cur {
                found = i;
                break;
            }
            i += 1;
        }
        if found == n {
            break;
        }
        used[found] = true;
        rs[m] = s[found];
        rd[m] = pos[found];
        m += 1;
        cur = match cur.checked_mul(s[found]) {
            Some(v) => v,
            None => return Err(LayoutError::Overflow),
        };
    }
    if m == 0 {
        return Layout::int(1, 0);
    }
    coalesce(&tri!(from_flat(&rs, &rd, m)))
}

/// `left_inverse(L)`: `R` with `R(L(i)) == i`, the right inverse of `(L, complement(L))`.
///
/// Admissible when `L` is injective (see [`crate::complement`]).
///
/// Post-conditions:
/// - `R(L(i)) == i` for all `0 <= i < size(L)`
pub const fn left_inverse(l: &Layout) -> Result<Layout> {
    let c = tri!(complement_default(l));
    right_inverse(&tri!(Layout::concat(&[*l, c])))
}
