//! tessel's build of its kernels to PTX. For now: the arch rules that the root `build.rs` and
//! the host runtime share.

#![warn(missing_docs)]

pub mod arch;
