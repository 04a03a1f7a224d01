//! The nested cargo: its environment, `cargo metadata`, and the command that builds the PTX.

use crate::{BuildError, ErrorKind};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The NVPTX target the kernels are built for.
pub(crate) const TARGET: &str = "nvptx64-nvidia-cuda";

/// Removes the outer build's settings from `cmd`'s environment: a build script runs inside
/// cargo, which sets `CARGO_*`, `RUSTC*`, `RUSTFLAGS`, `TARGET`, `OUT_DIR`, ... for it, and the
/// nested cargo must not build with them (another target dir, the host's target and flags).
/// Kept: `CARGO_HOME` and the registry, source, network and HTTP settings.
pub(crate) fn scrub(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if is_outer(&k) {
            cmd.env_remove(&k);
        }
    }
    cmd
}

/// Is `k` one of the outer build's variables that [`scrub`] removes?
fn is_outer(k: &str) -> bool {
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
            k,
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
    outer && !keep
}

/// `rustup run <toolchain> <tool>`, its environment scrubbed.
pub(crate) fn rustup_run(rustup: &OsStr, toolchain: &str, tool: &str) -> Command {
    let mut cmd = Command::new(rustup);
    cmd.args(["run", toolchain, tool]);
    scrub(&mut cmd);
    cmd
}

/// The cargo that runs this build script (`$CARGO`, else `cargo` on `PATH`), its environment
/// scrubbed: for `cargo metadata` when no toolchain is needed (`TESSEL_NO_PTX=1`).
pub(crate) fn outer_cargo() -> Command {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    scrub(&mut cmd);
    cmd
}

/// What `cargo metadata` says of the kernel crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Package {
    /// The lib target's crate name (`-` written `_`): the stem of the `.s` and `.d` files.
    pub lib: String,
    /// The root of the crate's workspace (the crate itself when it is its own): where its
    /// `Cargo.lock` is.
    pub workspace_root: PathBuf,
}

/// Runs `cargo metadata --no-deps --format-version 1` for the crate whose manifest is
/// `manifest` (an existing `Cargo.toml`), with `cargo` the command that runs cargo.
pub(crate) fn metadata(mut cargo: Command, manifest: &Path) -> Result<Package, BuildError> {
    let err = |m: String| BuildError::new(ErrorKind::Metadata, m);
    cargo
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(manifest);
    let o = cargo
        .output()
        .map_err(|e| err(format!("could not run {:?}: {e}", cargo.get_program())))?;
    if !o.status.success() {
        return Err(err(format!(
            "cargo metadata failed for {} ({}):\n{}",
            manifest.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
        )));
    }
    package(&o.stdout, manifest).map_err(err)
}

/// Reads the crate of `manifest` out of `cargo metadata`'s output `json`.
fn package(json: &[u8], manifest: &Path) -> Result<Package, String> {
    let v: serde_json::Value = serde_json::from_slice(json).map_err(|e| {
        format!(
            "cargo metadata wrote no JSON for {}: {e}",
            manifest.display()
        )
    })?;
    let same = |p: &str| {
        let (a, b) = (Path::new(p).canonicalize(), manifest.canonicalize());
        matches!((a, b), (Ok(a), Ok(b)) if a == b)
    };
    let pkg = v["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["manifest_path"].as_str().is_some_and(same))
        .ok_or_else(|| format!("{} is not a package's manifest", manifest.display()))?;
    let lib = pkg["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| {
            t["kind"].as_array().into_iter().flatten().any(|k| {
                matches!(
                    k.as_str(),
                    Some("lib" | "rlib" | "dylib" | "cdylib" | "staticlib")
                )
            })
        })
        .and_then(|t| t["name"].as_str())
        .ok_or_else(|| format!("{} has no lib target to build", manifest.display()))?;
    let root = v["workspace_root"].as_str().ok_or_else(|| {
        format!(
            "cargo metadata names no workspace root for {}",
            manifest.display()
        )
    })?;
    Ok(Package {
        lib: lib.replace('-', "_"),
        workspace_root: PathBuf::from(root),
    })
}

/// What one nested build needs.
pub(crate) struct PtxBuild<'a> {
    /// rustup.
    pub rustup: &'a OsStr,
    /// The pinned toolchain.
    pub toolchain: &'a str,
    /// The kernel crate's directory (the nested cargo runs there).
    pub crate_dir: &'a Path,
    /// This arch's target directory.
    pub target_dir: &'a Path,
    /// `sm_XX`, checked.
    pub arch: &'a str,
    /// `--locked` (the crate's workspace has a `Cargo.lock`).
    pub locked: bool,
    /// The linker that does nothing.
    pub linker: &'a Path,
}

impl PtxBuild<'_> {
    /// `rustup run <toolchain> cargo rustc --quiet [--locked] --release --lib --target
    /// nvptx64-nvidia-cuda -Zbuild-std=core --crate-type cdylib --target-dir <dir> --config
    /// <release profile> -- --emit=asm -Ctarget-cpu=<arch> -Ctarget-feature=+ptx83
    /// -Clinker=<linker>`, run in the crate's directory, environment scrubbed.
    pub(crate) fn command(&self) -> Command {
        let mut cmd = rustup_run(self.rustup, self.toolchain, "cargo");
        cmd.args(["rustc", "--quiet"]);
        if self.locked {
            cmd.arg("--locked");
        }
        cmd.args(["--release", "--lib", "--target", TARGET])
            .args(["-Zbuild-std=core", "--crate-type", "cdylib"])
            .arg("--target-dir")
            .arg(self.target_dir)
            // what the PTX needs whatever the crate's profile says: fat LTO puts the
            // dependencies' code (there is no linker) into the one `.s`, one codegen unit makes
            // it one file, no unwinding on the GPU; and the kernel's speed: full optimization,
            // no overflow checks or debug assertions (a host profile with overflow checks on
            // would put a branch and a panic call after every index computation)
            .args([
                "--config",
                "profile.release.lto=\"fat\"",
                "--config",
                "profile.release.codegen-units=1",
                "--config",
                "profile.release.panic=\"abort\"",
                "--config",
                "profile.release.opt-level=3",
                "--config",
                "profile.release.overflow-checks=false",
                "--config",
                "profile.release.debug-assertions=false",
            ])
            // PTX ISA 8.3: the copy engine's tensor loads, mbarrier transaction counts and the
            // tensormap proxy fence (sm_90 kernels); the driver JIT-compiles it for any arch
            .args([
                "--",
                "--emit=asm",
                &format!("-Ctarget-cpu={}", self.arch),
                "-Ctarget-feature=+ptx83",
            ])
            .arg(format!("-Clinker={}", self.linker.display()))
            .current_dir(self.crate_dir);
        cmd
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outer_builds_variables_are_scrubbed() {
        for k in [
            "CARGO",
            "CARGO_TARGET_DIR",
            "CARGO_ENCODED_RUSTFLAGS",
            "CARGO_MANIFEST_DIR",
            "CARGO_BUILD_JOBS",
            "__CARGO_FIX_PLZ",
            "RUSTC",
            "RUSTC_WRAPPER",
            "RUSTDOCFLAGS",
            "RUSTFLAGS",
            "RUSTUP_TOOLCHAIN",
            "TARGET",
            "OUT_DIR",
            "PROFILE",
            "NUM_JOBS",
        ] {
            assert!(is_outer(k), "{k}");
        }
        for k in [
            "CARGO_HOME",
            "CARGO_REGISTRIES_CRATES_IO_PROTOCOL",
            "CARGO_NET_OFFLINE",
            "CARGO_HTTP_TIMEOUT",
            "PATH",
            "HOME",
            "RUSTUP_HOME",
            "TESSEL_ARCH",
        ] {
            assert!(!is_outer(k), "{k}");
        }
    }

    #[test]
    fn the_nested_build_is_the_documented_command() {
        let b = PtxBuild {
            rustup: OsStr::new("rustup"),
            toolchain: "nightly-2026-05-20",
            crate_dir: Path::new("/w/gpu"),
            target_dir: Path::new("/w/gpu/target/sm_90a"),
            arch: "sm_90a",
            locked: true,
            linker: Path::new("/w/gpu/target/nvptx-no-link.sh"),
        };
        let args = |c: &Command| -> Vec<String> {
            c.get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let c = b.command();
        assert_eq!(c.get_program(), "rustup");
        assert_eq!(c.get_current_dir(), Some(Path::new("/w/gpu")));
        let want = "run nightly-2026-05-20 cargo rustc --quiet --locked --release --lib \
                    --target nvptx64-nvidia-cuda -Zbuild-std=core --crate-type cdylib \
                    --target-dir /w/gpu/target/sm_90a \
                    --config profile.release.lto=\"fat\" --config profile.release.codegen-units=1 \
                    --config profile.release.panic=\"abort\" --config profile.release.opt-level=3 \
                    --config profile.release.overflow-checks=false \
                    --config profile.release.debug-assertions=false \
                    -- --emit=asm -Ctarget-cpu=sm_90a -Ctarget-feature=+ptx83 \
                    -Clinker=/w/gpu/target/nvptx-no-link.sh";
        assert_eq!(args(&c).join(" "), want);
        let unlocked = PtxBuild { locked: false, ..b }.command();
        assert_eq!(args(&unlocked).join(" "), want.replace(" --locked", ""));
    }

    #[test]
    fn metadata_names_the_lib_target_of_the_crate() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let p = metadata(outer_cargo(), &here.join("Cargo.toml")).unwrap();
        assert_eq!(p.lib, "tessel_build");
        assert_eq!(p.workspace_root, here.parent().unwrap());
        let json = br#"{"packages": [{"manifest_path": "/nowhere/Cargo.toml", "targets": []}],
                        "workspace_root": "/nowhere"}"#;
        let e = package(json, &here.join("Cargo.toml")).unwrap_err();
        assert!(e.ends_with("is not a package's manifest"), "{e}");
    }
}
