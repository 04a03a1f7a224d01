//! `tessel`: the layout calculator, the GPU runtime and the kernels' PTX (built from `gpu/` by
//! `build.rs` and embedded here; the feature `gpu`, on by default: without it, the calculator
//! alone).
//!
//! For a program with kernels of its own (`docs/writing-kernels.md`): the kernel crate depends on
//! `tessel-device`; the host crate builds it to PTX from its `build.rs` with `tessel-build`,
//! embeds it with [`include_ptx!`], opens the device with [`gpu::Gpu::device`], loads the PTX
//! with [`gpu::Gpu::load`] and launches with [`module::Module::launch`]; [`sim::launch`] runs the
//! same kernel on the CPU's simulated GPU to check it and the GPU's result. [`prelude`] has all
//! of it.

#![warn(missing_docs)]

#[cfg(feature = "gpu")]
pub use host::checks::exec;
#[cfg(feature = "gpu")]
pub use host::jobs::peer;
#[cfg(feature = "gpu")]
pub use host::runtime::{gpu, module};
#[cfg(feature = "gpu")]
pub use host::{matrix, sim};
pub use layout_core;
pub mod chart;
pub mod results;
/// The layout calculator (`tessel eval`, `show`, `svg`, `analyze`).
pub use tessel_calc as calc;

#[cfg(feature = "gpu")]
/// What a host program with its own kernels uses: the device and its tensors, the loaded module,
/// the host execution, and the element types.
pub mod prelude {
    pub use crate::include_ptx;
    pub use half::{bf16, f16};
    pub use host::checks::exec::run as run_on_host;
    pub use host::elem::{Elem, Rng};
    pub use host::runtime::gpu::{flat_param, row_major, DeviceTensor, Gpu, GpuError};
    pub use host::runtime::module::Module;
    pub use host::runtime::tma::{encode_2d, TensorMap as DeviceTensorMap, TmaSwizzle};
    pub use host::sim::{self, HostMem, Sim, SimError, SimTensorMap};
    pub use layout_core::{FlatLayout, FlatTensor, IntTuple, Layout};
    pub use tessel_gpu::ctx::{Entry, Geometry, Kernel};
    pub use tessel_gpu::mem::{Device, Gmem};
    pub use tessel_gpu::real::Real;
    pub use tessel_gpu::tma::GmemTensorMap;
}

/// The PTX table `tessel-build` wrote for kernel crate `name` (the build script's
/// `Builder::new(..)`, named by the crate's library name unless `.name(..)` set another): a
/// `&'static [(&'static str, &'static str)]` of (arch, PTX text), for [`gpu::Gpu::load`].
#[cfg(feature = "gpu")]
#[macro_export]
macro_rules! include_ptx {
    ($name:literal) => {
        include!(concat!(env!("OUT_DIR"), "/", $name, ".ptx.rs"))
    };
}

#[cfg(feature = "gpu")]
pub mod ptx {
    //! The embedded PTX.

    /// (arch, PTX) for every arch built, in the order built (none with `TESSEL_NO_PTX=1`).
    pub const PTX: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/tessel.ptx.rs"));

    /// The PTX built for `arch` (`sm_XX`), if it was built.
    pub fn for_arch(arch: &str) -> Option<&'static str> {
        PTX.iter().find(|(a, _)| *a == arch).map(|(_, p)| *p)
    }
    /// The archs built, in the order they were built.
    pub fn archs() -> Vec<&'static str> {
        PTX.iter().map(|(a, _)| *a).collect()
    }
}
