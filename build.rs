//! Builds the device crate `gpu/` to PTX with `tessel-build` (the `builder/` crate) and embeds it:
//! `src/lib.rs`'s `ptx::PTX` includes `$OUT_DIR/tessel.ptx.rs`, a table of (arch, PTX text).
//!
//! - Archs: `TESSEL_ARCH` (comma-separated `sm_XX`, default `sm_90,sm_90a`: the wgmma kernels are
//!   in the sm_90a PTX, which an sm_90 device loads; the rest is in both): `sm_80` or newer (the
//!   kernels use `cp.async` and `cvt.rn.bf16x2.f32`), `sm_90a`-style arch-specific ones too; the
//!   rules are `tessel_build::arch`'s (`host::arch`).
//! - Toolchain: the pinned nightly `tessel_build::NIGHTLY`, with `rust-src`
//!   (`-Zbuild-std=core`); `scripts/setup.sh` installs it, and so does the build when it is
//!   missing, unless `TESSEL_NO_INSTALL=1` (then the build stops with the command that installs
//!   it).
//! - The PTX is rustc's `--emit=asm` output, with fat LTO (layout-core's code is in it). The
//!   NVPTX link step would need `llvm-bitcode-linker`, which is not available: the builder
//!   writes a linker that does nothing and builds with it. The entries' `.maxntid` and
//!   `.reqnctapercluster`, which `gpu/`'s `ptx_directives!` declares as globals, are written into
//!   their headers.
//! - Where: tessel-gpu's directory comes from its build script (`DEP_TESSEL_GPU_ROOT`: `gpu/` in a
//!   checkout, the registry's copy of the crate otherwise).
//! - Cached: the nested build has its own target directory per arch (`gpu/target/<arch>`; in
//!   `OUT_DIR` when the sources are a registry's copy), so
//!   `core` is built once; this script reruns only when a source the PTX was built from changes
//!   (`gpu/`'s, layout-core's: the nested build's dep-info lists them), their `Cargo.toml`,
//!   the workspace's `Cargo.lock`, or one of the variables here.
//! - Without the `gpu` feature (`--no-default-features`: the calculator alone) it does nothing.
//! - `TESSEL_NO_PTX=1` builds without PTX (the CPU parts work; GPU commands say what is missing).

#[cfg(not(feature = "gpu"))]
fn main() {}

#[cfg(feature = "gpu")]
fn main() {
    use std::path::PathBuf;
    // tessel-gpu's directory, from its build script (`links`): `gpu/` in a checkout, the
    // registry's copy of the crate otherwise
    let var = |k: &str| std::env::var(k).map(PathBuf::from);
    let (Ok(gpu), Ok(here), Ok(out)) = (
        var("DEP_TESSEL_GPU_ROOT"),
        var("CARGO_MANIFEST_DIR"),
        var("OUT_DIR"),
    ) else {
        eprintln!("error: tessel's build.rs runs under cargo, with tessel-gpu a dependency");
        std::process::exit(1);
    };
    // the nested builds' target directories: beside the sources in a checkout (kept by `cargo
    // clean` of the workspace), in OUT_DIR for a registry's copy (read-only)
    let target = if gpu.starts_with(&here) {
        gpu.join("target")
    } else {
        out.join("ptx")
    };
    tessel_build::Builder::new(gpu)
        .name("tessel")
        .default_archs(["sm_90", "sm_90a"])
        .target_dir(target)
        .build_or_exit();
}
