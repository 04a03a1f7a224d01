//! The embedded PTX: every kernel is there, for every arch built, with no local memory and no
//! integer division or remainder (the tile layouts are constants the compiler folded).

use tessel_gpu::{KERNELS, LEGACY};

/// Every entry point: the registry's and those not yet declared through it.
fn names() -> impl Iterator<Item = &'static str> {
    KERNELS.iter().map(|k| k.name).chain(LEGACY)
}

/// The body of `.entry name`.
fn entry<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("kernel {name} missing"));
    let body = &ptx[start..];
    let end = body.find("\n}\n").expect("end of the entry");
    &body[..end]
}

#[test]
fn every_kernel_for_every_arch() {
    assert!(!tessel::ptx::PTX.is_empty(), "no PTX embedded");
    for (arch, ptx) in tessel::ptx::PTX {
        assert!(ptx.contains(&format!(".target {arch}")), "{arch}");
        for k in names() {
            let body = entry(ptx, k);
            // integer division or remainder would be index math left to run time (the float
            // division of RMSNorm is arithmetic)
            for bad in ["div.s", "div.u", "rem.", ".local", "call"] {
                assert!(!body.contains(bad), "{arch} {k}: `{bad}` in the PTX");
            }
        }
    }
}

#[test]
fn tessel_ptx_prints_it() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessel"))
        .arg("ptx")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        tessel::ptx::PTX[0].1
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(["ptx", "--arch", "sm_1"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("sm_80 or newer"));
}

/// The value part of the transpose's tile coordinates, `(ROWS_V(v), COLS_V(v))`, is a constant per
/// unrolled value: in the padded f32 kernel each shared store's address is the thread's base plus
/// an immediate equal to `4 * SMEM(ROWS_V(v), COLS_V(v))`, computed here from the same layouts.
#[test]
fn transpose_shared_offsets_are_immediates() {
    use tessel_gpu::transpose::{Padded, SmemTile, COLS, ROWS, VALUES};
    let (rv, cv) = (ROWS.get(1).unwrap(), COLS.get(1).unwrap());
    let mut want: Vec<i64> = (0..VALUES)
        .map(|v| 4 * Padded::<f32>::offset(rv.call(v), cv.call(v)))
        .collect();
    want.sort();
    for (arch, ptx) in tessel::ptx::PTX {
        let body = entry(ptx, "transpose_pad_f32");
        let mut got: Vec<i64> = body
            .lines()
            .filter(|l| l.contains("st.shared"))
            .map(|l| {
                let addr = &l[l.find('[').unwrap() + 1..l.find(']').unwrap()];
                addr.split_once('+')
                    .map_or(0, |(_, imm)| imm.parse().unwrap())
            })
            .collect();
        got.sort();
        assert_eq!(got, want, "{arch}: shared-store immediates");
    }
}

/// Each kernel takes the parameters its launcher passes (a launch with too few arguments reads
/// garbage: seen once as a segfault inside `cuLaunchKernel`): a declared kernel one by-value
/// `Params` struct of exactly the size the host builds, the others their scalars.
#[test]
fn kernels_take_the_launchers_parameters() {
    let legacy = |k: &str| match k {
        k if k.starts_with("transpose") => 4,
        _ => unreachable!(),
    };
    for (arch, ptx) in tessel::ptx::PTX {
        for k in KERNELS {
            let body = entry(ptx, k.name);
            let sig = &body[..body.find(')').unwrap()];
            assert_eq!(sig.matches(".param").count(), 1, "{arch} {}", k.name);
            let want = format!("_param_0[{}]", k.param_bytes);
            assert!(
                sig.contains(&want),
                "{arch} {}: {sig} (want {want})",
                k.name
            );
        }
        for k in LEGACY {
            let body = entry(ptx, k);
            let sig = &body[..body.find(')').unwrap()];
            assert_eq!(sig.matches(".param").count(), legacy(k), "{arch} {k}");
        }
    }
}
