//! Hierarchical integer tuples: shapes, strides and coordinates, e.g. `((2,2),3)`.
//!
//! An [`IntTuple`] is either an integer or a tuple of `IntTuple`s. It lives in fixed storage (no
//! allocation) as a token string of `(`, `)` and leaves, plus the leaf values in order, so that
//! every operation is a `const fn`. A leaf may also be the underscore `_`, which only coordinates use
//! (slicing).

use crate::error::{LayoutError, Result};
use crate::tri;
use core::fmt;

/// The most leaves (integers) one tuple can hold.
pub const MAX_LEAVES: usize = 16;
/// The most tokens (leaves plus parentheses) one tuple can hold.
pub const MAX_TOKENS: usize = 48;

pub(crate) const OPEN: u8 = 0;
pub(crate) const CLOSE: u8 = 1;
pub(crate) const LEAF: u8 = 2;
pub(crate) const HOLE: u8 = 3;

/// An integer, or a tuple of `IntTuple`s; leaves may be `_` in coordinates.
#[derive(Clone, Copy)]
pub struct IntTuple {
    toks: [u8; MAX_TOKENS],
    vals: [i64; MAX_LEAVES],
    ntoks: u8,
    nleaves: u8,
}

/// Token and leaf ranges of one top-level mode.
#[derive(Clone, Copy)]
pub(crate) struct Span {
    pub t0: usize,
    pub t1: usize,
    pub l0: usize,
    pub l1: usize,
}

impl IntTuple {
    /// The integer `v`.
    pub const fn int(v: i64) -> Self {
        let mut t = Self {
            toks: [0; MAX_TOKENS],
            vals: [0; MAX_LEAVES],
            ntoks: 1,
            nleaves: 1,
        };
        t.toks[0] = LEAF;
        t.vals[0] = v;
        t
    }

    /// The underscore `_` (a coordinate leaf that keeps its mode when slicing).
    pub const fn hole() -> Self {
        let mut t = Self::int(0);
        t.toks[0] = HOLE;
        t
    }

    /// The empty tuple `()`.
    pub const fn empty() -> Self {
        let mut t = Self {
            toks: [0; MAX_TOKENS],
            vals: [0; MAX_LEAVES],
            ntoks: 2,
            nleaves: 0,
        };
        t.toks[0] = OPEN;
        t.toks[1] = CLOSE;
        t
    }

    /// The start of a token-by-token build ([`IntTuple::put_token`], [`IntTuple::put_leaf`]): no
    /// tokens yet, so not a tuple until something is written.
    #[inline(always)]
    pub(crate) const fn raw() -> Self {
        Self {
            toks: [0; MAX_TOKENS],
            vals: [0; MAX_LEAVES],
            ntoks: 0,
            nleaves: 0,
        }
    }

    /// Appends the token `k` (`OPEN` or `CLOSE`) to a build.
    #[inline]
    pub(crate) const fn put_token(&mut self, k: u8) -> Result<()> {
        let n = self.ntoks as usize;
        if n == MAX_TOKENS {
            return Err(LayoutError::Capacity);
        }
        self.toks[n] = k;
        self.ntoks += 1;
        Ok(())
    }

    /// Appends the leaf `v` to a build.
    #[inline]
    pub(crate) const fn put_leaf(&mut self, v: i64) -> Result<()> {
        let (n, l) = (self.ntoks as usize, self.nleaves as usize);
        if n == MAX_TOKENS || l == MAX_LEAVES {
            return Err(LayoutError::Capacity);
        }
        self.toks[n] = LEAF;
        self.vals[l] = v;
        self.ntoks += 1;
        self.nleaves += 1;
        Ok(())
    }

    /// Sets the value of the last leaf of a build.
    #[inline]
    pub(crate) const fn set_last_leaf(&mut self, v: i64) {
        self.vals[self.nleaves as usize - 1] = v;
    }

    /// Span of mode `i` of the sub-tuple `outer` (a span of this tuple); the span of `outer`
    /// itself for `i == 0` when it is a leaf.
    pub(crate) const fn span_within(&self, outer: Span, i: usize) -> Result<Span> {
        if self.toks[outer.t0] != OPEN {
            if i == 0 {
                return Ok(outer);
            }
            return Err(LayoutError::ModeOutOfRange { index: i, rank: 1 });
        }
        let mut depth = 0i32;
        let mut mode = 0;
        let mut leaves = outer.l0;
        let mut t = outer.t0 + 1;
        let (mut t0, mut l0) = (t, leaves);
        while t + 1 < outer.t1 {
            let k = self.toks[t];
            if depth == 0 {
                t0 = t;
                l0 = leaves;
            }
            if k == OPEN {
                depth += 1;
            } else if k == CLOSE {
                depth -= 1;
            } else {
                leaves += 1;
            }
            if depth == 0 {
                if mode == i {
                    return Ok(Span {
                        t0,
                        t1: t + 1,
                        l0,
                        l1: leaves,
                    });
                }
                mode += 1;
            }
            t += 1;
        }
        Err(LayoutError::ModeOutOfRange {
            index: i,
            rank: mode,
        })
    }

    /// Drops the `(` at token `at`, the last but one token of a build, leaving its one leaf.
    #[inline]
    pub(crate) const fn unwrap_group(&mut self, at: usize) {
        self.toks[at] = LEAF;
        self.ntoks -= 1;
    }

    /// Appends to a build the tokens and leaves of `src` that `sp` covers (all of `src` for
    /// [`IntTuple::whole`]).
    #[inline]
    pub(crate) const fn put_span(&mut self, src: &IntTuple, sp: Span) -> Result<()> {
        let (n, l) = (self.ntoks as usize, self.nleaves as usize);
        let (cn, cl) = (sp.t1 - sp.t0, sp.l1 - sp.l0);
        if n + cn > MAX_TOKENS || l + cl > MAX_LEAVES {
            return Err(LayoutError::Capacity);
        }
        let mut i = 0;
        while i < cn {
            self.toks[n + i] = src.toks[sp.t0 + i];
            i += 1;
        }
        let mut j = 0;
        while j < cl {
            self.vals[l + j] = src.vals[sp.l0 + j];
            j += 1;
        }
        self.ntoks = (n + cn) as u8;
        self.nleaves = (l + cl) as u8;
        Ok(())
    }

    /// The span of the whole tuple.
    #[inline]
    pub(crate) const fn whole(&self) -> Span {
        Span {
            t0: 0,
            t1: self.ntoks as usize,
            l0: 0,
            l1: self.nleaves as usize,
        }
    }

    /// The flat tuple `(v0,v1,...)`.
    pub const fn from_ints(v: &[i64]) -> Result<Self> {
        let mut t = Self::empty();
        let mut i = 0;
        while i < v.len() {
            tri!(t.push(&Self::int(v[i])));
            i += 1;
        }
        Ok(t)
    }

    /// Appends `child` as a new last mode of this tuple (an integer is first wrapped into `(v)`).
    pub const fn push(&mut self, child: &IntTuple) -> Result<()> {
        if !self.is_tuple() {
            let mut w = Self::empty();
            tri!(w.push(self));
            *self = w;
        }
        let nt = self.ntoks as usize;
        let cn = child.ntoks as usize;
        let nl = self.nleaves as usize;
        let cl = child.nleaves as usize;
        if nt + cn > MAX_TOKENS || nl + cl > MAX_LEAVES {
            return Err(LayoutError::Capacity);
        }
        // Overwrite the closing `)` and write it again after the child.
        let mut i = 0;
        while i < cn {
            self.toks[nt - 1 + i] = child.toks[i];
            i += 1;
        }
        self.toks[nt - 1 + cn] = CLOSE;
        let mut j = 0;
        while j < cl {
            self.vals[nl + j] = child.vals[j];
            j += 1;
        }
        self.ntoks = (nt + cn) as u8;
        self.nleaves = (nl + cl) as u8;
        Ok(())
    }

    /// Is this an integer (or `_`), not a tuple?
    #[cfg_attr(not(target_arch = "nvptx64"), inline)]
    pub const fn is_int(&self) -> bool {
        self.ntoks == 1
    }
    /// Is this a tuple?
    #[cfg_attr(not(target_arch = "nvptx64"), inline)]
    pub const fn is_tuple(&self) -> bool {
        !self.is_int()
    }
    /// Is this the underscore `_`?
    pub const fn is_hole(&self) -> bool {
        self.ntoks == 1 && self.toks[0] == HOLE
    }
    /// The value of an integer (the first leaf of a tuple).
    pub const fn value(&self) -> i64 {
        self.vals[0]
    }
    /// Number of leaves.
    // (inlined on the host, where the algebra runs at run time; on the device an inline hint on
    // these accessors changed how LLVM unrolled the kernels' loops: 5-20% more instructions)
    #[cfg_attr(not(target_arch = "nvptx64"), inline)]
    pub const fn num_leaves(&self) -> usize {
        self.nleaves as usize
    }
    /// The leaves, in order (an `_` reads as 0).
    #[cfg_attr(not(target_arch = "nvptx64"), inline)]
    pub const fn leaves(&self) -> &[i64] {
        self.vals.split_at(self.nleaves as usize).0
    }
    #[inline]
    pub(crate) const fn num_tokens(&self) -> usize {
        self.ntoks as usize
    }
    #[cfg_attr(not(target_arch = "nvptx64"), inline)]
    pub(crate) const fn tokens(&self) -> &[u8] {
        self.toks.split_at(self.ntoks as usize).0
    }
    /// Is leaf `i` the underscore?
    pub const fn leaf_is_hole(&self, i: usize) -> bool {
        let mut t = 0;
        let mut l = 0;
        while t < self.ntoks as usize {
            let k = self.toks[t];
            if k == LEAF || k == HOLE {
                if l == i {
                    return k == HOLE;
                }
                l += 1;
            }
            t += 1;
        }
        false
    }
    /// Does any leaf read `_`?
    pub const fn has_hole(&self) -> bool {
        let mut t = 0;
        while t < self.ntoks as usize {
            if self.toks[t] == HOLE {
                return true;
            }
            t += 1;
        }
        false
    }

    /// Number of top-level modes (1 for an integer).
    pub const fn rank(&self) -> usize {
        if self.is_int() {
            return 1;
        }
        let mut depth = 0i32;
        let mut r = 0;
        let mut t = 1;
        while t + 1 < self.ntoks as usize {
            let k = self.toks[t];
            if depth == 0 && k != CLOSE {
                r += 1;
            }
            if k == OPEN {
                depth += 1;
            } else if k == CLOSE {
                depth -= 1;
            }
            t += 1;
        }
        r
    }

    /// Nesting depth: 0 for an integer, 1 for a flat tuple, ...
    pub const fn depth(&self) -> usize {
        let mut d = 0i32;
        let mut m = 0i32;
        let mut t = 0;
        while t < self.ntoks as usize {
            if self.toks[t] == OPEN {
                d += 1;
                if d > m {
                    m = d;
                }
            } else if self.toks[t] == CLOSE {
                d -= 1;
            }
            t += 1;
        }
        m as usize
    }

    /// Token and leaf ranges of mode `i` (of the integer itself for `i == 0` on an integer).
    pub(crate) const fn span(&self, i: usize) -> Result<Span> {
        self.span_within(self.whole(), i)
    }

    /// The sub-tuple made of tokens `t0..t1` and leaves `l0..l1`.
    pub(crate) const fn sub(&self, s: Span) -> Self {
        let mut r = Self {
            toks: [0; MAX_TOKENS],
            vals: [0; MAX_LEAVES],
            ntoks: 0,
            nleaves: 0,
        };
        let mut t = s.t0;
        while t < s.t1 {
            r.toks[t - s.t0] = self.toks[t];
            t += 1;
        }
        let mut l = s.l0;
        while l < s.l1 {
            r.vals[l - s.l0] = self.vals[l];
            l += 1;
        }
        r.ntoks = (s.t1 - s.t0) as u8;
        r.nleaves = (s.l1 - s.l0) as u8;
        r
    }

    /// Mode `i` (`get<I>` in CuTe). An integer has one mode: itself.
    pub const fn get(&self, i: usize) -> Result<Self> {
        let s = tri!(self.span(i));
        Ok(self.sub(s))
    }

    /// The same nesting with the leaves replaced by `vals[..num_leaves]`.
    pub const fn with_leaves(&self, vals: &[i64]) -> Self {
        let mut r = *self;
        let mut i = 0;
        while i < self.nleaves as usize {
            r.vals[i] = vals[i];
            i += 1;
        }
        r
    }

    /// Product of all leaves (`size` of a shape). `_` and overflow are errors.
    pub const fn size(&self) -> Result<i64> {
        if self.has_hole() {
            return Err(LayoutError::UnexpectedUnderscore);
        }
        let mut p: i64 = 1;
        let mut i = 0;
        while i < self.nleaves as usize {
            p = match p.checked_mul(self.vals[i]) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            i += 1;
        }
        Ok(p)
    }

    /// All leaves as one flat tuple; an integer stays an integer.
    pub const fn flatten(&self) -> Self {
        if self.is_int() {
            return *self;
        }
        let mut r = Self::empty();
        let mut t = 0;
        let mut n = 1;
        while t < self.ntoks as usize {
            let k = self.toks[t];
            if k == LEAF || k == HOLE {
                r.toks[n] = k;
                n += 1;
            }
            t += 1;
        }
        r.toks[n] = CLOSE;
        r.ntoks = (n + 1) as u8;
        r.nleaves = self.nleaves;
        r.vals = self.vals;
        r
    }

    /// `(size(mode 0), size(mode 1), ...)`, an integer for an integer.
    pub const fn product_each(&self) -> Result<Self> {
        if self.is_int() {
            return Ok(Self::int(tri!(self.size())));
        }
        let mut r = Self::empty();
        let mut i = 0;
        while i < self.rank() {
            let m = tri!(self.get(i));
            tri!(r.push(&Self::int(tri!(m.size()))));
            i += 1;
        }
        Ok(r)
    }

    /// Same nesting (leaves and `_` count as the same kind of token)?
    pub const fn congruent(&self, other: &Self) -> bool {
        if self.ntoks != other.ntoks {
            return false;
        }
        let mut t = 0;
        while t < self.ntoks as usize {
            let a = if self.toks[t] == HOLE {
                LEAF
            } else {
                self.toks[t]
            };
            let b = if other.toks[t] == HOLE {
                LEAF
            } else {
                other.toks[t]
            };
            if a != b {
                return false;
            }
            t += 1;
        }
        true
    }

    /// Equality of nesting and values (`const` form of `==`).
    pub const fn equals(&self, other: &Self) -> bool {
        if self.ntoks != other.ntoks || self.nleaves != other.nleaves {
            return false;
        }
        let mut t = 0;
        while t < self.ntoks as usize {
            if self.toks[t] != other.toks[t] {
                return false;
            }
            t += 1;
        }
        let mut l = 0;
        while l < self.nleaves as usize {
            if self.vals[l] != other.vals[l] {
                return false;
            }
            l += 1;
        }
        true
    }

    /// `shape_div(S, d)` (seed 003): removes the first `d` elements from the left, leaf by leaf:
    /// `s' = ceil(s / d)`, `d' = ceil(d / s)`. E.g. `(3,6,2,8) / 9 => (1,2,2,8)`.
    ///
    /// Admissible when `s % d == 0 || d % s == 0` at each leaf (stride divisibility condition).
    ///
    /// # Example
    /// Seed 003's shape divisions:
    /// ```
    /// use layout_core::*;
    /// let d = |s: &str, n| IntTuple::parse(s).unwrap().shape_div(n).unwrap().to_string();
    /// assert_eq!(d("(6,2)", 2), "(3,2)");
    /// assert_eq!(d("(6,2)", 12), "(1,1)");
    /// assert_eq!(d("(3,6,2,8)", 6), "(1,3,2,8)");
    /// assert_eq!(d("(42,16,3)", 6), "(7,16,3)");
    /// assert!(IntTuple::parse("(6,2)").unwrap().shape_div(4).is_err());
    /// ```
    pub const fn shape_div(&self, d: i64) -> Result<Self> {
        let mut v = [0i64; MAX_LEAVES];
        let mut d = d;
        let mut i = 0;
        while i < self.nleaves as usize {
            let s = self.vals[i];
            if s <= 0 || d <= 0 {
                return Err(LayoutError::NonPositiveShape {
                    value: if s <= 0 { s } else { d },
                });
            }
            if s % d != 0 && d % s != 0 {
                return Err(LayoutError::StrideDivisibility {
                    shape: s,
                    stride: d,
                });
            }
            v[i] = s / d + (s % d != 0) as i64;
            d = d / s + (d % s != 0) as i64;
            i += 1;
        }
        Ok(self.with_leaves(&v))
    }

    /// `shape_mod(S, m)` (seed 003): keeps the first `m` elements from the left, leaf by leaf:
    /// `s' = min(s, m)`, `m' = ceil(m / s)`. E.g. `(3,6,2,8) % 6 => (3,2,1,1)`.
    ///
    /// Admissible when `s % m == 0 || m % s == 0` at each leaf (shape divisibility condition).
    ///
    /// # Example
    /// Seed 003's shape modulos:
    /// ```
    /// use layout_core::*;
    /// let m = |s: &str, n| IntTuple::parse(s).unwrap().shape_mod(n).unwrap().to_string();
    /// assert_eq!(m("(6,2)", 3), "(3,1)");
    /// assert_eq!(m("(6,2)", 12), "(6,2)");
    /// assert_eq!(m("(3,6,2,8)", 9), "(3,3,1,1)");
    /// assert_eq!(m("(1,2,2,8)", 16), "(1,2,2,4)");
    /// assert!(IntTuple::parse("(6,2)").unwrap().shape_mod(4).is_err());
    /// ```
    pub const fn shape_mod(&self, m: i64) -> Result<Self> {
        let mut v = [0i64; MAX_LEAVES];
        let mut m = m;
        let mut i = 0;
        while i < self.nleaves as usize {
            let s = self.vals[i];
            if s <= 0 || m <= 0 {
                return Err(LayoutError::NonPositiveShape {
                    value: if s <= 0 { s } else { m },
                });
            }
            if s % m != 0 && m % s != 0 {
                return Err(LayoutError::ShapeDivisibility { shape: s, rest: m });
            }
            v[i] = if s < m { s } else { m };
            m = m / s + (m % s != 0) as i64;
            i += 1;
        }
        Ok(self.with_leaves(&v))
    }

    /// `idx2crd(c, shape)` with `self` the shape: the natural coordinate, congruent with the shape,
    /// of `c` — a 1-D index, a coordinate coarser than the shape (an integer where the shape has a
    /// tuple is split colexicographically over it), or a natural coordinate. E.g. in `(3,(2,3))`
    /// both `16` and `(1,5)` and `(1,(1,2))` are `(1,(1,2))`.
    ///
    /// Post-conditions: the result is congruent with the shape, each leaf `0 <= r_k < s_k`, and
    /// `crd2idx` of it under any layout of this shape equals `crd2idx` of `c`. Errors: a `c` whose
    /// nesting is finer than the shape's (`ProfileMismatch`), an integer outside the mode it
    /// indexes (`IndexOutOfRange`), `_` in `c` (`UnexpectedUnderscore`), an invalid shape.
    pub const fn idx2crd(&self, c: &IntTuple) -> Result<IntTuple> {
        tri!(self.check_shape());
        tri!(self.size());
        let (nat, _) = tri!(crate::layout::natural_coord(self, c, false));
        Ok(self.with_leaves(&nat))
    }

    /// Checks that no leaf is `_` and every leaf is positive (a valid shape).
    pub const fn check_shape(&self) -> Result<()> {
        if self.has_hole() {
            return Err(LayoutError::UnexpectedUnderscore);
        }
        let mut i = 0;
        while i < self.nleaves as usize {
            if self.vals[i] <= 0 {
                return Err(LayoutError::NonPositiveShape {
                    value: self.vals[i],
                });
            }
            i += 1;
        }
        Ok(())
    }

    /// Reads a tuple such as `((2,_4),_,3)`: integers (optionally written `_4`, as CuTe prints
    /// static ones), `_`, and parenthesized lists. Whitespace is ignored.
    pub const fn parse(s: &str) -> Result<Self> {
        let b = s.as_bytes();
        let (t, end) = tri!(Self::parse_at(b, 0));
        let end = skip_ws(b, end);
        if end != b.len() {
            return Err(LayoutError::Parse {
                at: end,
                what: "trailing characters",
            });
        }
        Ok(t)
    }

    /// Reads one tuple starting at byte `pos`; returns it and the position after it.
    pub const fn parse_at(b: &[u8], pos: usize) -> Result<(Self, usize)> {
        Self::parse_nested(b, pos, 0)
    }

    /// [`IntTuple::parse_at`] inside `depth` open parentheses: a tuple nested deeper than
    /// `MAX_TOKENS / 2` cannot be stored, so reading stops there (bounded recursion).
    const fn parse_nested(b: &[u8], pos: usize, depth: usize) -> Result<(Self, usize)> {
        let mut p = skip_ws(b, pos);
        if depth > MAX_TOKENS / 2 {
            return Err(LayoutError::Capacity);
        }
        if p >= b.len() {
            return Err(LayoutError::Parse {
                at: p,
                what: "expected an integer, '_' or '('",
            });
        }
        if b[p] == b'(' {
            let mut t = Self::empty();
            p = skip_ws(b, p + 1);
            if p < b.len() && b[p] == b')' {
                return Ok((t, p + 1));
            }
            loop {
                let (c, q) = tri!(Self::parse_nested(b, p, depth + 1));
                tri!(t.push(&c));
                p = skip_ws(b, q);
                if p >= b.len() {
                    return Err(LayoutError::Parse {
                        at: p,
                        what: "unclosed '('",
                    });
                }
                if b[p] == b',' {
                    p += 1;
                } else if b[p] == b')' {
                    return Ok((t, p + 1));
                } else {
                    return Err(LayoutError::Parse {
                        at: p,
                        what: "expected ',' or ')'",
                    });
                }
            }
        }
        let mut neg = false;
        // CuTe's `X` (a projection's "leave this mode out") is its underscore
        if b[p] == b'X' {
            return Ok((Self::hole(), p + 1));
        }
        if b[p] == b'_' {
            p += 1;
            if p >= b.len() || !(b[p].is_ascii_digit() || b[p] == b'-') {
                return Ok((Self::hole(), p));
            }
        }
        if b[p] == b'-' {
            neg = true;
            p += 1;
        }
        if p >= b.len() || !b[p].is_ascii_digit() {
            return Err(LayoutError::Parse {
                at: p,
                what: "expected an integer, '_' or '('",
            });
        }
        let mut v: i64 = 0;
        while p < b.len() && b[p].is_ascii_digit() {
            v = match v.checked_mul(10) {
                Some(x) => match x.checked_add((b[p] - b'0') as i64) {
                    Some(y) => y,
                    None => return Err(LayoutError::Overflow),
                },
                None => return Err(LayoutError::Overflow),
            };
            p += 1;
        }
        Ok((Self::int(if neg { -v } else { v }), p))
    }
}

pub(crate) const fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && (b[p] == b' ' || b[p] == b'\t' || b[p] == b'\n' || b[p] == b'\r') {
        p += 1;
    }
    p
}

impl PartialEq for IntTuple {
    fn eq(&self, other: &Self) -> bool {
        self.equals(other)
    }
}
impl Eq for IntTuple {}

/// Writes a token string with the given leaves, in CuTe notation.
pub(crate) fn write_tokens(f: &mut fmt::Formatter<'_>, toks: &[u8], vals: &[i64]) -> fmt::Result {
    write_tokens_by(f, toks, |f, l, hole| {
        if hole {
            f.write_str("_")
        } else {
            write!(f, "{}", vals[l])
        }
    })
}

/// Writes a token string, each leaf (index, is `_`) by `leaf`.
pub(crate) fn write_tokens_by(
    f: &mut fmt::Formatter<'_>,
    toks: &[u8],
    mut leaf: impl FnMut(&mut fmt::Formatter<'_>, usize, bool) -> fmt::Result,
) -> fmt::Result {
    let mut l = 0;
    let mut first = true;
    for &k in toks {
        match k {
            OPEN => {
                if !first {
                    f.write_str(",")?;
                }
                f.write_str("(")?;
                first = true;
                continue;
            }
            CLOSE => {
                f.write_str(")")?;
            }
            _ => {
                if !first {
                    f.write_str(",")?;
                }
                leaf(f, l, k == HOLE)?;
                l += 1;
            }
        }
        first = false;
    }
    Ok(())
}

impl fmt::Display for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_tokens(f, self.tokens(), self.leaves())
    }
}
impl fmt::Debug for IntTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
