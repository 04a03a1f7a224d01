//! Helpers shared by the integration tests that run the `tessel` binary.
// (each test binary compiles this module and uses some of it)
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// `tessel eval` with `input` on its stdin, written from a thread so that a large input cannot
/// block on a full pipe while the answers pile up: its status, stdout and stderr.
pub fn eval_stdin(input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessel"))
        .arg("eval")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run tessel eval");
    let mut pipe = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || pipe.write_all(&input));
    let out = child.wait_with_output().expect("tessel eval's output");
    writer
        .join()
        .expect("writer thread")
        .expect("write to tessel eval");
    out
}

/// The lines `tessel eval` printed (it prints UTF-8).
pub fn lines(out: &Output) -> Vec<String> {
    std::str::from_utf8(&out.stdout)
        .expect("tessel eval prints UTF-8")
        .lines()
        .map(String::from)
        .collect()
}

/// `python3 SCRIPT TESSEL COUNT [SEED]`, an agreement test against a reference implementation:
/// the seed is 21 (repeatable in CI) unless the variable `seed_var` gives a number or `random`
/// (then the script draws one). Prints the script's report; fails with it when the script reports
/// a disagreement.
pub fn agree(script: &str, count: &str, seed_var: &str, reference: &str) {
    let seed = std::env::var(seed_var).unwrap_or_else(|_| "21".into());
    let mut args = vec![script, env!("CARGO_BIN_EXE_tessel"), count];
    if seed != "random" {
        args.push(&seed);
    }
    let out = Command::new("python3")
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("run {script}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "tessel eval disagrees with {reference}:\n{text}"
    );
}
