//! tessel's host side: the CUDA runtime, and the host executions of the
//! kernels (the kernels' own partitioning code run on the CPU).
#![warn(missing_docs)]

/// GPU archs (`sm_90`, `sm_90a`): which the kernels support, and which PTX runs on a device.
pub use tessel_build::arch;
pub mod blas;
pub mod comm;
pub mod elem;
pub mod exec;
pub mod gemm;
pub mod gemm_sm80;
pub mod gemm_sm90;
pub mod gemm_wg;
pub mod gpu;
pub mod jobs;
mod library;
pub mod matrix;
pub mod mma_tile;
pub mod module;
pub mod peer;
pub mod sharded;
pub mod sim;
pub mod tma;
pub mod tp_gemm;
pub mod tune;
pub mod window;
