//! `tessel eval` against CUTLASS's Python reference (pycute, pip `nvidia-cutlass`) on fresh random
//! expressions of every operation. Skips with a message when python3 or pycute is missing, unless
//! `TESSEL_REQUIRE_PYCUTE` is set (CI sets it).

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
    let out = Command::new("python3")
        .args([script, env!("CARGO_BIN_EXE_tessel"), "4000"])
        .output()
        .expect("run pycute_agree.py");
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "tessel eval disagrees with pycute:\n{text}"
    );
}
