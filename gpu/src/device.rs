//! A small device module: thread and block indices, barriers, dynamic shared memory, 128-bit
//! vector accesses.

use core::arch::asm;
use core::arch::nvptx;

/// `threadIdx.x`.
#[inline(always)]
pub fn thread_x() -> i64 {
    unsafe { nvptx::_thread_idx_x() as i64 }
}
/// `threadIdx.y`.
#[inline(always)]
pub fn thread_y() -> i64 {
    unsafe { nvptx::_thread_idx_y() as i64 }
}
/// `blockIdx.x`.
#[inline(always)]
pub fn block_x() -> i64 {
    unsafe { nvptx::_block_idx_x() as i64 }
}
/// `blockIdx.y`.
#[inline(always)]
pub fn block_y() -> i64 {
    unsafe { nvptx::_block_idx_y() as i64 }
}
/// `gridDim.x`.
#[inline(always)]
pub fn grid_x() -> i64 {
    unsafe { nvptx::_grid_dim_x() as i64 }
}

/// `__syncthreads()`: every thread of the block must reach it.
#[inline(always)]
pub fn sync_threads() {
    unsafe { nvptx::_syncthreads() }
}

/// Ends the kernel with an error the host sees at the next synchronisation.
#[inline(always)]
pub fn trap() -> ! {
    unsafe { asm!("trap;", options(noreturn)) }
}

/// 16 bytes, aligned as a 128-bit access needs.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
pub struct V4(pub [u32; 4]);

/// `ld.global.v4.u32` from `p`, which must be 16-byte aligned and valid.
#[inline(always)]
pub unsafe fn load_v4(p: *const u32) -> V4 {
    let (a, b, c, d): (u32, u32, u32, u32);
    asm!("ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];",
         p = in(reg64) p, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
         options(readonly, nostack, preserves_flags));
    V4([a, b, c, d])
}

/// `st.global.v4.u32` to `p`, which must be 16-byte aligned and valid.
#[inline(always)]
pub unsafe fn store_v4(p: *mut u32, v: V4) {
    let [a, b, c, d] = v.0;
    asm!("st.global.v4.u32 [{p}], {{{a}, {b}, {c}, {d}}};",
         p = in(reg64) p, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, d = in(reg32) d,
         options(nostack, preserves_flags));
}
