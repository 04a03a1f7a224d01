//! Row softmax, `y[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r)`, for `f32`,
//! `bf16` and `f16`, any `M x N` (rows of any length, any row stride), computed in `f32`.
//!
//! One warp per row, four rows per block, one 128-bit [`Atom`] of the row per lane and tile
//! ([`Rows`]). A lane stages its atoms of the first `staged` tiles by `cp.async` (element by
//! element, `-inf` past `N`, where an atom straddles `N` or the rows are not 16-byte aligned), and
//! in one pass over its atoms takes its maximum `m_t` and its sum `s_t` of `exp(x - m_t)` (online:
//! the running sum rescaled when the maximum grows). [`warp_max`] gives the row's maximum `m`,
//! [`warp_sum`] of `s_t exp(m_t - m)` its sum `s`; then `y = exp(x - m) / s`, rounded to `T`.
//! Tiles past the staged ones (rows longer than shared memory holds) are read twice.
//!
//! `exp(x - m)` is `2^((x - m) log2 e)`, one `ex2.approx`. Subtracting the maximum keeps every
//! exponent `<= 0`, so nothing overflows; a row of `-inf` (or with a NaN) gives NaN, as torch's.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![warn(missing_docs)]

use core::marker::PhantomData;
use tessel_device::prelude::*;

const NEG_INF: f32 = f32::NEG_INFINITY;

/// The kernel's one by-value parameter: `x` and `y` of one shape `(M, N)`, unit column stride.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SoftmaxParams<E> {
    /// The input.
    pub x: FlatTensor<E, 2>,
    /// The output (its rows must not overlap).
    pub y: FlatTensor<E, 2>,
    /// Tiles of each row staged in shared memory ([`Softmax::staged_for`]).
    pub staged: i64,
}

/// The softmax kernel for element type `T`.
pub struct Softmax<T>(PhantomData<T>);

impl<T: Real> Softmax<T> {
    /// The cut: one warp per row, four rows per block.
    pub const CUT: Rows = Rows::new(1, T::BITS);
    /// The staging of the block's atoms.
    pub const STAGE: Stage = Stage::new(Self::CUT.threads);

    /// Tiles along a row of `cols` elements.
    pub const fn tiles(cols: i64) -> i64 {
        Self::CUT.tiles(cols)
    }

    /// Tiles to stage for rows of `cols` elements in `smem` bytes of shared memory per block.
    pub const fn staged_for(cols: i64, smem: i64) -> i64 {
        Self::STAGE.fit(Self::tiles(cols), smem, 0)
    }
}

#[kernel(
    softmax_f32 = Softmax<f32>,
    softmax_bf16 = Softmax<bf16>,
    softmax_f16 = Softmax<f16>,
)]
impl<T: Real> Kernel for Softmax<T> {
    type Shared = V4;
    type Params<M: Space> = SoftmaxParams<M::Global<T>>;

    /// [`Rows::check`] of `x` and `y` (any `N` and row stride), `staged` capped at the row's tiles.
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        let [x, y] = Self::CUT.check(p.x, p.y, false)?;
        let staged = Self::STAGE.cap(p.staged, Self::tiles(x.shape()[1]))?;
        Ok(SoftmaxParams { x, y, staged })
    }

    /// `ceil(M / 4)` blocks of 128 threads; `staged` tiles of slots.
    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem_limit: i64) -> Geometry {
        Self::CUT.geometry(p.x.shape()[0], p.staged * Self::STAGE.tile_bytes())
    }

    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let row = Self::CUT.get_slice(c.block[0], c.thread, p.x.shape());
        let st = Self::STAGE.of(c.smem, c.thread, p.staged);
        // 128-bit accesses where the atom is whole and the rows 16-byte aligned
        let (add, whole) =
            (|a, b| a + b, row.whole_tiles(Self::CUT.aligned(&p.x) && Self::CUT.aligned(&p.y)));
        // every staged slot written: its atom, or -inf where it is partly or wholly outside
        let mut k = 0;
        while k < p.staged {
            if k < whole {
                st.slot(k).copy_async_v4(&row.part(&p.x, k).at(0));
            } else {
                st.slot(k).write(row.load::<T, _>(&p.x, k, false, NEG_INF).atoms()[0]);
            }
            k += 1;
        }
        c.smem.wait_all();
        // the online maximum and sum: the staged tiles without a predicate (-inf adds nothing)
        let (mut mt, mut s_t, mut k) = (NEG_INF, 0.0, 0);
        let mut online = |a: Atom<T>| {
            let m = mt.max(a.reduce(|x| x, f32::max));
            // nothing but -inf so far: nothing to add (and -inf - -inf would be NaN)
            if m != NEG_INF {
                s_t = s_t * exp_shifted(mt, m) + a.reduce(|x| exp_shifted(x, m), add);
                mt = m;
            }
        };
        while k < p.staged {
            online(st.atom(k));
            k += 1;
        }
        while k < row.tiles() {
            if row.inside(k) {
                online(row.load(&p.x, k, k < whole, NEG_INF));
            }
            k += 1;
        }
        let m = warp_max(mt);
        let s = warp_sum(if mt == NEG_INF { 0.0 } else { s_t * exp_shifted(mt, m) });
        // y = 2^(x log2 e - (m log2 e + log2 s)): the shift split in hi + lo so that it stays exact
        let hi = m * LOG2_E;
        let lo = fma(m, LOG2_E, -hi) + log2_approx(s);
        let mut k = 0;
        while k < row.tiles() {
            if k < whole || row.inside(k) {
                let x =
                    if st.holds(k) { st.atom(k) } else { row.load(&p.x, k, k < whole, NEG_INF) };
                let y = x.map(|x| exp2_approx(fma(x, LOG2_E, -hi) - lo));
                row.store(&y, &p.y, k, k < whole);
            }
            k += 1;
        }
    }
}

/// `e^(x - m)` as `2^((x - m) log2 e)` (`ex2.approx` on the device): with `m` the row's maximum,
/// `x - m <= 0` (rounding keeps the sign), so it never overflows; `x = m` gives exactly 1. (One
/// fused multiply-add `x log2 e - m log2 e` would save an instruction but can round above 0,
/// which for `m` near `1e30` overflows to infinity.)
#[inline(always)]
fn exp_shifted(x: f32, m: f32) -> f32 {
    exp2_approx((x - m) * LOG2_E)
}
