//! `tessel ptx`, `tessel run`, `tessel bench`, `tessel tune`: their arguments and the plan of
//! jobs, every combination checked before anything runs ([`args`]), and each command in a file of
//! its own ([`ptx`], [`run`], [`bench`], [`tune`]); here what they share (the tuner's choices for
//! the device, the device or devices opened).

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Args, ValueEnum};
use half::{bf16, f16};
use host::arch::Arch;
use host::collectives::comm::{CommElem, Devices};
use host::collectives::tp_gemm::{Plan, Sharing, Split};
use host::elem::RmsElem;
use host::elem::{Elem, Paired, Quads, Rng, TransposeTile};
use host::jobs::gemm;
use host::jobs::{self, Timing, Verdict};
use host::runtime::gpu::{Gpu, GpuError};
use host::tune::{Cache, CopyConfig, DeviceId, Entry, RmsConfig, Tile, TransposeConfig, VEC_ATOMS};
use tessel::ptx as built_ptx;
use tessel_gpu::rmsnorm::WARPS;
use tessel_gpu::transpose::{Padded, Swizzled};

const NO_GPU: u8 = 3;

mod args;
mod bench;
mod progress;
mod ptx;
mod run;
mod tune;

pub use args::{BenchArgs, PtxArgs, RunArgs, BENCH_HELP, PTX_HELP, RUN_HELP};
pub use bench::bench;
pub use ptx::ptx;
pub use run::run;
pub use tune::{tune, TuneArgs, TUNE_HELP};

use args::*;
use bench::*;
use progress::Progress;
use run::*;

/// The tuner's choices for the device of this run: the cache's entries for it, or none (no GPU,
/// no cache file, or one that does not read: then the defaults, and a line saying why).
struct Tuned {
    device: Option<DeviceId>,
    cache: Option<Cache>,
    /// What to print about the cache, if anything.
    note: Option<String>,
}

impl Tuned {
    fn open(g: Option<&Gpu>) -> Self {
        let Some(g) = g else {
            return Tuned {
                device: None,
                cache: None,
                note: None,
            };
        };
        let device = g.device_id();
        let (cache, note) = match Cache::default_path().map(|p| Cache::load(&p)) {
            None => (None, Some("tune cache: no HOME, XDG_CACHE_HOME or TESSEL_TUNE_CACHE: the default configurations".to_string())),
            Some(Err(e)) => (None, Some(format!("tune cache not read ({e}): the default configurations"))),
            Some(Ok(c)) => {
                let key = device.key();
                let n = c.entries().iter().filter(|e| e.device == key).count();
                let note = format!(
                    "tune cache {}: {n} choices for this device{}",
                    c.path().display(),
                    if n == 0 { " (tessel tune makes them); the default configurations" } else { "" }
                );
                (Some(c), Some(note))
            }
        };
        Tuned {
            device: Some(device),
            cache,
            note,
        }
    }

    fn line(&self) -> Option<&str> {
        self.note.as_deref()
    }

    fn lookup(&self, kernel: &str, dtype: &str, n: i64) -> Option<&Entry> {
        self.cache
            .as_ref()?
            .lookup(self.device.as_ref()?, kernel, dtype, n)
    }

    /// RMSNorm's configuration for rows of `n` elements of `T`, and whether it is the tuned one
    /// (its staging capped at what the device allows now).
    fn rms<T: RmsElem>(&self, g: Option<&Gpu>, n: i64) -> (RmsConfig, bool) {
        let smem = g.map_or(232_448, |g| g.rmsnorm_smem());
        match self
            .lookup("rmsnorm", T::NAME, n)
            .and_then(|e| e.config.parse::<RmsConfig>().ok())
        {
            Some(c) => (
                RmsConfig {
                    smem: c.smem.min(smem),
                    ..c
                },
                true,
            ),
            None => (RmsConfig::default_for::<T>(n, smem), false),
        }
    }

    /// The copy's configuration for `dtype`, and whether it is the tuned one.
    fn copy(&self, dtype: &str) -> (CopyConfig, bool) {
        match self
            .lookup("copy", dtype, 0)
            .and_then(|e| e.config.parse::<CopyConfig>().ok())
        {
            Some(c) => (c, true),
            None => (CopyConfig::DEFAULT, false),
        }
    }

    /// The transpose's configuration for `dtype` and output rows that are whole sectors or not
    /// (`led`), and whether it is the tuned one.
    fn transpose(&self, dtype: &str, led: bool) -> (TransposeConfig, bool) {
        match self
            .lookup(Tile::cache_kernel(led), dtype, 0)
            .and_then(|e| e.config.parse::<TransposeConfig>().ok())
        {
            Some(t) => (t, true),
            None => (TransposeConfig::default_for(dtype, led), false),
        }
    }
}

/// The GPUs a run opened: one, or GPUs `0..N` with their NCCL communicators (`--gpus N`).
enum Opened {
    One(Gpu),
    Many(Devices),
}

impl Opened {
    /// The GPU the one-GPU checks run on.
    fn first(&self) -> &Gpu {
        match self {
            Opened::One(g) => g,
            Opened::Many(d) => &d.gpus()[0],
        }
    }
    fn devices(&self) -> Option<&Devices> {
        match self {
            Opened::One(_) => None,
            Opened::Many(d) => Some(d),
        }
    }
}

/// `tuned` or `default`, as bench rows say where their configuration came from.
fn source(tuned: bool) -> &'static str {
    if tuned {
        "tuned"
    } else {
        "default"
    }
}

/// Is the GPU absent (no driver, no device, no PTX for it) rather than present and failing?
fn absent(e: &GpuError) -> bool {
    matches!(
        e,
        GpuError::NoDriver | GpuError::NoDevice(_) | GpuError::NoPtx { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// `tessel run ARGS`'s plan, or its usage error's message.
    fn plan_of(args: &[&str]) -> Result<Vec<Job>, String> {
        let cli = crate::Cli::try_parse_from([&["tessel", "run"], args].concat())
            .map_err(|e| e.to_string())?;
        match cli.command {
            crate::Command::Run(a) => plan(&a).map_err(|(_, m)| m),
            _ => unreachable!("parsed as run"),
        }
    }

    #[test]
    fn every_kernel_and_option() {
        use Dtype::*;
        assert_eq!(
            plan_of(&["copy"]),
            Ok(vec![Job::Copy(F32, 1_000_003, None)])
        );
        assert_eq!(
            plan_of(&["copy", "1_000", "--dtype", "all"]),
            Ok(vec![
                Job::Copy(F32, 1000, None),
                Job::Copy(F16, 1000, None),
                Job::Copy(Bf16, 1000, None)
            ])
        );
        assert_eq!(
            plan_of(&["transpose", "3", "5", "--dtype", "f16", "--smem", "all"]),
            Ok(vec![
                Job::Transpose(F16, Some(SmemArg::Pad), 3, 5),
                Job::Transpose(F16, Some(SmemArg::Swizzle), 3, 5),
                Job::Transpose(F16, Some(SmemArg::Pairs), 3, 5),
                Job::Transpose(F16, Some(SmemArg::Quads), 3, 5)
            ])
        );
        assert_eq!(
            plan_of(&["transpose"]),
            Ok(vec![Job::Transpose(F32, None, 1031, 2053)])
        );
        assert_eq!(
            plan_of(&["rmsnorm", "3", "16", "--dtype", "all"]),
            Ok(vec![
                Job::Rmsnorm(RmsDtype::F32, 3, 16, None),
                Job::Rmsnorm(RmsDtype::Bf16, 3, 16, None)
            ])
        );
        assert_eq!(
            plan_of(&["rmsnorm", "--dtype", "bf16"]),
            Ok(vec![Job::Rmsnorm(RmsDtype::Bf16, 14, 4096, None)])
        );
        assert_eq!(
            plan_of(&["rmsnorm", "5", "64", "--warps", "4"]),
            Ok(vec![Job::Rmsnorm(RmsDtype::F32, 5, 64, Some(4))])
        );
        assert_eq!(
            plan_of(&["rmsnorm", "--warps", "all"]),
            Ok(WARPS
                .iter()
                .map(|&w| Job::Rmsnorm(RmsDtype::F32, 14, 4096, Some(w)))
                .collect())
        );
        assert_eq!(plan_of(&["all", "--seed", "3"]).map(|p| p.len()), Ok(220));
        assert_eq!(
            plan_of(&["rmsnorm", "6", "64", "--gpus", "2", "--dtype", "bf16"]),
            Ok(vec![Job::Sharded(RmsDtype::Bf16, 6, 64, None, 2)])
        );
        // each split in ordinary memory, then in symmetric windows
        let split = |s: Split, chunks: usize, windows: bool| {
            let p = Plan::new(s, 2, [64, 32, 16], chunks).unwrap();
            Job::GemmSplit(GemmDtype::Bf16, p.in_windows(windows))
        };
        assert_eq!(
            plan_of(&["gemm", "64", "32", "16", "--gpus", "2"]),
            Ok([Split::Rows, Split::Cols, Split::K]
                .into_iter()
                .flat_map(|s| [split(s, 1, false), split(s, 1, true)])
                .collect())
        );
        assert_eq!(
            plan_of(&["gemm", "64", "32", "16", "--gpus", "2", "--split", "k", "--chunks", "4"]),
            Ok(vec![split(Split::K, 4, false), split(Split::K, 4, true)])
        );
        assert_eq!(
            plan_of(&["gemm", "4095", "4097", "1023", "--dtype", "f16"]),
            Ok(vec![
                Job::Gemm(GemmDtype::F16, false, [4095, 4097, 1023]),
                Job::Gemm(GemmDtype::F16, true, [4095, 4097, 1023])
            ])
        );
    }

    /// `tessel run all` checks every kernel of the registry (a new kernel needs its check).
    #[test]
    fn run_all_covers_the_registry() {
        let ran: std::collections::HashSet<String> =
            everything().iter().flat_map(Job::entries).collect();
        for k in tessel_gpu::KERNELS
            .iter()
            .chain(tessel_gpu::GEMM_KERNELS)
            .map(|k| k.name)
        {
            assert!(ran.contains(k), "tessel run all does not check {k}");
        }
    }

    #[test]
    fn meaningless_combinations_are_refused() {
        let refused = [
            (
                &["rmsnorm", "3", "16", "--dtype", "f16"][..],
                "rmsnorm has no f16 kernel (f32, bf16)",
            ),
            (&["rmsnorm", "3", "12"], "multiple of 8"),
            (&["rmsnorm", "3", "16", "--smem", "pad"], "--smem"),
            (&["copy", "--smem", "swizzle"], "--smem"),
            (&["all", "--dtype", "f32"], "--dtype"),
            (&["all", "--smem", "pad"], "--smem"),
            (&["all", "--warps", "2"], "--warps"),
            (
                &["copy", "--warps", "2"],
                "--warps is RMSNorm's warps per row",
            ),
            (&["all", "5"], "no SIZES"),
            (&["copy", "1", "2"], "copy takes 1 size (N), got 2"),
            (
                &["transpose", "4"],
                "transpose takes 2 sizes (ROWS COLS), got 1",
            ),
            (
                &["rmsnorm", "1", "8", "8"],
                "rmsnorm takes 2 sizes (M N), got 3",
            ),
            (&["transpose", "4194241", "1"], "ROWS <= 4194240"),
            (&["copy", "4294967297"], "2^32"),
            (&["transpose", "4194240", "4194240"], "2^32"),
            (&["rmsnorm", "18446744073709551615", "16"], "2^32"),
            (
                &[],
                "run needs a KERNEL: copy, transpose, rmsnorm, axpby, gemm, attention or all",
            ),
        ];
        for (args, want) in refused {
            let e = plan_of(args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        assert!(plan_of(&["copy", "4294967296"]).is_ok());
        assert!(plan_of(&["transpose", "4194240", "1"]).is_ok());
    }

    #[test]
    fn bad_values_are_refused_by_the_parser() {
        for args in [
            &["copy", "0"][..],
            &["copy", "-3"],
            &["copy", "1.5"],
            &["copy", "x"],
            &["copy", "99999999999999999999999"],
            &["transpose", "4", "0"],
            &["gemm", "1", "2"],
            &["gemm", "1", "2", "3", "--smem", "pad"],
            &["copy", "--dtype", "f64"],
            &["transpose", "--smem", "none"],
            &["rmsnorm", "--warps", "3"],
            &["rmsnorm", "--warps", "32"],
            &["copy", "--seed", "-1"],
            &["copy", "--reps", "5"],
            &["copy", "--arch", "sm_90"],
        ] {
            assert!(plan_of(args).is_err(), "{args:?} accepted");
        }
    }

    #[test]
    fn the_help_names_the_default_tiles() {
        assert_eq!(Tile::default_for("f32", false), Tile::Pairs);
        assert_eq!(
            TransposeConfig::default_for("f32", false).to_string(),
            "pairs/r3"
        );
        assert_eq!(TransposeConfig::default_for("f32", true).to_string(), "pad");
        assert_eq!(Tile::default_for("bf16", false), Tile::Quads);
        assert_eq!(Tile::default_for("f32", true), Tile::Pad);
        assert_eq!(Tile::default_for("f16", true), Tile::Pairs);
        assert!(RUN_HELP.contains("else pairs with"), "{RUN_HELP}");
        assert!(RUN_HELP.contains("16-bit quads"), "{RUN_HELP}");
        assert!(RUN_HELP.contains("pad (16-bit pairs) where"), "{RUN_HELP}");
    }

    #[test]
    fn sizes_multiply_within_the_grid_limit() {
        assert_eq!(MAX_TRANSPOSE_ROWS.div_ceil(64), 65535);
        let tiles = tessel_gpu::transpose::Transpose::<f32, Padded<f32>>::tiles([
            MAX_TRANSPOSE_ROWS as i64,
            1,
        ]);
        assert_eq!(tiles, [65535, 1]);
    }
}
