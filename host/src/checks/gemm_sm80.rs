//! `gemm_sm80` (`tessel_gpu::gemm`) on the simulated GPU: the kernel's own function run for every
//! thread of every block, its `cp.async` stages (or the copy engine's, `gemm_tma`), `ldmatrix`
//! and `mma.sync` performed as the PTX ISA defines them, every shared-memory access checked for
//! races and every element of C written exactly once. The inputs, the `f64` reference and its
//! bound are [`Inputs`]'s.

use crate::blas::{check_gemm, gemm_reference_and_tolerance, BlasElem};
use crate::elem::Rng;
use crate::sim::{self, HostMem, Options, Sim, SimError, SimTensorMap};
use half::{bf16, f16};
use layout_core::{FlatLayout, FlatTensor, SwizzleMode};
use tessel_gpu::ctx::Kernel;
use tessel_gpu::gemm::{Gemm, GemmMapParams, GemmParams, GemmTma, BK, BM, BN};

/// An input type of the GEMM (`bf16`, `f16`).
pub trait GemmIn: BlasElem + tessel_gpu::gemm::GemmIn + crate::runtime::tma::TmaElem {}
impl GemmIn for bf16 {}
impl GemmIn for f16 {}

/// An output type of the GEMM of inputs `I` (`I` itself or `f32`, the pairs cuBLAS has too).
pub trait GemmOut: BlasElem + tessel_gpu::real::Real + crate::runtime::tma::TmaElem {}
impl GemmOut for bf16 {}
impl GemmOut for f16 {}
impl GemmOut for f32 {}

/// The inputs of one GEMM: `a` `M x K`, `b` `N x K`, the old `c` `M x N` (row-major, packed),
/// `alpha`, `beta`.
#[derive(Clone, Debug)]
pub struct Inputs<I, O> {
    /// `[M, N, K]`.
    pub mnk: [usize; 3],
    /// `M x K`.
    pub a: Vec<I>,
    /// `N x K`.
    pub b: Vec<I>,
    /// `M x N`: read when `beta != 0`, else poisoned.
    pub c: Vec<O>,
    /// Scales `A B^T`.
    pub alpha: f32,
    /// Scales the old C.
    pub beta: f32,
}

impl<I: GemmIn, O: GemmOut + BlasElem> Inputs<I, O> {
    /// Random `m x n x k` inputs; `beta` 0 and C poisoned when `beta_zero`.
    pub fn random(rng: &mut Rng, [m, n, k]: [usize; 3], beta_zero: bool) -> Self {
        let (a, b) = (rng.fill(m * k), rng.fill(n * k));
        let c = if beta_zero {
            vec![O::poison(); m * n]
        } else {
            rng.fill(m * n)
        };
        Inputs {
            mnk: [m, n, k],
            a,
            b,
            c,
            alpha: (0.5 + rng.uniform().abs()) as f32,
            beta: if beta_zero { 0.0 } else { rng.uniform() as f32 },
        }
    }

    /// `got` (C, row-major) against the `f64` reference within its bound: the check's line, or
    /// `Err` naming the worst element.
    pub fn judge(&self, what: &str, got: &[O]) -> Result<String, String> {
        let [m, n, k] = self.mnk;
        let (want, tol) = gemm_reference_and_tolerance::<I, O>(
            &self.a, &self.b, &self.c, m, n, k, self.alpha, self.beta,
        );
        let chk = check_gemm(got, &want, &tol, n);
        if chk.ok() {
            Ok(format!("{what}: {chk}"))
        } else {
            Err(format!("{what}: {chk}"))
        }
    }

    /// A simulated run: its C judged as [`Inputs::judge`] does, or the fault it ended with.
    pub fn judge_run(&self, what: &str, run: Result<Vec<O>, SimError>) -> Result<String, String> {
        match run {
            Ok(c) => self.judge(what, &c),
            Err(e) => Err(format!("{what}: {e}")),
        }
    }
}

impl<I: GemmIn, O: GemmOut> Inputs<I, O> {
    /// How a simulation of `kernel` under schedule `seed` words a refusal: `kernel MxNxK: why`.
    pub(crate) fn refusal(&self, kernel: &str, seed: u64) -> impl Fn(&str) -> SimError {
        let [m, n, k] = self.mnk;
        let kernel = kernel.to_string();
        move |why: &str| SimError {
            block: [0, 0],
            seed,
            message: format!("{kernel} {m}x{n}x{k}: {why}"),
        }
    }

    /// `launch` of a kernel on these inputs in the simulated GPU's memory (copies: A `M x K`, B
    /// `N x K`, C `M x N`, row-major, every element's writes counted), then global memory's
    /// checks: an input written, or an element of C written twice or never, is an `Err` worded by
    /// `refuse`. C, row-major.
    pub(crate) fn on_simulated_gpu(
        &self,
        refuse: &impl Fn(&str) -> SimError,
        launch: impl FnOnce(GemmParams<HostMem<I>, HostMem<O>>) -> Result<(), SimError>,
    ) -> Result<Vec<O>, SimError> {
        let [m, n, k] = self.mnk.map(|v| v as i64);
        let (mut a, mut b, mut c) = (self.a.clone(), self.b.clone(), self.c.clone());
        let (mut ra, mut rb) = (vec![0u32; a.len()], vec![0u32; b.len()]);
        let mut wc = vec![0u32; c.len()];
        let layout =
            |rows, cols| FlatLayout::new([rows, cols], [cols, 1]).expect("a row-major layout");
        // SAFETY: every buffer outlives the launch and is reached only through these engines
        let (ea, eb, ec) = unsafe {
            (
                HostMem::new(&mut a, &mut ra),
                HostMem::new(&mut b, &mut rb),
                HostMem::new(&mut c, &mut wc).once(),
            )
        };
        launch(GemmParams {
            a: FlatTensor::new(ea, layout(m, k)),
            b: FlatTensor::new(eb, layout(n, k)),
            c: FlatTensor::new(ec, layout(m, n)),
            alpha: self.alpha,
            beta: self.beta,
        })?;
        if let Some(i) = ra.iter().chain(&rb).position(|&r| r != 0) {
            return Err(refuse(&format!("input element {i} written")));
        }
        sim::written_once(&mut wc);
        if let Some(i) = wc.iter().position(|&w| w != 1) {
            let (r, col) = (i / n as usize, i % n as usize);
            return Err(refuse(&format!("C[{r},{col}] never written")));
        }
        Ok(c)
    }
}

/// Which stages' filler: `cp.async` (`gemm_<I>_<O>`) or the copy engine (`gemm_tma_<I>_<O>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// `cp.async` (16-byte chunks, or element by element for other layouts).
    CpAsync,
    /// The copy engine (`K` a multiple of 8).
    Tma,
}

/// `gemm_sm80` (`BUG`: its broken copy, [`Gemm`]'s) on the simulated GPU under schedule `seed`:
/// C, row-major. Global memory's checks (an input written, an element of C written twice or never)
/// and the simulator's (a race, an access in flight, a deadlock) are `Err`s naming the sites.
pub fn simulate<I: GemmIn + Default, O: GemmOut, const BUG: u8>(
    x: &Inputs<I, O>,
    fill: Fill,
    seed: u64,
) -> Result<Vec<O>, SimError> {
    let refuse = x.refusal("gemm_sm80", seed);
    let opts = Options { seed };
    x.on_simulated_gpu(&refuse, |g| {
        let k = x.mnk[2] as i64;
        match fill {
            Fill::CpAsync => {
                type K<I, O, const B: u8> = Gemm<I, O, B>;
                let p = K::<I, O, BUG>::prepare::<Sim>(g).map_err(&refuse)?;
                let geo = K::<I, O, BUG>::geometry::<Sim>(&p, 1, 0);
                sim::launch::<K<I, O, BUG>>(&p, geo, opts)
            }
            Fill::Tma => {
                let map = |e, rows, boxed| {
                    SimTensorMap::new(e, [rows, k], k, boxed, SwizzleMode::B128)
                        .map_err(|e| refuse(&format!("a tensor map: {e}")))
                };
                let p = GemmMapParams {
                    a_map: map(g.a.engine(), g.a.shape()[0], [BM, BK])?,
                    b_map: map(g.b.engine(), g.b.shape()[0], [BN, BK])?,
                    g,
                };
                let p = GemmTma::<I, O>::prepare::<Sim>(p).map_err(&refuse)?;
                let geo = GemmTma::<I, O>::geometry::<Sim>(&p, 1, 0);
                sim::launch::<GemmTma<I, O>>(&p, geo, opts)
            }
        }
    })
}

/// `gemm_sm80` of `x` on the simulated GPU, judged: a line, or `Err` with what went wrong.
pub fn check<I: GemmIn + Default, O: GemmOut + BlasElem>(
    x: &Inputs<I, O>,
    fill: Fill,
    seed: u64,
) -> Result<String, String> {
    let [m, n, k] = x.mnk;
    let what = format!(
        "gemm{}_{}_{} {m}x{n}x{k} simulated (seed {seed})",
        if fill == Fill::Tma { "_tma" } else { "" },
        I::NAME,
        O::NAME
    );
    x.judge_run(&what, simulate::<I, O, 0>(x, fill, seed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};
    use tessel_gpu::gemm::STAGES;

    const TARGET: &str = "-p tessel-host --lib gemm_sm80";

    /// The sizes and the pipeline's: ragged tiles, more k-tiles than stages, K not a
    /// multiple of 8 (element by element).
    fn sizes() -> Vec<[usize; 3]> {
        let (bk, st) = (BK as usize, STAGES as usize);
        vec![
            [1, 1, 1],
            [17, 33, 65],
            [130, 264, 136],
            [257, 512, 72],
            [40, 24, (st + 2) * bk + 8],
        ]
    }

    #[test]
    fn gemm_sm80_on_the_simulated_gpu_matches_the_reference() {
        let mut rng = Rng::from_env_or_fresh("gemm_sm80_on_the_simulated_gpu", TARGET);
        let mut bad = Vec::new();
        for (i, size) in sizes().into_iter().enumerate() {
            let beta_zero = i % 2 == 0;
            let seed = rng.next_u64() % 1000;
            let mut run = |r: Result<String, String>| match r {
                Ok(line) => eprintln!("{line}"),
                Err(e) => bad.push(e),
            };
            run(check(
                &Inputs::<bf16, bf16>::random(&mut rng, size, beta_zero),
                Fill::CpAsync,
                seed,
            ));
            run(check(
                &Inputs::<f16, f32>::random(&mut rng, size, !beta_zero),
                Fill::CpAsync,
                seed,
            ));
            if size[2] % 8 == 0 {
                run(check(
                    &Inputs::<bf16, f32>::random(&mut rng, size, beta_zero),
                    Fill::Tma,
                    seed,
                ));
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    /// Broken copy `BUG` at `mnk` must fail; returns its message.
    fn broken<const BUG: u8>(mnk: [usize; 3], beta_zero: bool) -> String {
        let mut rng = Rng::new(7 + BUG as u64);
        let x = Inputs::<bf16, f32>::random(&mut rng, mnk, beta_zero);
        let e = match simulate::<bf16, f32, BUG>(&x, Fill::CpAsync, 3) {
            Ok(c) => x
                .judge("broken", &c)
                .expect_err("a broken gemm_sm80 must fail"),
            Err(e) => e.to_string(),
        };
        eprintln!("BUG {BUG}: {e}");
        e
    }

    #[test]
    fn each_broken_copy_is_caught_with_its_sites() {
        let k = (STAGES as usize + 1) * BK as usize;
        let sited = |e: &str| e.contains("gemm.rs:") && e.contains("TESSEL_SIM_SEED");
        // a stage refilled while other warps may still read it: its copy is in flight under a
        // read, or (another schedule) a race
        let e = broken::<1>([40, 24, k], true);
        assert!(
            sited(&e) && (e.contains("race") || e.contains("in flight")),
            "{e}"
        );
        // a stage read before its cp.async landed
        let e = broken::<2>([40, 24, k], true);
        assert!(sited(&e) && e.contains("in flight"), "{e}");
        // swapped ldmatrix words: a wrong C
        let e = broken::<3>([17, 33, 65], false);
        assert!(e.contains("worst at"), "{e}");
        // the epilogue reads accumulators staged by other threads without the barrier
        let e = broken::<4>([20, 30, 16], true);
        assert!(
            sited(&e) && (e.contains("race") || e.contains("before any thread wrote")),
            "{e}"
        );
        // a dropped store
        let e = broken::<5>([20, 30, 16], true);
        assert!(e.contains("never written"), "{e}");
        // the read stage stuck at 0: refilled by cp.async while its readers still read it
        let e = broken::<6>([40, 24, k], true);
        assert!(
            sited(&e) && (e.contains("race") || e.contains("in flight")),
            "{e}"
        );
    }
}
