//! The PTX entry points not yet declared through [`crate::ctx::Kernel`] (the transposes): each
//! binds device memory to a kernel's partitioning (in [`crate::transpose`]) and runs it for this
//! thread.

use crate::device::*;
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
