//! Across the GPUs of one host: NCCL's collectives ([`comm`]) and symmetric windows ([`window`]),
//! the row kernels sharded over GPUs ([`sharded`]), and the GEMM split over them ([`tp_gemm`]).

pub mod comm;
pub mod sharded;
pub mod tp_gemm;
pub mod window;
