//! Tells the crates that build this one to PTX where its sources are: their build scripts read
//! `DEP_TESSEL_GPU_ROOT` (Cargo passes a `links` crate's `cargo:KEY=VALUE` lines to its dependents'
//! build scripts), the same in a checkout and in a registry's copy of the crate.

fn main() {
    if let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") {
        println!("cargo:root={dir}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
