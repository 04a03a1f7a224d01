//! The CUDA runtime: the device and its tensors ([`gpu`]), a kernel crate's PTX loaded and
//! launched ([`module`]), the copy engine's tensor maps ([`tma`]), and the libraries loaded at
//! run time (`library`).

pub mod gpu;
pub(crate) mod library;
pub mod module;
pub mod tma;
