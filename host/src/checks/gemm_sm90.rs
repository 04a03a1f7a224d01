//! `gemm_sm90` (`tessel_gpu::gemm_sm90`) on the simulated GPU: the kernel's own function run for
//! every thread of every cluster of two blocks: the producer's copy-engine loads (B's halves
//! multicast to both blocks) counted on the full mbarriers, the consumers' wgmmas reading the
//! stages through their descriptors until the waits that cover them, the releases on both
//! blocks' empty mbarriers, `setmaxnreg`, the persistent tile loop, and the epilogue (the copy
//! engine's stores of C, or the threads' stores when `beta != 0` or C has no tensor map). Every
//! shared-memory access, the copy engine's and the wgmmas' included, is checked for races, and
//! every element of C must be written exactly once. The inputs, the `f64` reference and its bound
//! are [`Inputs`]'s.
//!
//! The copy engine's rows are multiples of 16 bytes: K must be a multiple of 8 (A's and B's maps;
//! the GPU launcher refuses other K too). C's map is built as the GPU launcher builds it: where
//! the copy engine can address C (rows a multiple of 16 bytes), else absent.

use crate::blas::BlasElem;
use crate::checks::gemm_sm80::Inputs;
use crate::checks::gemm_sm80::{GemmIn, GemmOut};
use crate::sim::{self, Options, Sim, SimError, SimTensorMap};
use layout_core::SwizzleMode;
use tessel_gpu::ctx::Kernel;
use tessel_gpu::gemm::{BK, BM};
use tessel_gpu::gemm_sm90::{c_box_cols, GemmSm90, GemmSm90Params, B_BOX_ROWS};

/// `gemm_sm90` (`BUG`: its broken copy, [`GemmSm90`]'s) of `x` on `clusters` clusters of the
/// simulated GPU under schedule `seed`: C, row-major. Global memory's checks (an input written,
/// an element of C written twice or never) and the simulator's (a race, an access in flight, a
/// deadlock, a barrier over its count) are `Err`s naming the sites.
pub fn simulate<I: GemmIn + Default, O: GemmOut, const BUG: u8>(
    x: &Inputs<I, O>,
    clusters: i64,
    seed: u64,
) -> Result<Vec<O>, SimError> {
    let refuse = x.refusal("gemm_sm90", seed);
    if clusters < 1 {
        return Err(refuse("needs at least one cluster"));
    }
    x.on_simulated_gpu(&refuse, |g| {
        let [m, n, k] = x.mnk.map(|v| v as i64);
        let map = |e, rows, boxed| {
            SimTensorMap::new(e, [rows, k], k, boxed, SwizzleMode::B128)
                .map_err(|e| refuse(&format!("a tensor map of A or B: {e}")))
        };
        let bits = 8 * std::mem::size_of::<O>() as i64;
        let c_map = SimTensorMap::new(
            g.c.engine(),
            [m, n],
            n,
            [64, c_box_cols(bits)],
            SwizzleMode::B128,
        )
        .unwrap_or_else(|_| SimTensorMap::absent());
        let p = GemmSm90Params {
            a_map: map(g.a.engine(), m, [BM, BK])?,
            b_map: map(g.b.engine(), n, [B_BOX_ROWS, BK])?,
            c_map,
            g,
        };
        type K<I, O, const B: u8> = GemmSm90<I, O, B>;
        let p = K::<I, O, BUG>::prepare::<Sim>(p).map_err(&refuse)?;
        // a device of two multiprocessors per cluster
        let geo = K::<I, O, BUG>::geometry::<Sim>(&p, 2 * clusters, 0);
        sim::launch::<K<I, O, BUG>>(&p, geo, Options { seed })
    })
}

/// `gemm_sm90` of `x` on `clusters` simulated clusters, judged: a line, or `Err` with what went
/// wrong.
pub fn check<I: GemmIn + Default, O: GemmOut + BlasElem>(
    x: &Inputs<I, O>,
    clusters: i64,
    seed: u64,
) -> Result<String, String> {
    let [m, n, k] = x.mnk;
    let what = format!(
        "gemm_sm90_{}_{} {m}x{n}x{k} on {clusters} clusters, simulated (seed {seed})",
        I::NAME,
        O::NAME
    );
    x.judge_run(&what, simulate::<I, O, 0>(x, clusters, seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elem::Rng;
    use half::{bf16, f16};
    use tessel_gpu::gemm_sm90::STAGES;

    const TARGET: &str = "-p tessel-host --lib gemm_sm90";

    /// The sizes with K a multiple of 8 (the copy engine's rows; 1x1x1 and 17x33x65
    /// become 1x1x8 and 17x33x72), and the pipeline's: an odd number of M tiles (the last pair's
    /// second block lies below C), N not a multiple of the chunks, more k-tiles than stages, a
    /// tile per cluster and several, clusters with nothing to do.
    #[test]
    fn gemm_sm90_on_the_simulated_gpu_matches_the_reference() {
        let mut rng = Rng::from_env_or_fresh("gemm_sm90_on_the_simulated_gpu", TARGET);
        let mut bad = Vec::new();
        let deep = (STAGES as usize + 2) * BK as usize + 8;
        for (i, (size, clusters)) in [
            ([1, 1, 8], 1),
            ([17, 33, 72], 2),
            ([130, 264, 136], 1),
            ([130, 264, 136], 2),
            ([257, 512, 72], 3),
            ([100, 200, deep], 1),
        ]
        .into_iter()
        .enumerate()
        {
            let beta_zero = i % 2 == 0;
            let seed = rng.next_u64() % 1000;
            let mut run = |r: Result<String, String>| match r {
                Ok(line) => eprintln!("{line}"),
                Err(e) => bad.push(e),
            };
            run(check(
                &Inputs::<bf16, bf16>::random(&mut rng, size, beta_zero),
                clusters,
                seed,
            ));
            run(check(
                &Inputs::<f16, f32>::random(&mut rng, size, !beta_zero),
                clusters,
                seed,
            ));
            run(check(
                &Inputs::<bf16, f32>::random(&mut rng, size, beta_zero),
                clusters,
                seed,
            ));
            run(check(
                &Inputs::<f16, f16>::random(&mut rng, size, !beta_zero),
                clusters,
                seed,
            ));
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// The same inputs under other schedules: the same C, bit for bit (each element's order of
    /// arithmetic is the kernel's, whatever the order in which threads run).
    #[test]
    fn the_schedule_does_not_change_c() {
        let mut rng = Rng::new(11);
        let x = Inputs::<f16, f16>::random(&mut rng, [140, 300, 5 * BK as usize + 8], false);
        let runs: Vec<_> = [1, 2, 3]
            .iter()
            .map(|&seed| simulate::<f16, f16, 0>(&x, 2, seed).expect("a correct run"))
            .collect();
        assert!(runs.iter().all(|c| c == &runs[0]));
    }

    /// Broken copy `BUG` at `mnk` must fail; returns its message.
    fn broken<const BUG: u8>(mnk: [usize; 3], beta_zero: bool) -> String {
        let mut rng = Rng::new(7 + BUG as u64);
        let x = Inputs::<bf16, f32>::random(&mut rng, mnk, beta_zero);
        let e = match simulate::<bf16, f32, BUG>(&x, 1, 3) {
            Ok(c) => x
                .judge("broken", &c)
                .expect_err("a broken gemm_sm90 must fail"),
            Err(e) => e.to_string(),
        };
        eprintln!("BUG {BUG}: {e}");
        e
    }

    #[test]
    fn each_broken_copy_is_caught_with_its_sites() {
        let k = (STAGES as usize + 2) * BK as usize;
        let sited = |e: &str| e.contains("gemm_sm90.rs:") && e.contains("TESSEL_SIM_SEED");
        // the epilogue stages C in the last stage while the other warpgroup's wgmmas read it
        // (a race between a wgmma's read and a thread's write: both sites named)
        let e = broken::<1>([200, 256, k], true);
        assert!(sited(&e) && e.contains("race"), "{e}");
        // the producer refills stages without waiting for their release: it arrives on a full
        // barrier whose phase the consumers have not passed
        let e = broken::<2>([200, 256, k], true);
        assert!(sited(&e) && e.contains("past its count"), "{e}");
        // the copy engine stores what threads wrote without the proxy fence
        let e = broken::<3>([200, 256, k], true);
        assert!(sited(&e) && e.contains("fence_proxy_async"), "{e}");
        // a stage released before its wgmmas have read it: the copy engine refills it under them
        let e = broken::<4>([200, 256, k], true);
        assert!(
            sited(&e) && e.contains("wgmma") && e.contains("may still read"),
            "{e}"
        );
        // B's half not multicast: the partner's full barrier never completes
        let e = broken::<5>([200, 256, k], true);
        assert!(sited(&e) && e.contains("deadlock"), "{e}");
    }
}
