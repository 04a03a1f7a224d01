//! RMSNorm over the rows of an `M x N` matrix, `y = x / sqrt(mean(x^2) + eps) * w` (seed 002's
//! example). [`RmsNorm<T, W>`] gives each row `W` warps (`tessel tune rmsnorm` finds the fastest
//! for an `N`); its [`Rows`] cut gives each thread one 128-bit [`Atom`] of its row per tile, and
//! the thread's [`RowSlice`] its atom of each tile `(b, k)` of `x`, `y` and `w` (broadcast over
//! the rows), predicated by the identity tensor (wholly inside or out: `V` divides `N`). A thread
//! stages its atoms of a row's first `staged` tiles by `cp.async`, holds the next
//! [`RmsNorm::HELD`] in registers, sums the squares (the rest of a long row `DEPTH` tiles at a
//! time) and [`group_reduce`]s them over the row; then `y = x rstd w`, `DEPTH` tiles' loads in
//! flight before the first store.

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
    /// Tiles past the staged ones held in registers: 2 for f32 with 16 warps per row (rows of
    /// 32768 fill 16 tiles, 14 staged), else none (up to 1.8 points of a copy where unused).
    pub const HELD: usize = if T::BITS == 32 && W == 16 {
        MAX_HELD
    } else {
        0
    };
    /// The warps' sums after the staged tiles, a slot each (none with one warp per row).
    pub const SUMS_BYTES: i64 = if W == 1 {
        0
    } else {
        16 * (Self::CUT.threads / 32)
    };
    /// The staging of the block's atoms in shared memory.
    pub const STAGE: Stage = Stage::new(Self::CUT.threads);
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
    type Shared = V4;
    type Params<M: Space> = RmsParams<M::Global<T>>;

    /// Unit column strides (made static), `x` and `y` of one shape `(M, N)`, `w` of `N`, 16-byte
    /// aligned rows, `y`'s rows disjoint, `staged` capped at the row's tiles.
    #[inline(always)]
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        let [x, y] = Self::CUT.check(p.x, p.y, true)?;
        let w = Rows::check_vector(p.w, x.shape()[1])?;
        let staged = Self::STAGE.cap(p.staged, Self::tiles(x.shape()[1]))?;
        Ok(RmsParams {
            x,
            w,
            y,
            staged,
            ..p
        })
    }

    /// `ceil(M / ROWS)` blocks of `THREADS` threads, `staged` tiles of slots and the warps' sums.
    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem_limit: i64) -> Geometry {
        let smem = p.staged * Self::STAGE.tile_bytes() + Self::SUMS_BYTES;
        Self::CUT.geometry(p.x.shape()[0], smem)
    }

    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let row = Self::CUT.get_slice(c.block[0], c.thread, p.x.shape());
        let (st, s, tiles) = (
            Self::STAGE.of(c.smem, c.thread, p.staged),
            p.staged,
            row.tiles(),
        );
        let (g, x) = (
            |k| Atom::load(&row.part(&p.x, k)),
            |k| st.load(k, &row.part(&p.x, k)),
        );
        let sq = |a: &Atom<T>| a.reduce(|x| x * x, |a, b| a + b);
        // the staged tiles' copies in flight, the held tiles' loads beside them
        st.copy_in(&row, &p.x);
        let mut held = [Atom::<T>::default(); MAX_HELD];
        unroll!(h < Self::HELD => {
            if row.inside(s + h as i64) {
                held[h] = g(s + h as i64);
            }
        });
        c.smem.wait_all();
        let (mut acc, mut k) = (0.0f32, 0);
        while k < s {
            if row.inside(k) {
                acc += sq(&st.atom(k));
            }
            k += 1;
        }
        unroll!(h < Self::HELD => { acc += sq(&held[h]); });
        // the rest of a long row, DEPTH tiles' loads in flight together
        let mut k = s + Self::HELD as i64;
        while k < tiles {
            let mut v = [Atom::<T>::default(); DEPTH];
            unroll!(d < DEPTH => {
                if row.inside(k + d as i64) {
                    v[d] = g(k + d as i64);
                }
            });
            unroll!(d < DEPTH => { acc += sq(&v[d]); });
            k += DEPTH as i64;
        }
        let sum = group_reduce(acc, |a, b| a + b, W, st.after(), c.thread);
        let rstd = rsqrt(sum / p.x.shape()[1] as f32 + p.eps);
        let w = |k: i64| Atom::<T>::load(&row.part_of_row(&p.w, k));
        let y = |x: &Atom<T>, w: &Atom<T>, k: i64| {
            Atom::<T>::from_fn(|i| x.get(i) * rstd * w.get(i)).store(&row.part(&p.y, k))
        };

        // the held tiles from registers; the others DEPTH tiles at a time, their w (and unstaged
        // x) loads before the first store
        let mut hw = [Atom::<T>::default(); MAX_HELD];
        unroll!(h < Self::HELD => {
            if row.inside(s + h as i64) {
                hw[h] = w(s + h as i64);
            }
        });
        unroll!(h < Self::HELD => {
            if row.inside(s + h as i64) {
                y(&held[h], &hw[h], s + h as i64);
            }
        });
        let from_x = |k: i64| k < s || k >= s + Self::HELD as i64;
        let mut k = 0;
        while k < tiles {
            let (mut xs, mut ws) = ([Atom::<T>::default(); DEPTH], [Atom::default(); DEPTH]);
            let mut ok = [false; DEPTH];
            unroll!(d < DEPTH => {
                let k = k + d as i64;
                if from_x(k) && row.inside(k) {
                    (ok[d], xs[d], ws[d]) = (true, x(k), w(k));
                }
            });
            unroll!(d < DEPTH => {
                if ok[d] {
                    y(&xs[d], &ws[d], k + d as i64); // after every load
                }
            });
            k += DEPTH as i64;
        }
    }
}
