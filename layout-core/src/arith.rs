//! ArithTuples and ScaledBasis strides (CuTe's `E<i>`, printed `1@i`; nested `1@j@i` is `E<i,j>`),
//! represented as integers so that the whole algebra applies to them unchanged.
//!
//! A [`Codomain`] is the shape of the coordinates a layout produces, e.g. `(M,N)` or `((a,b),c)`,
//! with `r` leaves (1 to 4). An ArithTuple `(c_0, ..., c_{r-1})` with every `0 <= c_k < 2^W`,
//! `W = 62 / r`, is the integer `sum c_k 2^(W k)`, and the basis stride `s@k` is `s 2^(W k)`.
//! The encoding is additive and commutes with multiplication by non-negative integers — the only
//! things layouts do with strides — so `composition`, the divides, slicing and `coalesce` work on
//! basis strides exactly as CuTe's do, in `const fn`s and in kernels. [`Codomain::fits`] checks
//! that no coordinate a layout reaches overflows its lane, which is what makes the encoding exact.
//!
//! Post-conditions: `decode(encode(c)) == c` for every `c` inside the lanes; for a tensor that
//! [`Codomain::fits`], `decode(start + L(x)) == decode(start) + sum_k x_k decode(d_k)`.

use crate::error::{LayoutError, Result};
use crate::int_tuple::{write_tokens_by, IntTuple};
use crate::layout::Layout;
use crate::tri;
use core::fmt;

const MAX_DEPTH: usize = crate::int_tuple::MAX_TOKENS / 2;

/// The most leaves a codomain (an ArithTuple) has.
pub const MAX_ARITH_RANK: usize = 4;

/// The shape of an ArithTuple-valued layout's codomain, and how its values are encoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Codomain {
    profile: IntTuple,
    width: u32,
}

impl Codomain {
    /// The codomain of shape `profile` (1 to 4 leaves; the leaves' values are not used).
    pub const fn new(profile: &IntTuple) -> Result<Self> {
        let r = profile.num_leaves();
        if r == 0 || r > MAX_ARITH_RANK {
            return Err(LayoutError::Capacity);
        }
        Ok(Self {
            profile: *profile,
            width: 62 / r as u32,
        })
    }
    /// Leaves of the ArithTuple.
    pub const fn rank(&self) -> usize {
        self.profile.num_leaves()
    }
    /// The coordinates' shape.
    pub const fn profile(&self) -> &IntTuple {
        &self.profile
    }
    /// `E<k>`: the basis stride of leaf `k`.
    pub const fn basis(&self, k: usize) -> i64 {
        1i64 << (self.width as usize * k)
    }
    /// Leaf `k` of the encoded ArithTuple `x`.
    #[inline(always)]
    pub const fn get(&self, x: i64, k: usize) -> i64 {
        (x >> (self.width as usize * k)) & ((1i64 << self.width) - 1)
    }
    /// The leaves of `x`.
    pub const fn decode(&self, x: i64) -> [i64; MAX_ARITH_RANK] {
        let mut c = [0i64; MAX_ARITH_RANK];
        let mut k = 0;
        while k < self.rank() {
            c[k] = self.get(x, k);
            k += 1;
        }
        c
    }
    /// The ArithTuple with leaves `c` (inside the lanes: `0 <= c_k < 2^W`).
    pub const fn encode(&self, c: &[i64]) -> Result<i64> {
        if c.len() != self.rank() {
            return Err(LayoutError::RankMismatch {
                expected: self.rank(),
                found: c.len(),
            });
        }
        let mut x = 0;
        let mut k = 0;
        while k < c.len() {
            if c[k] < 0 || c[k] >= 1i64 << self.width {
                return Err(LayoutError::Overflow);
            }
            x += c[k] * self.basis(k);
            k += 1;
        }
        Ok(x)
    }
    /// `elem_less(x, bound)`: every leaf of `x` below the same leaf of `bound` (a predicate).
    #[inline(always)]
    pub const fn elem_less(&self, x: i64, bound: &[i64]) -> bool {
        let mut k = 0;
        while k < self.rank() {
            if self.get(x, k) >= bound[k] {
                return false;
            }
            k += 1;
        }
        true
    }
    /// Does every value `start + L(x)` keep each leaf inside its lane (`< 2^W`)? Strides and
    /// `start` must be non-negative ArithTuples; then the lanes' maxima are `start`'s leaf plus
    /// `sum (s-1) d_k` over the layout's leaves.
    pub const fn fits(&self, start: i64, l: &Layout) -> Result<()> {
        let (s, d) = (l.shapes(), l.strides());
        let mut k = 0;
        while k < self.rank() {
            let lane = 1i64 << self.width;
            let mut reach = self.get(start, k);
            let mut i = 0;
            while i < s.len() {
                if d[i] < 0 {
                    return Err(LayoutError::NegativeStride { value: d[i] });
                }
                // every term is below 2^62 * size, so stop as soon as the lane is overrun
                reach = match (s[i] - 1).checked_mul(self.get(d[i], k)) {
                    Some(t) if t < lane => reach + t,
                    _ => return Err(LayoutError::Overflow),
                };
                if reach >= lane {
                    return Err(LayoutError::Overflow);
                }
                i += 1;
            }
            if start < 0 || reach >= lane {
                return Err(LayoutError::Overflow);
            }
            k += 1;
        }
        Ok(())
    }
    /// The path of leaf `k` in the profile, outermost index first, and its length (an integer
    /// profile is the path `0`). A tuple of `MAX_TOKENS` tokens nests at most `MAX_TOKENS / 2`
    /// deep.
    fn path(&self, k: usize) -> ([usize; MAX_DEPTH], usize) {
        let mut cnt = [0usize; MAX_DEPTH];
        let (mut depth, mut leaf) = (0usize, 0usize);
        for &t in self.profile.tokens() {
            match t {
                crate::int_tuple::OPEN => {
                    depth += 1;
                    cnt[depth - 1] = 0;
                }
                crate::int_tuple::CLOSE => {
                    depth -= 1;
                    if depth > 0 {
                        cnt[depth - 1] += 1;
                    }
                }
                _ => {
                    if leaf == k {
                        return if depth == 0 {
                            ([0; MAX_DEPTH], 1)
                        } else {
                            (cnt, depth)
                        };
                    }
                    leaf += 1;
                    if depth > 0 {
                        cnt[depth - 1] += 1;
                    }
                }
            }
        }
        ([0; MAX_DEPTH], 1)
    }
    /// Writes the ArithTuple `x`, shaped as the profile: `(12,0)`.
    pub fn fmt_value(&self, f: &mut fmt::Formatter<'_>, x: i64) -> fmt::Result {
        let c = self.decode(x);
        write_tokens_by(f, self.profile.tokens(), |f, k, _| write!(f, "{}", c[k]))
    }
    /// Writes a stride: `0`, a scaled basis `s@k` (nested `s@j@k` for leaf `j` of mode `k`), or
    /// the ArithTuple when it is a sum of bases.
    pub fn fmt_stride(&self, f: &mut fmt::Formatter<'_>, d: i64) -> fmt::Result {
        let c = self.decode(d);
        let nonzero = c.iter().filter(|&&v| v != 0).count();
        if d == 0 {
            return f.write_str("0");
        }
        if nonzero != 1 || d < 0 {
            return self.fmt_value(f, d);
        }
        let k = c.iter().position(|&v| v != 0).unwrap_or(0);
        write!(f, "{}", c[k])?;
        let (path, depth) = self.path(k);
        for i in (0..depth).rev() {
            write!(f, "@{}", path[i])?;
        }
        Ok(())
    }
}

/// `make_identity_tensor(shape)`'s layout: `shape : (E<0>, E<1>, ...)`, each leaf of `shape` the
/// basis of its own leaf of the codomain (shaped as `shape`), so that `L(c) == c`.
///
/// Post-condition: `decode(L(c)) == flatten(c)` for every natural coordinate `c` of `shape`.
///
/// # Example
/// Seed 002's identity layout of shape `(14,1024)`: the coordinate `(2,15)` maps to itself:
/// ```
/// use layout_core::*;
/// let (l, cod) = make_identity_layout(&IntTuple::parse("(14,1024)").unwrap()).unwrap();
/// let x = l.crd2idx(&IntTuple::parse("(2,15)").unwrap()).unwrap();
/// assert_eq!(cod.decode(x)[..2], [2, 15]);
/// assert_eq!((l.stride().leaves()[0], l.stride().leaves()[1]), (cod.basis(0), cod.basis(1)));
/// ```
pub const fn make_identity_layout(shape: &IntTuple) -> Result<(Layout, Codomain)> {
    tri!(shape.check_shape());
    let cod = tri!(Codomain::new(shape));
    let mut d = [0i64; MAX_ARITH_RANK];
    let mut k = 0;
    while k < shape.num_leaves() {
        d[k] = cod.basis(k);
        k += 1;
    }
    let l = tri!(Layout::from_parts(*shape, d.split_at(shape.num_leaves()).0));
    tri!(cod.fits(0, &l));
    Ok((l, cod))
}
