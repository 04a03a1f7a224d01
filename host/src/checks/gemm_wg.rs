//! The check of `gemm_wg` (tessel_gpu::gemm_wg: one warpgroup's TMA-fed wgmma GEMM): its inputs,
//! the f64 reference and the bound within which the tensor cores must agree with it, and the
//! kernel on the simulated GPU (tensor maps of host buffers, C poisoned with NaN and written
//! once).

use crate::elem::Rng;
use crate::sim::{self, HostMem, Options, Sim, SimError, SimTensorMap};
use layout_core::{FlatLayout, FlatTensor, SwizzleMode};
use tessel_gpu::ctx::Kernel;
use tessel_gpu::gemm_wg::{GemmWg, GemmWgParams, BK, BM, BN};
use tessel_gpu::mma::MmaIn;

/// The inputs of one check: A (`M x K`) and B (`N x K`), row-major.
#[derive(Clone, Debug)]
pub struct Inputs<I> {
    /// `[M, N, K]`.
    pub mnk: [usize; 3],
    /// `M x K`.
    pub a: Vec<I>,
    /// `N x K`.
    pub b: Vec<I>,
}

impl<I: MmaIn + Default> Inputs<I> {
    /// `M x K` and `N x K` of small integers (-2 to 2: with `K` below `2^20` every partial sum
    /// is exact in `f32`, so any order of addition gives the same bits) or of values of either
    /// sign spanning a few binades. `K` a multiple of 8 (the copy engine's rows are multiples of
    /// 16 bytes).
    pub fn new(rng: &mut Rng, mnk: [usize; 3], small: bool) -> Self {
        let mut draw = || -> I {
            let u = rng.uniform();
            I::from_f32(if small {
                (u * 5.0).floor() as f32 - 2.0
            } else {
                ((u - 0.5) * (4.0 * rng.uniform()).exp2()) as f32
            })
        };
        let [m, n, k] = mnk;
        let a = (0..m * k).map(|_| draw()).collect();
        let b = (0..n * k).map(|_| draw()).collect();
        Inputs { mnk, a, b }
    }

    /// `C(i, j)`'s terms `A(i, k) B(j, k)`, each exact in `f64`.
    fn terms(&self, i: usize, j: usize) -> impl Iterator<Item = f64> + '_ {
        let k = self.mnk[2];
        let x = |v: &I| f64::from(v.to_f32());
        (0..k).map(move |l| x(&self.a[i * k + l]) * x(&self.b[j * k + l]))
    }

    /// `C = A B^T` in `f64`, row-major.
    pub fn reference(&self) -> Vec<f64> {
        let [m, n, _] = self.mnk;
        (0..m * n).map(|e| self.terms(e / n, e % n).sum()).collect()
    }

    /// How far an `f32` result may be from [`Inputs::reference`] at element `e`: the tensor cores
    /// add each wgmma's 16 products to the accumulator aligned to the largest and truncated, so
    /// each of the `K / 16` steps loses at most `(16 + 2)` units in the last place of `f32` at the
    /// magnitude of the sum of absolute values so far (`mma_tile`'s bound, per step), the
    /// simulated GPU one rounding per step: `18 (K / 16 + 1) 2^-23 sum |terms|`.
    pub fn bound(&self, e: usize) -> f64 {
        let n = self.mnk[1];
        let s: f64 = self.terms(e / n, e % n).map(f64::abs).sum();
        let steps = self.mnk[2].div_ceil(16) as f64 + 1.0;
        18.0 * steps * s * f64::powi(2.0, -23)
    }
}

/// `gemm_wg` (`BUG`: its broken copy) on the simulated GPU under schedule `seed`: C (`M x N`,
/// row-major). Panics where an input is written or an element of C not written exactly once.
pub fn simulate<I: MmaIn + Default, const BUG: u8>(
    x: &Inputs<I>,
    seed: u64,
) -> Result<Vec<f32>, SimError> {
    let [m, n, k] = x.mnk.map(|v| v as i64);
    let (mut a, mut b) = (x.a.clone(), x.b.clone());
    let (mut ra, mut rb) = (vec![0u32; a.len()], vec![0u32; b.len()]);
    let mut c = vec![f32::NAN; (m * n) as usize];
    let mut wc = vec![0u32; c.len()];
    // SAFETY: every buffer outlives the launch and is reached only through these engines
    let (ea, eb, ec) = unsafe {
        (
            HostMem::new(&mut a, &mut ra),
            HostMem::new(&mut b, &mut rb),
            HostMem::new(&mut c, &mut wc).once(),
        )
    };
    let map = |e, rows, boxed| {
        SimTensorMap::new(e, [rows, k], k, boxed, SwizzleMode::B128).expect("a tensor map")
    };
    let p = GemmWgParams {
        a: map(ea, m, [BM, BK]),
        b: map(eb, n, [BN, BK]),
        c: FlatTensor::new(ec, FlatLayout::new([m, n], [n, 1]).expect("C's layout")),
        k,
    };
    type K<I, const B: u8> = GemmWg<I, B>;
    let p = K::<I, BUG>::prepare::<Sim>(p).expect("M, N, K of at least 1");
    let g = K::<I, BUG>::geometry::<Sim>(&p, 1, 0);
    sim::launch::<K<I, BUG>>(&p, g, Options { seed })?;
    assert!(ra.iter().chain(&rb).all(|&r| r == 0), "an input written");
    sim::written_once(&mut wc);
    assert!(
        wc.iter().all(|&w| w == 1),
        "an element of C not written once"
    );
    Ok(c)
}
