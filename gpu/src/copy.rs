//! The vectorized copy: `dst[i] = src[i]` for `i < n` elements of `T`, any `n`.
//!
//! A block copies tiles of `TILE` elements, tile `block`, `block + grid`, ... (grid-stride). Inside
//! a tile, [`VecCopy::TV`] maps (value, thread, iteration) to the element: a thread's `VEC` values are
//! contiguous (one 128-bit access), a warp's accesses are contiguous, iterations follow. A whole
//! tile in bounds is moved with `ITERS` vector loads in flight before the first store; the ragged
//! last tile element by element, each predicated on `i < n`.

use core::marker::PhantomData;
use layout_core::{const_ok, IntTuple, Layout};

/// Threads per block.
pub const THREADS: i64 = 256;
/// Vector accesses per thread and tile.
pub const ITERS: i64 = 4;

/// How a copy thread reaches memory: the device uses global memory, the host its slices.
pub trait CopyMem {
    /// One 128-bit vector in registers.
    type Vec: Copy;
    /// Loads the `VEC` elements at element offset `off` (a multiple of `VEC`, in bounds).
    ///
    /// # Safety
    /// `off .. off + VEC` must be inside the source.
    unsafe fn load_vec(&mut self, off: i64) -> Self::Vec;
    /// Stores `v` at element offset `off`.
    ///
    /// # Safety
    /// `off .. off + VEC` must be inside the destination.
    unsafe fn store_vec(&mut self, off: i64, v: Self::Vec);
    /// `dst[off] = src[off]`.
    ///
    /// # Safety
    /// `off` must be inside both.
    unsafe fn copy_elem(&mut self, off: i64);
}

/// The copy's layouts for elements of type `T` (2 or 4 bytes).
pub struct VecCopy<T>(PhantomData<T>);

impl<T> VecCopy<T> {
    /// Elements per 128-bit access.
    pub const VEC: i64 = 16 / core::mem::size_of::<T>() as i64;
    /// (value, thread, iteration) -> element offset within a tile:
    /// `(VEC,THREADS,ITERS):(1,VEC,VEC*THREADS)`.
    pub const TV: Layout = const_ok!(Layout::from_parts(
        const_ok!(IntTuple::from_ints(&[Self::VEC, THREADS, ITERS])),
        &[1, Self::VEC, Self::VEC * THREADS]
    ));
    /// Elements per tile.
    pub const TILE: i64 = Self::TV.size();

    /// Blocks that give every block work for `n` elements, at most `max_blocks`.
    pub const fn grid(n: i64, max_blocks: i64) -> i64 {
        let tiles = (n + Self::TILE - 1) / Self::TILE;
        if tiles < 1 {
            1
        } else if tiles < max_blocks {
            tiles
        } else {
            max_blocks
        }
    }

    /// What thread `t` of block `block` (of `grid`) does.
    ///
    /// # Safety
    /// `m` must reach `n` elements of source and destination; launch with [`THREADS`] threads.
    #[inline(always)]
    pub unsafe fn thread<M: CopyMem>(m: &mut M, n: i64, block: i64, grid: i64, t: i64) {
        let mut tile = block;
        while tile * Self::TILE < n {
            let base = tile * Self::TILE;
            // (value 0, thread t, iteration k)
            let at = |k: i64| base + Self::TV.call((t + k * THREADS) * Self::VEC);
            if base + Self::TILE <= n {
                let v: [M::Vec; ITERS as usize] =
                    core::array::from_fn(|k| m.load_vec(at(k as i64)));
                let mut k = 0;
                while k < ITERS {
                    m.store_vec(at(k), v[k as usize]);
                    k += 1;
                }
            } else {
                let mut k = 0;
                while k < ITERS {
                    let mut e = 0;
                    while e < Self::VEC {
                        let o = base + Self::TV.call(e + (t + k * THREADS) * Self::VEC);
                        if o < n {
                            m.copy_elem(o);
                        }
                        e += 1;
                    }
                    k += 1;
                }
            }
            tile += grid;
        }
    }
}
