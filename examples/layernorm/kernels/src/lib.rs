//! LayerNorm over the rows of an `M x N` matrix, `y = (x - mean) / sqrt(var + eps) * w + b`
//! (`var` the biased variance, as torch's), computed in `f32` for `f32` and `bf16`.
//!
//! `W` warps per row, one 128-bit [`Atom`] of the row per thread and tile ([`Rows`]). A thread
//! stages its atoms by `cp.async`; the mean, then the variance, are [`group_reduce`]s of the staged
//! values (two passes: no cancellation); the writes go `DEPTH` tiles at a time, every load of the
//! group before the first store. The device and the simulated GPU give the same bits.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![warn(missing_docs)]

use core::marker::PhantomData;
use tessel_device::prelude::*;

/// The most tiles written per group (their loads in flight together).
pub const DEPTH: usize = 4;

/// The kernel's parameters: `x` and `y` `(M, N)` with unit column strides, `w` and `b` `N:1`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct LayerNormParams<E> {
    /// The input.
    pub x: FlatTensor<E, 2>,
    /// The weights.
    pub w: FlatTensor<E, 1>,
    /// The biases.
    pub b: FlatTensor<E, 1>,
    /// The output (its rows must not overlap).
    pub y: FlatTensor<E, 2>,
    /// Added to the variance.
    pub eps: f32,
    /// Tiles of each row staged in shared memory ([`LayerNorm::staged_for`]).
    pub staged: i64,
}

/// LayerNorm for element type `T`, `W` warps per row (`W` divides 16).
pub struct LayerNorm<T, const W: i64>(PhantomData<T>);

impl<T: Real, const W: i64> LayerNorm<T, W> {
    /// The cut: `W` warps per row, one atom per thread per tile.
    pub const CUT: Rows = Rows::new(W, T::BITS);
    /// The staging of the block's atoms; after it, two reductions' slots per warp.
    pub const STAGE: Stage = Stage::new(Self::CUT.threads);
    const SUMS_BYTES: i64 = 2 * 16 * (Self::CUT.threads / 32);
    /// Tiles written per group: 2 for 16-bit types (fewer registers), else [`DEPTH`].
    pub const DEPTH: usize = if T::BITS == 16 { 2 } else { DEPTH };
    /// Tiles to stage for rows of `n` elements in `smem` bytes of shared memory per block.
    pub const fn staged_for(n: i64, smem: i64) -> i64 {
        Self::STAGE.fit(Self::CUT.tiles(n), smem, Self::SUMS_BYTES)
    }
}

#[kernel(
    layernorm_f32 = LayerNorm<f32, 4>,
    layernorm_bf16 = LayerNorm<bf16, 4>,
    layernorm_w1_f32 = LayerNorm<f32, 1>,
    layernorm_w1_bf16 = LayerNorm<bf16, 1>,
    layernorm_w2_f32 = LayerNorm<f32, 2>,
    layernorm_w2_bf16 = LayerNorm<bf16, 2>,
)]
impl<T: Real, const W: i64> Kernel for LayerNorm<T, W> {
    type Shared = V4;
    type Params<M: Space> = LayerNormParams<M::Global<T>>;

    /// [`Rows::check`] of `x` and `y` (whole 16-byte atoms), `w` and `b` of `N` elements.
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        let ([x, y], n) = (Self::CUT.check(p.x, p.y, true)?, p.x.shape()[1]);
        let (w, b) = (Rows::check_vector(p.w, n)?, Rows::check_vector(p.b, n)?);
        let staged = Self::STAGE.cap(p.staged, Self::CUT.tiles(n))?;
        Ok(LayerNormParams { x, w, b, y, staged, ..p })
    }

    /// `ceil(M / ROWS)` blocks of `THREADS` threads; `staged` tiles of slots and the sums.
    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem: i64) -> Geometry {
        let smem = p.staged * Self::STAGE.tile_bytes() + Self::SUMS_BYTES;
        Self::CUT.geometry(p.x.shape()[0], smem)
    }

    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let row = Self::CUT.get_slice(c.block[0], c.thread, p.x.shape());
        let (st, n, add) =
            (Self::STAGE.of(c.smem, c.thread, p.staged), p.x.shape()[1], |a, b| a + b);
        // N is whole atoms: a thread's atom of tile k is inside exactly for k < whole
        let (whole, s) = (row.whole_tiles(true), p.staged);
        let x = |k: i64| st.load::<T, _>(k, &row.part(&p.x, k));
        // the row's sum of x (sq false) or of (x - m)^2 (sq true), its own slot of the sums
        let row_sum = |sq: bool, m: f32, slot: i64| {
            let (f, mut acc, mut k) = (|v| if sq { (v - m) * (v - m) } else { v }, 0.0, 0);
            while k < whole.min(s) {
                (acc, k) = (acc + st.atom::<T>(k).reduce(f, add), k + 1);
            }
            while k < whole {
                (acc, k) = (acc + Atom::<T>::load(&row.part(&p.x, k)).reduce(f, add), k + 1);
            }
            group_reduce(acc, add, W, st.after().advance(slot * Self::CUT.threads / 32), c.thread)
        };
        st.copy_in(&row, &p.x);
        c.smem.wait_all();
        let mean = row_sum(false, 0.0, 0) / n as f32;
        let rstd = rsqrt(row_sum(true, mean, 1) / n as f32 + p.eps);
        let mut k = 0;
        while k < whole {
            let mut v = [(Atom::<T>::default(), Atom::default(), Atom::default()); DEPTH];
            unroll!(d < Self::DEPTH => {
                let k = k + d as i64;
                if k < whole {
                    v[d] = (x(k), Atom::load(&row.part_of_row(&p.w, k)), Atom::load(&row.part_of_row(&p.b, k)));
                }
            });
            unroll!(d < Self::DEPTH => {
                let (x, w, b) = v[d];
                if k + (d as i64) < whole {
                    let y = Atom::<T>::from_fn(|i| fma((x.get(i) - mean) * rstd, w.get(i), b.get(i)));
                    y.store(&row.part(&p.y, k + d as i64));
                }
            });
            k += Self::DEPTH as i64;
        }
    }
}
