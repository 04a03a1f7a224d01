//! Builds the device crate `gpu/` to PTX with rustc's NVPTX backend and embeds it: `src/ptx.rs`
//! includes `$OUT_DIR/ptx.rs`, a table of (arch, PTX text).
//!
//! - Archs: `TESSEL_ARCH` (comma-separated `sm_XX`, default `sm_90,sm_90a`: the wgmma kernels are
//!   in the sm_90a PTX, which an sm_90 device loads; the rest is in both): `sm_80` or newer (the
//!   kernels use `cp.async` and `cvt.rn.bf16x2.f32`), `sm_90a`-style arch-specific ones too; the
//!   rules are `builder/src/arch.rs`'s.
//! - Toolchain: the pinned nightly below, with `rust-src` (`-Zbuild-std=core`); `scripts/setup.sh`
//!   installs it. Without it the build stops with the command that installs it.
//! - The PTX is rustc's `--emit=asm` output. The NVPTX link step would need `llvm-bitcode-linker`,
//!   which is not available: `scripts/nvptx-no-link.sh`, a linker that does nothing, keeps the
//!   build clean.
//! - Cached: the nested build has its own target directory per arch (`gpu/target/<arch>`), so
//!   `core` is built once; this script reruns only when the device sources change.
//! - `TESSEL_NO_PTX=1` builds without PTX (the CPU parts work; GPU commands say what is missing).

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const NIGHTLY: &str = "nightly-2026-05-20";

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    for p in [
        "gpu/src",
        "gpu/Cargo.toml",
        "gpu/Cargo.lock",
        "layout-core/src",
        "layout-core/Cargo.toml",
        "scripts/nvptx-no-link.sh",
    ] {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rerun-if-env-changed=TESSEL_ARCH");
    println!("cargo:rerun-if-env-changed=TESSEL_NO_PTX");

    let mut table = String::from(
        "/// (arch, PTX) for every arch built.\npub const PTX: &[(&str, &str)] = &[\n",
    );
    if env::var("TESSEL_NO_PTX").is_ok_and(|v| v == "1") {
        println!("cargo:warning=TESSEL_NO_PTX=1: built without PTX; GPU commands will not run");
    } else {
        let archs = env::var("TESSEL_ARCH").unwrap_or_else(|_| "sm_90,sm_90a".into());
        let archs: Vec<&str> = archs
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .collect();
        if archs.is_empty() {
            fail("TESSEL_ARCH names no arch (e.g. TESSEL_ARCH=sm_80,sm_90; TESSEL_NO_PTX=1 builds without PTX)");
        }
        if let Some(e) = archs.iter().find_map(|a| check_arch(a).err()) {
            fail(&e);
        }
        for arch in archs {
            match build_ptx(&root, arch) {
                Ok(ptx) => {
                    let dst = out.join(format!("tessel_{arch}.ptx"));
                    let text = std::fs::read_to_string(&ptx).expect("read the PTX");
                    let text = launch_bounds(&text).unwrap_or_else(|e| fail(&e));
                    std::fs::write(&dst, text).expect("write the PTX into OUT_DIR");
                    writeln!(
                        table,
                        "    (\"{arch}\", include_str!({:?})),",
                        dst.display()
                    )
                    .unwrap();
                }
                Err(e) => fail(&e),
            }
        }
    }
    table.push_str("];\n");
    std::fs::write(out.join("ptx.rs"), table).expect("write ptx.rs");
}

fn fail(msg: &str) -> ! {
    eprintln!("\n{msg}\n");
    std::process::exit(1)
}

/// Writes the entries' performance directives into their headers: for every global
/// `<entry>__<directive>` (a `u32` that `gpu/`'s `ptx_directives!` declares, as rustc cannot
/// write the directives) with `<directive>` `maxntid` or `reqnctapercluster`, the line
/// `.<directive> N, 1, 1` after the entry's parameter list.
fn launch_bounds(ptx: &str) -> Result<String, String> {
    let mut out = ptx.to_string();
    for line in ptx.lines() {
        let Some(rest) = line.strip_prefix(".visible .global .align 4 .b8 ") else {
            continue;
        };
        let Some((decl, init)) = rest.split_once("[4] = {") else {
            continue;
        };
        let Some((name, directive)) = ["maxntid", "reqnctapercluster"]
            .iter()
            .find_map(|d| Some((decl.strip_suffix(&format!("__{d}"))?, *d)))
        else {
            continue;
        };
        // the u32's bytes, little-endian, trailing zeros left out
        let bytes: Result<Vec<u32>, _> = init
            .trim_end_matches("};")
            .split(',')
            .map(|b| b.trim().parse::<u32>())
            .collect();
        let n = match bytes {
            Ok(b) if !b.is_empty() && b.len() <= 4 && b.iter().all(|&x| x < 256) => {
                b.iter().rev().fold(0u32, |n, &x| (n << 8) | x)
            }
            _ => return Err(format!("{decl}: not a u32 initialiser: {line}")),
        };
        let limit = if directive == "maxntid" { 1024 } else { 16 };
        if n == 0 || n > limit {
            return Err(format!("{decl}: {n} outside 1..={limit}"));
        }
        let head = format!(".entry {name}(");
        let Some(at) = out.find(&head) else {
            return Err(format!("{decl} names no entry {name} in the PTX"));
        };
        let Some(close) = out[at..].find("\n)\n") else {
            return Err(format!("{name}: the entry's parameter list has no end"));
        };
        let pos = at + close + 3;
        out.insert_str(pos, &format!(".{directive} {n}, 1, 1\n"));
    }
    Ok(out)
}

/// `TESSEL_ARCH`'s rules, shared with `tessel ptx --arch` and the runtime's choice of PTX.
use tessel_build::arch;

/// `Ok` for `sm_<N>` / `sm_<N>a` with `N >= 80`; `Err` names the condition `arch` breaks.
fn check_arch(arch: &str) -> Result<(), String> {
    arch::Arch::parse(arch)
        .map(|_| ())
        .map_err(|e| format!("TESSEL_ARCH={arch}: {e}"))
}

/// `cargo +NIGHTLY rustc --release --target nvptx64-nvidia-cuda -Zbuild-std=core --crate-type
/// cdylib -- --emit=asm -C target-cpu=ARCH -C target-feature=+ptx83`, in `gpu/`; returns the
/// `.s` file (the PTX).
fn build_ptx(root: &Path, arch: &str) -> Result<PathBuf, String> {
    let gpu = root.join("gpu");
    let target_dir = gpu.join("target").join(arch);
    let linker = root.join("scripts/nvptx-no-link.sh");
    let mut cmd = Command::new("rustup");
    cmd.args([
        "run",
        NIGHTLY,
        "cargo",
        "rustc",
        "--quiet",
        "--locked",
        "--release",
    ])
    .args([
        "--target",
        "nvptx64-nvidia-cuda",
        "-Zbuild-std=core",
        "--crate-type",
        "cdylib",
    ])
    .arg("--target-dir")
    .arg(&target_dir)
    // PTX ISA 8.3: the copy engine's tensor loads, mbarrier transaction counts and the
    // tensormap proxy fence (sm_90 kernels); the driver JIT-compiles it for any arch built
    .args([
        "--",
        "--emit=asm",
        &format!("-Ctarget-cpu={arch}"),
        "-Ctarget-feature=+ptx83",
    ])
    .arg(format!("-Clinker={}", linker.display()))
    .current_dir(&gpu);
    // This build script runs inside cargo: keep the outer build's settings out of the inner one.
    for (k, _) in env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        let keep = [
            "CARGO_HOME",
            "CARGO_REGISTRIES_",
            "CARGO_REGISTRY_",
            "CARGO_SOURCE_",
            "CARGO_NET_",
            "CARGO_HTTP_",
        ]
        .iter()
        .any(|p| k.starts_with(p));
        let outer = k.starts_with("CARGO")
            || k.starts_with("__CARGO")
            || k.starts_with("RUSTC")
            || k.starts_with("RUSTDOC")
            || matches!(
                k.as_str(),
                "RUSTFLAGS"
                    | "RUSTUP_TOOLCHAIN"
                    | "TARGET"
                    | "HOST"
                    | "OUT_DIR"
                    | "OPT_LEVEL"
                    | "PROFILE"
                    | "DEBUG"
                    | "NUM_JOBS"
            );
        if outer && !keep {
            cmd.env_remove(&k);
        }
    }
    let installed = Command::new("rustup")
        .args(["run", NIGHTLY, "rustc", "--version"])
        .env_remove("RUSTUP_TOOLCHAIN")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        return Err(format!(
            "tessel builds its GPU kernels with the pinned toolchain {NIGHTLY}, which is not installed.\n\
             Install it with:\n    bash scripts/setup.sh\n\
             or:\n    rustup toolchain install {NIGHTLY} --profile minimal --component rust-src,llvm-tools\n\
             (or set TESSEL_NO_PTX=1 to build without the kernels)"
        ));
    }
    let o = cmd
        .output()
        .map_err(|e| format!("could not run rustup: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "building gpu/ to PTX for {arch} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    let ptx = target_dir.join("nvptx64-nvidia-cuda/release/deps/tessel_gpu.s");
    if !ptx.exists() {
        return Err(format!("the PTX {} was not written", ptx.display()));
    }
    Ok(ptx)
}
