//! [`Device32`]: the GPU with the block's shared memory as 32-bit shared-state-space addresses
//! ([`Smem32`], CuTe's `smem_ptr`), for kernels whose shared memory goes mostly to `ldmatrix`,
//! `cp.async`, the mbarriers and the copy engine, which take such an address as it is. A tile
//! moves it by 32-bit additions, where [`crate::mem::Smem`] (a generic pointer the compiler infers
//! is shared) would build each of those addresses in 64 bits and convert it. Its plain reads and
//! writes are `ld/st.shared` asm, which the compiler neither merges nor folds offsets into: the
//! other kernels (tiles of element-by-element shared accesses) stay in [`crate::mem::Device`].
//! A kernel picks its space at its entry point ([`crate::kernels!`]'s `in`); on the host both are
//! the simulated GPU's shared memory, and the kernel's source is the same.
//!
//! Post-conditions: [`Device32`]'s global memory and tensor maps are [`Device`]'s, so a kernel's
//! parameters are the same type in either space (the launcher's bytes do not change). A 32-bit
//! shared::cta address names this block's memory only: [`crate::mem::Dsm::map_rank`] traps here
//! (a kernel that reads another block's memory runs in `Device`); `mbarrier_arrive_cluster`,
//! which takes the rank, works.

use crate::mem::{Device, Space};
use layout_core::Engine;

/// The GPU, the block's shared memory reached by 32-bit shared addresses ([`Smem32`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Device32;

impl Space for Device32 {
    type Global<T: Copy> = <Device as Space>::Global<T>;
    type Shared<T: Copy> = Smem32<T>;
    type TensorMap<T: Copy> = <Device as Space>::TensorMap<T>;
}

/// The block's shared memory at a 32-bit shared-state-space byte address.
#[derive(Debug)]
#[repr(transparent)]
pub struct Smem32<T>(pub u32, core::marker::PhantomData<T>);

impl<T> Smem32<T> {
    /// The shared memory at byte address `addr` of the shared state space.
    #[inline(always)]
    pub const fn new(addr: u32) -> Self {
        Self(addr, core::marker::PhantomData)
    }
}

impl<T> Clone for Smem32<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Smem32<T> {}

impl<T> Engine for Smem32<T> {
    /// `off` elements further, in 32 bits.
    #[inline(always)]
    fn advance(self, off: i64) -> Self {
        Self::new(
            self.0
                .wrapping_add((off as u32).wrapping_mul(core::mem::size_of::<T>() as u32)),
        )
    }
    fn fmt_origin(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "Smem32[{}b](shared {:#x})",
            8 * core::mem::size_of::<T>(),
            self.0
        )
    }
}

#[cfg(target_arch = "nvptx64")]
mod on_device {
    use super::*;
    use crate::device::{
        bulk_commit, bulk_wait, bulk_wait_read, cp_async_16_zfill, cp_async_commit, cp_async_wait,
        cp_async_wait_all, fence_proxy_async_shared, ld_shared, mbarrier_arrive_expect_tx,
        mbarrier_complete_tx, mbarrier_init, mbarrier_wait, st_shared, tma_load_nd, tma_store_nd,
    };
    use crate::mem::{AsyncCopy, Dsm, Gmem, Ldmatrix, Mem, Recast, V4};
    use crate::tma::{BulkCopy, GmemTensorMap};
    use core::mem::size_of;

    impl<T: Copy> Mem<T> for Smem32<T> {
        #[inline(always)]
        unsafe fn read(&self) -> T {
            ld_shared(self.0)
        }
        #[inline(always)]
        unsafe fn write(&self, v: T) {
            st_shared(self.0, v)
        }
        #[inline(always)]
        unsafe fn read_v4(&self) -> V4 {
            ld_shared(self.0)
        }
        #[inline(always)]
        unsafe fn write_v4(&self, v: V4) {
            st_shared(self.0, v)
        }
        #[inline(always)]
        fn aligned16(&self) -> bool {
            self.0 % 16 == 0
        }
        /// `ld.shared.b32` (16-bit elements) or `.b64` (32-bit ones).
        #[inline(always)]
        unsafe fn read_pair(&self) -> [T; 2] {
            ld_shared(self.0)
        }
        /// `st.shared.b32` or `.b64`.
        #[inline(always)]
        unsafe fn write_pair(&self, v: [T; 2]) {
            st_shared(self.0, v)
        }
        #[inline(always)]
        fn aligned_pair(&self) -> bool {
            (self.0 as usize).is_multiple_of(2 * size_of::<T>())
        }
        /// `ld.shared.b64` (16-bit elements) or `.v4.u32` (32-bit ones).
        #[inline(always)]
        unsafe fn read_quad(&self) -> [T; 4] {
            ld_shared(self.0)
        }
        /// `st.shared.b64` or `.v4.u32`.
        #[inline(always)]
        unsafe fn write_quad(&self, v: [T; 4]) {
            st_shared(self.0, v)
        }
        #[inline(always)]
        fn aligned_quad(&self) -> bool {
            (self.0 as usize).is_multiple_of(4 * size_of::<T>())
        }
        #[inline(always)]
        fn misalignment(&self, bytes: usize) -> i64 {
            ((self.0 as usize % bytes) / size_of::<T>()) as i64
        }
    }

    impl<U> Ldmatrix for Smem32<U> {
        #[inline(always)]
        unsafe fn ldmatrix_x4(&self) -> [u32; 4] {
            crate::device::ldmatrix_x4(self.0)
        }
        #[inline(always)]
        unsafe fn ldmatrix_x4_trans(&self) -> [u32; 4] {
            crate::device::ldmatrix_x4_trans(self.0)
        }
    }

    impl<U> Recast for Smem32<U> {
        #[inline(always)]
        fn recast<V: Copy>(&self) -> Smem32<V> {
            Smem32::new(self.0)
        }
    }

    impl<U> Dsm for Smem32<U> {
        #[inline(always)]
        fn map_rank(&self, _: i64) -> Self {
            // a 32-bit shared::cta address cannot name another block's memory, and `ld.shared`
            // would not reach it: kernels that read other blocks' memory run in `Device`
            crate::device::trap()
        }
        #[inline(always)]
        unsafe fn mbarrier_arrive_cluster(&self, rank: i64) {
            crate::device::mbarrier_arrive_cluster(self.0, rank)
        }
    }

    impl<U> AsyncCopy for Smem32<U> {
        type Space = Device32;
        /// `cp.async.cg.shared.global [here], [src], 16`.
        #[inline(always)]
        unsafe fn copy_async_v4<T: Copy>(&self, src: &Gmem<T>) {
            core::arch::asm!("cp.async.cg.shared.global [{d}], [{g}], 16;", d = in(reg32) self.0,
                             g = in(reg64) src.0, options(nostack, preserves_flags));
        }
        /// `cp.async.cg.shared.global [here], [src], 16, 16 or 0`.
        #[inline(always)]
        unsafe fn copy_async_v4_zfill<T: Copy>(&self, src: &Gmem<T>, full: bool) {
            cp_async_16_zfill(self.0, src.0 as *const u8, 16 * full as u32)
        }
        #[inline(always)]
        fn commit(&self) {
            cp_async_commit()
        }
        #[inline(always)]
        unsafe fn wait_groups<const N: u32>(&self) {
            cp_async_wait::<N>()
        }
        #[inline(always)]
        unsafe fn wait_all(&self) {
            cp_async_wait_all()
        }
        #[inline(always)]
        unsafe fn mbarrier_init(&self, count: u32) {
            mbarrier_init(self.0, count)
        }
        #[inline(always)]
        unsafe fn mbarrier_arrive(&self, bytes: u32) {
            mbarrier_arrive_expect_tx(self.0, bytes)
        }
        #[inline(always)]
        unsafe fn mbarrier_complete_tx(&self, bytes: u32) {
            mbarrier_complete_tx(self.0, bytes)
        }
        #[inline(always)]
        unsafe fn mbarrier_wait(&self, parity: u32) {
            mbarrier_wait(self.0, parity)
        }
    }

    crate::tma::bulk_copy!(Smem32, |s: &Smem32<U>| s.0);
}

#[cfg(not(target_arch = "nvptx64"))]
mod off_device {
    use super::*;
    use crate::mem::{no_device, Mem, Recast, V4};

    crate::mem::no_shared!(Smem32, Device32);
    crate::tma::no_bulk_copy!(Smem32);

    impl<U> Recast for Smem32<U> {
        fn recast<V: Copy>(&self) -> Smem32<V> {
            Smem32::new(self.0)
        }
    }
}
