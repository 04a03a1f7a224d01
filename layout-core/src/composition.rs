//! `composition`: `R = A o B`, `R(c) = A(B(c))`.

use crate::error::{LayoutError, Result};
use crate::int_tuple::{CLOSE, MAX_LEAVES, OPEN};
use crate::layout::{in_place, Layout};
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
/// - `R(i) == A(B(i))` for all `0 <= i < size(B)` when `B` is injective or integral; past its
///   domain `A` is evaluated by its own formula ([`Layout::call`]: the last leaf takes what
///   remains, also when it has size 1), as CuTe C++ extends it
///
/// # Example
/// Seed 003's worked composition `(6,2):(8,2) o (4,3):(3,1)` with its table of `R(i)`, and its
/// composition examples 1 and 2:
/// ```
/// use layout_core::*;
/// let l = |s: &str| Layout::parse(s).unwrap();
/// let r = composition(&l("(6,2):(8,2)"), &l("(4,3):(3,1)")).unwrap();
/// assert_eq!(r.to_string(), "((2,2),3):((24,2),8)");
/// let table = [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42];
/// assert!((0..12).all(|i| r.call(i) == table[i as usize]));
/// let r1 = composition(&l("20:2"), &l("(5,4):(4,1)")).unwrap();
/// assert_eq!(r1.to_string(), "(5,4):(8,2)");
/// let r2 = composition(&l("(10,2):(16,4)"), &l("(5,4):(1,5)")).unwrap();
/// assert_eq!(r2.to_string(), "(5,(2,2)):(16,(80,4))");
/// ```
pub const fn composition(a: &Layout, b: &Layout) -> Result<Layout> {
    let mut out = Err(LayoutError::Capacity);
    composition_at(a, b, &mut out);
    out
}

#[cfg_attr(not(target_arch = "nvptx64"), inline(never))]
const fn composition_at(a: &Layout, b: &Layout, out: &mut Result<Layout>) {
    in_place!(out, r => compose_into(a.shapes(), a.strides(), b, r))
}

/// [`composition`] of `A = a_s:a_d` (flat; only its leaves matter) and `B`, appended to the build
/// `r` as one mode of it (not checked: the caller checks the whole).
pub(crate) const fn compose_into(
    a_s: &[i64],
    a_d: &[i64],
    b: &Layout,
    r: &mut Layout,
) -> Result<()> {
    let fa = Coalesced::of(a_s, a_d);
    // B acts as one integral mode when at most one of its leaves moves (size > 1, stride != 0),
    // or when all of its image lies in the first mode of coalesced A, where A is linear
    let (s, d) = (b.shapes(), b.strides());
    let mut moving = 0;
    let mut nonneg = true;
    let mut i = 0;
    while i < s.len() {
        if s[i] > 1 && d[i] != 0 {
            moving += 1;
        }
        nonneg = nonneg && d[i] >= 0;
        i += 1;
    }
    let whole = moving <= 1 || (nonneg && b.cosize() <= fa.mode(0).0);
    // R has B's nesting, each leaf of B replaced by the modes it takes from A; per mode of
    // coalesced A, `reach` sums the last element B's modes reach in it
    let mut reach = [0i64; MAX_LEAVES];
    let toks = b.shape_tokens();
    let mut leaf = 0;
    let mut t = 0;
    while t < toks.len() {
        let k = toks[t];
        if k == OPEN {
            tri!(r.put_open());
        } else if k == CLOSE {
            tri!(r.put_close());
        } else {
            tri!(compose_integral(
                &fa, s[leaf], d[leaf], whole, &mut reach, r
            ));
            leaf += 1;
        }
        t += 1;
    }
    // (a non-injective B keeps CuTe's by-mode result, whose value past a carry is documented
    // to differ from A(B(i)))
    if !whole {
        let mut at = fa.first();
        let mut k = 0;
        while k + 1 < fa.n {
            let (sh, _, next) = fa.next(at);
            if reach[k] >= sh && !surely_not_injective(b) {
                return Err(LayoutError::ModesCarry {
                    shape: sh,
                    reach: reach[k],
                });
            }
            at = next;
            k += 1;
        }
    }
    Ok(())
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

/// `composition(A, <B0, B1, ...>)`: mode `i` of `A` composed with `B_i`, the modes past the tiler's
/// rank (and those under `_`) kept. A layout tiler is plain [`composition`].
///
/// Post-conditions: `rank(R) == rank(A)` for a by-mode tiler; mode `i` of `R` is
/// `composition(mode i of A, B_i)`.
///
/// # Example
/// Seed 003's by-mode composition with the tiler `<3:4, 8:2>`, and with the shape `(3,8)`:
/// ```
/// use layout_core::*;
/// let a = Layout::parse("(12,(4,8)):(59,(13,1))").unwrap();
/// let r = composition_tiler(&a, &Tiler::parse("<3:4,8:2>").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "(3,(2,4)):(236,(26,1))");
/// let r = composition_tiler(&a, &Tiler::parse("(3,8)").unwrap()).unwrap();
/// assert_eq!(r.to_string(), "(3,(4,2)):(59,(13,1))");
/// ```
pub const fn composition_tiler(a: &Layout, t: &Tiler) -> Result<Layout> {
    by_mode(a, t, Splitter::Compose)
}

const fn mul(a: i64, b: i64) -> Result<i64> {
    match a.checked_mul(b) {
        Some(v) => Ok(v),
        None => Err(LayoutError::Overflow),
    }
}

/// Coalesced `A`, the modes composition takes elements from, read off `A`'s leaves as they are
/// needed (no copy of them): a mode is a run of leaves that [`crate::coalesce`] merges.
///
/// Past its domain `A` extends as its own formula does ([`Layout::call`]: the last leaf takes
/// what remains). So a last leaf of size 1 is not dropped, as `coalesce` would: it stays as the
/// last mode `1:d` (the one that extends), unless the mode before it continues into it. CuTe C++
/// does the same (`coalesce_x`); e.g. `(4,1):(4,1) o 2:32` is `2:8`, `A(32) = 8`.
struct Coalesced<'a> {
    s: &'a [i64],
    d: &'a [i64],
    /// Number of modes (at least 1).
    n: usize,
    /// The leaves `..end` are coalesced; a last leaf of size 1 (the tail) is not among them.
    end: usize,
    /// The stride of the last leaf (0 for an empty layout).
    tail: i64,
}

impl<'a> Coalesced<'a> {
    const fn of(s: &'a [i64], d: &'a [i64]) -> Self {
        let len = s.len();
        let has_tail = len > 0 && s[len - 1] == 1;
        let mut c = Self {
            s,
            d,
            n: 0,
            end: if has_tail { len - 1 } else { len },
            tail: if len > 0 { d[len - 1] } else { 0 },
        };
        let mut at = c.first();
        while at < len {
            at = c.next(at).2;
            c.n += 1;
        }
        if c.n == 0 {
            c.n = 1;
        }
        c
    }

    /// The leaf where the first mode starts.
    #[cfg_attr(not(target_arch = "nvptx64"), inline(always))]
    const fn first(&self) -> usize {
        self.skip_ones(0)
    }

    #[cfg_attr(not(target_arch = "nvptx64"), inline(always))]
    const fn skip_ones(&self, mut at: usize) -> usize {
        while at < self.end && self.s[at] == 1 {
            at += 1;
        }
        at
    }

    /// The mode starting at leaf `at` (the tail `1:d` from `end` on), and where the next one
    /// starts.
    #[cfg_attr(not(target_arch = "nvptx64"), inline(always))]
    const fn next(&self, at: usize) -> (i64, i64, usize) {
        if at >= self.end {
            return (1, self.tail, self.s.len());
        }
        let (mut sh, st) = (self.s[at], self.d[at]);
        let mut j = self.skip_ones(at + 1);
        // (a product past i64 equals no stride)
        while j < self.end && matches!(sh.checked_mul(st), Some(x) if x == self.d[j]) {
            sh *= self.s[j];
            j = self.skip_ones(j + 1);
        }
        if j == self.end
            && self.end < self.s.len()
            && matches!(sh.checked_mul(st), Some(x) if x == self.tail)
        {
            // the tail continues this mode: this one is the last, and extends along `st`
            j = self.s.len();
        }
        (sh, st, j)
    }

    /// Mode `i`.
    #[cfg_attr(not(target_arch = "nvptx64"), inline(always))]
    const fn mode(&self, i: usize) -> (i64, i64) {
        let mut at = self.first();
        let mut k = 0;
        while k < i {
            at = self.next(at).2;
            k += 1;
        }
        let (s, d, _) = self.next(at);
        (s, d)
    }
}

/// Appends `A o s:d` to the build `out` for an integral mode `s:d` of `B`; `whole` when `s:d` acts
/// as all of `B`. Adds to `reach[i]` the last element of mode `i` of coalesced `A` that `s:d`
/// reaches.
const fn compose_integral(
    fa: &Coalesced,
    s: i64,
    d: i64,
    whole: bool,
    reach: &mut [i64; MAX_LEAVES],
    out: &mut Layout,
) -> Result<()> {
    if d == 0 {
        return out.put_leaf(s, 0);
    }
    let n = fa.n;
    let sign = if d < 0 { -1 } else { 1 };
    // the modes taken are written as a tuple, unwrapped at the end when there is one
    let open = tri!(out.open_group());
    let mut m = 0;
    let mut rest_shape = s;
    let mut rest_stride = d.saturating_abs(); // magnitude; `sign` is applied to every stride out
    let mut at = fa.first();
    let mut i = 0;
    while i + 1 < n {
        let (sh, st, next) = fa.next(at);
        at = next;
        if rest_shape == 1 {
            // B is exhausted: only the stride is carried on (for the degenerate `1:d`)
            rest_stride = ceil_div(rest_stride, sh);
        } else if is_multiple(rest_stride, sh) {
            // the whole mode is divided out
            rest_stride /= sh;
        } else if is_multiple(sh, rest_stride) {
            let avail = if rest_stride == 1 {
                sh
            } else {
                sh / rest_stride
            };
            let take = if rest_shape < avail {
                rest_shape
            } else {
                avail
            };
            let divides = is_multiple(avail, rest_shape) || is_multiple(rest_shape, avail);
            if !(divides || (whole && rest_shape < avail)) {
                return Err(LayoutError::ShapeDivisibility {
                    shape: avail,
                    rest: rest_shape,
                });
            }
            tri!(out.put_leaf(take, tri!(mul(sign * rest_stride, st))));
            m += 1;
            reach[i] += (take - 1) * rest_stride;
            rest_shape = if take == rest_shape {
                1
            } else {
                rest_shape / take
            };
            rest_stride = 1;
        } else if whole && (rest_shape - 1) * rest_stride < sh {
            // neither divides, but all of B's remaining elements lie in this mode
            tri!(out.put_leaf(rest_shape, tri!(mul(sign * rest_stride, st))));
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
        let st = fa.next(at).1;
        tri!(out.put_leaf(rest_shape, tri!(mul(sign * rest_stride, st))));
        m += 1;
    }
    out.close_group(open, m)
}

/// `x % m == 0` for `x, m > 0`, dividing only when it must (the common cases, `x < m` and
/// `m == 1`, are comparisons).
#[inline(always)]
const fn is_multiple(x: i64, m: i64) -> bool {
    x == m || (x > m && (m == 1 || x % m == 0))
}

/// `ceil(a / b)` for `a >= 0`, `b > 0`, without overflow.
pub(crate) const fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + (a % b != 0) as i64
}
