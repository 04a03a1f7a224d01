//! The kernels' GPU time under criterion: each iteration is one launch timed with CUDA events
//! (`iter_custom`), beside `cuMemcpyDtoD` of the same bytes. Criterion reports throughput as
//! bytes read + written (RMSNorm's groups: x read and y written, at N = 4096, 12288 and
//! 32768); the GEMM's group (`gemm_4096_bf16`) as elements, i.e. multiply-adds
//! (criterion's "Gelem/s" is then half the GFLOP/s), beside cuBLAS on the same inputs; the
//! attention forward's (`attention_bf16_s4096`: batch 4, 16 heads, S = 4096, D = 64 and 128, both
//! masks) as multiply-adds too, `2 B H S^2 D` (halved by the causal mask: criterion's "Gelem/s"
//! is half the GFLOP/s as FlashAttention counts them); torch's SDPA beside it is `tessel bench
//! attention --peers`'s. Without a GPU this bench says so and measures nothing.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use host::elem::{Elem, Rng};
use host::runtime::gpu::Gpu;
use layout_core::Layout;
use tessel_gpu::transpose::{Padded, Swizzled};

/// The sum of `iters` event-timed runs of `f`.
fn events(g: &Gpu, iters: u64, f: impl FnMut() -> host::runtime::gpu::Result<()>) -> Duration {
    let (ms, _) = g.time(1, iters as usize, f).expect("timed GPU work");
    Duration::from_secs_f64(ms.iter().sum::<f64>() / 1e3)
}

fn gpu(c: &mut Criterion) {
    let g = match Gpu::open(0, tessel::ptx::PTX) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("benches/gpu: SKIPPED, {e}");
            return;
        }
    };
    let seed = Rng::fresh_seed();
    eprintln!("benches/gpu: inputs from seed {seed}");
    let mut rng = Rng::new(seed);
    let (n, side) = (1usize << 26, 8192usize);
    let l = |s: String| Layout::parse(&s).unwrap();
    let src = g.upload(&rng.fill::<f32>(n), l(format!("{n}:1"))).unwrap();
    let mut dst = g.filled(l(format!("{n}:1")), f32::poison()).unwrap();
    let tin = l(format!("({side},{side}):({side},1)"));
    let tsrc = g.upload(&rng.fill::<f32>(side * side), tin).unwrap();
    let mut tdst = g.filled(tin, f32::poison()).unwrap();

    let mut group = c.benchmark_group("gpu_256MiB_f32");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Bytes(2 * 4 * n as u64));
    group.bench_function("memcpy_dtod", |b| {
        b.iter_custom(|iters| events(&g, iters, || g.memcpy(&src, &mut dst)))
    });
    group.bench_function("copy", |b| {
        b.iter_custom(|iters| events(&g, iters, || g.copy(&src, &mut dst)))
    });
    group.bench_function("transpose_pad_8192", |b| {
        b.iter_custom(|iters| {
            events(&g, iters, || {
                g.transpose::<f32, Padded<f32>>(&tsrc, &mut tdst)
            })
        })
    });
    group.bench_function("transpose_swizzle_8192", |b| {
        b.iter_custom(|iters| {
            events(&g, iters, || {
                g.transpose::<f32, Swizzled<f32>>(&tsrc, &mut tdst)
            })
        })
    });
    // axpby reads x and y and writes y: 3 x 256 MiB
    let mut ty = g.upload(&rng.fill::<f32>(side * side), tin).unwrap();
    group.throughput(Throughput::Bytes(3 * 4 * (side * side) as u64));
    group.bench_function("axpby_8192", |b| {
        b.iter_custom(|iters| events(&g, iters, || g.axpby(&tsrc, &mut ty, 1.0001, -0.5)))
    });
    group.finish();

    // RMSNorm bf16 over rows of N: x read, y written (the weight, N elements, is not counted),
    // beside the memcpy of those bytes; 2^26 elements at each N
    for cols in [4096usize, 12288, 32768] {
        let rows = (1usize << 26) / cols;
        let lx = l(format!("({rows},{cols}):({cols},1)"));
        let x = g.upload(&rng.fill::<half::bf16>(rows * cols), lx).unwrap();
        let w = g
            .upload(&rng.fill::<half::bf16>(cols), l(format!("{cols}:1")))
            .unwrap();
        let mut y = g.filled(lx, half::bf16::poison()).unwrap();
        let mut group = c.benchmark_group(format!("rmsnorm_bf16_{rows}x{cols}"));
        group
            .sample_size(30)
            .measurement_time(Duration::from_secs(2));
        group.throughput(Throughput::Bytes(2 * 2 * (rows * cols) as u64));
        group.bench_function("memcpy_dtod", |b| {
            b.iter_custom(|iters| events(&g, iters, || g.memcpy(&x, &mut y)))
        });
        group.bench_function("rmsnorm", |b| {
            b.iter_custom(|iters| events(&g, iters, || g.rmsnorm(&x, &w, &mut y, 1e-6)))
        });
        group.finish();
    }

    // C = A B^T at 4096^3, bf16 in and out: 2 M N K flops, counted as M N K "elements"
    let side = 4096usize;
    let lg = l(format!("({side},{side}):({side},1)"));
    let ga = g.upload(&rng.fill::<half::bf16>(side * side), lg).unwrap();
    let gb = g.upload(&rng.fill::<half::bf16>(side * side), lg).unwrap();
    let mut gc = g.filled(lg, half::bf16::poison()).unwrap();
    let mut group = c.benchmark_group("gemm_4096_bf16");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Elements((side * side * side) as u64));
    group.bench_function("gemm_sm80", |b| {
        b.iter_custom(|iters| events(&g, iters, || g.gemm(&ga, &gb, &mut gc, 1.0, 0.0)))
    });
    use host::runtime::gpu::MappedGemm;
    if g.has_mapped_gemm::<half::bf16, half::bf16>(MappedGemm::Sm90) {
        let maps = host::runtime::tma::GemmMaps::new(&g, &ga, &gb, &gc).unwrap();
        group.bench_function("gemm_sm90", |b| {
            b.iter_custom(|iters| {
                events(&g, iters, || {
                    g.gemm_mapped(MappedGemm::Sm90, &maps, &ga, &gb, &mut gc, 1.0, 0.0)
                })
            })
        });
    } else {
        eprintln!("benches/gpu: gemm_sm90 SKIPPED, the loaded PTX has no sm_90a kernels");
    }
    match host::blas::Blas::new(&g) {
        Ok(blas) => {
            group.bench_function("cublas", |b| {
                b.iter_custom(|iters| {
                    events(&g, iters, || blas.gemm_tn(&ga, &gb, &mut gc, 1.0, 0.0))
                })
            });
        }
        Err(e) => eprintln!("benches/gpu: cuBLAS SKIPPED, {e}"),
    }
    group.finish();
    attention(c, &g, &mut rng);
}

/// The attention forward, bf16, at batch 4, 16 heads, S = 4096: D = 64 and 128, both masks, each on
/// the kernel `tessel run` picks for its shape (`AttentionIn::by_shape`).
fn attention(c: &mut Criterion, g: &Gpu, rng: &mut Rng) {
    use half::bf16;
    use host::checks::attention::{Inputs, Shape};
    use host::jobs::attention::AttentionIn;
    if !g.has_kernel("attention_bf16_d128") {
        eprintln!("benches/gpu: attention SKIPPED, the loaded PTX has no sm_90a kernels");
        return;
    }
    let mut group = c.benchmark_group("attention_bf16_s4096");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(2));
    for d in [64usize, 128] {
        for causal in [false, true] {
            let s = Shape {
                batch: 4,
                heads: 16,
                kv_heads: 16,
                seq_q: 4096,
                seq_k: 4096,
                d,
                causal,
            };
            let x = Inputs::<bf16>::new(rng, s);
            group.throughput(Throughput::Elements((s.flops() / 2.0) as u64));
            let name = format!("d{d}_{}", if causal { "causal" } else { "full" });
            bf16::by_shape(
                &s,
                TimedAttention {
                    g,
                    x: &x,
                    group: &mut group,
                    name,
                },
            );
        }
    }
    group.finish();
}

/// Times an attention entry on `x` as criterion's function `name` of `group`.
struct TimedAttention<'a, 'g> {
    g: &'a Gpu,
    x: &'a host::checks::attention::Inputs<half::bf16>,
    group: &'a mut criterion::BenchmarkGroup<'g, criterion::measurement::WallTime>,
    name: String,
}

impl host::jobs::attention::Runner<half::bf16> for TimedAttention<'_, '_> {
    type Out = ();
    fn run<K, const OV: usize, const SV: usize, const CAUSAL: bool>(self)
    where
        K: tessel_gpu::ctx::Entry<
            Params<tessel_gpu::mem::Device> = tessel_gpu::attention::AttentionParams<
                tessel_gpu::tma::GmemTensorMap<half::bf16>,
                tessel_gpu::mem::Gmem<half::bf16>,
                tessel_gpu::mem::Gmem<f32>,
                tessel_gpu::mem::Gmem<i32>,
            >,
        >,
    {
        let g = self.g;
        let run = host::checks::attention::OnGpu::new(g, self.x, 2 * SV as i64).unwrap();
        let p = run.params;
        self.group.bench_function(self.name, |b| {
            b.iter_custom(|iters| events(g, iters, || g.launch::<K>(p)))
        });
    }
}

criterion_group!(benches, gpu);
criterion_main!(benches);
