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
        if bits < 0
            || base < 0
            || shift.saturating_abs() < bits
            || bits + base + shift.saturating_abs() > 62
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
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ComposedLayout {
    /// The outer function.
    pub swizzle: Swizzle,
    /// Added before swizzling (what slicing accumulates).
    pub offset: i64,
    /// The inner layout: the domain.
    pub layout: Layout,
}

impl ComposedLayout {
    /// `Sw o 0 o L`.
    pub const fn new(swizzle: Swizzle, layout: Layout) -> Self {
        Self {
            swizzle,
            offset: 0,
            layout,
        }
    }
    /// `Sw(offset + L(i))` for a 1-D coordinate.
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
    /// `(Sw o off o L) o B = Sw o off o (L o B)`.
    ///
    /// Post-condition: `R(i) == self(B(i))` for all `0 <= i < size(B)`.
    pub const fn compose(&self, b: &Layout) -> Result<Self> {
        Ok(Self {
            layout: tri!(composition(&self.layout, b)),
            ..*self
        })
    }
    /// By-mode composition with a tiler, on the inner layout.
    pub const fn compose_tiler(&self, t: &Tiler) -> Result<Self> {
        Ok(Self {
            layout: tri!(composition_tiler(&self.layout, t)),
            ..*self
        })
    }
    /// Mode `i`: `Sw o off o layout<i>(L)`.
    pub const fn get(&self, i: usize) -> Result<Self> {
        Ok(Self {
            layout: tri!(self.layout.get(i)),
            ..*self
        })
    }
    /// Slicing: the fixed part of `c` moves into the offset, under the swizzle.
    pub const fn slice(&self, c: &IntTuple) -> Result<Self> {
        let (l, off) = tri!(self.layout.slice(c));
        Ok(Self {
            swizzle: self.swizzle,
            offset: self.offset + off,
            layout: l,
        })
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
