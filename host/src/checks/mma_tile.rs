//! The check of `mma_tile` (tessel_gpu::mma_tile, one warp's 16x16 tile products through
//! `ldmatrix` and `mma.sync`): its inputs, the f64 reference, the kernel on the simulated GPU,
//! and the bound within which the GPU's tensor cores must agree with it.

use crate::elem::Rng;
use crate::sim::{self, HostMem, Options, Sim, SimError};
use layout_core::{FlatLayout, FlatTensor};
use tessel_gpu::ctx::Kernel;
use tessel_gpu::mma::MmaIn;
use tessel_gpu::mma_tile::{MmaTile, MmaTileParams, TILE};

/// Elements of a tile.
pub const N: usize = (TILE * TILE) as usize;

/// The inputs of one check: `a` (`M x K`), `b` (`N x K`), `bt` (`K x N`), `c`, all row-major.
#[derive(Clone, Debug)]
pub struct Inputs<I> {
    /// `M x K`.
    pub a: Vec<I>,
    /// `N x K`.
    pub b: Vec<I>,
    /// `K x N`.
    pub bt: Vec<I>,
    /// `M x N`.
    pub c: Vec<f32>,
}

impl<I: MmaIn + Default> Inputs<I> {
    /// Small integers (-4 to 4: every partial sum exact in `f32`, so any order of addition and
    /// any rounding give the same bits), or values of either sign spanning a few binades.
    pub fn new(rng: &mut Rng, small: bool) -> Self {
        let mut draw = |scale: f64| -> f32 {
            let u = rng.uniform();
            if small {
                (u * 9.0).floor() as f32 - 4.0
            } else {
                ((u - 0.5) * scale * (4.0 * rng.uniform()).exp2()) as f32
            }
        };
        let mut tile = || (0..N).map(|_| I::from_f32(draw(2.0))).collect::<Vec<I>>();
        let (a, b, bt) = (tile(), tile(), tile());
        let c = (0..N).map(|_| draw(8.0)).collect();
        Inputs { a, b, bt, c }
    }

    /// Element `(m, n)`'s 16 products of `a b^T` (`trans`: of `a bt`) and `c(m, n)`, in `f64`
    /// (each exact).
    fn terms(&self, m: usize, n: usize, trans: bool) -> [f64; 17] {
        let (t, x) = (TILE as usize, |v: &[I], i: usize| f64::from(v[i].to_f32()));
        std::array::from_fn(|k| match k {
            16 => f64::from(self.c[m * t + n]),
            _ if trans => x(&self.a, m * t + k) * x(&self.bt, k * t + n),
            _ => x(&self.a, m * t + k) * x(&self.b, n * t + k),
        })
    }

    /// `(a b^T + c, a bt + c)`, each element's terms summed in `f64` and rounded to `f32` once:
    /// what the simulated GPU's `mma.sync` computes.
    pub fn reference(&self) -> (Vec<f32>, Vec<f32>) {
        let t = TILE as usize;
        let d = |trans| {
            (0..N)
                .map(|i| self.terms(i / t, i % t, trans).iter().sum::<f64>() as f32)
                .collect()
        };
        (d(false), d(true))
    }

    /// How far the tensor cores may be from [`Inputs::reference`] at element `i`: they add the
    /// 17 terms in their own order, aligned to the largest and truncated, so each may lose up
    /// to a unit in the last place of `f32` at the magnitude of their sum of absolute values,
    /// `(17 + 1) 2^-23 sum |term|` (the reference's own rounding included).
    pub fn bound(&self, i: usize, trans: bool) -> f64 {
        let t = TILE as usize;
        let s: f64 = self
            .terms(i / t, i % t, trans)
            .iter()
            .map(|x| x.abs())
            .sum();
        18.0 * s * f64::powi(2.0, -23)
    }
}

/// `mma_tile` (`SKIP_SYNC`: its broken copy) on the simulated GPU under schedule `seed`: `d` and
/// `dt`. Panics where an input is written or an output element not written exactly once.
pub fn simulate<I: MmaIn + Default, const SKIP_SYNC: bool>(
    x: &Inputs<I>,
    seed: u64,
) -> Result<(Vec<f32>, Vec<f32>), SimError> {
    let l = FlatLayout::new([TILE, TILE], [TILE, 1]).expect("a 16x16 layout");
    let (mut a, mut b, mut bt, mut c) = (x.a.clone(), x.b.clone(), x.bt.clone(), x.c.clone());
    let mut reads = vec![vec![0u32; N]; 4];
    let (mut d, mut dt) = (vec![f32::NAN; N], vec![f32::NAN; N]);
    let (mut wd, mut wdt) = (vec![0u32; N], vec![0u32; N]);
    let [ra, rb, rbt, rc] = &mut reads[..] else {
        unreachable!("four inputs")
    };
    // SAFETY: every buffer outlives the launch and is reached only through these engines
    let p = unsafe {
        MmaTileParams {
            a: FlatTensor::new(HostMem::new(&mut a, ra), l),
            b: FlatTensor::new(HostMem::new(&mut b, rb), l),
            bt: FlatTensor::new(HostMem::new(&mut bt, rbt), l),
            c: FlatTensor::new(HostMem::new(&mut c, rc), l),
            d: FlatTensor::new(HostMem::new(&mut d, &mut wd).once(), l),
            dt: FlatTensor::new(HostMem::new(&mut dt, &mut wdt).once(), l),
        }
    };
    type K<I, const S: bool> = MmaTile<I, S>;
    let p = K::<I, SKIP_SYNC>::prepare::<Sim>(p).expect("16x16 row-major tiles");
    let g = K::<I, SKIP_SYNC>::geometry::<Sim>(&p, 1, 0);
    sim::launch::<K<I, SKIP_SYNC>>(&p, g, Options { seed })?;
    assert!(reads.iter().flatten().all(|&r| r == 0), "an input written");
    sim::written_once(&mut wd);
    sim::written_once(&mut wdt);
    assert!(
        wd.iter().chain(&wdt).all(|&w| w == 1),
        "an output not written once"
    );
    Ok((d, dt))
}
