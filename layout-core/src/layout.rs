//! `Layout`: a shape and a congruent stride, a function from coordinates to indices.
//!
//! `L(c) = sum_i c_i * d_i` over the natural coordinate `c` of shape `S` and stride `D`. A layout
//! also takes 1-D coordinates (colexicographic, `0 <= i < size(L)`) and any coordinate whose
//! nesting is coarser than `S` (an integer where `S` has a tuple is split colexicographically).
//!
//! Invariant kept by every constructor: shapes are positive and both `size(L)` and
//! `sum_i (s_i - 1) * |d_i|` fit in `i64`, so `size`, `cosize` and evaluation inside the domain never
//! overflow.

use crate::error::{LayoutError, Result};
use crate::int_tuple::{IntTuple, Span, CLOSE, HOLE, LEAF, MAX_LEAVES, OPEN};
use crate::tri;
use core::fmt;

/// A CuTe layout `shape:stride`.
#[derive(Clone, Copy)]
pub struct Layout {
    shape: IntTuple,
    stride: [i64; MAX_LEAVES],
}

impl Layout {
    /// `shape:stride`; both must be congruent, shapes positive.
    pub const fn new(shape: IntTuple, stride: IntTuple) -> Result<Self> {
        if !shape.congruent(&stride) {
            return Err(LayoutError::ProfileMismatch);
        }
        if stride.has_hole() {
            return Err(LayoutError::UnexpectedUnderscore);
        }
        Self::from_parts(shape, stride.leaves())
    }

    /// `shape` with the strides `stride` given leaf by leaf.
    pub const fn from_parts(shape: IntTuple, stride: &[i64]) -> Result<Self> {
        if shape.has_hole() {
            return Err(LayoutError::UnexpectedUnderscore);
        }
        let n = shape.num_leaves();
        if stride.len() < n {
            return Err(LayoutError::RankMismatch {
                expected: n,
                found: stride.len(),
            });
        }
        let mut l = Self {
            shape,
            stride: [0; MAX_LEAVES],
        };
        let mut i = 0;
        while i < n {
            l.stride[i] = stride[i];
            i += 1;
        }
        check_extents!(shape.leaves(), l.stride, n);
        Ok(l)
    }

    /// The rank-0 layout `s:d`.
    pub const fn int(s: i64, d: i64) -> Result<Self> {
        let mut l = Self::raw();
        tri!(l.put_leaf(s, d));
        tri!(l.check());
        Ok(l)
    }

    /// `make_layout(shape)`: the compact column-major layout (LayoutLeft), strides the exclusive
    /// prefix products of the flattened shape.
    ///
    /// # Example
    /// Seed 000's default (LayoutLeft) strides `(1, M, M*N)`, for `(3,4,5)` and its `(4,2)`:
    /// ```
    /// use layout_core::*;
    /// let c = |s: &str| Layout::col_major(IntTuple::parse(s).unwrap()).unwrap().to_string();
    /// assert_eq!(c("(3,4,5)"), "(3,4,5):(1,3,12)");
    /// assert_eq!(c("(4,2)"), "(4,2):(1,4)");
    /// ```
    pub const fn col_major(shape: IntTuple) -> Result<Self> {
        tri!(shape.check_shape());
        let s = shape.leaves();
        let mut d = [0i64; MAX_LEAVES];
        let mut acc: i64 = 1;
        let mut i = 0;
        while i < s.len() {
            d[i] = acc;
            acc = match acc.checked_mul(s[i]) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            i += 1;
        }
        Self::from_parts(shape, &d)
    }

    /// `make_layout(shape, LayoutRight{})`: the compact row-major layout.
    ///
    /// # Example
    /// Seed 000's LayoutRight strides `(N*K, K, 1)`, for `(3,4,5)` and its row-major 4x2 matrix:
    /// ```
    /// use layout_core::*;
    /// let r = |s: &str| Layout::row_major(IntTuple::parse(s).unwrap()).unwrap().to_string();
    /// assert_eq!(r("(3,4,5)"), "(3,4,5):(20,5,1)");
    /// assert_eq!(r("(4,2)"), "(4,2):(2,1)");
    /// ```
    pub const fn row_major(shape: IntTuple) -> Result<Self> {
        tri!(shape.check_shape());
        let s = shape.leaves();
        let mut d = [0i64; MAX_LEAVES];
        let mut acc: i64 = 1;
        let mut i = s.len();
        while i > 0 {
            i -= 1;
            d[i] = acc;
            acc = match acc.checked_mul(s[i]) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
        }
        Self::from_parts(shape, &d)
    }

    /// `make_ordered_layout(shape, order)`: a compact layout whose leaf with the smallest `order`
    /// value gets stride 1, the next the product so far, and so on (ties keep leaf order). `order`
    /// is congruent with `shape` or a flat tuple with one entry per leaf.
    pub const fn ordered(shape: IntTuple, order: IntTuple) -> Result<Self> {
        tri!(shape.check_shape());
        let n = shape.num_leaves();
        if order.num_leaves() != n || order.has_hole() {
            return Err(LayoutError::RankMismatch {
                expected: n,
                found: order.num_leaves(),
            });
        }
        let s = shape.leaves();
        let o = order.leaves();
        let mut d = [0i64; MAX_LEAVES];
        let mut done = [false; MAX_LEAVES];
        let mut acc: i64 = 1;
        let mut k = 0;
        while k < n {
            // the not yet placed leaf of smallest order
            let mut best = n;
            let mut i = 0;
            while i < n {
                if !done[i] && (best == n || o[i] < o[best]) {
                    best = i;
                }
                i += 1;
            }
            done[best] = true;
            d[best] = acc;
            acc = match acc.checked_mul(s[best]) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            k += 1;
        }
        Self::from_parts(shape, &d)
    }

    /// Reads `S:D` (CuTe notation, e.g. `((2,2),3):((24,2),8)`); a bare shape `S` is its
    /// column-major layout.
    pub const fn parse(s: &str) -> Result<Self> {
        let b = s.as_bytes();
        let (l, end) = tri!(Self::parse_at(b, 0));
        let end = crate::int_tuple::skip_ws(b, end);
        if end != b.len() {
            return Err(LayoutError::Parse {
                at: end,
                what: "trailing characters",
            });
        }
        Ok(l)
    }

    /// Reads one layout starting at byte `pos`; returns it and the position after it.
    pub const fn parse_at(b: &[u8], pos: usize) -> Result<(Self, usize)> {
        let (shape, p) = tri!(IntTuple::parse_at(b, pos));
        let q = crate::int_tuple::skip_ws(b, p);
        if q < b.len() && b[q] == b':' {
            let (stride, r) = tri!(IntTuple::parse_at(b, q + 1));
            Ok((tri!(Self::new(shape, stride)), r))
        } else {
            Ok((tri!(Self::col_major(shape)), p))
        }
    }

    /// The shape.
    pub const fn shape(&self) -> IntTuple {
        self.shape
    }
    /// The shape's tokens (`(`, `)`, leaf), in order.
    #[inline]
    pub(crate) const fn shape_tokens(&self) -> &[u8] {
        self.shape.tokens()
    }
    /// The stride, congruent with the shape.
    pub const fn stride(&self) -> IntTuple {
        self.shape.with_leaves(&self.stride)
    }
    /// The strides leaf by leaf.
    #[cfg_attr(not(target_arch = "nvptx64"), inline)]
    pub const fn strides(&self) -> &[i64] {
        self.stride.split_at(self.shape.num_leaves()).0
    }
    /// The shape's leaves.
    #[cfg_attr(not(target_arch = "nvptx64"), inline)]
    pub const fn shapes(&self) -> &[i64] {
        self.shape.leaves()
    }
    /// Copies the shape's and the stride's leaves into `s` and `d` (for operations that rewrite
    /// them in place); returns how many there are.
    #[inline]
    pub(crate) const fn leaves_into(&self, s: &mut [i64], d: &mut [i64]) -> usize {
        let n = self.shape.num_leaves();
        let sh = self.shape.leaves();
        let mut i = 0;
        while i < n {
            s[i] = sh[i];
            d[i] = self.stride[i];
            i += 1;
        }
        n
    }
    /// Number of top-level modes.
    pub const fn rank(&self) -> usize {
        self.shape.rank()
    }
    /// Nesting depth of the shape.
    pub const fn depth(&self) -> usize {
        self.shape.depth()
    }
    /// Size of the domain: the product of the shape.
    ///
    /// # Example
    /// Seed 000's size of a layout and of its mode 1, and of its hierarchical 4x2 layout:
    /// ```
    /// use layout_core::*;
    /// let a = Layout::parse("(4,6):(6,1)").unwrap();
    /// assert_eq!(a.size(), 24);
    /// assert_eq!(a.get(1).unwrap().size(), 6);
    /// assert_eq!(Layout::parse("((2,2),2):((4,1),2)").unwrap().size(), 8);
    /// ```
    pub const fn size(&self) -> i64 {
        product_of(self.shape.leaves())
    }
    /// Size of the codomain: `L(size(L) - 1) + 1`, one past the largest index for non-negative
    /// strides.
    ///
    /// # Example
    /// Seed 000's cosize of a layout and of its mode 1; seed 003's `(4,(2,3)):(2,(1,8))`, of
    /// cosize 24:
    /// ```
    /// use layout_core::*;
    /// let a = Layout::parse("(4,6):(6,1)").unwrap();
    /// assert_eq!(a.cosize(), 24);
    /// assert_eq!(a.get(1).unwrap().cosize(), 6);
    /// assert_eq!(Layout::parse("(4,(2,3)):(2,(1,8))").unwrap().cosize(), 24);
    /// ```
    pub const fn cosize(&self) -> i64 {
        // L(size - 1) is the natural coordinate (s_0 - 1, s_1 - 1, ...): no division needed
        let s = self.shape.leaves();
        let mut r = 1;
        let mut k = 0;
        while k < s.len() {
            r += (s[k] - 1) * self.stride[k];
            k += 1;
        }
        r
    }

    /// Mode `i` as a layout (`layout<I>(L)` in CuTe).
    pub const fn get(&self, i: usize) -> Result<Self> {
        let sp = tri!(self.shape.span(i));
        Ok(self.sub(sp))
    }
    pub(crate) const fn sub(&self, sp: Span) -> Self {
        let mut d = [0i64; MAX_LEAVES];
        let mut l = sp.l0;
        while l < sp.l1 {
            d[l - sp.l0] = self.stride[l];
            l += 1;
        }
        Self {
            shape: self.shape.sub(sp),
            stride: d,
        }
    }

    /// The empty layout `():()`, the start of a concatenation.
    pub const fn empty() -> Self {
        Self {
            shape: IntTuple::empty(),
            stride: [0; MAX_LEAVES],
        }
    }

    /// Adds `m` as a new last mode (`append(L, m)`; an integral `L` first becomes `(L)`).
    pub const fn push(&mut self, m: &Layout) -> Result<()> {
        let n = self.shape.num_leaves();
        tri!(self.shape.push(&m.shape));
        let ms = m.strides();
        let mut i = 0;
        while i < ms.len() {
            self.stride[n + i] = ms[i];
            i += 1;
        }
        // the invariant for the grown layout, checked in place
        check_extents!(self.shape.leaves(), self.stride, self.shape.num_leaves());
        Ok(())
    }

    /// The start of a token-by-token build (`put_*`, then [`Layout::check`]).
    #[inline(always)]
    pub(crate) const fn raw() -> Self {
        Self::RAW
    }
    const RAW: Self = Self {
        shape: IntTuple::raw(),
        stride: [0; MAX_LEAVES],
    };
    /// Opens a tuple in a build.
    #[inline]
    pub(crate) const fn put_open(&mut self) -> Result<()> {
        self.shape.put_token(OPEN)
    }
    /// Closes a tuple in a build.
    #[inline]
    pub(crate) const fn put_close(&mut self) -> Result<()> {
        self.shape.put_token(CLOSE)
    }
    /// Appends the leaf `s:d` to a build.
    #[inline]
    pub(crate) const fn put_leaf(&mut self, s: i64, d: i64) -> Result<()> {
        let n = self.shape.num_leaves();
        tri!(self.shape.put_leaf(s));
        self.stride[n] = d;
        Ok(())
    }
    /// Appends to a build the part of `m` that `sp` covers (a mode of `m`, from
    /// [`Layout::span`], or all of it).
    #[inline]
    pub(crate) const fn put_span(&mut self, m: &Layout, sp: Span) -> Result<()> {
        let n = self.shape.num_leaves();
        tri!(self.shape.put_span(&m.shape, sp));
        let mut i = 0;
        while i < sp.l1 - sp.l0 {
            self.stride[n + i] = m.stride[sp.l0 + i];
            i += 1;
        }
        Ok(())
    }
    /// Appends `m` to a build as one mode.
    #[inline]
    pub(crate) const fn put_layout(&mut self, m: &Layout) -> Result<()> {
        self.put_span(m, m.shape.whole())
    }
    /// Appends each mode of the part `sp` of `m` to a build (the part itself when it is a leaf).
    pub(crate) const fn put_modes_of(&mut self, m: &Layout, sp: Span) -> Result<()> {
        if m.shape.tokens()[sp.t0] != OPEN {
            return self.put_span(m, sp);
        }
        self.put_span(
            m,
            Span {
                t0: sp.t0 + 1,
                t1: sp.t1 - 1,
                l0: sp.l0,
                l1: sp.l1,
            },
        )
    }
    /// Sets the shape of the last leaf of a build.
    #[inline]
    pub(crate) const fn set_last_shape(&mut self, v: i64) {
        self.shape.set_last_leaf(v);
    }
    /// Span of mode `i` of the part `outer` of this layout (`outer` itself, for `i == 0`, when
    /// it is a leaf).
    pub(crate) const fn span_within(&self, outer: Span, i: usize) -> Result<Span> {
        self.shape.span_within(outer, i)
    }
    /// Span of mode `i` (of the integer itself for `i == 0` on an integer).
    pub(crate) const fn span(&self, i: usize) -> Result<Span> {
        self.shape.span(i)
    }
    /// Span of all of this layout.
    pub(crate) const fn whole(&self) -> Span {
        self.shape.whole()
    }
    /// The shape's and the stride's leaves in `sp`.
    pub(crate) const fn leaves_in(&self, sp: Span) -> (&[i64], &[i64]) {
        let s = self.shape.leaves().split_at(sp.l1).0.split_at(sp.l0).1;
        let d = self.stride.split_at(sp.l1).0.split_at(sp.l0).1;
        (s, d)
    }
    /// Opens a group of leaves in a build, to be closed by [`Layout::close_group`]; returns where
    /// it starts.
    #[inline]
    pub(crate) const fn open_group(&mut self) -> Result<usize> {
        let at = self.shape.num_tokens();
        tri!(self.put_open());
        Ok(at)
    }
    /// Closes the group opened at `at`, holding `m` leaves: a tuple, or the leaf alone when
    /// `m == 1`.
    #[inline]
    pub(crate) const fn close_group(&mut self, at: usize, m: usize) -> Result<()> {
        if m == 1 {
            self.shape.unwrap_group(at);
            Ok(())
        } else {
            self.put_close()
        }
    }
    /// Appends the flat modes `s[..n]:d[..n]` to a build: a leaf when `n == 1`, else a tuple.
    pub(crate) const fn put_flat(&mut self, s: &[i64], d: &[i64], n: usize) -> Result<()> {
        if n == 1 {
            return self.put_leaf(s[0], d[0]);
        }
        tri!(self.put_open());
        let mut i = 0;
        while i < n {
            tri!(self.put_leaf(s[i], d[i]));
            i += 1;
        }
        self.put_close()
    }
    /// The end of a build: checks the invariant (one pass; the layout is not copied).
    #[inline]
    pub(crate) const fn check(&self) -> Result<()> {
        check_extents!(self.shape.leaves(), self.stride, self.shape.num_leaves());
        Ok(())
    }

    /// `make_layout(L0, L1, ...)`: concatenation, each layout one mode of the result.
    pub const fn concat(modes: &[Layout]) -> Result<Self> {
        let mut r = Self::raw();
        tri!(r.put_open());
        let mut i = 0;
        while i < modes.len() {
            tri!(r.put_layout(&modes[i]));
            i += 1;
        }
        tri!(r.put_close());
        tri!(r.check());
        Ok(r)
    }

    /// `append(L, m)`: `L`'s modes followed by `m`.
    pub const fn append(&self, m: &Layout) -> Result<Self> {
        let mut r = *self;
        tri!(r.push(m));
        Ok(r)
    }

    /// `append<N>(L)`: pads with `1:0` modes up to rank `n` (a rank-`n` tuple even for `n == 1`
    /// only if `L` already is one).
    pub const fn append_to_rank(&self, n: usize) -> Result<Self> {
        let mut r = *self;
        let one = Layout {
            shape: IntTuple::int(1),
            stride: [0; MAX_LEAVES],
        };
        while r.rank() < n {
            tri!(r.push(&one));
        }
        Ok(r)
    }

    /// All leaves as top-level modes; an integral layout stays integral.
    pub const fn flatten(&self) -> Self {
        Self {
            shape: self.shape.flatten(),
            stride: self.stride,
        }
    }

    /// `L(i)` for a 1-D coordinate `i` (colexicographic; the last mode takes what remains).
    /// Always inlined on the host, where a kernel's partitioning runs on the simulated GPU: a
    /// call per element would be its largest cost (the device inlines it anyway).
    #[cfg_attr(target_arch = "nvptx64", inline)]
    #[cfg_attr(not(target_arch = "nvptx64"), inline(always))]
    pub const fn call(&self, mut i: i64) -> i64 {
        let s = self.shape.leaves();
        let n = s.len();
        let mut r = 0;
        let mut k = 0;
        while k + 1 < n {
            r += (i % s[k]) * self.stride[k];
            i /= s[k];
            k += 1;
        }
        if n > 0 {
            r += i * self.stride[n - 1];
        }
        r
    }

    /// `L(c)` for a flat natural coordinate given leaf by leaf: `sum_k c_k * d_k` (no checks; the
    /// cheap form for kernels).
    #[inline]
    pub const fn dot(&self, c: &[i64]) -> i64 {
        // the loop reads `self.stride` directly: written over `self.strides()` (a slice) the
        // compiler stopped folding a `const` layout into kernels (tests/ptx.rs caught it)
        let mut r = 0;
        let mut k = 0;
        while k < c.len() && k < self.shape.num_leaves() {
            r += c[k] * self.stride[k];
            k += 1;
        }
        r
    }

    /// `L(c)` for a coordinate congruent with, or coarser than, the shape (`crd2idx`).
    ///
    /// # Example
    /// Seed 000's row-major 4x2 matrix, `A(m,n) = m*2 + n`, also by the 1-D coordinate `m + n*4`;
    /// and its hierarchical `((2,2),2):((4,1),2)`, `A((m,n),k) = m*4 + n + k*2`:
    /// ```
    /// use layout_core::*;
    /// let a = Layout::parse("(4,2):(2,1)").unwrap();
    /// let c = |s: &str| IntTuple::parse(s).unwrap();
    /// assert_eq!(a.crd2idx(&c("(3,1)")).unwrap(), 3 * 2 + 1);
    /// assert_eq!(a.crd2idx(&c("7")).unwrap(), 3 * 2 + 1); // 7 = 3 + 1*4
    /// let h = Layout::parse("((2,2),2):((4,1),2)").unwrap();
    /// assert_eq!(h.crd2idx(&c("((1,1),1)")).unwrap(), 4 + 1 + 2);
    /// ```
    pub const fn crd2idx(&self, c: &IntTuple) -> Result<i64> {
        let nat = tri!(natural_coord(&self.shape, c, false));
        let mut r: i64 = 0;
        let mut k = 0;
        while k < self.shape.num_leaves() {
            let t = match nat.0[k].checked_mul(self.stride[k]) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            r = match r.checked_add(t) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            k += 1;
        }
        Ok(r)
    }

    /// The natural coordinate (congruent with the shape) of the 1-D coordinate `i` (`idx2crd`),
    /// for `0 <= i < size(L)` (outside it the last leaf takes what remains); the checked form,
    /// which also takes tuple coordinates, is [`IntTuple::idx2crd`] on the shape.
    ///
    /// # Example
    /// Seed 000's row-major 4x2 matrix: the 1-D coordinate `m + n*4` is the natural `(m,n)`:
    /// ```
    /// use layout_core::*;
    /// let a = Layout::parse("(4,2):(2,1)").unwrap();
    /// assert_eq!(a.idx2crd(7).to_string(), "(3,1)"); // 7 = 3 + 1*4
    /// assert_eq!(a.crd2idx(&a.idx2crd(7)).unwrap(), a.call(7));
    /// let h = Layout::parse("((2,2),2):((4,1),2)").unwrap();
    /// assert_eq!(h.idx2crd(7).to_string(), "((1,1),1)");
    /// ```
    pub const fn idx2crd(&self, i: i64) -> IntTuple {
        let s = self.shape.leaves();
        let mut c = [0i64; MAX_LEAVES];
        let mut rest = i;
        let n = s.len();
        let mut k = 0;
        while k < n {
            if k + 1 < n {
                c[k] = rest % s[k];
                rest /= s[k];
            } else {
                c[k] = rest;
            }
            k += 1;
        }
        self.shape.with_leaves(&c)
    }

    /// `L(c)` where `c` contains `_`: the sub-layout of the modes at the `_`s, and the offset of the
    /// fixed part. The result has one top-level mode per `_` (CuTe's `slice_and_offset`).
    pub const fn slice(&self, c: &IntTuple) -> Result<(Self, i64)> {
        let (nat, keep) = tri!(natural_coord(&self.shape, c, true));
        let mut off: i64 = 0;
        let mut k = 0;
        while k < self.shape.num_leaves() {
            if !keep[k] {
                off = match nat[k].checked_mul(self.stride[k]) {
                    Some(v) => match off.checked_add(v) {
                        Some(w) => w,
                        None => return Err(LayoutError::Overflow),
                    },
                    None => return Err(LayoutError::Overflow),
                };
            }
            k += 1;
        }
        Ok((tri!(self.select(c, true)), off))
    }

    /// `dice(c, L)`: the modes where `c` is *not* `_` (the complement of [`Layout::slice`]).
    pub const fn dice(&self, c: &IntTuple) -> Result<Self> {
        tri!(natural_coord(&self.shape, c, true));
        self.select(c, false)
    }

    /// The sub-layouts at the leaves of `c` that are `_` (`holes == true`) or are not, concatenated.
    const fn select(&self, c: &IntTuple, holes: bool) -> Result<Self> {
        let ct = c.tokens();
        let st = self.shape.tokens();
        let mut r = Self::empty();
        let (mut i, mut j, mut l) = (0usize, 0usize, 0usize);
        while i < ct.len() {
            let k = ct[i];
            if k == LEAF || k == HOLE {
                let end = subtree_end(st, j);
                let nl = count_leaves(st, j, end);
                if (k == HOLE) == holes {
                    let m = self.sub(Span {
                        t0: j,
                        t1: end,
                        l0: l,
                        l1: l + nl,
                    });
                    tri!(r.push(&m));
                }
                j = end;
                l += nl;
            } else {
                j += 1;
            }
            i += 1;
        }
        Ok(r)
    }

    /// Equality of shapes and strides (`const` form of `==`).
    pub const fn equals(&self, o: &Self) -> bool {
        if !self.shape.equals(&o.shape) {
            return false;
        }
        let mut i = 0;
        while i < self.shape.num_leaves() {
            if self.stride[i] != o.stride[i] {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// The invariant of every layout, run-time ([`crate::FlatLayout`]) or not: each of the `n`
/// shapes `s_i` is positive, and `size = prod s_i` and `span = sum (s_i - 1) |d_i|` fit in `i64`,
/// with `span < i64::MAX` (so `cosize = L(size - 1) + 1` fits too). Returns the error from the
/// enclosing function.
///
/// Post-condition: when it falls through, evaluating the layout at any coordinate of its domain,
/// its size and its cosize cannot overflow.
///
/// A macro rather than a `const fn`: behind a function boundary (slices, arrays or a `Result`
/// passed back), the compiler stopped keeping a kernel's run-time [`crate::FlatLayout`] in
/// registers and its `Result` went to local memory (`tests/ptx.rs` caught it).
macro_rules! check_extents {
    ($shape:expr, $stride:expr, $n:expr) => {{
        let mut span: i64 = 0;
        let mut size: i64 = 1;
        let mut i = 0;
        while i < $n {
            if $shape[i] <= 0 {
                return Err(LayoutError::NonPositiveShape { value: $shape[i] });
            }
            let ext = match ($shape[i] - 1).checked_mul($stride[i].saturating_abs()) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            span = match span.checked_add(ext) {
                Some(v) if v < i64::MAX => v,
                _ => return Err(LayoutError::Overflow),
            };
            size = match size.checked_mul($shape[i]) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            i += 1;
        }
    }};
}
pub(crate) use check_extents;

/// The product of the shape leaves `s` of a layout (which fits in `i64`: the invariant).
pub(crate) const fn product_of(s: &[i64]) -> i64 {
    let mut p = 1;
    let mut i = 0;
    while i < s.len() {
        p *= s[i];
        i += 1;
    }
    p
}

/// `$fill` (a `Result<()>` expression writing the build `$r`) run on a fresh build that lives in
/// `*$out` itself, a `&mut Result<Layout>`, then the build's invariant checked; on error `*$out`
/// is that error.
///
/// Why: a layout built in a local and then returned is copied with wide loads right after the
/// narrow stores that built it, which the CPU cannot forward (measured: ~20 ns of a 25 ns
/// `complement`). Written through a pointer by a function that is not inlined, the caller's
/// `Result` is the build's own memory and nothing is copied. (Only on the host: on the device
/// such functions stay inlinable, so that a kernel's operations on `const` layouts fold away.)
macro_rules! in_place {
    ($out:ident, $r:ident => $fill:expr) => {{
        *$out = Ok(Layout::raw());
        let res = match $out {
            Ok($r) => match $fill {
                Ok(()) => $r.check(),
                Err(e) => Err(e),
            },
            Err(_) => Ok(()),
        };
        if let Err(e) = res {
            *$out = Err(e);
        }
    }};
}
pub(crate) use in_place;

/// End (exclusive) of the subtree starting at token `j`.
pub(crate) const fn subtree_end(t: &[u8], j: usize) -> usize {
    if t[j] != OPEN {
        return j + 1;
    }
    let mut d = 0i32;
    let mut k = j;
    loop {
        if t[k] == OPEN {
            d += 1;
        } else if t[k] == CLOSE {
            d -= 1;
        }
        k += 1;
        if d == 0 {
            return k;
        }
    }
}

const fn count_leaves(t: &[u8], a: usize, b: usize) -> usize {
    let mut n = 0;
    let mut k = a;
    while k < b {
        if t[k] == LEAF || t[k] == HOLE {
            n += 1;
        }
        k += 1;
    }
    n
}

/// The natural coordinate of `c` in `shape`, leaf by leaf, and which leaves fall under a `_` of
/// `c` (only allowed when `holes`). An integer of `c` where `shape` has a tuple is split
/// colexicographically over that tuple's leaves.
///
/// Post-condition: `Ok` only when every integer of `c` lies inside the (sub-)shape it indexes
/// (`0 <= c_i < size`, else [`LayoutError::IndexOutOfRange`]) and `c`'s nesting is coarser than or
/// equal to `shape`'s (else `ProfileMismatch`); then each natural leaf is in `[0, s_k)`.
pub(crate) const fn natural_coord(
    shape: &IntTuple,
    c: &IntTuple,
    holes: bool,
) -> Result<([i64; MAX_LEAVES], [bool; MAX_LEAVES])> {
    let ct = c.tokens();
    let cv = c.leaves();
    let st = shape.tokens();
    let sv = shape.leaves();
    let mut out = [0i64; MAX_LEAVES];
    let mut keep = [false; MAX_LEAVES];
    let (mut i, mut j, mut cl, mut sl) = (0usize, 0usize, 0usize, 0usize);
    while i < ct.len() {
        if j >= st.len() {
            return Err(LayoutError::ProfileMismatch);
        }
        let k = ct[i];
        if k == LEAF || k == HOLE {
            let end = subtree_end(st, j);
            let nl = count_leaves(st, j, end);
            if k == HOLE {
                if !holes {
                    return Err(LayoutError::UnexpectedUnderscore);
                }
                let mut q = 0;
                while q < nl {
                    keep[sl + q] = true;
                    q += 1;
                }
            } else {
                let mut rest = cv[cl];
                // the leaf indexes the `nl` leaves below it as one mode of their product's size
                let mut n: i64 = 1;
                let mut q = 0;
                while q < nl {
                    n = match n.checked_mul(sv[sl + q]) {
                        Some(v) => v,
                        None => return Err(LayoutError::Overflow),
                    };
                    q += 1;
                }
                if rest < 0 || rest >= n {
                    return Err(LayoutError::IndexOutOfRange {
                        index: rest,
                        size: n,
                    });
                }
                let mut q = 0;
                while q < nl {
                    if q + 1 < nl {
                        out[sl + q] = rest % sv[sl + q];
                        rest /= sv[sl + q];
                    } else {
                        out[sl + q] = rest;
                    }
                    q += 1;
                }
            }
            cl += 1;
            sl += nl;
            j = end;
        } else if k != st[j] {
            // `(` against a leaf, or `)` before the shape's tuple ends: ranks differ
            return Err(LayoutError::ProfileMismatch);
        } else {
            j += 1;
        }
        i += 1;
    }
    Ok((out, keep))
}

impl PartialEq for Layout {
    fn eq(&self, o: &Self) -> bool {
        self.equals(o)
    }
}
impl Eq for Layout {}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.shape, self.stride())
    }
}
impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
