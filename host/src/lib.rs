//! tessel's host side, grouped by role. Each group uses only the groups listed before it (no
//! import cycle between them):
//!
//! - [`sim`]: the simulated GPU, which runs a kernel's own function for every thread on the CPU
//!   and checks it as it runs (and the copy engine's addressing rules, which the runtime's
//!   encoder applies too).
//! - [`elem`], [`matrix`]: the element types the kernels move (with their kernels, for the
//!   device and the simulated GPU) and a seeded generator of inputs; host matrices of rows.
//! - [`tune`]: the kernels' configurations, their defaults, and the tuner's cache.
//! - [`runtime`]: the CUDA runtime: the device, its tensors, loading PTX, launching, tensor maps.
//! - [`blas`]: cuBLAS, and the `f64` references and error bounds the GEMM checks use.
//! - [`checks`]: tessel's kernels on the simulated GPU: their host executions, inputs and
//!   judgments.
//! - [`jobs`]: what `tessel run` and `tessel bench` do per kernel, and the peers timed beside.
//! - [`collectives`]: NCCL's collectives across GPUs, symmetric windows, the sharded kernels and
//!   the GEMM split over GPUs.
#![warn(missing_docs)]

/// GPU archs (`sm_90`, `sm_90a`): which the kernels support, and which PTX runs on a device.
pub use tessel_build::arch;
pub mod blas;
pub mod checks;
pub mod collectives;
pub mod elem;
pub mod jobs;
pub mod matrix;
pub mod runtime;
pub mod sim;
pub mod tune;
