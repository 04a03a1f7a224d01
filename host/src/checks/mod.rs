//! tessel's kernels on the simulated GPU: the row kernels' host executions ([`exec`]), the GEMMs
//! ([`gemm_sm80`], [`gemm_sm90`]) and the tensor-core checks ([`gemm_wg`], [`mma_tile`]), each
//! with its inputs, its reference and how a result is judged.

pub mod attention;
pub mod exec;
pub mod gemm_sm80;
pub mod gemm_sm90;
pub mod gemm_wg;
pub mod mma_tile;
