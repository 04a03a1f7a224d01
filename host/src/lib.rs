//! tessel's host side: the layout calculator, and (with a driver) PTX loading, launches and the
//! host executions of the kernels.
#![warn(missing_docs)]

pub mod calc;
