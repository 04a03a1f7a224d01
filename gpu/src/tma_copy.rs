//! The copy engine's tiled loads (TMA, `cp.async.bulk.tensor`), shown on the simplest kernel that
//! needs them: `tma_copy_<T>` moves a `rows x cols` tensor box by box through shared memory.
//!
//! Block `(bx, by)` takes the box at tile coordinate `(by, bx)`: one thread arms an `mbarrier`
//! with the box's bytes and issues the load; every thread waits for the barrier's phase 0, then
//! reads its elements of the box through the shared layout the tensor map's swizzle produced —
//! `Sw o (box_rows, box_cols):(box_cols, 1)`, tessel's `Swizzle` in element units — and writes
//! those inside the tensor to `dst`. A wrong mapping between the map's swizzle mode and tessel's
//! swizzle, a wrong box, or a wrong barrier count shows as a wrong or missing element.
//!
//! The tensor map is built on the host (`host::runtime::tma`) with `cuTensorMapEncodeTiled` from the
//! source's tessel layout, copied to global memory, and made visible to the copy engine by the
//! tensormap acquire fence (rustc has no `__grid_constant__` parameters).

use layout_core::FlatTensor;

/// Threads per block.
pub const THREADS: i64 = 256;
/// Bytes of shared memory per block beyond the box: room to align the box to 1024 bytes (the
/// 128-byte swizzle's period) and the barrier.
pub const SMEM_SLACK: i64 = 1024 + 16;

/// The parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TmaCopyParams<E> {
    /// The tensor map of the source (128 bytes in global memory, 64-byte aligned).
    pub map: *const u8,
    /// The source's shape `(rows, cols)` (the map's, outermost first).
    pub shape: [i64; 2],
    /// The box `(rows, cols)`.
    pub boxed: [i64; 2],
    /// The swizzle the map applies, in elements: `Sw<B,M,S>` as `[B, M, S]`.
    pub swizzle: [i64; 3],
    /// The destination, `(rows, cols)`, any layout.
    pub dst: FlatTensor<E, 2>,
}

impl<E> TmaCopyParams<E> {
    /// Blocks `(ceil(cols / box_cols), ceil(rows / box_rows))`.
    pub fn grid(&self) -> [i64; 2] {
        [
            (self.shape[1] + self.boxed[1] - 1) / self.boxed[1],
            (self.shape[0] + self.boxed[0] - 1) / self.boxed[0],
        ]
    }
    /// Bytes of one box of elements of `bytes` bytes.
    pub fn box_bytes(&self, bytes: i64) -> i64 {
        self.boxed[0] * self.boxed[1] * bytes
    }
}

/// The kernel.
///
/// # Safety
/// `p` from the host launcher: `map` a tensor map of the source with box `boxed` and the swizzle
/// `swizzle`, `dst` inside its buffer; `grid()` blocks of [`THREADS`] threads with
/// `box_bytes + SMEM_SLACK` bytes of dynamic shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn tma_copy<T: Copy>(p: TmaCopyParams<crate::mem::Gmem<T>>) {
    use crate::device::{
        block_x, block_y, dynamic_smem, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait,
        smem_addr, sync_threads, tensormap_acquire, thread_x, tma_load_2d,
    };
    use crate::mem::{Mem, Smem};
    use layout_core::{make_coord_tensor, Engine, Swizzle};
    let bytes = core::mem::size_of::<T>() as i64;
    let base = dynamic_smem::<u8>();
    let s0 = smem_addr(base);
    // the box at the first 1024-byte boundary, the barrier after it
    let pad = (1024 - (s0 % 1024)) % 1024;
    let boxp = base.wrapping_add(pad as usize) as *mut T;
    let box_bytes = p.box_bytes(bytes);
    let bar = s0 + pad + box_bytes as u32;
    let Ok(sw) = Swizzle::new(p.swizzle[0], p.swizzle[1], p.swizzle[2]) else {
        crate::device::trap()
    };
    if p.boxed[0] <= 0 || p.boxed[1] <= 0 {
        crate::device::trap()
    }
    let [bx, by] = [block_x(), block_y()];
    let tid = thread_x();
    if tid == 0 {
        mbarrier_init(bar, 1);
    }
    sync_threads();
    if tid == 0 {
        tensormap_acquire(p.map);
        mbarrier_arrive_expect_tx(bar, box_bytes as u32);
        let (c0, c1) = (bx * p.boxed[1], by * p.boxed[0]);
        tma_load_2d(s0 + pad, p.map, c0 as i32, c1 as i32, bar);
    }
    mbarrier_wait(bar, 0);
    let id = make_coord_tensor(p.shape).local_tile(p.boxed, [by, bx]);
    let out = p.dst.local_tile(p.boxed, [by, bx]);
    let mut e = tid;
    while e < p.boxed[0] * p.boxed[1] {
        let (r, c) = (e / p.boxed[1], e % p.boxed[1]);
        if id.elem_less([r, c]) {
            let v = Smem(boxp).advance(sw.apply(e)).read();
            out.at([r, c]).write(v);
        }
        e += THREADS;
    }
}
