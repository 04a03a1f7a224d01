//! `tessel run`: each job checked on the GPU against its host execution (and without a GPU, the
//! host executions alone).

use super::*;

/// Runs one check; `tuned` has the configurations the jobs that name none use.
/// RMSNorm's configuration for rows of `c` elements: `w` warps per row where given (staging in
/// all the shared memory a block may have), else the tuned one, else the default.
pub(super) fn rms_config<T: RmsElem>(
    gpu: Option<&Gpu>,
    tuned: &Tuned,
    c: usize,
    w: Option<i64>,
) -> RmsConfig {
    match w {
        Some(warps) => RmsConfig {
            warps,
            smem: gpu.map_or(232_448, |g| g.rmsnorm_smem()),
        },
        None => tuned.rms::<T>(gpu, c as i64).0,
    }
}

/// One check of `tessel run` on `gpu` (the first of `devs` for a sharded one), or as host
/// executions where there is none.
pub(super) fn check(
    gpu: Option<&Gpu>,
    devs: Option<&Devices>,
    tuned: &Tuned,
    job: &Job,
    rng: &mut Rng,
) -> Result<Verdict, GpuError> {
    fn sharded<T: RmsElem + CommElem>(
        (gpu, devs): (Option<&Gpu>, Option<&Devices>),
        tuned: &Tuned,
        (r, c, w, n): (usize, usize, Option<i64>, usize),
        rng: &mut Rng,
    ) -> Result<Verdict, GpuError> {
        let cfg = rms_config::<T>(gpu, tuned, c, w);
        host::collectives::sharded::run_rmsnorm_sharded::<T>(devs, n, (r, c), Some(cfg), rng)
    }
    fn typed<T: Elem>(
        gpu: Option<&Gpu>,
        tuned: &Tuned,
        job: &Job,
        rng: &mut Rng,
    ) -> Result<Verdict, GpuError> {
        fn rms<T: RmsElem>(
            gpu: Option<&Gpu>,
            tuned: &Tuned,
            (r, c, w): (usize, usize, Option<i64>),
            rng: &mut Rng,
        ) -> Result<Verdict, GpuError> {
            let cfg = rms_config::<T>(gpu, tuned, c, w);
            jobs::run_rmsnorm::<T>(gpu, r, c, Some(cfg), rng)
        }
        match *job {
            Job::Copy(_, n, cfg) => {
                let cfg = cfg.unwrap_or_else(|| tuned.copy(T::NAME).0);
                jobs::run_copy::<T>(gpu, n, cfg, rng)
            }
            Job::Transpose(_, m, r, c) => {
                let cfg = match m.and_then(SmemArg::tile) {
                    Some(t) => TransposeConfig::tile(t),
                    None => tuned.transpose(T::NAME, led::<T>(Tile::Pad, r)).0,
                };
                run_tile::<T>(gpu, cfg, (r, c), rng)
            }
            Job::Rmsnorm(RmsDtype::F32, r, c, w) => rms::<f32>(gpu, tuned, (r, c, w), rng),
            Job::Rmsnorm(RmsDtype::Bf16, r, c, w) => rms::<bf16>(gpu, tuned, (r, c, w), rng),
            Job::Attention(d, sizes, causal, a) => {
                let shape = host::checks::attention::Shape::of(sizes, causal);
                use host::jobs::attention::run_attention;
                match d {
                    GemmDtype::Bf16 => run_attention::<bf16>(gpu, shape, a, rng),
                    GemmDtype::F16 => run_attention::<f16>(gpu, shape, a, rng),
                }
            }
            Job::Sharded(..) | Job::GemmSplit(..) => {
                unreachable!("check runs the jobs over several GPUs")
            }
            Job::Axpby(RmsDtype::F32, r, c) => joined(jobs::run_axpby::<f32>(gpu, r, c, rng)),
            Job::Axpby(RmsDtype::Bf16, r, c) => joined(jobs::run_axpby::<bf16>(gpu, r, c, rng)),
            Job::Gemm(d, f32_out, mnk) => {
                // beta zero and nonzero: alternate by the seed's stream
                let bz = rng.next_u64().is_multiple_of(2);
                match (d, f32_out) {
                    (GemmDtype::Bf16, false) => gemm::run_gemm::<bf16, bf16>(gpu, mnk, bz, rng),
                    (GemmDtype::Bf16, true) => gemm::run_gemm::<bf16, f32>(gpu, mnk, bz, rng),
                    (GemmDtype::F16, false) => gemm::run_gemm::<f16, f16>(gpu, mnk, bz, rng),
                    (GemmDtype::F16, true) => gemm::run_gemm::<f16, f32>(gpu, mnk, bz, rng),
                }
            }
        }
    }
    /// Several checks as one verdict: one line each, passed when all passed.
    fn joined(v: Result<Vec<Verdict>, GpuError>) -> Result<Verdict, GpuError> {
        let v = v?;
        Ok(Verdict {
            skipped: false,
            ok: v.iter().all(|v| v.ok),
            line: v
                .iter()
                .map(|v| v.line.as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        })
    }
    if let Job::GemmSplit(d, p) = job {
        use host::collectives::tp_gemm::run_gemm_split;
        return match (d, p.split) {
            (GemmDtype::Bf16, Split::K) => run_gemm_split::<bf16, f32>(devs, p, rng),
            (GemmDtype::Bf16, _) => run_gemm_split::<bf16, bf16>(devs, p, rng),
            (GemmDtype::F16, Split::K) => run_gemm_split::<f16, f32>(devs, p, rng),
            (GemmDtype::F16, _) => run_gemm_split::<f16, f16>(devs, p, rng),
        };
    }
    match *job {
        Job::Sharded(RmsDtype::F32, r, c, w, n) => {
            sharded::<f32>((gpu, devs), tuned, (r, c, w, n), rng)
        }
        Job::Sharded(RmsDtype::Bf16, r, c, w, n) => {
            sharded::<bf16>((gpu, devs), tuned, (r, c, w, n), rng)
        }
        Job::Copy(Dtype::F16, ..) | Job::Transpose(Dtype::F16, ..) => {
            typed::<f16>(gpu, tuned, job, rng)
        }
        Job::Copy(Dtype::Bf16, ..) | Job::Transpose(Dtype::Bf16, ..) => {
            typed::<bf16>(gpu, tuned, job, rng)
        }
        _ => typed::<f32>(gpu, tuned, job, rng),
    }
}

/// `tessel run KERNEL [SIZES] [--dtype] [--smem] [--seed] [--device]`.
pub fn run(a: RunArgs) -> ExitCode {
    let mut plan = match plan(&a) {
        Ok(p) => p,
        Err((kind, msg)) => return crate::usage_error("run", kind, msg),
    };
    let gpus = a.gpus as usize;
    let (rank, seed) = match started_as(gpus, a.on.seed) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if a.process_per_gpu && rank.is_none() {
        match crate::ranks::spawn(gpus, seed) {
            Ok(code) => return code,
            Err(why) => println!("one process per GPU not started ({why}): one process"),
        }
    }
    let replay = format!("seed {seed} (--seed {seed} replays this run)");
    let opened = match (&rank, gpus) {
        (Some(r), _) => {
            Devices::open_rank(r.rank, r.world, &r.id, built_ptx::PTX).map(Opened::Many)
        }
        (None, 1) => Gpu::open(a.on.device, built_ptx::PTX).map(Opened::One),
        (None, _) => Devices::open(gpus, built_ptx::PTX).map(Opened::Many),
    };
    match &opened {
        Ok(o) => println!(
            "device: {}{} ({}, {} SMs); {replay}",
            match (&rank, gpus) {
                (Some(r), _) => format!("rank {} of {}: ", r.rank, r.world),
                (None, 1) => String::new(),
                (None, _) => format!("{gpus} x "),
            },
            o.first().name(),
            o.first().arch(),
            o.first().sms()
        ),
        Err(e) if absent(e) => println!("{e}: running the host executions only; {replay}"),
        Err(e) => {
            println!("the GPU could not be used ({e}): running the host executions only; {replay}")
        }
    }
    let gpu = opened.as_ref().ok().map(Opened::first);
    let devs = opened.as_ref().ok().and_then(Opened::devices);
    let tuned = Tuned::open(gpu);
    if let Some(line) = tuned.line() {
        println!("{line}");
    }
    // without GPUs a plan in windows has the host executions of the same plan without
    if devs.is_none() {
        plan.retain(|j| !matches!(j, Job::GemmSplit(_, p) if p.windows));
    }
    let mut rng = Rng::new(seed);
    let (mut failed, mut skipped) = (0, 0);
    // each check's verdict a step; on a terminal the check under way and the time left
    let mut p = Progress::new(plan.len(), "run");
    for job in &plan {
        p.set_what(&job.name());
        match check(gpu, devs, &tuned, job, &mut rng) {
            Ok(v) => {
                p.step(&v.line);
                failed += usize::from(!v.ok);
                skipped += usize::from(v.skipped);
            }
            Err(e) => {
                p.step(&format!("{}: FAIL {e}", job.name()));
                failed += 1;
            }
        }
    }
    p.finish();
    if failed > 0 {
        println!("{failed} of {} checks FAILED", plan.len());
        return ExitCode::FAILURE;
    }
    match opened {
        Ok(Opened::One(_)) => {
            println!("all {} checks passed on the GPU", plan.len());
            ExitCode::SUCCESS
        }
        Ok(Opened::Many(_)) if skipped > 0 => {
            let ran = plan.len() - skipped;
            println!("all {ran} checks run passed on {gpus} GPUs; {skipped} not run (said above)");
            ExitCode::SUCCESS
        }
        Ok(Opened::Many(_)) => {
            println!("all {} checks passed on {gpus} GPUs", plan.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            let ran = plan.len() - skipped;
            if skipped > 0 {
                let passed = if ran > 0 {
                    format!("all {ran} host executions passed")
                } else {
                    "no host execution ran".to_string()
                };
                println!(
                    "{passed}, {skipped} checks not run (beyond the host executions' sizes); NOT run on a GPU ({e})"
                );
            } else {
                println!("all {ran} host executions passed; NOT run on a GPU ({e})");
            }
            if absent(&e) {
                ExitCode::from(NO_GPU)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Checks the transpose of `rows x cols` elements of `T` in configuration `cfg` against its host
/// execution.
pub(super) fn run_tile<T: Elem>(
    gpu: Option<&Gpu>,
    cfg: TransposeConfig,
    rc: (usize, usize),
    rng: &mut Rng,
) -> Result<Verdict, GpuError> {
    let k = (cfg.carveout, cfg.resident);
    match cfg.tile {
        Tile::Pad => jobs::run_transpose::<T, Padded<T>>(gpu, rc, k, rng),
        Tile::Swizzle => jobs::run_transpose::<T, Swizzled<T>>(gpu, rc, k, rng),
        Tile::Pairs => jobs::run_transpose::<T, Paired<T>>(gpu, rc, k, rng),
        Tile::Quads => jobs::run_transpose::<T, Quads<T>>(gpu, rc, k, rng),
    }
}
