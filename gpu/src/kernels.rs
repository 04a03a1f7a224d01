//! The PTX entry points not yet declared through [`crate::ctx::Kernel`] (RMSNorm): each binds
//! device memory to a kernel's partitioning and runs it for this thread.

use crate::device::*;
use crate::rmsnorm::{
    Atom, Elem as RmsElem, Problem as RmsProblem, RmsMem, RmsNorm, Src, THREADS as RMS_THREADS,
};
use half::bf16;

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
