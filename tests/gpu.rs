//! The kernels on a GPU, against their host executions. Without a driver or a device these tests
//! say so and pass (CI has no GPU); `tessel run all` on a GPU machine is the full check. Inputs are
//! random: each test prints its seed, and `TESSEL_SEED=N` replays it.

use half::bf16;
use host::elem::Rng;
use host::gpu::{Gpu, GpuError};
use host::jobs;
use tessel_gpu::transpose::{Padded, Swizzled};

/// The GPU, or `None` (with a message) where there is none.
fn gpu() -> Option<Gpu> {
    match Gpu::open(0, tessel::ptx::PTX) {
        Ok(g) => Some(g),
        Err(e @ (GpuError::NoDriver | GpuError::NoDevice(_))) => {
            // straight to stderr, past the test harness's capture: a skip must be seen
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "tests/gpu.rs: SKIPPED, {e}");
            None
        }
        Err(e) => panic!("a GPU is present but unusable: {e}"),
    }
}

/// The test's generator: `TESSEL_SEED`, or a fresh seed; printed with the command that replays it.
fn seeded(test: &str) -> Rng {
    Rng::from_env_or_fresh(test, "--test gpu")
}

#[test]
fn copy_matches_the_host_execution() {
    let Some(g) = gpu() else { return };
    let mut rng = seeded("copy_matches_the_host_execution");
    for n in [1, 5, 4096, 4097, 1_000_003] {
        let v = jobs::run_copy::<f32>(Some(&g), n, &mut rng).unwrap();
        assert!(v.ok, "{}", v.line);
        let v = jobs::run_copy::<bf16>(Some(&g), n, &mut rng).unwrap();
        assert!(v.ok, "{}", v.line);
    }
}

#[test]
fn transpose_matches_the_host_execution() {
    let Some(g) = gpu() else { return };
    let mut rng = seeded("transpose_matches_the_host_execution");
    for (r, c) in [(1, 1), (63, 65), (64, 64), (1031, 2053)] {
        let v = jobs::run_transpose::<f32, Padded<f32>>(Some(&g), r, c, &mut rng).unwrap();
        assert!(v.ok, "{}", v.line);
        let v = jobs::run_transpose::<bf16, Swizzled<bf16>>(Some(&g), r, c, &mut rng).unwrap();
        assert!(v.ok, "{}", v.line);
    }
}

#[test]
fn bad_layouts_are_refused() {
    let Some(g) = gpu() else { return };
    let l = |s: &str| layout_core::Layout::parse(s).unwrap();
    let a = g.filled(l("(4,8):(8,1)"), 1.0f32).unwrap();
    let mut b = g.filled(l("(4,8):(8,1)"), 0.5f32).unwrap();
    let e = g.transpose::<f32, Padded<f32>>(&a, &mut b).unwrap_err();
    assert!(e.to_string().contains("dst of shape (cols, rows)"), "{e}");
    let mut c = g.filled(l("32:1"), 0.5f32).unwrap();
    assert!(g.copy(&a, &mut c).is_err());
}
