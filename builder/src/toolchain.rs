//! The pinned nightly: found, installed when missing (unless told not to), or an error that says
//! what is missing and the command that installs it.

use crate::cargo::rustup_run;
use crate::{BuildError, ErrorKind};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The command that installs `toolchain` with what the builder needs.
pub(crate) fn install_command(toolchain: &str) -> String {
    format!(
        "rustup toolchain install {toolchain} --profile minimal --component rust-src,llvm-tools"
    )
}

/// The command that adds `rust-src` to `toolchain`.
fn rust_src_command(toolchain: &str) -> String {
    format!("rustup component add rust-src --toolchain {toolchain}")
}

/// Where a toolchain keeps the library sources `-Zbuild-std` builds `core` from.
fn rust_src(sysroot: &Path) -> PathBuf {
    sysroot.join("lib/rustlib/src/rust/library")
}

/// What every toolchain error ends with.
const WITHOUT: &str = "(or set TESSEL_NO_PTX=1 to build without the kernels)";

/// Finds `toolchain` through `rustup` and returns its sysroot, which has `rust-src`.
///
/// When the toolchain or its `rust-src` is missing and `install` is true, installs it (saying so
/// with a `cargo:warning`) and looks again. `Err` (kind [`ErrorKind::Toolchain`]) says which of
/// rustup, the toolchain or its `rust-src` is missing, why it was not installed (`install`
/// false: `TESSEL_NO_INSTALL=1`; or the installer's own error), and the command that installs it.
pub(crate) fn ensure(
    rustup: &OsStr,
    toolchain: &str,
    install: bool,
) -> Result<PathBuf, BuildError> {
    let err = |m: String| BuildError::new(ErrorKind::Toolchain, m);
    let not_installed = |why: &str| {
        err(format!(
            "the kernels are built with the pinned toolchain {toolchain}, which is not installed{why}.\n\
             Install it with:\n    {}\n{WITHOUT}",
            install_command(toolchain)
        ))
    };
    let sysroot = match sysroot(rustup, toolchain) {
        Ok(s) => s,
        Err(Probe::NoRustup(e)) => {
            return Err(err(format!(
                "the kernels are built with the pinned toolchain {toolchain}, through rustup, \
                 which was not found ({:?}: {e}).\n\
                 Install rustup with:\n    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh\n\
                 then the toolchain with:\n    {}\n{WITHOUT}",
                rustup,
                install_command(toolchain)
            )))
        }
        Err(Probe::NoToolchain) if !install => {
            return Err(not_installed(" (TESSEL_NO_INSTALL=1: not installed by the build)"))
        }
        Err(Probe::NoToolchain) => {
            println!(
                "cargo:warning=installing the pinned toolchain {toolchain} for the kernels: {} \
                 (TESSEL_NO_INSTALL=1 turns this off)",
                install_command(toolchain)
            );
            let mut cmd = Command::new(rustup);
            cmd.args(["toolchain", "install", toolchain, "--profile", "minimal"])
                .args(["--component", "rust-src,llvm-tools"]);
            if let Err(why) = run(cmd) {
                return Err(not_installed(&format!(" and installing it failed:\n{why}\n")));
            }
            sysroot(rustup, toolchain).map_err(|_| {
                not_installed(" (rustup installed it but cannot run its rustc)")
            })?
        }
    };
    if rust_src(&sysroot).is_dir() {
        return Ok(sysroot);
    }
    let no_src = |why: &str| {
        err(format!(
            "the pinned toolchain {toolchain} has no rust-src, which -Zbuild-std=core builds \
             core from ({} does not exist){why}.\nAdd it with:\n    {}\n{WITHOUT}",
            rust_src(&sysroot).display(),
            rust_src_command(toolchain)
        ))
    };
    if !install {
        return Err(no_src(" (TESSEL_NO_INSTALL=1: not installed by the build)"));
    }
    println!(
        "cargo:warning=adding rust-src to {toolchain} for the kernels: {} \
         (TESSEL_NO_INSTALL=1 turns this off)",
        rust_src_command(toolchain)
    );
    let mut cmd = Command::new(rustup);
    cmd.args(["component", "add", "rust-src", "--toolchain", toolchain]);
    if let Err(why) = run(cmd) {
        return Err(no_src(&format!(" and adding it failed:\n{why}\n")));
    }
    if rust_src(&sysroot).is_dir() {
        Ok(sysroot)
    } else {
        Err(no_src(" (rustup added it, but not there)"))
    }
}

/// Why the toolchain could not be run.
enum Probe {
    /// rustup itself could not be started.
    NoRustup(std::io::Error),
    /// `rustup run <toolchain> rustc` failed: the toolchain is not installed (or broken).
    NoToolchain,
}

/// `rustup run <toolchain> rustc --print sysroot`, never installing anything.
fn sysroot(rustup: &OsStr, toolchain: &str) -> Result<PathBuf, Probe> {
    let o = rustup_run(rustup, toolchain, "rustc")
        .args(["--print", "sysroot"])
        .env("RUSTUP_AUTO_INSTALL", "0")
        .output();
    match o {
        Err(e) => Err(Probe::NoRustup(e)),
        Ok(o) if o.status.success() => {
            let s = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if s.is_empty() {
                Err(Probe::NoToolchain)
            } else {
                Ok(PathBuf::from(s))
            }
        }
        Ok(_) => Err(Probe::NoToolchain),
    }
}

/// Runs an installer; `Err` has what it wrote.
fn run(mut cmd: Command) -> Result<(), String> {
    match cmd.output() {
        Ok(Output { status, .. }) if status.success() => Ok(()),
        Ok(o) => Err(format!(
            "{status}\n{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
            status = o.status
        )),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_toolchain_is_named_with_its_install_command() {
        let bogus = "nightly-1999-01-01-tessel-build-test";
        let e = ensure(OsStr::new("rustup"), bogus, false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Toolchain);
        let m = e.to_string();
        assert!(
            m.contains(&format!("pinned toolchain {bogus}, which is not installed")),
            "{m}"
        );
        assert!(m.contains("TESSEL_NO_INSTALL=1"), "{m}");
        assert!(
            m.contains(&format!(
                "\n    rustup toolchain install {bogus} --profile minimal --component rust-src,llvm-tools\n"
            )),
            "{m}"
        );
        assert!(
            m.ends_with("TESSEL_NO_PTX=1 to build without the kernels)"),
            "{m}"
        );
    }

    #[test]
    fn a_missing_rustup_is_named_with_both_commands() {
        let e = ensure(
            OsStr::new("/nonexistent/rustup"),
            "nightly-2026-05-20",
            true,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Toolchain);
        let m = e.to_string();
        assert!(m.contains("through rustup, which was not found"), "{m}");
        assert!(m.contains("https://sh.rustup.rs"), "{m}");
        assert!(m.contains(&install_command("nightly-2026-05-20")), "{m}");
        assert!(m.contains("TESSEL_NO_PTX=1"), "{m}");
    }
}
