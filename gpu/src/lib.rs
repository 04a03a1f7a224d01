//! tessel's kernels. Each kernel — which thread moves which element, through which shared-memory
//! slot — is written once over `layout-core`'s tensors, generic over its engines ([`mem::Mem`]),
//! and declared through [`ctx::Kernel`]: `kernels!` makes its PTX entry point, which runs it
//! with device memory; the host runs the very same steps with checked host memory, for every block
//! and thread, to produce the expected output and to check that the threads' writes cover it
//! exactly once.
//!
//! The kernel declaration, the engines, the element types and the device functions are
//! `tessel-device`'s (the device side any kernel crate uses; re-exported here as [`ctx`],
//! [`mem`], [`real`], [`math`] and, on `nvptx64`, `device`). On `nvptx64` this crate is built to
//! PTX by rustc's NVPTX backend (see the root `build.rs`); on any other target it is an ordinary
//! `no_std` library.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(abi_ptx, asm_experimental_arch, core_intrinsics,)
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![warn(missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

/// Runs `$body` with `$v` bound to each of `0..16` in turn, unrolled: a register array indexed by
/// a run-time value would go to local memory.
/// [`unroll16`] for `0..2`.
#[allow(unused_macros)]
macro_rules! unroll2 {
    ($v:ident => $body:expr) => {
        unroll16!(@ $v => $body; 0 1)
    };
}

/// [`unroll16`] for `0..4`.
macro_rules! unroll4 {
    ($v:ident => $body:expr) => {
        unroll16!(@ $v => $body; 0 1 2 3)
    };
}

/// [`unroll16`] for `0..8`.
macro_rules! unroll8 {
    ($v:ident => $body:expr) => {
        unroll16!(@ $v => $body; 0 1 2 3 4 5 6 7)
    };
}

macro_rules! unroll16 {
    ($v:ident => $body:expr) => {
        unroll16!(@ $v => $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $v:ident => $body:expr; $($n:literal)*) => {
        $({
            let $v: i64 = $n;
            $body;
        })*
    };
}

/// `wgmma.mma_async.sync.aligned.m64n256k16.f32.$t.$t` on shared-memory descriptors `a` and `b`,
/// accumulating into the 128 named `f32` locals (`wgmma_peak`'s; the kernels of the model take
/// an array from `wgmma::accumulators`, which stays in registers where `[0f32; 128]` did not). With a fourth argument `acc` (a `u32`), `acc == 0` overwrites them instead (wgmma's
/// scale-d). Every thread of the warpgroup runs it; sm_90a.
#[allow(unused_macros)]
macro_rules! wgmma_m64n256k16 {
    ($t:literal, $a:expr, $b:expr, $acc:expr; $first:ident $($d:ident)*) => {
        core::arch::asm!(
            concat!(
                "{{ .reg .pred p; setp.ne.b32 p, {acc}, 0; wgmma.mma_async.sync.aligned.m64n256k16.f32.",
                $t, ".", $t, " {{",
                "{", stringify!($first), "}",
                $(", {", stringify!($d), "}",)*
                "}}, {da}, {db}, p, 1, 1, 0, 0; }}"
            ),
            da = in(reg64) $a,
            db = in(reg64) $b,
            acc = in(reg32) $acc,
            $first = inout(reg32) $first,
            $($d = inout(reg32) $d,)*
            options(nostack, preserves_flags)
        )
    };
    ($t:literal, $a:expr, $b:expr; $($d:ident)*) => {
        wgmma_m64n256k16!($t, $a, $b, 1u32; $($d)*)
    };
}

pub mod attention;
pub mod axpby;
pub mod cluster_check;
pub mod copy;
pub mod gemm;
pub mod gemm_sm90;
pub mod gemm_wg;
pub mod math_check;
pub mod mma_peak;
pub mod mma_tile;
pub mod prims;
pub mod rmsnorm;
pub mod tma_copy;
pub mod transpose;
pub mod wgmma_peak;

#[cfg(target_arch = "nvptx64")]
pub use tessel_device::device;
use tessel_device::kernels;
pub use tessel_device::{ctx, frag, math, mem, mma, real, rows, stage, sync, tma, unroll, wgmma};

use half::{bf16, f16};
kernels! {
    copy_f32 => copy::VecCopy<f32>,
    copy_f16 => copy::VecCopy<f16>,
    copy_bf16 => copy::VecCopy<bf16>,
    copy_a4_f32 => copy::VecCopy<f32, 4>,
    copy_a4_f16 => copy::VecCopy<f16, 4>,
    copy_a4_bf16 => copy::VecCopy<bf16, 4>,
    copy_a8_f32 => copy::VecCopy<f32, 8>,
    copy_a8_f16 => copy::VecCopy<f16, 8>,
    copy_a8_bf16 => copy::VecCopy<bf16, 8>,
    copy_a16_f32 => copy::VecCopy<f32, 16>,
    copy_a16_f16 => copy::VecCopy<f16, 16>,
    copy_a16_bf16 => copy::VecCopy<bf16, 16>,
    transpose_pad_f32 => transpose::Transpose<f32, transpose::Padded<f32>>,
    transpose_pad_f16 => transpose::Transpose<f16, transpose::Padded<f16>>,
    transpose_pad_bf16 => transpose::Transpose<bf16, transpose::Padded<bf16>>,
    transpose_swizzle_f32 => transpose::Transpose<f32, transpose::Swizzled<f32>>,
    transpose_swizzle_f16 => transpose::Transpose<f16, transpose::Swizzled<f16>>,
    transpose_swizzle_bf16 => transpose::Transpose<bf16, transpose::Swizzled<bf16>>,
    transpose_pad_led_f32 => transpose::Transpose<f32, transpose::Padded<f32>, true>,
    transpose_pad_led_f16 => transpose::Transpose<f16, transpose::Padded<f16>, true>,
    transpose_pad_led_bf16 => transpose::Transpose<bf16, transpose::Padded<bf16>, true>,
    transpose_swizzle_led_f32 => transpose::Transpose<f32, transpose::Swizzled<f32>, true>,
    transpose_swizzle_led_f16 => transpose::Transpose<f16, transpose::Swizzled<f16>, true>,
    transpose_swizzle_led_bf16 => transpose::Transpose<bf16, transpose::Swizzled<bf16>, true>,
    transpose_pairs_led_f32 => transpose::TransposePairsLed<f32>,
    transpose_pairs_led_f16 => transpose::TransposePairsLed<f16>,
    transpose_pairs_led_bf16 => transpose::TransposePairsLed<bf16>,
    transpose_pairs_f32 => transpose::TransposePairs<f32>,
    transpose_pairs_f16 => transpose::TransposePairs<f16>,
    transpose_pairs_bf16 => transpose::TransposePairs<bf16>,
    transpose_quads_f32 => transpose::TransposeQuads<f32>,
    transpose_quads_f16 => transpose::TransposeQuads<f16, { transpose::WIDE }>,
    transpose_quads_bf16 => transpose::TransposeQuads<bf16, { transpose::WIDE }>,
    axpby_f32 => axpby::Axpby<f32>,
    axpby_bf16 => axpby::Axpby<bf16>,
    rmsnorm_f32 => rmsnorm::RmsNorm<f32>,
    rmsnorm_bf16 => rmsnorm::RmsNorm<bf16>,
    rmsnorm_w2_f32 => rmsnorm::RmsNorm<f32, 2>,
    rmsnorm_w2_bf16 => rmsnorm::RmsNorm<bf16, 2>,
    rmsnorm_w4_f32 => rmsnorm::RmsNorm<f32, 4>,
    rmsnorm_w4_bf16 => rmsnorm::RmsNorm<bf16, 4>,
    rmsnorm_w8_f32 => rmsnorm::RmsNorm<f32, 8>,
    rmsnorm_w8_bf16 => rmsnorm::RmsNorm<bf16, 8>,
    rmsnorm_w16_f32 => rmsnorm::RmsNorm<f32, 16>,
    rmsnorm_w16_bf16 => rmsnorm::RmsNorm<bf16, 16>,
}

/// `gemm_sm80`'s entry points (their own launcher: `host::runtime::gpu::Gpu::gemm`).
pub mod gemms {
    use half::{bf16, f16};
    use tessel_device::smem32::Device32;
    tessel_device::kernels! {
        gemm_bf16_bf16 in Device32 => crate::gemm::Gemm<bf16, bf16>,
        gemm_bf16_f32 in Device32 => crate::gemm::Gemm<bf16, f32>,
        gemm_f16_f16 in Device32 => crate::gemm::Gemm<f16, f16>,
        gemm_f16_f32 in Device32 => crate::gemm::Gemm<f16, f32>,
    }

    /// `gemm_sm80` with its stages filled by the copy engine: sm_90 PTX and newer.
    pub mod sm90 {
        use half::{bf16, f16};
        use tessel_device::smem32::Device32;
        tessel_device::kernels! { #[cfg(target_feature = "sm_90")]
            gemm_tma_bf16_bf16 in Device32 => crate::gemm::GemmTma<bf16, bf16>,
            gemm_tma_bf16_f32 in Device32 => crate::gemm::GemmTma<bf16, f32>,
            gemm_tma_f16_f16 in Device32 => crate::gemm::GemmTma<f16, f16>,
            gemm_tma_f16_f32 in Device32 => crate::gemm::GemmTma<f16, f32>,
        }
    }

    /// `gemm_sm90` (wgmma, clusters of two): sm_90a PTX only.
    pub mod sm90a {
        use half::{bf16, f16};
        use tessel_device::smem32::Device32;
        tessel_device::kernels! { #[cfg(target_feature = "sm_90a")]
            gemm_sm90_bf16_bf16 in Device32 => crate::gemm_sm90::GemmSm90<bf16, bf16>,
            gemm_sm90_bf16_f32 in Device32 => crate::gemm_sm90::GemmSm90<bf16, f32>,
            gemm_sm90_f16_f16 in Device32 => crate::gemm_sm90::GemmSm90<f16, f16>,
            gemm_sm90_f16_f32 in Device32 => crate::gemm_sm90::GemmSm90<f16, f32>,
        }
        tessel_device::ptx_directives! { #[cfg(target_feature = "sm_90a")] maxntid:
            gemm_sm90_bf16_bf16 => crate::gemm_sm90::THREADS,
            gemm_sm90_bf16_f32 => crate::gemm_sm90::THREADS,
            gemm_sm90_f16_f16 => crate::gemm_sm90::THREADS,
            gemm_sm90_f16_f32 => crate::gemm_sm90::THREADS,
        }
        tessel_device::ptx_directives! { #[cfg(target_feature = "sm_90a")] reqnctapercluster:
            gemm_sm90_bf16_bf16 => crate::gemm_sm90::CLUSTER_M,
            gemm_sm90_bf16_f32 => crate::gemm_sm90::CLUSTER_M,
            gemm_sm90_f16_f16 => crate::gemm_sm90::CLUSTER_M,
            gemm_sm90_f16_f32 => crate::gemm_sm90::CLUSTER_M,
        }
    }
}
pub use gemms::KERNELS as GEMM_KERNELS;

/// `attention`'s entry points (wgmma and the copy engine: sm_90a PTX only), by input type,
/// head dimension and mask (key tiles of 128 rows up to `D = 128`, of 64 past it; `_long`: of 176
/// at `D = 128` without the mask, for [`crate::attention::LONG_KEYS`] keys and more).
pub mod attentions {
    /// The entries (`kernels!`) and their `.maxntid`, the kernel's threads (`ptx_directives!`),
    /// from one list (its types written whole: the directives' module imports nothing).
    macro_rules! attention_entries {
        ($($name:ident => $k:ty),* $(,)?) => {
            tessel_device::kernels! { #[cfg(target_feature = "sm_90a")] $($name => $k),* }
            tessel_device::ptx_directives! { #[cfg(target_feature = "sm_90a")] maxntid:
                $($name => <$k>::THREADS),*
            }
        };
    }
    attention_entries! {
        attention_bf16_d64 => crate::attention::Attention<half::bf16, 32, 64, false>,
        attention_bf16_d64_causal => crate::attention::Attention<half::bf16, 32, 64, true>,
        attention_bf16_d128 => crate::attention::Attention<half::bf16, 64, 64, false>,
        attention_bf16_d128_long => crate::attention::Attention<half::bf16, 64, 88, false>,
        attention_bf16_d128_causal => crate::attention::Attention<half::bf16, 64, 64, true>,
        attention_f16_d64 => crate::attention::Attention<half::f16, 32, 64, false>,
        attention_f16_d128 => crate::attention::Attention<half::f16, 64, 64, false>,
        attention_f16_d128_long => crate::attention::Attention<half::f16, 64, 88, false>,
        attention_f16_d64_causal => crate::attention::Attention<half::f16, 32, 64, true>,
        attention_f16_d128_causal => crate::attention::Attention<half::f16, 64, 64, true>,
        attention_bf16_d96 => crate::attention::Attention<half::bf16, 48, 64, false>,
        attention_bf16_d96_causal => crate::attention::Attention<half::bf16, 48, 64, true>,
        attention_bf16_d192 => crate::attention::Attention<half::bf16, 96, 32, false>,
        attention_bf16_d192_causal => crate::attention::Attention<half::bf16, 96, 32, true>,
        attention_bf16_d256 => crate::attention::Attention<half::bf16, 128, 32, false>,
        attention_bf16_d256_causal => crate::attention::Attention<half::bf16, 128, 32, true>,
        attention_f16_d96 => crate::attention::Attention<half::f16, 48, 64, false>,
        attention_f16_d96_causal => crate::attention::Attention<half::f16, 48, 64, true>,
        attention_f16_d192 => crate::attention::Attention<half::f16, 96, 32, false>,
        attention_f16_d192_causal => crate::attention::Attention<half::f16, 96, 32, true>,
        attention_f16_d256 => crate::attention::Attention<half::f16, 128, 32, false>,
        attention_f16_d256_causal => crate::attention::Attention<half::f16, 128, 32, true>,
    }
}

/// `mma.sync` ceiling microbenchmarks ([`mma_peak`]).
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn mma_peak_bf16(p: mma_peak::PeakParams<mem::Gmem<f32>>) {
    mma_peak::mma_peak::<true>(p)
}
/// See [`mma_peak_bf16`].
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn mma_peak_f16(p: mma_peak::PeakParams<mem::Gmem<f32>>) {
    mma_peak::mma_peak::<false>(p)
}
/// See [`prims`].
#[cfg(target_arch = "nvptx64")]
#[no_mangle]
pub unsafe extern "ptx-kernel" fn device_prims(out: *mut u32) {
    prims::device_prims(out)
}
/// The device functions' check ([`prims`]), launched by `tests/gpu.rs` through `Gpu::load`.
pub const TEST_KERNELS: &[ctx::KernelInfo] = &[ctx::KernelInfo {
    name: "device_prims",
    param_bytes: 8,
}];

/// Kernels that check the device against the simulated GPU (`tests/gpu.rs` loads them with
/// `checks::KERNELS`): not tessel's kernels, so `tessel run all` does not run them.
pub mod checks {
    use half::{bf16, f16};
    tessel_device::kernels! {
        math_check_f32 => crate::math_check::MathCheck,
        mma_tile_bf16 => crate::mma_tile::MmaTile<bf16>,
        mma_tile_f16 => crate::mma_tile::MmaTile<f16>,
    }

    /// The checks in sm_90a PTX only (the copy engine and wgmma).
    pub mod sm90a {
        use half::{bf16, f16};
        tessel_device::kernels! { #[cfg(target_feature = "sm_90a")]
            gemm_wg_bf16 => crate::gemm_wg::GemmWg<bf16>,
            gemm_wg_f16 => crate::gemm_wg::GemmWg<f16>,
            cluster_check => crate::cluster_check::ClusterCheck,
        }
        tessel_device::ptx_directives! { #[cfg(target_feature = "sm_90a")] reqnctapercluster:
            cluster_check => crate::cluster_check::CLUSTER,
        }
    }
}

/// The microbenchmarks' entry points.
pub const PEAK_KERNELS: &[ctx::KernelInfo] = &[
    ctx::KernelInfo {
        name: "mma_peak_bf16",
        param_bytes: core::mem::size_of::<mma_peak::PeakParams<mem::Gmem<f32>>>(),
    },
    ctx::KernelInfo {
        name: "mma_peak_f16",
        param_bytes: core::mem::size_of::<mma_peak::PeakParams<mem::Gmem<f32>>>(),
    },
];

/// Declares the entry points that need `sm_90` (the copy engine), `name => function::<types>
/// (params)`: each an `extern "ptx-kernel"` function in sm_90 (and newer) PTX only, and a line of
/// [`SM90_KERNELS`].
macro_rules! sm90_kernels {
    ($($name:ident => $($f:ident)::+ [$($t:ty),*] ($p:ty)),* $(,)?) => {
        $(
            #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
            #[no_mangle]
            #[doc = concat!("`", stringify!($($f)::+), "` (sm_90).")]
            pub unsafe extern "ptx-kernel" fn $name(p: $p) {
                $($f)::+::<$($t),*>(p)
            }
        )*
        /// The entry points that need `sm_90` (the copy engine): in the PTX of sm_90 and newer
        /// only.
        pub const SM90_KERNELS: &[ctx::KernelInfo] = &[$(
            ctx::KernelInfo {
                name: stringify!($name),
                param_bytes: core::mem::size_of::<$p>(),
            },
        )*];
    };
}

sm90_kernels! {
    tma_copy_f32 => tma_copy::tma_copy [f32] (tma_copy::TmaCopyParams<mem::Gmem<f32>>),
    tma_copy_bf16 => tma_copy::tma_copy [bf16] (tma_copy::TmaCopyParams<mem::Gmem<bf16>>),
    bulk_copy_f32 => copy::bulk_copy [f32] (copy::BulkCopyParams<mem::Gmem<f32>>),
    bulk_copy_f16 => copy::bulk_copy [f16] (copy::BulkCopyParams<mem::Gmem<f16>>),
    bulk_copy_bf16 => copy::bulk_copy [bf16] (copy::BulkCopyParams<mem::Gmem<bf16>>),
}

/// Declares the entry points in `sm_90a` PTX only (wgmma), as [`sm90_kernels`] does.
macro_rules! sm90a_kernels {
    ($($name:ident => $($f:ident)::+ [$($t:ty),*] ($p:ty)),* $(,)?) => {
        $(
            #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90a"))]
            #[no_mangle]
            #[doc = concat!("`", stringify!($($f)::+), "` (sm_90a).")]
            pub unsafe extern "ptx-kernel" fn $name(p: $p) {
                $($f)::+::<$($t),*>(p)
            }
        )*
        /// The entry points in `sm_90a` PTX only (wgmma).
        pub const SM90A_KERNELS: &[ctx::KernelInfo] = &[$(
            ctx::KernelInfo {
                name: stringify!($name),
                param_bytes: core::mem::size_of::<$p>(),
            },
        )*];
    };
}

sm90a_kernels! {
    wgmma_peak_bf16 => wgmma_peak::wgmma_peak [] (wgmma_peak::WgmmaPeakParams<mem::Gmem<f32>>),
}

/// Every entry point of every arch's PTX: [`KERNELS`], [`GEMM_KERNELS`], [`PEAK_KERNELS`]
/// ([`SM90_KERNELS`] only where the arch has them).
pub fn all_kernels() -> impl Iterator<Item = &'static ctx::KernelInfo> {
    KERNELS.iter().chain(GEMM_KERNELS).chain(PEAK_KERNELS)
}

/// The entry points that need `sm_90` (the copy engine): [`SM90_KERNELS`] and `gemm_tma`'s.
pub fn sm90_kernels() -> impl Iterator<Item = &'static ctx::KernelInfo> {
    SM90_KERNELS.iter().chain(gemms::sm90::KERNELS)
}

/// The entry points in `sm_90a` PTX only (wgmma): [`SM90A_KERNELS`] and `gemm_sm90`'s.
pub fn sm90a_kernels() -> impl Iterator<Item = &'static ctx::KernelInfo> {
    SM90A_KERNELS
        .iter()
        .chain(gemms::sm90a::KERNELS)
        .chain(attentions::KERNELS)
}
