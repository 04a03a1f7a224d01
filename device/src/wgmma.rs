//! The warpgroup's tensor-core instruction (sm_90a) in the kernel model: `wgmma.mma_async`
//! reads B (`N x 16`, `N` a multiple of 8 up to 256) from shared memory through its descriptor
//! (layout-core's `make_gmma_desc_k`, placed by [`gmma_desc`]) and A (`64 x 16`) from shared
//! memory too ([`wgmma_ss`], [`wgmma`]) or from the threads' registers ([`wgmma_rs`]), each
//! operand in shared memory K-major or M/N-major, and accumulates `D = A B^T + D` in `f32`
//! registers spread over the warpgroup's 128 threads as layout-core's `SM90_64xNx16_F32...`
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
//! otherwise); the accumulators read NaN until the wait that covers the wgmma writes them. It
//! reports a wgmma without a fence since the warpgroup's last wait, a write to shared memory a
//! wgmma in flight reads, operands that differ across the warpgroup, and a warpgroup that ends
//! with wgmmas in flight. 16-bit inputs (`bf16`, `f16`) only.

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

/// The descriptor `desc` (a [`gmma_desc`]) moved on by `elems` elements of `T`: its start address
/// plus their bytes (CuTe's descriptor iterator). A loop over k-blocks then adds a constant to
/// one descriptor, where [`gmma_desc`] of each k-block's address computes each from its address
/// again (in the attention kernel 17 instructions before each wgmma of `S = Q K^T` and 7 before
/// each of `P V`, in the SASS).
///
/// Post-condition: `gmma_desc_advance::<T>(gmma_desc(&tile, d), n) == gmma_desc(&tile.advance(n),
/// d)` where `n` elements of `T` are a multiple of 16 bytes and the address stays below 256 KiB.
#[inline(always)]
pub const fn gmma_desc_advance<T>(desc: u64, elems: i64) -> u64 {
    desc.wrapping_add_signed(elems * core::mem::size_of::<T>() as i64 / 16)
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

/// `wgmma.mma_async.sync.aligned.m64nNk16.f32.I.I` with `N = 2 V` (8 to 256: `V` a multiple of
/// 4 up to 128): `acc = A B^T + acc` (`accumulate`; else `A B^T`, scale-d 0) for the
/// warpgroup's `64 x N` tile, A (`64 x 16`) and B (`N x 16`) K-major in shared memory at the
/// descriptors `a` and `b` ([`gmma_desc`]). Thread `t`'s `acc[v]` is element `(m, n)` of the tile
/// where `m + 64 n` is the atom's `C(t % 128, v)`. [`wgmma_ss`] with both operands K-major.
///
/// # Safety
/// As [`wgmma_ss`].
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub unsafe fn wgmma<I: MmaIn, const V: usize>(
    a: u64,
    b: u64,
    acc: &mut [f32; V],
    accumulate: bool,
) {
    wgmma_ss::<I, V, false, false>(a, b, acc, accumulate)
}

/// `wgmma.mma_async` (CuTe's `SM90_64xNx16_F32..._SS<tnspA, tnspB>`) with `N = 2 V` (`V` a
/// multiple of 4 up to 128): `acc = A B^T + acc` (`accumulate`; else `A B^T`) for the
/// warpgroup's `64 x N` tile, A (`64 x 16`) and B (`N x 16`) in shared memory at the descriptors
/// `a` and `b` ([`gmma_desc`]), each K-major or, where `MN_A` / `MN_B`, M- / N-major (layout-core's
/// `make_gmma_desc_k` with `GmmaMajor::MN`: e.g. `V` of attention's `P V`, stored with its head
/// dimension contiguous). Thread `t`'s `acc[v]` is element `(m, n)` where `m + 64 n` is the
/// atom's `C(t % 128, v)`.
///
/// # Safety
/// sm_90a (`ptxas` refuses it in PTX of other archs: declare such kernels for sm_90a only,
/// `kernels! { #[cfg(target_feature = "sm_90a")] .. }`); every thread of the warpgroup calls it
/// with the same operands, after a [`warpgroup_arrive`]; the operands in shared memory, written
/// before (by the copy engine, or by threads after a `fence_proxy_async` and a barrier) and not
/// written until a [`warpgroup_wait`] covers this wgmma; `acc` neither read, written nor moved
/// until then (more wgmmas may accumulate onto it meanwhile: the simulated GPU gives NaN to a
/// read before the wait).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[allow(unconditional_panic)] // the arms of other `V` index past `acc`: dead code
pub unsafe fn wgmma_ss<I: MmaIn, const V: usize, const MN_A: bool, const MN_B: bool>(
    a: u64,
    b: u64,
    acc: &mut [f32; V],
    accumulate: bool,
) {
    const {
        assert!(
            V.is_multiple_of(4) && V >= 4 && V <= 128,
            "wgmma takes N = 8, 16, .., 256"
        )
    };
    // (no `target_feature = "sm_90a"` test: the kernel crate's flags do not reach this crate;
    // `ptxas` refuses the instruction in PTX of any other arch)
    #[cfg(target_arch = "nvptx64")]
    {
        let scale = accumulate as u32;
        if I::BF16 {
            wgmma_n!(SS "bf16", (a, MN_A), b, MN_B, scale, acc);
        } else {
            wgmma_n!(SS "f16", (a, MN_A), b, MN_B, scale, acc);
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::Wgmma {
        a,
        a_regs: None,
        b,
        mn_major: [MN_A, MN_B],
        bf16: I::BF16,
        accumulate,
        values: V as u32,
        acc: acc.as_mut_ptr(),
    });
}

/// `wgmma.mma_async` with A in registers (CuTe's `SM90_64xNx16_F32..._RS<K, tnspB>`), `N = 2 V`:
/// `acc = A B^T + acc` (`accumulate`; else `A B^T`), A the `64 x 16` tile whose thread `t`
/// holds `a`, four words of two 16-bit values (layout-core's `GMMA_A_REG_64X16`: value `2 i` in
/// word `i`'s low half, `2 i + 1` in its high half, at `(m, k)` with `m + 64 k =
/// GMMA_A_REG_64X16(t % 128, v)`), B (`N x 16`) in shared memory at the descriptor `b`, K-major
/// or, where `MN_B`, N-major.
///
/// That register layout is the accumulators' for `N = 16` (the atoms' `CLayout_64x16`): the
/// results of one wgmma, rounded to 16 bits and packed in pairs (`acc[8 j .. 8 j + 8]` to the
/// four words of k-block `j`), are the A of the next: attention's `P` multiplies `V` without
/// leaving the registers.
///
/// # Safety
/// As [`wgmma_ss`] (A in registers needs no fence of shared memory; the fence orders the
/// registers).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
#[allow(unconditional_panic)] // the arms of other `V` index past `acc`: dead code
pub unsafe fn wgmma_rs<I: MmaIn, const V: usize, const MN_B: bool>(
    a: [u32; 4],
    b: u64,
    acc: &mut [f32; V],
    accumulate: bool,
) {
    const {
        assert!(
            V.is_multiple_of(4) && V >= 4 && V <= 128,
            "wgmma takes N = 8, 16, .., 256"
        )
    };
    #[cfg(target_arch = "nvptx64")]
    {
        let scale = accumulate as u32;
        if I::BF16 {
            wgmma_n!(RS "bf16", a, b, MN_B, scale, acc);
        } else {
            wgmma_n!(RS "f16", a, b, MN_B, scale, acc);
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    request(Sync::Wgmma {
        a: 0,
        a_regs: Some(a),
        b,
        mn_major: [false, MN_B],
        bf16: I::BF16,
        accumulate,
        values: V as u32,
        acc: acc.as_mut_ptr(),
    });
}

/// The wgmma of `acc`'s length: one arm per `V`, each listing the accumulators `1 .. V` (0 is
/// the macro's own).
#[cfg(target_arch = "nvptx64")]
macro_rules! wgmma_n {
    ($($args:tt)*) => {
        wgmma_arms!(($($args)*); 4 8 12 16 20 24 28 32 36 40 44 48 52 56 60 64 68 72 76 80 84 88
                    92 96 100 104 108 112 116 120 124 128)
    };
}
#[cfg(target_arch = "nvptx64")]
use wgmma_n;

/// One match arm per `V` (a constant the match folds).
#[cfg(target_arch = "nvptx64")]
macro_rules! wgmma_arms {
    ($args:tt; $($v:tt)*) => {
        match V {
            $($v => seq_macro::seq!(i in 1..$v { wgmma_asm!($v; $args; #(i)*) }),)*
            _ => unreachable!(),
        }
    };
}
#[cfg(target_arch = "nvptx64")]
use wgmma_arms;

/// One wgmma whose accumulators are `$acc[0]` and `$acc[i]` for the listed `i`: each a register
/// operand (an array element indexed by a constant, which stays a register).
#[cfg(target_arch = "nvptx64")]
macro_rules! wgmma_asm {
    ($v:tt; (SS $t:literal, ($a:expr, $ta:expr), $b:expr, $tb:expr, $scale:expr, $acc:expr); $($i:literal)*) => {{
        core::arch::asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {scale}, 0; wgmma.mma_async.sync.aligned.m64n{n}k16.f32.",
                $t, ".", $t, " {{{0}", $(", {", $i, "}",)*
                "}}, {da}, {db}, p, 1, 1, {ta}, {tb}; }}"
            ),
            inout(reg32) $acc[0],
            $(inout(reg32) $acc[$i],)*
            da = in(reg64) $a,
            db = in(reg64) $b,
            scale = in(reg32) $scale,
            n = const 2 * $v,
            ta = const $ta as u32,
            tb = const $tb as u32,
            options(nostack, preserves_flags)
        )
    }};
    ($v:tt; (RS $t:literal, $a:expr, $b:expr, $tb:expr, $scale:expr, $acc:expr); $($i:literal)*) => {{
        core::arch::asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {scale}, 0; wgmma.mma_async.sync.aligned.m64n{n}k16.f32.",
                $t, ".", $t, " {{{0}", $(", {", $i, "}",)*
                "}}, {{{a0}, {a1}, {a2}, {a3}}}, {db}, p, 1, 1, {tb}; }}"
            ),
            inout(reg32) $acc[0],
            $(inout(reg32) $acc[$i],)*
            a0 = in(reg32) $a[0],
            a1 = in(reg32) $a[1],
            a2 = in(reg32) $a[2],
            a3 = in(reg32) $a[3],
            db = in(reg64) $b,
            scale = in(reg32) $scale,
            n = const 2 * $v,
            tb = const $tb as u32,
            options(nostack, preserves_flags)
        )
    }};
}
#[cfg(target_arch = "nvptx64")]
use wgmma_asm;
