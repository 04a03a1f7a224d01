//! `Swizzle<B,M,S>` and swizzled layouts `Sw o offset o L`.
//!
//! ```text
//! 0bxxxxxxxxYYYxxxxxxxZZZxxxx   M = the low bits kept as they are (here 4)
//!                   ^-^         B = bits in each mask (here 3)
//!           ^--------^          S = the distance from the ZZZ mask up to the YYY mask (here 10)
//! Sw(x) = x ^ ((x & YYY) >> S)   (for S < 0, YYY lies below ZZZ and is shifted left)
//! ```

use crate::composition::{composition, composition_tiler};
use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::Layout;
use crate::tiler::Tiler;
use crate::tri;
use core::fmt;

/// The swizzle functor `Sw<B,M,S>`: xors the `B` bits at `M + max(S,0)` into the `B` bits at
/// `M - min(S,0)`.
///
/// Post-conditions: `Sw(Sw(x)) == x` (an involution, hence a bijection), and `Sw` maps each aligned
/// block of `2^(B+M+|S|)` integers onto itself.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Swizzle {
    bits: u32,
    base: u32,
    shift: i32,
}

impl Swizzle {
    /// `Sw<B,M,S>`; admissible when `B >= 0`, `M >= 0`, `|S| >= B` and all masks fit in 62 bits.
    pub const fn new(bits: i64, base: i64, shift: i64) -> Result<Self> {
        let reach = shift.saturating_abs();
        // each part is checked before the sum, which then cannot overflow
        if bits < 0
            || base < 0
            || reach < bits
            || base > 62
            || reach > 62
            || bits + base + reach > 62
        {
            return Err(LayoutError::BadSwizzle);
        }
        Ok(Self {
            bits: bits as u32,
            base: base as u32,
            shift: shift as i32,
        })
    }
    /// `(B, M, S)`.
    pub const fn params(&self) -> (u32, u32, i32) {
        (self.bits, self.base, self.shift)
    }
    const fn yyy(&self) -> i64 {
        let m = (1i64 << self.bits) - 1;
        m << (self.base as i32 + if self.shift > 0 { self.shift } else { 0 })
    }
    /// `Sw(x)`.
    #[inline]
    pub const fn apply(&self, x: i64) -> i64 {
        let y = x & self.yyy();
        if self.shift >= 0 {
            x ^ (y >> self.shift)
        } else {
            x ^ (y << -self.shift)
        }
    }
    /// The size of the blocks the swizzle permutes within: `2^(B+M+|S|)`.
    pub const fn block(&self) -> i64 {
        1i64 << (self.bits + self.base + self.shift.unsigned_abs())
    }
}

/// `Sw o offset o L`: `c -> Sw(offset + L(c))`, a swizzled layout (CuTe's `ComposedLayout`).
///
/// Invariant kept by every constructor: `|offset| + span(L) + block(Sw)` fits in `i64` (with
/// `span(L) = sum (s_i - 1) |d_i|`), so evaluation inside the domain and `cosize` never overflow.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ComposedLayout {
    swizzle: Swizzle,
    offset: i64,
    layout: Layout,
}

impl ComposedLayout {
    /// `Sw o 0 o L`.
    pub const fn new(swizzle: Swizzle, layout: Layout) -> Result<Self> {
        Self::with_offset(swizzle, 0, layout)
    }
    /// `Sw o offset o L`; `Err(Overflow)` when `|offset| + span(L) + block(Sw)` leaves `i64`.
    pub const fn with_offset(swizzle: Swizzle, offset: i64, layout: Layout) -> Result<Self> {
        let (s, d) = (layout.shapes(), layout.strides());
        let mut reach = match offset.checked_abs() {
            Some(v) => match v.checked_add(swizzle.block()) {
                Some(w) => w,
                None => return Err(LayoutError::Overflow),
            },
            None => return Err(LayoutError::Overflow),
        };
        let mut i = 0;
        while i < s.len() {
            // each term fits: the layout's own invariant bounds the span
            reach = match reach.checked_add((s[i] - 1) * d[i].saturating_abs()) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
            i += 1;
        }
        Ok(Self {
            swizzle,
            offset,
            layout,
        })
    }
    /// The outer function `Sw`.
    pub const fn swizzle(&self) -> Swizzle {
        self.swizzle
    }
    /// Added before swizzling (what slicing accumulates).
    pub const fn offset(&self) -> i64 {
        self.offset
    }
    /// The inner layout: the domain.
    pub const fn layout(&self) -> &Layout {
        &self.layout
    }
    /// `Sw(offset + L(i))` for a 1-D coordinate `0 <= i < size(L)`.
    #[inline]
    pub const fn call(&self, i: i64) -> i64 {
        self.swizzle.apply(self.offset + self.layout.call(i))
    }
    /// `Sw(offset + L(c))`.
    pub const fn crd2idx(&self, c: &IntTuple) -> Result<i64> {
        Ok(self
            .swizzle
            .apply(self.offset + tri!(self.layout.crd2idx(c))))
    }
    /// `size(L)`.
    pub const fn size(&self) -> i64 {
        self.layout.size()
    }
    /// An upper bound of the codomain: `offset + cosize(L)` rounded up to the swizzle's block, since
    /// the swizzle permutes within aligned blocks.
    pub const fn cosize(&self) -> i64 {
        let c = self.offset + self.layout.cosize();
        let b = self.swizzle.block();
        crate::composition::ceil_div(c, b) * b
    }
    /// The same swizzle and offset over another inner layout (checked again: a composition can
    /// reach further than `L`).
    const fn over(&self, layout: Layout) -> Result<Self> {
        Self::with_offset(self.swizzle, self.offset, layout)
    }
    /// `(Sw o off o L) o B = Sw o off o (L o B)`.
    ///
    /// Post-condition: `R(i) == self(B(i))` for all `0 <= i < size(B)`.
    pub const fn compose(&self, b: &Layout) -> Result<Self> {
        self.over(tri!(composition(&self.layout, b)))
    }
    /// By-mode composition with a tiler, on the inner layout.
    pub const fn compose_tiler(&self, t: &Tiler) -> Result<Self> {
        self.over(tri!(composition_tiler(&self.layout, t)))
    }
    /// Mode `i`: `Sw o off o layout<i>(L)`.
    pub const fn get(&self, i: usize) -> Result<Self> {
        self.over(tri!(self.layout.get(i)))
    }
    /// Slicing: the fixed part of `c` moves into the offset, under the swizzle.
    ///
    /// Post-condition: `R(x) == self(c with its _ filled by x)`.
    pub const fn slice(&self, c: &IntTuple) -> Result<Self> {
        let (l, off) = tri!(self.layout.slice(c));
        match self.offset.checked_add(off) {
            Some(o) => Self::with_offset(self.swizzle, o, l),
            None => Err(LayoutError::Overflow),
        }
    }
    /// `dice(c, Sw o off o L) = Sw o off o dice(c, L)`: the modes where `c` is not `_`, under the
    /// same swizzle and offset (the `_` modes contribute nothing, so nothing moves into the
    /// offset).
    pub const fn dice(&self, c: &IntTuple) -> Result<Self> {
        self.over(tri!(self.layout.dice(c)))
    }
    /// Applies `f` to the inner layout (a divide, a product, ...) under the same swizzle and
    /// offset.
    pub fn map(&self, f: impl FnOnce(&Layout) -> Result<Layout>) -> Result<Self> {
        self.over(f(&self.layout)?)
    }
}

impl fmt::Display for Swizzle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sw<{},{},{}>", self.bits, self.base, self.shift)
    }
}
impl fmt::Display for ComposedLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} o {} o {}", self.swizzle, self.offset, self.layout)
    }
}
