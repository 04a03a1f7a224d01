//! tessel's attention forward on the GPU, at the sizes FlashAttention reports (batch x sequence
//! = 16k, 16 heads, sequence 1k to 16k, head dimension 64 and 128, causal and not, bf16): each
//! configuration checked first on sampled rows against the f64 reference (O and the log-sum-exp
//! poisoned with NaN before the launch, within host::checks::attention's bound), then timed (CUDA
//! events, the median of 10 launches queued back to back after 3 warm-ups) in TFLOP/s counting
//! `4 B H Sq Sk D`, halved by the causal mask. `scripts/sdpa.py` times torch's SDPA backends on
//! the same shapes.
//!
//! `cargo run --release --example attention [SEED]` on a machine with an sm_90 GPU.

use half::bf16;
use host::checks::attention::{Inputs, OnGpu, Shape};
use host::elem::Rng;
use host::runtime::gpu::{Gpu, GpuError, Result};
use host::runtime::module::Module;
use std::process::ExitCode;
use tessel_gpu::attention::{Attention, AttentionParams};
use tessel_gpu::ctx::Entry;
use tessel_gpu::mem::{Device, Gmem};
use tessel_gpu::tma::GmemTensorMap;

type Params = AttentionParams<GmemTensorMap<bf16>, Gmem<bf16>, Gmem<f32>, Gmem<i32>>;

/// One configuration on kernel `K`: checked on 32 sampled rows, then timed.
fn case<K: Entry<Params<Device> = Params>>(
    g: &Gpu,
    module: &Module,
    x: &Inputs<bf16>,
    rng: &mut Rng,
) -> Result<String> {
    let run = OnGpu::new(g, x, 128)?;
    module.launch::<K>(run.params)?;
    let (o, lse) = run.outputs(g)?;
    let rows: Vec<usize> = (0..32)
        .map(|_| (rng.next_u64() % x.shape.rows() as u64) as usize)
        .collect();
    let worst = x.check(&o, &lse, &rows, 128).map_err(GpuError::Invalid)?;
    let (ms, _) = g.time(3, 10, || module.launch::<K>(run.params))?;
    let med = ms[ms.len() / 2];
    let s = x.shape;
    Ok(format!(
        "attention bf16 d{} {:<6} B {:>2} S {:>5} H {}: {med:8.3} ms {:7.1} TFLOP/s  [{:.3} .. \
         {:.3} ms]  32 rows within {:.2} of the bound",
        s.d,
        if s.causal { "causal" } else { "full" },
        s.batch,
        s.seq_q,
        s.heads,
        s.flops() / (med * 1e-3) / 1e12,
        ms[0],
        ms[ms.len() - 1],
        worst
    ))
}

fn main() -> ExitCode {
    let g = match Gpu::open(0, tessel::ptx::PTX) {
        Ok(g) => g,
        Err(e @ (GpuError::NoDriver | GpuError::NoDevice(_))) => {
            eprintln!("attention: no GPU ({e})");
            return ExitCode::from(3);
        }
        Err(e) => {
            eprintln!("attention: {e}");
            return ExitCode::FAILURE;
        }
    };
    if !g.has_kernel("gemm_sm90_bf16_f32") {
        eprintln!("attention: no sm_90a PTX for {} ({})", g.name(), g.arch());
        return ExitCode::from(3);
    }
    let module = match g.load(tessel::ptx::PTX) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("attention: {e}");
            return ExitCode::FAILURE;
        }
    };
    let seed = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(Rng::fresh_seed);
    println!("device: {} ({}); seed {seed}", g.name(), g.arch());
    let mut rng = Rng::new(seed);
    let mut failed = false;
    for d in [64, 128] {
        // one draw of 16k x 16 rows per head dimension, seen as each batch x sequence
        let base = Shape {
            batch: 1,
            heads: 16,
            kv_heads: 16,
            seq_q: 16384,
            seq_k: 16384,
            d,
            causal: false,
        };
        let mut x = Inputs::<bf16>::new(&mut rng, base);
        for seq in [1024, 2048, 4096, 8192, 16384] {
            for causal in [false, true] {
                x.shape = Shape {
                    batch: 16384 / seq,
                    seq_q: seq,
                    seq_k: seq,
                    causal,
                    ..base
                };
                type A<const OV: usize, const C: bool> = Attention<bf16, OV, 64, C>;
                let r = match (d, causal) {
                    (64, false) => case::<A<32, false>>(&g, &module, &x, &mut rng),
                    (64, true) => case::<A<32, true>>(&g, &module, &x, &mut rng),
                    (_, false) => case::<A<64, false>>(&g, &module, &x, &mut rng),
                    (_, true) => case::<A<64, true>>(&g, &module, &x, &mut rng),
                };
                match r {
                    Ok(line) => println!("{line}"),
                    Err(e) => {
                        failed = true;
                        println!("attention d{d} S {seq} causal {causal}: FAILED: {e}");
                    }
                }
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
