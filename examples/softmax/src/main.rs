//! `cargo run --release`: checks the softmax kernels on the GPU (against their host execution and
//! the f64 definition, at ragged sizes) and benches them against a device-to-device copy; with
//! torch present, torch's softmax in the same run. `--help` for the options.

use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use softmax::*;
use tessel::prelude::*;

#[derive(Parser)]
#[command(about = "Row softmax on the GPU, written in Rust with tessel")]
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
    /// Bench: bytes of shared memory per block for staging rows (default: all a block may have).
    #[arg(long)]
    smem: Option<i64>,
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

/// The checked shapes: ragged rows and columns, padded rows, rows longer than one tile.
const SHAPES: &[(usize, usize, usize)] = &[
    (1, 1, 1),
    (3, 7, 7),
    (5, 100, 104),
    (33, 1000, 1000),
    (130, 4096, 4096),
    (67, 4095, 4100),
    (9, 12288, 12288),
    (4, 40000, 40003),
];

fn check<T: Dtype>(gpu: Option<(&Gpu, &Module)>, rng: &mut Rng) -> usize {
    let mut failed = 0;
    for &(rows, cols, ld) in SHAPES {
        let s = Shape { rows, cols, ld };
        let r = match gpu {
            Some((g, m)) => check_gpu::<T>(g, m, s, rng),
            None => {
                let staged = Softmax::<T>::staged_for(cols as i64, 48 * 1024);
                check_host::<T>(s, staged, rng)
            }
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

use softmax_kernels::Softmax;

fn bench_one<T: Dtype>(g: &Gpu, m: &Module, a: &Args, rng: &mut Rng) -> Result<(), GpuError> {
    let s = Shape::new(a.rows, a.cols);
    let t = bench::<T>(g, m, s, a.reps, a.smem, rng)?;
    println!(
        "  {:<14} {}x{} (staged {:3}): {:8.1} us {:7.0} GB/s | copy {:8.1} us {:7.0} GB/s | {:5.1}% of copy",
        <T::K as Entry>::NAME,
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

/// torch's softmax and copy of the same matrix, timed by `scripts/torch_softmax.py`: its output
/// line, or why there is none.
fn torch(a: &Args) -> String {
    let args = [("--rows", a.rows), ("--cols", a.cols), ("--reps", a.reps), ("--device", a.device)];
    let args: Vec<String> = args.iter().flat_map(|(k, v)| [k.to_string(), v.to_string()]).collect();
    tessel::peer::torch_lines(
        env!("CARGO_MANIFEST_DIR"),
        "softmax",
        "scripts/torch_softmax.py",
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
        println!("check (random inputs in [-8, 8), poisoned outputs and padding):");
        failed += check::<f32>(both, &mut rng);
        failed += check::<bf16>(both, &mut rng);
        failed += check::<f16>(both, &mut rng);
    }
    if a.job != Job::Check {
        match both {
            None => println!("bench: no GPU, nothing timed"),
            Some((g, m)) => {
                println!("bench (median of {} launches, interleaved with the copy):", a.reps);
                for r in
                    [bench_one::<bf16>(g, m, &a, &mut rng), bench_one::<f32>(g, m, &a, &mut rng)]
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
