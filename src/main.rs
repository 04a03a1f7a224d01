//! `tessel`: the layout calculator and the GPU kernels' driver.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

#[cfg(feature = "gpu")]
mod gpu_cli;
#[cfg(feature = "gpu")]
mod ranks;

/// The exit statuses, as every command's help ends.
const EXIT_STATUS: &str = "\
Exit status: 0 all passed, 1 a check failed, 2 bad arguments (usage errors, expressions that do
not evaluate), 3 no GPU (or no PTX for it).";

/// CuTe's layout algebra in Rust, and CUDA kernels written in Rust on top of it.
#[derive(Parser)]
#[command(name = "tessel", version, after_help = EXIT_STATUS)]
#[command(subcommand_required = true, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate layout-algebra expressions: EXPR, or one per line from stdin
    #[command(after_help = EVAL_HELP, allow_negative_numbers = true)]
    Eval {
        /// The expression (several words are joined with spaces), e.g.
        /// 'composition((6,2):(8,2),(4,3):(3,1))'; none: read stdin
        #[arg(value_name = "EXPR", conflicts_with = "list")]
        expr: Vec<String>,
        /// Print every operation with the numbers of arguments it takes, and exit
        #[arg(long)]
        list: bool,
    },
    /// Draw a layout as a table of its indices (rank 3 or more: one table per slice)
    #[command(after_help = SHOW_HELP, allow_negative_numbers = true)]
    Show {
        /// The layout (or an expression giving one), e.g. '(2,3):(3,1)'
        #[arg(value_name = "LAYOUT", required = true)]
        expr: Vec<String>,
    },
    /// Draw a layout, a swizzled layout, a TV layout, a tiled copy or a tiled MMA as SVG (stdout)
    #[command(after_help = SVG_HELP, allow_negative_numbers = true)]
    Svg {
        /// The expression, e.g. '(4,8):(8,1)', 'Sw<3,3,3> o (8,64):(64,1)',
        /// 'make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2))'
        #[arg(value_name = "EXPR", required = true)]
        expr: Vec<String>,
        /// Draw EXPR, a TV layout (thread, value) -> index, over this tile shape, e.g. '(16,8)'
        #[arg(long, value_name = "SHAPE")]
        tile: Option<String>,
        /// Bits per element, for the banks of a swizzled layout
        #[arg(long, value_name = "BITS", default_value_t = 16)]
        bits: i64,
    },
    /// Bank conflicts (smem) or sectors per request (gmem) of a block's accesses through a TV layout
    #[command(after_help = ANALYZE_HELP, allow_negative_numbers = true)]
    Analyze {
        /// smem: shared memory, bank conflicts per phase; gmem: global memory, sectors per request
        #[arg(value_enum)]
        space: Space,
        /// The memory layout, tile index -> element (a layout or a swizzled layout), e.g.
        /// '(64,64):(1,65)' or 'Sw<5,0,6> o (64,64):(1,64)'
        #[arg(value_name = "LAYOUT", required = true)]
        layout: Vec<String>,
        /// The TV layout, (thread, value) -> tile index, e.g. '((32,8),(2,8)):((64,1),(2048,8))'
        #[arg(long, value_name = "TV")]
        tv: String,
        /// Bits per element
        #[arg(long, value_name = "BITS", default_value_t = 32)]
        bits: i64,
        /// Bits per access (default: the widest the layouts allow, at most 128)
        #[arg(long, value_name = "BITS")]
        width: Option<i64>,
    },
    /// Print a results file (written by `bench --results`) as README's table, or put it there
    #[command(after_help = RESULTS_HELP)]
    Results {
        /// The results file, e.g. docs/results.tsv
        #[arg(value_name = "FILE")]
        file: std::path::PathBuf,
        /// Write the table between this file's `<!-- results -->` and `<!-- /results -->` lines
        /// instead of printing it
        #[arg(long, value_name = "README")]
        readme: Option<std::path::PathBuf>,
        /// Draw the results of one device (--device) as `bench --svg` does, into this file
        #[arg(
            long,
            value_name = "SVG",
            requires = "device",
            conflicts_with = "readme"
        )]
        svg: Option<std::path::PathBuf>,
        /// With --svg: the device whose results to draw (its name, or a word of it: H200)
        #[arg(long, value_name = "NAME", requires = "svg")]
        device: Option<String>,
    },
    /// Print the embedded PTX
    #[cfg(feature = "gpu")]
    #[command(after_help = gpu_cli::PTX_HELP)]
    Ptx(gpu_cli::PtxArgs),
    #[cfg(feature = "gpu")]
    /// Check kernels on the GPU against the host execution of the same partitioning code
    #[command(after_help = gpu_cli::RUN_HELP, allow_negative_numbers = true)]
    Run(gpu_cli::RunArgs),
    #[cfg(feature = "gpu")]
    /// Time the kernels (CUDA events) beside cuMemcpyDtoD of the same bytes
    #[command(after_help = gpu_cli::BENCH_HELP)]
    Bench(gpu_cli::BenchArgs),
    #[cfg(feature = "gpu")]
    /// Time each kernel's configurations on this GPU and record the fastest for run and bench
    #[command(after_help = gpu_cli::TUNE_HELP)]
    Tune(gpu_cli::TuneArgs),
}

const EVAL_HELP: &str = "\
With EXPR: prints its value (a layout `shape:stride`, a tensor, a scalar) and exits 0, or prints
`error: <reason>` and exits 2.

Without: reads stdin and prints exactly one line per input line, to the end of the input: the
value or `error: <reason>`; an empty line for a blank one; a line starting with `#` unchanged (a
comment); `error: input line is not valid UTF-8` for one that is not. Exits 0 at the end of the
input (2 if stdin cannot be read). A panic in the calculator (a bug in tessel) prints
`error: internal error (a bug in tessel, please report): <message>` for that line, with the
panic's report on stderr, and evaluation goes on.

Exit status: 0 evaluated, 2 EXPR does not evaluate (or stdin cannot be read).";

const ANALYZE_HELP: &str = "\
Thread t's value v is tile index TV(t, v), stored at element LAYOUT(TV(t, v)); a thread moves its
values --width bits at a time (consecutive values, consecutive and aligned in memory), and access
k of a warp's 32 threads is one request. smem: 32 banks of 4 bytes; a request of 128-bit accesses
is served 8 threads at a time, 64-bit 16 at a time, narrower 32 at a time; threads on one word
share it; n distinct words in one bank is an n-way conflict. gmem: the 32-byte sectors and
128-byte lines a request touches (the tile's first element 256-byte aligned).

Prints one verdict line, then one row per phase (smem) or request (gmem), identical rows folded.

Example (the transpose kernel's padded tile, read down its columns):
  tessel analyze smem '(64,64):(1,65)' --tv '((32,8),(2,8)):((64,1),(2048,8))'

Exit status: 0 analyzed, 2 bad arguments or layouts that do not evaluate or do not fit.";

const SVG_HELP: &str = "\
Prints an SVG document: a layout as a grid of its indices (rows mode 0, columns mode 1; rank 3 or
more as slices), colored by index; a swizzled layout colored by shared-memory bank; with --tile, a
TV layout as the tile's cells labeled T# / V#, colored by thread; a tiled copy's source and
destination side by side; an MMA atom or tiled MMA as A, B and C arranged as CuTe does. Or
`error: <reason>` on stderr (exit status 2).

Example: tessel svg 'make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2))' > mma.svg

Exit status: 0 drawn, 2 bad arguments or a value that does not evaluate or cannot be drawn.";

const RESULTS_HELP: &str = "\
The table has a row per kernel case and, per device, tessel's percentage of the baseline timed in
the same run (a device-to-device copy of the same bytes, or cuBLAS) and the best peer's; under it,
each device's runs (command, date). Or `error: <reason>` on stderr (exit status 2).

With --svg and --device: draws that device's results instead, as `tessel bench --svg` does.

Example: tessel results docs/results.tsv --readme README.md

Exit status: 0 printed or written, 2 a file that does not read or a README without the markers.";

const SHOW_HELP: &str = "\
Prints the layout and its table, or `error: <reason>` (exit status 2).

Exit status: 0 drawn, 2 bad arguments or a layout that does not evaluate or cannot be drawn.";

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Eval { list: true, .. } => {
            let mut out = std::io::stdout().lock();
            for op in tessel_calc::OPS {
                let args = match op.args {
                    (lo, hi) if lo == hi => format!("{lo}"),
                    (lo, usize::MAX) => format!("{lo} or more"),
                    (lo, hi) => format!("{lo} to {hi}"),
                };
                // a closed stdout (`| head`) ends the list
                if writeln!(out, "{:<22} {args}", op.name).is_err() {
                    break;
                }
            }
            ExitCode::SUCCESS
        }
        Command::Eval { expr, .. } if expr.is_empty() => eval_stdin(),
        Command::Eval { expr, .. } => {
            let answer = answer(&expr.join(" "), tessel_calc::eval_line);
            println!("{answer}");
            exit_for(&answer)
        }
        Command::Show { expr } => {
            let drawn = answer(&expr.join(" "), |src| {
                match tessel_calc::eval(src).and_then(|v| tessel_calc::show_value(&v)) {
                    Ok(s) => s.strip_suffix('\n').unwrap_or(&s).to_string(),
                    Err(e) => format!("error: {e}"),
                }
            });
            // a closed stdout (`| head`) is not an error of the table
            let _ = writeln!(std::io::stdout().lock(), "{drawn}");
            exit_for(&drawn)
        }
        Command::Analyze {
            space,
            layout,
            tv,
            bits,
            width,
        } => analyze(space, &layout.join(" "), &tv, bits, width),
        Command::Svg { expr, tile, bits } => svg(&expr.join(" "), tile.as_deref(), bits),
        Command::Results {
            file,
            readme,
            svg,
            device,
        } => results(
            &file,
            readme.as_deref(),
            svg.as_deref().zip(device.as_deref()),
        ),
        #[cfg(feature = "gpu")]
        Command::Ptx(args) => gpu_cli::ptx(args),
        #[cfg(feature = "gpu")]
        Command::Run(args) => gpu_cli::run(args),
        #[cfg(feature = "gpu")]
        Command::Bench(args) => gpu_cli::bench(args),
        #[cfg(feature = "gpu")]
        Command::Tune(args) => gpu_cli::tune(args),
    }
}

/// The memory `tessel analyze` looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Space {
    /// Shared memory: bank conflicts.
    Smem,
    /// Global memory: sectors and lines per request.
    Gmem,
}

/// `tessel analyze`: the verdict and the table on stdout, or the reason on stderr (exit status 2).
fn analyze(space: Space, layout: &str, tv: &str, bits: i64, width: Option<i64>) -> ExitCode {
    use tessel_calc::analyze::{analyze, Accesses, Memory, Space as S};
    document(|| {
        let memory = Memory::of(&tessel_calc::eval(layout)?)?;
        let tv = tessel_calc::eval(tv).map_err(|e| format!("--tv: {e}"))?;
        let a = Accesses {
            memory,
            tv: tessel_calc::to_layout(&tv)?,
            bits,
            width,
        };
        let s = match space {
            Space::Smem => S::Shared,
            Space::Gmem => S::Global,
        };
        Ok(analyze(&a, s)?.render())
    })
}

/// `tessel results FILE [--readme README | --svg SVG --device NAME]`.
fn results(
    file: &std::path::Path,
    readme: Option<&std::path::Path>,
    svg: Option<(&std::path::Path, &str)>,
) -> ExitCode {
    let read = |p: &std::path::Path| {
        std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let done = (|| -> Result<(), String> {
        let rows =
            tessel::results::parse(&read(file)?).map_err(|e| format!("{}: {e}", file.display()))?;
        let table = tessel::results::markdown(&rows);
        if let Some((p, device)) = svg {
            let mine: Vec<_> = rows
                .iter()
                .filter(|r| r.device == device || r.device.split_whitespace().any(|w| w == device))
                .cloned()
                .collect();
            let names = tessel::results::distinct(mine.iter().map(|r| r.device.as_str()));
            match names[..] {
                [] => {
                    let e = format!(
                        "{}: no results of a device named {device:?}",
                        file.display()
                    );
                    return Err(e);
                }
                [_] => {}
                _ => {
                    let all = names.join(", ");
                    return Err(format!(
                        "{device:?} names several devices ({all}): give the whole name"
                    ));
                }
            }
            std::fs::write(p, tessel::chart::svg(&mine))
                .map_err(|e| format!("{}: {e}", p.display()))?;
            return Ok(());
        }
        match readme {
            None => print!("{table}"),
            Some(p) => {
                let text = tessel::results::into_readme(&read(p)?, &table)
                    .map_err(|e| format!("{}: {e}", p.display()))?;
                std::fs::write(p, text).map_err(|e| format!("{}: {e}", p.display()))?;
            }
        }
        Ok(())
    })();
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// `tessel svg`: the picture on stdout, or the reason on stderr (exit status 2).
fn svg(expr: &str, tile: Option<&str>, bits: i64) -> ExitCode {
    document(|| {
        let tile = match tile {
            Some(t) => {
                Some(layout_core::IntTuple::parse(t).map_err(|e| format!("--tile {t}: {e}"))?)
            }
            None => None,
        };
        let v = tessel_calc::eval(expr)?;
        tessel_calc::svg::svg_value(&v, &tessel_calc::svg::Options { bits, tile })
    })
}

/// What `make` writes on stdout (exit status 0), or `error: <reason>` on stderr (exit status 2);
/// a panic in it (a bug in tessel) is such an error too.
fn document(make: impl FnOnce() -> Result<String, String> + std::panic::UnwindSafe) -> ExitCode {
    let made = std::panic::catch_unwind(make)
        .unwrap_or_else(|_| Err("internal error (a bug in tessel, please report)".into()));
    match made {
        Ok(s) => {
            // a closed stdout (`| head`) is not an error of the document
            let _ = std::io::stdout().lock().write_all(s.as_bytes());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

/// 0 for an answer, 2 for `error: ...` (the expression was a bad argument).
fn exit_for(answer: &str) -> ExitCode {
    if answer.starts_with("error: ") {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

/// `f(line)`, or `error: internal error ...` when it panics (the panic hook reports it on stderr).
fn answer(line: &str, f: impl Fn(&str) -> String) -> String {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(line))).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        format!("error: internal error (a bug in tessel, please report): {msg}")
    })
}

/// The output line for one input line (without its `\n`): see [`EVAL_HELP`]. Never contains a
/// line break unless `f`'s answer does.
fn eval_stream_line(raw: &[u8], f: impl Fn(&str) -> String) -> String {
    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
    let Ok(line) = std::str::from_utf8(raw) else {
        return "error: input line is not valid UTF-8".into();
    };
    let expr = line.trim();
    if expr.is_empty() {
        String::new()
    } else if expr.starts_with('#') {
        line.to_string()
    } else {
        answer(expr, f)
    }
}

/// `tessel eval` on stdin: one output line per input line, to the end of the input (or until
/// stdout is closed, e.g. `| head`).
fn eval_stdin() -> ExitCode {
    let mut input = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut raw = Vec::new();
    loop {
        raw.clear();
        match input.read_until(b'\n', &mut raw) {
            Ok(0) => return ExitCode::SUCCESS,
            Ok(_) => {}
            Err(e) => {
                let _ = out.flush();
                eprintln!("tessel eval: reading stdin: {e}");
                return ExitCode::from(2);
            }
        }
        let line = raw.strip_suffix(b"\n").unwrap_or(&raw);
        let answer = eval_stream_line(line, tessel_calc::eval_line);
        // flushed line by line: an interactive or piped caller gets each answer as it is ready
        if writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .is_err()
        {
            return ExitCode::SUCCESS;
        }
    }
}

/// A usage error of subcommand `sub` (exit status 2), formatted as clap's own.
#[cfg_attr(not(feature = "gpu"), allow(dead_code))]
fn usage_error(sub: &str, kind: clap::error::ErrorKind, msg: impl std::fmt::Display) -> ExitCode {
    let mut cmd = Cli::command();
    cmd.build();
    let cmd = cmd
        .find_subcommand_mut(sub)
        .expect("a subcommand of tessel");
    let _ = cmd.error(kind, msg).print();
    ExitCode::from(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_panic_is_one_error_line_and_the_next_line_is_evaluated() {
        let boom = |s: &str| -> String {
            if s == "boom" {
                panic!("calculator bug on {s}")
            }
            format!("ok {s}")
        };
        assert_eq!(
            eval_stream_line(b"boom", boom),
            "error: internal error (a bug in tessel, please report): calculator bug on boom"
        );
        assert_eq!(eval_stream_line(b"x", boom), "ok x");
        let static_msg = |_: &str| -> String { panic!("static") };
        assert!(eval_stream_line(b"y", static_msg).ends_with("please report): static"));
    }

    #[test]
    fn blank_comment_and_bad_utf8_lines() {
        let f = |s: &str| format!("<{s}>");
        assert_eq!(eval_stream_line(b"", f), "");
        assert_eq!(eval_stream_line(b"  \t\r", f), "");
        assert_eq!(eval_stream_line(b"  # a comment\r", f), "  # a comment");
        assert_eq!(eval_stream_line(b" size(4:1) \r", f), "<size(4:1)>");
        assert_eq!(
            eval_stream_line(b"size(\xff)", f),
            "error: input line is not valid UTF-8"
        );
    }
}
