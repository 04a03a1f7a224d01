//! What the threads of a block do together: barriers (the block's and named ones), and the warp's
//! shuffles, votes and reductions. Each is one PTX instruction on the device; on the host the
//! simulated GPU (`host::sim`) performs it as the PTX ISA defines it, over the coroutines of the
//! block's threads ([`crate::sim`]), so a kernel calling them runs unchanged in both places and
//! its warp reductions are bit-equal.
//!
//! Every lane of a warp takes part in a warp operation (the full mask, `0xffffffff`); the
//! simulated GPU reports a warp whose lanes do not all reach the same kind of operation (a
//! shuffle under divergent lanes) and a barrier that not every thread it waits for reaches (a
//! deadlock), each with the sites where the threads wait.

#[cfg(target_arch = "nvptx64")]
use core::arch::asm;

#[cfg(not(target_arch = "nvptx64"))]
use crate::sim::{request, Shfl, Sync, Vote};

/// `__syncthreads()` (`bar.sync 0`): every thread of the block arrives before any goes on, and
/// the shared-memory accesses before it are seen by every thread after it. Every thread of the
/// block must reach it; if one does not, the block hangs (the simulated GPU reports the
/// deadlock with each thread's wait).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_threads() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier cannot corrupt memory
    unsafe {
        core::arch::nvptx::_syncthreads()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::Barrier { id: 0, threads: 0 });
}

/// `barrier.cluster.arrive.release` then `barrier.cluster.wait.acquire` (CuTe's
/// `cluster_sync`): every thread of every block of the cluster arrives before any goes on, and
/// their shared-memory accesses (mbarrier initialisations included) before it are seen by every
/// thread of the cluster after it. Every thread of the cluster must reach it (the simulated GPU
/// reports one that does not, as a deadlock).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn cluster_sync() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier cannot corrupt memory
    unsafe {
        crate::device::barrier_cluster()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::ClusterBarrier);
}

/// `bar.sync id, threads`: waits until `threads` threads (a multiple of 32, whole warps) have
/// arrived at named barrier `id` (1..16; 0 is [`sync_threads`]'s); their shared-memory accesses
/// before it are seen by each other after it.
///
/// # Safety
/// Exactly `threads` threads of the block use barrier `id` each time, and none uses it with
/// another count meanwhile (the simulated GPU reports either).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn named_barrier(id: u32, threads: u32) {
    #[cfg(target_arch = "nvptx64")]
    asm!("bar.sync {i}, {n};", i = in(reg32) id, n = in(reg32) threads,
         options(nostack, preserves_flags));
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::Barrier { id, threads });
}

/// `bar.arrive id, threads`: counts this thread's arrival at named barrier `id` and goes on
/// without waiting; the barrier completes when `threads` threads have arrived there, by this or
/// by [`named_barrier`], and releases those that wait. The producer's side of a producer and
/// consumer pair (FlashAttention-3's warpgroups taking turns at the tensor cores): the arriving
/// threads' shared-memory accesses before it are seen by the waiting threads after it.
///
/// # Safety
/// As [`named_barrier`]; every arrival is matched by a completion of the barrier before the
/// block ends (the simulated GPU reports an arrival left over).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn named_barrier_arrive(id: u32, threads: u32) {
    #[cfg(target_arch = "nvptx64")]
    asm!("bar.arrive {i}, {n};", i = in(reg32) id, n = in(reg32) threads,
         options(nostack, preserves_flags));
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::BarrierArrive { id, threads });
}

/// `__syncwarp()` (`bar.warp.sync 0xffffffff`): every lane of the warp arrives, and their
/// memory accesses before it are seen by each other after it.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn sync_warp() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier
    unsafe {
        asm!(
            "bar.warp.sync 0xffffffff;",
            options(nostack, preserves_flags)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::Warp);
}

/// Declares `setmaxnreg.<dir>.sync.aligned.u32 N` as a function of `N`.
macro_rules! setmaxnreg {
    ($(#[$doc:meta])* $name:ident, $dir:literal, $inc:literal) => {
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name<const N: u32>() {
            const {
                assert!(
                    N >= 24 && N <= 256 && N.is_multiple_of(8),
                    "setmaxnreg takes 24 to 256, a multiple of 8"
                )
            };
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: a register-budget change of the whole warpgroup; no memory is touched
            unsafe {
                asm!(concat!("setmaxnreg.", $dir, ".sync.aligned.u32 {n};"), n = const N,
                     options(nostack, preserves_flags))
            };
            #[cfg(not(target_arch = "nvptx64"))]
            request(Sync::SetMaxNReg { inc: $inc, regs: N });
        }
    };
}

setmaxnreg!(
    /// `setmaxnreg.inc.sync.aligned.u32 N` (sm_90a): every thread of the calling warpgroup (128
    /// threads, warps `4k .. 4k + 4`) raises its register budget to `N` (24 to 256, a multiple
    /// of 8), waiting until the register file has them. Every thread of the warpgroup executes
    /// the same one (the simulated GPU reports a warpgroup whose threads disagree or do not all
    /// arrive); the kernel's entry needs `.maxntid` (`ptx_directives!`) for `ptxas` to budget it.
    setmaxnreg_inc, "inc", true
);
setmaxnreg!(
    /// `setmaxnreg.dec.sync.aligned.u32 N` (sm_90a): every thread of the calling warpgroup
    /// lowers its register budget to `N` (24 to 256, a multiple of 8), releasing the rest; as
    /// [`setmaxnreg_inc`] otherwise.
    setmaxnreg_dec, "dec", false
);

/// Declares a full-warp shuffle `shfl.sync.<mode>.b32` of a `u32`, with its clamp operand.
macro_rules! shuffle {
    ($(#[$doc:meta])* $name:ident, $mode:literal, $clamp:literal, $sim:ident) => {
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name(v: u32, lane: u32) -> u32 {
            #[cfg(target_arch = "nvptx64")]
            {
                let r: u32;
                // SAFETY: a register exchange within the warp; every lane takes part. Not `pure`:
                // LLVM may sink a pure asm into a branch of the lanes that use its result (it
                // did: a warp's sum that only lane 0 wrote was moved under `lane == 0`, and the
                // warp hung), and it has no `convergent` for asm.
                unsafe {
                    asm!(concat!("shfl.sync.", $mode, ".b32 {r}, {v}, {l}, ", $clamp, ", 0xffffffff;"),
                         r = out(reg32) r, v = in(reg32) v, l = in(reg32) lane,
                         options(nomem, nostack, preserves_flags));
                }
                r
            }
            #[cfg(not(target_arch = "nvptx64"))]
            request(Sync::Shfl { mode: Shfl::$sim, value: v, lane })
        }
    };
}

shuffle!(
    /// `shfl.sync.bfly.b32` over the full warp: lane `lane ^ mask`'s `v` (`mask` < 32).
    shfl_xor_u32, "bfly", "0x1f", Bfly
);
shuffle!(
    /// `shfl.sync.idx.b32` over the full warp: lane `src`'s `v` (`src` taken modulo 32).
    shfl_idx, "idx", "0x1f", Idx
);
shuffle!(
    /// `shfl.sync.down.b32` over the full warp: lane `lane + delta`'s `v`, or the lane's own
    /// where that is past lane 31.
    shfl_down, "down", "0x1f", Down
);
shuffle!(
    /// `shfl.sync.up.b32` over the full warp: lane `lane - delta`'s `v`, or the lane's own where
    /// that is below lane 0.
    shfl_up, "up", "0", Up
);

/// [`shfl_xor_u32`] of an `f32`'s bits: lane `lane ^ mask`'s `v`.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn shfl_xor(v: f32, mask: u32) -> f32 {
    f32::from_bits(shfl_xor_u32(v.to_bits(), mask))
}

/// The sum of `v` over the warp, in every lane: the butterfly with masks 16, 8, 4, 2, 1 (each
/// lane adds the same values in the same order, so every lane holds the same bits).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warp_sum(v: f32) -> f32 {
    warp_reduce(v, |a, b| a + b)
}

/// `op` over the warp's 32 lanes, in every lane: the butterfly with masks 16, 8, 4, 2, 1 (`v =
/// op(v, lane ^ mask's v)`). For a commutative `op` every lane computes the same operations on
/// the same values, so every lane holds the same bits.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warp_reduce(mut v: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    let mut m = 16;
    while m > 0 {
        v = op(v, shfl_xor(v, m));
        m /= 2;
    }
    v
}

/// `op` over the four lanes of the thread's quad (lanes `4 (lane / 4) .. 4 (lane / 4) + 4`), in
/// each of them: the butterfly with masks 1 and 2. A row of a wgmma's accumulators (and of
/// `mma.sync`'s) is held by one quad, so this is a row's reduction once each lane has folded its
/// own values. For a commutative `op` the four lanes compute the same operations on the same
/// values: the same bits.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn quad_reduce(v: f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    let v = op(v, shfl_xor(v, 1));
    op(v, shfl_xor(v, 2))
}

/// `op` over the `warps` consecutive warps that thread `thread` belongs to (its group: warps
/// `warps * (warp / warps) ..`; `warps` divides the block's warps), in every thread of the group
/// (CuTeDSL's block reduction, over a row of `warps` warps). Each warp reduces by
/// [`warp_reduce`]; with more than one warp, lane 0 of each writes its warp's result to word 0 of
/// its slot `scratch[warp]`, the block meets at a barrier, and every thread folds its group's
/// results in warp order: every thread of a group the same operations, so the same bits.
///
/// Every thread of the block must call it (with `warps > 1` it is a block barrier).
///
/// # Safety
/// `scratch` reaches one 16-byte slot per warp of the block, which no thread accesses from the
/// previous barrier until the threads have read them here: a second reduction into the same slots
/// needs a barrier between the two (or slots of its own).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn group_reduce<S: crate::mem::Mem<crate::mem::V4>>(
    v: f32,
    op: impl Fn(f32, f32) -> f32 + Copy,
    warps: i64,
    scratch: S,
    thread: i64,
) -> f32 {
    let v = warp_reduce(v, op);
    if warps == 1 {
        return v;
    }
    let warp = thread / 32;
    if thread % 32 == 0 {
        scratch
            .advance(warp)
            .write(crate::mem::V4([v.to_bits(), 0, 0, 0]));
    }
    sync_threads();
    let first = warp / warps * warps;
    let mut r = f32::from_bits(scratch.advance(first).read().0[0]);
    let mut w = 1;
    while w < warps {
        r = op(r, f32::from_bits(scratch.advance(first + w).read().0[0]));
        w += 1;
    }
    r
}

/// The largest `v` over the warp, in every lane (the butterfly of [`warp_sum`] with `max.f32`:
/// a NaN loses to a number, as `f32::max`).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warp_max(v: f32) -> f32 {
    warp_reduce(v, f32::max)
}

/// Declares a full-warp vote `vote.sync.<mode>` of a `bool`.
macro_rules! vote {
    ($(#[$doc:meta])* $name:ident -> $t:ty, $asm:literal, $sim:ident, $from:expr) => {
        $(#[$doc])*
        #[inline(always)]
        #[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
        pub fn $name(p: bool) -> $t {
            #[cfg(target_arch = "nvptx64")]
            let r: u32 = {
                let r: u32;
                // SAFETY: a vote within the warp; every lane takes part
                unsafe {
                    asm!($asm, r = out(reg32) r, x = in(reg32) p as u32,
                         options(nomem, nostack, preserves_flags));
                }
                r
            };
            #[cfg(not(target_arch = "nvptx64"))]
            let r = request(Sync::Vote { mode: Vote::$sim, pred: p });
            $from(r)
        }
    };
}

vote!(
    /// `vote.sync.ballot.b32` over the full warp: bit `i` set where lane `i`'s `p` holds.
    ballot -> u32,
    "{{ .reg .pred p; setp.ne.u32 p, {x}, 0; vote.sync.ballot.b32 {r}, p, 0xffffffff; }}",
    Ballot, |r: u32| r
);
vote!(
    /// Does `p` hold in any lane of the warp (`vote.sync.any.pred`)?
    vote_any -> bool,
    "{{ .reg .pred p, q; setp.ne.u32 p, {x}, 0; vote.sync.any.pred q, p, 0xffffffff; selp.u32 {r}, 1, 0, q; }}",
    Any, |r: u32| r != 0
);
vote!(
    /// Does `p` hold in every lane of the warp (`vote.sync.all.pred`)?
    vote_all -> bool,
    "{{ .reg .pred p, q; setp.ne.u32 p, {x}, 0; vote.sync.all.pred q, p, 0xffffffff; selp.u32 {r}, 1, 0, q; }}",
    All, |r: u32| r != 0
);
