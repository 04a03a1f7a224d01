//! RMSNorm over the rows of an `M x N` matrix: `y = x / sqrt(mean(x^2) + eps) * w`, written as
//! seed 002 describes (this kernel is its example).
//!
//! [`RmsNorm<T, W>`] gives each row `W` warps (1, 2, 4, 8 or 16) and each block
//! [`RmsNorm::THREADS`] `= 32 max(4, W)` threads: 4 rows of one warp, 2 rows of 2 warps, one row
//! of 4, 8 or 16. The tiled copy [`RmsNorm::COPY`] is `make_tiled_copy_tv((R,32W):(32W,1), (1,V),
//! 128, bits)` (`R` rows per block, `V = 4` for f32, `8` for bf16) over tiles of
//! [`RmsNorm::TILER`] `= (R, 32WV)`. Block `b` walks the tiles `(b, k)`, `k = 0, 1, ...` along its
//! rows: `local_tile` of `x`, `y` and of the identity tensor `make_identity_tensor((M,N))`, the
//! thread's `partition_S` / `partition_D` of each ([`RmsNorm::PLAN`], `get_slice(t)`), and the
//! predicate `elem_less` of the thread's identity values: rows past `M` (the last block of a ragged
//! `M`) and columns past `N` (a ragged last tile) are skipped. A thread's values of a tile are one
//! 128-bit atom (`V` consecutive columns of one row; `N` is a multiple of `V`, so an atom is wholly
//! inside or wholly outside, and its first value's predicate is the atom's). The weights `w` are
//! tiled as row 0 of their broadcast `(R, N):(0, 1)` (`broadcast_rows`): every warp's thread reads
//! the atom of `w` under its atom of `x`.
//!
//! A thread first ([`RmsNorm::partial`]) stages its atoms of its row in shared memory —
//! asynchronous copies ([`AsyncCopy`], `cp.async` on the device), all in flight before the one
//! wait, no registers held — then sums their squares in f32. In the f32 kernel of 16 warps per row
//! the [`RmsNorm::HELD`] tiles after the staged ones are loaded into registers beside those copies
//! and held to the end, so a row up to `staged + HELD` tiles long is read once. The warp's sum is
//! the butterfly of [`warp_sum`] (shuffles on the device and on the simulated GPU alike). With
//! `W > 1` a row's sum is its warps' sums: lane 0 of each warp writes its warp's sum to shared
//! memory ([`RmsNorm::publish`]), a barrier follows, and every thread adds the row's `W` sums in
//! warp order ([`RmsNorm::row_sum`]: every thread of the row the same additions, so the results
//! are bit-equal). Last, [`RmsNorm::finish`] scales
//! the staged atoms by `rstd * w` and writes `y`, in groups of [`DEPTH`] tiles whose `w` loads are
//! all in flight before the first store. Each thread reads back only the slots it staged. A row
//! longer than the staging area and the held tiles ([`RmsParams::staged`] `+` [`RmsNorm::HELD`]
//! tiles) has its remaining tiles read twice, `DEPTH` at a time.
//!
//! Short rows want few warps per row (many rows in flight per block), long rows many (their
//! atoms spread over more threads, one row's staging per block); which `W` is fastest for an `N`
//! on a device is what `tessel tune rmsnorm` measures.
//!
//! Any row stride of `x` and `y` works (padded or sliced rows), as long as rows stay 16-byte
//! aligned and `y`'s rows do not overlap; the last modes need unit strides, which
//! [`Kernel::prepare`] checks and makes static (`with_static_stride`: the compiler computes with
//! the constant 1).

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::math::rsqrt;
use crate::mem::{AsyncCopy, Mem, V4};
use crate::real::Real;
use crate::sync::{sync_threads, warp_sum};
use core::marker::PhantomData;
use layout_core::{
    const_ok, make_coord_tensor, make_tiled_copy_tv, Engine, FlatLayout, FlatTensor, IntTuple,
    Layout, TiledCopy, TvCoords,
};

/// Rows per block of the one-warp-per-row kernel ([`RmsNorm<T, 1>`]).
pub const ROWS: i64 = 4;
/// Tiles a thread loads before it uses them, past the staged ones.
pub const DEPTH: i64 = 4;
const _: () = assert!(DEPTH == 4, "unroll4 covers DEPTH tiles");
/// The warps per row the kernels are built for (`kernels!` in `lib.rs`), fewest first.
pub const WARPS: [i64; 5] = [1, 2, 4, 8, 16];

/// The most tiles of a row a thread holds in registers ([`RmsNorm::HELD`]).
pub const MAX_HELD: i64 = 2;
const _: () = assert!(MAX_HELD == 2, "unroll2 covers the held tiles");

/// The most tiles of a row a block stages (more than any device's shared memory per block).
pub const MAX_STAGED: i64 = 1 << 16;

/// RMSNorm's parameters, one by-value kernel parameter: `x` and `y` `(M,N)` (any row stride, unit
/// column stride), `w` `N:1`.
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
    /// Tiles of each row staged in shared memory (`staged * RmsNorm::STAGE_BYTES` bytes per block;
    /// the rest of a row past the held tiles, [`RmsNorm::HELD`], is read twice): [`RmsNorm::staged_for`] the shared memory a block may have.
    /// `prepare` caps it at the row's tiles.
    pub staged: i64,
}

/// The RMSNorm kernel for element type `T` (`f32` or `bf16`), `W` warps per row.
pub struct RmsNorm<T, const W: i64 = 1>(PhantomData<T>);

impl<T: Real, const W: i64> RmsNorm<T, W> {
    /// Elements per 128-bit access.
    pub const V: i64 = 128 / T::BITS;
    /// Threads per block: `32 max(4, W)`.
    pub const THREADS: i64 = 32 * if W < 4 { 4 } else { W };
    /// Rows per block: `THREADS / 32W`.
    pub const ROWS: i64 = Self::THREADS / (32 * W);
    /// Warps per block.
    pub const WARPS: i64 = Self::THREADS / 32;
    /// Columns per tile: `32W` lanes of `V`.
    pub const TILE_N: i64 = 32 * W * Self::V;
    /// The tile: `ROWS` rows of `32 W V` columns.
    pub const TILER: [i64; 2] = [Self::ROWS, Self::TILE_N];
    /// Tiles past the staged ones that a thread holds in registers from their loads to the end, so
    /// that they are read from `x` once: [`MAX_HELD`] for f32 with 16 warps per row, none
    /// otherwise. Its blocks of 512 threads are at most 2 to a multiprocessor when a row's tiles
    /// outgrow the staging, so a thread may use 64 registers, which the held atoms (4 each) fit
    /// beside the kernel's others (54 in all on sm_90, `gpu/registers.txt`); and its rows of
    /// N = 32768 fill 16 tiles, of which two blocks per SM stage 14. The held code costs where it
    /// is not used (rows wholly staged): up to 1.8 points of a copy on the H200 for the 8- and
    /// 16-warp kernels that had it (`docs/perf.md`), so the others, whose rows fit, do without.
    pub const HELD: i64 = if T::BITS == 32 && W == 16 {
        MAX_HELD
    } else {
        0
    };
    /// Shared memory per staged tile: one 16-byte slot per thread.
    pub const STAGE_BYTES: i64 = Self::THREADS * 16;
    /// Shared memory for the warps' sums after the staged tiles (one 16-byte slot per warp;
    /// none with one warp per row).
    pub const SUMS_BYTES: i64 = if W == 1 { 0 } else { 16 * Self::WARPS };
    /// The block's staging slots in shared memory, 16 bytes each: `(THREADS, staged):(1,
    /// THREADS)` — thread `t` stages its atom of tile `k` in slot `(t, k)` (the shape's second
    /// extent is the largest `staged`, [`MAX_STAGED`]; a launch has `staged` of them). The warps'
    /// sums follow the `staged` tiles: [`RmsNorm::sums`].
    pub const SLOTS: FlatLayout<2> = const_ok!(FlatLayout::new(
        [Self::THREADS, MAX_STAGED],
        [1, Self::THREADS]
    ));
    /// The warps' sums: `WARPS:1` slots ([`RmsNorm::sums`]).
    pub const SUMS: FlatLayout<1> = const_ok!(FlatLayout::new([Self::WARPS], [1]));
    /// The tiled copy: `(ROWS, 32W)` row-major threads, `(1,V)` values, 128-bit atoms.
    pub const COPY: TiledCopy = const_ok!(make_tiled_copy_tv(
        &const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&[Self::ROWS, 32 * W])),
            &[32 * W, 1]
        )),
        &const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&[1, Self::V])),
            &[1, 1]
        )),
        128,
        T::BITS
    ));
    /// The copy's partition of a tile, as coordinates.
    pub const PLAN: TvCoords<2> = const_ok!(TvCoords::new(&Self::COPY, Self::TILER));

    /// A thread's values of a tile are one atom: `V` consecutive columns of a row; `W` is one
    /// of [`WARPS`].
    const _ONE_ATOM: () = assert!(
        Self::PLAN.values() == Self::V
            && Self::PLAN.atom_vals() == Self::V
            && Self::PLAN.threads() == Self::THREADS
            && (W == 1 || W == 2 || W == 4 || W == 8 || W == 16)
    );

    /// Tiles along a row of `cols` elements.
    pub const fn tiles(cols: i64) -> i64 {
        (cols + Self::TILE_N - 1) / Self::TILE_N
    }

    /// Tiles to stage for rows of `cols` elements with `smem` bytes of shared memory per block:
    /// the whole row when it fits.
    pub const fn staged_for(cols: i64, smem: i64) -> i64 {
        let (all, fit) = (
            Self::tiles(cols),
            (smem - Self::SUMS_BYTES) / Self::STAGE_BYTES,
        );
        if fit < 0 {
            0
        } else if all < fit {
            all
        } else {
            fit
        }
    }

    /// Thread `c.thread` in block `c.block[0]` stages its atoms of its row's first `staged` tiles,
    /// loads those of the next [`RmsNorm::HELD`] into registers, and returns the sum of the
    /// squares of all its elements of the row (0 for a row past `M`) with the held atoms.
    ///
    /// # Safety
    /// `p` prepared, its engines reaching its tensors; `c.smem` reaching `p.staged` tiles of
    /// [`SLOTS`].
    #[inline(always)]
    pub unsafe fn partial<E: Mem<T>, S: Mem<V4> + AsyncCopy<E>>(
        p: &RmsParams<E>,
        c: &Ctx<S>,
    ) -> (f32, [V4; MAX_HELD as usize]) {
        let () = Self::_ONE_ATOM;
        let (b, t) = (c.block[0], c.thread);
        let thr = Self::PLAN.get_slice(t);
        let id = make_coord_tensor(p.x.shape());
        let slots = FlatTensor::new(c.smem, Self::SLOTS);
        let inside = |k: i64| {
            thr.partition_S(&id.local_tile(Self::TILER, [b, k]))
                .elem_less(0)
        };
        let g_x = |k: i64| thr.partition_S(&p.x.local_tile(Self::TILER, [b, k])).at(0);
        // the staged tiles: every copy in flight before the one wait
        let mut k = 0;
        while k < p.staged {
            if inside(k) {
                slots.at([t, k]).copy_async_v4(&g_x(k));
            }
            k += 1;
        }
        // the held tiles: their loads in flight beside the copies
        let (s, mut held) = (p.staged, [V4([0; 4]); MAX_HELD as usize]);
        unroll2!(h => if h < Self::HELD && inside(s + h) {
            held[h as usize] = g_x(s + h).read_v4();
        });
        c.smem.wait_all();
        let mut acc = 0.0f32;
        let mut k = 0;
        while k < p.staged {
            if inside(k) {
                acc += sum_sq::<T>(&slots.at([t, k]).read());
            }
            k += 1;
        }
        unroll2!(h => if h < Self::HELD {
            acc += sum_sq::<T>(&held[h as usize]);
        });
        // the rest of a long row, DEPTH tiles at a time, their loads in flight together
        let tiles = Self::tiles(p.x.shape()[1]);
        let mut k = s + Self::HELD;
        while k < tiles {
            let mut v = [V4([0; 4]); DEPTH as usize];
            unroll4!(d => if inside(k + d) {
                v[d as usize] = g_x(k + d).read_v4();
            });
            unroll4!(d => acc += sum_sq::<T>(&v[d as usize]));
            k += DEPTH;
        }
        (acc, held)
    }

    /// The warps' sums, one 16-byte slot each (the sum in word 0), after the `staged` tiles of
    /// slots: `WARPS:1`.
    fn sums<S: Mem<V4>>(p: &RmsParams<impl Engine>, c: &Ctx<S>) -> FlatTensor<S, 1> {
        let at = c.smem.advance(p.staged * Self::THREADS);
        FlatTensor::new(at, Self::SUMS)
    }

    /// With `W > 1`: lane 0 of each warp writes the warp's sum (every lane holds it) to its slot
    /// of [`RmsNorm::sums`].
    ///
    /// # Safety
    /// As [`RmsNorm::partial`]; `c.smem` also reaches the sums.
    #[inline(always)]
    pub unsafe fn publish<E: Engine, S: Mem<V4>>(p: &RmsParams<E>, c: &Ctx<S>, warp_sum: f32) {
        if c.thread % 32 == 0 {
            Self::sums(p, c)
                .at([c.thread / 32])
                .write(V4([warp_sum.to_bits(), 0, 0, 0]));
        }
    }

    /// With `W > 1`, after a barrier: the row's sum, its `W` warps' sums added in warp order.
    ///
    /// # Safety
    /// As [`RmsNorm::publish`], which every thread of the block must have run.
    #[inline(always)]
    pub unsafe fn row_sum<E: Engine, S: Mem<V4>>(p: &RmsParams<E>, c: &Ctx<S>) -> f32 {
        let (sums, first) = (Self::sums(p, c), c.thread / (32 * W) * W);
        let mut s = 0.0f32;
        let mut i = 0;
        while i < W {
            s += f32::from_bits(sums.at([first + i]).read().0[0]);
            i += 1;
        }
        s
    }

    /// Thread `c.thread` in block `c.block[0]`, given its row's sum of squares and its held
    /// atoms: `y = x rstd w` over its atoms of the row.
    ///
    /// # Safety
    /// As [`RmsNorm::partial`], which must have run for this thread and returned `held`, then
    /// the row's sum.
    #[inline(always)]
    pub unsafe fn finish<E: Mem<T>, S: Mem<V4>>(
        p: &RmsParams<E>,
        c: &Ctx<S>,
        sum_sq: f32,
        held: &[V4; MAX_HELD as usize],
    ) {
        let (b, t) = (c.block[0], c.thread);
        let cols = p.x.shape()[1];
        let rstd = rsqrt(sum_sq / cols as f32 + p.eps);
        let thr = Self::PLAN.get_slice(t);
        let id = make_coord_tensor(p.x.shape());
        let slots = FlatTensor::new(c.smem, Self::SLOTS);
        // `w` broadcast over the rows, `(ROWS, N):(0, 1)`, and tiled as row 0 of the block's tiles:
        // each warp's thread reads the atom of `w` under its atom of `x` (prepare checked that
        // the broadcast exists)
        let Some(w) = p.w.broadcast_rows(Self::ROWS) else {
            return;
        };
        let inside = |k: i64| {
            thr.partition_S(&id.local_tile(Self::TILER, [b, k]))
                .elem_less(0)
        };
        let g_x = |k: i64| thr.partition_S(&p.x.local_tile(Self::TILER, [b, k])).at(0);
        let g_w = |k: i64| thr.partition_S(&w.local_tile(Self::TILER, [0, k])).at(0);
        let g_y = |k: i64| thr.partition_D(&p.y.local_tile(Self::TILER, [b, k])).at(0);
        let (tiles, s) = (Self::tiles(cols), p.staged);
        // the held tiles, from registers
        let mut hw = [V4([0; 4]); MAX_HELD as usize];
        unroll2!(h => if h < Self::HELD && inside(s + h) {
            hw[h as usize] = g_w(s + h).read_v4();
        });
        unroll2!(h => if h < Self::HELD && inside(s + h) {
            g_y(s + h).write_v4(scale::<T>(&held[h as usize], &hw[h as usize], rstd));
        });
        // the others DEPTH tiles at a time: their `w` (and unstaged `x`) loads all in flight
        // before the first store
        let from_x = |k: i64| k < s || k >= s + Self::HELD;
        let mut k = 0;
        while k < tiles {
            let (mut xs, mut ws) = ([V4([0; 4]); DEPTH as usize], [V4([0; 4]); DEPTH as usize]);
            let mut ok = [false; DEPTH as usize];
            unroll4!(d => if from_x(k + d) && inside(k + d) {
                ok[d as usize] = true;
                xs[d as usize] = if k + d < s {
                    slots.at([t, k + d]).read()
                } else {
                    g_x(k + d).read_v4()
                };
                ws[d as usize] = g_w(k + d).read_v4();
            });
            unroll4!(d => if ok[d as usize] {
                g_y(k + d).write_v4(scale::<T>(&xs[d as usize], &ws[d as usize], rstd));
            });
            k += DEPTH;
        }
    }
}

impl<T: Real, const W: i64> Kernel for RmsNorm<T, W> {
    type T = T;
    type Shared = V4;
    type Params<E: Engine> = RmsParams<E>;

    /// Unit strides along the rows of `x` and `y` and along `w` (made static), `x` and `y` of one
    /// shape `(M, N)`, `w` of `N`, `N` a multiple of `V` (whole atoms), row strides keeping rows
    /// 16-byte aligned, `y`'s rows disjoint, `0 <= staged <= MAX_STAGED` (then capped at the row's
    /// tiles).
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
        let why = if y.shape() != x.shape() {
            "rmsnorm needs x and y of the same shape"
        } else if w.shape() != [n] {
            "rmsnorm needs w of N elements (x's columns)"
        } else if n % Self::V != 0 {
            "rmsnorm needs N a multiple of the vector width (4 f32, 8 bf16)"
        } else if x.layout().stride()[0] % Self::V != 0 || y.layout().stride()[0] % Self::V != 0 {
            "rmsnorm needs row strides that are multiples of the vector width (16-byte aligned rows)"
        } else if y.shape()[0] > 1 && y.layout().stride()[0].unsigned_abs() < n as u64 {
            "rmsnorm needs y's rows not to overlap (|row stride| >= N)"
        } else if p.staged < 0 || p.staged > MAX_STAGED {
            "rmsnorm stages 0 to MAX_STAGED tiles of a row"
        } else if w.broadcast_rows(Self::ROWS).is_none() {
            "rmsnorm needs ROWS N to fit an i64"
        } else {
            let tiles = Self::tiles(n);
            return Ok(RmsParams {
                x,
                w,
                y,
                eps: p.eps,
                staged: if p.staged < tiles { p.staged } else { tiles },
            });
        };
        Err(why)
    }

    /// `ceil(M / ROWS)` blocks of `THREADS` threads, `staged` tiles of slots and the warps' sums.
    /// The staging size is the
    /// parameters' `staged`, which the kernel reads (it cannot see the limit); the launcher
    /// derives it from the same limit (`staged_for(N, smem_limit)`) and refuses a launch whose
    /// shared memory exceeds it.
    fn geometry<E: Engine>(p: &RmsParams<E>, _sms: i64, _smem_limit: i64) -> Geometry {
        Geometry {
            grid: [p.x.layout().tiles(Self::TILER)[0], 1],
            threads: Self::THREADS,
            smem_bytes: p.staged * Self::STAGE_BYTES + Self::SUMS_BYTES,
        }
    }

    /// [`RmsNorm::partial`]; the warp's sum; with `W > 1` [`RmsNorm::publish`], a barrier and
    /// [`RmsNorm::row_sum`]; [`RmsNorm::finish`].
    #[inline(always)]
    unsafe fn thread<E: Mem<T>, S: Mem<V4> + AsyncCopy<E>>(p: &RmsParams<E>, c: &Ctx<S>) {
        let (sum, held) = Self::partial(p, c);
        let mut sum = warp_sum(sum);
        if W > 1 {
            Self::publish(p, c, sum);
            sync_threads();
            sum = Self::row_sum(p, c);
        }
        Self::finish(p, c, sum, &held);
    }
}

/// The sum of the squares of an atom's elements.
#[inline(always)]
fn sum_sq<T: Real>(a: &V4) -> f32 {
    let mut s = 0.0f32;
    let mut i = 0;
    while i < 128 / T::BITS {
        let e = T::widen(lane::<T>(a, i));
        s += e * e;
        i += 1;
    }
    s
}

/// The bits of element `i` of an atom.
#[inline(always)]
fn lane<T: Real>(a: &V4, i: i64) -> u32 {
    let per = 32 / T::BITS; // elements per word
    let w = a.0[(i / per) as usize];
    if per == 1 {
        w
    } else {
        (w >> (T::BITS * (i % per))) & 0xffff
    }
}

/// `x * rstd * w`, element by element, rounded to `T`.
#[inline(always)]
fn scale<T: Real>(x: &V4, w: &V4, rstd: f32) -> V4 {
    let per = 32 / T::BITS;
    let y = |i: i64| T::widen(lane::<T>(x, i)) * rstd * T::widen(lane::<T>(w, i));
    let mut out = [0u32; 4];
    let mut word = 0;
    while word < 4 {
        let i = word * per;
        out[word as usize] = if per == 1 {
            T::narrow(y(i))
        } else {
            T::narrow2(y(i), y(i + 1))
        };
        word += 1;
    }
    V4(out)
}
