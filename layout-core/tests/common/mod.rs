//! The seeded runner every property test goes through (`layout-core/tests/*.rs`, and
//! `host/tests/exec.rs`, which includes this file by path).
//!
//! - The seed is `TESSEL_SEED` (a `u64`) when set, else a fresh one. Each test prints it with the
//!   command that replays it; the test harness shows a test's captured output when it fails.
//! - proptest's ChaCha generator is seeded from it, so a seed gives the same cases on every
//!   machine (for the same test code). No `.proptest-regressions` files: past failures are fixed
//!   cases, run before the random ones (`fixed`).
//! - Each test counts the cases that reach its post-condition check (`Tally::hit`) and asserts
//!   that at least `min_share` of all cases (fixed ones and rejected ones included) did: a test
//!   whose operation always fails, or whose generator makes nothing admissible, fails instead of
//!   passing vacuously.

#![allow(dead_code)] // each test file uses a part

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::cell::Cell;
use std::fmt::Debug;

/// Counts the cases of one test that reached its post-condition check.
#[derive(Default)]
pub struct Tally {
    hits: Cell<u64>,
}

impl Tally {
    /// This case reached (and passed) the post-condition check.
    pub fn hit(&self) {
        self.hits.set(self.hits.get() + 1);
    }
    /// Cases counted so far.
    pub fn hits(&self) -> u64 {
        self.hits.get()
    }
}

/// `TESSEL_SEED`, or a fresh seed.
pub fn seed() -> u64 {
    match std::env::var("TESSEL_SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("TESSEL_SEED must be a u64, found {s:?}")),
        Err(_) => {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            h.finish()
        }
    }
}

/// A runner seeded by `seed`, with proptest's ChaCha generator and no failure persistence.
pub fn runner(cases: u32, seed: u64) -> TestRunner {
    // splitmix64 spreads the 64-bit seed over ChaCha's 32 bytes
    let mut x = seed;
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(8) {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        chunk.copy_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    let config = Config {
        cases,
        failure_persistence: None,
        max_global_rejects: cases.saturating_mul(100),
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
}

/// Runs `test` on the `fixed` cases, then on `cases` values of `strategy` drawn from the seed;
/// fails on the first failing case (shrunk to a minimal one), and when fewer than `min_share` of
/// the cases reached the post-condition (`Tally::hit`).
///
/// `name` is the test function's name (the replay command selects the test by it).
pub fn check<S>(
    name: &str,
    cases: u32,
    min_share: f64,
    fixed: &[S::Value],
    strategy: S,
    test: impl Fn(S::Value, &Tally) -> Result<(), TestCaseError>,
) where
    S: Strategy,
    S::Value: Clone + Debug,
{
    // libtest names a test's thread after the test: catch a `name` that would replay another one
    if let Some(thread) = std::thread::current().name().filter(|t| *t != "main") {
        assert_eq!(
            thread.rsplit("::").next(),
            Some(name),
            "check's name is not the test's"
        );
    }
    let seed = seed();
    // (a run without the GPU toolchain needs TESSEL_NO_PTX=1 again to replay)
    let no_ptx = match std::env::var("TESSEL_NO_PTX") {
        Ok(v) if v == "1" => "TESSEL_NO_PTX=1 ",
        _ => "",
    };
    let replay = format!(
        "{no_ptx}TESSEL_SEED={seed} cargo test --release -p {} --test {} {name}",
        env!("CARGO_PKG_NAME"),
        env!("CARGO_CRATE_NAME"),
    );
    eprintln!("{name}: seed {seed} (replay: {replay})");
    let tally = Tally::default();
    let runs = Cell::new(0u64);
    let run = |v: S::Value| {
        runs.set(runs.get() + 1);
        test(v, &tally)
    };
    for v in fixed {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(v.clone())));
        match result {
            Ok(Ok(())) | Ok(Err(TestCaseError::Reject(_))) => {}
            Ok(Err(TestCaseError::Fail(why))) => {
                panic!("{name}: fixed case failed: {why}\ncase: {v:?}")
            }
            Err(_) => panic!("{name}: fixed case panicked (message above)\ncase: {v:?}"),
        }
    }
    match runner(cases, seed).run(&strategy, run) {
        Ok(()) => {}
        Err(TestError::Fail(why, v)) => {
            panic!("{name}: {why}\nminimal failing input: {v:?}\nseed {seed} (replay: {replay})")
        }
        Err(TestError::Abort(why)) => panic!("{name}: aborted: {why}\nseed {seed} ({replay})"),
    }
    let (hits, runs) = (tally.hits(), runs.get());
    eprintln!("{name}: {hits} of {runs} cases reached the post-condition");
    assert!(
        runs > 0 && hits as f64 >= min_share * runs as f64,
        "{name}: only {hits} of {runs} cases reached the post-condition (at least {:.0}% wanted); \
         seed {seed} (replay: {replay})",
        100.0 * min_share
    );
}
