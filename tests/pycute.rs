//! `tessel eval` against CUTLASS's Python reference (pycute, pip `nvidia-cutlass`) on fresh random
//! expressions of every operation. Skips with a message when python3 or pycute is missing, unless
//! `TESSEL_REQUIRE_PYCUTE` is set (CI sets it). The seed is fixed (21) so CI is repeatable;
//! `TESSEL_PYCUTE_SEED=random` (or a number) draws others.

use std::process::Command;

#[test]
fn eval_agrees_with_pycute() {
    let have = Command::new("python3")
        .args(["-c", "import pycute"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !have {
        assert!(
            std::env::var_os("TESSEL_REQUIRE_PYCUTE").is_none(),
            "pycute is required: pip install nvidia-cutlass"
        );
        eprintln!("SKIPPED: python3 with pycute not found (pip install nvidia-cutlass)");
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pycute_agree.py");
    let seed = std::env::var("TESSEL_PYCUTE_SEED").unwrap_or_else(|_| "21".into());
    let mut args = vec![script, env!("CARGO_BIN_EXE_tessel"), "6000"];
    if seed != "random" {
        args.push(&seed);
    }
    let out = Command::new("python3")
        .args(&args)
        .output()
        .expect("run pycute_agree.py");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "tessel eval disagrees with pycute:\n{text}"
    );
}
