//! `tessel ptx`, `tessel run`, `tessel bench`.

use std::process::ExitCode;

use half::{bf16, f16};
use host::elem::{Elem, Rng};
use host::gpu::{Gpu, GpuError};
use host::jobs::{self, Timing, Verdict};
use tessel::ptx;
use tessel_gpu::transpose::{Padded, Swizzled};

const NO_GPU: u8 = 3;

/// Options after the command's positional arguments.
struct Opts {
    pos: Vec<String>,
    dtypes: Vec<&'static str>,
    smems: Vec<&'static str>,
    seed: u64,
    reps: usize,
    arch: Option<String>,
    device: usize,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        pos: vec![],
        dtypes: vec!["f32"],
        smems: vec!["default"],
        seed: Rng::fresh_seed(),
        reps: 50,
        arch: None,
        device: 0,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = |name: &str| it.next().cloned().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--dtype" => {
                o.dtypes = match val("--dtype")?.as_str() {
                    "f32" => vec!["f32"],
                    "f16" => vec!["f16"],
                    "bf16" => vec!["bf16"],
                    "all" => vec!["f32", "f16", "bf16"],
                    d => return Err(format!("--dtype: '{d}' is not f32, f16, bf16 or all")),
                }
            }
            "--smem" => {
                o.smems = match val("--smem")?.as_str() {
                    "pad" => vec!["pad"],
                    "swizzle" => vec!["swizzle"],
                    "all" => vec!["pad", "swizzle"],
                    d => return Err(format!("--smem: '{d}' is not pad, swizzle or all")),
                }
            }
            "--seed" => o.seed = val("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--reps" => {
                o.reps = val("--reps")?.parse().map_err(|e| format!("--reps: {e}"))?;
                if o.reps == 0 {
                    return Err("--reps must be at least 1".into());
                }
            }
            "--arch" => o.arch = Some(val("--arch")?),
            "--device" => {
                o.device = val("--device")?
                    .parse()
                    .map_err(|e| format!("--device: {e}"))?
            }
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            s => o.pos.push(s.to_string()),
        }
    }
    Ok(o)
}

fn sizes(pos: &[String], want: usize, default: &[usize]) -> Result<Vec<usize>, String> {
    if pos.is_empty() {
        return Ok(default.to_vec());
    }
    if pos.len() != want {
        return Err(format!("expected {want} sizes, got {}", pos.len()));
    }
    pos.iter()
        .map(|s| match s.replace('_', "").parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(format!("size '{s}' is not a positive integer")),
        })
        .collect()
}

fn usage_error(msg: &str) -> ExitCode {
    eprintln!("tessel: {msg} (see tessel help)");
    ExitCode::from(2)
}

/// `tessel ptx [--arch sm_XX]`.
pub fn ptx(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    let built = ptx::archs();
    let arch = o.arch.or_else(|| built.first().map(|a| a.to_string()));
    match arch.as_deref().and_then(ptx::for_arch) {
        Some(text) => {
            use std::io::Write;
            // a closed pipe (`tessel ptx | head`) is not an error
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        None => {
            eprintln!(
                "tessel ptx: no PTX for {} (built: {}); rebuild with TESSEL_ARCH={} cargo build",
                arch.as_deref().unwrap_or("any arch"),
                if built.is_empty() {
                    "none".into()
                } else {
                    built.join(", ")
                },
                arch.as_deref().unwrap_or("sm_90"),
            );
            ExitCode::from(2)
        }
    }
}

fn open_gpu(ordinal: usize) -> Result<Gpu, GpuError> {
    Gpu::open(ordinal, ptx::PTX)
}

/// Runs one check for a dtype and tile name given as strings.
fn check(
    gpu: Option<&Gpu>,
    kernel: &str,
    dtype: &str,
    smem: &str,
    s: &[usize],
    rng: &mut Rng,
) -> Result<Verdict, GpuError> {
    fn typed<T: Elem>(
        gpu: Option<&Gpu>,
        kernel: &str,
        smem: &str,
        s: &[usize],
        rng: &mut Rng,
    ) -> Result<Verdict, GpuError> {
        match (kernel, smem) {
            ("copy", _) => jobs::run_copy::<T>(gpu, s[0], rng),
            ("rmsnorm", _) => Err(GpuError::Invalid(format!(
                "rmsnorm has no {} kernel (f32, bf16)",
                T::NAME
            ))),
            ("transpose", "pad") => jobs::run_transpose::<T, Padded<T>>(gpu, s[0], s[1], rng),
            ("transpose", "swizzle") => jobs::run_transpose::<T, Swizzled<T>>(gpu, s[0], s[1], rng),
            ("transpose", _) => {
                jobs::run_transpose::<T, jobs::DefaultSmem<T>>(gpu, s[0], s[1], rng)
            }
            _ => Err(GpuError::Invalid(format!("unknown kernel {kernel}"))),
        }
    }
    match (kernel, dtype) {
        ("rmsnorm", "bf16") => return jobs::run_rmsnorm::<bf16>(gpu, s[0], s[1], rng),
        ("rmsnorm", "f32") => return jobs::run_rmsnorm::<f32>(gpu, s[0], s[1], rng),
        _ => {}
    }
    match dtype {
        "f16" => typed::<f16>(gpu, kernel, smem, s, rng),
        "bf16" => typed::<bf16>(gpu, kernel, smem, s, rng),
        _ => typed::<f32>(gpu, kernel, smem, s, rng),
    }
}

/// `tessel run KERNEL [SIZES] [--dtype] [--smem] [--seed]`.
pub fn run(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    let Some(kernel) = o.pos.first().cloned() else {
        return usage_error("run needs a kernel: copy, transpose or all");
    };
    // (kernel, dtype, smem, sizes)
    let mut plan: Vec<(&str, &str, &str, Vec<usize>)> = vec![];
    match kernel.as_str() {
        "copy" => match sizes(&o.pos[1..], 1, &[1_000_003]) {
            Ok(s) => o
                .dtypes
                .iter()
                .for_each(|d| plan.push(("copy", d, "", s.clone()))),
            Err(e) => return usage_error(&e),
        },
        "transpose" => match sizes(&o.pos[1..], 2, &[1031, 2053]) {
            Ok(s) => {
                for d in &o.dtypes {
                    o.smems
                        .iter()
                        .for_each(|m| plan.push(("transpose", d, m, s.clone())));
                }
            }
            Err(e) => return usage_error(&e),
        },
        "rmsnorm" => match sizes(&o.pos[1..], 2, &[14, 4096]) {
            Ok(s) => o
                .dtypes
                .iter()
                // `--dtype all`: the types there are RMSNorm kernels for
                .filter(|d| o.dtypes.len() == 1 || **d != "f16")
                .for_each(|d| plan.push(("rmsnorm", d, "", s.clone()))),
            Err(e) => return usage_error(&e),
        },
        "all" if o.pos.len() == 1 => {
            for d in ["f32", "bf16"] {
                for mn in [
                    [1, 8],
                    [14, 4096],
                    [14, 1000],
                    [37, 2056],
                    [16384, 4096],
                    [3, 12288],
                ] {
                    plan.push(("rmsnorm", d, "", mn.to_vec()));
                }
            }
            for d in ["f32", "f16", "bf16"] {
                for n in [1, 7, 4096, 1_000_003, (1 << 26) + 5] {
                    plan.push(("copy", d, "", vec![n]));
                }
                for m in ["pad", "swizzle"] {
                    for rc in [[1, 1], [63, 65], [1031, 2053], [4096, 4100]] {
                        plan.push(("transpose", d, m, rc.to_vec()));
                    }
                }
            }
        }
        k => {
            return usage_error(&format!(
                "unknown kernel '{k}' (copy, transpose, rmsnorm, all)"
            ))
        }
    }
    let gpu = open_gpu(o.device);
    match &gpu {
        Ok(g) => println!(
            "device: {} ({}, {} SMs); seed {}",
            g.name(),
            g.arch(),
            g.sms(),
            o.seed
        ),
        Err(e) => println!("{e}: running the host executions only; seed {}", o.seed),
    }
    let mut rng = Rng::new(o.seed);
    let mut failed = 0;
    for (k, d, m, s) in &plan {
        match check(gpu.as_ref().ok(), k, d, m, s, &mut rng) {
            Ok(v) => {
                println!("{}", v.line);
                failed += usize::from(!v.ok);
            }
            Err(e) => {
                println!("{k} {d} {s:?}: FAIL {e}");
                failed += 1;
            }
        }
    }
    if failed > 0 {
        println!("{failed} of {} checks FAILED", plan.len());
        return ExitCode::FAILURE;
    }
    match gpu {
        Ok(_) => {
            println!("all {} checks passed on the GPU", plan.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!(
                "all {} host executions passed; NOT run on a GPU ({e})",
                plan.len()
            );
            ExitCode::from(NO_GPU)
        }
    }
}

fn print_timing(t: &Timing) {
    println!(
        "{:<36} {:>9.4} {:>9.1} {:>9.4} {:>9.1} {:>7.1}%   [{:.4} .. {:.4}]",
        t.what,
        t.ms,
        t.gbps(),
        t.memcpy_ms,
        t.memcpy_gbps(),
        100.0 * t.ratio(),
        t.spread.0,
        t.spread.1
    );
}

/// `tessel bench [copy|transpose|all] [--reps N]`.
pub fn bench(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => return usage_error(&e),
    };
    let which = o.pos.first().map(String::as_str).unwrap_or("all");
    if !matches!(which, "copy" | "transpose" | "rmsnorm" | "all") {
        return usage_error(&format!(
            "unknown kernel '{which}' (copy, transpose, rmsnorm, all)"
        ));
    }
    let g = match open_gpu(o.device) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("tessel bench: {e}");
            return ExitCode::from(NO_GPU);
        }
    };
    println!("device: {} ({}, {} SMs); median of {} runs after 5 warm-ups; GB/s = (bytes read + written) / time", g.name(), g.arch(), g.sms(), o.reps);
    println!(
        "{:<36} {:>9} {:>9} {:>9} {:>9} {:>8}   [min .. max ms]",
        "kernel", "ms", "GB/s", "memcpy ms", "GB/s", "of copy"
    );
    let mut rng = Rng::new(o.seed);
    let r = o.reps;
    let mut rows: Vec<Result<Timing, GpuError>> = vec![];
    let mut go = |t: Result<Timing, GpuError>| {
        match &t {
            Ok(t) => print_timing(t),
            Err(e) => println!("error: {e}"),
        }
        rows.push(t);
    };
    if which == "rmsnorm" || which == "all" {
        go(jobs::bench_rmsnorm::<bf16>(&g, 16384, 4096, r, &mut rng));
        go(jobs::bench_rmsnorm::<f32>(&g, 16384, 4096, r, &mut rng));
        go(jobs::bench_rmsnorm::<bf16>(&g, 16384, 12288, r, &mut rng));
    }
    if which == "copy" || which == "all" {
        go(jobs::bench_copy::<f32>(&g, 1 << 26, r, &mut rng));
        go(jobs::bench_copy::<bf16>(&g, 1 << 27, r, &mut rng));
        go(jobs::bench_copy::<f32>(&g, (1 << 26) + 5, r, &mut rng));
    }
    if which == "transpose" || which == "all" {
        fn both<T: Elem>(
            g: &Gpu,
            r: usize,
            rng: &mut Rng,
            go: &mut dyn FnMut(Result<Timing, GpuError>),
        ) {
            go(jobs::bench_transpose::<T, Padded<T>>(g, 8192, 8192, r, rng));
            go(jobs::bench_transpose::<T, Swizzled<T>>(
                g, 8192, 8192, r, rng,
            ));
        }
        both::<f32>(&g, r, &mut rng, &mut go);
        both::<f16>(&g, r, &mut rng, &mut go);
        both::<bf16>(&g, r, &mut rng, &mut go);
        go(jobs::bench_transpose::<f32, jobs::DefaultSmem<f32>>(
            &g, 8191, 8193, r, &mut rng,
        ));
    }
    if rows.iter().any(|t| t.is_err()) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
