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

/// The simulated GPU's tensor map of a tensor of `T`s of rank 2 to 5, the last dimension
/// contiguous.
#[derive(Debug)]
pub struct SimTensorMap<T> {
    /// `None`: [`SimTensorMap::absent`].
    src: Option<HostMem<T>>,
    /// The rank the map was built with.
    rank: usize,
    /// Extents, strides (elements) and the box, outermost first, led by 1s (strides 0) to rank 5.
    shape: [i64; 5],
    stride: [i64; 5],
    boxed: [i64; 5],
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
    if rows > 1 && unit == 1 && ld < cols {
        return Err(format!(
            "the row stride must cover a row and be a multiple of 16 bytes below 2^40; got {ld} elements of {bytes} bytes"
        ));
    }
    addressable_nd(&[rows, cols], &[ld, unit], bytes, origin)
}

/// Can the copy engine address a tensor of rank 2 to 5 of `shape` and `stride` (elements,
/// outermost first), `bytes`-byte elements at `origin`? `Err` names the violated condition: the
/// rank, extents 1 to 2^32, the last dimension contiguous (stride 1), every other stride (where
/// its extent passes 1) a positive multiple of 16 bytes below 2^40, the origin 16-byte aligned.
pub fn addressable_nd(
    shape: &[i64],
    stride: &[i64],
    bytes: i64,
    origin: u64,
) -> std::result::Result<(), String> {
    let r = shape.len();
    if !(2..=5).contains(&r) || stride.len() != r {
        return Err(format!(
            "the copy engine takes tensors of rank 2 to 5, got shape {shape:?}, stride {stride:?}"
        ));
    }
    if let Some(e) = shape.iter().find(|&&e| !(1..=1 << 32).contains(&e)) {
        return Err(format!("extents must be 1 to 2^32, got {e}"));
    }
    if stride[r - 1] != 1 && shape[r - 1] > 1 {
        return Err(format!(
            "the rows must be contiguous (column stride 1), got {}",
            stride[r - 1]
        ));
    }
    for (&e, &d) in shape.iter().zip(stride).take(r - 1) {
        if e > 1 && (d < 1 || (d * bytes) % 16 != 0 || d * bytes >= 1 << 40) {
            return Err(format!(
                "the row stride must cover a row and be a multiple of 16 bytes below 2^40; got {d} elements of {bytes} bytes"
            ));
        }
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
    boxed: [i64; 2],
    bytes: i64,
    mode: SwizzleMode,
) -> std::result::Result<(), String> {
    check_box_nd(&boxed, bytes, mode)
}

/// [`check_box`] of a box of rank 2 to 5 (outermost first; its last extent the row).
pub fn check_box_nd(
    boxed: &[i64],
    bytes: i64,
    mode: SwizzleMode,
) -> std::result::Result<(), String> {
    let bc = boxed.last().copied().unwrap_or(0);
    if boxed.is_empty() || boxed.iter().any(|e| !(1..=256).contains(e)) {
        let dims: Vec<String> = boxed.iter().map(|e| e.to_string()).collect();
        return Err(format!(
            "box extents must be 1 to 256, got {}",
            dims.join("x")
        ));
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

/// `v` (rank `R`, at most 5) led by `lead`s to rank 5.
fn led<const R: usize>(v: [i64; R], lead: i64) -> [i64; 5] {
    let mut out = [lead; 5];
    out[5 - R..].copy_from_slice(&v);
    out
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
        addressable(
            shape,
            [row_stride, 1],
            bytes,
            (src.misalignment(16) * bytes) as u64,
        )?;
        Self::new_nd(src, shape, [row_stride, 1], boxed, mode)
    }

    /// The map of the tensor of rank `R` (2 to 5) at `src` of `shape` and `stride` (elements,
    /// outermost first, the last 1), moved in boxes of `boxed` laid out by `mode`. `Err` names
    /// the condition the copy engine's encoder would refuse ([`addressable_nd`],
    /// [`check_box_nd`]).
    pub fn new_nd<const R: usize>(
        src: HostMem<T>,
        shape: [i64; R],
        stride: [i64; R],
        boxed: [i64; R],
        mode: SwizzleMode,
    ) -> Result<Self, String> {
        let bytes = std::mem::size_of::<T>() as i64;
        let origin = (src.misalignment(16) * bytes) as u64;
        addressable_nd(&shape, &stride, bytes, origin)?;
        check_box_nd(&boxed, bytes, mode)?;
        let sw = mode.swizzle(8).map_err(|e| e.to_string())?;
        Ok(SimTensorMap {
            src: Some(src),
            rank: R,
            shape: led(shape, 1),
            stride: led(stride, 0),
            boxed: led(boxed, 1),
            sw,
        })
    }

    /// The map a kernel's parameters carry where the host built none (the GPU's null
    /// `CUtensorMap` pointer): [`TensorMap::present`] is `false`, and a copy through it faults.
    pub fn absent() -> Self {
        SimTensorMap {
            src: None,
            rank: 2,
            shape: [0; 5],
            stride: [0; 5],
            boxed: [0; 5],
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
        self.boxed.iter().product::<i64>() as usize * std::mem::size_of::<T>()
    }

    /// The shared byte address of the box's byte `i` (innermost dimension first) for a box at
    /// `dst`: the mode's swizzle on the address.
    fn place(&self, dst: usize, i: usize) -> usize {
        self.sw.apply((dst + i) as i64) as usize
    }

    /// The box at `at` (rank `R`, the map's: else a fault naming `what` at `site`): each of its
    /// elements in order (innermost dimension first), as its offset in the tensor where it lies
    /// inside it.
    fn elements<const R: usize>(
        &self,
        at: [i64; R],
        what: &str,
        site: &Location,
    ) -> Vec<Option<i64>> {
        if R != self.rank {
            fault(format!(
                "{what} at {site}: {R} coordinates for a tensor map of rank {}",
                self.rank
            ));
        }
        let at = led(at, 0);
        let n = self.boxed.iter().product::<i64>();
        (0..n)
            .map(|mut i| {
                let mut off = 0;
                for k in (0..5).rev() {
                    let x = at[k] + i % self.boxed[k];
                    i /= self.boxed[k];
                    if !(0..self.shape[k]).contains(&x) {
                        return None;
                    }
                    off += x * self.stride[k];
                }
                Some(off)
            })
            .collect()
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
    unsafe fn load_box<T: Copy, const R: usize>(
        &self,
        map: &SimTensorMap<T>,
        at: [i64; R],
        bar: &Self,
        mask: u16,
    ) {
        let site = Location::caller();
        let bar = bar.mbarrier("a TMA load's mbarrier");
        let src = map.src("a TMA load", site);
        let bytes = map.box_bytes();
        let dst = self.box_at(bytes, "a TMA load");
        let eb = std::mem::size_of::<T>();
        let mut box_bytes = vec![0u8; bytes];
        for (e, off) in map.elements(at, "a TMA load", site).into_iter().enumerate() {
            if let Some(off) = off {
                let v = src.advance(off).read();
                std::ptr::copy_nonoverlapping(
                    &v as *const T as *const u8,
                    box_bytes[e * eb..].as_mut_ptr(),
                    eb,
                );
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

    unsafe fn tma_load<T: Copy, const R: usize>(
        &self,
        map: &SimTensorMap<T>,
        at: [i64; R],
        bar: &Self,
    ) {
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

    unsafe fn tma_store<T: Copy, const R: usize>(&self, map: &SimTensorMap<T>, at: [i64; R]) {
        self.own("a TMA store");
        let site = Location::caller();
        let src = map.src("a TMA store", site);
        let dst = self.box_at(map.box_bytes(), "a TMA store");
        let eb = std::mem::size_of::<T>();
        // the elements inside the tensor, which the engine stores: their shared byte addresses
        // and tensor offsets
        let inside: Vec<(usize, i64)> = map
            .elements(at, "a TMA store", site)
            .into_iter()
            .enumerate()
            .filter_map(|(e, off)| off.map(|o| (map.place(dst, e * eb), o)))
            .collect();
        let bytes: Vec<usize> = inside.iter().map(|x| x.0).collect();
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
        for (i, off) in inside {
            let v = current(|b, _| {
                let s = b.smem[self.rank()].borrow();
                (s.bytes(i, eb).as_ptr() as *const T).read_unaligned()
            });
            src.advance(off).write(v);
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
