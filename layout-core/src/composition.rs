//! `composition`: `R = A o B`, `R(c) = A(B(c))`.

use crate::coalesce::{coalesce, from_flat};
use crate::error::{LayoutError, Result};
use crate::int_tuple::MAX_LEAVES;
use crate::layout::Layout;
use crate::tiler::{by_mode, Splitter, Tiler};
use crate::tri;

/// `composition(A, B)`: the layout `R` with `R(c) == A(B(c))`, shaped like `B`.
///
/// `B` is split into its modes (composition distributes over concatenation) and each integral
/// mode `s:d` is taken from the coalesced `A` by dividing out the stride `d` (every `d`-th element)
/// and then keeping the first `s` elements.
///
/// Admissible when, for each mode `a` of coalesced `A` (but the last) that `B` still reaches, with
/// the stride `r` and shape `n` of `B` left at that point:
/// - stride divisibility: `a % r == 0 || r % a == 0`, else [`LayoutError::StrideDivisibility`];
/// - shape divisibility: with `k = a / r` elements left of the mode, `k % n == 0 || n % k == 0`,
///   else [`LayoutError::ShapeDivisibility`].
///
/// When `B` is a single integral mode `s:d` (or has one leaf of size > 1 and stride != 0, or its
/// whole image lies in the first mode of coalesced `A`), a mode that holds all of `B`'s remaining
/// elements
/// needs neither condition (`(n - 1) * r < a`): `A` is linear there. When `B` has several modes,
/// `A o (B0, B1) == (A o B0, A o B1)` needs `A` linear over the sums of their images: besides the
/// conditions above, within each mode of coalesced `A` but the last the elements the modes of `B`
/// reach must add up to less than its shape (no carry into the next mode), else
/// [`LayoutError::ModesCarry`] — CuTe skips this check, and e.g. `(6,2):(0,1) o (2,3):(3,2)` comes
/// out `(2,3):(0,0)` there, though `B(5) = 7` lands in `A`'s second mode. (For a `B` seen to be
/// non-injective — up to 512 elements are checked — the result is, as in CuTe, that by-mode
/// layout, which can differ from `A(B(i))` where `B`'s modes overlap.)
///
/// Post-conditions (seed 003):
/// - `compatible(B, R)`: `R` has the shape of `B` up to size-1 modes and coalesced leaves
///   (`size(R) == size(B)`, and each mode `i` of `B` has `size(mode i of R) == size(mode i of B)`)
/// - `R(i) == A(B(i))` for all `0 <= i < size(B)` with `B(i) < size(A)` (past its domain, `A`'s
///   last mode is taken as extended, as CuTe does; a one-element `A` extends along its last
///   leaf's stride, where CuTe's extension has stride 0), when `B` is injective or integral
pub const fn composition(a: &Layout, b: &Layout) -> Result<Layout> {
    // B acts as one integral mode when at most one of its leaves moves (size > 1, stride != 0)
    let (s, d) = (b.shapes(), b.strides());
    let mut moving = 0;
    let mut i = 0;
    while i < s.len() {
        if s[i] > 1 && d[i] != 0 {
            moving += 1;
        }
        i += 1;
    }
    // ... or when all of B's image lies in the first mode of coalesced A, where A is linear
    let mut inside = false;
    if let Ok(fa) = coalesce(a) {
        let mut nonneg = true;
        let mut k = 0;
        while k < d.len() {
            nonneg = nonneg && d[k] >= 0;
            k += 1;
        }
        inside = nonneg && b.cosize() <= fa.shapes()[0];
    }
    let whole = moving <= 1 || inside;
    // per mode of coalesced A: the last element B's modes reach in it, summed over B's modes
    let mut reach = [0i64; MAX_LEAVES];
    let r = tri!(compose(a, b, whole, &mut reach));
    // (a non-injective B keeps CuTe's by-mode result, whose value past a carry is documented
    // to differ from A(B(i)))
    if !whole {
        let fa = tri!(coalesce(a));
        let ash = fa.shapes();
        let mut k = 0;
        while k + 1 < ash.len() {
            if reach[k] >= ash[k] && !surely_not_injective(b) {
                return Err(LayoutError::ModesCarry {
                    shape: ash[k],
                    reach: reach[k],
                });
            }
            k += 1;
        }
    }
    Ok(r)
}

/// Is `L` known to map two coordinates to one offset? Checked pair by pair up to 512 elements;
/// a larger `L` is taken as injective (so a carry in it is refused rather than allowed).
const fn surely_not_injective(l: &Layout) -> bool {
    let n = l.size();
    if n > 512 {
        return false;
    }
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        while j < n {
            if l.call(i) == l.call(j) {
                return true;
            }
            j += 1;
        }
        i += 1;
    }
    false
}

const fn compose(
    a: &Layout,
    b: &Layout,
    whole: bool,
    reach: &mut [i64; MAX_LEAVES],
) -> Result<Layout> {
    if b.shape().is_tuple() {
        let mut r = Layout::empty();
        let mut i = 0;
        while i < b.rank() {
            tri!(r.push(&tri!(compose(a, &tri!(b.get(i)), whole, reach))));
            i += 1;
        }
        return Ok(r);
    }
    compose_integral(a, b.shapes()[0], b.strides()[0], whole, reach)
}

/// `composition(A, <B0, B1, ...>)`: mode `i` of `A` composed with `B_i`, the modes past the tiler's
/// rank (and those under `_`) kept. A layout tiler is plain [`composition`].
///
/// Post-conditions: `rank(R) == rank(A)` for a by-mode tiler; mode `i` of `R` is
/// `composition(mode i of A, B_i)`.
pub const fn composition_tiler(a: &Layout, t: &Tiler) -> Result<Layout> {
    by_mode(a, t, Splitter::Compose)
}

const fn mul(a: i64, b: i64) -> Result<i64> {
    match a.checked_mul(b) {
        Some(v) => Ok(v),
        None => Err(LayoutError::Overflow),
    }
}

/// `A o s:d` for an integral `B = s:d`; `whole` when `s:d` is all of `B`. Adds to `reach[i]` the
/// last element of mode `i` of coalesced `A` that `s:d` reaches.
const fn compose_integral(
    a: &Layout,
    s: i64,
    d: i64,
    whole: bool,
    reach: &mut [i64; MAX_LEAVES],
) -> Result<Layout> {
    if d == 0 {
        return Layout::int(s, 0);
    }
    let mut fa = tri!(coalesce(a));
    if fa.size() == 1 {
        // A has one element: its extension past the domain follows its last leaf's stride
        // (CuTe's coalesce gives `1:0` here, and tiles past a size-1 mode would all alias
        // coordinate 0 — e.g. rows of an identity tensor of one row)
        let d = a.strides();
        fa = tri!(Layout::int(
            1,
            if d.is_empty() { 0 } else { d[d.len() - 1] }
        ));
    }
    let ash = fa.shapes();
    let ast = fa.strides();
    let n = ash.len();
    let sign = if d < 0 { -1 } else { 1 };
    let mut rs = [0i64; MAX_LEAVES];
    let mut rd = [0i64; MAX_LEAVES];
    let mut m = 0;
    let mut rest_shape = s;
    let mut rest_stride = d.saturating_abs(); // magnitude; `sign` is applied to every stride out
    let mut i = 0;
    while i + 1 < n {
        let sh = ash[i];
        if rest_shape == 1 {
            // B is exhausted: only the stride is carried on (for the degenerate `1:d`)
            rest_stride = ceil_div(rest_stride, sh);
        } else if rest_stride % sh == 0 {
            // the whole mode is divided out
            rest_stride /= sh;
        } else if sh % rest_stride == 0 {
            let avail = sh / rest_stride;
            let take = if rest_shape < avail {
                rest_shape
            } else {
                avail
            };
            let divides = avail % rest_shape == 0 || rest_shape % avail == 0;
            if !(divides || (whole && rest_shape < avail)) {
                return Err(LayoutError::ShapeDivisibility {
                    shape: avail,
                    rest: rest_shape,
                });
            }
            rs[m] = take;
            rd[m] = tri!(mul(sign * rest_stride, ast[i]));
            m += 1;
            reach[i] += (take - 1) * rest_stride;
            rest_shape /= take;
            rest_stride = 1;
        } else if whole && (rest_shape - 1) * rest_stride < sh {
            // neither divides, but all of B's remaining elements lie in this mode
            rs[m] = rest_shape;
            rd[m] = tri!(mul(sign * rest_stride, ast[i]));
            m += 1;
            reach[i] += (rest_shape - 1) * rest_stride;
            rest_shape = 1;
            rest_stride = ceil_div(rest_stride, sh);
        } else {
            return Err(LayoutError::StrideDivisibility {
                shape: sh,
                stride: rest_stride,
            });
        }
        i += 1;
    }
    if rest_shape != 1 || m == 0 {
        rs[m] = rest_shape;
        rd[m] = tri!(mul(sign * rest_stride, ast[n - 1]));
        m += 1;
    }
    from_flat(&rs, &rd, m)
}

/// `ceil(a / b)` for `a >= 0`, `b > 0`, without overflow.
pub(crate) const fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + (a % b != 0) as i64
}
