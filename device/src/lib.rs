//! The device side of kernels written with tessel: what a kernel crate depends on (as `cuda_std`
//! is for rust-cuda).
//!
//! A kernel is declared once, as a type implementing [`ctx::Kernel`]: its by-value `Params` of
//! tensors and scalars in a memory space ([`mem::Space`]: the GPU's, or the simulated GPU's), `prepare` (what it needs of their layouts), `geometry` (grid, block and
//! shared memory from them) and `thread`, the one function every thread of the launch runs, with
//! barriers and warp collectives ([`sync`]) where it needs them. [`macro@kernel`] on that impl
//! (or [`kernels!`], for a list) makes each instance a PTX entry point. The same function runs on the host's simulated GPU (`host::sim`): every thread of
//! a block a coroutine, over checked host memory, with races, deadlocks and divergent warps
//! reported; the reference the GPU result is compared with.
//!
//! - [`ctx`]: the [`Kernel`](ctx::Kernel) trait, a thread's [`Ctx`](ctx::Ctx) (block, grid,
//!   thread, shared memory), [`Geometry`](ctx::Geometry).
//! - [`mem`]: engines, how a tensor reaches memory: [`Gmem`](mem::Gmem) (global),
//!   [`Smem`](mem::Smem) (shared), [`SwizzleEngine`](mem::SwizzleEngine); [`Mem`](mem::Mem)
//!   reads and writes elements and 128-bit vectors, [`AsyncCopy`](mem::AsyncCopy) is `cp.async`.
//! - [`mma`]: the warp's tensor-core instruction `mma.sync.m16n8k16`; `ldmatrix` is
//!   [`Ldmatrix`](mem::Ldmatrix), on shared-memory engines.
//! - [`tma`]: the copy engine's tiled loads and stores ([`BulkCopy`](tma::BulkCopy) on
//!   shared-memory engines, through a [`TensorMap`](tma::TensorMap)), bulk groups, the async
//!   proxy's fence.
//! - [`wgmma`]: the warpgroup's tensor-core instruction (sm_90a) on shared-memory descriptors.
//! - [`frag`]: register fragments ([`Fragment`](frag::Fragment), [`Atom`](frag::Atom)): a
//!   thread's values of a tile loaded whole atoms at a time or under a predicate, computed on in
//!   `f32`, rounded back, recast and converted.
//! - [`unroll!`]: a loop of a constant count, unrolled (register arrays indexed by it stay in
//!   registers).
//! - [`rows`]: the cut of a row-wise kernel ([`Rows`](rows::Rows)): warps per row, threads and
//!   rows per block, the tile, each thread's atom of it.
//! - [`stage`]: a row-wise kernel's tiles staged in shared memory, a 16-byte slot per thread
//!   per tile, as many tiles as fit.
//! - [`real`]: `f32`, `bf16` and `f16` widened to `f32` and rounded back the same way everywhere.
//! - [`math`]: `exp2` / `exp` / `log` / `tanh` / `fma` / `sqrt` / `rsqrt` with the same rounding on
//!   the device and the host, and `exp2_approx` / `log2_approx` (the device's one-instruction
//!   `ex2.approx` / `lg2.approx`).
//! - [`sync`]: barriers (the block's, named ones, the warp's), shuffles, votes and warp
//!   reductions, on the device and on the simulated GPU alike ([`sim`] on the host).
//! - `device` (`nvptx64` only): indices, typed global loads and stores, `cp.async`, `ldmatrix`
//!   / `mma.sync`, mbarriers, the copy engine (TMA).
//! - [`layout_core`], re-exported whole: layouts, tensors, `local_tile`, tiled copies and MMAs,
//!   identity tensors, swizzles.
//!
//! `use tessel_device::prelude::*;` brings all of it in.
//!
//! On `nvptx64` a kernel crate is built to PTX by `tessel-build` from the host crate's `build.rs`
//! (a `cdylib`, fat LTO, the pinned nightly); on any other target it is an ordinary `no_std`
//! library, which the host links to run the same kernels on its simulated GPU.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        asm_experimental_arch,
        core_intrinsics,
        gpu_intrinsics,
        gpu_launch_sized_workgroup_mem,
        stdarch_nvptx
    )
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]
#![warn(missing_docs)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod ctx;
pub mod frag;
pub mod math;
pub mod mem;
pub mod mma;
pub mod real;
pub mod rows;
#[cfg(not(target_arch = "nvptx64"))]
pub mod sim;
pub mod smem32;
pub mod stage;
pub mod sync;
pub mod tma;
pub mod wgmma;

#[cfg(target_arch = "nvptx64")]
pub mod device;

pub use half;
pub use layout_core;
pub use tessel_macros::kernel;

/// Everything a kernel crate uses: layout-core's whole Tensor API, the kernel declaration, the
/// engines, the element types, and (on `nvptx64`) the device functions.
pub mod prelude {
    pub use crate::ctx::{Ctx, Entry, Geometry, Kernel, KernelInfo};
    #[cfg(target_arch = "nvptx64")]
    pub use crate::device::*;
    pub use crate::frag::{Atom, Fragment};
    pub use crate::kernel;
    pub use crate::math::{
        exp, exp2, exp2_approx, fma, log, log2_approx, rsqrt, sqrt, tanh, LOG2_E,
    };
    pub use crate::mem::{
        AsyncCopy, Device, Dsm, Gmem, Ldmatrix, Mem, Recast, Smem, Space, SwizzleEngine, V4,
    };
    pub use crate::mma::{mma_m16n8k16, MmaIn};
    pub use crate::real::Real;
    pub use crate::rows::{RowSlice, Rows};
    pub use crate::stage::{Stage, Staged};
    pub use crate::sync::*;
    pub use crate::tma::{BulkCopy, GmemTensorMap, TensorMap};
    pub use crate::unroll;
    pub use crate::wgmma::{
        accumulators, gmma_desc, gmma_desc_advance, warpgroup_arrive, warpgroup_commit_batch,
        warpgroup_wait, wgmma,
    };
    /// `core`'s `Result`, not layout-core's alias (which the glob `layout_core::*` would bring in).
    pub use core::result::Result;
    pub use half::{bf16, f16};
    pub use layout_core::*;
}

/// Declares a crate's PTX entry points, `name => KernelType, ...` (after optional attributes
/// for the entry functions, e.g. `#[cfg(target_feature = "sm_90a")]` for kernels only some
/// archs' PTX holds; `name in Space => KernelType` runs the kernel in another device space, e.g.
/// [`smem32::Device32`]): each becomes an
/// `extern "ptx-kernel"` function `name` (on `nvptx64`) taking the kernel's `Params` with global
/// memory by value and running its thread in its space (`device::run_in`), an [`ctx::Entry`] implementation
/// naming it (which the host launcher uses), and a line of `KERNELS`, the crate's registry
/// (name, parameter bytes), for a crate that iterates over its kernels (tessel's tests and
/// `run all`). A kernel crate that does not need the list declares each kernel with
/// [`macro@kernel`] on its `impl Kernel` instead.
#[macro_export]
macro_rules! kernels {
    ($(#[$m:meta])* $($name:ident $(in $space:ty)? => $k:ty),* $(,)?) => {
        $crate::kernels!(@all [$(#[$m])*] $($name [$($space)?] $k),*);
    };
    (@all $attrs:tt $($name:ident $space:tt $k:ty),*) => {
        $( $crate::kernels!(@entry $attrs $name $space $k); )*
        /// Every PTX entry point of this crate, in declaration order.
        pub const KERNELS: &[$crate::ctx::KernelInfo] = &[$(
            $crate::ctx::KernelInfo {
                name: stringify!($name),
                param_bytes: core::mem::size_of::<
                    <$k as $crate::ctx::Kernel>::Params<$crate::kernels!(@space $space)>,
                >(),
            },
        )*];
    };
    (@space []) => { $crate::mem::Device };
    (@space [$space:ty]) => { $space };
    (@entry [$(#[$m:meta])*] $name:ident $space:tt $k:ty) => {
        #[cfg(target_arch = "nvptx64")]
        $(#[$m])*
        #[no_mangle]
        #[doc = concat!("The PTX entry point of `", stringify!($k), "`.")]
        pub unsafe extern "ptx-kernel" fn $name(
            p: <$k as $crate::ctx::Kernel>::Params<$crate::kernels!(@space $space)>,
        ) {
            $crate::device::run_in::<$k, $crate::kernels!(@space $space)>(p)
        }
        impl $crate::ctx::Entry for $k {
            const NAME: &'static str = stringify!($name);
        }
    };
}

/// `unroll!(i < N => { body })`: `body` for `i = 0, 1, .., N - 1` (`N` a constant, at most
/// 16), unrolled in place (CuTeDSL's `range_constexpr`): every `i` is a constant (`usize`), so a
/// register array indexed by it stays in registers. (A `for` loop whose body is large is not
/// unrolled, nor is a closure called in one always inlined: either can send an array, or the
/// variables a closure captures, to local memory, which `scripts/check-ptx.sh` refuses.) The
/// body is the caller's code, so its memory accesses report the caller's lines to the simulated
/// GPU.
#[macro_export]
macro_rules! unroll {
    ($i:ident < $n:expr => $body:block) => {
        const { assert!($n <= 16, "unroll! covers at most 16 iterations") };
        $crate::unroll!(@ $i, $n, $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $i:ident, $n:expr, $body:block; $($k:literal)*) => {
        // the indices past `N` are dead code, which the lint would still check
        $( #[allow(unconditional_panic)] if $k < $n { let $i: usize = $k; $body } )*
    };
}

/// Declares PTX performance directives of entries, `directive: name => value, ...`, with
/// optional `#[cfg(..)]` attributes first (for entries that only some archs' PTX has):
/// `maxntid` (the most threads per block the entry is launched with, which `ptxas` needs to
/// budget registers for a kernel that moves them between warpgroups with `setmaxnreg`) or
/// `reqnctapercluster` (the blocks per cluster it must be launched with; a plain launch then
/// makes clusters). rustc cannot write these directives, so each becomes a `u32` global
/// `<name>__<directive>` in the PTX, and `tessel-build` writes `.<directive> value, 1, 1` into
/// that entry's header.
#[macro_export]
macro_rules! ptx_directives {
    ($(#[$m:meta])* $directive:ident: $($name:ident => $value:expr),* $(,)?) => {
        /// See `ptx_directives!`.
        #[allow(non_upper_case_globals)]
        $(#[$m])*
        pub mod $directive {
            $(
                #[cfg(target_arch = "nvptx64")]
                #[export_name = concat!(stringify!($name), "__", stringify!($directive))]
                #[doc = concat!("`", stringify!($name), "`'s `.", stringify!($directive), "`.")]
                pub static $name: u32 = $value as u32;
            )*
        }
    };
}

/// A panic on the device (an index out of bounds, an `unwrap` of `None`) traps: the launch fails
/// with an error the host reports.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    device::trap()
}
