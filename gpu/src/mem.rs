//! Engines: how a kernel's tensors reach memory. A kernel is written once, generic over its
//! engines; the device runs it with [`Gmem`] (global memory) and [`Smem`] (shared memory), the
//! host execution (`host::exec`) with host buffers that check every access and count writes.
//!
//! An engine is a position in memory ([`layout_core::Engine`]: tiling and partitioning move it);
//! [`Mem`] reads and writes the element there, or the 128-bit vector that starts there.

use layout_core::Engine;

/// 16 bytes, aligned as a 128-bit access needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(C, align(16))]
pub struct V4(pub [u32; 4]);

/// Reads and writes at an engine's position.
pub trait Mem<T: Copy>: Engine {
    /// The element here.
    ///
    /// # Safety
    /// The element must be inside the tensor's memory.
    unsafe fn read(&self) -> T;
    /// Writes the element here.
    ///
    /// # Safety
    /// As [`Mem::read`].
    unsafe fn write(&self, v: T);
    /// The 16 bytes from here (one 128-bit access).
    ///
    /// # Safety
    /// The 16 bytes must be inside the tensor's memory and 16-byte aligned.
    unsafe fn read_v4(&self) -> V4;
    /// Writes 16 bytes from here.
    ///
    /// # Safety
    /// As [`Mem::read_v4`].
    unsafe fn write_v4(&self, v: V4);
    /// Is this position 16-byte aligned (may a 128-bit access start here)?
    fn aligned16(&self) -> bool;
}

macro_rules! pointer_engine {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug)]
        #[repr(transparent)]
        pub struct $name<T>(pub *mut T);
        impl<T> Clone for $name<T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T> Copy for $name<T> {}
        impl<T> Engine for $name<T> {
            #[inline(always)]
            fn advance(self, off: i64) -> Self {
                Self(self.0.wrapping_offset(off as isize))
            }
            fn fmt_origin(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                write!(f, "{}[{}b]({:p})", stringify!($name), 8 * core::mem::size_of::<T>(), self.0)
            }
        }
    };
}

pointer_engine!(
    /// Global memory: the engine of a kernel's parameters. Vector reads go through the
    /// read-only cache (`ld.global.nc`): an input must not be written by the same launch.
    Gmem
);
pointer_engine!(
    /// The block's shared memory.
    Smem
);

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::device::{load_v4, store_v4};

    impl<T: Copy> Mem<T> for Gmem<T> {
        #[inline(always)]
        unsafe fn read(&self) -> T {
            *self.0
        }
        #[inline(always)]
        unsafe fn write(&self, v: T) {
            *self.0 = v
        }
        #[inline(always)]
        unsafe fn read_v4(&self) -> V4 {
            load_v4(self.0 as *const u32)
        }
        #[inline(always)]
        unsafe fn write_v4(&self, v: V4) {
            store_v4(self.0 as *mut u32, v)
        }
        #[inline(always)]
        fn aligned16(&self) -> bool {
            (self.0 as usize) % 16 == 0
        }
    }

    impl<T: Copy> Mem<T> for Smem<T> {
        #[inline(always)]
        unsafe fn read(&self) -> T {
            *self.0
        }
        #[inline(always)]
        unsafe fn write(&self, v: T) {
            *self.0 = v
        }
        #[inline(always)]
        unsafe fn read_v4(&self) -> V4 {
            *(self.0 as *const V4)
        }
        #[inline(always)]
        unsafe fn write_v4(&self, v: V4) {
            *(self.0 as *mut V4) = v
        }
        #[inline(always)]
        fn aligned16(&self) -> bool {
            (self.0 as usize) % 16 == 0
        }
    }
}
