//! `ldmatrix` and `mma.sync` on the simulated GPU, through tessel's `mma_tile` kernel (one warp's
//! 16x16 products `a b^T + c` and `a bt + c`, in `bf16` and `f16`): equal to the f64 reference
//! rounded once, bit for bit, under several schedules, each output element written once; and a
//! broken copy of the kernel (no warp barrier between the copies into shared memory and
//! `ldmatrix`) reported under every schedule, with the kernel's site. tests/gpu.rs runs the same
//! kernel on a GPU and compares.

use half::{bf16, f16};
use host::checks::mma_tile::{simulate, Inputs};
use host::elem::Rng;
use tessel_gpu::mma::MmaIn;

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

fn equal_to_the_reference<I: MmaIn + Default>(small: bool) {
    let seed = Rng::fresh_seed();
    println!("inputs seed {seed}");
    let mut rng = Rng::new(seed);
    for _ in 0..4 {
        let x = Inputs::<I>::new(&mut rng, small);
        let (d, dt) = x.reference();
        for schedule in [0, 1, 7, 12345] {
            let (sd, sdt) = simulate::<I, false>(&x, schedule).unwrap();
            assert_eq!(bits(&sd), bits(&d), "a b^T + c, inputs seed {seed}");
            assert_eq!(bits(&sdt), bits(&dt), "a bt + c, inputs seed {seed}");
        }
    }
}

#[test]
fn bf16_products_equal_the_reference() {
    equal_to_the_reference::<bf16>(true);
    equal_to_the_reference::<bf16>(false);
}

#[test]
fn f16_products_equal_the_reference() {
    equal_to_the_reference::<f16>(true);
    equal_to_the_reference::<f16>(false);
}

#[test]
fn a_missing_warp_barrier_before_ldmatrix_is_reported() {
    let x = Inputs::<bf16>::new(&mut Rng::new(5), true);
    for seed in 0..16 {
        let e = simulate::<bf16, true>(&x, seed).unwrap_err().to_string();
        assert!(e.contains(&format!("TESSEL_SIM_SEED={seed}")), "{e}");
        // a lane's ldmatrix reads a row before the lane that stores it has run (nothing between
        // a lane's store and its ldmatrix suspends it), or after it, unordered: a race
        let unwritten = e.contains("before any thread wrote it") && e.contains("missing barrier");
        let race = e.contains("shared-memory race");
        assert!(unwritten || race, "{e}");
        assert!(e.contains("gpu/src/mma_tile.rs:"), "{e}");
    }
}
