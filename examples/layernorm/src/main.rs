//! `cargo run --release`: checks the LayerNorm kernels on the GPU (bit for bit against the
//! simulated GPU, and against the f64 definition, at ragged sizes) and benches them against a
//! device-to-device copy; with torch present, torch's `F.layer_norm` and `torch.compile` of it in
//! the same run. `--help` for the options.

use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use layernorm::*;
use layernorm_kernels::LayerNorm;
use tessel::prelude::*;

#[derive(Parser)]
#[command(about = "Row LayerNorm on the GPU, written in Rust with tessel")]
struct Args {
    /// What to do.
    #[arg(value_enum, default_value_t = Job::All)]
    job: Job,
    /// Rows of the benchmark.
    #[arg(long, default_value_t = 16384)]
    rows: usize,
    /// Columns of the benchmark.
    #[arg(long, default_value_t = 4096)]
    cols: usize,
    /// Timed launches of each kernel.
    #[arg(long, default_value_t = 50)]
    reps: usize,
    /// The random inputs' seed (fresh by default; each run prints it).
    #[arg(long)]
    seed: Option<u64>,
    /// The device.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Bench: warps per row (1, 2 or 4; all by default).
    #[arg(long, value_parser = warps)]
    warps: Option<i64>,
}

/// `--warps`: one of the widths the kernel crate builds.
fn warps(s: &str) -> Result<i64, String> {
    match s.parse() {
        Ok(w @ (1 | 2 | 4)) => Ok(w),
        _ => Err(format!("{s}: the kernels are built for 1, 2 or 4 warps per row")),
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Job {
    /// Check, then bench.
    All,
    /// Check on the GPU (host executions only without one).
    Check,
    /// Bench on the GPU.
    Bench,
}

/// The checked shapes: ragged rows, padded rows, rows longer than one tile and than shared memory.
const SHAPES: &[(usize, usize, usize)] = &[
    (1, 8, 8),
    (3, 24, 24),
    (5, 104, 112),
    (33, 1000, 1000),
    (130, 4096, 4096),
    (67, 4088, 4096),
    (9, 12288, 12288),
    (3, 40000, 40008),
];

fn check_one<T: Dtype, K: Norm<T>>(gpu: Option<(&Gpu, &Module)>, rng: &mut Rng) -> usize {
    let mut failed = 0;
    for &(rows, cols, ld) in SHAPES {
        let s = Shape { rows, cols, ld };
        let r = match gpu {
            Some((g, m)) => check_gpu::<T, K>(g, m, s, rng),
            None => check_host::<T, K>(s, K::staged_for(cols as i64, 48 * 1024), rng),
        };
        match r {
            Ok(line) => println!("  ok   {line}"),
            Err(e) => {
                failed += 1;
                println!("  FAIL {e}");
            }
        }
    }
    failed
}

fn check<T: Dtype>(gpu: Option<(&Gpu, &Module)>, rng: &mut Rng) -> usize
where
    LayerNorm<T, 1>: Norm<T>,
    LayerNorm<T, 2>: Norm<T>,
    LayerNorm<T, 4>: Norm<T>,
{
    check_one::<T, LayerNorm<T, 1>>(gpu, rng)
        + check_one::<T, LayerNorm<T, 2>>(gpu, rng)
        + check_one::<T, LayerNorm<T, 4>>(gpu, rng)
}

fn bench_one<T: Dtype, K: Norm<T>>(
    g: &Gpu,
    m: &Module,
    a: &Args,
    rng: &mut Rng,
) -> Result<(), GpuError> {
    let s = Shape::new(a.rows, a.cols);
    let t = bench::<T, K>(g, m, s, a.reps, rng)?;
    println!(
        "  {:<18} {}x{} (staged {:3}): {:8.1} us {:7.0} GB/s | copy {:8.1} us {:7.0} GB/s | {:5.1}% of copy",
        K::NAME,
        s.rows,
        s.cols,
        t.staged,
        t.ms * 1e3,
        t.bytes / t.ms / 1e6,
        t.copy_ms * 1e3,
        t.bytes / t.copy_ms / 1e6,
        100.0 * t.copy_ms / t.ms
    );
    Ok(())
}

fn bench_all<T: Dtype>(g: &Gpu, m: &Module, a: &Args, rng: &mut Rng) -> Result<(), GpuError>
where
    LayerNorm<T, 1>: Norm<T>,
    LayerNorm<T, 2>: Norm<T>,
    LayerNorm<T, 4>: Norm<T>,
{
    let want = |w: i64| a.warps.is_none_or(|x| x == w);
    if want(1) {
        bench_one::<T, LayerNorm<T, 1>>(g, m, a, rng)?;
    }
    if want(2) {
        bench_one::<T, LayerNorm<T, 2>>(g, m, a, rng)?;
    }
    if want(4) {
        bench_one::<T, LayerNorm<T, 4>>(g, m, a, rng)?;
    }
    Ok(())
}

/// torch's `F.layer_norm` (eager and compiled) and copy of the same matrix, timed by
/// `scripts/torch_layernorm.py`: its output lines, or why there are none.
fn torch(a: &Args) -> String {
    let args = [("--rows", a.rows), ("--cols", a.cols), ("--reps", a.reps), ("--device", a.device)];
    let args: Vec<String> = args.iter().flat_map(|(k, v)| [k.to_string(), v.to_string()]).collect();
    tessel::peer::torch_lines(
        env!("CARGO_MANIFEST_DIR"),
        "layernorm",
        "scripts/torch_layernorm.py",
        &args,
    )
}

fn main() -> ExitCode {
    let a = Args::parse();
    let seed = a.seed.unwrap_or_else(Rng::fresh_seed);
    println!("seed {seed} (replay with --seed {seed})");
    let mut rng = Rng::new(seed);
    let gpu = match Gpu::device(a.device) {
        Ok(g) => Some(g),
        Err(e) => {
            println!("{e}: host executions only");
            None
        }
    };
    let module = match &gpu {
        Some(g) => match g.load(PTX) {
            Ok(m) => Some(m),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => None,
    };
    let both = gpu.as_ref().zip(module.as_ref());
    if let Some((g, m)) = both {
        println!("{} ({}, PTX for {})", g.name(), g.arch(), m.arch());
    }
    let mut failed = 0;
    if a.job != Job::Bench {
        println!("check (random inputs, poisoned outputs and padding):");
        failed += check::<f32>(both, &mut rng);
        failed += check::<bf16>(both, &mut rng);
    }
    if a.job != Job::Check {
        match both {
            None => println!("bench: no GPU, nothing timed"),
            Some((g, m)) => {
                println!("bench (median of {} launches, interleaved with the copy):", a.reps);
                for r in
                    [bench_all::<bf16>(g, m, &a, &mut rng), bench_all::<f32>(g, m, &a, &mut rng)]
                {
                    if let Err(e) = r {
                        eprintln!("error: {e}");
                        return ExitCode::FAILURE;
                    }
                }
                println!("{}", torch(&a));
            }
        }
    }
    if failed > 0 {
        println!("{failed} checks FAILED");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
