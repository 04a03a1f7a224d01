//! `tessel tune`: each kernel's candidate configurations timed on the device, the fastest kept
//! in the tuner's cache.

use super::*;

/// What `tessel tune` can tune.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TuneKernel {
    /// the vector copy's grid or the copy engine's chunks, stages and blocks per SM, per type
    Copy,
    /// warps per row and staging, per type and N (4096, 12288, 32768)
    Rmsnorm,
    /// the shared tile (pad, swizzle, pairs, quads), shared-memory carveout and blocks per SM, per type, for output rows of whole sectors and not
    Transpose,
    /// both
    All,
}

pub const TUNE_HELP: &str = "\
Times each candidate configuration on the GPU present and records the fastest in the tune cache,
per device (name, SMs, memory clock and bus width), kernel, type and size; `tessel run` and
`tessel bench` use the cache's choice where it has one (bench prints `(tuned)` or `(default)`
beside each configuration). Before it is timed, each candidate is checked on fresh random input
against its host execution; one that fails is not chosen.
  rmsnorm    rmsnorm_w{1,2,4,8,16}_{f32,bf16}, each staging in all the shared memory a block may
             have or in the share that lets 2, 3 or 4 blocks fit on an SM, at 16384x4096,
             16384x12288 and 4096x32768
  transpose  transpose_{pad,swizzle,pairs,quads}_{f32,f16,bf16}, each with the driver's
             shared-memory carveout and with 72% (sm_90: 164 KiB of shared memory per SM, the
             rest L1), and with as many blocks per SM as fit, 3 or 4 (each asking for shared
             memory it leaves unused), at 8192x8192, and at 8191x8193 (output rows that are not
             whole sectors: the led kernels), one choice for each
  copy       copy_{f32,f16,bf16} (2 atoms of 16 bytes per thread) and copy_a{4,8,16}_*, each
             over a grid of a block per tile and of 16 blocks per SM, 3, 4, 6 or 8 resident per
             SM; bulk_copy_* (sm_90, the copy engine) in chunks of 8, 16 and 32 KiB, 1, 2, 4 or 8
             blocks per SM, as many stages as fit (2..8); per type, at 2^28 bytes

The cache: $TESSEL_TUNE_CACHE, else $XDG_CACHE_HOME/tessel/tune.tsv, else
$HOME/.cache/tessel/tune.tsv (tab-separated lines: device, kernel, dtype, n, config, ms, of_copy).

Exit status: 0 tuned and recorded, 1 a kernel failed to run, a candidate failed its check, or the
cache could not be read or written, 2 bad arguments, 3 no GPU or no PTX for it.";

/// `tessel tune`'s arguments.
#[derive(Args)]
pub struct TuneArgs {
    /// copy, rmsnorm, transpose or all
    #[arg(value_enum, value_name = "KERNEL", default_value_t = TuneKernel::All)]
    pub(super) kernel: TuneKernel,
    /// Timed runs of each candidate (and of the memcpy)
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(super) reps: u32,
    #[command(flatten)]
    pub(super) on: OnDevice,
}

/// One candidate's outcome: its configuration's text and timing, or why it is out.
pub(super) type Tried = (String, Result<Timing, String>);

/// What the tuner does with one kernel, type and size's candidates: `(what, n, tried, default)`.
pub(super) type Found<'a> = dyn FnMut(&str, i64, Vec<Tried>, String) + 'a;

/// Prints the line of the next candidate of `p` (`[k/total]`, all kernels counted), a step of it.
pub(super) fn progress(p: &mut Progress, what: &str, t: &Tried) {
    let (k, total) = (p.done() + 1, p.total());
    let line = match &t.1 {
        Ok(t) => format!(
            "[{k:>3}/{total}] {what} {:<14} {:>9.4} ms {:>6.1}% of copy",
            t.config.as_deref().unwrap_or(""),
            t.ms,
            100.0 * t.ratio()
        ),
        Err(e) => format!("[{k:>3}/{total}] {what} {:<14} out: {e}", t.0),
    };
    p.step(&line);
}

/// One kernel, type and size settled: each of `tried` a step of `p`, then the fastest's line
/// and cache entry (into `found`, when one ran); whether a candidate failed.
pub(super) fn settle(
    p: &mut Progress,
    device: &DeviceId,
    (what, key): (&str, (&str, &str, i64)),
    tried: &[Tried],
    default: &str,
    found: &mut Vec<Entry>,
) -> bool {
    for t in tried {
        progress(p, what, t);
    }
    if let Some(b) = best(device, key, tried, default) {
        p.line(&b.1);
        found.push(b.0);
    }
    tried.iter().any(|t| t.1.is_err())
}

/// The fastest of `tried` as a cache entry, and its line; `None` when none ran.
pub(super) fn best(
    device: &DeviceId,
    (kernel, dtype, n): (&str, &str, i64),
    tried: &[Tried],
    default: &str,
) -> Option<(Entry, String)> {
    let (config, t) = tried
        .iter()
        .filter_map(|(c, t)| t.as_ref().ok().map(|t| (c, t)))
        .min_by(|a, b| a.1.ms.total_cmp(&b.1.ms))?;
    let vs = tried
        .iter()
        .find(|(c, _)| c == default)
        .and_then(|(_, t)| t.as_ref().ok())
        .map_or(String::new(), |d| {
            format!("; the default {default}: {:.1}%", 100.0 * d.ratio())
        });
    let line = format!("  best: {config} {:.1}% of copy{vs}", 100.0 * t.ratio());
    Some((
        Entry {
            device: device.key(),
            kernel: kernel.into(),
            dtype: dtype.into(),
            n,
            config: config.clone(),
            ms: t.ms,
            of_copy: t.ratio(),
        },
        line,
    ))
}

/// `tessel tune [KERNEL] [--reps N] [--seed N] [--device N]`.
pub fn tune(a: TuneArgs) -> ExitCode {
    let g = match Gpu::open(a.on.device, built_ptx::PTX) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("tessel tune: {e}");
            return ExitCode::from(if absent(&e) { NO_GPU } else { 1 });
        }
    };
    let Some(path) = Cache::default_path() else {
        eprintln!(
            "tessel tune: no place for the cache: set TESSEL_TUNE_CACHE, XDG_CACHE_HOME or HOME"
        );
        return ExitCode::FAILURE;
    };
    let mut cache = match Cache::load(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tessel tune: the cache does not read, and is left as it is: {e}");
            return ExitCode::FAILURE;
        }
    };
    let device = g.device_id();
    let seed = a.on.seed.unwrap_or_else(Rng::fresh_seed);
    println!(
        "device: {device}; median of {} runs after 5 warm-ups; seed {seed}; cache {}",
        a.reps,
        path.display()
    );
    let mut rng = Rng::new(seed);
    let r = a.reps as usize;
    let which = |k| a.kernel == k || a.kernel == TuneKernel::All;
    let mut failed = false;
    let mut found = vec![];
    // every candidate of every kernel tuned, counted up front for the time left
    let rms_cands = RmsConfig::candidates(g.rmsnorm_smem()).len();
    let copy_cands = CopyConfig::candidates(g.rmsnorm_smem(), g.has_kernel("bulk_copy_f32"));
    let tile_cands = TransposeConfig::candidates();
    let mut total = 0;
    if which(TuneKernel::Rmsnorm) {
        total += 2 * RMS_SIZES.len() * rms_cands;
    }
    if which(TuneKernel::Copy) {
        total += 3 * copy_cands.len();
    }
    if which(TuneKernel::Transpose) {
        total += 3 * TUNE_TRANSPOSE.len() * tile_cands.len();
    }
    let mut p = Progress::new(total, "tune");
    if which(TuneKernel::Rmsnorm) {
        fn rms<T: RmsElem>(g: &Gpu, (r, rng): (usize, &mut Rng), out: &mut Found) {
            let cands = RmsConfig::candidates(g.rmsnorm_smem());
            for (rows, cols) in RMS_SIZES {
                let what = format!("rmsnorm_{} {rows}x{cols}", T::NAME);
                let mut tried = vec![];
                // each candidate checked on a few rows first
                let mut ok = vec![];
                for &cfg in &cands {
                    match jobs::run_rmsnorm::<T>(Some(g), 5, cols, Some(cfg), rng) {
                        Ok(v) if v.ok => ok.push(cfg),
                        Ok(v) => tried.push((cfg.to_string(), Err(v.line))),
                        Err(e) => tried.push((cfg.to_string(), Err(e.to_string()))),
                    }
                }
                match jobs::bench_rmsnorm::<T>(g, (rows, cols), &ok, r, rng) {
                    Ok(ts) => {
                        tried.extend(ok.iter().map(|c| c.to_string()).zip(ts.into_iter().map(Ok)))
                    }
                    Err(e) => tried.extend(ok.iter().map(|c| (c.to_string(), Err(e.to_string())))),
                }
                let default = RmsConfig::default_for::<T>(cols as i64, g.rmsnorm_smem());
                out(&what, cols as i64, tried, default.to_string());
            }
        }
        for dtype in ["bf16", "f32"] {
            p.set_what(&format!("tune rmsnorm_{dtype}"));
            let mut out = |what: &str, n: i64, tried: Vec<Tried>, default: String| {
                let key = ("rmsnorm", dtype, n);
                failed |= settle(&mut p, &device, (what, key), &tried, &default, &mut found);
            };
            if dtype == "bf16" {
                rms::<bf16>(&g, (r, &mut rng), &mut out);
            } else {
                rms::<f32>(&g, (r, &mut rng), &mut out);
            }
        }
    }
    if which(TuneKernel::Copy) {
        fn copies<T: Elem>(g: &Gpu, cands: &[CopyConfig], r: usize, rng: &mut Rng) -> Vec<Tried> {
            let mut tried = vec![];
            // each candidate checked first, at a size with a ragged end
            let mut ok = vec![];
            for &cfg in cands {
                match jobs::run_copy::<T>(Some(g), 1_000_003, cfg, rng) {
                    Ok(v) if v.ok => ok.push(cfg),
                    Ok(v) => tried.push((cfg.to_string(), Err(v.line))),
                    Err(e) => tried.push((cfg.to_string(), Err(e.to_string()))),
                }
            }
            let n = (1 << 28) / std::mem::size_of::<T>();
            match jobs::bench_copy::<T>(g, n, &ok, r, rng) {
                Ok(ts) => {
                    tried.extend(ok.iter().map(|c| c.to_string()).zip(ts.into_iter().map(Ok)))
                }
                Err(e) => tried.extend(ok.iter().map(|c| (c.to_string(), Err(e.to_string())))),
            }
            tried
        }
        let cands = &copy_cands;
        // each type's lines as soon as it is timed
        type Copies = fn(&Gpu, &[CopyConfig], usize, &mut Rng) -> Vec<Tried>;
        let each: [(&str, Copies); 3] = [
            (f32::NAME, copies::<f32>),
            (f16::NAME, copies::<f16>),
            (bf16::NAME, copies::<bf16>),
        ];
        for (dtype, copies) in each {
            p.set_what(&format!("tune copy_{dtype}"));
            let tried = copies(&g, cands, r, &mut rng);
            let what = format!("copy_{dtype} 2^28 bytes");
            let default = CopyConfig::DEFAULT.to_string();
            let key = ("copy", dtype, 0);
            failed |= settle(&mut p, &device, (&what, key), &tried, &default, &mut found);
        }
    }
    if which(TuneKernel::Transpose) {
        let cands = &tile_cands;
        fn tiles<T: Elem>(
            g: &Gpu,
            cands: &[TransposeConfig],
            (rows, cols, led): (usize, usize, bool),
            r: usize,
            rng: &mut Rng,
        ) -> Vec<Tried> {
            cands
                .iter()
                .map(|&cfg| {
                    let name = cfg.to_string();
                    // checked at a shape of the same kind (led or not) as the timed one
                    let check_rows = if led { 63 } else { 64 };
                    let check = run_tile::<T>(Some(g), cfg, (check_rows, 65), rng);
                    let t = match check {
                        Ok(v) if v.ok => bench_tile::<T>(g, cfg, (rows, cols), r, rng)
                            .map(|mut t| {
                                t.config = Some(name.clone());
                                t
                            })
                            .map_err(|e| e.to_string()),
                        Ok(v) => Err(v.line),
                        Err(e) => Err(e.to_string()),
                    };
                    (name, t)
                })
                .collect()
        }
        type Tiles =
            fn(&Gpu, &[TransposeConfig], (usize, usize, bool), usize, &mut Rng) -> Vec<Tried>;
        let each: [(&str, Tiles); 3] = [
            (f32::NAME, tiles::<f32>),
            (f16::NAME, tiles::<f16>),
            (bf16::NAME, tiles::<bf16>),
        ];
        for shape @ (rows, cols, led) in TUNE_TRANSPOSE {
            for (dtype, tiles) in each {
                let what = format!("transpose_{dtype} {rows}x{cols}");
                p.set_what(&format!("tune {what}"));
                let tried = tiles(&g, cands, shape, r, &mut rng);
                let default = TransposeConfig::default_for(dtype, led).to_string();
                let key = (Tile::cache_kernel(led), dtype, 0);
                failed |= settle(&mut p, &device, (&what, key), &tried, &default, &mut found);
            }
        }
    }
    p.finish();
    let n = found.len();
    for e in found {
        cache.record(e);
    }
    if let Err(e) = cache.save() {
        eprintln!("tessel tune: {e}");
        return ExitCode::FAILURE;
    }
    println!("recorded {n} choices for {device} in {}", path.display());
    if failed {
        println!("some candidates failed (above): not chosen");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
