//! LayerNorm over the rows of an `M x N` matrix, `y = (x - mean) / sqrt(var + eps) * w + b`
//! (`var` the biased variance, as torch's), computed in `f32` for `f32` and `bf16`.
//!
//! [`LayerNorm<T, W>`] gives each row `W` warps; the tiled copy of `(ROWS, 32W)` threads of one
//! 128-bit [`Atom`] each cuts the tiles `(ROWS, 32 W V)`, block `r` walks the tiles `(r, k)` along
//! its rows, and the identity tensor predicates each atom (`V` divides `N`). A thread stages its
//! atoms of the row in shared memory by `cp.async`; the row's mean and then its variance are
//! [`group_reduce`]s of the staged values (two passes: no cancellation); `w` and `b` are row 0 of
//! their broadcasts `(ROWS, N):(0, 1)`. The writes go `DEPTH` tiles at a time, every load of the
//! group in flight before the first store. Every operation rounds the same way on the device and
//! on the host's simulated GPU, so the two give the same bits.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx))]
#![warn(missing_docs)]

use core::marker::PhantomData;
use tessel_device::prelude::*;

/// Tiles written per group (their loads in flight together).
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

    /// Tiles to stage for rows of `n` elements in `smem` bytes of shared memory per block.
    pub const fn staged_for(n: i64, smem: i64) -> i64 {
        Self::STAGE.fit(Self::CUT.tiles(n), smem, Self::SUMS_BYTES)
    }
}

impl<T: Real, const W: i64> Kernel for LayerNorm<T, W> {
    type T = T;
    type Shared = V4;
    type Params<E: Engine> = LayerNormParams<E>;

    /// Unit column strides (made static), `x` and `y` of one shape, `w` and `b` of `N`, `N` and
    /// the row strides multiples of `V`, `y`'s rows disjoint.
    #[inline(always)]
    fn prepare<E: Engine>(p: LayerNormParams<E>) -> Result<LayerNormParams<E>, &'static str> {
        let unit = |t: FlatTensor<E, 2>| t.with_static_stride(1, 1);
        let (Some(x), Some(y), Some(w), Some(b)) =
            (unit(p.x), unit(p.y), p.w.with_static_stride(0, 1), p.b.with_static_stride(0, 1))
        else {
            return Err("layernorm needs unit column strides in x, y, w and b");
        };
        let (n, ld) = (x.shape()[1], [x.layout().stride()[0], y.layout().stride()[0]]);
        if y.shape() != x.shape() || w.shape() != [n] || b.shape() != [n] {
            Err("layernorm needs x and y of one shape (M, N), w and b of N")
        } else if n % Self::CUT.v != 0 || ld[0] % Self::CUT.v != 0 || ld[1] % Self::CUT.v != 0 {
            Err("layernorm needs N and the row strides to be multiples of 16 bytes")
        } else if x.shape()[0] > 1 && ld[1].unsigned_abs() < n as u64 {
            Err("layernorm needs y's rows not to overlap (|row stride| >= N)")
        } else if w.broadcast_rows(Self::CUT.rows).is_none() {
            Err("layernorm needs ROWS N to fit an i64")
        } else {
            Ok(LayerNormParams {
                x,
                w,
                b,
                y,
                staged: Self::STAGE.cap(p.staged, Self::CUT.tiles(n))?,
                ..p
            })
        }
    }

    /// `ceil(M / ROWS)` blocks of `THREADS` threads; `staged` tiles of slots and the sums.
    fn geometry<E: Engine>(p: &LayerNormParams<E>, _sms: i64, _smem: i64) -> Geometry {
        let smem_bytes = p.staged * Self::STAGE.tile_bytes() + Self::SUMS_BYTES;
        let grid = [p.x.layout().tiles(Self::CUT.tiler)[0], 1];
        Geometry { grid, threads: Self::CUT.threads, smem_bytes }
    }

    #[inline(always)]
    unsafe fn thread<E: Mem<T>, S: Mem<V4> + AsyncCopy<E>>(p: &LayerNormParams<E>, c: &Ctx<S>) {
        let (r, t, s, n) = (c.block[0], c.thread, p.staged, p.x.shape()[1]);
        let thr = Self::CUT.plan.get_slice(t);
        let (id, slots) = (make_coord_tensor(p.x.shape()), Self::STAGE.slots(c.smem));
        let (Some(w), Some(b)) =
            (p.w.broadcast_rows(Self::CUT.rows), p.b.broadcast_rows(Self::CUT.rows))
        else {
            return; // prepare checked that they exist
        };
        let inside = |k: i64| thr.partition_S(&id.local_tile(Self::CUT.tiler, [r, k])).elem_less(0);
        let g_x = |k: i64| thr.partition_S(&p.x.local_tile(Self::CUT.tiler, [r, k]));
        let x = |k: i64| {
            if k < s {
                Atom::<T>::from_atoms([slots.at([t, k]).read()])
            } else {
                Atom::load(&g_x(k))
            }
        };
        for k in (0..s).filter(|&k| inside(k)) {
            slots.at([t, k]).copy_async_v4(&g_x(k).at(0));
        }
        c.smem.wait_all();
        let (tiles, add) = (Self::CUT.tiles(n), |a: f32, b: f32| a + b);
        let sums = Self::STAGE.after(c.smem, s);
        let sum = (0..tiles).filter(|&k| inside(k)).fold(0.0, |a, k| a + x(k).reduce(|v| v, add));
        let mean = group_reduce(sum, add, W, sums, t) / n as f32;
        let dev = |v: f32| (v - mean) * (v - mean);
        let sq = (0..tiles).filter(|&k| inside(k)).fold(0.0, |a, k| a + x(k).reduce(dev, add));
        let var = group_reduce(sq, add, W, sums.advance(Self::CUT.threads / 32), t) / n as f32;
        let rstd = rsqrt(var + p.eps);
        let mut k = 0;
        while k < tiles {
            let mut v = [(Atom::<T>::default(), Atom::default(), Atom::default()); DEPTH];
            unroll!(d < DEPTH => {
                if inside(k + d as i64) {
                    let tile = |t: &FlatTensor<E, 2>| t.local_tile(Self::CUT.tiler, [0, k + d as i64]);
                    let (gw, gb) = (thr.partition_S(&tile(&w)), thr.partition_S(&tile(&b)));
                    v[d] = (x(k + d as i64), Atom::load(&gw), Atom::load(&gb));
                }
            });
            unroll!(d < DEPTH => {
                if inside(k + d as i64) {
                    let (x, w, b) = v[d];
                    let y = Atom::<T>::from_fn(|i| fma((x.get(i) - mean) * rstd, w.get(i), b.get(i)));
                    y.store(&thr.partition_D(&p.y.local_tile(Self::CUT.tiler, [r, k + d as i64])));
                }
            });
            k += DEPTH as i64;
        }
    }
}

tessel_device::kernels! {
    layernorm_f32 => LayerNorm<f32, 4>,
    layernorm_bf16 => LayerNorm<bf16, 4>,
    layernorm_w1_f32 => LayerNorm<f32, 1>,
    layernorm_w1_bf16 => LayerNorm<bf16, 1>,
}
