//! `cluster_check`: a cluster of two blocks that exchange values through distributed shared
//! memory after `cluster_sync`, receive one box that the copy engine multicasts into both, and
//! signal each other's mbarriers — the cluster pieces of the kernel model, on the GPU and on the
//! simulated GPU alike.
//!
//! Thread `t` of block `bx` writes `100 bx + t` to its block's shared memory; after the cluster
//! barrier it reads thread `t`'s value of the partner block (`map_rank`) into `y[bx, t]`. Rank 0's
//! thread 0 multicasts the box of `x` at `(0, 0)` to both blocks; each block's thread 0 arms its
//! own mbarrier with the box's bytes, and every thread copies the box to `z[bx, ..]` after the
//! wait. Then each block's thread 0 arrives on the partner's `done` mbarrier, each block waits for
//! its own, and the cluster meets again before any block leaves (its shared memory is read by the
//! partner until then).
//!
//! `FAULT` selects a broken copy for the simulated GPU's tests (0: none): 1 meets at the block's
//! barrier only before reading the partner's memory, 2 multicasts to rank 0 only, 3 waits on the
//! partner's mbarrier.

// the prelude a user's kernel crate starts from (on nvptx it holds the device functions and
// `sync`'s collectives: one `cluster_sync`, not two)
use tessel_device::prelude::*;

/// Threads per block.
pub const THREADS: i64 = 128;
/// Blocks per cluster.
pub const CLUSTER: i64 = 2;
/// The multicast box: `ROWS x COLS` `f32`s.
pub const ROWS: i64 = 8;
/// See [`ROWS`].
pub const COLS: i64 = 32;
/// Elements of the box.
pub const BOX: i64 = ROWS * COLS;

/// The parameters: the box's tensor map (`T`), the outputs (engine `E`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ClusterParams<T, E> {
    /// The tensor the box is read from (at least `ROWS x COLS`).
    pub x: T,
    /// Per block, the partner's values: `blocks x THREADS`.
    pub y: FlatTensor<E, 2>,
    /// Per block, the box it received: `blocks x BOX`.
    pub z: FlatTensor<E, 2>,
}

/// The kernel; `FAULT` a broken copy (see the module).
pub struct ClusterCheck<const FAULT: u8 = 0>;

impl<const FAULT: u8> Kernel for ClusterCheck<FAULT> {
    const CLUSTER: i64 = CLUSTER;
    type Shared = f32;
    type Params<M: Space> = ClusterParams<M::TensorMap<f32>, M::Global<f32>>;

    #[inline(always)]
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        let [blocks, n] = p.y.shape();
        if blocks < 1 || blocks % CLUSTER != 0 || n != THREADS || p.z.shape() != [blocks, BOX] {
            return Err("cluster_check needs y of blocks x 128 and z of blocks x 256, blocks a multiple of 2");
        }
        Ok(p)
    }

    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem: i64) -> Geometry {
        Geometry {
            grid: [p.y.shape()[0], 1],
            threads: THREADS,
            // 128 bytes to align the box
            smem_bytes: 128 + 4 * (BOX + THREADS) + 16,
        }
    }

    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<f32>>) {
        let (t, rank, bx) = (c.thread, c.rank, c.block[0]);
        let boxed = c
            .smem
            .advance(((128 - c.smem.addr() % 128) % 128 / 4) as i64);
        let mine = boxed.advance(BOX);
        let (full, done) = (mine.advance(THREADS), mine.advance(THREADS + 2));
        mine.advance(t).write((100 * bx + t) as f32); // site: WRITE
        if t == 0 {
            full.mbarrier_init(1);
            done.mbarrier_init(1);
        }
        if FAULT == 1 {
            sync_threads();
        } else {
            cluster_sync();
        }
        // the partner's value of this thread, through distributed shared memory
        let theirs = mine.map_rank(1 - rank).advance(t).read(); // site: DSM_READ
        p.y.at([bx, t]).write(theirs);
        if t == 0 {
            p.x.acquire();
            full.mbarrier_arrive(4 * BOX as u32);
            if rank == 0 {
                let mask = if FAULT == 2 { 0b01 } else { 0b11 };
                boxed.tma_load_multicast(&p.x, [0, 0], &full, mask);
            }
        }
        full.mbarrier_wait(0); // site: FULL_WAIT
        let mut i = t;
        while i < BOX {
            p.z.at([bx, i]).write(boxed.advance(i).read());
            i += THREADS;
        }
        // each block tells the other it is done with the box
        if t == 0 {
            done.mbarrier_arrive_cluster(1 - rank);
        }
        if FAULT == 3 {
            done.map_rank(1 - rank).mbarrier_wait(0); // site: REMOTE_WAIT
        } else {
            done.mbarrier_wait(0);
        }
        // no block leaves while its partner may still read its memory
        cluster_sync();
    }
}
