//! Builds the kernel crate `kernels/` to PTX (for `TESSEL_ARCH`, default sm_90) and writes the
//! table that `tessel::include_ptx!("layernorm_kernels")` embeds.
fn main() {
    tessel_build::Builder::new("kernels").build_or_exit();
}
