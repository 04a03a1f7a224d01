//! Staging a row-wise kernel's tiles in shared memory: each of a block's threads has one 16-byte
//! atom per tile, and [`Stage::slots`] gives thread `t`'s atom of tile `k` slot `(t, k)`
//! (`(threads, MAX):(1, threads)`: a tile's slots are consecutive, so a warp's accesses are
//! conflict-free). A launch stages the first `staged` tiles of each row, as many as the block's
//! shared memory holds ([`Stage::fit`]); the kernel reads the rest of a longer row from global
//! memory again. A thread's [`Staged`] copies its atoms in and reads them back.

use crate::frag::Atom;
use crate::mem::{AsyncCopy, Mem, Space, V4};
use crate::real::Real;
use crate::rows::RowSlice;
use layout_core::{const_ok, Engine, FlatLayout, FlatTensor, ThrTensor};

/// The staging of a block of `threads` threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    threads: i64,
}

impl Stage {
    /// The most tiles a block stages (more than any device's shared memory holds).
    pub const MAX: i64 = 1 << 16;

    /// The staging of a block of `threads` threads.
    pub const fn new(threads: i64) -> Self {
        Self { threads }
    }

    /// Bytes of shared memory per staged tile: a 16-byte slot per thread.
    pub const fn tile_bytes(&self) -> i64 {
        16 * self.threads
    }

    /// Tiles of a row of `tiles` to stage in `smem` bytes, `reserved` of them kept for other
    /// uses: the whole row when it fits, else as many as fit (at least 0).
    pub const fn fit(&self, tiles: i64, smem: i64, reserved: i64) -> i64 {
        let fit = (smem - reserved) / self.tile_bytes();
        let n = if tiles < fit { tiles } else { fit };
        if n < 0 {
            0
        } else {
            n
        }
    }

    /// `staged` capped at the row's `tiles`, or `Err` when it is outside `0..=MAX`.
    pub const fn cap(&self, staged: i64, tiles: i64) -> Result<i64, &'static str> {
        if staged < 0 || staged > Self::MAX {
            Err("a kernel stages 0 to Stage::MAX tiles of a row")
        } else if staged < tiles {
            Ok(staged)
        } else {
            Ok(tiles)
        }
    }

    /// The slots over shared memory `smem`: thread `t`'s atom of tile `k` at `(t, k)`.
    #[inline(always)]
    pub fn slots<S: Engine>(&self, smem: S) -> FlatTensor<S, 2> {
        FlatTensor::new(
            smem,
            const_ok!(FlatLayout::new(
                [self.threads, Self::MAX],
                [1, self.threads]
            )),
        )
    }

    /// Shared memory after `staged` tiles of slots (where a kernel keeps what else it shares).
    #[inline(always)]
    pub fn after<S: Engine>(&self, smem: S, staged: i64) -> S {
        smem.advance(staged * self.threads)
    }

    /// Thread `thread`'s slots of the first `staged` tiles, over shared memory `smem`.
    #[inline(always)]
    pub fn of<S: Engine>(&self, smem: S, thread: i64, staged: i64) -> Staged<S> {
        Staged {
            stage: *self,
            smem,
            thread,
            staged,
        }
    }
}

/// One thread's staged atoms: its atom of tile `k < staged` in slot `(thread, k)`.
#[derive(Clone, Copy, Debug)]
pub struct Staged<S> {
    stage: Stage,
    smem: S,
    thread: i64,
    staged: i64,
}

impl<S: Engine> Staged<S> {
    /// Is tile `k` staged?
    #[inline(always)]
    pub const fn holds(&self, k: i64) -> bool {
        k < self.staged
    }

    /// Slot `k` (`k < staged`), to write or read.
    #[inline(always)]
    pub fn slot(&self, k: i64) -> S {
        self.stage.slots(self.smem).at([self.thread, k])
    }

    /// Shared memory after every thread's slots.
    #[inline(always)]
    pub fn after(&self) -> S {
        self.stage.after(self.smem, self.staged)
    }

    /// Starts copying the atoms of `x`'s staged tiles that `row` has inside the matrix into
    /// their slots (`cp.async`, none waited for: `wait_all` before reading them back).
    ///
    /// # Safety
    /// As [`AsyncCopy::copy_async_v4`]: `x` of `row`'s shape, its atoms whole where inside and
    /// 16-byte aligned.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn copy_in<T: Copy>(
        &self,
        row: &RowSlice<'_>,
        x: &FlatTensor<<S::Space as Space>::Global<T>, 2>,
    ) where
        S: AsyncCopy,
    {
        let mut k = 0;
        while k < self.staged {
            if row.inside(k) {
                self.slot(k).copy_async_v4(&row.part(x, k).at(0));
            }
            k += 1;
        }
    }

    /// The atom of tile `k` from its slot (`k < staged`, landed).
    ///
    /// # Safety
    /// The slot written by this thread's copy or store, and that one complete.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn atom<T: Real>(&self, k: i64) -> Atom<T>
    where
        S: Mem<V4>,
    {
        Atom::from_atoms([self.slot(k).read()])
    }

    /// The atom of tile `k`: from its slot when staged, else from `part` (the thread's atom of
    /// the tile in global memory, one 128-bit load).
    ///
    /// # Safety
    /// As [`Staged::atom`] and [`Atom::load`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    #[inline(always)]
    pub unsafe fn load<T: Real, E: Mem<T>>(&self, k: i64, part: &ThrTensor<'_, E, 2>) -> Atom<T>
    where
        S: Mem<V4>,
    {
        if self.holds(k) {
            self.atom(k)
        } else {
            Atom::load(part)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Stage;

    #[test]
    fn fit_caps_at_the_row_and_at_memory() {
        let s = Stage::new(128); // 2 KiB per tile
        assert_eq!(s.fit(5, 100 << 10, 0), 5);
        assert_eq!(s.fit(500, 100 << 10, 0), 50);
        assert_eq!(s.fit(500, 100 << 10, 2048), 49);
        assert_eq!(s.fit(500, 1000, 2048), 0);
        assert_eq!(s.cap(7, 3), Ok(3));
        assert!(s.cap(-1, 3).is_err());
    }
}
