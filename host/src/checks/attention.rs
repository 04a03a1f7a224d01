//! The check of `attention` (tessel_gpu::attention, the FlashAttention forward): its inputs, the
//! f64 reference of O and of each row's log-sum-exp, the bounds within which the kernel must
//! agree with them, and the kernel on the simulated GPU (tensor maps of host buffers, O and the
//! log-sum-exp poisoned with NaN and written once).
//!
//! # The bound
//!
//! Write `s_ij` for the exact scores (`Q K^T`, unscaled), `p_ij = e^(scale (s_ij - m_i))`, `l_i =
//! sum_j p_ij`, `O = sum_j p_ij v_j / l_i`. The kernel's scores come from the tensor cores in
//! `f32`: `|s~ - s| <= d_ij = 18 (D / 16 + 1) 2^-23 sum_k |q_ik k_jk|` (the wgmma bound of
//! `gemm_wg`). Its `p~_ij = 2^(s~ scale log2 e - base)`, by `fma` and `ex2.approx` (relative
//! error below `2^-21` together, plus `2^-24 |argument| ln 2` for the rounding of the argument):
//! `p~ = p (1 + eta)` with `|eta| <= E_i = scale max_j d_ij + 2^-20 (1 + max_j |s_ij| scale)`
//! (to first order; `base`, the rescaling factors and their errors multiply the output and the
//! row sum alike, so they cancel in `O`). `P` is rounded to the input type (unit roundoff `u`:
//! `2^-8` for bf16, `2^-11` for f16) for `P V`, whose tensor-core sum adds `18 (Sk / 16 + 1)
//! 2^-23` relative to `sum_j p~ |v|`; the row sum adds `Sk 2^-24` relative in `f32`; the output
//! is rounded to the input type (`u |O|`). With `A_id = sum_j p_ij |v_jd| / l_i`:
//!
//! ```text
//! |O~ - O| <= (A + |O|) (u + 2 E + 20 (Sk / 16 + 1) 2^-23) + u |O| (1 + 2^-7)
//! |lse~ - lse| <= 2 E + (Sk / BN + Sk) 2^-21 + 2^-22 |lse| + 2^-20
//! ```
//!
//! (the log-sum-exp: `l`'s relative error, the rescaling factors' one per key tile, `lg2.approx`'s
//! absolute error, the final rounding).

use crate::elem::Rng;
use crate::sim::{self, HostMem, Options, Sim, SimError, SimTensorMap};
use layout_core::{FlatLayout, FlatTensor, SwizzleMode};
use tessel_gpu::attention::{query_rows, Attention, AttentionParams, PANEL};
use tessel_gpu::ctx::Kernel;
use tessel_gpu::mma::MmaIn;

/// The sizes of one attention problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Batch.
    pub batch: usize,
    /// Query heads.
    pub heads: usize,
    /// Key/value heads (dividing `heads`).
    pub kv_heads: usize,
    /// Query rows per head.
    pub seq_q: usize,
    /// Key rows per head.
    pub seq_k: usize,
    /// Head dimension.
    pub d: usize,
    /// The causal mask (key `j` seen by query `i` where `j <= i`).
    pub causal: bool,
}

impl Shape {
    /// Query rows in all: `B H Sq`.
    pub fn rows(&self) -> usize {
        self.batch * self.heads * self.seq_q
    }
    /// Key rows in all: `B Hkv Sk`.
    pub fn kv_rows(&self) -> usize {
        self.batch * self.kv_heads * self.seq_k
    }
    /// Query row `(b, h, i)`'s key/value rows start here.
    fn kv_start(&self, row: usize) -> usize {
        let bh = row / self.seq_q;
        let (b, h) = (bh / self.heads, bh % self.heads);
        (b * self.kv_heads + h / (self.heads / self.kv_heads)) * self.seq_k
    }
    /// The keys query row `row` sees: `0..Sk`, or `0..=i` under the causal mask.
    fn seen(&self, row: usize) -> usize {
        let i = row % self.seq_q;
        if self.causal {
            self.seq_k.min(i + 1)
        } else {
            self.seq_k
        }
    }
    /// The floating-point operations of the forward pass, as FlashAttention counts them: `4 B H
    /// Sq Sk D`, for the causal mask the pairs with `j <= i` only.
    pub fn flops(&self) -> f64 {
        let pairs: f64 = if self.causal {
            (0..self.seq_q).map(|i| self.seq_k.min(i + 1) as f64).sum()
        } else {
            (self.seq_q * self.seq_k) as f64
        };
        4.0 * (self.batch * self.heads) as f64 * pairs * self.d as f64
    }
}

/// The inputs of one check: Q (`B H Sq x D`), K and V (`B Hkv Sk x D`), row-major, and the scale.
#[derive(Clone, Debug)]
pub struct Inputs<I> {
    /// The sizes.
    pub shape: Shape,
    /// Queries.
    pub q: Vec<I>,
    /// Keys.
    pub k: Vec<I>,
    /// Values.
    pub v: Vec<I>,
    /// `1 / sqrt(D)`.
    pub scale: f32,
}

/// The f64 reference of one query row: its output row and log-sum-exp, and the magnitudes the
/// bound needs.
#[derive(Clone, Debug)]
pub struct RowRef {
    /// `O`'s row.
    pub o: Vec<f64>,
    /// `sum_j p_ij |v_jd| / l_i` per column.
    pub a: Vec<f64>,
    /// The log-sum-exp.
    pub lse: f64,
    /// `E_i` (see the module).
    pub e: f64,
}

impl<I: MmaIn + Default> Inputs<I> {
    /// Q, K, V uniform in `(-2, 2)`, rounded to `I`.
    pub fn new(rng: &mut Rng, shape: Shape) -> Self {
        let mut draw = |n: usize| -> Vec<I> {
            (0..n)
                .map(|_| I::from_f32((4.0 * rng.uniform() - 2.0) as f32))
                .collect()
        };
        let d = shape.d;
        let (q, k, v) = (
            draw(shape.rows() * d),
            draw(shape.kv_rows() * d),
            draw(shape.kv_rows() * d),
        );
        Inputs {
            shape,
            q,
            k,
            v,
            scale: 1.0 / (d as f32).sqrt(),
        }
    }

    /// Query row `row`'s reference.
    pub fn reference(&self, row: usize) -> RowRef {
        let (d, sk) = (self.shape.d, self.shape.seq_k);
        let x = |v: &I| f64::from(v.to_f32());
        let (kv, seen) = (self.shape.kv_start(row), self.shape.seen(row));
        let q = &self.q[row * d..row * d + d];
        let scale = f64::from(self.scale);
        let (mut s, mut delta) = (Vec::with_capacity(seen), 0f64);
        for j in 0..seen {
            let kr = &self.k[(kv + j) * d..(kv + j) * d + d];
            let terms = q.iter().zip(kr).map(|(a, b)| x(a) * x(b));
            let (sum, abs) = terms.fold((0.0, 0.0), |(s, a), t| (s + t, a + t.abs()));
            s.push(sum);
            delta = delta.max(18.0 * (d as f64 / 16.0 + 1.0) * abs * 2f64.powi(-23));
        }
        let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let smax = s.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let p: Vec<f64> = s.iter().map(|v| (scale * (v - m)).exp()).collect();
        let l: f64 = p.iter().sum();
        let (mut o, mut a) = (vec![0.0; d], vec![0.0; d]);
        for (j, pj) in p.iter().enumerate() {
            for c in 0..d {
                let vv = x(&self.v[(kv + j) * d + c]);
                o[c] += pj * vv / l;
                a[c] += pj * vv.abs() / l;
            }
        }
        let _ = sk;
        RowRef {
            o,
            a,
            lse: scale * m + l.ln(),
            e: scale * delta + 2f64.powi(-20) * (1.0 + smax * scale),
        }
    }

    /// The bound on output element `col` of the row whose reference is `r` (see the module).
    pub fn bound_o(&self, r: &RowRef, col: usize) -> f64 {
        let u = if I::BF16 {
            2f64.powi(-8)
        } else {
            2f64.powi(-11)
        };
        let sk = self.shape.seq_k as f64;
        let rel = u + 2.0 * r.e + 20.0 * (sk / 16.0 + 1.0) * 2f64.powi(-23);
        (r.a[col] + r.o[col].abs()) * rel + u * r.o[col].abs() * (1.0 + 2f64.powi(-7))
    }

    /// The bound on the log-sum-exp of the row whose reference is `r`, key tiles of `bn`.
    pub fn bound_lse(&self, r: &RowRef, bn: usize) -> f64 {
        let sk = self.shape.seq_k as f64;
        2.0 * r.e
            + (sk / bn as f64 + sk) * 2f64.powi(-21)
            + r.lse.abs() * 2f64.powi(-22)
            + 2f64.powi(-20)
    }

    /// Checks `o` (`B H Sq x D`) and `lse` (`B H Sq`) against the reference at `rows`: the first
    /// element outside its bound, or the largest error as a fraction of its bound.
    pub fn check(&self, o: &[f32], lse: &[f32], rows: &[usize], bn: usize) -> Result<f64, String> {
        let d = self.shape.d;
        let mut worst = 0f64;
        for &row in rows {
            let r = self.reference(row);
            for c in 0..d {
                let (got, want) = (f64::from(o[row * d + c]), r.o[c]);
                let (err, bound) = ((got - want).abs(), self.bound_o(&r, c));
                if err.is_nan() || err > bound {
                    return Err(format!(
                        "O({row}, {c}) = {got}, the reference {want}: error {err:.3e} over the \
                         bound {bound:.3e} ({:?})",
                        self.shape
                    ));
                }
                worst = worst.max(err / bound);
            }
            let (got, want) = (f64::from(lse[row]), r.lse);
            let (err, bound) = ((got - want).abs(), self.bound_lse(&r, bn));
            if err.is_nan() || err > bound {
                return Err(format!(
                    "lse({row}) = {got}, the reference {want}: error {err:.3e} over the bound \
                     {bound:.3e} ({:?})",
                    self.shape
                ));
            }
            worst = worst.max(err / bound);
        }
        Ok(worst)
    }
}

/// `attention` (`BUG`: its broken copy) with `D = 2 OV`, key tiles of `2 SV` rows, the mask
/// `CAUSAL`, on the simulated GPU under schedule `seed`: O (`B H Sq x D`) and the log-sum-exp.
/// Panics where an input is written or an output element not written exactly once, or where the
/// shape is not the kernel's.
pub fn simulate<I, const OV: usize, const SV: usize, const CAUSAL: bool, const BUG: u8>(
    x: &Inputs<I>,
    seed: u64,
) -> Result<(Vec<f32>, Vec<f32>), SimError>
where
    I: MmaIn + Default,
{
    let sh = x.shape;
    assert!(sh.d == 2 * OV && sh.causal == CAUSAL, "the kernel's shape");
    let d = sh.d as i64;
    let (mut q, mut k, mut v) = (x.q.clone(), x.k.clone(), x.v.clone());
    let mut reads = [
        vec![0u32; q.len()],
        vec![0u32; k.len()],
        vec![0u32; v.len()],
    ];
    let mut o = vec![I::from_f32(f32::NAN); sh.rows() * sh.d];
    let mut lse = vec![f32::NAN; sh.rows()];
    let (mut wo, mut wl) = (vec![0u32; o.len()], vec![0u32; lse.len()]);
    let [rq, rk, rv] = &mut reads;
    // SAFETY: every buffer outlives the launch and is reached only through these engines
    let (eq, ek, ev, eo, el) = unsafe {
        (
            HostMem::new(&mut q, rq),
            HostMem::new(&mut k, rk),
            HostMem::new(&mut v, rv),
            HostMem::new(&mut o, &mut wo).once(),
            HostMem::new(&mut lse, &mut wl).once(),
        )
    };
    let map = |e, rows: usize, boxed| {
        SimTensorMap::new(e, [rows as i64, d], d, boxed, SwizzleMode::B128).expect("a tensor map")
    };
    let bn = 2 * SV as i64;
    let (rows, kv_rows) = (sh.rows() as i64, sh.kv_rows() as i64);
    let p = AttentionParams {
        q: map(eq, sh.rows(), [query_rows(d), PANEL]),
        k: map(ek, sh.kv_rows(), [bn, PANEL]),
        v: map(ev, sh.kv_rows(), [bn, PANEL]),
        o: FlatTensor::new(eo, FlatLayout::new([rows, d], [d, 1]).expect("O's layout")),
        lse: FlatTensor::new(el, FlatLayout::new([rows], [1]).expect("lse's layout")),
        heads: [sh.batch, sh.heads, sh.kv_heads].map(|v| v as i64),
        seq: [sh.seq_q as i64, sh.seq_k as i64],
        scale: x.scale,
    };
    let _ = kv_rows;
    type K<I, const OV: usize, const SV: usize, const C: bool, const B: u8> =
        Attention<I, OV, SV, C, B>;
    let p = K::<I, OV, SV, CAUSAL, BUG>::prepare::<Sim>(p).expect("the shape is the kernel's");
    let g = K::<I, OV, SV, CAUSAL, BUG>::geometry::<Sim>(&p, 1, 0);
    sim::launch::<K<I, OV, SV, CAUSAL, BUG>>(&p, g, Options { seed })?;
    assert!(reads.iter().flatten().all(|&r| r == 0), "an input written");
    sim::written_once(&mut wo);
    sim::written_once(&mut wl);
    assert!(
        wo.iter().chain(&wl).all(|&w| w == 1),
        "an element of O or of the log-sum-exp not written once"
    );
    Ok((o.iter().map(|v| v.to_f32()).collect(), lse))
}

/// `attention` on a GPU: the inputs uploaded, tensor maps of Q, K, V, O and the log-sum-exp
/// poisoned with NaN, the parameters of one launch.
pub struct OnGpu<I: crate::elem::Elem> {
    // the tensors the parameters point into (kept alive with them)
    _inputs: [crate::runtime::gpu::DeviceTensor<I>; 3],
    _maps: [crate::runtime::tma::TensorMap; 3],
    o: crate::runtime::gpu::DeviceTensor<I>,
    lse: crate::runtime::gpu::DeviceTensor<f32>,
    /// The launch's parameters.
    pub params: AttentionParams<
        tessel_gpu::tma::GmemTensorMap<I>,
        tessel_gpu::mem::Gmem<I>,
        tessel_gpu::mem::Gmem<f32>,
    >,
}

impl<I: MmaIn + Default + crate::runtime::tma::TmaElem> OnGpu<I> {
    /// `x` on `g`, key tiles of `bn` rows.
    pub fn new(
        g: &crate::runtime::gpu::Gpu,
        x: &Inputs<I>,
        bn: i64,
    ) -> crate::runtime::gpu::Result<Self> {
        use crate::runtime::gpu::GpuError;
        use crate::runtime::tma::{encode_2d, TmaSwizzle};
        let sh = x.shape;
        let d = sh.d as i64;
        let lay = |rows: usize, cols: i64| {
            layout_core::Layout::parse(&format!("({rows},{cols}):({cols},1)"))
                .map_err(|e| GpuError::Invalid(e.to_string()))
        };
        let q = g.upload(&x.q, lay(sh.rows(), d)?)?;
        let k = g.upload(&x.k, lay(sh.kv_rows(), d)?)?;
        let v = g.upload(&x.v, lay(sh.kv_rows(), d)?)?;
        let o = g.filled(lay(sh.rows(), d)?, I::from_f32(f32::NAN))?;
        let lse = g.filled(lay(sh.rows(), 1)?, f32::NAN)?;
        let maps = [
            encode_2d(g, &q, [query_rows(d), PANEL], TmaSwizzle::B128)?,
            encode_2d(g, &k, [bn, PANEL], TmaSwizzle::B128)?,
            encode_2d(g, &v, [bn, PANEL], TmaSwizzle::B128)?,
        ];
        let map = |i: usize| tessel_gpu::tma::GmemTensorMap::new(maps[i].ptr());
        let lse_t = lse.param::<2>("lse")?;
        let rows = sh.rows() as i64;
        let params = AttentionParams {
            q: map(0),
            k: map(1),
            v: map(2),
            o: o.param("o")?,
            lse: FlatTensor::new(
                lse_t.engine(),
                FlatLayout::new([rows], [1]).map_err(|e| GpuError::Invalid(e.to_string()))?,
            ),
            heads: [sh.batch, sh.heads, sh.kv_heads].map(|v| v as i64),
            seq: [sh.seq_q as i64, sh.seq_k as i64],
            scale: x.scale,
        };
        Ok(OnGpu {
            _inputs: [q, k, v],
            _maps: maps,
            o,
            lse,
            params,
        })
    }

    /// O (as `f32`) and the log-sum-exp, copied back.
    pub fn outputs(
        &self,
        g: &crate::runtime::gpu::Gpu,
    ) -> crate::runtime::gpu::Result<(Vec<f32>, Vec<f32>)> {
        let o = g.download(&self.o)?;
        Ok((
            o.iter().map(|v| v.to_f32()).collect(),
            g.download(&self.lse)?,
        ))
    }
}
