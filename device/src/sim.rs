//! The host's side of [`crate::sync`] (every target but `nvptx64`): a kernel's thread asks the
//! simulated GPU that runs it (`host::sim`, installed with [`install`]) for a barrier, a shuffle
//! or a vote, and gets the PTX ISA's result once every thread it waits for has asked too.

use core::cell::Cell;
use core::panic::Location;

/// A shuffle's mode (`shfl.sync.<mode>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shfl {
    /// `bfly`: lane `lane ^ arg`.
    Bfly,
    /// `idx`: lane `arg % 32`.
    Idx,
    /// `up`: lane `lane - arg`, the lane's own value below lane 0.
    Up,
    /// `down`: lane `lane + arg`, the lane's own value past lane 31.
    Down,
}

/// A vote's mode (`vote.sync.<mode>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vote {
    /// `ballot.b32`: bit `i` for lane `i`'s predicate.
    Ballot,
    /// `any.pred`: 1 where any lane's predicate holds.
    Any,
    /// `all.pred`: 1 where every lane's predicate holds.
    All,
}

/// What a thread waits for with the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sync {
    /// `bar.sync id, threads`; `threads == 0`: every thread of the block.
    Barrier {
        /// The barrier (0 is `__syncthreads`'s).
        id: u32,
        /// Threads it waits for (0: the block's).
        threads: u32,
    },
    /// `bar.arrive id, threads`: an arrival at a named barrier without waiting.
    BarrierArrive {
        /// The barrier (1 to 15).
        id: u32,
        /// Threads the barrier completes with.
        threads: u32,
    },
    /// `barrier.cluster.arrive` then `barrier.cluster.wait`: every thread of every block of the
    /// cluster.
    ClusterBarrier,
    /// `bar.warp.sync 0xffffffff`.
    Warp,
    /// `shfl.sync.<mode>.b32 value, arg` over the full warp.
    Shfl {
        /// The mode.
        mode: Shfl,
        /// This lane's value.
        value: u32,
        /// The lane operand (`b`).
        lane: u32,
    },
    /// `vote.sync.<mode>` over the full warp.
    Vote {
        /// The mode.
        mode: Vote,
        /// This lane's predicate.
        pred: bool,
    },
    /// `ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16` over the full warp: this lane's row
    /// (the 16 bytes at its address, read by the lane), and where its four result words go.
    Ldmatrix {
        /// `.trans`.
        trans: bool,
        /// The lane's row of 8 16-bit elements.
        row: [u32; 4],
        /// The lane's four result words: the calling thread's, valid while it waits.
        out: *mut [u32; 4],
    },
    /// `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32` over the full warp.
    Mma {
        /// `bf16` operands (else `f16`).
        bf16: bool,
        /// The lane's registers: `a` (4 words), `b` (2 words), then `c` (4 `f32`s' bits), which
        /// receive `d`: the calling thread's, valid while it waits.
        regs: *mut [u32; 10],
    },
    /// `setmaxnreg.{inc,dec}.sync.aligned.u32 regs` over the thread's warpgroup (128 threads).
    SetMaxNReg {
        /// `.inc` (else `.dec`).
        inc: bool,
        /// The registers per thread it sets.
        regs: u32,
    },
    /// `mbarrier.try_wait.parity` until it succeeds: the phase of parity `parity` of the
    /// mbarrier at shared byte `bar` has completed.
    MbarWait {
        /// The barrier's byte offset in the block's shared memory.
        bar: u32,
        /// The phase's parity (0 or 1).
        parity: u32,
    },
    /// `wgmma.fence.sync.aligned` over the thread's warpgroup.
    WgmmaFence,
    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}` over the thread's warpgroup, B
    /// from shared memory through its descriptor, A from shared memory too (`_SS`) or from the
    /// threads' registers (`_RS`), `N = 2 values`.
    Wgmma {
        /// A's descriptor (`64 x 16`); 0 where A is in registers.
        a: u64,
        /// A in registers (`_RS`): the thread's four words of the `64 x 16` tile (layout-core's
        /// `GMMA_A_REG_64X16`, value `2 i` in word `i`'s low half, `2 i + 1` in its high half);
        /// `None` where A is in shared memory.
        a_regs: Option<[u32; 4]>,
        /// B's descriptor (`N x 16`).
        b: u64,
        /// A's and B's major-ness (`imm-trans-a`, `imm-trans-b`): M- or N-major where true,
        /// K-major where false.
        mn_major: [bool; 2],
        /// `bf16` operands (else `f16`).
        bf16: bool,
        /// Add to the accumulators (else overwrite them: scale-d 0).
        accumulate: bool,
        /// Accumulators per thread (`N / 2`).
        values: u32,
        /// The thread's accumulators: the calling thread's, which it leaves in place (neither
        /// read nor written) until a `wgmma.wait_group` covers this wgmma.
        acc: *mut f32,
    },
    /// `wgmma.commit_group.sync.aligned` over the thread's warpgroup.
    WgmmaCommit,
    /// `wgmma.wait_group.sync.aligned n` over the thread's warpgroup: all but its `n` most
    /// recent groups of wgmmas are complete.
    WgmmaWait {
        /// Groups that may stay in flight.
        n: u32,
    },
    /// `cp.async.bulk.wait_group[.read] n` of this thread: all but its `n` most recent groups of
    /// bulk copies (TMA stores) have read their shared-memory sources (`read`) or completed.
    BulkWait {
        /// Groups that may stay in flight.
        n: u32,
        /// `.read`.
        read: bool,
    },
}

/// A simulated GPU running a block's threads: what [`request`] reaches.
pub trait Simulator {
    /// The running thread's `op`, called at `site`: returns once every thread `op` waits for has
    /// asked too, with the result (a shuffle's value, a vote's bits; 0 for a barrier).
    fn sync(&self, op: Sync, site: &'static Location<'static>) -> u32;
}

std::thread_local! {
    static CURRENT: Cell<Option<*const (dyn Simulator + 'static)>> = const { Cell::new(None) };
}

/// Makes `sim` the simulator that [`request`] reaches on this OS thread until the returned guard
/// is dropped (the one before it is then restored).
///
/// # Safety
/// `sim` must outlive the guard.
pub unsafe fn install(sim: &dyn Simulator) -> Installed {
    // SAFETY: the caller keeps `sim` alive while it is installed; only the lifetime is erased
    let sim: *const (dyn Simulator + 'static) = core::mem::transmute(sim as *const dyn Simulator);
    Installed(CURRENT.with(|c| c.replace(Some(sim))))
}

/// The guard of [`install`].
pub struct Installed(Option<*const (dyn Simulator + 'static)>);

impl Drop for Installed {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

/// The running thread's `op`, performed by the installed simulator; a kernel called outside one
/// panics (a device intrinsic has no meaning on the host alone).
#[track_caller]
pub fn request(op: Sync) -> u32 {
    let site = Location::caller();
    match CURRENT.with(Cell::get) {
        // SAFETY: `install`'s caller keeps it alive while installed
        Some(sim) => unsafe { (*sim).sync(op, site) },
        None => panic!("{op:?} at {site} outside the simulated GPU (host::sim runs kernels)"),
    }
}
