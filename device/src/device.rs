//! What only the device has (`nvptx64` builds only): thread, block and cluster indices,
//! barriers, dynamic shared memory, typed global loads and stores, 128-bit vector accesses, warp
//! shuffles, votes and reductions, atomics, `cp.async`, `ldmatrix` / `mma.sync`, mbarriers, the
//! copy engine (TMA) and bulk copies, and [`run`], which runs a [`Kernel`]'s thread. Each is a thin
//! wrapper over one PTX instruction or a short fixed sequence; everything that cannot misbehave is
//! a safe function.
//!
//! Shared memory is the block's dynamic allocation ([`dynamic_smem`], the size `geometry` asks
//! for). rustc cannot yet declare a static `__shared__` array (rust-lang/rust#135516): a kernel
//! lays its shared arrays out at `const` offsets of the dynamic block instead (a `const`
//! `FlatLayout` over `Ctx::smem`, as the softmax example's `SLOTS`) and counts them in
//! `smem_bytes`.

use core::arch::asm;
use core::arch::nvptx;

use crate::ctx::Kernel;
use crate::mem::{Device, Smem, Space};
use crate::smem32::{Device32, Smem32};
pub use crate::sync::*;

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
        rank: cluster_rank_pure(),
        smem,
    }
}

/// `%cluster_ctarank`, as a pure read (dropped where unused: kernels without clusters).
#[inline(always)]
fn cluster_rank_pure() -> i64 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe {
        asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r,
             options(pure, nomem, nostack, preserves_flags))
    };
    r as i64
}

/// `gridDim.y`.
#[inline(always)]
pub fn grid_y() -> i64 {
    unsafe { nvptx::_grid_dim_y() as i64 }
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

/// `ld.global` of one element, `T` of 2, 4 or 8 bytes (other sizes: a generic load). The pointers of
/// a kernel's by-value parameter struct reach the code as integers, so the compiler's
/// address-space inference cannot tell they are global: without this their accesses are generic.
///
/// # Safety
/// `p` must point into global memory, aligned, and be valid for reads.
#[inline(always)]
pub unsafe fn load_global<T: Copy>(p: *const T) -> T {
    match core::mem::size_of::<T>() {
        8 => {
            let v: u64;
            asm!("ld.global.b64 {v}, [{p}];", p = in(reg64) p, v = out(reg64) v,
                 options(readonly, nostack, preserves_flags));
            core::mem::transmute_copy(&v)
        }
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

/// `st.global` of one element, `T` of 2, 4 or 8 bytes (other sizes: a generic store).
///
/// # Safety
/// `p` must point into global memory, aligned, and be valid for writes.
#[inline(always)]
pub unsafe fn store_global<T: Copy>(p: *mut T, v: T) {
    match core::mem::size_of::<T>() {
        8 => {
            let v: u64 = core::mem::transmute_copy(&v);
            asm!("st.global.b64 [{p}], {v};", p = in(reg64) p, v = in(reg64) v,
                 options(nostack, preserves_flags));
        }
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

/// Declares an atomic read-modify-write on a 32-bit word at a generic address (global or shared
/// memory), returning the old value.
macro_rules! atomic_rmw {
    ($(#[$doc:meta])* $name:ident, $t:ty, $op:literal) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `p` must be valid, aligned, and in global or shared memory.
        #[inline(always)]
        pub unsafe fn $name(p: *mut $t, v: $t) -> $t {
            let r: $t;
            asm!(concat!("atom.", $op, " {r}, [{p}], {v};"),
                 r = out(reg32) r, p = in(reg64) p, v = in(reg32) v,
                 options(nostack, preserves_flags));
            r
        }
    };
}

atomic_rmw!(
    /// `atomicAdd` of an `f32` (`atom.add.f32`).
    atomic_add_f32, f32, "add.f32"
);
atomic_rmw!(
    /// `atomicAdd` of a `u32` (`atom.add.u32`).
    atomic_add_u32, u32, "add.u32"
);
atomic_rmw!(
    /// `atomicAdd` of a `u32` at the GPU's scope, acquire-release (`atom.acq_rel.gpu.add.u32`):
    /// this thread's accesses before it ordered before those after a later addition there.
    atomic_add_acq_rel_u32, u32, "acq_rel.gpu.add.u32"
);
atomic_rmw!(
    /// As [`atomic_add_acq_rel_u32`], of an `f32` (`atom.acq_rel.gpu.add.f32`).
    atomic_add_acq_rel_f32, f32, "acq_rel.gpu.add.f32"
);
atomic_rmw!(
    /// `atomicMax` of a `u32` (`atom.max.u32`).
    atomic_max_u32, u32, "max.u32"
);
atomic_rmw!(
    /// `atomicMin` of a `u32` (`atom.min.u32`).
    atomic_min_u32, u32, "min.u32"
);
atomic_rmw!(
    /// `atomicExch` of a 32-bit word (`atom.exch.b32`).
    atomic_exch_u32, u32, "exch.b32"
);

/// `atomicCAS`: writes `new` at `p` if it holds `cmp`; returns the old value (`atom.cas.b32`).
///
/// # Safety
/// As [`atomic_add_u32`].
#[inline(always)]
pub unsafe fn atomic_cas_u32(p: *mut u32, cmp: u32, new: u32) -> u32 {
    let r: u32;
    asm!("atom.cas.b32 {r}, [{p}], {c}, {n};",
         r = out(reg32) r, p = in(reg64) p, c = in(reg32) cmp, n = in(reg32) new,
         options(nostack, preserves_flags));
    r
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

/// A space a kernel runs in on the GPU ([`Device`] or [`Device32`]): how its threads reach the
/// block's dynamic shared memory.
pub trait DeviceSpace: Space {
    /// The start of the block's dynamic shared memory, as `T`s.
    fn block_smem<T: Copy>() -> Self::Shared<T>;
}

impl DeviceSpace for Device {
    #[inline(always)]
    fn block_smem<T: Copy>() -> Smem<T> {
        Smem(dynamic_smem::<T>())
    }
}

impl DeviceSpace for Device32 {
    #[inline(always)]
    fn block_smem<T: Copy>() -> Smem32<T> {
        Smem32::new(smem_addr(dynamic_smem::<u8>()))
    }
}

/// Runs kernel `K` for this thread in [`Device`] ([`run_in`]).
///
/// # Safety
/// As [`run_in`].
#[inline(always)]
pub unsafe fn run<K: Kernel>(p: K::Params<Device>) {
    run_in::<K, Device>(p)
}

/// Runs kernel `K` for this thread in space `S`: prepares the parameters, then the kernel's
/// thread. The host launcher ran this same `prepare` on these same bytes and launched only on
/// `Ok`, so the device takes `Ok` for granted: the compiler drops the checks and keeps what they
/// establish (static strides, equal shapes), and a thread pays nothing for them.
///
/// # Safety
/// `p` must come from the host launcher of `K` (`K::prepare(p)` is `Ok`), launched with
/// `K::geometry`.
#[inline(always)]
pub unsafe fn run_in<K: Kernel, S: DeviceSpace>(p: K::Params<S>) {
    let p = match K::prepare(p) {
        Ok(p) => p,
        // SAFETY: the launcher's `prepare` of the same bytes was `Ok` (`# Safety`)
        Err(_) => core::hint::unreachable_unchecked(),
    };
    K::thread::<S>(&p, &ctx(S::block_smem::<K::Shared>()));
}

/// The shared-state-space address of `p`, a generic pointer into the block's shared memory
/// (`cvta.to.shared`): what `ldmatrix`, `cp.async` and `ld/st.shared` take.
#[inline(always)]
pub fn smem_addr<T>(p: *const T) -> u32 {
    let a: u64;
    unsafe {
        asm!("cvta.to.shared.u64 {a}, {p};", a = out(reg64) a, p = in(reg64) p,
             options(pure, nomem, nostack, preserves_flags));
    }
    a as u32
}

/// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: four 8x8 matrices of 16-bit elements, lanes
/// `8q..8q+8` giving the addresses of matrix `q`'s rows (16 bytes each); lane `l` receives, in
/// word `q`, elements `(l / 4, 2 (l % 4))` and `(l / 4, 2 (l % 4) + 1)` of matrix `q`. Every lane
/// of the warp must take part.
///
/// # Safety
/// `addr` must be a 16-byte aligned shared address of 16 readable bytes.
#[inline(always)]
pub unsafe fn ldmatrix_x4(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    asm!("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{{a}, {b}, {c}, {d}}}, [{p}];",
         p = in(reg32) addr, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c,
         d = out(reg32) d, options(readonly, nostack, preserves_flags));
    [a, b, c, d]
}

/// `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: as [`ldmatrix_x4`], each matrix transposed:
/// lane `l` receives in word `q` elements `(2 (l % 4), l / 4)` and `(2 (l % 4) + 1, l / 4)` of
/// matrix `q`.
///
/// # Safety
/// As [`ldmatrix_x4`].
#[inline(always)]
pub unsafe fn ldmatrix_x4_trans(addr: u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    asm!("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {{{a}, {b}, {c}, {d}}}, [{p}];",
         p = in(reg32) addr, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c,
         d = out(reg32) d, options(readonly, nostack, preserves_flags));
    [a, b, c, d]
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32`: `d += a b` over a warp's
/// 16x8x16 tile, the fragments as CuTe's `SM80_16x8x16_F32*_TN` atoms lay them out (`a`: 4 words
/// of two 16-bit elements, `b`: 2 words, `d`: 4 floats). `bf16` picks the element type.
#[inline(always)]
pub fn mma_16x8x16<const BF16: bool>(a: &[u32; 4], b: &[u32; 2], d: &mut [f32; 4]) {
    // SAFETY: register operands only; every lane of the warp runs it (the caller's warp-uniform
    // control flow; not `pure`, so that LLVM keeps it there, as `shfl_xor`)
    unsafe {
        if BF16 {
            asm!("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
                 d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2],
                 d3 = inout(reg32) d[3], a0 = in(reg32) a[0], a1 = in(reg32) a[1],
                 a2 = in(reg32) a[2], a3 = in(reg32) a[3], b0 = in(reg32) b[0],
                 b1 = in(reg32) b[1], options(nomem, nostack, preserves_flags));
        } else {
            asm!("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {{{d0}, {d1}, {d2}, {d3}}}, {{{a0}, {a1}, {a2}, {a3}}}, {{{b0}, {b1}}}, {{{d0}, {d1}, {d2}, {d3}}};",
                 d0 = inout(reg32) d[0], d1 = inout(reg32) d[1], d2 = inout(reg32) d[2],
                 d3 = inout(reg32) d[3], a0 = in(reg32) a[0], a1 = in(reg32) a[1],
                 a2 = in(reg32) a[2], a3 = in(reg32) a[3], b0 = in(reg32) b[0],
                 b1 = in(reg32) b[1], options(nomem, nostack, preserves_flags));
        }
    }
}

/// `cp.async.cg.shared.global [dst], [src], 16, n`: copies the first `n` of 16 bytes (0 or 16)
/// and fills the rest of `dst` with zeros; no byte of `src` is read when `n` is 0. Part of the
/// thread's next [`cp_async_commit`] group.
///
/// # Safety
/// `dst` a 16-byte aligned shared address, `src` 16-byte aligned global memory valid for `n`
/// bytes; `dst` not read before its group completes.
#[inline(always)]
pub unsafe fn cp_async_16_zfill(dst: u32, src: *const u8, n: u32) {
    asm!("cp.async.cg.shared.global [{d}], [{g}], 16, {n};",
         d = in(reg32) dst, g = in(reg64) src, n = in(reg32) n,
         options(nostack, preserves_flags));
}

/// `cp.async.commit_group`: the thread's copies started since the last commit form a group.
#[inline(always)]
pub fn cp_async_commit() {
    unsafe { asm!("cp.async.commit_group;", options(nostack, preserves_flags)) }
}

/// `cp.async.wait_group N`: all but the `N` most recent of the thread's groups have landed.
#[inline(always)]
pub fn cp_async_wait<const N: u32>() {
    unsafe { asm!("cp.async.wait_group {n};", n = const N, options(nostack, preserves_flags)) }
}

/// `st.shared.v4.u32`.
///
/// # Safety
/// `addr` a 16-byte aligned shared address of 16 writable bytes.
#[inline(always)]
pub unsafe fn st_shared_v4(addr: u32, v: V4) {
    let [a, b, c, d] = v.0;
    asm!("st.shared.v4.u32 [{p}], {{{a}, {b}, {c}, {d}}};",
         p = in(reg32) addr, a = in(reg32) a, b = in(reg32) b, c = in(reg32) c, d = in(reg32) d,
         options(nostack, preserves_flags));
}

/// `ld.shared.v4.u32`.
///
/// # Safety
/// `addr` a 16-byte aligned shared address of 16 readable bytes.
#[inline(always)]
pub unsafe fn ld_shared_v4(addr: u32) -> V4 {
    let (a, b, c, d): (u32, u32, u32, u32);
    asm!("ld.shared.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];",
         p = in(reg32) addr, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c,
         d = out(reg32) d, options(readonly, nostack, preserves_flags));
    V4([a, b, c, d])
}

/// `ld.shared` of a `T` of 2, 4, 8 or 16 bytes at shared address `addr`.
///
/// # Safety
/// `addr` a shared address of a readable `T`, aligned to its size.
#[inline(always)]
pub unsafe fn ld_shared<T: Copy>(addr: u32) -> T {
    use core::mem::{size_of, transmute_copy};
    match size_of::<T>() {
        2 => {
            let v: u16;
            asm!("ld.shared.b16 {v}, [{a}];", v = out(reg16) v, a = in(reg32) addr,
                 options(readonly, nostack, preserves_flags));
            transmute_copy(&v)
        }
        4 => {
            let v: u32;
            asm!("ld.shared.b32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) addr,
                 options(readonly, nostack, preserves_flags));
            transmute_copy(&v)
        }
        8 => {
            let (x, y): (u32, u32);
            asm!("ld.shared.v2.b32 {{{x}, {y}}}, [{a}];", x = out(reg32) x, y = out(reg32) y,
                 a = in(reg32) addr, options(readonly, nostack, preserves_flags));
            transmute_copy(&[x, y])
        }
        16 => transmute_copy(&ld_shared_v4(addr)),
        _ => trap(),
    }
}

/// `st.shared` of a `T` of 2, 4, 8 or 16 bytes at shared address `addr`.
///
/// # Safety
/// `addr` a shared address of a writable `T`, aligned to its size.
#[inline(always)]
pub unsafe fn st_shared<T: Copy>(addr: u32, v: T) {
    use core::mem::{size_of, transmute_copy};
    match size_of::<T>() {
        2 => {
            asm!("st.shared.b16 [{a}], {v};", a = in(reg32) addr, v = in(reg16) transmute_copy::<T, u16>(&v),
                  options(nostack, preserves_flags))
        }
        4 => {
            asm!("st.shared.b32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) transmute_copy::<T, u32>(&v),
                  options(nostack, preserves_flags))
        }
        8 => {
            let [x, y] = transmute_copy::<T, [u32; 2]>(&v);
            asm!("st.shared.v2.b32 [{a}], {{{x}, {y}}};", a = in(reg32) addr, x = in(reg32) x,
                 y = in(reg32) y, options(nostack, preserves_flags))
        }
        16 => st_shared_v4(addr, transmute_copy(&v)),
        _ => trap(),
    }
}

/// `st.shared.u32`.
///
/// # Safety
/// `addr` a 4-byte aligned shared address of 4 writable bytes.
#[inline(always)]
pub unsafe fn st_shared_u32(addr: u32, v: u32) {
    asm!("st.shared.u32 [{p}], {v};", p = in(reg32) addr, v = in(reg32) v,
         options(nostack, preserves_flags));
}

/// `st.shared.v2.u32`.
///
/// # Safety
/// `addr` an 8-byte aligned shared address of 8 writable bytes.
#[inline(always)]
pub unsafe fn st_shared_v2(addr: u32, v: [u32; 2]) {
    asm!("st.shared.v2.u32 [{p}], {{{a}, {b}}};", p = in(reg32) addr, a = in(reg32) v[0],
         b = in(reg32) v[1], options(nostack, preserves_flags));
}

/// `ld.global.v4.u32` (through L1, not the read-only path: for memory the launch also writes).
///
/// # Safety
/// `p` must be 16-byte aligned and valid for 16 bytes.
#[inline(always)]
pub unsafe fn load_v4_rw(p: *const u32) -> V4 {
    let (a, b, c, d): (u32, u32, u32, u32);
    asm!("ld.global.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];",
         p = in(reg64) p, a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
         options(readonly, nostack, preserves_flags));
    V4([a, b, c, d])
}

/// `mbarrier.init.shared::cta.b64 [bar], count`, then `fence.mbarrier_init.release.cluster`: the
/// barrier expects `count` arrivals per phase. One thread initialises; a block barrier must follow
/// before any other thread uses it.
///
/// # Safety
/// `bar` an 8-byte aligned shared address no one else uses as anything but this barrier.
#[inline(always)]
pub unsafe fn mbarrier_init(bar: u32, count: u32) {
    asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", "fence.mbarrier_init.release.cluster;",
         b = in(reg32) bar, c = in(reg32) count, options(nostack, preserves_flags));
}

/// `mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], bytes`: this thread's arrival, and
/// `bytes` more that asynchronous copies (TMA) must deliver before the phase completes.
///
/// # Safety
/// `bar` an initialised barrier.
#[inline(always)]
pub unsafe fn mbarrier_arrive_expect_tx(bar: u32, bytes: u32) {
    asm!("mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};",
         b = in(reg32) bar, n = in(reg32) bytes, options(nostack, preserves_flags));
}

/// `mbarrier.complete_tx.shared::cta.b64 [bar], bytes`: `bytes` of the current phase's
/// transactions done, as the copy engine does when its bytes land.
///
/// # Safety
/// `bar` an initialised barrier.
#[inline(always)]
pub unsafe fn mbarrier_complete_tx(bar: u32, bytes: u32) {
    asm!("mbarrier.complete_tx.shared::cta.b64 [{b}], {n};",
         b = in(reg32) bar, n = in(reg32) bytes, options(nostack, preserves_flags));
}

/// Waits until phase `parity` (0 or 1) of the barrier has completed
/// (`mbarrier.try_wait.parity.shared::cta.b64` until it says so).
///
/// # Safety
/// `bar` an initialised barrier.
#[inline(always)]
pub unsafe fn mbarrier_wait(bar: u32, parity: u32) {
    loop {
        let done: u32;
        asm!("{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {ph}; selp.u32 {d}, 1, 0, p; }}",
             b = in(reg32) bar, ph = in(reg32) parity, d = out(reg32) done,
             options(nostack, preserves_flags));
        if done != 0 {
            break;
        }
    }
}

/// `fence.proxy.tensormap::generic.acquire.gpu [map], 128`: the tensor map at `map` (global
/// memory, written before the launch) is seen by the copy engine as the generic proxy wrote it.
///
/// # Safety
/// `map` the 64-byte aligned global address of a 128-byte tensor map.
#[inline(always)]
pub unsafe fn tensormap_acquire(map: *const u8) {
    asm!("fence.proxy.tensormap::generic.acquire.gpu [{m}], 128;", m = in(reg64) map,
         options(nostack, preserves_flags));
}

/// `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes`: the copy
/// engine loads the box at coordinates `(c0, c1)` (`c0` the innermost) of the tensor map at `map`
/// into shared memory at `dst`, zeros where the box leaves the tensor, and counts its bytes on the
/// barrier `bar`.
///
/// # Safety
/// `map` a valid tensor map (after [`tensormap_acquire`]); `dst` aligned as the map's swizzle
/// needs (1024 bytes for 128-byte swizzles) with room for the box; `bar` expecting the bytes.
#[inline(always)]
pub unsafe fn tma_load_2d(dst: u32, map: *const u8, c0: i32, c1: i32, bar: u32) {
    asm!("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}}}], [{b}];",
         d = in(reg32) dst, m = in(reg64) map, x = in(reg32) c0, y = in(reg32) c1,
         b = in(reg32) bar, options(nostack, preserves_flags));
}

/// [`tma_load_2d`] of a map of rank `R` (2 to 5): the box at coordinates `c[..R]` (`c[0]` the
/// innermost).
///
/// # Safety
/// As [`tma_load_2d`], `map` of rank `R`.
#[inline(always)]
pub unsafe fn tma_load_nd<const R: usize>(dst: u32, map: *const u8, c: [i32; 5], bar: u32) {
    const {
        assert!(
            R >= 2 && R <= 5,
            "the copy engine's tensors have rank 2 to 5"
        )
    };
    match R {
        2 => tma_load_2d(dst, map, c[0], c[1], bar),
        3 => {
            asm!("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}}}], [{b}];",
             d = in(reg32) dst, m = in(reg64) map, x = in(reg32) c[0], y = in(reg32) c[1],
             z = in(reg32) c[2], b = in(reg32) bar, options(nostack, preserves_flags))
        }
        4 => {
            asm!("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}, {w}}}], [{b}];",
             d = in(reg32) dst, m = in(reg64) map, x = in(reg32) c[0], y = in(reg32) c[1],
             z = in(reg32) c[2], w = in(reg32) c[3], b = in(reg32) bar,
             options(nostack, preserves_flags))
        }
        _ => {
            asm!("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{m}, {{{x}, {y}, {z}, {w}, {v}}}], [{b}];",
             d = in(reg32) dst, m = in(reg64) map, x = in(reg32) c[0], y = in(reg32) c[1],
             z = in(reg32) c[2], w = in(reg32) c[3], v = in(reg32) c[4], b = in(reg32) bar,
             options(nostack, preserves_flags))
        }
    }
}

/// `mbarrier.arrive.shared::cta.b64 _, [bar]`: this thread's arrival.
///
/// # Safety
/// `bar` an initialised barrier.
#[inline(always)]
pub unsafe fn mbarrier_arrive(bar: u32) {
    asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar,
         options(nostack, preserves_flags));
}

/// `%cluster_ctarank`: this block's rank in its cluster.
#[inline(always)]
pub fn cluster_rank() -> i64 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe {
        asm!("mov.u32 {r}, %cluster_ctarank;", r = out(reg32) r, options(nomem, nostack, preserves_flags))
    };
    r as i64
}

/// `%clusterid.x`: this block's cluster's index along x.
#[inline(always)]
pub fn cluster_x() -> i64 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe {
        asm!("mov.u32 {r}, %clusterid.x;", r = out(reg32) r, options(nomem, nostack, preserves_flags))
    };
    r as i64
}

/// `%nclusterid.x`: clusters along x in the grid.
#[inline(always)]
pub fn clusters_x() -> i64 {
    let r: u32;
    // SAFETY: reads a special register.
    unsafe {
        asm!("mov.u32 {r}, %nclusterid.x;", r = out(reg32) r, options(nomem, nostack, preserves_flags))
    };
    r as i64
}

/// `barrier.cluster.arrive.release` then `barrier.cluster.wait.acquire`: every thread of every
/// block of the cluster has arrived, and their shared-memory writes (barrier initialisations
/// included) are seen.
///
/// # Safety
/// Every thread of the cluster calls it the same number of times. (Kernels call the safe
/// [`cluster_sync`](crate::sync::cluster_sync), which the simulated GPU also runs.)
#[inline(always)]
pub unsafe fn barrier_cluster() {
    asm!(
        "barrier.cluster.arrive.release.aligned;",
        "barrier.cluster.wait.acquire.aligned;",
        options(nostack, preserves_flags)
    );
}

/// `mbarrier.arrive.shared::cluster` on the barrier at shared offset `bar` of block `rank` of
/// this cluster (`mapa` gives its cluster address): one arrival there, ordered after this
/// thread's earlier accesses at the block's scope only (a release at the cluster's scope costs a
/// GPU-wide memory barrier: `MEMBAR.ALL.GPU` before every arrival). Enough to hand a stage
/// back once the wgmmas that read it are complete.
///
/// # Safety
/// `bar` an initialised barrier in every block of the cluster; block `rank` still running.
#[inline(always)]
pub unsafe fn mbarrier_arrive_cluster(bar: u32, rank: i64) {
    asm!("{{ .reg .b32 a; mapa.shared::cluster.u32 a, {b}, {r}; mbarrier.arrive.shared::cluster.b64 _, [a]; }}",
         b = in(reg32) bar, r = in(reg32) rank as u32, options(nostack, preserves_flags));
}

/// [`tma_load_2d`] multicast: the box lands at shared offset `dst` of every block of the cluster
/// whose bit is set in `mask`, and counts its bytes on each one's barrier at offset `bar`.
///
/// # Safety
/// As [`tma_load_2d`], in every block of `mask`.
#[inline(always)]
pub unsafe fn tma_load_2d_multicast(
    dst: u32,
    map: *const u8,
    c0: i32,
    c1: i32,
    bar: u32,
    mask: u16,
) {
    asm!("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [{d}], [{m}, {{{x}, {y}}}], [{b}], {k};",
         d = in(reg32) dst, m = in(reg64) map, x = in(reg32) c0, y = in(reg32) c1,
         b = in(reg32) bar, k = in(reg16) mask, options(nostack, preserves_flags));
}

/// `fence.proxy.async.shared::cta`: this thread's shared-memory writes are seen by the async
/// proxy (the copy engine, wgmma) after it.
#[inline(always)]
pub fn fence_proxy_async_shared() {
    // SAFETY: a fence.
    unsafe {
        asm!(
            "fence.proxy.async.shared::cta;",
            options(nostack, preserves_flags)
        )
    };
}

/// `cp.async.bulk.tensor.Rd.global.shared::cta.bulk_group`: the copy engine stores the box at
/// shared address `src` (laid out as the tensor map's swizzle says) to the tensor map's tensor
/// (rank `R`, 2 to 5) at coordinates `c` (`c[0]` the innermost, the first `R` read); elements
/// outside the tensor are not written. Completes with [`bulk_commit`] / [`bulk_wait_read`].
///
/// # Safety
/// `map` a valid tensor map of global memory of rank `R` (after [`tensormap_acquire`]); `src`
/// aligned for the swizzle (1024 bytes for 128-byte modes) and holding the box, written before
/// a [`fence_proxy_async_shared`].
#[inline(always)]
pub unsafe fn tma_store_nd<const R: usize>(map: *const u8, src: u32, c: [i32; 5]) {
    const {
        assert!(
            R >= 2 && R <= 5,
            "the copy engine's tensors have rank 2 to 5"
        )
    };
    match R {
        2 => {
            asm!("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [{m}, {{{x}, {y}}}], [{s}];",
             m = in(reg64) map, s = in(reg32) src, x = in(reg32) c[0], y = in(reg32) c[1],
             options(nostack, preserves_flags))
        }
        3 => {
            asm!("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [{m}, {{{x}, {y}, {z}}}], [{s}];",
             m = in(reg64) map, s = in(reg32) src, x = in(reg32) c[0], y = in(reg32) c[1],
             z = in(reg32) c[2], options(nostack, preserves_flags))
        }
        4 => {
            asm!("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [{m}, {{{x}, {y}, {z}, {w}}}], [{s}];",
             m = in(reg64) map, s = in(reg32) src, x = in(reg32) c[0], y = in(reg32) c[1],
             z = in(reg32) c[2], w = in(reg32) c[3], options(nostack, preserves_flags))
        }
        _ => {
            asm!("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [{m}, {{{x}, {y}, {z}, {w}, {v}}}], [{s}];",
             m = in(reg64) map, s = in(reg32) src, x = in(reg32) c[0], y = in(reg32) c[1],
             z = in(reg32) c[2], w = in(reg32) c[3], v = in(reg32) c[4],
             options(nostack, preserves_flags))
        }
    }
}

/// `cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes`: the copy engine copies
/// the `bytes` contiguous bytes at global `src` to shared address `dst` and counts them on the
/// barrier `bar` (CuTe's `SM90_BULK_COPY_G2S`).
///
/// # Safety
/// `src` and `dst` 16-byte aligned, `bytes` a positive multiple of 16, both ranges inside their
/// memories; `bar` an initialised barrier expecting the bytes; `src` not written by the launch.
#[inline(always)]
pub unsafe fn bulk_load(dst: u32, src: *const u8, bytes: u32, bar: u32) {
    asm!("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
         d = in(reg32) dst, s = in(reg64) src, n = in(reg32) bytes, b = in(reg32) bar,
         options(nostack, preserves_flags));
}

/// `cp.async.bulk.global.shared::cta.bulk_group`: the copy engine copies the `bytes` contiguous
/// bytes at shared address `src` to global `dst` (CuTe's `SM90_BULK_COPY_S2G`). Completes with
/// [`bulk_commit`] / [`bulk_wait_read`] / [`bulk_wait`].
///
/// # Safety
/// As [`bulk_load`]; the shared bytes written before it by the async proxy (a bulk load this
/// thread waited for) or followed by a [`fence_proxy_async_shared`].
#[inline(always)]
pub unsafe fn bulk_store(dst: *mut u8, src: u32, bytes: u32) {
    asm!("cp.async.bulk.global.shared::cta.bulk_group [{d}], [{s}], {n};",
         d = in(reg64) dst, s = in(reg32) src, n = in(reg32) bytes,
         options(nostack, preserves_flags));
}

/// `cp.async.bulk.commit_group`: this thread's bulk copies so far form a group.
#[inline(always)]
pub fn bulk_commit() {
    // SAFETY: bookkeeping of this thread's copies.
    unsafe {
        asm!(
            "cp.async.bulk.commit_group;",
            options(nostack, preserves_flags)
        )
    };
}

/// `cp.async.bulk.wait_group.read N`: this thread's bulk groups but the last `N` have finished
/// reading their shared-memory sources (which may be written again).
#[inline(always)]
pub fn bulk_wait_read<const N: u32>() {
    // SAFETY: waits.
    unsafe {
        asm!("cp.async.bulk.wait_group.read {n};", n = const N, options(nostack, preserves_flags))
    };
}

/// `cp.async.bulk.wait_group N`: this thread's bulk groups but the last `N` are complete (their
/// writes done).
#[inline(always)]
pub fn bulk_wait<const N: u32>() {
    // SAFETY: waits.
    unsafe {
        asm!("cp.async.bulk.wait_group {n};", n = const N, options(nostack, preserves_flags))
    };
}
