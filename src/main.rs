//! `tessel`: the layout calculator and the GPU kernels' driver.

use std::io::{BufRead, Write};
use std::process::ExitCode;

mod gpu_cli;

const USAGE: &str = "\
usage: tessel <command> [args]

  eval [EXPR]     evaluate layout-algebra expressions: EXPR, or one per line from stdin
                  e.g. tessel eval 'composition((6,2):(8,2),(4,3):(3,1))'
  show LAYOUT     draw a rank-1 or rank-2 layout as a table of its indices
  ptx [--arch sm_XX]
                  print the embedded PTX (built for TESSEL_ARCH, default sm_90)
  run KERNEL [SIZES] [--dtype f32|f16|bf16|all] [--smem pad|swizzle|all] [--seed N] [--device N]
                  fresh random input, poisoned output: the kernel on the GPU against the host
                  execution of the same partitioning code; one line per check. KERNEL is
                    copy [N]                     (default N = 1000003)
                    transpose [ROWS COLS]        (default 1031 2053)
                    rmsnorm [M N]                (default 14 4096; --dtype f32 or bf16)
                    all                          every kernel, dtype and tile at ragged and large sizes
                  Without a GPU, runs the host executions and exits with status 3.
  bench [copy|transpose|rmsnorm|all] [--reps N] [--device N]
                  median GPU time (CUDA events) of each kernel beside cuMemcpyDtoD of the
                  same bytes, in the same run
  help            this text

Exit status: 0 all passed, 1 a check failed, 2 bad arguments, 3 no GPU (or no PTX for it).
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args.first().map(String::as_str).unwrap_or("help");
    match cmd {
        "eval" => eval(&args[1..]),
        "show" => show(&args[1..]),
        "ptx" => gpu_cli::ptx(&args[1..]),
        "run" => gpu_cli::run(&args[1..]),
        "bench" => gpu_cli::bench(&args[1..]),
        "help" | "-h" | "--help" => {
            print!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("tessel: unknown command '{other}'\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn eval(args: &[String]) -> ExitCode {
    if !args.is_empty() {
        println!("{}", host::calc::eval_line(&args.join(" ")));
        return ExitCode::SUCCESS;
    }
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if writeln!(out, "{}", host::calc::eval_line(line)).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

fn show(args: &[String]) -> ExitCode {
    let src = args.join(" ");
    let drawn = host::calc::eval(&src)
        .and_then(|v| host::calc::to_layout(&v))
        .and_then(|l| host::calc::show(&l));
    match drawn {
        Ok(s) => {
            print!("{s}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
