//! The `tessel` binary's arguments and exit statuses, as the README and `tessel help` document
//! them: 0 all passed, 1 a check failed, 2 bad arguments, 3 no GPU (or no PTX for it).

use std::process::{Command, Output, Stdio};

fn tessel(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Asserts that `args` is refused as bad arguments (status 2, nothing on stdout), with `want` in
/// the message.
fn refused(args: &[&str], want: &str) {
    let out = tessel(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: want {want:?} in\n{err}");
    assert!(
        out.stdout.is_empty(),
        "{args:?} printed {}",
        text(&out.stdout)
    );
}

mod common;

/// `tessel eval` on `input` (bytes): its stdout lines and exit status.
fn eval_stdin(input: &[u8]) -> (Vec<String>, Option<i32>) {
    let out = common::eval_stdin(input);
    (common::lines(&out), out.status.code())
}

#[test]
fn help_of_every_command() {
    for cmd in ["eval", "show", "ptx", "run", "bench", "tune", "results"] {
        for args in [vec![cmd, "--help"], vec![cmd, "-h"], vec!["help", cmd]] {
            let out = tessel(&args);
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            let help = text(&out.stdout);
            assert!(
                help.contains(&format!("Usage: tessel {cmd}")),
                "{args:?}:\n{help}"
            );
        }
    }
    let out = tessel(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for cmd in ["eval", "show", "ptx", "run", "bench", "tune", "results"] {
        assert!(
            help.contains(&format!("  {cmd} ")),
            "{cmd} missing in\n{help}"
        );
    }
    assert!(help.contains("3 no GPU (or no PTX for it)"), "{help}");
    // the long help of run lists every kernel's sizes
    let help = text(&tessel(&["run", "--help"]).stdout);
    for k in ["copy [N]", "transpose [ROWS COLS]", "rmsnorm [M N]", "all "] {
        assert!(help.contains(k), "{k} missing in\n{help}");
    }
}

#[test]
fn results_print_the_table_and_refuse_bad_files_by_name() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/results.tsv");
    let out = tessel(&["results", file]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("| kernel | types | sizes | of |"));
    let dir = std::env::temp_dir().join(format!("tessel-cli-results-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (bad, readme) = (dir.join("bad.tsv"), dir.join("README.md"));
    std::fs::write(&bad, "device\tdate\n").unwrap();
    std::fs::write(&readme, "no markers\n").unwrap();
    let (bad, readme) = (bad.to_str().unwrap(), readme.to_str().unwrap());
    refused(&["results", bad], "results line 1: the header is");
    refused(
        &["results", file, "--readme", readme],
        "README has no `<!-- results -->` line",
    );
    refused(
        &["results", file, "--svg", bad, "--device", "B200"],
        "no results of a device named \"B200\"",
    );
    refused(&["results", file, "--svg", bad], "--device");
    refused(
        &["results", "/nonexistent/results.tsv"],
        "/nonexistent/results.tsv",
    );
    // bench checks its results file before it opens the GPU, and records one GPU's kernels
    let out = tessel(&["bench", "copy", "--results", bad]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("results line 1: the header is"));
    refused(&["bench", "--gpus", "2", "--peers"], "not with --gpus N");
    // a word naming two devices is refused, the whole name draws
    let two = dir.join("two.tsv");
    let row = |device: &str| tessel::results::Row {
        device: device.into(),
        date: "2026-11-28".into(),
        command: "tessel bench copy".into(),
        kernel: "copy f32 2^26".into(),
        who: "tessel".into(),
        value: 3000.0,
        unit: "GB/s".into(),
        of: "copy".into(),
        percent: 97.0,
    };
    let rows = [row("NVIDIA H100 80GB HBM3"), row("NVIDIA H100 PCIe")];
    std::fs::write(&two, tessel::results::render(&rows)).unwrap();
    let two = two.to_str().unwrap();
    refused(
        &["results", two, "--svg", bad, "--device", "H100"],
        "names several devices",
    );
    let out = tessel(&["results", two, "--svg", bad, "--device", "NVIDIA H100 PCIe"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // a device's picture, drawn from the file
    let svg = dir.join("h200.svg");
    let out = tessel(&[
        "results",
        file,
        "--svg",
        svg.to_str().unwrap(),
        "--device",
        "H200",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_command_or_an_unknown_one_is_a_usage_error() {
    let out = tessel(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("Usage: tessel <COMMAND>"));
    refused(&["frobnicate"], "unrecognized subcommand 'frobnicate'");
}

#[test]
fn unknown_options_are_refused() {
    refused(&["run", "copy", "--fast"], "unexpected argument '--fast'");
    refused(&["bench", "--fast"], "unexpected argument '--fast'");
    refused(&["ptx", "--fast"], "unexpected argument '--fast'");
    refused(&["show", "--fast"], "unexpected argument '--fast'");
    refused(&["eval", "--fast"], "unexpected argument '--fast'");
    refused(
        &["run", "copy", "--dtype"],
        "a value is required for '--dtype",
    );
}

#[test]
fn options_of_other_commands_are_refused() {
    refused(&["ptx", "--seed", "4"], "unexpected argument '--seed'");
    refused(&["ptx", "--device", "0"], "unexpected argument '--device'");
    refused(
        &["run", "copy", "--arch", "sm_90"],
        "unexpected argument '--arch'",
    );
    refused(
        &["run", "copy", "--reps", "3"],
        "unexpected argument '--reps'",
    );
    refused(
        &["bench", "--dtype", "f16"],
        "unexpected argument '--dtype'",
    );
    refused(&["bench", "--smem", "pad"], "unexpected argument '--smem'");
    refused(
        &["bench", "copy", "100"],
        "bench takes SIZES for gemm, in triples M N K, and for attention, in sextuples",
    );
}

/// `--gpus N` splits RMSNorm's rows over GPUs 0..N; without N GPUs it runs the host execution of
/// every shard against the one-GPU host execution, says so, and exits 3.
#[test]
fn rmsnorm_over_several_gpus() {
    let out = tessel(&["run", "rmsnorm", "6", "64", "--gpus", "2", "--dtype", "all"]);
    let t = text(&out.stdout);
    if t.starts_with("device: 2 x ") {
        assert_eq!(out.status.code(), Some(0), "{t}");
        assert!(t.contains("PASS every GPU's all-gathered batch"), "{t}");
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{t}");
    for d in ["f32", "bf16"] {
        assert!(
            t.contains(&format!("rmsnorm {d} 6x64"))
                && t.contains("over 2 GPUs (mesh (2,1):(1,0), shards (3,64), AllGather)"),
            "{t}"
        );
    }
    assert!(t.contains("host executions of the 2 shards = the one-GPU host execution, bit-exact (NOT run on 2 GPUs)"), "{t}");
}

/// `--gpus N` splits the GEMM by A's rows, C's columns or K; without N GPUs it runs the host
/// executions of every shard and chunk, moved as the collectives would, says so, and exits 3.
#[test]
fn gemm_over_several_gpus() {
    let out = tessel(&[
        "run", "gemm", "128", "64", "48", "--gpus", "2", "--chunks", "2",
    ]);
    let t = text(&out.stdout);
    if t.starts_with("device: 2 x ") {
        assert_eq!(out.status.code(), Some(0), "{t}");
        // each split in ordinary memory and in symmetric windows, where NCCL has them
        let windows = t.matches("chunks, windows: PASS (gemm_sm").count();
        let no_windows = t
            .matches("chunks, windows: not run (no symmetric windows")
            .count();
        assert_eq!(windows + no_windows, 3, "{t}");
        assert_eq!(t.matches(": PASS (gemm_sm").count(), 3 + windows, "{t}");
        return;
    }
    assert_eq!(out.status.code(), Some(3), "{t}");
    for (split, line) in [
        ("rows", "gemm_bf16_bf16 128x64x48 split by rows over 2 GPUs in 2 chunks: PASS host executions of every shard and chunk = the one-GPU host execution, bit-exact (NOT run on 2 GPUs)"),
        ("cols", "gemm_bf16_bf16 128x64x48 split by cols over 2 GPUs in 2 chunks: PASS host executions of every shard and chunk = the one-GPU host execution, bit-exact (NOT run on 2 GPUs)"),
        ("k", "gemm_bf16_f32 128x64x48 split by k over 2 GPUs in 2 chunks: PASS host executions of every shard and chunk (NOT run on 2 GPUs)"),
    ] {
        assert!(t.contains(line), "{split}: {t}");
    }
    assert!(
        t.contains("all 3 host executions passed; NOT run on a GPU"),
        "{t}"
    );
}

/// `--process-per-gpu` starts a copy of the command per GPU, ranks of one NCCL communicator,
/// and prints their outputs rank by rank; without NCCL it says so and runs as one process.
#[test]
fn one_process_per_gpu() {
    let args = [
        "run",
        "rmsnorm",
        "4",
        "64",
        "--gpus",
        "2",
        "--process-per-gpu",
        "--seed",
        "9",
    ];
    let out = tessel(&args);
    let t = text(&out.stdout);
    if t.starts_with("rank 0 of 2") {
        assert_eq!(out.status.code(), Some(0), "{t}");
        assert!(t.contains("rank 1 of 2 (process"), "{t}");
        assert_eq!(
            t.matches("PASS every GPU's all-gathered batch").count(),
            2,
            "{t}"
        );
        return;
    }
    assert!(t.starts_with("one process per GPU not started ("), "{t}");
    assert!(t.contains("host executions of the 2 shards"), "{t}");
    assert_eq!(out.status.code(), Some(3), "{t}");
    refused(
        &["run", "rmsnorm", "--process-per-gpu"],
        "--process-per-gpu starts a process per GPU of --gpus N (N >= 2)",
    );
    refused(
        &["bench", "--process-per-gpu"],
        "--process-per-gpu starts a process per GPU of --gpus N (N >= 2)",
    );
}

#[test]
fn combinations_that_cannot_run_are_refused_before_anything_runs() {
    refused(
        &["run", "rmsnorm", "3", "16", "--dtype", "f16"],
        "rmsnorm has no f16 kernel (f32, bf16)",
    );
    refused(
        &["run", "rmsnorm", "3", "12"],
        "rmsnorm needs N a multiple of 8, got N = 12",
    );
    refused(
        &["run", "rmsnorm", "--smem", "pad"],
        "--smem is the transpose's shared tile",
    );
    refused(
        &["run", "copy", "8", "--smem", "all"],
        "--smem is the transpose's shared tile",
    );
    refused(
        &["run", "all", "--dtype", "bf16"],
        "--dtype, --smem, --warps and --gpus do not apply",
    );
    refused(
        &["run", "all", "--smem", "pad"],
        "--dtype, --smem, --warps and --gpus do not apply",
    );
    refused(&["run", "all", "100"], "run all takes no SIZES");
    refused(
        &["run", "all", "--gpus", "2"],
        "--dtype, --smem, --warps and --gpus do not apply",
    );
    refused(
        &["run", "copy", "--gpus", "2"],
        "--gpus splits RMSNorm and the GEMM over GPUs: copy runs on one GPU",
    );
    refused(
        &[
            "run", "gemm", "100", "64", "64", "--gpus", "2", "--chunks", "4",
        ],
        "split by rows over 2 GPUs in 4 chunks: M = 100 is not a multiple of 8",
    );
    refused(
        &[
            "run", "gemm", "64", "63", "64", "--gpus", "2", "--split", "cols",
        ],
        "N = 63 is not a multiple of 2",
    );
    refused(
        &["run", "gemm", "64", "64", "64", "--split", "k"],
        "--split and --chunks split a GEMM over --gpus N (N >= 2)",
    );
    refused(
        &["run", "rmsnorm", "--gpus", "2", "--chunks", "2"],
        "--split and --chunks split a GEMM over --gpus N (N >= 2)",
    );
    refused(
        &["bench", "gemm", "--comm-sms", "4"],
        "--split, --chunks and --comm-sms time a GEMM over --gpus N (N >= 2)",
    );
    refused(
        &["bench", "gemm", "8", "8", "8", "8", "8", "8", "--gpus", "2"],
        "bench gemm --gpus N takes one triple M N K",
    );
    refused(
        &["run", "rmsnorm", "7", "64", "--gpus", "2"],
        "rmsnorm over 2 GPUs needs M a multiple of 2 (equal shards), got M = 7",
    );
    refused(
        &["run", "rmsnorm", "--gpus", "2", "--device", "1"],
        "--gpus N runs on GPUs 0..N",
    );
    refused(&["run", "rmsnorm", "--gpus", "0"], "0");
    refused(&["run", "transpose", "4194241", "3"], "ROWS <= 4194240");
    refused(&["run", "copy", "4_294_967_297"], "more than 2^32 elements");
    refused(&["run", "--dtype", "f32"], "run needs a KERNEL");
}

#[test]
fn a_missing_or_unknown_kernel_lists_every_kernel() {
    refused(
        &["run"],
        "run needs a KERNEL: copy, transpose, rmsnorm, axpby, gemm, attention or all",
    );
    refused(
        &["run", "gemv"],
        "[possible values: copy, transpose, rmsnorm, axpby, gemm, attention, all]",
    );
    refused(
        &["bench", "gemv"],
        "[possible values: copy, transpose, rmsnorm, axpby, gemm, attention, all]",
    );
    refused(
        &["bench", "copy", "4096"],
        "SIZES for gemm, in triples M N K, and for attention, in sextuples",
    );
    refused(&["bench", "gemm", "1", "2"], "in triples M N K");
    refused(
        &["run", "gemm", "8", "8", "8", "--dtype", "f32"],
        "gemm's inputs are 16-bit",
    );
    refused(
        &["run", "copy", "--dtype", "f64"],
        "[possible values: f32, f16, bf16, all]",
    );
    refused(
        &["run", "transpose", "--smem", "no"],
        "[possible values: pad, swizzle, pairs, quads, all]",
    );
}

/// `tessel run attention` checks the kernel's own function on the simulated GPU (and on a GPU,
/// the GPU's results) against the f64 reference, for both masks; shapes it has no kernel for
/// are refused by name.
#[test]
fn attention_runs_its_checks_and_refuses_what_it_has_no_kernel_for() {
    refused(
        &["run", "attention", "1", "4", "3", "8", "8", "64"],
        "attention needs H a multiple of HKV",
    );
    refused(
        &["run", "attention", "1", "4", "2", "8", "8", "80"],
        "attention has head dimensions 64, 96, 128, 192 and 256, got D = 80",
    );
    refused(
        &["run", "attention", "1", "4", "2", "8", "8"],
        "attention takes 6 sizes (B H HKV SQ SK D), got 5",
    );
    refused(
        &["run", "attention", "--dtype", "f32"],
        "attention's inputs are 16-bit",
    );
    refused(
        &["bench", "attention", "64"],
        "bench takes SIZES for gemm, in triples M N K, and for attention, in sextuples",
    );
    // a case filter that matches nothing, or on another kernel, is refused before the GPU opens
    refused(
        &[
            "bench",
            "attention",
            "--case",
            "d128 full S1024",
            "--case",
            "d100",
        ],
        "--case \"d100\" matches no attention case",
    );
    refused(
        &["bench", "copy", "--case", "d128"],
        "bench takes --case for attention only",
    );
    let out = tessel(&[
        "run",
        "attention",
        "1",
        "2",
        "1",
        "70",
        "130",
        "64",
        "--dtype",
        "all",
        "--seed",
        "3",
    ]);
    let t = text(&out.stdout);
    let gpu = t.starts_with("device: ");
    assert_eq!(out.status.code(), Some(if gpu { 0 } else { 3 }), "{t}");
    for what in [
        "attention bf16 B1 H2 HKV1 70x130 D64: OK simulated",
        "attention bf16 B1 H2 HKV1 70x130 D64 causal: OK simulated",
        "attention f16 B1 H2 HKV1 70x130 D64: OK simulated",
        "attention f16 B1 H2 HKV1 70x130 D64 causal: OK simulated",
    ] {
        assert!(t.contains(what), "{what} missing from\n{t}");
    }
    assert!(!t.contains("FAIL"), "{t}");
}

#[test]
fn bad_sizes_are_refused() {
    for bad in ["0", "-3", "1.5", "ten", "99999999999999999999999"] {
        refused(&["run", "copy", bad], "a size is a positive integer");
    }
    refused(
        &["run", "transpose", "4"],
        "transpose takes 2 sizes (ROWS COLS), got 1",
    );
    refused(&["run", "copy", "4", "4"], "copy takes 1 size (N), got 2");
    refused(
        &["run", "rmsnorm", "2", "8", "8"],
        "rmsnorm takes 2 sizes (M N), got 3",
    );
    refused(&["run", "copy", "--seed", "-1"], "--seed");
    refused(&["run", "copy", "--device", "x"], "--device");
    refused(&["bench", "--reps", "0"], "0 is not in 1..=1000000");
    refused(&["tune", "--reps", "0"], "0 is not in 1..=1000000");
    refused(
        &["tune", "axpby"],
        "[possible values: copy, rmsnorm, transpose, all]",
    );
    refused(
        &["tune", "rmsnorm", "--warps", "2"],
        "unexpected argument '--warps'",
    );
    refused(
        &["run", "rmsnorm", "--warps", "3"],
        "[possible values: 1, 2, 4, 8, 16, all]",
    );
    refused(
        &["run", "copy", "--warps", "2"],
        "--warps is RMSNorm's warps per row",
    );
}

/// `tessel tune` without a GPU says so and exits 3, writing no cache.
#[test]
fn tune_without_a_gpu_exits_3() {
    let dir = std::env::temp_dir().join(format!("tessel-tune-cli-{}", std::process::id()));
    let cache = dir.join("tune.tsv");
    let out = Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(["tune", "rmsnorm", "--reps", "1"])
        .env("TESSEL_TUNE_CACHE", &cache)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if out.status.code() == Some(3) {
        assert!(
            text(&out.stderr).starts_with("tessel tune: "),
            "{}",
            text(&out.stderr)
        );
        assert!(!cache.exists());
    } else {
        // a GPU: the choices are recorded
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
        let t = std::fs::read_to_string(&cache).unwrap();
        assert_eq!(
            t.lines().filter(|l| l.contains("\trmsnorm\t")).count(),
            6,
            "{t}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn archs_older_than_sm_80_or_malformed_are_refused() {
    refused(
        &["ptx", "--arch", "sm_75"],
        "the kernels need sm_80 or newer (cp.async, cvt.rn.bf16x2.f32 are sm_80 instructions)",
    );
    refused(&["ptx", "--arch", "sm_1"], "sm_80 or newer");
    for bad in ["sm_", "sm_9x", "compute_90", "90"] {
        refused(&["ptx", "--arch", bad], "is not an arch");
    }
}

#[test]
fn an_arch_not_built_is_no_ptx() {
    let built = tessel::ptx::archs();
    let arch = ["sm_121a", "sm_120", "sm_89"]
        .into_iter()
        .find(|a| !built.contains(a))
        .unwrap();
    let out = tessel(&["ptx", "--arch", arch]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains(&format!("TESSEL_ARCH={arch}")));
    if built.is_empty() {
        let out = tessel(&["ptx"]);
        assert_eq!(out.status.code(), Some(3));
        assert!(text(&out.stderr).contains("built without PTX"));
    }
}

/// Without a GPU the host executions run and the status is 3; with one, 0. Either way the seed is
/// printed, and `--seed` replays the run.
#[test]
fn run_prints_its_seed_and_the_seed_replays_it() {
    let out = tessel(&["run", "rmsnorm", "3", "16", "--dtype", "all"]);
    let first = text(&out.stdout);
    let gpu = first.starts_with("device: ");
    assert_eq!(out.status.code(), Some(if gpu { 0 } else { 3 }), "{first}");
    let seed = first
        .split("; seed ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .unwrap_or_else(|| panic!("no seed printed:\n{first}"));
    assert!(
        first.contains(&format!("(--seed {seed} replays this run)")),
        "{first}"
    );
    let again = tessel(&[
        "run", "rmsnorm", "3", "16", "--dtype", "all", "--seed", seed,
    ]);
    assert_eq!(text(&again.stdout), first);
    let other: u64 = seed.parse::<u64>().unwrap().wrapping_add(1);
    let other = tessel(&[
        "run",
        "rmsnorm",
        "3",
        "16",
        "--dtype",
        "all",
        "--seed",
        &other.to_string(),
    ]);
    assert_ne!(text(&other.stdout), first, "another seed, the same inputs");
    if !gpu {
        assert!(first.contains("NOT run on a GPU"), "{first}");
        let out = tessel(&["run", "copy", "100"]);
        assert_eq!(out.status.code(), Some(3));
        let t = text(&out.stdout);
        assert!(t.contains("running the host executions only; seed "), "{t}");
        assert!(t.contains("copy f32 n=100: host execution OK"), "{t}");
        // a GEMM beyond the host execution's sizes is not counted as passed
        let out = tessel(&["run", "gemm", "512", "512", "256", "--dtype", "bf16"]);
        assert_eq!(out.status.code(), Some(3));
        let t = text(&out.stdout);
        assert!(t.contains("not run (no GPU"), "{t}");
        assert!(t.contains("no host execution ran, 2 checks not run"), "{t}");
        let out = tessel(&["bench", "copy"]);
        assert_eq!(out.status.code(), Some(3));
        let err = text(&out.stderr);
        assert!(err.contains("no GPU") || err.contains("no PTX"), "{err}");
    }
}

#[test]
fn eval_answers_every_line_exactly_once() {
    let (got, status) = eval_stdin(
        b"size(4:1)\n\n# a comment, echoed\r\n   \nnope(1)\n\xff\xfe(4:1)\r\n  #indented\n(2,3):(1)\ncosize((2,2):(1,6))",
    );
    assert_eq!(status, Some(0));
    assert_eq!(
        got,
        [
            "4",
            "",
            "# a comment, echoed",
            "",
            "error: unknown operation 'nope'",
            "error: input line is not valid UTF-8",
            "  #indented",
            got[7].as_str(),
            "8",
        ]
    );
    assert!(
        got[7].starts_with("error: tuples are not congruent"),
        "{}",
        got[7]
    );
    assert_eq!(eval_stdin(b""), (vec![], Some(0)));
}

#[test]
fn eval_and_show_of_one_expression_exit_2_on_an_error() {
    let out = tessel(&["eval", "composition((6,2):(8,2),(4,3):(3,1))"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "((2,2),3):((24,2),8)\n");
    let out = tessel(&["eval", "composition((6,2):(8,2),(4,3):(5,1))"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).starts_with("error: stride divisibility"));
    let out = tessel(&["show", "(2,3):(3,1)"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("| 3 | 4 | 5 |"));
    for bad in ["(2,3):(1)", "nope(2)", ""] {
        let out = tessel(&["show", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let t = text(&out.stdout);
        assert!(
            t.starts_with("error: ") && t.lines().count() == 1,
            "{bad}: {t}"
        );
    }
}
