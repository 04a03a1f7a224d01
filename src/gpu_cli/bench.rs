//! `tessel bench`: timings beside a device-to-device copy, cuBLAS and the peers; the GEMM split
//! over GPUs and the all-reduce.

use std::cell::RefCell;

use host::checks::attention::Shape;
use host::jobs::attention::case_name;
use tessel::results;

use super::*;

/// A timing's row of `tessel bench`'s table.
pub(super) fn timing_line(t: &Timing) -> String {
    format!(
        "{:<36} {:>9.4} {:>9.1} {:>9.4} {:>9.1} {:>7.1}%   [{:.4} .. {:.4}] {:>6.1}  {}",
        t.what,
        t.ms,
        t.gbps(),
        t.memcpy_ms,
        t.memcpy_gbps(),
        100.0 * t.ratio(),
        t.spread.0,
        t.spread.1,
        t.host_us,
        t.config.as_deref().unwrap_or("")
    )
}

/// The RMSNorm sizes `tessel bench` and `tessel tune` time: N = 4096, 12288, 32768, with 2^26
/// elements or more.
pub(super) const RMS_SIZES: [(usize, usize); 3] = [(16384, 4096), (16384, 12288), (4096, 32768)];

/// The transposes' sizes for `tessel tune`: 8192 x 8192 (output rows of whole sectors) and the
/// ragged 8191 x 8193 (not: the led kernels), and whether they are led.
pub(super) const TUNE_TRANSPOSE: [(usize, usize, bool); 2] =
    [(8192, 8192, false), (8191, 8193, true)];

/// `tessel bench [KERNEL] [--reps N] [--seed N] [--device N]`.
pub fn bench(a: BenchArgs) -> ExitCode {
    let split_opts = a.split.split.is_some() || a.split.chunks.is_some() || a.comm_sms.is_some();
    if split_opts && (a.gpus < 2 || a.kernel != Kernel::Gemm) {
        return crate::usage_error(
            "bench",
            ErrorKind::ArgumentConflict,
            "--split, --chunks and --comm-sms time a GEMM over --gpus N (N >= 2): bench gemm --gpus N",
        );
    }
    if a.gpus > 1 && (a.peers || a.results.is_some() || a.svg.is_some()) {
        return crate::usage_error(
            "bench",
            ErrorKind::ArgumentConflict,
            "--peers, --results and --svg record one GPU's kernels (not with --gpus N)",
        );
    }
    if a.process_per_gpu && a.gpus < 2 {
        return crate::usage_error(
            "bench",
            ErrorKind::ArgumentConflict,
            "--process-per-gpu starts a process per GPU of --gpus N (N >= 2)",
        );
    }
    if a.gpus > 1 && a.kernel == Kernel::Gemm {
        return bench_gemm_split(&a);
    }
    if a.gpus > 1 {
        return bench_all_reduce(&a);
    }
    let sized = !a.sizes.is_empty();
    let triples = a.kernel == Kernel::Gemm && a.sizes.len().is_multiple_of(3);
    let sextuples = a.kernel == Kernel::Attention && a.sizes.len().is_multiple_of(6);
    if sized && !triples && !sextuples {
        return crate::usage_error(
            "bench",
            ErrorKind::WrongNumberOfValues,
            "bench takes SIZES for gemm, in triples M N K, and for attention, in sextuples B H \
             HKV SQ SK D",
        );
    }
    if sized && a.kernel == Kernel::Attention && (!a.cases.is_empty() || a.peers) {
        return crate::usage_error(
            "bench",
            ErrorKind::ArgumentConflict,
            "--case and --peers take the bench's own attention cases: not with SIZES",
        );
    }
    // attention's cases (`--case`, or SIZES), checked before the GPU opens
    let cases = match sextuples && sized {
        true => attention_shapes(&a.sizes),
        false => attention_cases(&a.cases),
    };
    let attention = match cases {
        Ok(cases) => cases,
        Err(why) => return crate::usage_error("bench", ErrorKind::ValueValidation, &why),
    };
    if !a.cases.is_empty() && a.kernel != Kernel::Attention {
        return crate::usage_error(
            "bench",
            ErrorKind::ArgumentConflict,
            "bench takes --case for attention only",
        );
    }
    // the results file must read (or not exist yet) before minutes of timing go into it
    if let Some(p) = &a.results {
        if let Err(e) = Run::read(p) {
            eprintln!("tessel bench: {e}");
            return ExitCode::from(2);
        }
    }
    let g = match Gpu::open(a.on.device, built_ptx::PTX) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("tessel bench: {e}");
            return ExitCode::from(if absent(&e) { NO_GPU } else { 1 });
        }
    };
    let seed = a.on.seed.unwrap_or_else(Rng::fresh_seed);
    println!("device: {} ({}, {} SMs); median of {} runs after 5 warm-ups, queued back to back (host us: the host's time per launch call, not in the figures); GB/s = (bytes read + written) / time; seed {seed}", g.name(), g.arch(), g.sms(), a.reps);
    let tuned = Tuned::open(Some(&g));
    if let Some(line) = tuned.line() {
        println!("{line}");
    }
    // the bandwidth kernels' columns (attention's lines have their own, in TFLOP/s)
    if a.kernel != Kernel::Attention {
        println!(
            "{:<36} {:>9} {:>9} {:>9} {:>9} {:>8}   [min .. max ms] host us  config",
            "kernel", "ms", "GB/s", "memcpy ms", "GB/s", "of copy"
        );
    }
    let mut rng = Rng::new(seed);
    let r = a.reps as usize;
    let which = |k| a.kernel == k || a.kernel == Kernel::All;
    let mut rows: Vec<Result<Timing, GpuError>> = vec![];
    // a step per kernel case (GEMM: the ceilings, then each size), and the peers
    let cases = [
        (Kernel::Rmsnorm, 2 * RMS_SIZES.len()),
        (Kernel::Axpby, 2),
        (Kernel::Gemm, 1),
        (Kernel::Attention, attention.len()),
    ]
    .into_iter()
    .chain([
        (Kernel::Copy, 3),
        (Kernel::Transpose, 3 * TUNE_TRANSPOSE.len()),
    ])
    .filter(|&(k, _)| which(k))
    .map(|(_, n)| n)
    .sum::<usize>()
        + usize::from(a.peers);
    let progress = RefCell::new(Progress::new(cases, "bench"));
    let say = |line: String| progress.borrow_mut().line(&line);
    // the headline rows, as results
    let results: RefCell<Vec<results::Row>> = RefCell::new(vec![]);
    let run = Run::now(&g);
    // a timing, and its case's name where it is the case's headline row
    let mut go = |t: Result<Timing, GpuError>, case: Option<String>| {
        match &t {
            Ok(t) => {
                say(timing_line(t));
                if let Some(case) = &case {
                    results.borrow_mut().push(run.row(
                        case,
                        "tessel",
                        t.gbps(),
                        "GB/s",
                        "copy",
                        100.0 * t.ratio(),
                    ));
                }
            }
            Err(e) => say(format!("error: {e}")),
        }
        // the case's step is done, timed or failed
        if case.is_some() {
            progress.borrow_mut().tick();
        }
        rows.push(t);
    };
    if which(Kernel::Rmsnorm) {
        fn rms<T: RmsElem>(
            g: &Gpu,
            tuned: &Tuned,
            (r, rng): (usize, &mut Rng),
            go: &mut dyn FnMut(Result<Timing, GpuError>, Option<String>),
        ) {
            for size in RMS_SIZES {
                let (cfg, from) = tuned.rms::<T>(Some(g), size.1 as i64);
                go(
                    jobs::bench_rmsnorm::<T>(g, size, &[cfg], r, rng).map(|mut t| {
                        let mut t = t.remove(0);
                        t.config = Some(format!("{cfg} ({})", source(from)));
                        t
                    }),
                    Some(format!("rmsnorm {} {}x{}", T::NAME, size.0, size.1)),
                );
            }
        }
        rms::<bf16>(&g, &tuned, (r, &mut rng), &mut go);
        rms::<f32>(&g, &tuned, (r, &mut rng), &mut go);
    }
    if which(Kernel::Axpby) {
        let case = |t: &str| Some(format!("axpby {t} 8192x8192"));
        go(
            jobs::bench_axpby::<bf16>(&g, 8192, 8192, r, &mut rng),
            case("bf16"),
        );
        go(
            jobs::bench_axpby::<f32>(&g, 8192, 8192, r, &mut rng),
            case("f32"),
        );
    }
    if which(Kernel::Gemm) {
        let show = |t: Result<gemm::GemmTiming, GpuError>| match t {
            Ok(t) => {
                say(format!(
                    "{:<36} {:>9.4} {:>9.1} TFLOP/s",
                    t.what, t.ms, t.tflops
                ));
                Ok(t.tflops)
            }
            Err(e) => {
                say(format!("error: {e}"));
                Err(e)
            }
        };
        let peak = show(gemm::bench_mma_peak::<bf16>(&g, 8, r));
        let _ = show(gemm::bench_mma_peak::<f16>(&g, 8, r));
        // at the GEMM's occupancy: one block of 8 warps per SM
        let _ = show(gemm::bench_mma_peak::<bf16>(&g, 1, r));
        // the tensor cores' own ceiling (wgmma), where the PTX has it (TESSEL_ARCH with sm_90a)
        let wpeak = gemm::bench_wgmma_peak(&g, r).and_then(|t| show(t).ok());
        let sizes: Vec<[usize; 3]> = if a.sizes.is_empty() {
            vec![[4096; 3], [8192; 3]]
        } else {
            a.sizes.chunks(3).map(|c| [c[0], c[1], c[2]]).collect()
        };
        progress.borrow_mut().tick();
        progress.borrow_mut().add_total(sizes.len());
        for mnk in sizes {
            match gemm::bench_gemm::<bf16, bf16>(&g, mnk, r, &mut rng) {
                Ok(b) => {
                    let blas = match &b.blas {
                        Some(Ok(t)) => Some(t.tflops),
                        _ => None,
                    };
                    let case = format!("gemm bf16 {}x{}x{}", mnk[0], mnk[1], mnk[2]);
                    // the headline: gemm_sm90 with C stored by the copy engine, beside cuBLAS
                    let head = b.mapped.iter().flatten().find(|t| {
                        t.what.starts_with("gemm_sm90") && !t.what.contains("by its threads")
                    });
                    if let (Some(t), Some(c)) = (head, blas) {
                        let mut r = results.borrow_mut();
                        r.push(run.row(
                            &case,
                            "tessel",
                            t.tflops,
                            "TFLOP/s",
                            "cuBLAS",
                            100.0 * t.tflops / c,
                        ));
                        r.push(run.row(&case, "cuBLAS", c, "TFLOP/s", "cuBLAS", 100.0));
                    }
                    let mut rows = vec![Ok(b.ours)];
                    rows.extend(b.mapped);
                    rows.extend(b.blas);
                    for t in rows {
                        if let Ok(t) = show(t) {
                            let mut vs = vec![];
                            if let Ok(p) = &peak {
                                vs.push(format!("{:.1}% of the mma.sync ceiling", 100.0 * t / p));
                            }
                            if let Some(p) = wpeak {
                                vs.push(format!("{:.1}% of the wgmma ceiling", 100.0 * t / p));
                            }
                            if let Some(c) = blas {
                                vs.push(format!("{:.1}% of cuBLAS", 100.0 * t / c));
                            }
                            say(format!("{:<36} {}", "", vs.join(", ")));
                        }
                    }
                }
                Err(e) => {
                    let _ = show(Err(e));
                }
            }
            progress.borrow_mut().tick();
        }
    }
    if which(Kernel::Attention) {
        bench_attention(
            &g,
            &attention,
            r,
            &mut rng,
            &run,
            (&results, &progress),
            &say,
        );
    }
    if which(Kernel::Copy) {
        // the chosen configuration, and the default beside a tuned one
        fn copy<T: Elem>(
            g: &Gpu,
            tuned: &Tuned,
            n: usize,
            (r, rng): (usize, &mut Rng),
            go: &mut dyn FnMut(Result<Timing, GpuError>, Option<String>),
        ) {
            let (cfg, from) = tuned.copy(T::NAME);
            let mut cfgs = vec![cfg];
            if cfg != CopyConfig::DEFAULT {
                cfgs.push(CopyConfig::DEFAULT);
            }
            match jobs::bench_copy::<T>(g, n, &cfgs, r, rng) {
                Ok(ts) => {
                    for (k, mut t) in ts.into_iter().enumerate() {
                        let from = if k == 0 { source(from) } else { "default" };
                        t.config = Some(format!("{} ({from})", cfgs[k]));
                        go(
                            Ok(t),
                            (k == 0)
                                .then(|| format!("copy {} {}", T::NAME, results::power_of_two(n))),
                        );
                    }
                }
                Err(e) => go(
                    Err(e),
                    Some(format!("copy {} {}", T::NAME, results::power_of_two(n))),
                ),
            }
        }
        copy::<f32>(&g, &tuned, 1 << 26, (r, &mut rng), &mut go);
        copy::<bf16>(&g, &tuned, 1 << 27, (r, &mut rng), &mut go);
        copy::<f32>(&g, &tuned, (1 << 26) + 5, (r, &mut rng), &mut go);
    }
    if which(Kernel::Transpose) {
        /// The shape in every tile (the driver's carveout, as many blocks as fit), the
        /// configuration `run` chooses marked, or timed after them where it sets either.
        fn shape<T: Elem>(
            g: &Gpu,
            tuned: &Tuned,
            (rows, cols, led): (usize, usize, bool),
            r: usize,
            rng: &mut Rng,
            go: &mut dyn FnMut(Result<Timing, GpuError>, Option<String>),
        ) {
            let (chosen, from) = tuned.transpose(T::NAME, led);
            let case = || Some(format!("transpose {} {rows}x{cols}", T::NAME));
            let mark = |t: Result<Timing, GpuError>| {
                t.map(|mut t| {
                    t.config = Some(format!("{chosen} chosen ({})", source(from)));
                    t
                })
            };
            for tile in Tile::ALL {
                let cfg = TransposeConfig::tile(tile);
                let t = bench_tile::<T>(g, cfg, (rows, cols), r, rng);
                if cfg == chosen {
                    go(mark(t), case());
                } else {
                    go(t, None);
                }
            }
            if chosen != TransposeConfig::tile(chosen.tile) {
                go(
                    mark(bench_tile::<T>(g, chosen, (rows, cols), r, rng)),
                    case(),
                );
            }
        }
        for s in TUNE_TRANSPOSE {
            shape::<f32>(&g, &tuned, s, r, &mut rng, &mut go);
            shape::<f16>(&g, &tuned, s, r, &mut rng, &mut go);
            shape::<bf16>(&g, &tuned, s, r, &mut rng, &mut go);
        }
    }
    let mut results = results.into_inner();
    if a.peers {
        progress.borrow_mut().set_what("torch (scripts/peers.py)");
        results.extend(peers(&run, &a, r, &say));
        if which(Kernel::Attention) {
            progress
                .borrow_mut()
                .set_what("torch SDPA (scripts/sdpa.py)");
            // the cases timed only (`--case`)
            let names: Vec<String> = attention.iter().map(case_name::<bf16>).collect();
            let sdpa = sdpa_peers(&run, r, &say);
            results.extend(sdpa.into_iter().filter(|row| names.contains(&row.kernel)));
        }
        progress.borrow_mut().tick();
    }
    // tessel's attention as a percent of cuDNN's in this run; without it, not recorded
    of_cudnn(&mut results);
    progress.borrow_mut().finish();
    if let Err(e) = run.save(&results, a.results.as_deref(), a.svg.as_deref()) {
        eprintln!("tessel bench: {e}");
        return ExitCode::FAILURE;
    }
    if rows.iter().any(|t| t.is_err()) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// What every result of one `tessel bench` shares: the device, the date, the command.
pub(super) struct Run {
    device: String,
    date: String,
    command: String,
}

impl Run {
    /// This run: the device `g`, today (UTC), and the command line without `--results` and
    /// `--svg` (where the results go, not what was measured).
    pub(super) fn now(g: &Gpu) -> Run {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut words = vec!["tessel".to_string()];
        let mut args = std::env::args_os()
            .skip(1)
            .map(|w| w.to_string_lossy().into_owned());
        while let Some(w) = args.next() {
            match w.as_str() {
                "--results" | "--svg" => {
                    args.next();
                }
                _ if w.starts_with("--results=") || w.starts_with("--svg=") => {}
                _ => words.push(w),
            }
        }
        Run {
            device: g.name().to_string(),
            date: results::date_of(secs),
            command: words.join(" "),
        }
    }

    /// A result of this run.
    pub(super) fn row(
        &self,
        kernel: &str,
        who: &str,
        value: f64,
        unit: &str,
        of: &str,
        percent: f64,
    ) -> results::Row {
        results::Row {
            device: self.device.clone(),
            date: self.date.clone(),
            command: self.command.clone(),
            kernel: kernel.into(),
            who: who.into(),
            value,
            unit: unit.into(),
            of: of.into(),
            percent,
        }
    }

    /// Records `rows` in the results file `file` (merged into what it holds) and draws them into
    /// `svg`, each where given; `Err` names the file that could not be read or written.
    pub(super) fn save(
        &self,
        rows: &[results::Row],
        file: Option<&std::path::Path>,
        svg: Option<&std::path::Path>,
    ) -> Result<(), String> {
        let at = |p: &std::path::Path, e: &dyn std::fmt::Display| format!("{}: {e}", p.display());
        if let Some(p) = svg {
            std::fs::write(p, tessel::chart::svg(rows)).map_err(|e| at(p, &e))?;
            println!("results: drawn in {}", p.display());
        }
        if let Some(p) = file {
            let old = Self::read(p)?;
            std::fs::write(p, results::render(&results::merge(&old, rows)))
                .map_err(|e| at(p, &e))?;
            println!("results: {} rows recorded in {}", rows.len(), p.display());
        }
        Ok(())
    }

    /// The rows of the results file `p`, none when it does not exist yet; `Err` names the file
    /// and what is wrong with it.
    pub(super) fn read(p: &std::path::Path) -> Result<Vec<results::Row>, String> {
        match std::fs::read_to_string(p) {
            Ok(t) => results::parse(&t).map_err(|e| format!("{}: {e}", p.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(vec![]),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    }
}

/// torch's figures for the memory-bound cases `a` timed (`scripts/peers.py --rows`, `reps`
/// launches each), as results of `run`; what the script printed otherwise (no torch, no GPU)
/// goes to `say`.
fn peers(run: &Run, a: &BenchArgs, reps: usize, say: &dyn Fn(String)) -> Vec<results::Row> {
    let kernels: Vec<&str> = [
        Kernel::Copy,
        Kernel::Transpose,
        Kernel::Rmsnorm,
        Kernel::Axpby,
    ]
    .into_iter()
    .filter(|&k| a.kernel == k || a.kernel == Kernel::All)
    .map(|k| k.name())
    .collect();
    if kernels.is_empty() {
        return vec![];
    }
    let args = [
        "--rows".to_string(),
        kernels.join(","),
        "--reps".into(),
        reps.to_string(),
    ];
    let out = tessel::peer::torch_lines(env!("CARGO_MANIFEST_DIR"), "", "scripts/peers.py", &args);
    let mut rows = vec![];
    for line in out.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match f[..] {
            [kernel, who, gbps, percent] => match (gbps.parse::<f64>(), percent.parse::<f64>()) {
                (Ok(v), Ok(p)) if v.is_finite() && p.is_finite() && v >= 0.0 && p >= 0.0 => {
                    rows.push(run.row(kernel, who, v, "GB/s", "copy", p))
                }
                _ => say(format!("peers: {line}")),
            },
            _ => say(format!("peers: {line}")),
        }
    }
    say(format!("peers: {} torch figures", rows.len()));
    rows
}

/// The sequence lengths `tessel bench attention` times (batch x sequence = 16k, 16 heads, as
/// FlashAttention reports).
pub(super) const ATTENTION_SEQS: [usize; 5] = [1024, 2048, 4096, 8192, 16384];

/// The head dimensions `tessel bench attention` times (FlashAttention-3's: `scripts/sdpa.py`'s).
pub(super) const ATTENTION_DIMS: [usize; 3] = [64, 128, 256];

/// `tessel bench attention`'s cases: [`ATTENTION_DIMS`], each with [`ATTENTION_SEQS`] (batch x
/// sequence = 16k, 16 heads), both masks; with `only`, those whose name ([`case_name`]) contains
/// one of its texts, or why not where a text matches none.
///
/// Post-condition: with `only` empty, every case, in that order; else a subsequence of them.
pub(super) fn attention_cases(only: &[String]) -> Result<Vec<Shape>, String> {
    let mut all = vec![];
    for d in ATTENTION_DIMS {
        for seq in ATTENTION_SEQS {
            for causal in [false, true] {
                all.push(Shape::of([16384 / seq, 16, 16, seq, seq, d], causal));
            }
        }
    }
    let name = case_name::<bf16>;
    if let Some(t) = only
        .iter()
        .find(|t| !all.iter().any(|s| name(s).contains(t.as_str())))
    {
        return Err(format!(
            "--case {t:?} matches no attention case (they are named as `attention bf16 d128 full \
             S1024`: d{ATTENTION_DIMS:?}, full or causal, S{ATTENTION_SEQS:?})"
        ));
    }
    Ok(all
        .into_iter()
        .filter(|s| only.is_empty() || only.iter().any(|t| name(s).contains(t.as_str())))
        .collect())
}

/// `tessel bench attention B H HKV SQ SK D ...`'s cases: each sextuple without and with the causal
/// mask, in that order, or the first refused, with why ([`host::jobs::attention::refuse`]).
///
/// Post-condition: two cases a sextuple, its sizes as given.
pub(super) fn attention_shapes(sizes: &[usize]) -> Result<Vec<Shape>, String> {
    let mut all = vec![];
    for s in sizes.chunks_exact(6) {
        for causal in [false, true] {
            let shape = Shape::of([s[0], s[1], s[2], s[3], s[4], s[5]], causal);
            if let Some(why) = host::jobs::attention::refuse(&shape) {
                return Err(why);
            }
            all.push(shape);
        }
    }
    Ok(all)
}

/// `attention` (bf16) at each of `cases` ([`attention_cases`]): each checked on sampled rows then
/// timed, a line each; a result per case (TFLOP/s; its percent of cuDNN filled in by
/// [`of_cudnn`] when the peers run, else 0).
fn bench_attention(
    g: &Gpu,
    cases: &[Shape],
    reps: usize,
    rng: &mut Rng,
    run: &Run,
    (results, progress): (&RefCell<Vec<results::Row>>, &RefCell<Progress>),
    say: &dyn Fn(String),
) {
    let built = g.has_kernel("attention_bf16_d128");
    if built {
        say(format!(
            "{:<36} {:>9} {:>17}  [min .. max ms]  rows checked (f64 reference)",
            "kernel", "ms", "TFLOP/s"
        ));
    } else {
        say("attention: not run (no sm_90a PTX: build with TESSEL_ARCH=sm_90,sm_90a)".into());
    }
    for &s in cases {
        if built {
            match host::jobs::attention::bench_attention::<bf16>(g, s, reps, rng) {
                Ok(t) => {
                    say(format!(
                        "{:<36} {:>9.4} {:>9.1} TFLOP/s  [{:.4} .. {:.4}]  {} rows within {:.2} of the bound",
                        t.what, t.ms, t.tflops, t.spread.0, t.spread.1, t.checked.0, t.checked.1
                    ));
                    results
                        .borrow_mut()
                        .push(run.row(&t.what, "tessel", t.tflops, "TFLOP/s", "cuDNN", 0.0));
                }
                Err(e) => say(format!("error: {e}")),
            }
        }
        progress.borrow_mut().tick();
    }
}

/// torch's SDPA backends on `tessel bench attention`'s cases (`scripts/sdpa.py --rows`, `reps`
/// launches each), as results of `run` (their percent of cuDNN filled in by [`of_cudnn`]);
/// what the script printed otherwise goes to `say`.
fn sdpa_peers(run: &Run, reps: usize, say: &dyn Fn(String)) -> Vec<results::Row> {
    let args = ["--rows".to_string(), "--reps".into(), reps.to_string()];
    let out = tessel::peer::torch_lines(env!("CARGO_MANIFEST_DIR"), "", "scripts/sdpa.py", &args);
    let mut rows = vec![];
    for line in out.lines() {
        match line.split('\t').collect::<Vec<_>>()[..] {
            [case, who, v] => match v.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 => {
                    rows.push(run.row(case, who, v, "TFLOP/s", "cuDNN", 0.0))
                }
                _ => say(format!("peers: {line}")),
            },
            _ => say(format!("peers: {line}")),
        }
    }
    say(format!("peers: {} torch SDPA figures", rows.len()));
    rows
}

/// Gives each row measured against cuDNN the percent of its case's cuDNN figure (torch's
/// `cudnn` backend, in `results` too, then named `cuDNN` as the rows' baseline is: the README's
/// table counts no baseline among the peers); a row whose case has none is dropped (no percent
/// of nothing recorded).
fn of_cudnn(results: &mut Vec<results::Row>) {
    let cudnn: Vec<(String, f64)> = results
        .iter()
        .filter(|r| r.who == "torch cudnn")
        .map(|r| (r.kernel.clone(), r.value))
        .collect();
    results.retain_mut(|r| {
        if r.of != "cuDNN" {
            return true;
        }
        match cudnn.iter().find(|(k, _)| *k == r.kernel) {
            Some((_, c)) => {
                r.percent = 100.0 * r.value / c;
                if r.who == "torch cudnn" {
                    r.who = r.of.clone();
                }
                true
            }
            None => false,
        }
    });
}

/// The rank this process was started as by `--process-per-gpu` (its copies of the command) and
/// the seed to use (the one the first process chose, else `seed`, else a fresh one); or the
/// exit status of a malformed start.
pub(super) fn started_as(
    gpus: usize,
    seed: Option<u64>,
) -> Result<(Option<crate::ranks::Rank>, u64), ExitCode> {
    match crate::ranks::this_rank() {
        Ok(Some(r)) if r.world == gpus => {
            let s = r.seed;
            Ok((Some(r), s))
        }
        Ok(Some(r)) => {
            eprintln!(
                "tessel: started as rank {} of {}, asked for --gpus {gpus}",
                r.rank, r.world
            );
            Err(ExitCode::from(2))
        }
        Ok(None) => Ok((None, seed.unwrap_or_else(Rng::fresh_seed))),
        Err(why) => {
            eprintln!("tessel: {why}");
            Err(ExitCode::from(2))
        }
    }
}

/// GPUs `0..n` for `tessel bench --gpus N` (or this process's one, started as a rank), and the
/// seed; else the exit status saying why not (on stderr). With `--process-per-gpu`, the first
/// process starts the others and returns their worst status.
pub(super) fn open_for_bench(a: &BenchArgs) -> Result<(Devices, u64), ExitCode> {
    let n = a.gpus as usize;
    let (rank, seed) = started_as(n, a.on.seed)?;
    if a.process_per_gpu && rank.is_none() {
        match crate::ranks::spawn(n, seed) {
            Ok(code) => return Err(code),
            Err(why) => println!("one process per GPU not started ({why}): one process"),
        }
    }
    let devs = match &rank {
        Some(r) => Devices::open_rank(r.rank, r.world, &r.id, built_ptx::PTX),
        None => Devices::open(n, built_ptx::PTX),
    };
    devs.map(|d| (d, seed)).map_err(|e| {
        eprintln!("tessel bench: {e}");
        ExitCode::from(if absent(&e) { NO_GPU } else { 1 })
    })
}

/// Each GPU's `[m, n, k]` in `tessel bench gemm --gpus N`.
pub(super) const WEAK_SCALING: [usize; 3] = [8192, 8192, 8192];

/// `tessel bench gemm --gpus N`: the split GEMM's weak scaling, each GPU's work fixed.
pub(super) fn bench_gemm_split(a: &BenchArgs) -> ExitCode {
    if a.sizes.len() > 3 || !a.sizes.len().is_multiple_of(3) || a.on.device != 0 {
        return crate::usage_error(
            "bench",
            ErrorKind::WrongNumberOfValues,
            "bench gemm --gpus N takes one triple M N K (each GPU's work) and runs on GPUs 0..N (no --device)",
        );
    }
    let per_gpu = if a.sizes.is_empty() {
        WEAK_SCALING
    } else {
        [a.sizes[0], a.sizes[1], a.sizes[2]]
    };
    let n = a.gpus as usize;
    let chunks = a.split.chunks.unwrap_or(4) as usize;
    let sharing = a
        .comm_sms
        .map_or(Sharing::PerTile, |s| Sharing::Reserve(i64::from(s)));
    // NCCL reads its limits when the communicators are made
    let ctas = match (std::env::var("NCCL_MAX_CTAS"), a.comm_sms) {
        // (a rank started by --process-per-gpu finds the value its first process set)
        (Ok(v), Some(s)) if v == s.to_string() => format!("NCCL_MAX_CTAS={s}"),
        (Ok(v), _) => format!("NCCL_MAX_CTAS={v} (set outside)"),
        (Err(_), None) => "NCCL's own number of blocks".to_string(),
        (Err(_), Some(s)) => {
            std::env::set_var("NCCL_MAX_CTAS", s.to_string());
            format!("NCCL_MAX_CTAS={s}")
        }
    };
    let (devs, seed) = match open_for_bench(a) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let g = &devs.gpus()[0];
    let [m, nn, k] = per_gpu;
    println!(
        "devices: {n} x {} ({}); each GPU's work {m}x{nn}x{k} (bf16 in; bf16 out, f32 for the K \
         split); one GPU alone against the work split over {n}, collectives included: in one \
         chunk (GEMMs, then the collective){}, the collectives' tensors in ordinary memory (NCCL's kernels: \
         {}, {ctas}) and in symmetric windows (NCCL 2.28 gathers between them on the copy \
         engines: the chunks' GEMMs on every SM); interleaved, median of {} \
         runs after 3 warm-ups (CUDA events on this process's first GPU); before the timing, \
         each way's C checked bit-equal to the first way's on every GPU; seed {seed}",
        g.name(),
        g.arch(),
        if chunks > 1 {
            format!(
                " and in {chunks} chunks (each chunk's collective beside the next chunk's GEMMs)"
            )
        } else {
            String::new()
        },
        match sharing {
            Sharing::PerTile => "the chunks' GEMMs a cluster per pair of tiles".to_string(),
            Sharing::Reserve(s) => format!("{s} SMs left to NCCL"),
            Sharing::All => "every SM".to_string(),
        },
        a.reps
    );
    println!(
        "{:<52} {:<36} {:>9} {:>9} {:>7}",
        "split GEMM", "way", "ms", "TFLOP/s", "eff"
    );
    let mut rng = Rng::new(seed);
    let mut failed = false;
    for split in splits(a.split.split.unwrap_or(SplitArg::Rows)) {
        use host::collectives::tp_gemm::bench_weak_scaling as weak;
        let how = (chunks, sharing);
        let r = a.reps as usize;
        // the K split's partial sums in f32, the others into the inputs' type
        let t = match split {
            Split::K => weak::<bf16, f32>(&devs, split, per_gpu, how, r, &mut rng),
            _ => weak::<bf16, bf16>(&devs, split, per_gpu, how, r, &mut rng),
        };
        match t {
            Ok(t) => {
                let row = |way: &str, ms: f64| {
                    println!(
                        "{:<52} {:<36} {:>9.4} {:>9.1} {:>6.1}%",
                        t.what,
                        way,
                        ms,
                        t.flops / ms / 1e9,
                        100.0 * t.efficiency(ms)
                    )
                };
                row("1 GPU alone (every SM)", t.one_ms);
                for (w, ms) in &t.runs {
                    row(&w.name(), *ms);
                }
                if let Some(why) = &t.no_windows {
                    println!("{}: no runs in windows: {why}", t.what);
                }
            }
            Err(e) => {
                println!("{}: error: {e}", split.name());
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Each rank's all-reduce buffer in `tessel bench --gpus N`: 2^26 elements (256 MiB of f32),
/// and 2^20 for the latency end.
pub(super) const ALL_REDUCE_ELEMS: [usize; 2] = [1 << 20, 1 << 26];

/// `tessel bench --gpus N`: the NCCL all-reduce over GPUs 0..N, each size and type checked, then
/// timed.
pub(super) fn bench_all_reduce(a: &BenchArgs) -> ExitCode {
    if a.kernel != Kernel::All || !a.sizes.is_empty() || a.on.device != 0 {
        return crate::usage_error(
            "bench",
            ErrorKind::ArgumentConflict,
            "bench --gpus N times the all-reduce over GPUs 0..N: KERNEL, SIZES and --device do not apply",
        );
    }
    let n = a.gpus as usize;
    let (devs, seed) = match open_for_bench(a) {
        Ok(d) => d,
        Err(code) => return code,
    };
    let g = &devs.gpus()[0];
    println!(
        "devices: {n} x {} ({}); NCCL all-reduce (sum, in place), each checked against the f64 sum \
         first; median of {} runs after 5 warm-ups (CUDA events on GPU 0); algbw = bytes / time, \
         busbw = algbw * 2 (n-1) / n; seed {seed}",
        g.name(),
        g.arch(),
        a.reps
    );
    println!(
        "{:<28} {:>12} {:>9} {:>11} {:>11}   [min .. max ms]",
        "collective", "bytes", "ms", "algbw GB/s", "busbw GB/s"
    );
    let mut rng = Rng::new(seed);
    let r = a.reps as usize;
    let mut failed = false;
    for elems in ALL_REDUCE_ELEMS {
        for t in [
            host::collectives::sharded::bench_all_reduce::<f32>(&devs, elems, r, &mut rng),
            host::collectives::sharded::bench_all_reduce::<bf16>(&devs, elems, r, &mut rng),
        ] {
            match t {
                Ok(t) => println!(
                    "{:<28} {:>12} {:>9.4} {:>11.1} {:>11.1}   [{:.4} .. {:.4}]",
                    t.what,
                    t.bytes,
                    t.ms,
                    t.algbw(),
                    t.busbw(),
                    t.spread.0,
                    t.spread.1
                ),
                Err(e) => {
                    println!("error: {e}");
                    failed = true;
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

/// Times the transpose of `rows x cols` elements of `T` in configuration `cfg`.
pub(super) fn bench_tile<T: Elem>(
    g: &Gpu,
    cfg: TransposeConfig,
    rc: (usize, usize),
    r: usize,
    rng: &mut Rng,
) -> Result<Timing, GpuError> {
    let k = (cfg.carveout, cfg.resident);
    match cfg.tile {
        Tile::Pad => jobs::bench_transpose::<T, Padded<T>>(g, rc, k, r, rng),
        Tile::Swizzle => jobs::bench_transpose::<T, Swizzled<T>>(g, rc, k, r, rng),
        Tile::Pairs => jobs::bench_transpose::<T, Paired<T>>(g, rc, k, r, rng),
        Tile::Quads => jobs::bench_transpose::<T, Quads<T>>(g, rc, k, r, rng),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attention_rows_are_percents_of_the_same_cases_cudnn_or_dropped() {
        let run = Run {
            device: "NVIDIA H200".into(),
            date: "2026-11-28".into(),
            command: "tessel bench attention --peers".into(),
        };
        let row =
            |case: &str, who: &str, v: f64, of: &str| run.row(case, who, v, "TFLOP/s", of, 0.0);
        let mut rows = vec![
            row("attention bf16 d128 full S16384", "tessel", 640.0, "cuDNN"),
            row("attention bf16 d64 full S1024", "tessel", 300.0, "cuDNN"),
            row("gemm bf16 4096x4096x4096", "tessel", 700.0, "cuBLAS"),
            row(
                "attention bf16 d128 full S16384",
                "torch cudnn",
                680.0,
                "cuDNN",
            ),
            row(
                "attention bf16 d128 full S16384",
                "torch flash2",
                340.0,
                "cuDNN",
            ),
        ];
        of_cudnn(&mut rows);
        let got: Vec<(&str, &str, f64)> = rows
            .iter()
            .map(|r| (r.kernel.as_str(), r.who.as_str(), r.percent))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "attention bf16 d128 full S16384",
                    "tessel",
                    100.0 * 640.0 / 680.0
                ),
                ("gemm bf16 4096x4096x4096", "tessel", 0.0),
                ("attention bf16 d128 full S16384", "cuDNN", 100.0),
                ("attention bf16 d128 full S16384", "torch flash2", 50.0),
            ]
        );
    }

    /// `--case` keeps the cases whose name contains any of its texts, in the order of all of
    /// them; a text no case's name contains is refused, naming it.
    #[test]
    fn attention_cases_filter_by_name() {
        let names = |only: &[&str]| {
            let only: Vec<String> = only.iter().map(|t| t.to_string()).collect();
            attention_cases(&only).map(|c| c.iter().map(case_name::<bf16>).collect::<Vec<_>>())
        };
        let all = names(&[]).unwrap();
        assert_eq!(all.len(), ATTENTION_DIMS.len() * ATTENTION_SEQS.len() * 2);
        assert!(all.iter().enumerate().all(|(i, n)| !all[..i].contains(n)));
        assert_eq!(
            names(&["d128 full"]).unwrap(),
            [1024, 2048, 4096, 8192, 16384].map(|s| format!("attention bf16 d128 full S{s}"))
        );
        let two = names(&["d64 causal S1024", "d256 full S16384"]).unwrap();
        assert_eq!(
            two,
            [
                "attention bf16 d64 causal S1024",
                "attention bf16 d256 full S16384"
            ]
        );
        let err = names(&["d128", "S999"]).unwrap_err();
        assert!(err.contains("\"S999\" matches no attention case"), "{err}");
    }

    /// SIZES give each sextuple's two masks, named with the shape in full where it is not one of
    /// the bench's own; a shape the kernel refuses is refused with its reason.
    #[test]
    fn attention_sizes_are_cases_of_both_masks() {
        let names = |sizes: &[usize]| {
            attention_shapes(sizes).map(|c| c.iter().map(case_name::<bf16>).collect::<Vec<_>>())
        };
        assert_eq!(
            names(&[12, 22, 22, 1024, 2048, 128, 16, 16, 16, 1024, 1024, 64]).unwrap(),
            [
                "attention bf16 d128 full B12 H22 HKV22 1024x2048",
                "attention bf16 d128 causal B12 H22 HKV22 1024x2048",
                "attention bf16 d64 full S1024",
                "attention bf16 d64 causal S1024",
            ]
        );
        let bad = names(&[2, 4, 2, 100, 100, 100]).unwrap_err();
        let why = host::jobs::attention::refuse(&Shape::of([2, 4, 2, 100, 100, 100], false));
        assert_eq!(Some(bad), why);
    }
}
