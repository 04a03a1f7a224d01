//! `tessel eval` against CuTe's C++ headers on fresh random expressions of every operation
//! (`tests/cute_agree.py`): a C++ program built with g++ (or `$CXX`) against the headers of the
//! `nvidia-cutlass` and `nvidia-cuda-*` wheels evaluates them with run-time integers where CuTe
//! takes them. Skips with a message when python3, the compiler or the headers are missing,
//! unless `TESSEL_REQUIRE_CUTE` is set (CI sets it). The seed is fixed (21) so CI is repeatable;
//! `TESSEL_CUTE_SEED=random` (or a number) draws others.

mod common;

use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cute_agree.py");

/// What is missing to build against CuTe, as the script finds it (`--check`), or `None`.
fn missing() -> Option<String> {
    match Command::new("python3").args([SCRIPT, "--check"]).output() {
        Err(e) => Some(format!("python3 ({e})")),
        Ok(o) if o.status.success() => None,
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout)
                .trim()
                .replace('\n', "; ");
            Some(if text.is_empty() {
                String::from_utf8_lossy(&o.stderr).trim().to_string()
            } else {
                text
            })
        }
    }
}

#[test]
fn eval_agrees_with_cute_cpp() {
    if let Some(what) = missing() {
        assert!(
            std::env::var_os("TESSEL_REQUIRE_CUTE").is_none(),
            "CuTe C++ is required (TESSEL_REQUIRE_CUTE), missing: {what}"
        );
        eprintln!("SKIPPED: CuTe C++ agreement test, missing: {what}");
        return;
    }
    common::agree(SCRIPT, "500", "TESSEL_CUTE_SEED", "CuTe C++");
}
