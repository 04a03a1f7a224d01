//! Builds a crate of CUDA kernels written in Rust to PTX from a host crate's build script, with
//! rustc's NVPTX backend, and hands the host crate a table of (arch, PTX) to embed.
//!
//! ```no_run
//! // the `fn main` of the host crate's build.rs; the kernels are the crate in `kernels/`
//! tessel_build::Builder::new("kernels").build_or_exit();
//! ```
//!
//! ```ignore
//! // the host crate: one (arch, PTX text) per arch built
//! const PTX: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/kernels.ptx.rs"));
//! ```
//!
//! What [`Builder::build`] does:
//!
//! - **Archs**: [`Builder::archs`], else `TESSEL_ARCH` (comma-separated), else
//!   [`Builder::default_archs`] (`sm_90` unless set). Every arch must pass [`arch::Arch::parse`].
//! - **Toolchain**: the pinned nightly [`NIGHTLY`] with `rust-src` (`-Zbuild-std=core` builds
//!   `core` for the GPU from it), run through rustup. When it is missing the build installs it
//!   (`rustup toolchain install NIGHTLY --profile minimal --component rust-src,llvm-tools`), unless
//!   `TESSEL_NO_INSTALL=1`: then the error says what is missing and the command that installs it.
//! - **The nested build**, one per arch, all the archs' at once (each ends in a single fat-LTO
//!   codegen unit, one core's work), in the kernel crate's directory:
//!   `rustup run NIGHTLY cargo rustc --quiet [--locked] --release --lib --target
//!   nvptx64-nvidia-cuda -Zbuild-std=core --crate-type cdylib --target-dir <target dir>/<arch>
//!   --config profile.release.{lto="fat",codegen-units=1,panic="abort",opt-level=3,
//!   overflow-checks=false,debug-assertions=false} -- --emit=asm -Ctarget-cpu=<arch>
//!   -Ctarget-feature=+ptx83 -Clinker=<a linker that does nothing>` (each setting its own
//!   `--config`). The PTX is rustc's `--emit=asm` output; fat LTO puts the dependencies' code into
//!   it (nothing links PTX afterwards). These settings hold whatever the crate's own profile says
//!   (a host profile with overflow checks must not put a panic branch after every index
//!   computation of a kernel). `--locked` when the crate's workspace has a `Cargo.lock`. The outer build's
//!   variables (`CARGO_*`, `RUSTFLAGS`, `TARGET`, ...) are kept out of it; the registry and
//!   network settings and `CARGO_HOME` are passed on.
//! - **Directives** rustc cannot write: a global `u32` `<entry>__maxntid` or
//!   `<entry>__reqnctapercluster` in the PTX becomes the line `.maxntid N, 1, 1` or
//!   `.reqnctapercluster N, 1, 1` in the header of the entry `<entry>` (CUDA C++'s
//!   `__launch_bounds__` and `__cluster_dims__`).
//! - **Outputs**, in `$OUT_DIR`: `<name>_<arch>.ptx` for every arch, and `<name>.ptx.rs`, one Rust
//!   expression of type `&'static [(&'static str, &'static str)]`: `&[("sm_90",
//!   include_str!("/abs/path/<name>_sm_90.ptx")), ...]`, in the order of the archs.
//! - **Reruns**: the build script prints `cargo:rerun-if-changed` for every source file the
//!   nested build read (the dependencies' in the same workspace or on a path too, as cargo's
//!   dep-info lists them; not the toolchain's), their packages' `Cargo.toml`, the kernel crate's
//!   `Cargo.toml` and its workspace's `Cargo.lock`, and `cargo:rerun-if-env-changed` for
//!   `TESSEL_ARCH`, `TESSEL_NO_PTX` and `TESSEL_NO_INSTALL`: cargo reruns it only when one of
//!   them changes, and the nested build (its own target directory per arch, `core` built once)
//!   rebuilds only what changed.
//! - `TESSEL_NO_PTX=1` builds nothing: the table is `&[]` and a `cargo:warning` says so.

#![warn(missing_docs)]

pub mod arch;
mod cargo;
mod depinfo;
mod directives;
mod toolchain;

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

/// The nightly toolchain the kernels are built with (rustc's NVPTX backend and
/// `-Zbuild-std=core` need a nightly; pinned so that the PTX does not change under the crate).
pub const NIGHTLY: &str = "nightly-2026-05-20";

/// The arch built when neither [`Builder::archs`], `TESSEL_ARCH` nor
/// [`Builder::default_archs`] names one.
pub const DEFAULT_ARCH: &str = "sm_90";

/// The environment variables that change what the builder does (each rerun the build script).
const ENV_VARS: [&str; 3] = ["TESSEL_ARCH", "TESSEL_NO_PTX", "TESSEL_NO_INSTALL"];

/// Builds a kernel crate to PTX, from a build script: set it up with the methods below, then
/// [`build`](Builder::build) or [`build_or_exit`](Builder::build_or_exit).
#[derive(Debug, Clone)]
#[must_use = "a Builder builds nothing until .build() or .build_or_exit()"]
pub struct Builder {
    crate_path: PathBuf,
    archs: Option<Vec<String>>,
    default_archs: Vec<String>,
    name: Option<String>,
    target_dir: Option<PathBuf>,
    toolchain: String,
    rustup: OsString,
}

impl Builder {
    /// A builder of the kernel crate in the directory `crate_path`: relative to the build
    /// script's package (`CARGO_MANIFEST_DIR`), or absolute. It must hold the crate's
    /// `Cargo.toml`, with a lib target (checked by [`build`](Builder::build)).
    pub fn new(crate_path: impl Into<PathBuf>) -> Builder {
        Builder {
            crate_path: crate_path.into(),
            archs: None,
            default_archs: vec![DEFAULT_ARCH.to_string()],
            name: None,
            target_dir: None,
            toolchain: NIGHTLY.to_string(),
            rustup: OsString::from("rustup"),
        }
    }

    /// Builds exactly these archs (`sm_XX` or `sm_XXa`), in this order, whatever `TESSEL_ARCH`
    /// says. Without it: `TESSEL_ARCH`, else [`default_archs`](Builder::default_archs).
    /// [`build`](Builder::build) refuses an empty list or an arch [`arch::Arch::parse`] refuses;
    /// an arch named twice is built once.
    pub fn archs<S: Into<String>>(mut self, archs: impl IntoIterator<Item = S>) -> Builder {
        self.archs = Some(archs.into_iter().map(Into::into).collect());
        self
    }

    /// The archs built when neither [`archs`](Builder::archs) nor `TESSEL_ARCH` names any
    /// ([`DEFAULT_ARCH`] unless set); checked like [`archs`](Builder::archs).
    pub fn default_archs<S: Into<String>>(mut self, archs: impl IntoIterator<Item = S>) -> Builder {
        self.default_archs = archs.into_iter().map(Into::into).collect();
        self
    }

    /// The file stem of the outputs: `<name>_<arch>.ptx` and `<name>.ptx.rs`. Default: the
    /// kernel crate's lib name (`my_kernels` for a package `my-kernels`). It must be non-empty
    /// and have no path separator.
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// The nested cargo's target directory, relative to `CARGO_MANIFEST_DIR` or absolute; each
    /// arch is built in its own subdirectory `<dir>/<arch>` (so that switching archs rebuilds
    /// nothing), and the builder keeps its no-op linker script there. Default:
    /// `<kernel crate>/target/ptx`.
    pub fn target_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.target_dir = Some(dir.into());
        self
    }

    /// Builds with the toolchain `name` instead of [`NIGHTLY`] (for tests of the builder).
    #[doc(hidden)]
    pub fn toolchain(mut self, name: impl Into<String>) -> Builder {
        self.toolchain = name.into();
        self
    }

    /// Builds the kernel crate to PTX for every arch and writes the outputs into `$OUT_DIR`
    /// (see the [crate] docs for every step). For a build script: it reads cargo's `OUT_DIR`
    /// and `CARGO_MANIFEST_DIR` and prints `cargo:` lines on stdout.
    ///
    /// `Ok`: `$OUT_DIR/<name>_<arch>.ptx` exists for every arch, with its directives written,
    /// `$OUT_DIR/<name>.ptx.rs` is the table of all of them (or `&[]` with `TESSEL_NO_PTX=1`),
    /// and cargo was told what reruns the build script; [`Built`] has the paths.
    ///
    /// `Err`: nothing in `$OUT_DIR` is to be relied on; the [`BuildError`] says what failed
    /// (its [`kind`](BuildError::kind)), and when the nested build failed it carries that
    /// build's stderr, rustc's errors included, unchanged.
    pub fn build(self) -> Result<Built, BuildError> {
        self.build_in(&|k| std::env::var(k).ok())
    }

    /// [`build`](Builder::build), for build scripts: on an error, prints it to stderr as it is
    /// and exits with status 1 (cargo shows it under the build script's output).
    pub fn build_or_exit(self) -> Built {
        match self.build() {
            Ok(built) => built,
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1)
            }
        }
    }

    /// [`build`](Builder::build) with `env` as the environment the builder reads (the nested
    /// commands get the process's own, scrubbed).
    fn build_in(self, env: &dyn Fn(&str) -> Option<String>) -> Result<Built, BuildError> {
        let flag = |k: &str| env(k).is_some_and(|v| v == "1");
        let out_dir = PathBuf::from(env("OUT_DIR").ok_or_else(|| {
            BuildError::new(
                ErrorKind::Env,
                "OUT_DIR is not set (or not UTF-8): tessel_build::Builder runs in a build script"
                    .into(),
            )
        })?);
        let crate_dir = resolve(&self.crate_path, env)?;
        let manifest = crate_dir.join("Cargo.toml");
        if !manifest.is_file() {
            return Err(BuildError::new(
                ErrorKind::Config,
                format!(
                    "no kernel crate at {}: {} does not exist",
                    crate_dir.display(),
                    manifest.display()
                ),
            ));
        }
        for v in ENV_VARS {
            println!("cargo:rerun-if-env-changed={v}");
        }
        let mut watched = vec![manifest.clone()];
        let archs = resolve_archs(
            self.archs.as_deref(),
            env("TESSEL_ARCH").as_deref(),
            &self.default_archs,
        )?;

        if flag("TESSEL_NO_PTX") {
            let name = match &self.name {
                Some(n) => n.clone(),
                None => cargo::metadata(cargo::outer_cargo(), &manifest)?.lib,
            };
            check_name(&name)?;
            let table = out_dir.join(format!("{name}.ptx.rs"));
            write(&table, &table_expr(&[])?)?;
            println!(
                "cargo:warning=TESSEL_NO_PTX=1: built without the PTX of {} ({name}.ptx.rs is empty)",
                crate_dir.display()
            );
            rerun_if_changed(&watched);
            return Ok(Built {
                ptx: Vec::new(),
                table,
                watched,
            });
        }

        let sysroot = toolchain::ensure(&self.rustup, &self.toolchain, !flag("TESSEL_NO_INSTALL"))?;
        let pkg = cargo::metadata(
            cargo::rustup_run(&self.rustup, &self.toolchain, "cargo"),
            &manifest,
        )?;
        let name = self.name.clone().unwrap_or_else(|| pkg.lib.clone());
        check_name(&name)?;
        let lock = pkg.workspace_root.join("Cargo.lock");
        let locked = lock.is_file();
        if locked {
            watched.push(lock);
        }
        let target_dir = match &self.target_dir {
            Some(t) => resolve(t, env)?,
            None => crate_dir.join("target").join("ptx"),
        };
        let linker = write_linker(&target_dir)?;

        // every arch's nested build at once, each in its own target directory: each ends in one
        // fat-LTO codegen unit, a single core's work for most of its time
        let dirs: Vec<PathBuf> = archs.iter().map(|arch| target_dir.join(arch)).collect();
        let outputs: Vec<std::io::Result<std::process::Output>> = std::thread::scope(|s| {
            let builds: Vec<_> = archs
                .iter()
                .zip(&dirs)
                .map(|(arch, dir)| {
                    let build = cargo::PtxBuild {
                        rustup: &self.rustup,
                        toolchain: &self.toolchain,
                        crate_dir: &crate_dir,
                        target_dir: dir,
                        arch,
                        locked,
                        linker: &linker,
                    };
                    let mut command = build.command();
                    s.spawn(move || command.output())
                })
                .collect();
            builds
                .into_iter()
                .map(|b| {
                    b.join().unwrap_or_else(|_| {
                        Err(std::io::Error::other("the thread running it panicked"))
                    })
                })
                .collect()
        });
        let mut ptx = Vec::new();
        let mut sources: Vec<PathBuf> = Vec::new();
        for ((arch, dir), o) in archs.iter().zip(&dirs).zip(outputs) {
            let o = o.map_err(|e| {
                BuildError::new(
                    ErrorKind::Toolchain,
                    format!("could not run {:?}: {e}", self.rustup),
                )
            })?;
            if !o.status.success() {
                return Err(BuildError {
                    kind: ErrorKind::Compile,
                    message: format!(
                        "building {} to PTX for {arch} failed ({}); the nested cargo said:",
                        crate_dir.display(),
                        o.status
                    ),
                    stderr: Some(String::from_utf8_lossy(&o.stderr).into_owned()),
                });
            }
            let release = dir.join(cargo::TARGET).join("release");
            let asm = find_asm(&release.join("deps"), &pkg.lib)?;
            let text = fs::read_to_string(&asm).map_err(|e| io_error("read", &asm, e))?;
            let text = directives::launch_bounds(&text)
                .map_err(|e| BuildError::new(ErrorKind::Ptx, format!("{}: {e}", asm.display())))?;
            let dst = out_dir.join(format!("{name}_{arch}.ptx"));
            write(&dst, &text)?;
            ptx.push((arch.clone(), dst));
            for p in dep_sources(&release, &pkg.lib, &pkg.workspace_root) {
                if !sources.contains(&p) {
                    sources.push(p);
                }
            }
        }

        let sources: Vec<PathBuf> = sources
            .into_iter()
            .filter(|p| !p.starts_with(&sysroot))
            .collect();
        if sources.is_empty() {
            println!(
                "cargo:warning=the nested build of {} wrote no dep-info: rebuilding when its src/ changes",
                crate_dir.display()
            );
            watched.push(crate_dir.join("src"));
        }
        for s in &sources {
            let owner = s
                .ancestors()
                .skip(1)
                .map(|d| d.join("Cargo.toml"))
                .find(|m| m.is_file());
            for p in [Some(s.clone()), owner].into_iter().flatten() {
                if !watched.contains(&p) {
                    watched.push(p);
                }
            }
        }

        let table = out_dir.join(format!("{name}.ptx.rs"));
        write(&table, &table_expr(&ptx)?)?;
        rerun_if_changed(&watched);
        Ok(Built {
            ptx,
            table,
            watched,
        })
    }
}

/// What [`Builder::build`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    ptx: Vec<(String, PathBuf)>,
    table: PathBuf,
    watched: Vec<PathBuf>,
}

impl Built {
    /// (arch, `$OUT_DIR/<name>_<arch>.ptx`) for every arch built, in the order built; empty with
    /// `TESSEL_NO_PTX=1`. Each file is the PTX with its directives written.
    pub fn ptx_files(&self) -> &[(String, PathBuf)] {
        &self.ptx
    }

    /// The PTX file of `arch` (`sm_90`), if it was built.
    pub fn ptx_file(&self, arch: &str) -> Option<&Path> {
        self.ptx
            .iter()
            .find(|(a, _)| a == arch)
            .map(|(_, p)| p.as_path())
    }

    /// `$OUT_DIR/<name>.ptx.rs`: one expression of type `&'static [(&'static str, &'static
    /// str)]`, (arch, PTX text) for every arch in [`ptx_files`](Built::ptx_files)' order, for
    /// `include!`.
    pub fn table(&self) -> &Path {
        &self.table
    }

    /// The files cargo was told to rerun the build script on (`cargo:rerun-if-changed`): the
    /// kernel crate's `Cargo.toml`, its workspace's `Cargo.lock`, every source the nested build
    /// read and those sources' packages' `Cargo.toml`.
    pub fn watched(&self) -> &[PathBuf] {
        &self.watched
    }
}

/// What kind of step failed; see [`BuildError::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Not run as a build script: `OUT_DIR` is not set, or `CARGO_MANIFEST_DIR` for a relative
    /// path, or a path is not UTF-8.
    Env,
    /// The builder's settings: a refused arch, no arch, a bad name, no crate at the path.
    Config,
    /// rustup, the pinned toolchain or its `rust-src` is missing and was not installed.
    Toolchain,
    /// `cargo metadata` failed for the kernel crate, or the crate has no lib target.
    Metadata,
    /// The nested cargo build failed: [`BuildError::nested_stderr`] has what it said.
    Compile,
    /// The nested build wrote no PTX, or a directive in it is wrong.
    Ptx,
    /// Reading or writing a file failed.
    Io,
}

/// Why [`Builder::build`] failed. Its `Display` is the whole message, meant for the user as it
/// is: what failed and, where something is missing, the command that fixes it; for a failed
/// nested build, a line naming the crate and the arch, then that build's stderr unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    kind: ErrorKind,
    message: String,
    stderr: Option<String>,
}

impl BuildError {
    fn new(kind: ErrorKind, message: String) -> BuildError {
        BuildError {
            kind,
            message,
            stderr: None,
        }
    }

    /// Which step failed.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// For [`ErrorKind::Compile`]: the nested cargo's stderr, unchanged (rustc's errors and
    /// warnings); `None` for the other kinds.
    pub fn nested_stderr(&self) -> Option<&str> {
        self.stderr.as_deref()
    }
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(s) = &self.stderr {
            write!(f, "\n{s}")?;
        }
        Ok(())
    }
}

impl std::error::Error for BuildError {}

/// `path`, or `$CARGO_MANIFEST_DIR/path` when it is relative.
fn resolve(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, BuildError> {
    if path.is_absolute() {
        return Ok(path.to_path_buf());
    }
    let base = env("CARGO_MANIFEST_DIR").ok_or_else(|| {
        BuildError::new(
            ErrorKind::Env,
            format!(
                "CARGO_MANIFEST_DIR is not set: {} is relative to it (a build script has it)",
                path.display()
            ),
        )
    })?;
    Ok(Path::new(&base).join(path))
}

/// The archs to build: `explicit` ([`Builder::archs`]), else `env` (`TESSEL_ARCH`), else
/// `default`; each checked with [`arch::Arch::parse`], repeats dropped. `Err` names where the
/// list came from and the arch with the rule it breaks, or says the list is empty.
fn resolve_archs(
    explicit: Option<&[String]>,
    env: Option<&str>,
    default: &[String],
) -> Result<Vec<String>, BuildError> {
    let err = |m: String| BuildError::new(ErrorKind::Config, m);
    let (archs, from): (Vec<String>, &str) = match (explicit, env) {
        (Some(a), _) => (
            a.iter().map(|s| s.trim().to_string()).collect(),
            "Builder::archs",
        ),
        (None, Some(v)) => (
            v.split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(String::from)
                .collect(),
            "TESSEL_ARCH",
        ),
        (None, None) => (default.to_vec(), "Builder::default_archs"),
    };
    if archs.is_empty() {
        return Err(err(format!(
            "{from} names no arch (e.g. TESSEL_ARCH=sm_80,sm_90; TESSEL_NO_PTX=1 builds without PTX)"
        )));
    }
    let mut out: Vec<String> = Vec::new();
    for a in archs {
        if let Err(e) = arch::Arch::parse(&a) {
            return Err(err(if from == "TESSEL_ARCH" {
                format!("TESSEL_ARCH={a}: {e}")
            } else {
                format!("{from}: {a:?}: {e}")
            }));
        }
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}

/// `Ok` for a name that can be a file stem: non-empty, no path separator.
fn check_name(name: &str) -> Result<(), BuildError> {
    if name.is_empty() || name.contains(['/', '\\', '\0']) || name == "." || name == ".." {
        return Err(BuildError::new(
            ErrorKind::Config,
            format!(
                "Builder::name({name:?}): the name is a file stem: not empty, no path separator"
            ),
        ));
    }
    Ok(())
}

/// The linker that links nothing ([`write_linker`]): it creates the output named by `-o` (or
/// `--output`) empty, because cargo counts a build whose output file is missing as dirty and
/// would rebuild the PTX every time the build script runs (measured: every CI stage rebuilt
/// every arch, minutes each).
const NO_LINK: &str = "#!/bin/sh
# tessel-build: the PTX is written by --emit=asm; nothing to link. The output file rustc names is
# created empty, so that cargo sees the build's outputs and keeps it fresh.
while [ $# -gt 0 ]; do
  case \"$1\" in
    -o|--output) [ $# -gt 1 ] && : > \"$2\" ;;
    --output=*) : > \"${1#--output=}\" ;;
  esac
  shift
done
exit 0
";

/// Writes `<target_dir>/nvptx-no-link.sh`, a linker that links nothing (the NVPTX link step
/// would need `llvm-bitcode-linker`; the PTX is already written by `--emit=asm`; see
/// [`NO_LINK`]), executable; returns its path.
fn write_linker(target_dir: &Path) -> Result<PathBuf, BuildError> {
    const SCRIPT: &str = NO_LINK;
    let path = target_dir.join("nvptx-no-link.sh");
    fs::create_dir_all(target_dir).map_err(|e| io_error("create", target_dir, e))?;
    let current = fs::read_to_string(&path).is_ok_and(|s| s == SCRIPT) && executable(&path);
    if !current {
        // through a file of its own, so that two builds sharing the directory never run a
        // half-written script
        let tmp = target_dir.join(format!("nvptx-no-link.sh.{}", std::process::id()));
        write(&tmp, SCRIPT)?;
        set_executable(&tmp)?;
        fs::rename(&tmp, &path).map_err(|e| io_error("write", &path, e))?;
    }
    Ok(path)
}

#[cfg(unix)]
fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 == 0o111)
}

#[cfg(not(unix))]
fn executable(_: &Path) -> bool {
    true
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result<(), BuildError> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(0o755))
        .map_err(|e| io_error("make executable", path, e))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<(), BuildError> {
    Ok(())
}

/// The `.s` (the PTX) the nested build wrote in `deps`: `<lib>.s`, else the newest `<lib>-*.s`.
fn find_asm(deps: &Path, lib: &str) -> Result<PathBuf, BuildError> {
    let plain = deps.join(format!("{lib}.s"));
    if plain.is_file() {
        return Ok(plain);
    }
    let prefix = format!("{lib}-");
    let newest = fs::read_dir(deps)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(&prefix) && n.ends_with(".s")
        })
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max();
    newest.map(|(_, p)| p).ok_or_else(|| {
        BuildError::new(
            ErrorKind::Ptx,
            format!(
                "the nested build succeeded but wrote no PTX: {} does not exist",
                plain.display()
            ),
        )
    })
}

/// The source files the nested build in `release` (`<target dir>/<arch>/<target>/release`)
/// read, from its dep-info: cargo's `<lib>.d`, which lists the crate's and its local
/// dependencies' sources, else rustc's `deps/<lib>.d` / `deps/<lib>-*.d`. Relative paths are
/// taken from `base` (the workspace root, where cargo runs rustc).
fn dep_sources(release: &Path, lib: &str, base: &Path) -> Vec<PathBuf> {
    let cargo_d = release.join(format!("{lib}.d"));
    let files: Vec<PathBuf> = if cargo_d.is_file() {
        vec![cargo_d]
    } else {
        let prefix = format!("{lib}-");
        fs::read_dir(release.join("deps"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                let n = p.file_name().unwrap_or_default().to_string_lossy();
                n == format!("{lib}.d") || (n.starts_with(&prefix) && n.ends_with(".d"))
            })
            .collect()
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for f in files {
        let Ok(text) = fs::read_to_string(&f) else {
            continue;
        };
        for p in depinfo::prerequisites(&text) {
            let p = if p.is_absolute() { p } else { base.join(p) };
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// The table: `&[("sm_90", include_str!("/abs/path")), ...]` for every (arch, PTX file), or
/// `&[]`. `Err` when a path is not UTF-8 (`include_str!` takes a string).
fn table_expr(ptx: &[(String, PathBuf)]) -> Result<String, BuildError> {
    if ptx.is_empty() {
        return Ok("&[]\n".to_string());
    }
    let mut expr = String::from("&[\n");
    for (arch, path) in ptx {
        let path = path.to_str().ok_or_else(|| {
            BuildError::new(
                ErrorKind::Env,
                format!("OUT_DIR is not UTF-8: {}", path.display()),
            )
        })?;
        expr.push_str(&format!("    ({arch:?}, include_str!({path:?})),\n"));
    }
    expr.push_str("]\n");
    Ok(expr)
}

/// Prints `cargo:rerun-if-changed` for each path.
fn rerun_if_changed(paths: &[PathBuf]) {
    for p in paths {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}

fn write(path: &Path, text: &str) -> Result<(), BuildError> {
    fs::write(path, text).map_err(|e| io_error("write", path, e))
}

fn io_error(what: &str, path: &Path, e: std::io::Error) -> BuildError {
    BuildError::new(
        ErrorKind::Io,
        format!("could not {what} {}: {e}", path.display()),
    )
}

#[cfg(test)]
mod tests;
