//! `tessel`: the layout calculator, the GPU runtime and the kernels' PTX (built from `gpu/` by
//! `build.rs` and embedded here).

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
