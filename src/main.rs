//! `tessel`: the layout calculator and the GPU kernels' driver.

use std::io::{BufRead, Write};
use std::process::ExitCode;

const USAGE: &str = "\
usage: tessel <command> [args]

  eval [EXPR]     evaluate layout-algebra expressions: EXPR, or one per line from stdin
                  e.g. tessel eval 'composition((6,2):(8,2),(4,3):(3,1))'
  show LAYOUT     draw a rank-1 or rank-2 layout as a table of its indices
  help            this text
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = args.first().map(String::as_str).unwrap_or("help");
    match cmd {
        "eval" => eval(&args[1..]),
        "show" => show(&args[1..]),
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
