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
//! `2^-8` for bf16, `2^-11` for f16, whose subnormals below `2^-14` round to within `2^-25`
//! absolute: `B_id = 2^-25 sum_j |v_jd| / l_i` more, 0 for bf16) for `P V`, whose tensor-core sum adds `18 (Sk / 16 + 1)
//! 2^-23` relative to `sum_j p~ |v|`; the row sum adds `Sk 2^-24` relative in `f32`; the output
//! is rounded to the input type (`u |O|`). With `A_id = sum_j p_ij |v_jd| / l_i`:
//!
//! ```text
//! |O~ - O| <= (A + |O|) (u + 2 E + 20 (Sk / 16 + 1) 2^-23) + u |O| (1 + 2^-7) + 1.01 B
//! |lse~ - lse| <= 2 E + (Sk / BN + Sk) 2^-21 + 2^-22 |lse| + 2^-20
//! ```
//!
//! (the log-sum-exp: `l`'s relative error, the rescaling factors' one per key tile, `lg2.approx`'s
//! absolute error, the final rounding).

use crate::elem::Rng;
use crate::sim::{self, HostMem, Options, Sim, SimError, SimTensorMap};
use layout_core::{Engine, FlatLayout, FlatTensor, SwizzleMode};
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
    /// `[B, H, Hkv, Sq, Sk, D]` (the order `tessel run attention` takes them in) under the mask
    /// `causal`.
    pub const fn of([batch, heads, kv_heads, seq_q, seq_k, d]: [usize; 6], causal: bool) -> Self {
        Shape {
            batch,
            heads,
            kv_heads,
            seq_q,
            seq_k,
            d,
            causal,
        }
    }
    /// Query rows in all: `B H Sq`.
    pub fn rows(&self) -> usize {
        self.batch * self.heads * self.seq_q
    }
    /// Key rows in all: `B Hkv Sk`.
    pub fn kv_rows(&self) -> usize {
        self.batch * self.kv_heads * self.seq_k
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

/// How Q, K, V and O lie in memory (the log-sum-exp: `(B, H, Sq)` row-major, packed `(H,
/// total)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packing {
    /// `(B, H, S, D)` row-major: torch's layout.
    HeadsFirst,
    /// `(B, S, H, D)` row-major: FlashAttention's (the same tensors, the strides of H and S
    /// swapped).
    SeqFirst,
    /// Variable lengths: sequence `b` has `lens[b] = [query rows, key rows]`, packed one after
    /// another as `(total, H, D)` (FlashAttention's `varlen`); the shape's `seq_q`, `seq_k` the
    /// longest.
    Varlen(Vec<[usize; 2]>),
}

/// The inputs of one check: Q (`(B, H, Sq, D)`), K and V (`(B, Hkv, Sk, D)`) laid out as
/// `packing` says, and the scale.
#[derive(Clone, Debug)]
pub struct Inputs<I> {
    /// The sizes.
    pub shape: Shape,
    /// Where the rows lie.
    pub packing: Packing,
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
    /// `sum_j |v_jd| / l_i` per column (`P`'s subnormals in f16).
    pub v: Vec<f64>,
    /// The log-sum-exp (`+inf` for a row that sees no key, FlashAttention's convention).
    pub lse: f64,
    /// `E_i` (see the module).
    pub e: f64,
}

/// One sequence of a batch: its query and key lengths, where its rows start along S, and its
/// batch coordinate (0 when packed).
#[derive(Clone, Copy, Debug)]
struct Seq {
    len: [usize; 2],
    start: [usize; 2],
    batch: usize,
}

impl<I: MmaIn + Default> Inputs<I> {
    /// Q, K, V uniform in `(-2, 2)`, rounded to `I`, `(B, H, S, D)` row-major.
    pub fn new(rng: &mut Rng, shape: Shape) -> Self {
        Self::packed(rng, shape, Packing::HeadsFirst)
    }

    /// As [`Inputs::new`], laid out as `packing` says (`Varlen`: `shape.batch` its lengths,
    /// `seq_q` and `seq_k` their largest).
    pub fn packed(rng: &mut Rng, shape: Shape, packing: Packing) -> Self {
        let mut draw = |n: usize| -> Vec<I> {
            (0..n)
                .map(|_| I::from_f32((4.0 * rng.uniform() - 2.0) as f32))
                .collect()
        };
        let mut x = Inputs {
            shape,
            packing,
            q: vec![],
            k: vec![],
            v: vec![],
            scale: 1.0 / (shape.d as f32).sqrt(),
        };
        let ([tq, tk], d) = (x.totals(), shape.d);
        x.q = draw(tq * shape.heads * d);
        x.k = draw(tk * shape.kv_heads * d);
        x.v = draw(tk * shape.kv_heads * d);
        x
    }

    /// The rows along S of the tensors (query and key): `B Sq` and `B Sk`, packed their sums.
    fn totals(&self) -> [usize; 2] {
        match &self.packing {
            Packing::Varlen(lens) => [0, 1].map(|i| lens.iter().map(|l| l[i]).sum()),
            _ => [self.shape.seq_q, self.shape.seq_k].map(|s| s * self.shape.batch),
        }
    }

    /// The tensors' shapes and strides, `(B, H, S, D)` (packed `(1, H, total, D)`): Q's and O's
    /// (`heads` H), or K's and V's (`heads` Hkv, `kv`).
    pub fn layout(&self, kv: bool) -> ([i64; 4], [i64; 4]) {
        let (d, i) = (self.shape.d as i64, kv as usize);
        let h = [self.shape.heads, self.shape.kv_heads][i] as i64;
        let s = [self.shape.seq_q, self.shape.seq_k][i] as i64;
        let b = self.shape.batch as i64;
        match &self.packing {
            Packing::HeadsFirst => ([b, h, s, d], [h * s * d, s * d, d, 1]),
            Packing::SeqFirst => ([b, h, s, d], [s * h * d, d, h * d, 1]),
            Packing::Varlen(_) => {
                let t = self.totals()[i] as i64;
                ([1, h, t, d], [t * h * d, d, h * d, 1])
            }
        }
    }

    /// The log-sum-exp's shape, `(B, H, Sq)` (packed `(1, H, total)`), row-major.
    pub fn lse_shape(&self) -> [i64; 3] {
        let [b, h, s, _] = self.layout(false).0;
        [b, h, s]
    }

    /// The sequences.
    fn seqs(&self) -> Vec<Seq> {
        let sh = &self.shape;
        match &self.packing {
            Packing::Varlen(lens) => {
                let mut start = [0, 0];
                lens.iter()
                    .map(|&len| {
                        let s = Seq {
                            len,
                            start,
                            batch: 0,
                        };
                        start = [start[0] + len[0], start[1] + len[1]];
                        s
                    })
                    .collect()
            }
            _ => (0..sh.batch)
                .map(|b| Seq {
                    len: [sh.seq_q, sh.seq_k],
                    start: [0, 0],
                    batch: b,
                })
                .collect(),
        }
    }

    /// The cumulative offsets along S of the queries and of the keys (`B + 1` each), packed;
    /// `None` otherwise.
    pub fn cu_seqlens(&self) -> Option<[Vec<i32>; 2]> {
        let Packing::Varlen(_) = &self.packing else {
            return None;
        };
        let (seqs, totals) = (self.seqs(), self.totals());
        Some([0, 1].map(|i| {
            let starts = seqs.iter().map(|s| s.start[i]);
            starts.chain([totals[i]]).map(|o| o as i32).collect()
        }))
    }

    /// Query rows in all (`B H Sq`, packed `H total`): the rows [`Inputs::check`] numbers,
    /// sequence by sequence, head by head.
    pub fn rows(&self) -> usize {
        self.totals()[0] * self.shape.heads
    }

    /// Row `r`'s sequence, head and position in the sequence.
    fn row(&self, mut r: usize) -> (Seq, usize, usize) {
        let h = self.shape.heads;
        for s in self.seqs() {
            if r < h * s.len[0] {
                return (s, r / s.len[0], r % s.len[0]);
            }
            r -= h * s.len[0];
        }
        panic!("row {r} past the problem's rows")
    }

    /// The element offset of `(batch, head, row, 0)` of Q and O (`kv` false) or K and V.
    fn offset(&self, kv: bool, batch: usize, head: usize, row: usize) -> usize {
        let st = self.layout(kv).1;
        (batch as i64 * st[0] + head as i64 * st[1] + row as i64 * st[2]) as usize
    }

    /// Where row `r` lies: O's element offset of its column 0 and the log-sum-exp's offset.
    pub fn out_at(&self, r: usize) -> (usize, usize) {
        let (s, h, i) = self.row(r);
        let row = s.start[0] + i;
        let [_, lh, ls] = self.lse_shape();
        let lse = (s.batch as i64 * lh * ls + h as i64 * ls + row as i64) as usize;
        (self.offset(false, s.batch, h, row), lse)
    }

    /// Query row `row`'s reference.
    pub fn reference(&self, row: usize) -> RowRef {
        let d = self.shape.d;
        let x = |v: &I| f64::from(v.to_f32());
        let (sq, h, i) = self.row(row);
        let hk = h / (self.shape.heads / self.shape.kv_heads);
        let seen = if self.shape.causal {
            sq.len[1].min(i + 1)
        } else {
            sq.len[1]
        };
        let qo = self.offset(false, sq.batch, h, sq.start[0] + i);
        let q = &self.q[qo..qo + d];
        let key = |j: usize| self.offset(true, sq.batch, hk, sq.start[1] + j);
        let scale = f64::from(self.scale);
        let (mut s, mut delta) = (Vec::with_capacity(seen), 0f64);
        for j in 0..seen {
            let kj = key(j);
            let kr = &self.k[kj..kj + d];
            let terms = q.iter().zip(kr).map(|(a, b)| x(a) * x(b));
            let (sum, abs) = terms.fold((0.0, 0.0), |(s, a), t| (s + t, a + t.abs()));
            s.push(sum);
            delta = delta.max(18.0 * (d as f64 / 16.0 + 1.0) * abs * 2f64.powi(-23));
        }
        let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let smax = s.iter().map(|v| v.abs()).fold(0.0, f64::max);
        let p: Vec<f64> = s.iter().map(|v| (scale * (v - m)).exp()).collect();
        let l: f64 = p.iter().sum();
        let (mut o, mut a, mut va) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
        for (j, pj) in p.iter().enumerate() {
            let kj = key(j);
            let vr = &self.v[kj..kj + d];
            for c in 0..d {
                let vv = x(&vr[c]);
                o[c] += pj * vv / l;
                a[c] += pj * vv.abs() / l;
                va[c] += vv.abs() / l;
            }
        }
        RowRef {
            o,
            a,
            v: va,
            lse: if seen == 0 {
                f64::INFINITY
            } else {
                scale * m + l.ln()
            },
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
        // f16's subnormal P: an absolute 2^-25 per probability
        let sub = if I::BF16 { 0.0 } else { 2f64.powi(-25) };
        (r.a[col] + r.o[col].abs()) * rel
            + u * r.o[col].abs() * (1.0 + 2f64.powi(-7))
            + 1.01 * sub * r.v[col]
    }

    /// The bound on the log-sum-exp of the row whose reference is `r`, key tiles of `bn`.
    pub fn bound_lse(&self, r: &RowRef, bn: usize) -> f64 {
        let sk = self.shape.seq_k as f64;
        2.0 * r.e
            + (sk / bn as f64 + sk) * 2f64.powi(-21)
            + r.lse.abs() * 2f64.powi(-22)
            + 2f64.powi(-20)
    }

    /// Checks `o` and `lse` (laid out as [`Inputs::layout`] and [`Inputs::lse_shape`] say)
    /// against the reference at `rows` (numbered as [`Inputs::rows`] says): the first element
    /// outside its bound, or the largest error as a fraction of its bound. A row that sees no
    /// key must hold O of 0 and the log-sum-exp `+inf` exactly.
    pub fn check(&self, o: &[f32], lse: &[f32], rows: &[usize], bn: usize) -> Result<f64, String> {
        let d = self.shape.d;
        let mut worst = 0f64;
        for &row in rows {
            let r = self.reference(row);
            let (at, lat) = self.out_at(row);
            let empty = r.lse == f64::INFINITY;
            for c in 0..d {
                let (got, want) = (f64::from(o[at + c]), r.o[c]);
                let (err, bound) = ((got - want).abs(), self.bound_o(&r, c));
                if err.is_nan() || err > bound || (empty && got != 0.0) {
                    return Err(format!(
                        "O(row {row}, {c}) = {got}, the reference {want}: error {err:.3e} over the \
                         bound {bound:.3e} ({:?})",
                        self.shape
                    ));
                }
                if !empty {
                    worst = worst.max(err / bound);
                }
            }
            let (got, want) = (f64::from(lse[lat]), r.lse);
            let (err, bound) = ((got - want).abs(), self.bound_lse(&r, bn));
            if empty && got != want {
                return Err(format!(
                    "lse(row {row}) = {got}: a row that sees no key has +inf ({:?})",
                    self.shape
                ));
            }
            if !empty && (err.is_nan() || err > bound) {
                return Err(format!(
                    "lse(row {row}) = {got}, the reference {want}: error {err:.3e} over the bound \
                     {bound:.3e} ({:?})",
                    self.shape
                ));
            }
            if !empty {
                worst = worst.max(err / bound);
            }
        }
        Ok(worst)
    }
}

/// `attention` (`BUG`: its broken copy) with `D = 2 OV`, key tiles of `2 SV` rows, the mask
/// `CAUSAL`, on a simulated GPU of two multiprocessors under schedule `seed`: O and the
/// log-sum-exp (laid out as [`Inputs::layout`] says); an error, too, where the launch left the
/// scheduler's counters other than 0. Panics where an input is written or an output element not written exactly once, or where the
/// shape is not the kernel's.
pub fn simulate<I, const OV: usize, const SV: usize, const CAUSAL: bool, const BUG: u8>(
    x: &Inputs<I>,
    seed: u64,
) -> Result<(Vec<f32>, Vec<f32>), SimError>
where
    I: MmaIn + Default,
{
    simulate_on::<I, OV, SV, CAUSAL, BUG>(x, seed, 2)
}

/// As [`simulate`], on a simulated GPU of `sms` multiprocessors.
pub fn simulate_on<I, const OV: usize, const SV: usize, const CAUSAL: bool, const BUG: u8>(
    x: &Inputs<I>,
    seed: u64,
    sms: i64,
) -> Result<(Vec<f32>, Vec<f32>), SimError>
where
    I: MmaIn + Default,
{
    simulate_at::<I, OV, SV, CAUSAL, BUG>(x, seed, sms, 0)
}

/// As [`simulate_on`], O's tensor starting `o_offset` elements into its buffer (an odd offset
/// leaves no row of O 16-byte aligned: the stores' element-by-element path).
pub fn simulate_at<I, const OV: usize, const SV: usize, const CAUSAL: bool, const BUG: u8>(
    x: &Inputs<I>,
    seed: u64,
    sms: i64,
    o_offset: usize,
) -> Result<(Vec<f32>, Vec<f32>), SimError>
where
    I: MmaIn + Default,
{
    let sh = x.shape;
    assert!(sh.d == 2 * OV && sh.causal == CAUSAL, "the kernel's shape");
    let d = sh.d as i64;
    let (mut q, mut k, mut v) = (x.q.clone(), x.k.clone(), x.v.clone());
    let cu = x.cu_seqlens();
    let [mut cq, mut ck] = cu.clone().unwrap_or([vec![0], vec![0]]);
    let offsets = [cq.len(), ck.len()];
    let mut reads = [
        vec![0u32; q.len()],
        vec![0u32; k.len()],
        vec![0u32; v.len()],
        vec![0u32; cq.len()],
        vec![0u32; ck.len()],
    ];
    // the scheduler's counters (the last block's resets counted as writes, its atomics not)
    let (mut sched, mut ws) = (vec![0i32; 2], vec![0u32; 2]);
    let mut o = vec![I::from_f32(f32::NAN); o_offset + q.len()];
    let mut lse = vec![f32::NAN; x.rows()];
    let (mut wo, mut wl) = (vec![0u32; o.len()], vec![0u32; lse.len()]);
    let [rq, rk, rv, rcq, rck] = &mut reads;
    // SAFETY: every buffer outlives the launch and is reached only through these engines
    let (eq, ek, ev, eo, el, ecq, eck, es) = unsafe {
        (
            HostMem::new(&mut q, rq),
            HostMem::new(&mut k, rk),
            HostMem::new(&mut v, rv),
            HostMem::new(&mut o, &mut wo).once(),
            HostMem::new(&mut lse, &mut wl).once(),
            HostMem::new(&mut cq, rcq),
            HostMem::new(&mut ck, rck),
            HostMem::new(&mut sched, &mut ws),
        )
    };
    let bn = 2 * SV as i64;
    let map = |e, kv: bool, rows: i64| {
        let (shape, stride) = x.layout(kv);
        SimTensorMap::new_nd(e, shape, stride, [1, 1, rows, PANEL], SwizzleMode::B128)
            .expect("a tensor map")
    };
    let (qs, qd) = x.layout(false);
    let cu_t = |e, n: usize| FlatTensor::new(e, FlatLayout::new([n as i64], [1]).expect("offsets"));
    let p = AttentionParams {
        q: map(eq, false, query_rows(d)),
        k: map(ek, true, bn),
        v: map(ev, true, bn),
        o: FlatTensor::new(
            eo.advance(o_offset as i64),
            FlatLayout::new(qs, qd).expect("O's layout"),
        ),
        lse: FlatTensor::new(
            el,
            FlatLayout::row_major(x.lse_shape()).expect("lse's layout"),
        ),
        cu_seqlens: [cu_t(ecq, offsets[0]), cu_t(eck, offsets[1])],
        sched: cu_t(es, 2),
        packed: cu.is_some(),
        heads: [sh.batch, sh.heads, sh.kv_heads].map(|v| v as i64),
        seq: [sh.seq_q as i64, sh.seq_k as i64],
        scale: x.scale,
    };
    type K<I, const OV: usize, const SV: usize, const C: bool, const B: u8> =
        Attention<I, OV, SV, C, B>;
    let p = K::<I, OV, SV, CAUSAL, BUG>::prepare::<Sim>(p).expect("the shape is the kernel's");
    let g = K::<I, OV, SV, CAUSAL, BUG>::geometry::<Sim>(&p, sms, 0);
    sim::launch::<K<I, OV, SV, CAUSAL, BUG>>(&p, g, Options { seed })?;
    if sched != [0, 0] {
        return Err(SimError {
            block: [g.grid[0] - 1, 0],
            seed,
            message: format!(
                "the launch left the scheduler's counters at {sched:?}, not 0: the next launch \
                 would start past its units"
            ),
        });
    }
    assert!(reads.iter().flatten().all(|&r| r == 0), "an input written");
    sim::written_once(&mut wo);
    sim::written_once(&mut wl);
    assert!(
        wo[o_offset..].iter().chain(&wl).all(|&w| w == 1) && wo[..o_offset].iter().all(|&w| w == 0),
        "an element of O or of the log-sum-exp not written once, or one before O written"
    );
    Ok((o[o_offset..].iter().map(|v| v.to_f32()).collect(), lse))
}

/// `attention` on a GPU: the inputs uploaded, tensor maps of Q, K, V, O and the log-sum-exp
/// poisoned with NaN, the parameters of one launch.
pub struct OnGpu<I: crate::elem::Elem> {
    // the tensors the parameters point into (kept alive with them)
    _inputs: [crate::runtime::gpu::DeviceTensor<I>; 3],
    _maps: [crate::runtime::tma::TensorMap<4>; 3],
    _cu: [crate::runtime::gpu::DeviceTensor<i32>; 2],
    sched: crate::runtime::gpu::DeviceTensor<i32>,
    o: crate::runtime::gpu::DeviceTensor<I>,
    lse: crate::runtime::gpu::DeviceTensor<f32>,
    /// The launch's parameters.
    pub params: AttentionParams<
        tessel_gpu::tma::GmemTensorMap<I>,
        tessel_gpu::mem::Gmem<I>,
        tessel_gpu::mem::Gmem<f32>,
        tessel_gpu::mem::Gmem<i32>,
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
        use crate::runtime::tma::{encode, TmaSwizzle};
        let sh = x.shape;
        let d = sh.d as i64;
        let invalid = |e: layout_core::LayoutError| GpuError::Invalid(e.to_string());
        let lay = |(shape, stride): ([i64; 4], [i64; 4])| {
            FlatLayout::new(shape, stride)
                .and_then(|l| l.to_layout())
                .map_err(invalid)
        };
        let q = g.upload(&x.q, lay(x.layout(false))?)?;
        let k = g.upload(&x.k, lay(x.layout(true))?)?;
        let v = g.upload(&x.v, lay(x.layout(true))?)?;
        let o = g.filled(lay(x.layout(false))?, I::from_f32(f32::NAN))?;
        let lse_l = FlatLayout::row_major(x.lse_shape()).map_err(invalid)?;
        let lse = g.filled(lse_l.to_layout().map_err(invalid)?, f32::NAN)?;
        let boxed = |rows| [1, 1, rows, PANEL];
        let maps = [
            encode(g, &q, boxed(query_rows(d)), TmaSwizzle::B128)?,
            encode(g, &k, boxed(bn), TmaSwizzle::B128)?,
            encode(g, &v, boxed(bn), TmaSwizzle::B128)?,
        ];
        let map = |i: usize| tessel_gpu::tma::GmemTensorMap::new(maps[i].ptr());
        let cu = x.cu_seqlens();
        let [cq, ck] = cu.clone().unwrap_or([vec![0], vec![0]]);
        let one = |c: &[i32]| {
            let n = c.len() as i64;
            g.upload(
                c,
                layout_core::Layout::parse(&format!("{n}:1")).map_err(invalid)?,
            )
        };
        let cus = [one(&cq)?, one(&ck)?];
        let sched = one(&[0, 0])?;
        let params = AttentionParams {
            q: map(0),
            k: map(1),
            v: map(2),
            o: o.param("o")?,
            lse: lse.param("lse")?,
            cu_seqlens: [cus[0].param("cu_seqlens_q")?, cus[1].param("cu_seqlens_k")?],
            sched: sched.param("sched")?,
            packed: cu.is_some(),
            heads: [sh.batch, sh.heads, sh.kv_heads].map(|v| v as i64),
            seq: [sh.seq_q as i64, sh.seq_k as i64],
            scale: x.scale,
        };
        Ok(OnGpu {
            _inputs: [q, k, v],
            _maps: maps,
            _cu: cus,
            sched,
            o,
            lse,
            params,
        })
    }

    /// O and the log-sum-exp poisoned with NaN again (before a launch whose outputs are to be
    /// its own).
    pub fn poison(&mut self, g: &crate::runtime::gpu::Gpu) -> crate::runtime::gpu::Result<()> {
        let (no, nl) = (self.o.len(), self.lse.len());
        g.write_buffer(&mut self.o, &vec![I::from_f32(f32::NAN); no])?;
        g.write_buffer(&mut self.lse, &vec![f32::NAN; nl])
    }

    /// O (as `f32`) and the log-sum-exp, copied back; an error where the launches left the
    /// scheduler's counters other than 0 (the next launch would skip units).
    pub fn outputs(
        &self,
        g: &crate::runtime::gpu::Gpu,
    ) -> crate::runtime::gpu::Result<(Vec<f32>, Vec<f32>)> {
        let sched = g.download(&self.sched)?;
        if sched != [0, 0] {
            return Err(crate::runtime::gpu::GpuError::Invalid(format!(
                "attention left its scheduler's counters at {sched:?}, not 0"
            )));
        }
        let o = g.download(&self.o)?;
        Ok((
            o.iter().map(|v| v.to_f32()).collect(),
            g.download(&self.lse)?,
        ))
    }
}
