//! `tessel eval` against CUTLASS's Python reference (pycute, pip `nvidia-cutlass`) on fresh random
//! expressions of every operation. Skips with a message when python3 or pycute is missing, unless
//! `TESSEL_REQUIRE_PYCUTE` is set (CI sets it). The seed is fixed (21) so CI is repeatable;
//! `TESSEL_PYCUTE_SEED=random` (or a number) draws others.

mod common;

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
    common::agree(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pycute_agree.py"),
        "6000",
        "TESSEL_PYCUTE_SEED",
        "pycute",
    );
}
