//! The builder's steps, with the environment given explicitly (no test sets a process variable).

use super::*;
use std::collections::HashMap;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A fresh empty directory for one test.
fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessel-build-{}-{test}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

/// `path` run with `args`, waiting while the kernel calls it busy (`ETXTBSY`): a parallel test's
/// child, forked while this test still had the file open for writing, holds that descriptor until
/// it execs. A race between the tests' threads, not a fault of the file.
fn run_script(path: &Path, args: &[String]) -> std::process::Output {
    for _ in 0..100 {
        match std::process::Command::new(path).args(args).output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            r => return r.unwrap(),
        }
    }
    panic!("{} stayed busy for a second", path.display())
}

/// `builder` run with exactly the variables `vars`, and `OUT_DIR` = `out` and
/// `CARGO_MANIFEST_DIR` = this crate's directory.
fn build_with(builder: Builder, out: &Path, vars: &[(&str, &str)]) -> Result<Built, BuildError> {
    let mut env: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.insert("OUT_DIR".into(), out.to_str().unwrap().into());
    env.insert(
        "CARGO_MANIFEST_DIR".into(),
        env!("CARGO_MANIFEST_DIR").into(),
    );
    builder.build_in(&|k| env.get(k).cloned())
}

#[test]
fn archs_come_from_the_builder_then_tessel_arch_then_the_default() {
    let def = strings(&["sm_90", "sm_90a"]);
    let explicit = strings(&["sm_80"]);
    assert_eq!(
        resolve_archs(Some(&explicit), Some("sm_90"), &def).unwrap(),
        ["sm_80"]
    );
    assert_eq!(
        resolve_archs(None, Some(" sm_80, sm_90a,,sm_80 ,"), &def).unwrap(),
        ["sm_80", "sm_90a"]
    );
    assert_eq!(
        resolve_archs(None, None, &def).unwrap(),
        ["sm_90", "sm_90a"]
    );
    assert_eq!(
        resolve_archs(None, None, &Builder::new("k").default_archs).unwrap(),
        [DEFAULT_ARCH]
    );
}

#[test]
fn refused_archs_name_where_they_came_from_and_the_rule() {
    let def = strings(&["sm_90"]);
    let e = resolve_archs(None, Some("sm_90,sm_75"), &def).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(
        e.to_string()
            .starts_with("TESSEL_ARCH=sm_75: the kernels need sm_80 or newer"),
        "{e}"
    );
    let e = resolve_archs(None, Some("sm90"), &def).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("TESSEL_ARCH=sm90: 'sm90' is not an arch"),
        "{e}"
    );
    let e = resolve_archs(Some(&strings(&["sm_90", "compute_90"])), None, &def).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Builder::archs: \"compute_90\": 'compute_90' is not an arch"),
        "{e}"
    );
    let e = resolve_archs(None, None, &strings(&["sm_70"])).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("Builder::default_archs: \"sm_70\""),
        "{e}"
    );
    for (explicit, env) in [
        (Some(Vec::new()), None),
        (None, Some(" , ")),
        (None, Some("")),
    ] {
        let e = resolve_archs(explicit.as_deref(), env, &def).unwrap_err();
        assert!(e.to_string().contains("names no arch"), "{e}");
    }
}

#[test]
fn no_ptx_writes_an_empty_table_named_after_the_lib() {
    let out = scratch("no-ptx");
    // the lib name from cargo metadata: this crate's
    let built = build_with(Builder::new("."), &out, &[("TESSEL_NO_PTX", "1")]).unwrap();
    assert_eq!(built.table(), out.join("tessel_build.ptx.rs"));
    assert_eq!(fs::read_to_string(built.table()).unwrap(), "&[]\n");
    assert!(built.ptx_files().is_empty() && built.ptx_file("sm_90").is_none());
    assert_eq!(
        built.watched(),
        [Path::new(env!("CARGO_MANIFEST_DIR")).join("./Cargo.toml")]
    );
    // a name of the user's; an arch the kernels refuse is refused all the same
    let built = build_with(
        Builder::new(env!("CARGO_MANIFEST_DIR")).name("k"),
        &out,
        &[("TESSEL_NO_PTX", "1")],
    )
    .unwrap();
    assert_eq!(built.table(), out.join("k.ptx.rs"));
    let e = build_with(
        Builder::new(".").name("k"),
        &out,
        &[("TESSEL_NO_PTX", "1"), ("TESSEL_ARCH", "sm_75")],
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    let e = build_with(
        Builder::new(".").name("a/b"),
        &out,
        &[("TESSEL_NO_PTX", "1")],
    )
    .unwrap_err();
    assert!(e.to_string().contains("no path separator"), "{e}");
    fs::remove_dir_all(out).unwrap();
}

#[test]
fn a_missing_toolchain_stops_the_build_with_the_command_that_installs_it() {
    let out = scratch("no-toolchain");
    let bogus = "nightly-1999-01-01-tessel-build-test";
    let e = build_with(
        Builder::new(".").toolchain(bogus),
        &out,
        &[("TESSEL_NO_INSTALL", "1"), ("TESSEL_ARCH", "sm_90")],
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Toolchain);
    assert_eq!(e.nested_stderr(), None);
    let m = e.to_string();
    assert!(
        m.contains(&format!("toolchain {bogus}, which is not installed")),
        "{m}"
    );
    assert!(
        m.contains(&format!(
            "rustup toolchain install {bogus} --profile minimal --component rust-src,llvm-tools"
        )),
        "{m}"
    );
    assert!(m.contains("TESSEL_NO_PTX=1"), "{m}");
    // nothing was written
    assert_eq!(fs::read_dir(&out).unwrap().count(), 0);
    fs::remove_dir_all(out).unwrap();
}

#[test]
fn a_build_outside_a_build_script_or_of_no_crate_is_refused() {
    let e = Builder::new(".").build_in(&|_| None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Env);
    assert!(e.to_string().starts_with("OUT_DIR is not set"), "{e}");
    let e = Builder::new("kernels")
        .build_in(&|k| (k == "OUT_DIR").then(|| "/tmp".to_string()))
        .unwrap_err();
    assert!(
        e.to_string().starts_with("CARGO_MANIFEST_DIR is not set"),
        "{e}"
    );
    let out = scratch("no-crate");
    let e = build_with(Builder::new("no-such-crate"), &out, &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(
        e.to_string()
            .contains("no-such-crate/Cargo.toml does not exist"),
        "{e}"
    );
    fs::remove_dir_all(out).unwrap();
}

#[test]
fn the_table_is_one_expression_of_include_strs() {
    let ptx = vec![
        ("sm_80".to_string(), PathBuf::from("/o/k_sm_80.ptx")),
        (
            "sm_90a".to_string(),
            PathBuf::from("/o dir/\"k\"_sm_90a.ptx"),
        ),
    ];
    assert_eq!(
        table_expr(&ptx).unwrap(),
        "&[\n    (\"sm_80\", include_str!(\"/o/k_sm_80.ptx\")),\n    \
         (\"sm_90a\", include_str!(\"/o dir/\\\"k\\\"_sm_90a.ptx\")),\n]\n"
    );
    assert_eq!(table_expr(&[]).unwrap(), "&[]\n");
}

#[test]
fn the_linker_is_an_executable_script_that_creates_its_output_empty() {
    let dir = scratch("linker").join("target");
    let l = write_linker(&dir).unwrap();
    assert_eq!(l, dir.join("nvptx-no-link.sh"));
    // the output file each way of naming it, there afterwards and empty (cargo counts a build
    // whose output is missing as dirty)
    let out = dir.parent().unwrap();
    for (args, file) in [
        (
            vec![
                "in.o".to_string(),
                "-o".into(),
                out.join("a.ptx").display().to_string(),
            ],
            "a.ptx",
        ),
        (
            vec![
                "--output".into(),
                out.join("b.ptx").display().to_string(),
                "-v".into(),
            ],
            "b.ptx",
        ),
        (
            vec![format!("--output={}", out.join("c.ptx").display())],
            "c.ptx",
        ),
    ] {
        let o = run_script(&l, &args);
        assert!(
            o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
            "{args:?}"
        );
        assert_eq!(fs::read(out.join(file)).unwrap().len(), 0, "{args:?}");
    }
    // nothing else
    let o = run_script(&l, &strings(&["-v"]));
    assert!(o.status.success());
    assert!(executable(&l));
    // written again, unchanged, with no file left beside it
    assert_eq!(write_linker(&dir).unwrap(), l);
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

#[test]
fn sources_come_from_cargos_dep_info_else_rustcs() {
    let t = scratch("dep-info");
    let release = t.join("release");
    fs::create_dir_all(release.join("deps")).unwrap();
    // rustc's: relative to the workspace root, the crate's own files
    fs::write(
        release.join("deps/k-0123.d"),
        "/t/deps/k-0123.s: src/lib.rs src/my\\ mod.rs\n\n/t/deps/k.d: src/lib.rs\n\nsrc/lib.rs:\n",
    )
    .unwrap();
    fs::write(release.join("deps/other.d"), "/t/other.s: /x/other.rs\n").unwrap();
    assert_eq!(
        dep_sources(&release, "k", Path::new("/w/k")),
        [
            PathBuf::from("/w/k/src/lib.rs"),
            PathBuf::from("/w/k/src/my mod.rs")
        ]
    );
    // cargo's, when there: absolute, the path dependencies' sources too
    fs::write(
        release.join("k.d"),
        "/t/release/k.ptx: /w/k/src/lib.rs /w/dep/src/lib.rs\n",
    )
    .unwrap();
    assert_eq!(
        dep_sources(&release, "k", Path::new("/w/k")),
        [
            PathBuf::from("/w/k/src/lib.rs"),
            PathBuf::from("/w/dep/src/lib.rs")
        ]
    );
    assert!(dep_sources(&t.join("none"), "k", Path::new("/w")).is_empty());
    fs::remove_dir_all(t).unwrap();
}

#[test]
fn the_ptx_is_the_libs_asm_file() {
    let t = scratch("asm");
    let e = find_asm(&t, "k").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Ptx);
    assert!(e.to_string().ends_with("k.s does not exist"), "{e}");
    fs::write(t.join("k-0123.s"), "").unwrap();
    fs::write(t.join("kk.s"), "").unwrap();
    assert_eq!(find_asm(&t, "k").unwrap(), t.join("k-0123.s"));
    fs::write(t.join("k.s"), "").unwrap();
    assert_eq!(find_asm(&t, "k").unwrap(), t.join("k.s"));
    fs::remove_dir_all(t).unwrap();
}

/// A stand-in for rustup, for the builder's whole run without a toolchain: `rustup run T rustc`
/// prints `sysroot`, `rustup run T cargo metadata` runs the real cargo, and `rustup run T cargo
/// rustc ...` logs its directory and arguments to `log`, then fails for `sm_80` (an error on
/// stderr) or writes a `.s` with a `maxntid` directive and cargo's dep-info listing the kernel
/// crate's source, a dependency's and one of the toolchain's.
#[cfg(unix)]
fn fake_rustup(dir: &Path, sysroot: &Path, kernels: &Path, dep: &Path, log: &Path) -> PathBuf {
    let script = r#"#!/bin/sh
[ "$1" = run ] && [ "$2" = nightly-fake ] || { echo "fake rustup: $*" >&2; exit 1; }
shift 2
tool=$1; shift
if [ "$tool" = rustc ]; then echo 'SYSROOT'; exit 0; fi
if [ "$1" = metadata ]; then exec 'CARGO' "$@"; fi
echo "$(pwd) $tool $*" >> 'LOG'
for a in "$@"; do
  [ "$prev" = --target-dir ] && dir=$a
  case "$a" in -Ctarget-cpu=*) arch=${a#-Ctarget-cpu=};; esac
  prev=$a
done
if [ "$arch" = sm_80 ]; then printf 'error: fake failure\n --> src/lib.rs:1:1\n' >&2; exit 101; fi
r="$dir/nvptx64-nvidia-cuda/release"
mkdir -p "$r/deps"
printf '.target %s\n.visible .global .align 4 .b8 k__maxntid[4] = {128};\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n\tret;\n}\n' "$arch" > "$r/deps/my_kernels.s"
echo "$r/my_kernels.ptx: KERNELS/src/lib.rs DEP/src/lib.rs SYSROOT/lib/rustlib/src/rust/library/core/src/lib.rs" > "$r/my_kernels.d"
"#;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let script = script
        .replace("SYSROOT", sysroot.to_str().unwrap())
        .replace("CARGO", &cargo)
        .replace("LOG", log.to_str().unwrap())
        .replace("KERNELS", kernels.to_str().unwrap())
        .replace("DEP", dep.to_str().unwrap());
    let path = dir.join("rustup");
    fs::write(&path, script).unwrap();
    set_executable(&path).unwrap();
    path
}

/// A package `name` in `dir` with an empty `src/lib.rs`, its own workspace.
fn package(dir: &Path, name: &str) {
    fs::create_dir_all(dir.join("src")).unwrap();
    fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"),
    )
    .unwrap();
    fs::write(dir.join("src/lib.rs"), "").unwrap();
}

#[cfg(unix)]
#[test]
fn a_whole_build_through_a_stand_in_rustup() {
    let t = scratch("whole");
    let (kernels, dep, sysroot, out) = (
        t.join("kernels"),
        t.join("dep"),
        t.join("sysroot"),
        t.join("out"),
    );
    package(&kernels, "my-kernels");
    package(&dep, "dep");
    fs::write(kernels.join("Cargo.lock"), "version = 4\n").unwrap();
    fs::create_dir_all(sysroot.join("lib/rustlib/src/rust/library/core/src")).unwrap();
    fs::create_dir_all(&out).unwrap();
    let log = t.join("log");
    let mut b = Builder::new(&kernels).toolchain("nightly-fake");
    b.rustup = fake_rustup(&t, &sysroot, &kernels, &dep, &log).into();

    let built = build_with(b.clone().default_archs(["sm_90a", "sm_90"]), &out, &[]).unwrap();
    // the outputs, named after the lib, in the order of the archs
    let ptx = |a: &str| out.join(format!("my_kernels_{a}.ptx"));
    assert_eq!(
        built.ptx_files(),
        [
            ("sm_90a".to_string(), ptx("sm_90a")),
            ("sm_90".to_string(), ptx("sm_90"))
        ]
    );
    assert_eq!(built.ptx_file("sm_90"), Some(ptx("sm_90").as_path()));
    assert_eq!(built.table(), out.join("my_kernels.ptx.rs"));
    assert_eq!(
        fs::read_to_string(built.table()).unwrap(),
        format!(
            "&[\n    (\"sm_90a\", include_str!({:?})),\n    (\"sm_90\", include_str!({:?})),\n]\n",
            ptx("sm_90a"),
            ptx("sm_90")
        )
    );
    // with the directive written in
    let text = fs::read_to_string(ptx("sm_90a")).unwrap();
    assert!(text.starts_with(".target sm_90a\n"), "{text}");
    assert!(text.contains("\n)\n.maxntid 128, 1, 1\n{\n"), "{text}");
    // watched: the manifest, the lock, the sources and their packages, not the toolchain's
    assert_eq!(
        built.watched(),
        [
            kernels.join("Cargo.toml"),
            kernels.join("Cargo.lock"),
            kernels.join("src/lib.rs"),
            dep.join("src/lib.rs"),
            dep.join("Cargo.toml"),
        ]
    );
    // the nested builds: in the crate, one target directory per arch, locked (run at once, so
    // logged in either order)
    let target = kernels.join("target/ptx");
    let lines: Vec<String> = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(lines.len(), 2);
    for arch in ["sm_90a", "sm_90"] {
        let want = format!(
            "{} cargo rustc --quiet --locked --release --lib --target nvptx64-nvidia-cuda \
             -Zbuild-std=core --crate-type cdylib --target-dir {} ",
            kernels.display(),
            target.join(arch).display()
        );
        let mine: Vec<&String> = lines.iter().filter(|l| l.starts_with(&want)).collect();
        assert_eq!(mine.len(), 1, "{arch}: {lines:?}");
        let line = mine[0];
        assert!(line.ends_with(&format!(
            "-Ctarget-cpu={arch} -Ctarget-feature=+ptx83 -Clinker={}",
            target.join("nvptx-no-link.sh").display()
        )));
    }

    // TESSEL_ARCH over the defaults, a target dir and a name of the user's, no lock
    fs::remove_file(kernels.join("Cargo.lock")).unwrap();
    let built = build_with(
        b.clone()
            .default_archs(["sm_90a"])
            .name("k")
            .target_dir(t.join("tgt")),
        &out,
        &[("TESSEL_ARCH", "sm_100")],
    )
    .unwrap();
    assert_eq!(
        built.ptx_files(),
        [("sm_100".to_string(), out.join("k_sm_100.ptx"))]
    );
    let last = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .to_string();
    assert!(!last.contains("--locked"), "{last}");
    assert!(
        last.contains(&format!("--target-dir {}/tgt/sm_100 ", t.display())),
        "{last}"
    );
    assert!(t.join("tgt/nvptx-no-link.sh").is_file());

    // a failed build: which crate and arch, then its stderr unchanged
    let e = build_with(b.archs(["sm_90", "sm_80"]), &out, &[]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Compile);
    let stderr = "error: fake failure\n --> src/lib.rs:1:1\n";
    assert_eq!(e.nested_stderr(), Some(stderr));
    let first = format!("building {} to PTX for sm_80 failed", kernels.display());
    assert!(e.to_string().starts_with(&first), "{e}");
    assert!(e.to_string().ends_with(&format!(":\n{stderr}")), "{e}");
    fs::remove_dir_all(t).unwrap();
}
