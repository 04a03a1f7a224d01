//! The vectorized copy: `dst(i) = src(i)` for the `n` elements of two vectors `n:1`, any `n`.
//!
//! Written as seed 002 reads: the tiled copy [`VecCopy::COPY`] (256 threads in a row, `VEC`
//! elements per 128-bit atom) over tiles of [`VecCopy::TILER`] (`A` copy tiles along the
//! vector: `A` atoms per thread, 2, 4, 8 or 16); block `b` takes tiles `b, b + grid, ...` (by
//! default the grid has a block per tile). For each tile: `local_tile` of the source,
//! the destination and the identity tensor, the thread's `partition_S` / `partition_D` of each,
//! then the copy — a tile wholly inside the vector atom by atom, all loads in flight before the
//! first store; the ragged last tile element by element, each predicated by its coordinate
//! (`elem_less`).

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::mem::{Mem, Space, V4};
use layout_core::{
    const_ok, make_coord_tensor, make_tiled_copy_tv, tiles_of, FlatTensor, Layout, TiledCopy,
    TvCoords,
};

/// Threads per block.
pub const THREADS: i64 = 256;
/// Copy tiles per tile (atoms per thread and tile) of `copy_<T>`: 2 loads of 16 bytes in flight
/// per thread (`copy_a4_<T>`, `copy_a8_<T>` and `copy_a16_<T>` have 4, 8 and 16).
pub const ATOMS: i64 = 2;
/// Blocks resident per multiprocessor: the launch asks for shared memory it does not use so that
/// no more fit. With [`ATOMS`] and a block per tile, 6 (48 KiB of loads in flight per
/// multiprocessor) ran fastest of the tuner's candidates on the H200 and within 0.2 points of the
/// fastest on the H100 (`docs/perf.md`).
pub const RESIDENT: i64 = 6;

/// The shared memory (unused) a copy block asks for so that `resident` blocks fit on a
/// multiprocessor whose blocks may have `smem_limit` bytes, and one more does not: a
/// `resident`-th of the limit less 4 KiB, which also makes them need the largest shared-memory
/// carveout (the smallest L1: 4 blocks of 46 KB, which fit a smaller one, ran 0.8 points slower
/// on the H200 than 4 of 50-56 KB, `docs/perf.md`).
pub const fn resident_smem(smem_limit: i64, resident: i64) -> i64 {
    let r = if resident < 1 { 1 } else { resident };
    let s = smem_limit / r - 4096;
    if s < 0 {
        0
    } else {
        s
    }
}

/// The copy's parameters, one by-value kernel parameter: two vectors `n:1` of the same `n`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CopyParams<E> {
    /// The source.
    pub src: FlatTensor<E, 1>,
    /// The destination.
    pub dst: FlatTensor<E, 1>,
}

/// The copy's layouts for elements of type `T` (2 or 4 bytes), `A` atoms per thread and tile
/// (2, 4, 8 or 16).
pub struct VecCopy<T, const A: i64 = ATOMS>(core::marker::PhantomData<T>);

impl<T: Copy, const A: i64> VecCopy<T, A> {
    /// Elements per 128-bit access.
    pub const VEC: i64 = 16 / core::mem::size_of::<T>() as i64;
    /// `make_tiled_copy_tv(256:1, VEC:1, 128 bits)`: thread `t`'s atom is elements
    /// `VEC t .. VEC t + VEC - 1` of a `256 VEC` copy tile.
    pub const COPY: TiledCopy = const_ok!(make_tiled_copy_tv(
        &const_ok!(Layout::int(THREADS, 1)),
        &const_ok!(Layout::int(Self::VEC, 1)),
        128,
        8 * core::mem::size_of::<T>() as i64
    ));
    /// Elements per tile: `A` copy tiles.
    pub const TILER: [i64; 1] = [THREADS * Self::VEC * A];
    /// Elements per tile.
    pub const TILE: i64 = Self::TILER[0];
    /// The copy's partition of a tile, as coordinates.
    pub const PLAN: TvCoords<1> = const_ok!(TvCoords::new(&Self::COPY, Self::TILER));

    /// Blocks that give every block work for `n` elements, at most `max_blocks`.
    pub const fn grid(n: i64, max_blocks: i64) -> i64 {
        let [tiles] = tiles_of([n], Self::TILER);
        if tiles < 1 {
            1
        } else if tiles < max_blocks {
            tiles
        } else {
            max_blocks
        }
    }

    /// What thread `t` of block `block` (of `grid`) does.
    ///
    /// # Safety
    /// `src` and `dst` must be vectors `n:1` of the same `n` in memory their engines reach, the
    /// source 16-byte aligned where the destination is; launch with [`THREADS`] threads.
    #[inline(always)]
    pub unsafe fn copy<S: Mem<T>, D: Mem<T>>(
        src: &FlatTensor<S, 1>,
        dst: &FlatTensor<D, 1>,
        block: i64,
        grid: i64,
        t: i64,
    ) {
        let () = Self::_ONE_ATOM_PER_ITER;
        let id = make_coord_tensor(src.shape());
        let thr = Self::PLAN.get_slice(t);
        let [tiles] = src.layout().tiles(Self::TILER);
        let mut tile = block;
        while tile < tiles {
            let c = [tile];
            let t_s = thr.partition_S(&src.local_tile(Self::TILER, c));
            let t_d = thr.partition_D(&dst.local_tile(Self::TILER, c));
            let c_tile = id.local_tile(Self::TILER, c);
            if c_tile.covers(Self::TILER) {
                let mut v = [V4([0; 4]); 16];
                unroll16!(a => if a < A { v[a as usize] = t_s.at(a * Self::VEC).read_v4() });
                unroll16!(a => if a < A { t_d.at(a * Self::VEC).write_v4(v[a as usize]) });
            } else {
                let t_c = thr.partition_S(&c_tile);
                let mut v = 0;
                while v < t_s.size() {
                    if t_c.elem_less(v) {
                        t_d.at(v).write(t_s.at(v).read());
                    }
                    v += 1;
                }
            }
            tile += grid;
        }
    }

    /// A thread's values of a tile are `A` atoms of `VEC` (what the vector path moves), at most
    /// 16 (what `unroll16` covers).
    const _ONE_ATOM_PER_ITER: () = assert!(
        Self::PLAN.values() == A * Self::VEC && Self::PLAN.atom_vals() == Self::VEC && A <= 16
    );
}

impl<T: Copy, const A: i64> Kernel for VecCopy<T, A> {
    type Shared = ();
    type Params<M: Space> = CopyParams<M::Global<T>>;

    /// Source and destination of one length, unit strides (the atoms are 128-bit accesses).
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        if p.src.shape() != p.dst.shape() {
            return Err("copy needs a source and a destination of the same length");
        }
        match (
            p.src.with_static_stride(0, 1),
            p.dst.with_static_stride(0, 1),
        ) {
            (Some(src), Some(dst)) => Ok(CopyParams { src, dst }),
            _ => Err("copy needs unit strides (n:1) for its 128-bit accesses"),
        }
    }

    /// A block per tile ([`VecCopy::grid`] without a cap: on the H100 and the H200 2 points
    /// faster than 16 blocks per multiprocessor walking several tiles each), [`RESIDENT`] of them
    /// at a time on a multiprocessor: each asks for shared memory it does not use
    /// ([`resident_smem`]).
    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, smem_limit: i64) -> Geometry {
        Geometry {
            grid: [Self::grid(p.src.shape()[0], i64::MAX), 1],
            threads: THREADS,
            smem_bytes: resident_smem(smem_limit, RESIDENT),
        }
    }

    /// `dst = src` ([`VecCopy::copy`]).
    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        Self::copy(&p.src, &p.dst, c.block[0], c.grid[0], c.thread);
    }
}

/// Threads per block of the bulk copy (`bulk_copy`): one warp; its first thread drives the copy
/// engine, and all of them copy the vector's ragged end.
pub const BULK_THREADS: i64 = 32;

/// The bulk copy's parameters: the two vectors, the chunk and the stages.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BulkCopyParams<E> {
    /// The source, `n:1`, 16-byte aligned.
    pub src: FlatTensor<E, 1>,
    /// The destination, `n:1` of the same `n`, 16-byte aligned.
    pub dst: FlatTensor<E, 1>,
    /// Elements per chunk: one bulk load and one bulk store, a multiple of 16 bytes.
    pub chunk: i64,
    /// Chunks a block holds in shared memory at once (loads in flight, and the store draining):
    /// at least 2.
    pub stages: i64,
}

impl<E> BulkCopyParams<E> {
    /// Bytes of shared memory a block needs: `stages` chunks of `bytes`-byte elements, then one
    /// 8-byte barrier per stage.
    pub const fn smem_bytes(&self, bytes: i64) -> i64 {
        self.stages * (self.chunk * bytes + 8)
    }
}

/// The bulk copy (sm_90; `bulk_copy_<T>`): the copy engine moves the vector chunk by chunk
/// through shared memory, no element through a register — CuTe's `SM90_BULK_COPY_G2S` then
/// `SM90_BULK_COPY_S2G` on each tile of `chunk` elements.
///
/// The vector's whole 16-byte atoms are tiled by `(chunk)`; block `b` takes tiles `b, b + grid,
/// ...`. Its first thread keeps `stages` tiles in shared memory: it issues the first `stages`
/// loads, each counted on its stage's barrier; for each tile, in order, it waits for the load and
/// issues the store; once the previous tile's store has read its stage, it loads the tile
/// `stages` ahead of that one into it. The ragged end (fewer than 16 bytes) goes element by
/// element, by block 0's threads.
///
/// Post-condition: `dst(i) == src(i)` for every `i < n`; nothing else is written.
///
/// # Safety
/// `p` from the host launcher: both vectors 16-byte aligned in global memory, `chunk * size_of::<T>()`
/// a positive multiple of 16 below 2^32, `stages >= 2`; [`BULK_THREADS`] threads per block and
/// `p.smem_bytes(size_of::<T>())` bytes of dynamic shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn bulk_copy<T: Copy>(p: BulkCopyParams<crate::mem::Gmem<T>>) {
    use crate::device::{
        block_x, bulk_commit, bulk_load, bulk_store, bulk_wait, bulk_wait_read, dynamic_smem,
        grid_x, mbarrier_arrive_expect_tx, mbarrier_init, mbarrier_wait, smem_addr, thread_x, trap,
    };
    let bytes = core::mem::size_of::<T>() as i64;
    let [n] = p.src.shape();
    let atom = 16 / bytes;
    let aligned = p.src.engine().aligned16() && p.dst.engine().aligned16();
    if !aligned || p.chunk < 1 || (p.chunk * bytes) % 16 != 0 || p.stages < 2 {
        trap()
    }
    // the ragged end: elements past the last whole atom
    let whole = n - n % atom;
    if block_x() == 0 {
        let mut e = whole + thread_x();
        while e < n {
            p.dst.at([e]).write(p.src.at([e]).read());
            e += BULK_THREADS;
        }
    }
    if thread_x() != 0 {
        return;
    }
    let tiler = [p.chunk];
    let [tiles] = tiles_of([whole], tiler);
    let id = make_coord_tensor([whole]);
    let s0 = smem_addr(dynamic_smem::<u8>());
    let stage = |s: i64| s0 + (s * p.chunk * bytes) as u32;
    let bar = |s: i64| s0 + (p.stages * p.chunk * bytes + 8 * s) as u32;
    let (b, grid) = (block_x(), grid_x());
    // this block's tiles: b + k grid for k < mine
    let mine = if b < tiles {
        (tiles - b + grid - 1) / grid
    } else {
        0
    };
    // tile k's bytes: a whole chunk, or what is left of the atoms
    let len = |k: i64| {
        let c = id.local_tile(tiler, [b + k * grid]);
        let left = whole - c.origin()[0];
        (if left < p.chunk { left } else { p.chunk } * bytes) as u32
    };
    let load = |k: i64, s: i64| {
        mbarrier_arrive_expect_tx(bar(s), len(k));
        let g = p.src.local_tile(tiler, [b + k * grid]).engine();
        bulk_load(stage(s), g.0 as *const u8, len(k), bar(s));
    };
    let mut s = 0;
    while s < p.stages {
        mbarrier_init(bar(s), 1);
        if s < mine {
            load(s, s);
        }
        s += 1;
    }
    let mut k = 0;
    while k < mine {
        let s = k % p.stages;
        mbarrier_wait(bar(s), ((k / p.stages) & 1) as u32);
        let g = p.dst.local_tile(tiler, [b + k * grid]).engine();
        bulk_store(g.0 as *mut u8, stage(s), len(k));
        bulk_commit();
        // the previous tile's stage, once its store has read it, takes the tile `stages` on
        let next = k - 1 + p.stages;
        if k >= 1 && next < mine {
            bulk_wait_read::<1>();
            load(next, (k - 1) % p.stages);
        }
        k += 1;
    }
    bulk_wait::<0>();
}
