//! A small device module: thread and block indices, barriers, dynamic shared memory, 128-bit
//! vector accesses and warp shuffles. Everything that cannot misbehave is a safe function.

use core::arch::asm;
use core::arch::nvptx;

use crate::ctx::{Collective, Kernel};
use crate::mem::{Gmem, Smem};

/// `threadIdx.x`.
#[inline(always)]
pub fn thread_x() -> i64 {
    unsafe { nvptx::_thread_idx_x() as i64 }
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

/// This thread's [`Ctx`](crate::ctx::Ctx), with `smem` for its block's shared memory.
#[inline(always)]
pub fn ctx<S>(smem: S) -> crate::ctx::Ctx<S> {
    crate::ctx::Ctx {
        block: [block_x(), block_y()],
        grid: [grid_x(), grid_y()],
        thread: thread_x(),
        smem,
    }
}

/// `gridDim.y`.
#[inline(always)]
pub fn grid_y() -> i64 {
    unsafe { nvptx::_grid_dim_y() as i64 }
}

/// `__syncthreads()`. Every thread of the block must reach it; if one does not, the block hangs
/// (a barrier cannot corrupt memory, so this is safe).
#[inline(always)]
pub fn sync_threads() {
    unsafe { nvptx::_syncthreads() }
}

/// Ends the kernel with an error the host sees at its next synchronisation.
#[inline(always)]
pub fn trap() -> ! {
    unsafe { asm!("trap;", options(noreturn)) }
}

/// The block's dynamic shared memory as `T`s; the launch sets its size.
#[inline(always)]
pub fn dynamic_smem<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

pub use crate::mem::V4;

/// `ld.global` of one element, `T` of 2 or 4 bytes (other sizes: a generic load). The pointers of
/// a kernel's by-value parameter struct reach the code as integers, so the compiler's
/// address-space inference cannot tell they are global: without this their accesses are generic.
///
/// # Safety
/// `p` must point into global memory, aligned, and be valid for reads.
#[inline(always)]
pub unsafe fn load_global<T: Copy>(p: *const T) -> T {
    match core::mem::size_of::<T>() {
        4 => {
            let v: u32;
            asm!("ld.global.b32 {v}, [{p}];", p = in(reg64) p, v = out(reg32) v,
                 options(readonly, nostack, preserves_flags));
            core::mem::transmute_copy(&v)
        }
        2 => {
            let v: u16;
            asm!("ld.global.b16 {v}, [{p}];", p = in(reg64) p, v = out(reg16) v,
                 options(readonly, nostack, preserves_flags));
            core::mem::transmute_copy(&v)
        }
        _ => *p,
    }
}

/// `st.global` of one element, `T` of 2 or 4 bytes (other sizes: a generic store).
///
/// # Safety
/// `p` must point into global memory, aligned, and be valid for writes.
#[inline(always)]
pub unsafe fn store_global<T: Copy>(p: *mut T, v: T) {
    match core::mem::size_of::<T>() {
        4 => {
            let v: u32 = core::mem::transmute_copy(&v);
            asm!("st.global.b32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v,
                 options(nostack, preserves_flags));
        }
        2 => {
            let v: u16 = core::mem::transmute_copy(&v);
            asm!("st.global.b16 [{p}], {v};", p = in(reg64) p, v = in(reg16) v,
                 options(nostack, preserves_flags));
        }
        _ => *p = v,
    }
}

/// `ld.global.nc.v4.u32` (through the read-only cache).
///
/// # Safety
/// `p` must be 16-byte aligned, valid for 16 bytes, and not written during the kernel.
#[inline(always)]
pub unsafe fn load_v4(p: *const u32) -> V4 {
    let (a, b, c, d): (u32, u32, u32, u32);
    asm!("ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];",
         p = in(reg64) p, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
         options(readonly, nostack, preserves_flags));
    V4([a, b, c, d])
}

/// `st.global.v4.u32`.
///
/// # Safety
/// `p` must be 16-byte aligned and valid for 16 bytes.
#[inline(always)]
pub unsafe fn store_v4(p: *mut u32, v: V4) {
    let [a, b, c, d] = v.0;
    asm!("st.global.v4.u32 [{p}], {{{a}, {b}, {c}, {d}}};",
         p = in(reg64) p, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, d = in(reg32) d,
         options(nostack, preserves_flags));
}

/// `shfl.sync.bfly.b32` over the full warp: the value of lane `lane ^ mask`. Every lane of the
/// warp must call it together (all 32 lanes take part).
#[inline(always)]
pub fn shfl_xor(v: f32, mask: u32) -> f32 {
    let r: f32;
    unsafe {
        asm!("shfl.sync.bfly.b32 {r}, {v}, {m}, 0x1f, 0xffffffff;",
             r = out(reg32) r, v = in(reg32) v, m = in(reg32) mask,
             options(pure, nomem, nostack, preserves_flags));
    }
    r
}

/// The sum of `v` over the warp, in every lane (butterfly reduction).
#[inline(always)]
pub fn warp_sum(mut v: f32) -> f32 {
    let mut m = 16;
    while m > 0 {
        v += shfl_xor(v, m);
        m /= 2;
    }
    v
}

/// `cp.async.cg.shared.global [dst], [src], 16`: starts copying 16 bytes from global to shared
/// memory without passing through registers; [`cp_async_wait_all`] waits for the thread's copies.
///
/// # Safety
/// `dst` (shared memory) and `src` (global memory) must be 16-byte aligned and valid for 16
/// bytes; `dst` must not be read before the wait.
#[inline(always)]
pub unsafe fn cp_async_16(dst: *mut V4, src: *const u8) {
    asm!("{{ .reg .u64 s; cvta.to.shared.u64 s, {d}; cp.async.cg.shared.global [s], [{g}], 16; }}",
         d = in(reg64) dst, g = in(reg64) src, options(nostack, preserves_flags));
}

/// `cp.async.wait_all`: this thread's asynchronous copies have landed.
#[inline(always)]
pub fn cp_async_wait_all() {
    unsafe { asm!("cp.async.wait_all;", options(nostack, preserves_flags)) }
}

/// Runs kernel `K` for this thread: prepares the parameters (a trap when they do not hold what
/// the kernel needs: the host launcher checked them), then the steps with the collectives
/// between them.
///
/// # Safety
/// `p` must come from the host launcher of `K`, launched with `K::geometry`.
#[inline(always)]
pub unsafe fn run<K: Kernel>(p: K::Params<Gmem<K::T>>) {
    let Ok(p) = K::prepare(p) else { trap() };
    let c = ctx(Smem(dynamic_smem::<K::Shared>()));
    let mut carry = K::step(0, &p, &c, 0.0);
    let mut k = 0;
    while k < K::COLLECTIVES.len() {
        carry = match K::COLLECTIVES[k] {
            Collective::SyncThreads => {
                sync_threads();
                carry
            }
            Collective::WarpSum => warp_sum(carry),
        };
        carry = K::step(k + 1, &p, &c, carry);
        k += 1;
    }
}
