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

/// RMSNorm of padded rows (`x` and `y` with different row strides above `N`): the device's `y`
/// buffer, padding included, bit-equal to the host execution's (the padding stays poisoned).
#[test]
fn rmsnorm_of_padded_rows_matches_the_host_execution() {
    use host::elem::RmsElem;
    use layout_core::{FlatLayout, Layout};
    use tessel_gpu::rmsnorm::RmsNorm;
    let Some(g) = gpu() else { return };
    let mut rng = seeded("rmsnorm_of_padded_rows_matches_the_host_execution");
    fn check<T: RmsElem>(g: &Gpu, rng: &mut Rng, (m, n, ldx, ldy): (i64, i64, i64, i64)) {
        let flat = |ld| FlatLayout::new([m, n], [ld, 1]).unwrap();
        let (lx, ly, lw) = (flat(ldx), flat(ldy), FlatLayout::new([n], [1]).unwrap());
        let x: Vec<T> = rng.fill(((m - 1) * ldx + n) as usize);
        let w: Vec<T> = rng.fill(n as usize);
        let staged = RmsNorm::<T>::staged_for(n, g.rmsnorm_smem());
        let host =
            host::exec::rmsnorm_strided(&x, lx, &w, lw, ly, 1e-6, staged, T::poison()).unwrap();
        let to = |l: FlatLayout<2>| l.to_layout().unwrap();
        let dx = g.upload(&x, to(lx)).unwrap();
        let dw = g.upload(&w, Layout::int(n, 1).unwrap()).unwrap();
        let mut dy = g.filled(to(ly), T::poison()).unwrap();
        g.rmsnorm(&dx, &dw, &mut dy, 1e-6).unwrap();
        let y = g.download(&dy).unwrap();
        let bad = y
            .iter()
            .zip(&host.out)
            .position(|(a, b)| a.bits() != b.bits());
        assert_eq!(bad, None, "{} {m}x{n} ld {ldx}/{ldy}", T::NAME);
    }
    for shape in [
        (1, 8, 16, 8),
        (37, 2056, 2064, 2112),
        (14, 4096, 4160, 4104),
        (5, 12296, 12304, 12312),
    ] {
        check::<bf16>(&g, &mut rng, shape);
        check::<f32>(&g, &mut rng, shape);
    }
    // f32 atoms are 4 wide
    check::<f32>(&g, &mut rng, (9, 1004, 1012, 1020));
    // and a refusal names its condition
    let l = |s: &str| layout_core::Layout::parse(s).unwrap();
    let x = g.filled(l("(4,64):(72,1)"), bf16::from_f32(1.0)).unwrap();
    let w = g.filled(l("64:1"), bf16::from_f32(1.0)).unwrap();
    let mut y = g.filled(l("(4,64):(8,1)"), bf16::from_f32(0.0)).unwrap();
    let e = g.rmsnorm(&x, &w, &mut y, 1e-6).unwrap_err();
    assert!(
        e.to_string()
            .contains("rmsnorm_bf16: rmsnorm needs y's rows not to overlap"),
        "{e}"
    );
}
