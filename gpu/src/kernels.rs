//! The PTX entry points: each binds device memory to a kernel's partitioning (in [`crate::copy`],
//! [`crate::transpose`]) and runs it for this thread.

use crate::device::*;
use crate::rmsnorm::{
    Atom, Elem as RmsElem, Problem as RmsProblem, RmsMem, RmsNorm, Src, THREADS as RMS_THREADS,
};
use crate::transpose::{Padded, Problem, SmemTile, Swizzled, TransposeMem};
use half::{bf16, f16};

/// Global memory and the block's shared tile of a transpose.
struct GlobalTranspose<T> {
    src: *const T,
    dst: *mut T,
    smem: *mut T,
}

impl<T: Copy> TransposeMem for GlobalTranspose<T> {
    type E = T;
    #[inline(always)]
    unsafe fn load_global(&mut self, off: i64) -> T {
        *self.src.add(off as usize)
    }
    #[inline(always)]
    unsafe fn store_global(&mut self, off: i64, v: T) {
        *self.dst.add(off as usize) = v
    }
    #[inline(always)]
    unsafe fn load_shared(&mut self, off: i64) -> T {
        *self.smem.add(off as usize)
    }
    #[inline(always)]
    unsafe fn store_shared(&mut self, off: i64, v: T) {
        *self.smem.add(off as usize) = v
    }
}

#[inline(always)]
unsafe fn transpose<T: Copy, S: SmemTile>(src: *const T, dst: *mut T, rows: i64, cols: i64) {
    let Some(p) = Problem::new(rows, cols) else {
        trap()
    };
    let mut m = GlobalTranspose {
        src,
        dst,
        smem: dynamic_smem::<T>(),
    };
    let (bx, by, t) = (block_x(), block_y(), thread_x());
    p.load_tile::<S, _>(&mut m, bx, by, t);
    sync_threads();
    p.store_tile::<S, _>(&mut m, bx, by, t);
}

macro_rules! transpose_kernel {
    ($name:ident, $t:ty, $smem:ident) => {
        /// `dst = src^T` for a row-major `rows x cols` `src`. Launch with `Problem::grid` blocks of
        /// `transpose::THREADS` threads and the shared tile's `ELEMS` elements of dynamic shared
        /// memory.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $name(
            src: *const $t,
            dst: *mut $t,
            rows: i64,
            cols: i64,
        ) {
            transpose::<$t, $smem<$t>>(src, dst, rows, cols)
        }
    };
}
transpose_kernel!(transpose_pad_f32, f32, Padded);
transpose_kernel!(transpose_pad_f16, f16, Padded);
transpose_kernel!(transpose_pad_bf16, bf16, Padded);
transpose_kernel!(transpose_swizzle_f32, f32, Swizzled);
transpose_kernel!(transpose_swizzle_f16, f16, Swizzled);
transpose_kernel!(transpose_swizzle_bf16, bf16, Swizzled);

/// Global memory of an RMSNorm, and the block's staging slots in shared memory.
struct GlobalRms {
    x: *const u32,
    w: *const u32,
    y: *mut u32,
    bytes: i64,
    /// This thread's slot 0; slot `k` is `THREADS` slots further per tile.
    slots: *mut V4,
}

impl RmsMem for GlobalRms {
    #[inline(always)]
    unsafe fn load(&mut self, src: Src, off: i64) -> Atom {
        let base = match src {
            Src::X => self.x,
            Src::W => self.w,
        };
        load_v4((base as *const u8).add((off * self.bytes) as usize) as *const u32).0
    }
    #[inline(always)]
    unsafe fn store(&mut self, off: i64, v: Atom) {
        store_v4(
            (self.y as *mut u8).add((off * self.bytes) as usize) as *mut u32,
            V4(v),
        )
    }
    #[inline(always)]
    unsafe fn stage(&mut self, k: i64, off: i64) {
        let g = (self.x as *const u8).add((off * self.bytes) as usize);
        cp_async_16(self.slots.add((k * RMS_THREADS) as usize), g);
    }
    #[inline(always)]
    unsafe fn wait_staged(&mut self) {
        cp_async_wait_all();
    }
    #[inline(always)]
    unsafe fn staged(&mut self, k: i64) -> Atom {
        (*self.slots.add((k * RMS_THREADS) as usize)).0
    }
}

#[inline(always)]
unsafe fn rmsnorm<T: RmsElem>(
    x: *const T,
    w: *const T,
    y: *mut T,
    rows: i64,
    cols: i64,
    eps: f32,
    staged: i64,
) {
    let Some(p) = RmsProblem::new(rows, cols, eps, staged) else {
        trap()
    };
    let (b, t) = (block_x(), thread_x());
    let mut m = GlobalRms {
        x: x as *const u32,
        w: w as *const u32,
        y: y as *mut u32,
        bytes: core::mem::size_of::<T>() as i64,
        slots: dynamic_smem::<V4>().add(t as usize),
    };
    let part = RmsNorm::<T>::partial(&p, &mut m, b, t);
    // one warp per row: the row's sum in every lane
    let total = warp_sum(part);
    RmsNorm::<T>::finish(&p, &mut m, b, t, total);
}

macro_rules! rmsnorm_kernel {
    ($name:ident, $t:ty) => {
        /// `y = x / sqrt(mean(x^2) + eps) * w` over the rows of a row-major `rows x cols` `x`
        /// (`cols` a multiple of 8; `x`, `w`, `y` 16-byte aligned). Launch with
        /// `rmsnorm::Problem::grid` blocks of `rmsnorm::THREADS` threads and
        /// `staged * rmsnorm::STAGE_BYTES` bytes of dynamic shared memory.
        #[no_mangle]
        pub unsafe extern "ptx-kernel" fn $name(
            x: *const $t,
            w: *const $t,
            y: *mut $t,
            rows: i64,
            cols: i64,
            eps: f32,
            staged: i64,
        ) {
            rmsnorm::<$t>(x, w, y, rows, cols, eps, staged)
        }
    };
}
rmsnorm_kernel!(rmsnorm_f32, f32);
rmsnorm_kernel!(rmsnorm_bf16, bf16);
