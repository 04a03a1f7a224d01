//! What `tessel run attention` does: `attention` (tessel_gpu::attention, the FlashAttention
//! forward) on fresh random Q, K, V (uniform in `(-2, 2)`), O and the log-sum-exp poisoned with
//! NaN, compared with
//! - the `f64` reference within the bound [`crate::checks::attention`] derives: every row up to
//!   [`FULL_REFERENCE`] multiply-adds, else 64 rows drawn at random and the first and last;
//! - the kernel's own function on the simulated GPU up to [`HOST_EXECUTION`] multiply-adds: every
//!   output written exactly once, no race,
//!   every row within the bound; and the GPU's results against it, the count of bit-equal
//!   elements reported (the tensor cores' order of addition within an instruction is not
//!   specified, so a difference within the bound is not a failure).

use tessel_gpu::attention::Attention;
use tessel_gpu::ctx::Entry;
use tessel_gpu::mem::{Device, Gmem};
use tessel_gpu::tma::GmemTensorMap;

use crate::checks::attention::{simulate, Inputs, OnGpu, Packing, Shape};
use crate::elem::Rng;
use crate::jobs::Verdict;
use crate::runtime::gpu::{Gpu, GpuError, Result};
use crate::runtime::tma::TmaElem;

pub use tessel_gpu::mma::MmaIn;

/// The most multiply-adds (`B H Sq Sk D`) checked at every row against the `f64` reference, and
/// the most run on the simulated GPU: the GEMM's limits.
pub use crate::jobs::gemm::{FULL_REFERENCE, HOST_EXECUTION};

/// The head dimensions `attention` has kernels for.
pub const HEAD_DIMS: [usize; 5] = [64, 96, 128, 192, 256];

/// Key rows per tile of the kernel [`AttentionIn::by_shape`] runs at shape `s`
/// (tessel_gpu::attention::key_rows).
pub const fn key_tile(s: &Shape) -> usize {
    tessel_gpu::attention::key_rows(s.d as i64, s.causal, s.seq_k as i64) as usize
}

/// The entry [`AttentionIn::by_shape`] runs at shape `s` for inputs `I`.
pub fn entry_name<I: AttentionIn>(s: &Shape) -> &'static str {
    I::by_shape(s, EntryName)
}

/// The attention problem's multiply-adds, `B H Sq Sk D` (the mask not counted).
pub fn work(s: &Shape) -> usize {
    s.rows() * s.seq_k * s.d
}

/// Why `tessel run attention` cannot take `s`, or nothing.
pub fn refuse(s: &Shape) -> Option<String> {
    if s.batch == 0 || s.heads == 0 || s.kv_heads == 0 || s.seq_q == 0 || s.seq_k == 0 {
        return Some("attention needs B, H, HKV, SQ and SK of at least 1".into());
    }
    if !s.heads.is_multiple_of(s.kv_heads) {
        return Some(format!(
            "attention needs H a multiple of HKV (the key/value heads), got H = {}, HKV = {}",
            s.heads, s.kv_heads
        ));
    }
    if !HEAD_DIMS.contains(&s.d) {
        return Some(format!(
            "attention has head dimensions 64, 96, 128, 192 and 256, got D = {}",
            s.d
        ));
    }
    None
}

/// The launch parameters of `attention` on the GPU for inputs `I`.
type GpuParams<I> =
    tessel_gpu::attention::AttentionParams<GmemTensorMap<I>, Gmem<I>, Gmem<f32>, Gmem<i32>>;

/// The rows compared with the reference: every row up to [`FULL_REFERENCE`] multiply-adds, else 64
/// drawn from `rng` and the first and last (the GEMM's rule, the rows of `Sk D` each).
fn rows_to_check<I: MmaIn + Default>(x: &Inputs<I>, rng: &mut Rng) -> Vec<usize> {
    let s = &x.shape;
    crate::jobs::gemm::rows_to_check([x.rows(), s.seq_k, s.d], rng)
}

/// How `tessel run attention` lays out Q, K, V and O.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Arrangement {
    /// `(B, H, S, D)` row-major (torch's).
    #[default]
    HeadsFirst,
    /// `(B, S, H, D)` row-major (FlashAttention's).
    SeqFirst,
    /// Variable lengths packed as `(total, H, D)`, each sequence's drawn at random.
    Varlen,
}

impl Arrangement {
    /// The name `tessel run attention --layout` takes.
    pub fn name(self) -> &'static str {
        match self {
            Arrangement::HeadsFirst => "bhsd",
            Arrangement::SeqFirst => "bshd",
            Arrangement::Varlen => "varlen",
        }
    }

    /// The packing of problem `s`: `Varlen` draws each sequence's lengths from `rng`, query rows
    /// 1 to `Sq` and key rows 1 to `Sk`, the first sequence at `Sq` and `Sk`, and, in a batch of
    /// three or more, the last with no key rows (its rows' O is 0, their log-sum-exp `+inf`).
    pub fn packing(self, s: &Shape, rng: &mut Rng) -> Packing {
        match self {
            Arrangement::HeadsFirst => Packing::HeadsFirst,
            Arrangement::SeqFirst => Packing::SeqFirst,
            Arrangement::Varlen => {
                let mut draw = |n: usize| 1 + (rng.next_u64() % n as u64) as usize;
                let mut lens: Vec<[usize; 2]> = (0..s.batch)
                    .map(|b| match b {
                        0 => [s.seq_q, s.seq_k],
                        _ => [draw(s.seq_q), draw(s.seq_k)],
                    })
                    .collect();
                if s.batch >= 3 {
                    lens[s.batch - 1][1] = 0;
                }
                Packing::Varlen(lens)
            }
        }
    }
}

/// `attention` at shape `s` with inputs `I`, checked as the module says.
pub fn run_attention<I: AttentionIn>(
    gpu: Option<&Gpu>,
    s: Shape,
    arrangement: Arrangement,
    rng: &mut Rng,
) -> Result<Verdict> {
    if let Some(why) = refuse(&s) {
        return Err(GpuError::Invalid(why));
    }
    let packing = arrangement.packing(&s, rng);
    let layout = match &packing {
        Packing::HeadsFirst => String::new(),
        Packing::SeqFirst => " bshd".into(),
        Packing::Varlen(lens) => {
            let l: Vec<String> = lens.iter().map(|[q, k]| format!("{q}x{k}")).collect();
            format!(" varlen [{}]", l.join(" "))
        }
    };
    let what = format!(
        "attention {} B{} H{} HKV{} {}x{} D{}{}{layout}",
        I::NAME,
        s.batch,
        s.heads,
        s.kv_heads,
        s.seq_q,
        s.seq_k,
        s.d,
        if s.causal { " causal" } else { "" }
    );
    let x = Inputs::<I>::packed(rng, s, packing);
    let (mut lines, mut ok) = (vec![], true);
    let mut say = |pass: bool, line: String| {
        ok &= pass;
        lines.push(format!(
            "{what}: {} {line}",
            if pass { "OK" } else { "FAIL" }
        ));
    };
    // the kernel's own function on the simulated GPU
    let mut simulated = None;
    if work(&s) <= HOST_EXECUTION {
        let seed = super::gemm::sim_seed(rng);
        let who = format!("simulated (seed {seed})");
        let all: Vec<usize> = (0..x.rows()).collect();
        match I::by_shape(&s, Sim { x: &x, seed }) {
            Ok((o, lse)) => {
                match x.check(&o, &lse, &all, key_tile(&s)) {
                    Ok(w) => say(true, format!("{who}: O and the log-sum-exp written once, no race; every row within {w:.2} of its bound")),
                    Err(e) => say(false, format!("{who}: {e}")),
                }
                simulated = Some((o, lse));
            }
            Err(e) => say(false, format!("{who}: {e}")),
        }
    }
    let Some(g) = gpu else {
        return Ok(Verdict::without_gpu(&what, lines, ok));
    };
    let (o, lse) = I::by_shape(&s, OnDevice { g, x: &x })?;
    let rows = rows_to_check(&x, rng);
    let which = if rows.len() == x.rows() {
        "every row".to_string()
    } else {
        format!("{} sampled rows", rows.len())
    };
    match x.check(&o, &lse, &rows, key_tile(&s)) {
        Ok(w) => say(
            true,
            format!("GPU vs the f64 reference ({which}): within {w:.2} of the bound"),
        ),
        Err(e) => say(false, format!("GPU vs the f64 reference: {e}")),
    }
    if let Some((so, sl)) = &simulated {
        let same = |a: &[f32], b: &[f32]| {
            a.iter()
                .zip(b)
                .filter(|(x, y)| x.to_bits() == y.to_bits())
                .count()
        };
        lines.push(format!(
            "{what}: GPU vs the simulated GPU: {} of {} elements of O and {} of {} of the \
             log-sum-exp bit-equal",
            same(&o, so),
            o.len(),
            same(&lse, sl),
            lse.len()
        ));
    }
    Ok(Verdict {
        ok,
        skipped: false,
        line: lines.join("\n"),
    })
}

/// A timing of `attention`: the median of `reps` launches queued back to back (after 3
/// warm-ups), in ms and in TFLOP/s as FlashAttention counts them ([`Shape::flops`]), and the
/// largest error of the rows checked (poisoned outputs, the f64 reference) as a fraction of the
/// bound.
#[derive(Clone, Debug)]
pub struct AttentionTiming {
    /// `attention bf16 d128 full S16384` (the case's name in the results file).
    pub what: String,
    /// The median launch.
    pub ms: f64,
    /// The fastest and the slowest launch.
    pub spread: (f64, f64),
    /// `flops / ms`.
    pub tflops: f64,
    /// The rows checked and the largest error as a fraction of its bound.
    pub checked: (usize, f64),
}

/// The name of `s`'s case for inputs `I`, as `tessel bench` and `scripts/sdpa.py --rows` write it:
/// `attention bf16 d128 causal S16384` for the bench's own shapes (batch x sequence = 16k, 16
/// heads, query and key lengths equal), else with the shape in full (`attention bf16 d128 full
/// B12 H22 HKV22 1024x2048`).
///
/// Post-condition: distinct shapes and types have distinct names.
pub fn case_name<I: MmaIn>(s: &Shape) -> String {
    let standard =
        s.batch * s.seq_q == 16384 && s.heads == 16 && s.kv_heads == 16 && s.seq_q == s.seq_k;
    let shape = match standard {
        true => format!("S{}", s.seq_q),
        false => format!(
            "B{} H{} HKV{} {}x{}",
            s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_k
        ),
    };
    format!(
        "attention {} d{} {} {shape}",
        if I::BF16 { "bf16" } else { "f16" },
        s.d,
        if s.causal { "causal" } else { "full" },
    )
}

/// `attention` at `s` on `g`: checked (fresh inputs, poisoned outputs) at every row up to
/// [`FULL_REFERENCE`] multiply-adds, else at 66 sampled rows; then timed over `reps` launches.
pub fn bench_attention<I: AttentionIn>(
    g: &Gpu,
    s: Shape,
    reps: usize,
    rng: &mut Rng,
) -> Result<AttentionTiming> {
    if let Some(why) = refuse(&s) {
        return Err(GpuError::Invalid(why));
    }
    let x = Inputs::<I>::new(rng, s);
    let rows = rows_to_check(&x, rng);
    let (ms, worst) = I::by_shape(
        &s,
        Timed {
            g,
            x: &x,
            reps,
            rows: &rows,
        },
    )?;
    let med = ms[ms.len() / 2];
    Ok(AttentionTiming {
        what: case_name::<I>(&s),
        ms: med,
        spread: (ms[0], ms[ms.len() - 1]),
        tflops: s.flops() / (med * 1e-3) / 1e12,
        checked: (rows.len(), worst),
    })
}

/// Checked at `rows`, then timed over `reps` launches on `g`: the sorted times and the largest
/// error as a fraction of its bound.
struct Timed<'a, I> {
    g: &'a Gpu,
    x: &'a Inputs<I>,
    reps: usize,
    rows: &'a [usize],
}

impl<I: MmaIn + Default + TmaElem> Runner<I> for Timed<'_, I> {
    type Out = Result<(Vec<f64>, f64)>;
    fn run<K, const OV: usize, const SV: usize, const CAUSAL: bool>(self) -> Self::Out
    where
        K: Entry<Params<Device> = GpuParams<I>>,
    {
        let (mut run, (o, lse)) = launched::<I, K>(self.g, self.x, 2 * SV)?;
        let worst = self
            .x
            .check(&o, &lse, self.rows, 2 * SV)
            .map_err(GpuError::Invalid)?;
        let (ms, _) = self
            .g
            .time(3, self.reps, || self.g.launch::<K>(run.params))?;
        // after the timed launches, one more on poisoned outputs: the checked launch's bits
        // (every unit computed, the scheduler's counters back at 0)
        run.poison(self.g)?;
        self.g.launch::<K>(run.params)?;
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (o2, lse2) = run.outputs(self.g)?;
        if bits(&o2) != bits(&o) || bits(&lse2) != bits(&lse) {
            return Err(GpuError::Invalid(
                "attention after its timed launches gave other bits than the checked launch".into(),
            ));
        }
        Ok((ms, worst))
    }
}

/// What to do with the kernel of a shape ([`AttentionIn::by_shape`]): run it, giving O and the
/// log-sum-exp.
pub trait Runner<I: MmaIn + Default + TmaElem> {
    /// What the run gives.
    type Out;
    /// Runs entry `K`, `attention` with `D = 2 OV`, key tiles of `2 SV` rows and the mask
    /// `CAUSAL`.
    fn run<K, const OV: usize, const SV: usize, const CAUSAL: bool>(self) -> Self::Out
    where
        K: Entry<Params<Device> = GpuParams<I>>;
}

/// The entry's name.
struct EntryName;

impl<I: MmaIn + Default + TmaElem> Runner<I> for EntryName {
    type Out = &'static str;
    fn run<K, const OV: usize, const SV: usize, const CAUSAL: bool>(self) -> Self::Out
    where
        K: Entry<Params<Device> = GpuParams<I>>,
    {
        K::NAME
    }
}

/// On the simulated GPU, under schedule `seed`.
struct Sim<'a, I> {
    x: &'a Inputs<I>,
    seed: u64,
}

impl<I: MmaIn + Default + TmaElem> Runner<I> for Sim<'_, I> {
    type Out = std::result::Result<Outputs, String>;
    fn run<K, const OV: usize, const SV: usize, const CAUSAL: bool>(self) -> Self::Out
    where
        K: Entry<Params<Device> = GpuParams<I>>,
    {
        simulate::<I, OV, SV, CAUSAL, 0>(self.x, self.seed).map_err(|e| e.to_string())
    }
}

/// On the GPU `g`: O and the log-sum-exp poisoned, one launch, copied back.
struct OnDevice<'a, I> {
    g: &'a Gpu,
    x: &'a Inputs<I>,
}

impl<I: MmaIn + Default + TmaElem> Runner<I> for OnDevice<'_, I> {
    type Out = Result<Outputs>;
    fn run<K, const OV: usize, const SV: usize, const CAUSAL: bool>(self) -> Self::Out
    where
        K: Entry<Params<Device> = GpuParams<I>>,
    {
        launched::<I, K>(self.g, self.x, 2 * SV).map(|(_, out)| out)
    }
}

/// O and the log-sum-exp, as `f32`.
type Outputs = (Vec<f32>, Vec<f32>);

/// `x` on `g` (O and the log-sum-exp poisoned), entry `K` (key tiles of `bn` rows) launched once:
/// the uploaded problem and its outputs copied back.
fn launched<I, K>(g: &Gpu, x: &Inputs<I>, bn: usize) -> Result<(OnGpu<I>, Outputs)>
where
    I: MmaIn + Default + TmaElem,
    K: Entry<Params<Device> = GpuParams<I>>,
{
    if !g.has_kernel(K::NAME) {
        return Err(GpuError::Invalid(format!(
            "no {} in the loaded PTX (attention needs sm_90a PTX: TESSEL_ARCH=sm_90,sm_90a)",
            K::NAME
        )));
    }
    let run = OnGpu::new(g, x, bn as i64)?;
    g.launch::<K>(run.params)?;
    let out = run.outputs(g)?;
    Ok((run, out))
}

/// An input type of `attention`: its kernels by head dimension and mask.
pub trait AttentionIn: MmaIn + Default + TmaElem {
    /// `r` on the kernel of `s`'s head dimension and mask.
    fn by_shape<R: Runner<Self>>(s: &Shape, r: R) -> R::Out;
}

macro_rules! attention_in {
    ($($t:ty),*) => {$(
        impl AttentionIn for $t {
            fn by_shape<R: Runner<Self>>(s: &Shape, r: R) -> R::Out {
                // key tiles of 128 rows up to D = 128, of 64 past it (the shared memory), of
                // 176 at D = 128 without the mask for long sequences (`key_tile`)
                match (s.d, s.causal) {
                    (128, false) if key_tile(s) == 176 => {
                        r.run::<Attention<$t, 64, 88, false>, 64, 88, false>()
                    }
                    (64, false) => r.run::<Attention<$t, 32, 64, false>, 32, 64, false>(),
                    (64, true) => r.run::<Attention<$t, 32, 64, true>, 32, 64, true>(),
                    (96, false) => r.run::<Attention<$t, 48, 64, false>, 48, 64, false>(),
                    (96, true) => r.run::<Attention<$t, 48, 64, true>, 48, 64, true>(),
                    (128, false) => r.run::<Attention<$t, 64, 64, false>, 64, 64, false>(),
                    (128, true) => r.run::<Attention<$t, 64, 64, true>, 64, 64, true>(),
                    (192, false) => r.run::<Attention<$t, 96, 32, false>, 96, 32, false>(),
                    (192, true) => r.run::<Attention<$t, 96, 32, true>, 96, 32, true>(),
                    (_, false) => r.run::<Attention<$t, 128, 32, false>, 128, 32, false>(),
                    (_, true) => r.run::<Attention<$t, 128, 32, true>, 128, 32, true>(),
                }
            }
        }
    )*};
}
attention_in!(half::bf16, half::f16);

#[cfg(test)]
mod tests {
    use super::*;

    /// The key tile of the kernel `by_shape` picks.
    struct KeyTile;

    impl<I: MmaIn + Default + TmaElem> Runner<I> for KeyTile {
        type Out = (usize, usize);
        fn run<K, const OV: usize, const SV: usize, const CAUSAL: bool>(self) -> Self::Out
        where
            K: Entry<Params<Device> = GpuParams<I>>,
        {
            (2 * OV, 2 * SV)
        }
    }

    #[test]
    fn each_head_dimension_has_its_kernel_and_key_tile() {
        let shape = |d, causal, seq_k| Shape {
            batch: 1,
            heads: 2,
            kv_heads: 1,
            seq_q: 3,
            seq_k,
            d,
            causal,
        };
        for d in HEAD_DIMS {
            for causal in [false, true] {
                for sk in [5, 4095, 4096, 20000] {
                    let s = shape(d, causal, sk);
                    assert_eq!(refuse(&s), None, "D = {d}");
                    let bf = <half::bf16 as AttentionIn>::by_shape(&s, KeyTile);
                    let f = <half::f16 as AttentionIn>::by_shape(&s, KeyTile);
                    let want = (d, key_tile(&s));
                    assert_eq!((bf, f), (want, want), "{s:?}");
                    let long = d == 128 && !causal && sk >= 4096;
                    assert_eq!(
                        key_tile(&s),
                        if long {
                            176
                        } else if d <= 128 {
                            128
                        } else {
                            64
                        }
                    );
                    let name = entry_name::<half::f16>(&s);
                    let tail = if causal {
                        "_causal"
                    } else if long {
                        "_long"
                    } else {
                        ""
                    };
                    assert_eq!(name, format!("attention_f16_d{d}{tail}"));
                }
            }
        }
        assert!(refuse(&shape(80, false, 5)).is_some_and(|w| w.contains("D = 80")));
    }
}
