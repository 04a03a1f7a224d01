//! The simulated GPU: a kernel's own function ([`Kernel::thread`]) run on the CPU for every
//! thread of every block, as the device would run it, and checked as it runs.
//!
//! Each block's threads are stackful coroutines (`block`) on one OS thread; a barrier, a warp
//! shuffle or a vote suspends a thread until every thread it waits for has arrived, and the
//! result is the PTX ISA's (a warp's butterfly sums add in the device's order, so results are
//! bit-equal). Global memory is host buffers ([`HostMem`]: bounds, alignment, every write
//! counted); shared memory ([`SharedMem`]) keeps each element's last write and reads with their
//! thread, barrier epoch and source site, and `cp.async` copies land at the wait that covers
//! them. Reported, with the sites: shared-memory races (two threads, one writing, no barrier
//! between), reads of unwritten or in-flight shared memory, copies never waited for, deadlocks
//! (every thread's wait), warp operations under divergent lanes, accesses outside a buffer.
//! The order in which runnable threads resume is drawn from a seed ([`Options::seed`]); the
//! report names it, and the same seed replays the same schedule.
//!
//! mbarriers (`mbarrier`) complete their phases on arrivals and transaction bytes as the PTX ISA
//! says, and order what their arrivals published before what their waits read.
//!
//! `ldmatrix` and `mma.sync` are warp operations (`tensor_core`); `setmaxnreg` meets its
//! warpgroup.
//!
//! The async proxy: the copy engine's tiled loads and stores (`tma`, through a
//! [`SimTensorMap`]) and `wgmma` (a warpgroup operation whose descriptors are decoded as the PTX
//! ISA defines them, K- or MN-major, A from shared memory or from the threads' registers) are
//! operations in flight on shared memory. A load lands only when no thread can go on (the latest
//! a GPU could land it), as a write of the copy engine (a clock of its own) released to its
//! mbarrier; a store or a wgmma reads until the wait that covers it. A wgmma's accumulators read
//! NaN from its issue until the `warpgroup_wait` that covers it writes them (the PTX ISA leaves
//! them undefined meanwhile; a chained wgmma onto the same accumulators starts from the results
//! in flight). Reported,
//! with both sites: a touch of a load's box in flight, a write to shared memory a store or wgmma
//! may still read, a store or wgmma reading what threads wrote without `fence_proxy_async`, a
//! wgmma without `warpgroup_arrive` since the warpgroup's last wait, a warpgroup whose threads
//! reach different operations, and a block or thread that ends with any of them in flight.
//!
//! A cluster's blocks (`Kernel::CLUSTER`) run together: one scheduler, one set of clocks, each
//! block's shared-memory shadow and mbarriers, reached through distributed shared memory
//! (`Dsm::map_rank`, `mbarrier_arrive_cluster`) and multicast loads; `cluster_sync` meets them all.
//!
//! What it does not model yet: A's registers of a wgmma written before its wait (they are read
//! at the issue), a `fence_proxy_async` that comes after the barrier that orders the write before the async read
//! (accepted when the fence runs first in the schedule), and races on global memory (only each
//! output element's write count is checked), and the tensor cores' own order and alignment of
//! additions inside an instruction (`mma.sync` and `wgmma` add each one's products exactly, in
//! `f64`, and round once: within the bound, not always the GPU's bits).

mod block;
mod clock;
mod global;
mod mbarrier;
mod schedule;
mod shared;
mod tensor_core;
mod tma;

pub use block::ranges;
pub use global::{written_once, HostMem};
pub use shared::SharedMem;
pub use tma::{addressable, addressable_nd, check_box, check_box_nd, SimTensorMap};

use block::{run_block, BlockState, Fault};
use corosensei::stack::DefaultStack;
use schedule::Schedule;
use std::cell::RefCell;
use std::fmt;
use tessel_gpu::ctx::{Ctx, Geometry, Kernel};
use tessel_gpu::mem::Space;

/// The simulated GPU's memory space: global memory is host buffers ([`HostMem`]), shared memory
/// the block's checked buffer ([`SharedMem`]). A kernel's `Params<Sim>` are what [`launch`] runs.
#[derive(Clone, Copy, Debug)]
pub struct Sim;

impl Space for Sim {
    type Global<T: Copy> = HostMem<T>;
    type Shared<T: Copy> = SharedMem<T>;
    type TensorMap<T: Copy> = SimTensorMap<T>;
}

/// How a launch is simulated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The schedule: the order in which each block's runnable threads resume (0: thread order).
    pub seed: u64,
}

impl Default for Options {
    /// The seed of `TESSEL_SIM_SEED` where it is set (to replay a reported schedule), else 1.
    fn default() -> Self {
        let seed = std::env::var("TESSEL_SIM_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        Options { seed }
    }
}

/// What the simulated GPU found wrong with a launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimError {
    /// The block it happened in.
    pub block: [i64; 2],
    /// The schedule's seed.
    pub seed: u64,
    /// What happened, with the kernel's sites.
    pub message: String,
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "block ({}, {}): {} [schedule seed {}: TESSEL_SIM_SEED={} replays it]",
            self.block[0], self.block[1], self.message, self.seed, self.seed
        )
    }
}

impl std::error::Error for SimError {}

/// Bytes of each coroutine's stack (a thread of a kernel built without optimisation uses tens of
/// KiB; the pages are touched only as used).
const STACK_BYTES: usize = 256 << 10;

std::thread_local! {
    /// Stacks kept from launch to launch: a fresh stack per thread costs a hundred times a resume.
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// Runs kernel `K` over `geometry` on the simulated GPU: every block (every cluster of
/// `K::CLUSTER` blocks, their threads together) in turn, each block with a fresh shared memory of
/// `geometry.smem_bytes` bytes. `p` must be prepared (`K::prepare`), its engines host buffers.
/// `Err` is the first fault found; the buffers then hold what the kernel wrote until it. In a
/// cluster's faults, thread `r * threads + t` is thread `t` of the block of rank `r`.
pub fn launch<K: Kernel>(
    p: &K::Params<Sim>,
    geometry: Geometry,
    options: Options,
) -> Result<(), SimError> {
    let cluster = K::CLUSTER;
    if !(1..=16).contains(&cluster) || geometry.grid[0] % cluster != 0 {
        return Err(SimError {
            block: [0, 0],
            seed: options.seed,
            message: format!(
                "clusters of {cluster} blocks (1 to 16) that do not divide the grid's {} \
                 blocks along x",
                geometry.grid[0]
            ),
        });
    }
    let (threads, blocks) = (geometry.threads as usize, cluster as usize);
    if blocks > 1 && !threads.is_multiple_of(32) {
        return Err(SimError {
            block: [0, 0],
            seed: options.seed,
            message: format!(
                "clusters of blocks of {threads} threads: whole warps (a multiple of 32) only"
            ),
        });
    }
    let elem = std::mem::size_of::<K::Shared>().max(1);
    let elems = geometry.smem_bytes as usize / elem;
    let mut stacks = STACKS.with(|s| std::mem::take(&mut *s.borrow_mut()));
    while stacks.len() < threads * blocks {
        stacks.push(DefaultStack::new(STACK_BYTES).expect("a coroutine stack"));
    }
    let mut state = BlockState::default();
    let mut schedule = Schedule::new(options.seed);
    let mut smem = vec![K::Shared::default(); elems.max(1) * blocks];
    global::new_launch();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let base = smem.as_mut_ptr();
        // SAFETY: block r's elements, inside the buffer
        let at = |r: usize| unsafe { base.add(r * elems.max(1)) };
        let bufs: Vec<_> = (0..blocks)
            .map(|r| (at(r) as *mut u8, elems, elem))
            .collect();
        for by in 0..geometry.grid[1] {
            for cx in 0..geometry.grid[0] / cluster {
                let thread = |gt: usize| {
                    let (r, t) = (gt / threads, gt % threads);
                    let c = Ctx {
                        block: [cx * cluster + r as i64, by],
                        grid: geometry.grid,
                        thread: t as i64,
                        rank: r as i64,
                        smem: SharedMem::new(at(r), elems, r),
                    };
                    // SAFETY: host memory; every access is checked and faults out of range
                    unsafe { K::thread::<Sim>(p, &c) }
                };
                run_block(
                    (&mut state, [cx * cluster, by]),
                    &mut stacks[..threads * blocks],
                    &mut schedule,
                    &bufs,
                    &thread,
                );
            }
        }
    }));
    STACKS.with(|s| *s.borrow_mut() = stacks);
    // in a cluster, say how its threads are numbered
    let numbering = match blocks {
        1 => String::new(),
        _ => format!(
            " (the cluster of blocks {}..={} of this row: thread {threads} r + t is thread t of \
             the block of rank r)",
            state.block()[0],
            state.block()[0] + cluster - 1
        ),
    };
    result.map_err(|payload| SimError {
        block: state.block(),
        seed: options.seed,
        message: match payload.downcast::<Fault>() {
            Ok(f) => f.0,
            Err(p) => {
                let why = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "a panic".to_string());
                format!("thread {} panicked: {why}", state.running())
            }
        } + &numbering,
    })
}
