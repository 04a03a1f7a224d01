//! The vectorized copy: `dst(i) = src(i)` for the `n` elements of two vectors `n:1`, any `n`.
//!
//! Written as seed 002 reads: the tiled copy [`VecCopy::COPY`] (256 threads in a row, `VEC`
//! elements per 128-bit atom) over tiles of [`VecCopy::TILER`] (`ITERS` copy tiles along the
//! vector); block `b` takes tiles `b, b + grid, ...`. For each tile: `local_tile` of the source,
//! the destination and the identity tensor, the thread's `partition_S` / `partition_D` of each,
//! then the copy — a tile wholly inside the vector atom by atom, all loads in flight before the
//! first store; the ragged last tile element by element, each predicated by its coordinate
//! (`elem_less`).

use crate::ctx::{Collective, Ctx, Geometry, Kernel};
use crate::mem::{AsyncCopy, Mem, V4};
use layout_core::{
    const_ok, make_coord_tensor, make_tiled_copy_tv, tiles_of, Engine, FlatTensor, Layout,
    TiledCopy, TvCoords,
};

/// Threads per block.
pub const THREADS: i64 = 256;
/// Copy tiles per tile (atoms per thread and tile): 8 loads of 16 bytes in flight per thread.
pub const ITERS: i64 = 8;
const _: () = assert!(ITERS == 8, "unroll8 covers the atoms");
/// Blocks resident per multiprocessor: the launch asks for shared memory it does not use so that
/// no more fit (fewer, fuller streams of accesses ran faster than 8 blocks of 4 atoms per thread:
/// `docs/perf.md`).
pub const RESIDENT: i64 = 4;

/// The copy's parameters, one by-value kernel parameter: two vectors `n:1` of the same `n`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CopyParams<E> {
    /// The source.
    pub src: FlatTensor<E, 1>,
    /// The destination.
    pub dst: FlatTensor<E, 1>,
}

/// The copy's layouts for elements of type `T` (2 or 4 bytes).
pub struct VecCopy<T>(core::marker::PhantomData<T>);

impl<T: Copy> VecCopy<T> {
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
    /// Elements per tile: `ITERS` copy tiles.
    pub const TILER: [i64; 1] = [THREADS * Self::VEC * ITERS];
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
    pub unsafe fn thread<S: Mem<T>, D: Mem<T>>(
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
                let mut v = [V4([0; 4]); ITERS as usize];
                unroll8!(a => v[a as usize] = t_s.at(a * Self::VEC).read_v4());
                unroll8!(a => t_d.at(a * Self::VEC).write_v4(v[a as usize]));
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

    /// A thread's values of a tile are `ITERS` atoms of `VEC` (what the vector path moves).
    const _ONE_ATOM_PER_ITER: () =
        assert!(Self::PLAN.values() == ITERS * Self::VEC && Self::PLAN.atom_vals() == Self::VEC);
}

impl<T: Copy> Kernel for VecCopy<T> {
    type T = T;
    type Shared = ();
    type Params<E: Engine> = CopyParams<E>;
    const COLLECTIVES: &'static [Collective] = &[];

    /// Source and destination of one length, unit strides (the atoms are 128-bit accesses).
    fn prepare<E: Engine>(p: CopyParams<E>) -> Result<CopyParams<E>, &'static str> {
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

    /// Up to 16 blocks per multiprocessor, each walking its tiles; [`RESIDENT`] of them at a time
    /// on one. Each block asks for shared memory it does not use: a quarter of what a block may
    /// have, less 4 KiB, so that 4 blocks fit in the multiprocessor's shared memory and a fifth
    /// does not, and so that the 4 need the largest shared-memory carveout (the smallest L1):
    /// with less (46 KB, which 4 blocks fit in a smaller carveout) the H200 measured 0.8 points
    /// slower (`docs/perf.md`).
    fn geometry<E: Engine>(p: &CopyParams<E>, sms: i64, smem_limit: i64) -> Geometry {
        Geometry {
            grid: [Self::grid(p.src.shape()[0], 16 * sms), 1],
            threads: THREADS,
            smem_bytes: (smem_limit / RESIDENT - 4096).max(0),
        }
    }

    /// The one step: `dst = src` ([`VecCopy::thread`]).
    #[inline(always)]
    unsafe fn step<E: Mem<T>, S: Mem<()> + AsyncCopy<E>>(
        _k: usize,
        p: &CopyParams<E>,
        c: &Ctx<S>,
        carry: f32,
    ) -> f32 {
        Self::thread(&p.src, &p.dst, c.block[0], c.grid[0], c.thread);
        carry
    }
}
