//! RMSNorm over the rows of an `M x N` matrix, `y = x / sqrt(mean(x^2) + eps) * w` (seed 002's
//! example). [`RmsNorm<T, W>`] gives each row `W` warps (`tessel tune rmsnorm` finds the fastest
//! for an `N`); the tiled copy of `(ROWS, 32W)` threads of one 128-bit [`Atom`] each cuts the
//! tiles [`RmsNorm::TILER`], block `b` walks the tiles `(b, k)` along its rows, and the identity
//! tensor predicates each atom (wholly inside or out: `V` divides `N`). `w` is tiled as row 0 of
//! its broadcast `(ROWS, N):(0, 1)`. A thread stages its atoms of a row's first `staged` tiles by
//! `cp.async`, holds the next [`RmsNorm::HELD`] in registers, sums the squares (the rest of a long
//! row `DEPTH` tiles at a time) and [`group_reduce`]s them over the row; then `y = x rstd w`,
//! `DEPTH` tiles' loads in flight before the first store.

use core::marker::PhantomData;
use tessel_device::prelude::*;

/// Tiles a thread loads before it uses them, past the staged ones.
pub const DEPTH: usize = 4;
/// The warps per row the kernels are built for (`kernels!` in `lib.rs`), fewest first.
pub const WARPS: [i64; 5] = [1, 2, 4, 8, 16];
/// The most tiles of a row a thread holds in registers ([`RmsNorm::HELD`]).
pub const MAX_HELD: usize = 2;

/// RMSNorm's parameters: `x` and `y` `(M,N)`, `w` `N:1`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RmsParams<E> {
    /// The input.
    pub x: FlatTensor<E, 2>,
    /// The weights, one per column.
    pub w: FlatTensor<E, 1>,
    /// The output.
    pub y: FlatTensor<E, 2>,
    /// Added to the mean square.
    pub eps: f32,
    /// Tiles of each row staged in shared memory ([`RmsNorm::staged_for`]).
    pub staged: i64,
}

/// The RMSNorm kernel for element type `T` (`f32` or `bf16`), `W` warps per row.
pub struct RmsNorm<T, const W: i64 = 1>(PhantomData<T>);

impl<T: Real, const W: i64> RmsNorm<T, W> {
    /// The cut: `W` warps per row, one atom per thread per tile.
    pub const CUT: Rows = Rows::new(W, T::BITS);
    /// Elements per 128-bit atom.
    pub const V: i64 = Self::CUT.v;
    /// Threads per block: `32 max(4, W)`.
    pub const THREADS: i64 = Self::CUT.threads;
    /// Rows per block.
    pub const ROWS: i64 = Self::CUT.rows;
    /// Columns per tile.
    pub const TILE_N: i64 = Self::CUT.tiler[1];
    /// The tile: `ROWS` rows of `32 W V` columns.
    pub const TILER: [i64; 2] = Self::CUT.tiler;
    /// A thread's values of a tile: one atom.
    pub const PLAN: TvCoords<2> = Self::CUT.plan;
    /// Tiles past the staged ones held in registers: 2 for f32 with 16 warps per row (rows of
    /// 32768 fill 16 tiles, 14 staged), else none (up to 1.8 points of a copy where unused).
    pub const HELD: usize = if T::BITS == 32 && W == 16 {
        MAX_HELD
    } else {
        0
    };
    /// The warps' sums after the staged tiles, a slot each (none with one warp per row).
    pub const SUMS_BYTES: i64 = if W == 1 { 0 } else { 16 * (Self::THREADS / 32) };
    /// The staging of the block's atoms in shared memory.
    pub const STAGE: Stage = Stage::new(Self::THREADS);
    /// Tiles along a row of `cols` elements.
    pub const fn tiles(cols: i64) -> i64 {
        Self::CUT.tiles(cols)
    }

    /// Tiles to stage for rows of `cols` elements in `smem` bytes of shared memory per block.
    pub const fn staged_for(cols: i64, smem: i64) -> i64 {
        Self::STAGE.fit(Self::tiles(cols), smem, Self::SUMS_BYTES)
    }
}

impl<T: Real, const W: i64> Kernel for RmsNorm<T, W> {
    type T = T;
    type Shared = V4;
    type Params<E: Engine> = RmsParams<E>;

    /// Unit column strides (made static), `x` and `y` of one shape `(M, N)`, `w` of `N`, 16-byte
    /// aligned rows, `y`'s rows disjoint, `staged` capped at the row's tiles.
    #[inline(always)]
    fn prepare<E: Engine>(p: RmsParams<E>) -> Result<RmsParams<E>, &'static str> {
        let (Some(x), Some(w), Some(y)) = (
            p.x.with_static_stride(1, 1),
            p.w.with_static_stride(0, 1),
            p.y.with_static_stride(1, 1),
        ) else {
            return Err("rmsnorm needs unit strides along the rows of x and y and along w (128-bit accesses)");
        };
        let n = x.shape()[1];
        let why = if w.broadcast_rows(Self::ROWS).is_none() {
            "rmsnorm needs ROWS N to fit an i64"
        } else if y.shape() != x.shape() {
            "rmsnorm needs x and y of the same shape"
        } else if w.shape() != [n] {
            "rmsnorm needs w of N elements (x's columns)"
        } else if n % Self::V != 0 {
            "rmsnorm needs N a multiple of the vector width (4 f32, 8 bf16)"
        } else if x.layout().stride()[0] % Self::V != 0 || y.layout().stride()[0] % Self::V != 0 {
            "rmsnorm needs row strides that are multiples of the vector width (16-byte aligned rows)"
        } else if y.shape()[0] > 1 && y.layout().stride()[0].unsigned_abs() < n as u64 {
            "rmsnorm needs y's rows not to overlap (|row stride| >= N)"
        } else {
            let staged = Self::STAGE.cap(p.staged, Self::tiles(n))?;
            return Ok(RmsParams {
                x,
                w,
                y,
                staged,
                eps: p.eps,
            });
        };
        Err(why)
    }

    /// `ceil(M / ROWS)` blocks of `THREADS` threads, `staged` tiles of slots and the warps' sums.
    fn geometry<E: Engine>(p: &RmsParams<E>, _sms: i64, _smem_limit: i64) -> Geometry {
        Geometry {
            grid: [p.x.layout().tiles(Self::TILER)[0], 1],
            threads: Self::THREADS,
            smem_bytes: p.staged * Self::STAGE.tile_bytes() + Self::SUMS_BYTES,
        }
    }

    #[inline(always)]
    unsafe fn thread<E: Mem<T>, S: Mem<V4> + AsyncCopy<E>>(p: &RmsParams<E>, c: &Ctx<S>) {
        let (b, t, s) = (c.block[0], c.thread, p.staged);
        let thr = Self::PLAN.get_slice(t);
        let (id, slots) = (make_coord_tensor(p.x.shape()), Self::STAGE.slots(c.smem));
        // `w` broadcast over the block's rows (prepare checked that it exists)
        let Some(w) = p.w.broadcast_rows(Self::ROWS) else {
            return;
        };
        let inside = |k: i64| {
            thr.partition_S(&id.local_tile(Self::TILER, [b, k]))
                .elem_less(0)
        };
        let g_x = |k: i64| thr.partition_S(&p.x.local_tile(Self::TILER, [b, k]));
        let g_w = |k: i64| thr.partition_S(&w.local_tile(Self::TILER, [0, k]));
        let g_y = |k: i64| thr.partition_D(&p.y.local_tile(Self::TILER, [b, k]));
        let staged = |k: i64| Atom::<T>::from_atoms([slots.at([t, k]).read()]);
        let sq = |a: &Atom<T>| a.reduce(|x| x * x, |a, b| a + b);
        let tiles = Self::tiles(p.x.shape()[1]);
        // the staged tiles' copies in flight, the held tiles' loads beside them
        let mut k = 0;
        while k < s {
            if inside(k) {
                slots.at([t, k]).copy_async_v4(&g_x(k).at(0));
            }
            k += 1;
        }
        let (mut held, mut hw) = (
            [Atom::<T>::default(); MAX_HELD],
            [Atom::default(); MAX_HELD],
        );
        unroll!(h < Self::HELD => {
            if inside(s + h as i64) {
                held[h] = Atom::load(&g_x(s + h as i64));
            }
        });
        c.smem.wait_all();
        let (mut acc, mut k) = (0.0f32, 0);
        while k < s {
            if inside(k) {
                acc += sq(&staged(k));
            }
            k += 1;
        }
        unroll!(h < Self::HELD => { acc += sq(&held[h]); });
        // the rest of a long row, DEPTH tiles' loads in flight together
        let mut k = s + Self::HELD as i64;
        while k < tiles {
            let mut v = [Atom::<T>::default(); DEPTH];
            unroll!(d < DEPTH => {
                if inside(k + d as i64) {
                    v[d] = Atom::load(&g_x(k + d as i64));
                }
            });
            unroll!(d < DEPTH => { acc += sq(&v[d]); });
            k += DEPTH as i64;
        }
        let sum = group_reduce(acc, |a, b| a + b, W, Self::STAGE.after(c.smem, s), t);
        let rstd = rsqrt(sum / p.x.shape()[1] as f32 + p.eps);
        let y = |x: &Atom<T>, w: &Atom<T>| Atom::<T>::from_fn(|i| x.get(i) * rstd * w.get(i));

        // the held tiles from registers; the others DEPTH tiles at a time, their w (and unstaged
        // x) loads before the first store
        unroll!(h < Self::HELD => {
            if inside(s + h as i64) {
                hw[h] = Atom::load(&g_w(s + h as i64));
            }
        });
        unroll!(h < Self::HELD => {
            if inside(s + h as i64) {
                y(&held[h], &hw[h]).store(&g_y(s + h as i64));
            }
        });
        let from_x = |k: i64| k < s || k >= s + Self::HELD as i64;
        let mut k = 0;
        while k < tiles {
            let (mut xs, mut ws) = ([Atom::<T>::default(); DEPTH], [Atom::default(); DEPTH]);
            let mut ok = [false; DEPTH];
            unroll!(d < DEPTH => {
                let k = k + d as i64;
                if from_x(k) && inside(k) {
                    ok[d] = true;
                    xs[d] = if k < s { staged(k) } else { Atom::load(&g_x(k)) };
                    ws[d] = Atom::load(&g_w(k));
                }
            });
            unroll!(d < DEPTH => {
                if ok[d] {
                    y(&xs[d], &ws[d]).store(&g_y(k + d as i64)); // after every load
                }
            });
            k += DEPTH as i64;
        }
    }
}
