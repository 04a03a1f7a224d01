//! Engines: how a kernel's tensors reach memory. A kernel is written once, generic over its
//! engines; the device runs it with [`Gmem`] (global memory) and [`Smem`] (shared memory), the
//! host execution (`host::checks::exec`) with host buffers that check every access and count writes.
//!
//! An engine is a position in memory ([`layout_core::Engine`]: tiling and partitioning move it);
//! [`Mem`] reads and writes the element there, the pair or quad of elements that starts there (one
//! access of twice or four times the width), or the 128-bit vector that starts there.
//! [`SwizzleEngine`] wraps an engine in a swizzle (a swizzled shared-memory tile).

use crate::tma::{BulkCopy, GmemTensorMap, TensorMap};
use layout_core::{Engine, Swizzle};

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
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn read(&self) -> T;
    /// Writes the element here.
    ///
    /// # Safety
    /// As [`Mem::read`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn write(&self, v: T);
    /// The 16 bytes from here (one 128-bit access).
    ///
    /// # Safety
    /// The 16 bytes must be inside the tensor's memory and 16-byte aligned.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn read_v4(&self) -> V4;
    /// Writes 16 bytes from here.
    ///
    /// # Safety
    /// As [`Mem::read_v4`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn write_v4(&self, v: V4);
    /// Is this position 16-byte aligned (may a 128-bit access start here)?
    fn aligned16(&self) -> bool;
    /// The element here and the next, in one access of twice the element's width (32 bits for
    /// 16-bit elements, 64 for 32-bit ones).
    ///
    /// # Safety
    /// Both elements must be inside the tensor's memory, and this position aligned to twice the
    /// element's size ([`Mem::aligned_pair`]).
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn read_pair(&self) -> [T; 2];
    /// Writes the element here and the next in one access.
    ///
    /// # Safety
    /// As [`Mem::read_pair`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn write_pair(&self, v: [T; 2]);
    /// Is this position aligned to twice the element's size (may a pair access start here)?
    fn aligned_pair(&self) -> bool;
    /// The element here and the next three, in one access of four times the element's width (64
    /// bits for 16-bit elements, 128 for 32-bit ones).
    ///
    /// # Safety
    /// The four elements must be inside the tensor's memory, and this position aligned to four
    /// times the element's size ([`Mem::aligned_quad`]).
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn read_quad(&self) -> [T; 4];
    /// Writes the element here and the next three in one access.
    ///
    /// # Safety
    /// As [`Mem::read_quad`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn write_quad(&self, v: [T; 4]);
    /// Is this position aligned to four times the element's size (may a quad access start here)?
    fn aligned_quad(&self) -> bool;
    /// Elements between the `bytes`-byte boundary at or below this position and it (`bytes` a
    /// power of two, at most 256): 0 where an access starting here is `bytes`-aligned.
    fn misalignment(&self, bytes: usize) -> i64;
}

/// Where a kernel's memory is: the engine of global memory and the engine of shared memory for
/// each element type (CuTe's `gmem_ptr<T>` / `smem_ptr<T>`). A kernel's parameters and its
/// thread are generic over the space ([`Kernel`](crate::ctx::Kernel)), so one function runs on
/// the GPU ([`Device`]: device pointers) and on the host's simulated GPU (`host::sim::Sim`:
/// checked host buffers), and its tensors may hold different element types (a GEMM's `bf16`
/// inputs and `f32` output).
pub trait Space: Copy + 'static {
    /// Global memory holding `T`s.
    type Global<T: Copy>: Mem<T> + Atomic<T>;
    /// The block's shared memory holding `T`s, filled from [`Space::Global`] by asynchronous
    /// copies and the copy engine.
    type Shared<T: Copy>: Mem<T> + AsyncCopy<Space = Self> + BulkCopy + Dsm + Ldmatrix + Recast;
    /// The copy engine's map of a global tensor of `T`s ([`crate::tma`]).
    type TensorMap<T: Copy>: TensorMap;
}

/// `ldmatrix` (sm_75 and later): a warp reads four 8x8 matrices of 16-bit elements from shared
/// memory into `mma.sync`'s register fragments ([`crate::mma`]), lanes `8q..8q+8` giving the rows
/// of matrix `q` (each lane's row is the 16 bytes at its engine). CuTe's `SM75_U32x4_LDSM_N` and
/// `SM75_U16x8_LDSM_T`. Every lane of the warp takes part; on the host the simulated GPU reads each
/// lane's row as that lane's access (checked) and hands out the words as the PTX ISA says.
pub trait Ldmatrix {
    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: lane `l` receives in word `q` the elements
    /// `(l / 4, 2 (l % 4))` and `(l / 4, 2 (l % 4) + 1)` of matrix `q` (low half first).
    ///
    /// # Safety
    /// The 16 bytes here inside the block's shared memory, 16-byte aligned, and written before
    /// (by another thread: a barrier between).
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn ldmatrix_x4(&self) -> [u32; 4];
    /// `ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16`: lane `l` receives in word `q` the
    /// elements `(2 (l % 4), l / 4)` and `(2 (l % 4) + 1, l / 4)` of matrix `q`: the fragments of
    /// its transpose.
    ///
    /// # Safety
    /// As [`Ldmatrix::ldmatrix_x4`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn ldmatrix_x4_trans(&self) -> [u32; 4];
}

impl<E: Ldmatrix + Engine> Ldmatrix for SwizzleEngine<E> {
    /// From `Sw(pos)`: the swizzle must keep a row's 16 bytes together.
    #[inline(always)]
    unsafe fn ldmatrix_x4(&self) -> [u32; 4] {
        self.target().ldmatrix_x4()
    }
    #[inline(always)]
    unsafe fn ldmatrix_x4_trans(&self) -> [u32; 4] {
        self.target().ldmatrix_x4_trans()
    }
}

/// Distributed shared memory (sm_90): the blocks of a cluster reach each other's shared memory
/// and mbarriers. The simulated GPU runs a cluster's blocks at once, each access of another
/// block's memory checked against that block's shadow, ordered by [`crate::sync::cluster_sync`]
/// or the mbarriers.
pub trait Dsm: Sized {
    /// The same position in the shared memory of block `rank` of this cluster (`mapa`): reads
    /// and writes through it reach that block's memory.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn map_rank(&self, rank: i64) -> Self;
    /// `mbarrier.arrive.shared::cluster` on the mbarrier at this position of block `rank`'s
    /// shared memory: one arrival there, this thread's accesses before it ordered before what
    /// that barrier's waiters do after.
    ///
    /// # Safety
    /// An initialised mbarrier there; block `rank` still running.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mbarrier_arrive_cluster(&self, rank: i64);
}

/// Shared memory seen as elements of another type (CuTe's `recast_ptr<V>`): the same bytes from
/// the same place, e.g. a GEMM's 16-bit stages reused for its `f32` accumulators.
pub trait Recast: AsyncCopy {
    /// This position as an engine of `V`s: element `i` of it is the `V` at byte
    /// `i size_of::<V>()` from here.
    ///
    /// Post-conditions: this position's byte offset is a multiple of `size_of::<V>()` (else the
    /// simulated GPU reports it); the simulated GPU keeps checking every access at the
    /// granularity of the block's shared element type, so `V` is at least as wide.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn recast<V: Copy>(&self) -> <Self::Space as Space>::Shared<V>;
}

/// An element that global memory adds to atomically ([`Atomic`]): `i32`, `u32`, `f32`.
pub trait Atom: Copy {
    /// `a + b` as the atomic addition computes it (integers wrap around; `f32` rounds to nearest).
    fn sum(a: Self, b: Self) -> Self;
    /// `atom.gpu.add` of `v` at `p` (relaxed, or with `ACQ_REL` acquire-release), returning
    /// what `p` held.
    ///
    /// # Safety
    /// `p` in global memory, aligned, valid for reads and writes.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn atom_add<const ACQ_REL: bool>(p: *mut Self, v: Self) -> Self;
}

impl Atom for u32 {
    fn sum(a: u32, b: u32) -> u32 {
        a.wrapping_add(b)
    }
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn atom_add<const ACQ_REL: bool>(p: *mut u32, v: u32) -> u32 {
        match ACQ_REL {
            true => crate::device::atomic_add_acq_rel_u32(p, v),
            false => crate::device::atomic_add_u32(p, v),
        }
    }
}

impl Atom for i32 {
    fn sum(a: i32, b: i32) -> i32 {
        a.wrapping_add(b)
    }
    /// The same addition as `u32`'s (two's complement).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn atom_add<const ACQ_REL: bool>(p: *mut i32, v: i32) -> i32 {
        u32::atom_add::<ACQ_REL>(p as *mut u32, v as u32) as i32
    }
}

impl Atom for f32 {
    fn sum(a: f32, b: f32) -> f32 {
        a + b
    }
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn atom_add<const ACQ_REL: bool>(p: *mut f32, v: f32) -> f32 {
        match ACQ_REL {
            true => crate::device::atomic_add_acq_rel_f32(p, v),
            false => crate::device::atomic_add_f32(p, v),
        }
    }
}

/// Atomic additions at an engine's position in global memory: how the blocks of a launch share a
/// counter (a persistent kernel's next unit of work, the blocks done with theirs).
pub trait Atomic<T: Copy> {
    /// Adds `v` to the element here in one indivisible step (`atom.gpu.add`, relaxed) and
    /// returns what the element held before.
    ///
    /// Post-conditions: the additions of every thread of the launch to one element form one
    /// order, each seeing the element as the one before left it (n additions of 1 to a counter
    /// return `c, c + 1, ..., c + n - 1` in some order); nothing else is ordered by it. On the
    /// simulated GPU the element is read and written at once (its blocks run in turn), the
    /// access checked but not counted among the writes.
    ///
    /// # Safety
    /// The element inside the tensor's memory, aligned; touched by other threads of the launch
    /// only through atomic additions (or ordered by them).
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn atomic_add(&self, v: T) -> T
    where
        T: Atom;
    /// [`Atomic::atomic_add`], acquire-release at the GPU's scope (`atom.acq_rel.gpu.add`):
    /// what this thread accessed before it is ordered before what a thread whose acquiring
    /// addition to the element comes later accesses after its own (the last of the blocks
    /// counting themselves done sees every block's work).
    ///
    /// # Safety
    /// As [`Atomic::atomic_add`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn atomic_add_acq_rel(&self, v: T) -> T
    where
        T: Atom;
}

/// The GPU's memory: [`Gmem`] and [`Smem`], device addresses. On the host they are only carried
/// to the launch (a host never dereferences a device address: a kernel runs on the host through
/// the simulated GPU's space).
#[derive(Clone, Copy, Debug)]
pub struct Device;

impl Space for Device {
    type Global<T: Copy> = Gmem<T>;
    type Shared<T: Copy> = Smem<T>;
    type TensorMap<T: Copy> = GmemTensorMap<T>;
}

/// Asynchronous 16-byte copies into this memory (shared memory) from its space's global memory:
/// `cp.async` on the device, where the bytes land at some point before the wait that covers
/// them returns, and travel through no register. A thread's copies since its last
/// [`AsyncCopy::commit`] form its next group; [`AsyncCopy::wait_groups`] waits for all but the
/// most recent groups. The simulated GPU lands a copy at the wait that covers it, and reports any
/// access to its bytes while it is in flight (a missing wait, or a missing barrier after it), and
/// a thread that ends with copies in flight. The mbarriers live here too.
pub trait AsyncCopy {
    /// The space whose global memory the copies read.
    type Space: Space;
    /// Starts copying the 16 bytes at `src` to the 16 bytes here (`cp.async.cg.shared.global`).
    ///
    /// # Safety
    /// Both 16-byte ranges must be inside their tensors' memories and 16-byte aligned; `src` must
    /// not be written by the launch; the 16 bytes here must not be accessed, by any thread, before
    /// this thread's wait that covers the copy (and, by another thread, a barrier after it).
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn copy_async_v4<T: Copy>(&self, src: &<Self::Space as Space>::Global<T>);
    /// [`AsyncCopy::copy_async_v4`] where `full`, else 16 zero bytes here, `src` not read (CuTe's
    /// `SM80_CP_ASYNC_CACHEGLOBAL_ZFILL`: `cp.async` with a source size of 16 or 0). The copy
    /// lands at its wait either way.
    ///
    /// # Safety
    /// As [`AsyncCopy::copy_async_v4`], `src`'s only where `full`.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn copy_async_v4_zfill<T: Copy>(
        &self,
        src: &<Self::Space as Space>::Global<T>,
        full: bool,
    );
    /// `cp.async.commit_group`: the thread's copies started since its last commit form a group.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    fn commit(&self);
    /// `cp.async.wait_group N`: every group of this thread but the `N` most recent has landed.
    ///
    /// # Safety
    /// As the copies' (the simulated GPU writes their bytes here).
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wait_groups<const N: u32>(&self);
    /// `cp.async.wait_all`: every copy this thread started has landed (a commit, then a wait for
    /// all groups).
    ///
    /// # Safety
    /// As [`AsyncCopy::wait_groups`].
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn wait_all(&self);

    /// `mbarrier.init.shared::cta.b64 [here], count` (then `fence.mbarrier_init`): the 8 bytes
    /// here become an mbarrier in phase 0 that expects `count` arrivals (1 to `2^20 - 1`) per
    /// phase. One thread initialises it; a block barrier before any other thread uses it.
    ///
    /// # Safety
    /// Here 8-byte aligned shared memory that nothing else uses while the barrier lives.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mbarrier_init(&self, count: u32);
    /// `mbarrier.arrive.expect_tx.shared::cta.b64 _, [here], bytes` (`mbarrier.arrive` when
    /// `bytes == 0`): the current phase waits for `bytes` more transaction bytes, then this
    /// thread arrives. The phase completes when its arrivals and its bytes are all in.
    ///
    /// # Safety
    /// An initialised barrier here.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mbarrier_arrive(&self, bytes: u32);
    /// `mbarrier.complete_tx.shared::cta.b64 [here], bytes`: `bytes` of the current phase's
    /// transactions done (what the copy engine does as its bytes land).
    ///
    /// # Safety
    /// An initialised barrier here.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mbarrier_complete_tx(&self, bytes: u32);
    /// Waits until the phase of parity `parity` (0 or 1) of the barrier here has completed
    /// (`mbarrier.try_wait.parity` until it succeeds); what its arrivals wrote before arriving
    /// is then visible to this thread.
    ///
    /// # Safety
    /// An initialised barrier here.
    #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
    unsafe fn mbarrier_wait(&self, parity: u32);
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

/// A swizzled engine (CuTe's `swizzle_ptr`): its position is an offset `pos` from `base`, and an
/// access reaches element `Sw(pos)` of `base`. Tiling and partitioning move `pos` as they move any
/// engine; the swizzle is applied where memory is reached. A tensor `SwizzleEngine o L` is thus
/// `base o (Sw o L)`, the swizzled layout, with `L` a plain (flat) layout.
#[derive(Clone, Copy, Debug)]
pub struct SwizzleEngine<E> {
    base: E,
    pos: i64,
    sw: Swizzle,
}

impl<E: Engine> SwizzleEngine<E> {
    /// `Sw` over `base`, at position 0.
    #[inline(always)]
    pub const fn new(base: E, sw: Swizzle) -> Self {
        Self { base, pos: 0, sw }
    }
    /// The engine of the element this one reaches: `base` advanced by `Sw(pos)`.
    #[inline(always)]
    pub fn target(&self) -> E {
        self.base.advance(self.sw.apply(self.pos))
    }
}

impl<E: Engine> Engine for SwizzleEngine<E> {
    #[inline(always)]
    fn advance(self, off: i64) -> Self {
        Self {
            pos: self.pos + off,
            ..self
        }
    }
    fn fmt_origin(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let (b, m, s) = self.sw.params();
        write!(f, "Sw<{b},{m},{s}>({})@", self.pos)?;
        self.base.fmt_origin(f)
    }
}

impl<T: Copy, E: Mem<T>> Mem<T> for SwizzleEngine<E> {
    #[inline(always)]
    unsafe fn read(&self) -> T {
        self.target().read()
    }
    #[inline(always)]
    unsafe fn write(&self, v: T) {
        self.target().write(v)
    }
    /// The 16 bytes from `Sw(pos)`: the swizzle must keep them together (`2^M` elements at least).
    #[inline(always)]
    unsafe fn read_v4(&self) -> V4 {
        self.target().read_v4()
    }
    /// As [`SwizzleEngine::read_v4`].
    #[inline(always)]
    unsafe fn write_v4(&self, v: V4) {
        self.target().write_v4(v)
    }
    #[inline(always)]
    fn aligned16(&self) -> bool {
        self.target().aligned16()
    }
    /// The pair from `Sw(pos)`: the swizzle must keep it together (`M >= 1`).
    #[inline(always)]
    unsafe fn read_pair(&self) -> [T; 2] {
        self.target().read_pair()
    }
    /// As [`SwizzleEngine::read_pair`].
    #[inline(always)]
    unsafe fn write_pair(&self, v: [T; 2]) {
        self.target().write_pair(v)
    }
    #[inline(always)]
    fn aligned_pair(&self) -> bool {
        self.target().aligned_pair()
    }
    /// The quad from `Sw(pos)`: the swizzle must keep it together (`M >= 2`).
    #[inline(always)]
    unsafe fn read_quad(&self) -> [T; 4] {
        self.target().read_quad()
    }
    /// As [`SwizzleEngine::read_quad`].
    #[inline(always)]
    unsafe fn write_quad(&self, v: [T; 4]) {
        self.target().write_quad(v)
    }
    #[inline(always)]
    fn aligned_quad(&self) -> bool {
        self.target().aligned_quad()
    }
    #[inline(always)]
    fn misalignment(&self, bytes: usize) -> i64 {
        self.target().misalignment(bytes)
    }
}

/// Elements of `T` between the `bytes`-byte boundary at or below `p` and `p`.
#[inline(always)]
pub fn misalignment<T>(p: *const T, bytes: usize) -> i64 {
    ((p as usize % bytes) / core::mem::size_of::<T>()) as i64
}

/// Is `p` aligned to twice the size of `T` (a pair access)?
#[inline(always)]
pub fn pair_aligned<T>(p: *const T) -> bool {
    (p as usize).is_multiple_of(2 * core::mem::size_of::<T>())
}

/// Is `p` aligned to four times the size of `T` (a quad access)?
#[inline(always)]
pub fn quad_aligned<T>(p: *const T) -> bool {
    (p as usize).is_multiple_of(4 * core::mem::size_of::<T>())
}

#[cfg(target_arch = "nvptx64")]
mod device {
    use super::*;
    use crate::device::{
        cp_async_16, cp_async_16_zfill, cp_async_commit, cp_async_wait, cp_async_wait_all,
        load_global, load_v4, load_v4_rw, mbarrier_arrive_expect_tx, mbarrier_complete_tx,
        mbarrier_init, mbarrier_wait, smem_addr, store_global, store_v4,
    };
    use core::mem::{size_of, transmute_copy};

    impl<T: Copy> Mem<T> for Gmem<T> {
        #[inline(always)]
        unsafe fn read(&self) -> T {
            load_global(self.0)
        }
        #[inline(always)]
        unsafe fn write(&self, v: T) {
            store_global(self.0, v)
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
        /// `ld.global.b32` (16-bit elements) or `.b64` (32-bit ones).
        #[inline(always)]
        unsafe fn read_pair(&self) -> [T; 2] {
            match size_of::<T>() {
                2 => transmute_copy(&load_global(self.0 as *const u32)),
                4 => transmute_copy(&load_global(self.0 as *const u64)),
                _ => [load_global(self.0), load_global(self.0.add(1))],
            }
        }
        /// `st.global.b32` or `.b64`.
        #[inline(always)]
        unsafe fn write_pair(&self, v: [T; 2]) {
            match size_of::<T>() {
                2 => store_global(self.0 as *mut u32, transmute_copy::<_, u32>(&v)),
                4 => store_global(self.0 as *mut u64, transmute_copy::<_, u64>(&v)),
                _ => {
                    store_global(self.0, v[0]);
                    store_global(self.0.add(1), v[1])
                }
            }
        }
        #[inline(always)]
        fn aligned_pair(&self) -> bool {
            pair_aligned(self.0)
        }
        /// `ld.global.b64` (16-bit elements) or `.v4.u32` (32-bit ones).
        #[inline(always)]
        unsafe fn read_quad(&self) -> [T; 4] {
            match size_of::<T>() {
                2 => transmute_copy(&load_global(self.0 as *const u64)),
                4 => transmute_copy(&load_v4_rw(self.0 as *const u32)),
                _ => core::array::from_fn(|i| load_global(self.0.add(i))),
            }
        }
        /// `st.global.b64` or `.v4.u32`.
        #[inline(always)]
        unsafe fn write_quad(&self, v: [T; 4]) {
            match size_of::<T>() {
                2 => store_global(self.0 as *mut u64, transmute_copy::<_, u64>(&v)),
                4 => store_v4(self.0 as *mut u32, transmute_copy::<_, V4>(&v)),
                _ => {
                    for (i, x) in v.into_iter().enumerate() {
                        store_global(self.0.add(i), x)
                    }
                }
            }
        }
        #[inline(always)]
        fn aligned_quad(&self) -> bool {
            quad_aligned(self.0)
        }
        #[inline(always)]
        fn misalignment(&self, bytes: usize) -> i64 {
            misalignment(self.0, bytes)
        }
    }

    impl<T: Copy> Atomic<T> for Gmem<T> {
        #[inline(always)]
        unsafe fn atomic_add(&self, v: T) -> T
        where
            T: Atom,
        {
            T::atom_add::<false>(self.0, v)
        }
        #[inline(always)]
        unsafe fn atomic_add_acq_rel(&self, v: T) -> T
        where
            T: Atom,
        {
            T::atom_add::<true>(self.0, v)
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
        /// `ld.shared.b32` (16-bit elements) or `.b64` (32-bit ones).
        #[inline(always)]
        unsafe fn read_pair(&self) -> [T; 2] {
            // one load of the wide integer (a load of `[T; 2]` may be split into two)
            match size_of::<T>() {
                2 => transmute_copy(&(self.0 as *const u32).read()),
                4 => transmute_copy(&(self.0 as *const u64).read()),
                _ => [*self.0, *self.0.add(1)],
            }
        }
        /// `st.shared.b32` or `.b64`.
        #[inline(always)]
        unsafe fn write_pair(&self, v: [T; 2]) {
            match size_of::<T>() {
                2 => *(self.0 as *mut u32) = transmute_copy(&v),
                4 => *(self.0 as *mut u64) = transmute_copy(&v),
                _ => {
                    *self.0 = v[0];
                    *self.0.add(1) = v[1]
                }
            }
        }
        #[inline(always)]
        fn aligned_pair(&self) -> bool {
            pair_aligned(self.0)
        }
        /// `ld.shared.b64` (16-bit elements) or `.v4.u32` (32-bit ones).
        #[inline(always)]
        unsafe fn read_quad(&self) -> [T; 4] {
            match size_of::<T>() {
                2 => transmute_copy(&(self.0 as *const u64).read()),
                4 => transmute_copy(&(self.0 as *const V4).read()),
                _ => core::array::from_fn(|i| *self.0.add(i)),
            }
        }
        /// `st.shared.b64` or `.v4.u32`.
        #[inline(always)]
        unsafe fn write_quad(&self, v: [T; 4]) {
            match size_of::<T>() {
                2 => *(self.0 as *mut u64) = transmute_copy(&v),
                4 => *(self.0 as *mut V4) = transmute_copy(&v),
                _ => {
                    for (i, x) in v.into_iter().enumerate() {
                        *self.0.add(i) = x
                    }
                }
            }
        }
        #[inline(always)]
        fn aligned_quad(&self) -> bool {
            quad_aligned(self.0)
        }
        #[inline(always)]
        fn misalignment(&self, bytes: usize) -> i64 {
            misalignment(self.0, bytes)
        }
    }

    impl<U> Ldmatrix for Smem<U> {
        #[inline(always)]
        unsafe fn ldmatrix_x4(&self) -> [u32; 4] {
            crate::device::ldmatrix_x4(smem_addr(self.0))
        }
        #[inline(always)]
        unsafe fn ldmatrix_x4_trans(&self) -> [u32; 4] {
            crate::device::ldmatrix_x4_trans(smem_addr(self.0))
        }
    }

    impl<U> Recast for Smem<U> {
        #[inline(always)]
        fn recast<V: Copy>(&self) -> Smem<V> {
            Smem(self.0 as *mut V)
        }
    }

    impl<U> Dsm for Smem<U> {
        #[inline(always)]
        fn map_rank(&self, rank: i64) -> Self {
            let p: *mut U;
            // SAFETY: an address computation
            unsafe {
                core::arch::asm!("mapa.u64 {d}, {a}, {r};", d = out(reg64) p, a = in(reg64) self.0,
                                 r = in(reg32) rank as u32, options(pure, nomem, nostack, preserves_flags))
            };
            Smem(p)
        }
        #[inline(always)]
        unsafe fn mbarrier_arrive_cluster(&self, rank: i64) {
            crate::device::mbarrier_arrive_cluster(smem_addr(self.0), rank)
        }
    }

    impl<U> AsyncCopy for Smem<U> {
        type Space = Device;
        /// `cp.async.cg.shared.global [here], [src], 16`.
        #[inline(always)]
        unsafe fn copy_async_v4<T: Copy>(&self, src: &Gmem<T>) {
            cp_async_16(self.0 as *mut V4, src.0 as *const u8)
        }
        /// `cp.async.cg.shared.global [here], [src], 16, 16 or 0`.
        #[inline(always)]
        unsafe fn copy_async_v4_zfill<T: Copy>(&self, src: &Gmem<T>, full: bool) {
            cp_async_16_zfill(smem_addr(self.0), src.0 as *const u8, 16 * full as u32)
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
            mbarrier_init(smem_addr(self.0), count)
        }
        #[inline(always)]
        unsafe fn mbarrier_arrive(&self, bytes: u32) {
            mbarrier_arrive_expect_tx(smem_addr(self.0), bytes)
        }
        #[inline(always)]
        unsafe fn mbarrier_complete_tx(&self, bytes: u32) {
            mbarrier_complete_tx(smem_addr(self.0), bytes)
        }
        #[inline(always)]
        unsafe fn mbarrier_wait(&self, parity: u32) {
            mbarrier_wait(smem_addr(self.0), parity)
        }
    }
}

/// [`Device`]'s engines off the GPU: device addresses, which the host carries to a launch and
/// never dereferences (a kernel runs on the host in the simulated GPU's space, whose engines
/// check every access). These accesses exist so that `Device` is a [`Space`] on every target;
/// reaching one is a bug of the caller, reported as such.
#[cfg(not(target_arch = "nvptx64"))]
pub(crate) use off_device::{no_device, no_mem, no_shared};

#[cfg(not(target_arch = "nvptx64"))]
mod off_device {
    use super::*;

    #[cold]
    #[track_caller]
    pub(crate) fn no_device(what: &str) -> ! {
        panic!(
            "{what} through a device address on the host: kernels run on the host only in the \
             simulated GPU's space (host::sim)"
        )
    }

    macro_rules! no_mem {
        ($e:ident) => {
            impl<T: Copy> $crate::mem::Atomic<T> for $e<T> {
                unsafe fn atomic_add(&self, _: T) -> T
                where
                    T: $crate::mem::Atom,
                {
                    no_device("an atomic addition")
                }
                unsafe fn atomic_add_acq_rel(&self, _: T) -> T
                where
                    T: $crate::mem::Atom,
                {
                    no_device("an atomic addition")
                }
            }
            impl<T: Copy> Mem<T> for $e<T> {
                unsafe fn read(&self) -> T {
                    no_device("a read")
                }
                unsafe fn write(&self, _: T) {
                    no_device("a write")
                }
                unsafe fn read_v4(&self) -> V4 {
                    no_device("a read")
                }
                unsafe fn write_v4(&self, _: V4) {
                    no_device("a write")
                }
                fn aligned16(&self) -> bool {
                    (self.0 as usize).is_multiple_of(16)
                }
                unsafe fn read_pair(&self) -> [T; 2] {
                    no_device("a read")
                }
                unsafe fn write_pair(&self, _: [T; 2]) {
                    no_device("a write")
                }
                fn aligned_pair(&self) -> bool {
                    $crate::mem::pair_aligned(self.0 as usize as *const T)
                }
                unsafe fn read_quad(&self) -> [T; 4] {
                    no_device("a read")
                }
                unsafe fn write_quad(&self, _: [T; 4]) {
                    no_device("a write")
                }
                fn aligned_quad(&self) -> bool {
                    $crate::mem::quad_aligned(self.0 as usize as *const T)
                }
                fn misalignment(&self, bytes: usize) -> i64 {
                    $crate::mem::misalignment(self.0 as usize as *const T, bytes)
                }
            }
        };
    }
    pub(crate) use no_mem;
    no_mem!(Gmem);

    /// The off-device stand-ins of a shared-memory engine `$e` of space `$space`: every access
    /// is refused (kernels run on the host only in the simulated GPU's space).
    macro_rules! no_shared {
        ($e:ident, $space:ty) => {
            $crate::mem::no_mem!($e);
            impl<U> $crate::mem::Ldmatrix for $e<U> {
                unsafe fn ldmatrix_x4(&self) -> [u32; 4] {
                    $crate::mem::no_device("ldmatrix")
                }
                unsafe fn ldmatrix_x4_trans(&self) -> [u32; 4] {
                    $crate::mem::no_device("ldmatrix")
                }
            }

            impl<U> $crate::mem::Dsm for $e<U> {
                fn map_rank(&self, _: i64) -> Self {
                    $crate::mem::no_device("mapa")
                }
                unsafe fn mbarrier_arrive_cluster(&self, _: i64) {
                    $crate::mem::no_device("mbarrier.arrive.shared::cluster")
                }
            }

            impl<U> $crate::mem::AsyncCopy for $e<U> {
                type Space = $space;
                unsafe fn copy_async_v4<T: Copy>(&self, _: &$crate::mem::Gmem<T>) {
                    $crate::mem::no_device("cp.async")
                }
                unsafe fn copy_async_v4_zfill<T: Copy>(&self, _: &$crate::mem::Gmem<T>, _: bool) {
                    $crate::mem::no_device("cp.async")
                }
                fn commit(&self) {
                    $crate::mem::no_device("cp.async.commit_group")
                }
                unsafe fn wait_groups<const N: u32>(&self) {
                    $crate::mem::no_device("cp.async.wait_group")
                }
                unsafe fn wait_all(&self) {
                    $crate::mem::no_device("cp.async.wait_all")
                }
                unsafe fn mbarrier_init(&self, _: u32) {
                    $crate::mem::no_device("mbarrier.init")
                }
                unsafe fn mbarrier_arrive(&self, _: u32) {
                    $crate::mem::no_device("mbarrier.arrive")
                }
                unsafe fn mbarrier_complete_tx(&self, _: u32) {
                    $crate::mem::no_device("mbarrier.complete_tx")
                }
                unsafe fn mbarrier_wait(&self, _: u32) {
                    $crate::mem::no_device("mbarrier.try_wait")
                }
            }
        };
    }
    pub(crate) use no_shared;

    no_shared!(Smem, Device);

    impl<U> Recast for Smem<U> {
        fn recast<V: Copy>(&self) -> Smem<V> {
            Smem(self.0 as *mut V)
        }
    }
}
