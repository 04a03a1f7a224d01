//! The copy engine (TMA) in the kernel model: tiled loads of a box of a global tensor into shared
//! memory, counted on an mbarrier, and tiled stores of a box back, in bulk groups; the fence that
//! makes threads' shared-memory writes visible to it (and to wgmma: both are the *async proxy*).
//!
//! A [`TensorMap`] describes a rank-2 global tensor, the box the engine moves and the swizzle it
//! lays the box out with in shared memory (the `CUtensorMap` the host encodes, `host::runtime::tma`). A
//! load's bytes land some time after it is issued; the phase of its mbarrier completes once they
//! and the barrier's arrivals are all in ([`AsyncCopy::mbarrier_arrive`] announces the bytes).
//! A store reads its box some time before the issuing thread's [`BulkCopy::bulk_wait_read`] that
//! covers it returns. The simulated GPU (`host::sim`) lands loads as late as it can and reports a
//! touch of a box in flight (a missing mbarrier wait), a write to a box a store or a wgmma may
//! still read, a store or wgmma of shared memory that threads wrote without
//! [`BulkCopy::fence_proxy_async`], and a block ending with bytes outstanding.

use crate::mem::{AsyncCopy, Space};
use core::marker::PhantomData;

/// A tensor map of a tensor of `T`s (rank 2 to 5, the last dimension contiguous), as a kernel's parameter: the GPU's is the address of
/// a 128-byte `CUtensorMap` in global memory ([`GmemTensorMap`]), the simulated GPU's the host
/// tensor and the same box and swizzle.
pub trait TensorMap: Copy {
    /// `fence.proxy.tensormap::generic.acquire.gpu [map], 128`: the copy engine sees the map as
    /// the host wrote it. Each thread that issues copies with a map calls it first (once).
    ///
    /// # Safety
    /// A valid map.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn acquire(&self);
    /// Did the host build this map? A kernel's parameters may carry an absent one where the copy
    /// engine cannot address a tensor (the GPU's null pointer, the simulated GPU's
    /// `SimTensorMap::absent`); the kernel then reaches the tensor otherwise. Using an absent map
    /// is undefined on the GPU and a fault on the simulated GPU.
    fn present(&self) -> bool;
}

/// The GPU's tensor map of a tensor of `T`s: the device address of its 128-byte `CUtensorMap`
/// (64-byte aligned) in global memory, written by the host before the launch (rustc cannot pass
/// it as a `__grid_constant__` parameter).
#[repr(transparent)]
pub struct GmemTensorMap<T>(pub *const u8, PhantomData<T>);

impl<T> GmemTensorMap<T> {
    /// The map at device address `map`.
    pub const fn new(map: *const u8) -> Self {
        Self(map, PhantomData)
    }
}
impl<T> Clone for GmemTensorMap<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GmemTensorMap<T> {}
impl<T> core::fmt::Debug for GmemTensorMap<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "GmemTensorMap({:p})", self.0)
    }
}

/// The copy engine's bulk copies between this shared memory and its space's global memory.
pub trait BulkCopy: AsyncCopy {
    /// The shared-state-space byte address of this position (what descriptors and the copy
    /// engine take); on the simulated GPU the block's shared memory starts at 0.
    fn addr(&self) -> u32;
    /// `cp.async.bulk.tensor.Rd.shared::cluster.global.mbarrier::complete_tx::bytes`: the copy
    /// engine loads the box of `map` (rank `R`, 2 to 5) whose first element is at coordinates
    /// `at` (outermost first: `(row, col)` at rank 2) to shared memory here, laid out
    /// innermost dimension first (row after row) by the map's swizzle (on address bits: align
    /// here to the swizzle's repeat, 1024 bytes for the 128-byte mode), zeros where the box
    /// leaves the tensor; as its bytes land they count on the mbarrier at `bar` (all the box's
    /// bytes, zeros included).
    ///
    /// # Safety
    /// `map` acquired ([`TensorMap::acquire`]) and of rank `R`; here 128-byte aligned with room
    /// for the box, touched by no thread until the barrier's phase completes; `bar`
    /// initialised, its phase announcing the bytes.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn tma_load<T: Copy, const R: usize>(
        &self,
        map: &<Self::Space as Space>::TensorMap<T>,
        at: [i64; R],
        bar: &Self,
    );
    /// [`BulkCopy::tma_load`] multicast: the box lands at this position of the shared memory of
    /// each block of the cluster whose rank's bit is set in `mask`, and counts its bytes on the
    /// mbarrier at `bar`'s position in each of them.
    ///
    /// # Safety
    /// As [`BulkCopy::tma_load`], in every block of `mask`.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn tma_load_multicast<T: Copy>(
        &self,
        map: &<Self::Space as Space>::TensorMap<T>,
        at: [i64; 2],
        bar: &Self,
        mask: u16,
    );
    /// `cp.async.bulk.tensor.Rd.global.shared::cta.bulk_group`: the copy engine stores the box
    /// here (laid out as [`BulkCopy::tma_load`] lays it) to `map`'s tensor (rank `R`, 2 to 5)
    /// at coordinates `at` (outermost first: `(row, col)` at rank 2), leaving out what lies
    /// outside the tensor (negative coordinates included). Part of this thread's next bulk group
    /// ([`BulkCopy::bulk_commit`]).
    ///
    /// # Safety
    /// `map` acquired and of rank `R`; here 128-byte aligned, the box written by the copy engine or by threads
    /// that then ran [`BulkCopy::fence_proxy_async`] (and met this thread at a barrier), and not
    /// written again until [`BulkCopy::bulk_wait_read`] covers the store.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn tma_store<T: Copy, const R: usize>(
        &self,
        map: &<Self::Space as Space>::TensorMap<T>,
        at: [i64; R],
    );
    /// `cp.async.bulk.commit_group`: this thread's bulk stores since its last commit form a group.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn bulk_commit(&self);
    /// `cp.async.bulk.wait_group.read N`: all but this thread's `N` most recent bulk groups have
    /// read their shared memory (which may be written again).
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn bulk_wait_read<const N: u32>(&self);
    /// `cp.async.bulk.wait_group N`: all but this thread's `N` most recent bulk groups are
    /// complete (their global writes done). A thread waits for its stores before it ends.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn bulk_wait<const N: u32>(&self);
    /// `fence.proxy.async.shared::cta`: this thread's shared-memory writes so far are seen by the
    /// async proxy (the copy engine's stores, wgmma) after it.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn fence_proxy_async(&self);
}

/// The copy engine's coordinates of a box at `at` (rank `R`, outermost first): innermost first,
/// led by zeros to rank 5.
#[inline(always)]
pub const fn innermost_first<const R: usize>(at: [i64; R]) -> [i32; 5] {
    let mut c = [0i32; 5];
    let mut i = 0;
    while i < R && i < 5 {
        c[i] = at[R - 1 - i] as i32;
        i += 1;
    }
    c
}

#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use off_device::no_bulk_copy;
#[cfg(target_arch = "nvptx64")]
pub(crate) use on_device::bulk_copy;

#[cfg(target_arch = "nvptx64")]
mod on_device {
    use super::*;
    use crate::device::{
        bulk_commit, bulk_wait, bulk_wait_read, fence_proxy_async_shared, smem_addr,
        tensormap_acquire, tma_load_nd, tma_store_nd,
    };
    use crate::mem::Smem;

    impl<T> TensorMap for GmemTensorMap<T> {
        #[inline(always)]
        unsafe fn acquire(&self) {
            tensormap_acquire(self.0)
        }
        #[inline(always)]
        fn present(&self) -> bool {
            !self.0.is_null()
        }
    }

    /// `BulkCopy` for shared-memory engine `$e`, whose shared address `$addr` gives.
    macro_rules! bulk_copy {
        ($e:ident, $addr:expr) => {
            impl<U> BulkCopy for $e<U> {
                #[inline(always)]
                fn addr(&self) -> u32 {
                    ($addr)(self)
                }
                #[inline(always)]
                unsafe fn tma_load<T: Copy, const R: usize>(
                    &self,
                    map: &GmemTensorMap<T>,
                    at: [i64; R],
                    bar: &Self,
                ) {
                    tma_load_nd::<R>(self.addr(), map.0, $crate::tma::innermost_first(at), bar.addr())
                }
                #[inline(always)]
                unsafe fn tma_load_multicast<T: Copy>(
                    &self,
                    map: &GmemTensorMap<T>,
                    at: [i64; 2],
                    bar: &Self,
                    mask: u16,
                ) {
                    crate::device::tma_load_2d_multicast(
                        self.addr(),
                        map.0,
                        at[1] as i32,
                        at[0] as i32,
                        bar.addr(),
                        mask,
                    )
                }
                #[inline(always)]
                unsafe fn tma_store<T: Copy, const R: usize>(
                    &self,
                    map: &GmemTensorMap<T>,
                    at: [i64; R],
                ) {
                    tma_store_nd::<R>(map.0, self.addr(), $crate::tma::innermost_first(at))
                }
                #[inline(always)]
                fn bulk_commit(&self) {
                    bulk_commit()
                }
                #[inline(always)]
                fn bulk_wait_read<const N: u32>(&self) {
                    bulk_wait_read::<N>()
                }
                #[inline(always)]
                fn bulk_wait<const N: u32>(&self) {
                    bulk_wait::<N>()
                }
                #[inline(always)]
                fn fence_proxy_async(&self) {
                    fence_proxy_async_shared()
                }
            }
        };
    }
    pub(crate) use bulk_copy;

    bulk_copy!(Smem, |s: &Smem<U>| smem_addr(s.0));
}

/// The GPU's maps and shared memory off the GPU: carried to a launch, never used (as
/// `mem::off_device`).
#[cfg(not(target_arch = "nvptx64"))]
mod off_device {
    use super::*;
    use crate::mem::{no_device, Smem};

    impl<T> TensorMap for GmemTensorMap<T> {
        unsafe fn acquire(&self) {
            no_device("fence.proxy.tensormap")
        }
        fn present(&self) -> bool {
            !self.0.is_null()
        }
    }

    /// The off-device stand-in of `BulkCopy` for shared-memory engine `$e`.
    macro_rules! no_bulk_copy {
        ($e:ident) => {
            impl<U> $crate::tma::BulkCopy for $e<U> {
                fn addr(&self) -> u32 {
                    $crate::mem::no_device("a shared address")
                }
                unsafe fn tma_load<T: Copy, const R: usize>(
                    &self,
                    _: &$crate::tma::GmemTensorMap<T>,
                    _: [i64; R],
                    _: &Self,
                ) {
                    $crate::mem::no_device("cp.async.bulk.tensor")
                }
                unsafe fn tma_load_multicast<T: Copy>(
                    &self,
                    _: &$crate::tma::GmemTensorMap<T>,
                    _: [i64; 2],
                    _: &Self,
                    _: u16,
                ) {
                    $crate::mem::no_device("cp.async.bulk.tensor multicast")
                }
                unsafe fn tma_store<T: Copy, const R: usize>(
                    &self,
                    _: &$crate::tma::GmemTensorMap<T>,
                    _: [i64; R],
                ) {
                    $crate::mem::no_device("cp.async.bulk.tensor")
                }
                fn bulk_commit(&self) {
                    $crate::mem::no_device("cp.async.bulk.commit_group")
                }
                fn bulk_wait_read<const N: u32>(&self) {
                    $crate::mem::no_device("cp.async.bulk.wait_group.read")
                }
                fn bulk_wait<const N: u32>(&self) {
                    $crate::mem::no_device("cp.async.bulk.wait_group")
                }
                fn fence_proxy_async(&self) {
                    $crate::mem::no_device("fence.proxy.async")
                }
            }
        };
    }
    pub(crate) use no_bulk_copy;

    no_bulk_copy!(Smem);
}
