//! `FlatLayout<N>`: a flat layout of static rank `N` whose extents are known only at run time
//! (CuTe's dynamic integers). It lives in registers: kernels use it for global tensors whose sizes
//! come from the launch, and `const` [`Layout`]s for everything about a tile.

use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::{check_extents, Layout};
use crate::tri;

/// `(s0,...,s{N-1}):(d0,...,d{N-1})` with run-time values. `#[repr(C)]`: shapes, then strides,
/// as a kernel parameter carries them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlatLayout<const N: usize> {
    shape: [i64; N],
    stride: [i64; N],
}

impl<const N: usize> FlatLayout<N> {
    /// `shape:stride`, with the same invariant as [`Layout`] (positive shapes, no overflow).
    pub const fn new(shape: [i64; N], stride: [i64; N]) -> Result<Self> {
        check_extents!(shape, stride, N);
        Ok(Self { shape, stride })
    }
    /// `shape:stride` without the check, for layouts derived from a checked one in ways that keep
    /// the invariant (a tile of it, the same strides) — kernels, whose tensors the host checked.
    #[inline(always)]
    pub(crate) const fn new_unchecked(shape: [i64; N], stride: [i64; N]) -> Self {
        Self { shape, stride }
    }
    /// The shape of the rest mode of `zipped_divide(L, tile)`: tiles along each mode, the last
    /// ones overhanging the edge (see [`tiles_of`]).
    #[inline(always)]
    pub const fn tiles(&self, tile: [i64; N]) -> [i64; N] {
        tiles_of(self.shape, tile)
    }
    /// The compact row-major layout of `shape`.
    pub const fn row_major(shape: [i64; N]) -> Result<Self> {
        let mut d = [0i64; N];
        let mut acc: i64 = 1;
        let mut i = N;
        while i > 0 {
            i -= 1;
            d[i] = acc;
            acc = match acc.checked_mul(shape[i]) {
                Some(v) => v,
                None => return Err(LayoutError::Overflow),
            };
        }
        Self::new(shape, d)
    }
    /// The shape.
    pub const fn shape(&self) -> [i64; N] {
        self.shape
    }
    /// The strides.
    pub const fn stride(&self) -> [i64; N] {
        self.stride
    }
    /// Product of the shape.
    pub const fn size(&self) -> i64 {
        let mut p = 1;
        let mut i = 0;
        while i < N {
            p *= self.shape[i];
            i += 1;
        }
        p
    }
    /// `L(c)` for a natural coordinate: `sum c_i d_i`.
    #[inline(always)]
    pub const fn dot(&self, c: [i64; N]) -> i64 {
        let mut r = 0;
        let mut i = 0;
        while i < N {
            r += c[i] * self.stride[i];
            i += 1;
        }
        r
    }
    /// Is the natural coordinate `c` inside the shape?
    #[inline(always)]
    pub const fn contains(&self, c: [i64; N]) -> bool {
        let mut i = 0;
        while i < N {
            if c[i] < 0 || c[i] >= self.shape[i] {
                return false;
            }
            i += 1;
        }
        true
    }
    /// The same function as a [`Layout`] (a flat tuple, or an integer for `N == 1`).
    pub const fn to_layout(&self) -> Result<Layout> {
        if N == 1 {
            return Layout::int(self.shape[0], self.stride[0]);
        }
        Layout::from_parts(tri!(IntTuple::from_ints(&self.shape)), &self.stride)
    }
    /// The leaves of `l` as a flat layout; `l` must have exactly `N` leaves.
    pub const fn from_layout(l: &Layout) -> Result<Self> {
        let (s, d) = (l.shapes(), l.strides());
        if s.len() != N {
            return Err(LayoutError::RankMismatch {
                expected: N,
                found: s.len(),
            });
        }
        let mut shape = [0i64; N];
        let mut stride = [0i64; N];
        let mut i = 0;
        while i < N {
            shape[i] = s[i];
            stride[i] = d[i];
            i += 1;
        }
        Ok(Self { shape, stride })
    }
}

/// Tiles of `tile` along each mode of `shape`: `ceil(shape_k / tile_k)`, the rest mode's shape of
/// `zipped_divide(shape, tile)` (the last tile of a mode may overhang; tiles and shapes positive).
#[inline(always)]
pub const fn tiles_of<const N: usize>(shape: [i64; N], tile: [i64; N]) -> [i64; N] {
    let mut t = [0i64; N];
    let mut k = 0;
    while k < N {
        t[k] = (shape[k] + tile[k] - 1) / tile[k];
        k += 1;
    }
    t
}
