//! RMSNorm over the rows of an `M x N` matrix: `y = x / sqrt(mean(x^2) + eps) * w`, written as
//! seed 002 describes.
//!
//! A block takes 4 rows, one warp per row: the thread layout is `(4,32)` row-major and each thread
//! moves `V` contiguous elements per 128-bit access (`V = 4` for f32, `8` for bf16): the tiled copy
//! `make_tiled_copy_tv((4,32):(32,1), (1,V), 128, bits)` over `(4, 32 V)` tiles. Block `b` walks
//! the tiles `local_tile(X, (4, 32V), (b, k))` for `k = 0, 1, ...` along the row. The thread's
//! slice of the identity tensor `make_identity_tensor((M,N))` gives each value's `(row, col)`,
//! and `elem_less((row, col), (M, N))` is the predicate: rows past `M` (the last block of a
//! ragged `M`) and columns past `N` (a ragged last tile, `N` a multiple of 8) are skipped.
//!
//! Pass 1 stages the thread's atoms of its row in shared memory (asynchronous copies, all in
//! flight at once, no registers held: `cp.async` on the device), waits, and sums their squares in
//! f32; the warp's sum is a butterfly over the 32 lanes (the caller's: shuffles on the device, the
//! same butterfly on the host). Pass 2 scales the staged atoms by `rstd * w` and writes `y`. Each
//! thread reads back only the slots it staged, so no barrier is needed. A row longer than the
//! staging area (`Problem::staged` tiles) has its remaining tiles read twice.

use core::marker::PhantomData;
use layout_core::{
    const_ok, make_identity_layout, make_tiled_copy_tv, zipped_divide, Codomain, FlatLayout,
    IntTuple, Layout, TiledCopy, Tiler,
};

/// Rows per block (one warp each).
pub const ROWS: i64 = 4;
/// Threads per block.
pub const THREADS: i64 = ROWS * 32;
/// Tiles a thread loads before it uses them, past the staged ones.
pub const DEPTH: i64 = 4;
const _: () = assert!(DEPTH == 4, "unroll4 covers DEPTH tiles");
/// Shared memory per staged tile: one 16-byte slot per thread.
pub const STAGE_BYTES: i64 = THREADS * 16;

/// An element type of the kernel: 32 or 16 bits, widened to f32 for the arithmetic.
pub trait Elem: Copy {
    /// Bits per element.
    const BITS: i64;
    /// The value of the element whose bits are the low `BITS` of `b`.
    fn widen(b: u32) -> f32;
    /// The bits of `v` rounded to this type (round to nearest even).
    fn narrow(v: f32) -> u32;
    /// Two 16-bit elements rounded and packed in one word, `lo` in the low half.
    #[inline(always)]
    fn narrow2(lo: f32, hi: f32) -> u32 {
        Self::narrow(lo) | (Self::narrow(hi) << 16)
    }
}
impl Elem for f32 {
    const BITS: i64 = 32;
    #[inline(always)]
    fn widen(b: u32) -> f32 {
        f32::from_bits(b)
    }
    #[inline(always)]
    fn narrow(v: f32) -> u32 {
        v.to_bits()
    }
}
impl Elem for half::bf16 {
    const BITS: i64 = 16;
    #[inline(always)]
    fn widen(b: u32) -> f32 {
        f32::from_bits(b << 16)
    }
    #[inline(always)]
    fn narrow(v: f32) -> u32 {
        half::bf16::from_f32(v).to_bits() as u32
    }
    /// On the device one `cvt.rn.bf16x2.f32`: the same round-to-nearest-even as `half`'s.
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    fn narrow2(lo: f32, hi: f32) -> u32 {
        let r: u32;
        // SAFETY: a pure register conversion (sm_80 and newer)
        unsafe {
            core::arch::asm!("cvt.rn.bf16x2.f32 {r}, {hi}, {lo};",
                 r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo,
                 options(pure, nomem, nostack, preserves_flags));
        }
        r
    }
}

/// 128 bits: `V` elements.
pub type Atom = [u32; 4];

/// Which matrix a load reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Src {
    /// The input `x` (`M x N`).
    X,
    /// The weights `w` (`N`).
    W,
}

/// How an RMSNorm thread reaches memory: 128-bit accesses at element offsets.
pub trait RmsMem {
    /// The 128 bits at element offset `off` of `src`.
    ///
    /// # Safety
    /// The `V` elements must be inside `src`.
    unsafe fn load(&mut self, src: Src, off: i64) -> Atom;
    /// Writes 128 bits of `y` at element offset `off`.
    ///
    /// # Safety
    /// The `V` elements must be inside `y`.
    unsafe fn store(&mut self, off: i64, v: Atom);
    /// Starts copying the 128 bits of `x` at element offset `off` into this thread's staging
    /// slot `k` (slot `(t, k)` of the block's `(THREADS, staged):(1, THREADS)` slots).
    ///
    /// # Safety
    /// As [`RmsMem::load`]; `k` below the staged tiles.
    unsafe fn stage(&mut self, k: i64, off: i64);
    /// Waits until this thread's staged copies have landed.
    ///
    /// # Safety
    /// Every thread that staged must wait before it reads its slots.
    unsafe fn wait_staged(&mut self);
    /// This thread's slot `k`.
    ///
    /// # Safety
    /// The slot must have been staged and waited for.
    unsafe fn staged(&mut self, k: i64) -> Atom;
}

/// The kernel's layouts for element type `T`.
pub struct RmsNorm<T>(PhantomData<T>);

impl<T: Elem> RmsNorm<T> {
    /// Elements per 128-bit access.
    pub const V: i64 = 128 / T::BITS;
    /// Columns per tile: 32 lanes of `V`.
    pub const TILE_N: i64 = 32 * Self::V;
    /// The tiled copy: `(4,32)` row-major threads, `(1,V)` values, 128-bit atoms.
    pub const COPY: TiledCopy = const_ok!(make_tiled_copy_tv(
        &const_ok!(Layout::parse("(4,32):(32,1)")),
        &const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&[1, Self::V])),
            &[1, 1]
        )),
        128,
        T::BITS
    ));
    /// The identity tensor's tile `(4, 32V):(1@0,1@1)` (of a rank-2 codomain, as
    /// `make_identity_tensor((M,N))`'s are, for any `M`, `N`).
    const TILE_ID: (Layout, Codomain) =
        const_ok!(make_identity_layout(&const_ok!(IntTuple::from_ints(&[
            ROWS,
            Self::TILE_N
        ]))));
    /// Thread -> its `(row, col)` in the tile, and its values' offsets `((V,1),1,1)`.
    const PARTS: (Layout, Layout) = const_ok!(Self::COPY.partition_modes(&Self::TILE_ID.0));

    /// The value of thread `t`'s slice of `local_tile(make_identity_tensor((M,N)), (4, 32V),
    /// (b, k))`: the ArithTuple `(row, col)` of its first element (its other values are the
    /// next `V - 1` columns).
    #[inline(always)]
    pub const fn coord(b: i64, k: i64, t: i64) -> i64 {
        // local_tile's offset (the rest mode at (b, k)), plus the thread's part of the partition
        Self::TILES.dot(&[b, k]) + Self::PARTS.0.call(t)
    }
    /// The rest mode of `zipped_divide(make_identity_tensor((M,N)), (4, 32V))`: tile `(b, k)`
    /// starts at `(4b, 32V k)`, i.e. strides `(4@0, 32V@1)` — the same for every `(M, N)` (only
    /// its shape depends on them), so it is computed here on a 2x2 grid of tiles.
    const TILES: Layout = {
        let id = const_ok!(make_identity_layout(&const_ok!(IntTuple::from_ints(&[
            2 * ROWS,
            2 * Self::TILE_N
        ]))));
        let tiler = const_ok!(Tiler::shape(&const_ok!(IntTuple::from_ints(&[
            ROWS,
            Self::TILE_N
        ]))));
        const_ok!(const_ok!(zipped_divide(&id.0, &tiler)).get(1))
    };
    /// `elem_less(coord, (M, N))`, and the coordinate's `(row, col)`.
    #[inline(always)]
    const fn predicate(p: &Problem, x: i64) -> (bool, i64, i64) {
        let cod = Self::TILE_ID.1;
        (cod.elem_less(x, &p.x.shape()), cod.get(x, 0), cod.get(x, 1))
    }

    /// The thread's values of a tile are one atom: `V` consecutive columns.
    const _ONE_ATOM: () = assert!(Self::PARTS.1.size() == Self::V);

    /// Pass 1 of thread `t` in block `b`: the sum of the squares of its elements of its row (0 for
    /// a row past `M`).
    ///
    /// # Safety
    /// `m` must reach `x` of `p` and `p.staged` slots.
    #[inline(always)]
    pub unsafe fn partial<M: RmsMem>(p: &Problem, m: &mut M, b: i64, t: i64) -> f32 {
        let () = Self::_ONE_ATOM;
        let cols = p.x.shape()[1];
        let staged = Self::staged_tiles(p);
        let mut acc = 0.0f32;
        // the staged tiles: every copy in flight before the first wait
        let mut k = 0;
        while k < staged {
            let (inside, row, col) = Self::predicate(p, Self::coord(b, k, t));
            if inside {
                m.stage(k, p.x.dot([row, col]));
            }
            k += 1;
        }
        m.wait_staged();
        let mut k = 0;
        while k < staged {
            if Self::predicate(p, Self::coord(b, k, t)).0 {
                acc += sum_sq::<T>(&m.staged(k));
            }
            k += 1;
        }
        // the rest of a long row, DEPTH tiles at a time
        let mut k = staged;
        while k * Self::TILE_N < cols {
            let mut v = [[0u32; 4]; DEPTH as usize];
            let mut d = 0;
            while d < DEPTH {
                let (inside, row, col) = Self::predicate(p, Self::coord(b, k + d, t));
                if inside {
                    v[d as usize] = m.load(Src::X, p.x.dot([row, col]));
                }
                d += 1;
            }
            let mut d = 0;
            while d < DEPTH {
                acc += sum_sq::<T>(&v[d as usize]);
                d += 1;
            }
            k += DEPTH;
        }
        acc
    }

    /// Pass 2 of thread `t` in block `b`, given its row's sum of squares: `y = x rstd w`.
    ///
    /// # Safety
    /// `m` must reach `x`, `w` and `y` of `p`, and the slots pass 1 staged.
    #[inline(always)]
    pub unsafe fn finish<M: RmsMem>(p: &Problem, m: &mut M, b: i64, t: i64, sum_sq: f32) {
        let cols = p.x.shape()[1];
        let staged = Self::staged_tiles(p);
        let rstd = p.rstd(sum_sq);
        // DEPTH tiles at a time: their `w` (and unstaged `x`) loads all in flight before the
        // first store
        let mut k = 0;
        while k * Self::TILE_N < cols {
            let (mut xs, mut ws) = ([[0u32; 4]; DEPTH as usize], [[0u32; 4]; DEPTH as usize]);
            let mut offs = [-1i64; DEPTH as usize];
            unroll4!(d => {
                let (inside, row, col) = Self::predicate(p, Self::coord(b, k + d, t));
                if inside {
                    let off = p.x.dot([row, col]);
                    offs[d as usize] = off;
                    xs[d as usize] = if k + d < staged {
                        m.staged(k + d)
                    } else {
                        m.load(Src::X, off)
                    };
                    ws[d as usize] = m.load(Src::W, col);
                }
            });
            unroll4!(d => {
                if offs[d as usize] >= 0 {
                    let y = scale::<T>(&xs[d as usize], &ws[d as usize], rstd);
                    m.store(offs[d as usize], y);
                }
            });
            k += DEPTH;
        }
    }

    /// Tiles along a row of `cols` elements.
    pub const fn tiles(cols: i64) -> i64 {
        (cols + Self::TILE_N - 1) / Self::TILE_N
    }

    /// Tiles to stage for rows of `cols` elements with `smem` bytes of shared memory per block:
    /// the whole row when it fits.
    pub const fn staged_for(cols: i64, smem: i64) -> i64 {
        let (all, fit) = (Self::tiles(cols), smem / STAGE_BYTES);
        if all < fit {
            all
        } else {
            fit
        }
    }

    /// Tiles of a row staged: the problem's staging area, at most the row.
    #[inline(always)]
    const fn staged_tiles(p: &Problem) -> i64 {
        let all = Self::tiles(p.x.shape()[1]);
        if p.staged < all {
            p.staged
        } else {
            all
        }
    }
}

/// The sum of the squares of an atom's elements.
#[inline(always)]
fn sum_sq<T: Elem>(a: &Atom) -> f32 {
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
fn lane<T: Elem>(a: &Atom, i: i64) -> u32 {
    let per = 32 / T::BITS; // elements per word
    let w = a[(i / per) as usize];
    if per == 1 {
        w
    } else {
        (w >> (T::BITS * (i % per))) & 0xffff
    }
}

/// `x * rstd * w`, element by element, rounded to `T`.
#[inline(always)]
fn scale<T: Elem>(x: &Atom, w: &Atom, rstd: f32) -> Atom {
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
    out
}

/// An RMSNorm problem: `x` is `(M,N):(N,1)`, `N` a multiple of 8.
#[derive(Clone, Copy, Debug)]
pub struct Problem {
    /// The input's (and output's) layout.
    pub x: FlatLayout<2>,
    /// Added to the mean square.
    pub eps: f32,
    /// Tiles of each row staged in shared memory (`staged * STAGE_BYTES` bytes per block);
    /// the rest are read twice.
    pub staged: i64,
}

impl Problem {
    /// `M x N`, with `staged` tiles of each row staged in shared memory; `None` unless
    /// `M >= 1`, `N >= 8` a multiple of 8, `staged >= 0` and nothing overflows.
    #[inline(always)]
    pub const fn new(rows: i64, cols: i64, eps: f32, staged: i64) -> Option<Self> {
        if cols % 8 != 0 || cols < 8 || staged < 0 {
            return None;
        }
        match FlatLayout::row_major([rows, cols]) {
            Ok(x) => Some(Self { x, eps, staged }),
            Err(_) => None,
        }
    }
    /// Blocks: `ceil(M / 4)`.
    pub const fn grid(&self) -> i64 {
        (self.x.shape()[0] + ROWS - 1) / ROWS
    }
    /// `1 / sqrt(sum_sq / N + eps)`.
    #[inline(always)]
    pub fn rstd(&self, sum_sq: f32) -> f32 {
        1.0 / sqrt(sum_sq / self.x.shape()[1] as f32 + self.eps)
    }
}

#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn sqrt(x: f32) -> f32 {
    // sqrt.rn.f32: correctly rounded, as the host's
    core::intrinsics::sqrtf32(x)
}

#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
fn sqrt(x: f32) -> f32 {
    x.sqrt()
}
