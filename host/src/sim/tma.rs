//! The copy engine on the simulated GPU: a [`SimTensorMap`] is what `cuTensorMapEncodeTiled`
//! encodes (a rank-2 host tensor, a box, a swizzle), refused for the same reasons
//! (`host::runtime::tma::check_box`); [`SharedMem`]'s [`BulkCopy`] issues the engine's loads and stores.
//!
//! A load reads its box from global memory as it is issued (zeros outside the tensor) and lays
//! it out in 16-byte chunks at `Sw(address)`, the swizzle on shared-memory address bits the PTX
//! ISA describes; its elements are in flight (any touch faults) until it lands, which the block
//! lets happen only when no thread can go on (the latest a GPU could land it), and which counts
//! the box's bytes on its mbarrier. A store reads the box at issue, writes the elements inside
//! the tensor to global memory (each write counted), and reads the shared memory until the
//! issuing thread's wait covers it.

use super::block::{current, fault};
use super::global::HostMem;
use super::shared::{AsyncKind, AsyncOp, SharedMem};
use layout_core::{Engine, Swizzle, SwizzleMode};
use std::panic::Location;
use tessel_device::tma::{BulkCopy, TensorMap};
use tessel_gpu::mem::Mem;

/// The simulated GPU's tensor map of a rank-2 tensor of `T`s, rows contiguous.
#[derive(Debug)]
pub struct SimTensorMap<T> {
    /// `None`: [`SimTensorMap::absent`].
    src: Option<HostMem<T>>,
    shape: [i64; 2],
    row_stride: i64,
    boxed: [i64; 2],
    /// The mode's swizzle on shared-memory byte addresses, `Sw<B,4,3>`.
    sw: Swizzle,
}
impl<T> Clone for SimTensorMap<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SimTensorMap<T> {}

// The copy engine's addressing rules, which `cuTensorMapEncodeTiled` applies (the runtime's
// encoder checks them first, `crate::runtime::tma::encode_2d`) and the simulated GPU's maps too.

/// The span in bytes a swizzled box's row may take (0 for none: any row).
fn span(mode: SwizzleMode) -> i64 {
    if mode == SwizzleMode::None {
        0
    } else {
        mode.row_bytes()
    }
}

/// Can the copy engine address a rank-2 tensor of `shape` `(rows, cols)`, `stride` (elements),
/// `bytes`-byte elements at `origin`? `Err` names the violated condition: rows contiguous
/// (column stride 1), the row stride covering a row and a multiple of 16 bytes below 2^40, the
/// origin 16-byte aligned.
pub fn addressable(
    [rows, cols]: [i64; 2],
    [ld, unit]: [i64; 2],
    bytes: i64,
    origin: u64,
) -> std::result::Result<(), String> {
    if unit != 1 && cols > 1 {
        return Err(format!(
            "the rows must be contiguous (column stride 1), got {unit}"
        ));
    }
    if rows > 1 && (ld < cols || (ld * bytes) % 16 != 0 || ld * bytes >= 1 << 40) {
        return Err(format!(
            "the row stride must cover a row and be a multiple of 16 bytes below 2^40; got {ld} elements of {bytes} bytes"
        ));
    }
    if !origin.is_multiple_of(16) {
        return Err("the tensor's origin must be 16-byte aligned".into());
    }
    Ok(())
}

/// Can the copy engine move boxes of `boxed` `(rows, cols)` elements of `bytes` bytes laid out
/// by `mode`? `Err` names the violated condition: extents 1 to 256, the box's row a multiple of
/// 16 bytes and at most the swizzle's span.
pub fn check_box(
    [br, bc]: [i64; 2],
    bytes: i64,
    mode: SwizzleMode,
) -> std::result::Result<(), String> {
    if !(1..=256).contains(&br) || !(1..=256).contains(&bc) {
        return Err(format!("box extents must be 1 to 256, got {br}x{bc}"));
    }
    if (bc * bytes) % 16 != 0 {
        return Err(format!(
            "the box's row must be a multiple of 16 bytes, got {} bytes",
            bc * bytes
        ));
    }
    if mode != SwizzleMode::None && bc * bytes > span(mode) {
        return Err(format!(
            "a {}-byte swizzle takes box rows of at most {} bytes, got {}",
            span(mode),
            span(mode),
            bc * bytes
        ));
    }
    Ok(())
}

impl<T: Copy> SimTensorMap<T> {
    /// The map of the `(rows, cols)` tensor at `src` whose rows are `row_stride` elements apart,
    /// moved in boxes of `boxed` `(rows, cols)` laid out by `mode`. `Err` names the condition
    /// the copy engine's encoder would refuse (`host::runtime::tma::addressable`, `host::runtime::tma::check_box`).
    pub fn new(
        src: HostMem<T>,
        shape: [i64; 2],
        row_stride: i64,
        boxed: [i64; 2],
        mode: SwizzleMode,
    ) -> Result<Self, String> {
        let bytes = std::mem::size_of::<T>() as i64;
        let origin = (src.misalignment(16) * bytes) as u64;
        addressable(shape, [row_stride, 1], bytes, origin)?;
        check_box(boxed, bytes, mode)?;
        let sw = mode.swizzle(8).map_err(|e| e.to_string())?;
        Ok(SimTensorMap {
            src: Some(src),
            shape,
            row_stride,
            boxed,
            sw,
        })
    }

    /// The map a kernel's parameters carry where the host built none (the GPU's null
    /// `CUtensorMap` pointer): [`TensorMap::present`] is `false`, and a copy through it faults.
    pub fn absent() -> Self {
        SimTensorMap {
            src: None,
            shape: [0, 0],
            row_stride: 0,
            boxed: [0, 0],
            sw: Swizzle::new(0, 4, 3).expect("the identity swizzle"),
        }
    }

    /// The tensor, or a fault naming `what` at `site` where the map is absent.
    fn src(&self, what: &str, site: &Location) -> HostMem<T> {
        match self.src {
            Some(s) => s,
            None => fault(format!(
                "{what} at {site} through an absent tensor map (the host built none)"
            )),
        }
    }

    /// Bytes of a box.
    pub fn box_bytes(&self) -> usize {
        (self.boxed[0] * self.boxed[1]) as usize * std::mem::size_of::<T>()
    }

    /// The shared byte address of the box's byte `i` (row after row) for a box at `dst`: the
    /// mode's swizzle on the address.
    fn place(&self, dst: usize, i: usize) -> usize {
        self.sw.apply((dst + i) as i64) as usize
    }

    /// Is element `(r, c)` of the tensor inside it?
    fn inside(&self, r: i64, c: i64) -> bool {
        (0..self.shape[0]).contains(&r) && (0..self.shape[1]).contains(&c)
    }
}

impl<T: Copy> TensorMap for SimTensorMap<T> {
    /// Nothing to fence on the host: the map is the host's own.
    unsafe fn acquire(&self) {}
    fn present(&self) -> bool {
        self.src.is_some()
    }
}

impl<U: Copy> SharedMem<U> {
    /// The shared byte address here of a box of `bytes` bytes for `what` at the caller's site:
    /// inside the block's shared memory and 128-byte aligned, else a fault.
    #[track_caller]
    fn box_at(&self, bytes: usize, what: &str) -> usize {
        let site = Location::caller();
        let (at, len) = (
            self.addr() as usize,
            current(|b, _| b.smem[self.rank()].borrow().len_bytes()),
        );
        // the swizzle permutes 16-byte chunks within each 128 bytes: the box's last 128 may be
        // reached whole
        if at % 128 != 0 || at + bytes.next_multiple_of(128) > len {
            fault(format!(
                "{what} at {site}: a box of {bytes} bytes at shared byte {at}, which is not \
                 128-byte aligned or leaves the block's {len} bytes"
            ));
        }
        if 16 % std::mem::size_of::<U>() != 0 {
            fault(format!(
                "{what} at {site}: the simulated GPU moves 16-byte chunks, which elements of {} \
                 bytes do not divide",
                std::mem::size_of::<U>()
            ));
        }
        at
    }

    /// The copy engine's load of `map`'s box at `at` here and at this position of each block of
    /// the cluster in `mask`, counted on the mbarrier at `bar`'s position in each.
    #[track_caller]
    unsafe fn load_box<T: Copy>(&self, map: &SimTensorMap<T>, at: [i64; 2], bar: &Self, mask: u16) {
        let site = Location::caller();
        let bar = bar.mbarrier("a TMA load's mbarrier");
        let src = map.src("a TMA load", site);
        let bytes = map.box_bytes();
        let dst = self.box_at(bytes, "a TMA load");
        let eb = std::mem::size_of::<T>();
        let mut box_bytes = vec![0u8; bytes];
        for r in 0..map.boxed[0] {
            for c in 0..map.boxed[1] {
                let (gr, gc) = (at[0] + r, at[1] + c);
                if map.inside(gr, gc) {
                    let v = src.advance(gr * map.row_stride + gc).read();
                    let i = ((r * map.boxed[1] + c) as usize) * eb;
                    std::ptr::copy_nonoverlapping(
                        &v as *const T as *const u8,
                        box_bytes[i..].as_mut_ptr(),
                        eb,
                    );
                }
            }
        }
        let chunks: Vec<(usize, [u8; 16])> = box_bytes
            .chunks_exact(16)
            .enumerate()
            .map(|(k, c)| (map.place(dst, 16 * k), c.try_into().expect("16 bytes")))
            .collect();
        current(|b, t| {
            let blocks = b.smem.len();
            if mask == 0 || (mask as usize) >> blocks != 0 {
                fault(format!(
                    "a multicast TMA load at {site}: mask {mask:#b} names no block or one \
                     beyond the cluster's {blocks}"
                ));
            }
            for (r, smem) in b.smem.iter().enumerate() {
                if mask >> r & 1 == 0 {
                    continue;
                }
                let mut smem = smem.borrow_mut();
                let elems = chunk_elems(chunks.iter().map(|c| c.0), smem.elem_bytes());
                let op = AsyncOp {
                    kind: AsyncKind::Load {
                        chunks: chunks.clone(),
                        bar,
                        bytes: bytes as u32,
                    },
                    owner: t,
                    group: None,
                    elems,
                    site,
                };
                smem.begin_load(&b.clocks.borrow(), t, op);
            }
        });
    }
}

/// The elements of 16-byte chunks at the byte addresses `chunks`, elements of `eb` bytes.
fn chunk_elems(chunks: impl Iterator<Item = usize>, eb: usize) -> Vec<usize> {
    chunks.flat_map(|a| a / eb..(a + 16) / eb).collect()
}

impl<U: Copy> BulkCopy for SharedMem<U> {
    fn addr(&self) -> u32 {
        (self.position() * std::mem::size_of::<U>() as i64) as u32
    }

    unsafe fn tma_load<T: Copy>(&self, map: &SimTensorMap<T>, at: [i64; 2], bar: &Self) {
        self.own("a TMA load");
        self.load_box(map, at, bar, 1 << self.rank());
    }

    unsafe fn tma_load_multicast<T: Copy>(
        &self,
        map: &SimTensorMap<T>,
        at: [i64; 2],
        bar: &Self,
        mask: u16,
    ) {
        self.own("a multicast TMA load");
        self.load_box(map, at, bar, mask);
    }

    unsafe fn tma_store<T: Copy>(&self, map: &SimTensorMap<T>, at: [i64; 2]) {
        self.own("a TMA store");
        let site = Location::caller();
        let src = map.src("a TMA store", site);
        let dst = self.box_at(map.box_bytes(), "a TMA store");
        let eb = std::mem::size_of::<T>();
        // the bytes of the elements inside the tensor, which the engine stores
        let mut bytes = Vec::new();
        for r in 0..map.boxed[0] {
            for c in 0..map.boxed[1] {
                if map.inside(at[0] + r, at[1] + c) {
                    bytes.push(map.place(dst, ((r * map.boxed[1] + c) as usize) * eb));
                }
            }
        }
        current(|b, t| {
            let mut smem = b.smem[self.rank()].borrow_mut();
            let u = smem.elem_bytes();
            let mut elems: Vec<usize> = bytes
                .iter()
                .flat_map(|&a| a / u..(a + eb).div_ceil(u))
                .collect();
            elems.dedup();
            let op = AsyncOp {
                kind: AsyncKind::Store,
                owner: t,
                group: None,
                elems,
                site,
            };
            smem.begin_read(&b.clocks.borrow(), t, op);
        });
        for r in 0..map.boxed[0] {
            for c in 0..map.boxed[1] {
                let (gr, gc) = (at[0] + r, at[1] + c);
                if map.inside(gr, gc) {
                    let i = map.place(dst, ((r * map.boxed[1] + c) as usize) * eb);
                    let v = current(|b, _| {
                        let s = b.smem[self.rank()].borrow();
                        (s.bytes(i, eb).as_ptr() as *const T).read_unaligned()
                    });
                    src.advance(gr * map.row_stride + gc).write(v);
                }
            }
        }
    }

    fn bulk_commit(&self) {
        current(|b, t| b.smem[b.rank_of(t)].borrow_mut().bulk_commit(t));
    }

    fn bulk_wait_read<const N: u32>(&self) {
        tessel_device::sim::request(tessel_device::sim::Sync::BulkWait { n: N, read: true });
    }

    fn bulk_wait<const N: u32>(&self) {
        tessel_device::sim::request(tessel_device::sim::Sync::BulkWait { n: N, read: false });
    }

    fn fence_proxy_async(&self) {
        current(|b, t| b.clocks.borrow_mut().fence(t));
    }
}
