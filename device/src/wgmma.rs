//! The warpgroup's tensor-core instruction (sm_90a) in the kernel model: `wgmma.mma_async`
//! reads A (`64 x 16`) and B (`N x 16`) from shared memory through their descriptors (layout-core's
//! `make_gmma_desc_k`, placed by [`gmma_desc`]) and accumulates `D = A B^T + D` in `f32`
//! registers spread over the warpgroup's 128 threads as layout-core's `SM90_64xNx16_F32..._SS`
//! atoms say (`N / 2` per thread). It runs asynchronously: CuTe's [`warpgroup_arrive`] fences the
//! registers before a batch, [`warpgroup_commit_batch`] closes a batch, and
//! [`warpgroup_wait`] waits until at most `N` batches are in flight: only then may the
//! accumulators be read and the shared memory they read be written.
//!
//! Every thread of the warpgroup (128 threads, warps `4k .. 4k + 4`) executes each of these
//! with the same operands. On the host the simulated GPU meets the warpgroup at each, decodes the
//! descriptors as the PTX ISA defines them (`GmmaDescriptor::hardware_address`), reads the
//! operands as checked shared-memory reads that stay in flight until the wait, and computes each
//! element's 16 products and its accumulator in `f64`, rounded once (the tensor cores add in their
//! own order: equal bits where every partial sum is exact, within a few units in the last place
//! otherwise). It reports a wgmma without a fence since the warpgroup's last wait, a write to
//! shared memory a wgmma in flight reads, operands that differ across the warpgroup, and a
//! warpgroup that ends with wgmmas in flight. K-major operands of 16-bit types (`tnspA = tnspB =
//! 0`) only.

use crate::mma::MmaIn;
use crate::tma::BulkCopy;
use layout_core::GmmaDescriptor;

#[cfg(not(target_arch = "nvptx64"))]
use crate::sim::{request, Sync};

/// The descriptor `desc` (layout-core's `make_gmma_desc_k` of a tile at shared address 0) of the
/// tile whose first element is at `tile`: its start address moved by the tile's address.
///
/// Post-condition: the start-address field is `desc`'s plus `addr / 16` (the tile's address a
/// multiple of 16, below 256 KiB, as the field's 14 bits hold).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn gmma_desc<S: BulkCopy>(tile: &S, desc: GmmaDescriptor) -> u64 {
    desc.desc + (tile.addr() >> 4) as u64
}

/// `wgmma.fence.sync.aligned` (CuTe's `warpgroup_arrive`): the warpgroup's register and shared
/// memory accesses so far are ordered before its next wgmmas. Before the first wgmma and before
/// each batch after a [`warpgroup_wait`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warpgroup_arrive() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a fence
    unsafe {
        core::arch::asm!(
            "wgmma.fence.sync.aligned;",
            options(nostack, preserves_flags)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::WgmmaFence);
}

/// `wgmma.commit_group.sync.aligned` (CuTe's `warpgroup_commit_batch`): the warpgroup's wgmmas
/// since its last commit form a batch.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warpgroup_commit_batch() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: bookkeeping of the warpgroup's wgmmas
    unsafe {
        core::arch::asm!(
            "wgmma.commit_group.sync.aligned;",
            options(nostack, preserves_flags)
        )
    };
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::WgmmaCommit);
}

/// `wgmma.wait_group.sync.aligned N` (CuTe's `warpgroup_wait<N>`): all but the warpgroup's `N`
/// most recent batches are complete: their accumulators may be read, the shared memory they read
/// written.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn warpgroup_wait<const N: u32>() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: waits
    unsafe {
        core::arch::asm!("wgmma.wait_group.sync.aligned {n};", n = const N,
                         options(nostack, preserves_flags))
    };
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::WgmmaWait { n: N });
}

/// `V` accumulators of 0, for [`wgmma`]: a zeroed array, which the compiler splits into
/// registers. (`[0f32; V]` is a loop that rustc writes element by element at a run-time index;
/// past a few dozen elements LLVM leaves it a loop, and the index keeps the whole array in local
/// memory: seen with `V = 128`.)
#[inline(always)]
pub fn accumulators<const V: usize>() -> [f32; V] {
    // SAFETY: all-zero bits are `0.0f32`
    unsafe { core::mem::zeroed() }
}

/// `wgmma.mma_async.sync.aligned.m64nNk16.f32.I.I` with `N = 2 V` (8 to 256: `V` one of 4, 8,
/// 16, 32, 64, 128): `acc = A B^T + acc` (`accumulate`; else `A B^T`, scale-d 0) for the
/// warpgroup's `64 x N` tile, A (`64 x 16`) and B (`N x 16`) K-major in shared memory at the
/// descriptors `a` and `b` ([`gmma_desc`]). Thread `t`'s `acc[v]` is element `(m, n)` of the tile
/// where `m + 64 n` is the atom's `C(t % 128, v)`.
///
/// # Safety
/// sm_90a (`ptxas` refuses it in PTX of other archs: declare such kernels for sm_90a only,
/// `kernels! { #[cfg(target_feature = "sm_90a")] .. }`); every thread of the warpgroup calls it with the same operands, after a
/// [`warpgroup_arrive`]; the operands in shared memory, written before (by the copy engine, or by
/// threads after a `fence_proxy_async` and a barrier) and not written until a
/// [`warpgroup_wait`] covers this wgmma; `acc` not read until then.
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn wgmma<I: MmaIn, const V: usize>(
    a: u64,
    b: u64,
    acc: &mut [f32; V],
    accumulate: bool,
) {
    const {
        assert!(
            matches!(V, 4 | 8 | 16 | 32 | 64 | 128),
            "wgmma takes N = 8, 16, 32, 64, 128 or 256"
        )
    };
    // (no `target_feature = "sm_90a"` test: the kernel crate's flags do not reach this crate;
    // `ptxas` refuses the instruction in PTX of any other arch)
    #[cfg(target_arch = "nvptx64")]
    {
        let scale = accumulate as u32;
        if I::BF16 {
            wgmma_n!("bf16", a, b, scale, acc);
        } else {
            wgmma_n!("f16", a, b, scale, acc);
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::Wgmma {
        a,
        b,
        bf16: I::BF16,
        accumulate,
        values: V as u32,
        acc: acc.as_mut_ptr(),
    });
}

/// The wgmma of `acc`'s length, `$t` its input type.
#[cfg(target_arch = "nvptx64")]
macro_rules! wgmma_n {
    ($t:literal, $a:expr, $b:expr, $scale:expr, $acc:expr) => {
        match $acc.len() {
            4 => wgmma_asm!("8", $t, $a, $b, $scale, $acc; IDX4),
            8 => wgmma_asm!("16", $t, $a, $b, $scale, $acc; IDX8),
            16 => wgmma_asm!("32", $t, $a, $b, $scale, $acc; IDX16),
            32 => wgmma_asm!("64", $t, $a, $b, $scale, $acc; IDX32),
            64 => wgmma_asm!("128", $t, $a, $b, $scale, $acc; IDX64),
            _ => wgmma_asm!("256", $t, $a, $b, $scale, $acc; IDX128),
        }
    };
}
#[cfg(target_arch = "nvptx64")]
use wgmma_n;

/// One wgmma whose accumulators are `$acc[i]` for the listed `i`: each a register operand (an
/// array element indexed by a constant, which stays a register).
#[cfg(target_arch = "nvptx64")]
macro_rules! wgmma_asm {
    ($n:literal, $t:literal, $a:expr, $b:expr, $scale:expr, $acc:expr; $first:literal $($i:literal)*) => {{
        #[allow(unconditional_panic)]
        core::arch::asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {scale}, 0; wgmma.mma_async.sync.aligned.m64n",
                $n, "k16.f32.", $t, ".", $t, " {{{", $first, "}",
                $(", {", $i, "}",)*
                "}}, {da}, {db}, p, 1, 1, 0, 0; }}"
            ),
            inout(reg32) $acc[$first],
            $(inout(reg32) $acc[$i],)*
            da = in(reg64) $a,
            db = in(reg64) $b,
            scale = in(reg32) $scale,
            options(nostack, preserves_flags)
        )
    }};
    ($n:literal, $t:literal, $a:expr, $b:expr, $scale:expr, $acc:expr; IDX4) => {
        wgmma_asm!($n, $t, $a, $b, $scale, $acc; 0 1 2 3)
    };
    ($n:literal, $t:literal, $a:expr, $b:expr, $scale:expr, $acc:expr; IDX8) => {
        wgmma_asm!($n, $t, $a, $b, $scale, $acc; 0 1 2 3 4 5 6 7)
    };
    ($n:literal, $t:literal, $a:expr, $b:expr, $scale:expr, $acc:expr; IDX16) => {
        wgmma_asm!($n, $t, $a, $b, $scale, $acc; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    ($n:literal, $t:literal, $a:expr, $b:expr, $scale:expr, $acc:expr; IDX32) => {
        wgmma_asm!($n, $t, $a, $b, $scale, $acc; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    ($n:literal, $t:literal, $a:expr, $b:expr, $scale:expr, $acc:expr; IDX64) => {
        wgmma_asm!($n, $t, $a, $b, $scale, $acc; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63)
    };
    ($n:literal, $t:literal, $a:expr, $b:expr, $scale:expr, $acc:expr; IDX128) => {
        wgmma_asm!($n, $t, $a, $b, $scale, $acc; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91 92 93 94 95 96 97 98 99 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 118 119 120 121 122 123 124 125 126 127)
    };
}
#[cfg(target_arch = "nvptx64")]
use wgmma_asm;
