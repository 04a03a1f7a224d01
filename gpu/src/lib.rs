//! tessel's device crate: kernels whose every index comes from `layout-core`, compiled to PTX by
//! rustc's NVPTX backend (see the root `build.rs`).
#![no_std]
#![feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem)]
#![allow(internal_features)]
#![allow(clippy::missing_safety_doc)]

pub mod device;
pub mod kernels;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    device::trap()
}
