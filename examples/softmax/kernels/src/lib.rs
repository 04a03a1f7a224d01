//! Row softmax, `y[r, c] = exp(x[r, c] - max_r) / sum_c' exp(x[r, c'] - max_r)`, for `f32`,
//! `bf16` and `f16`, any `M x N` (rows of any length, any row stride), computed in `f32`.
//!
//! One warp per row, four rows per block. The tile is `(4, 32 V)` (`V` elements per 128-bit
//! atom: 4 for `f32`, 8 for 16-bit types) and the tiled copy gives each lane one atom of its
//! row per tile: `make_tiled_copy_tv((4,32):(32,1), (1,V):(1,1), 128, bits)`. Block `b` walks
//! the tiles `(b, k)` along its rows: `local_tile` of `x`, `y` and of the identity tensor, the
//! lane's partition of each, and `elem_less` of the identity values predicates every element:
//! a row past `M` does nothing, an atom past `N` is skipped, and the atom that straddles `N`
//! goes element by element.
//!
//! A thread's function ([`Kernel::thread`]):
//! - [`Softmax::stage`]: the lane's atoms of the first `staged` tiles go to shared memory by
//!   `cp.async` (all in flight before the one wait; element by element where an atom is not
//!   whole or not 16-byte aligned); then one pass over its atoms gives its maximum `m_t` and its
//!   sum `s_t` of `exp(x - m_t)` (online: the running sum rescaled when the maximum grows).
//! - [`warp_max`]: the row's maximum `m`, in every lane; [`warp_sum`] of `s_t exp(m_t - m)`: the
//!   row's sum `s`.
//! - [`Softmax::write`]: `y = exp(x - m) * (1 / s)`, rounded to `T`.
//!
//! `exp(x - m)` is `2^((x - m) log2 e)`: a subtraction, a multiplication and one `ex2.approx`.
//!
//! Subtracting the maximum keeps every exponent `<= 0`, so nothing overflows; a row of `-inf`
//! (or with a NaN) gives NaN, as torch's softmax. Tiles past the staged ones (rows longer than
//! shared memory holds) are read from global memory in both passes.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![warn(missing_docs)]

use core::marker::PhantomData;
use tessel_device::prelude::*;

/// Rows per block (one warp each).
pub const ROWS: i64 = 4;
/// Threads per block.
pub const THREADS: i64 = ROWS * 32;
/// The block's staging: thread `t` stages its atom of tile `k` in slot `(t, k)`.
pub const STAGE: Stage = Stage::new(THREADS);
/// The most tiles of a row a block stages.
pub const MAX_STAGED: i64 = Stage::MAX;

/// The kernel's one by-value parameter: `x` and `y` of one shape `(M, N)`, unit column stride.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SoftmaxParams<E> {
    /// The input.
    pub x: FlatTensor<E, 2>,
    /// The output (its rows must not overlap).
    pub y: FlatTensor<E, 2>,
    /// Tiles of each row staged in shared memory: [`Softmax::staged_for`] the shared memory a
    /// block may have (capped at the row's tiles by `prepare`).
    pub staged: i64,
}

/// The softmax kernel for element type `T`.
pub struct Softmax<T>(PhantomData<T>);

impl<T: Real> Softmax<T> {
    /// The cut: one warp per row, `(4,32)` row-major threads of one 128-bit atom each.
    pub const CUT: Rows = Rows::new(1, T::BITS);
    /// Elements per 128-bit atom.
    pub const V: i64 = Self::CUT.v;
    /// The tile: 4 rows of `32 V` columns.
    pub const TILER: [i64; 2] = Self::CUT.tiler;
    /// The copy's partition of a tile, as coordinates.
    pub const PLAN: TvCoords<2> = Self::CUT.plan;
    const _ONE_BLOCK: () = assert!(Self::CUT.threads == THREADS && Self::CUT.rows == ROWS);

    /// Tiles along a row of `cols` elements.
    pub const fn tiles(cols: i64) -> i64 {
        Self::CUT.tiles(cols)
    }

    /// Tiles to stage for rows of `cols` elements with `smem` bytes of shared memory per block:
    /// the whole row when it fits, at least 0.
    pub const fn staged_for(cols: i64, smem: i64) -> i64 {
        STAGE.fit(Self::tiles(cols), smem, 0)
    }

    /// Are `x`'s and `y`'s rows 16-byte aligned (then whole atoms move as 128-bit accesses)?
    #[inline(always)]
    fn vector<E: Mem<T>>(p: &SoftmaxParams<E>) -> bool {
        p.x.layout().stride()[0] % Self::V == 0
            && p.y.layout().stride()[0] % Self::V == 0
            && p.x.engine().aligned16()
            && p.y.engine().aligned16()
    }

    /// Thread `t`'s atom of `x`'s tile `(b, k)`: whole (`Some(true)`: every element inside and a
    /// 128-bit access possible), partial (`Some(false)`: its first element inside), or outside.
    #[inline(always)]
    fn atom<E: Mem<T>>(p: &SoftmaxParams<E>, b: i64, t: i64, k: i64, vec: bool) -> Option<bool> {
        let id = make_coord_tensor(p.x.shape());
        let c = Self::PLAN
            .get_slice(t)
            .partition_S(&id.local_tile(Self::TILER, [b, k]));
        if !c.elem_less(0) {
            None
        } else {
            Some(vec && c.elem_less(Self::V - 1))
        }
    }

    /// The tiles `0..whole_tiles` of thread `t`'s row in which its atom is whole (then
    /// `atom(..) == Some(true)`), from the identity tensor's coordinate `(r, c)` of its first
    /// value in tile `(b, 0)`: none for a row past `M` or rows not 16-byte aligned, else those
    /// with `c + k 32V + V <= N`. The loops run these without a predicate, the rest with one.
    #[inline(always)]
    fn whole_tiles<E: Mem<T>>(p: &SoftmaxParams<E>, b: i64, t: i64, vec: bool) -> i64 {
        let id = make_coord_tensor(p.x.shape());
        let [r, c] = Self::PLAN
            .get_slice(t)
            .partition_S(&id.local_tile(Self::TILER, [b, 0]))
            .coord(0);
        let [m, n] = p.x.shape();
        if !vec || r >= m || c + Self::V > n {
            0
        } else {
            (n - Self::V - c) / Self::TILER[1] + 1
        }
    }

    /// Thread `t`'s atom of `x`'s tile `(b, k)` read element by element into registers, the
    /// elements past `N` set to `-inf` (nothing to the maximum, 0 to the sum).
    #[inline(always)]
    unsafe fn read_partial<E: Mem<T>>(p: &SoftmaxParams<E>, b: i64, t: i64, k: i64) -> V4 {
        let thr = Self::PLAN.get_slice(t);
        let id = make_coord_tensor(p.x.shape());
        let c = thr.partition_S(&id.local_tile(Self::TILER, [b, k]));
        let g = thr.partition_S(&p.x.local_tile(Self::TILER, [b, k]));
        let neg_inf = T::narrow(f32::NEG_INFINITY);
        let bits = |i: i64| {
            if c.elem_less(i) {
                Real::to_bits(g.at(i).read())
            } else {
                neg_inf
            }
        };
        // word by word, no element indexed at run time (that would put the atom in local memory)
        let per = 32 / T::BITS;
        let word = |w: i64| {
            if per == 1 {
                bits(w)
            } else {
                bits(2 * w) | (bits(2 * w + 1) << 16)
            }
        };
        V4([word(0), word(1), word(2), word(3)])
    }

    /// Thread `t`'s atom of tile `k` of its row, from its slot when staged, else from `x`.
    #[inline(always)]
    unsafe fn load<E: Mem<T>, S: Mem<V4>>(
        p: &SoftmaxParams<E>,
        c: &Ctx<S>,
        k: i64,
        whole: bool,
    ) -> V4 {
        let (b, t) = (c.block[0], c.thread);
        if k < p.staged {
            STAGE.slots(c.smem).at([t, k]).read()
        } else if whole {
            let thr = Self::PLAN.get_slice(t);
            thr.partition_S(&p.x.local_tile(Self::TILER, [b, k]))
                .at(0)
                .read_v4()
        } else {
            Self::read_partial(p, b, t, k)
        }
    }

    /// Thread `c.thread` in block `c.block[0]` stages its atoms of the row's first `staged`
    /// tiles, then in one pass over its atoms takes the online maximum and sum: returns `m_t`
    /// its largest element (`-inf` for a row past `M`) and `s_t` the sum of `exp(x - m_t)` (each
    /// atom's sum added after rescaling the running one by `exp(m_old - m_new)`).
    ///
    /// # Safety
    /// `p` prepared, its engines reaching its tensors; `c.smem` reaching `staged` tiles of
    /// [`STAGE`].
    #[inline(always)]
    pub unsafe fn stage<E: Mem<T>, S: Mem<V4> + AsyncCopy<E>>(
        p: &SoftmaxParams<E>,
        c: &Ctx<S>,
    ) -> (f32, f32) {
        let () = Self::_ONE_BLOCK;
        let (b, t) = (c.block[0], c.thread);
        let thr = Self::PLAN.get_slice(t);
        let slots = STAGE.slots(c.smem);
        let vec = Self::vector(p);
        let mut k = 0;
        while k < p.staged {
            match Self::atom(p, b, t, k, vec) {
                Some(true) => slots
                    .at([t, k])
                    .copy_async_v4(&thr.partition_S(&p.x.local_tile(Self::TILER, [b, k])).at(0)),
                Some(false) => slots.at([t, k]).write(Self::read_partial(p, b, t, k)),
                None => {}
            }
            k += 1;
        }
        c.smem.wait_all();
        let (mut m, mut sum) = (f32::NEG_INFINITY, 0.0f32);
        let mut online = |a: &V4| {
            let new = m.max(tree::<T>(a, |x| x, f32::max));
            // nothing but -inf so far: nothing to add (and -inf - -inf would be NaN)
            if new != f32::NEG_INFINITY {
                sum = sum * exp_shifted(m, new) + tree::<T>(a, |x| exp_shifted(x, new), add);
                m = new;
            }
        };
        let (whole, tiles) = (Self::whole_tiles(p, b, t, vec), Self::tiles(p.x.shape()[1]));
        let mut k = 0;
        while k < whole {
            online(&Self::load(p, c, k, true));
            k += 1;
        }
        while k < tiles {
            if let Some(w) = Self::atom(p, b, t, k, vec) {
                online(&Self::load(p, c, k, w));
            }
            k += 1;
        }
        (m, sum)
    }

    /// `y = exp(x - m) / s` over the thread's elements of the row, given its maximum and sum:
    /// `2^(x log2 e - (m log2 e + log2 s))`, the shift split in two so that it stays exact
    /// (`hi = m log2 e` rounded, `lo` its rounding error plus `log2 s`): per element one fused
    /// multiply-add, one subtraction and one `ex2.approx`. (`x - m <= 0` and `s >= 1`, so the
    /// exponent is at most rounding above 0; a row whose maximum is `-inf` gives NaN.)
    ///
    /// # Safety
    /// As [`Softmax::stage`], which must have run for this thread (its staged atoms are read
    /// back).
    #[inline(always)]
    pub unsafe fn write<E: Mem<T>, S: Mem<V4>>(p: &SoftmaxParams<E>, c: &Ctx<S>, m: f32, s: f32) {
        let (b, t) = (c.block[0], c.thread);
        let hi = m * LOG2_E;
        let lo = fma(m, LOG2_E, -hi) + log2_approx(s);
        let y = |x: f32| exp2_approx(fma(x, LOG2_E, -hi) - lo);
        let thr = Self::PLAN.get_slice(t);
        let vec = Self::vector(p);
        let g = |k: i64| thr.partition_D(&p.y.local_tile(Self::TILER, [b, k]));
        let (whole, tiles) = (Self::whole_tiles(p, b, t, vec), Self::tiles(p.x.shape()[1]));
        let mut k = 0;
        while k < whole {
            let a = Self::load(p, c, k, true);
            g(k).at(0)
                .write_v4(pack::<T>(|i| y(T::widen(lane::<T>(&a, i)))));
            k += 1;
        }
        let id = make_coord_tensor(p.y.shape());
        while k < tiles {
            if let Some(w) = Self::atom(p, b, t, k, vec) {
                let a = Self::load(p, c, k, w);
                let y = |i: i64| y(T::widen(lane::<T>(&a, i)));
                if w {
                    g(k).at(0).write_v4(pack::<T>(y));
                } else {
                    let cy = thr.partition_D(&id.local_tile(Self::TILER, [b, k]));
                    let mut i = 0;
                    while i < Self::V {
                        if cy.elem_less(i) {
                            g(k).at(i).write(T::from_f32(y(i)));
                        }
                        i += 1;
                    }
                }
            }
            k += 1;
        }
    }
}

impl<T: Real> Kernel for Softmax<T> {
    type T = T;
    type Shared = V4;
    type Params<E: Engine> = SoftmaxParams<E>;

    /// Unit column strides (made static), `x` and `y` of one shape,
    /// `y`'s rows disjoint, `0 <= staged <= MAX_STAGED` (then capped at the row's tiles).
    fn prepare<E: Engine>(p: SoftmaxParams<E>) -> Result<SoftmaxParams<E>, &'static str> {
        let (Some(x), Some(y)) = (p.x.with_static_stride(1, 1), p.y.with_static_stride(1, 1))
        else {
            return Err("softmax needs unit column strides in x and y");
        };
        let n = x.shape()[1];
        let why = if y.shape() != x.shape() {
            "softmax needs x and y of the same shape"
        } else if y.shape()[0] > 1 && y.layout().stride()[0].unsigned_abs() < n as u64 {
            "softmax needs y's rows not to overlap (|row stride| >= N)"
        } else if p.staged < 0 || p.staged > MAX_STAGED {
            "softmax stages 0 to MAX_STAGED tiles of a row"
        } else {
            let tiles = Self::tiles(n);
            return Ok(SoftmaxParams {
                x,
                y,
                staged: if p.staged < tiles { p.staged } else { tiles },
            });
        };
        Err(why)
    }

    /// `ceil(M / 4)` blocks of 128 threads; `staged` tiles of slots.
    fn geometry<E: Engine>(p: &SoftmaxParams<E>, _sms: i64, _smem_limit: i64) -> Geometry {
        Geometry {
            grid: [p.x.layout().tiles(Self::TILER)[0], 1],
            threads: THREADS,
            smem_bytes: p.staged * STAGE.tile_bytes(),
        }
    }

    /// [`Softmax::stage`], the row's maximum and sum over the warp, [`Softmax::write`].
    #[inline(always)]
    unsafe fn thread<E: Mem<T>, S: Mem<V4> + AsyncCopy<E>>(p: &SoftmaxParams<E>, c: &Ctx<S>) {
        let (mt, st) = Self::stage(p, c);
        let m = warp_max(mt);
        // a lane with no element, or only -inf, adds nothing to the sum
        let share = if mt == f32::NEG_INFINITY {
            0.0
        } else {
            st * exp_shifted(mt, m)
        };
        Self::write(p, c, m, warp_sum(share));
    }
}

tessel_device::kernels! {
    softmax_f32 => Softmax<f32>,
    softmax_bf16 => Softmax<bf16>,
    softmax_f16 => Softmax<f16>,
}

/// `e^(x - m)` as `2^((x - m) log2 e)` (`ex2.approx` on the device): with `m` the row's maximum,
/// `x - m <= 0` (rounding keeps the sign), so it never overflows; `x = m` gives exactly 1. (One
/// fused multiply-add `x log2 e - m log2 e` would save an instruction but can round above 0,
/// which for `m` near `1e30` overflows to infinity.)
#[inline(always)]
fn exp_shifted(x: f32, m: f32) -> f32 {
    exp2_approx((x - m) * LOG2_E)
}

/// The bits of element `i` of an atom (its word chosen by comparisons, not by an index: an atom
/// indexed at run time would go to local memory).
#[inline(always)]
fn lane<T: Real>(a: &V4, i: i64) -> u32 {
    let per = 32 / T::BITS;
    let w = match i / per {
        0 => a.0[0],
        1 => a.0[1],
        2 => a.0[2],
        _ => a.0[3],
    };
    if per == 1 {
        w
    } else {
        (w >> (T::BITS * (i % per))) & 0xffff
    }
}

/// `f(x_0) op f(x_1) op ..` over an atom's elements, as a balanced tree
/// (`((a op b) op (c op d)) op ..`): independent operations rather than one dependent chain.
#[inline(always)]
fn tree<T: Real>(a: &V4, f: impl Fn(f32) -> f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    let e = |i: i64| f(T::widen(lane::<T>(a, i)));
    let quad = |i: i64| op(op(e(i), e(i + 1)), op(e(i + 2), e(i + 3)));
    if T::BITS == 32 {
        quad(0)
    } else {
        op(quad(0), quad(4))
    }
}

/// `a + b`.
#[inline(always)]
fn add(a: f32, b: f32) -> f32 {
    a + b
}

/// The atom of the values `y(0), y(1), ..`, rounded to `T` (word by word: no run-time index).
#[inline(always)]
fn pack<T: Real>(y: impl Fn(i64) -> f32) -> V4 {
    let word = |w: i64| {
        if T::BITS == 32 {
            T::narrow(y(w))
        } else {
            T::narrow2(y(2 * w), y(2 * w + 1))
        }
    };
    V4([word(0), word(1), word(2), word(3)])
}
