//! `tessel ptx`, `tessel run`, `tessel bench`: their arguments, every combination checked before
//! anything runs, and what they do.

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
use tessel::ptx;
use tessel_gpu::rmsnorm::WARPS;
use tessel_gpu::transpose::{Padded, Swizzled};

const NO_GPU: u8 = 3;

pub const PTX_HELP: &str = "\
The PTX is built into the binary for the archs in TESSEL_ARCH (default sm_90,sm_90a; sm_80 or newer,
sm_90a-style arch-specific ones too).

Exit status: 0 printed, 2 bad arguments (an arch that is not sm_XX, or older than sm_80), 3 no PTX
built for that arch.";

pub const RUN_HELP: &str = "\
KERNEL and its SIZES (positive integers, `_` separators allowed, at most 2^32 elements):
  copy [N]               default 1000003; --dtype f32|f16|bf16|all (the tuned configuration,
                         else the default)
  transpose [ROWS COLS]  default 1031 2053; ROWS at most 4194240 (65535 blocks of 64 rows);
                         --dtype f32|f16|bf16|all, --smem pad|swizzle|pairs|quads|all, as many
                         blocks per SM as fit (default: the tuned configuration, else pairs with
                         3 blocks per SM (16-bit quads); pad (16-bit pairs) where the output's
                         rows are not whole 32-byte sectors, e.g. odd ROWS: the led kernels)
  rmsnorm [M N]          default 14 4096; N a multiple of 8; --dtype f32|bf16|all (f32 and bf16);
                         --warps 1|2|4|8|16|all (warps per row; default: the tuned configuration
                         for N, else by N); --gpus N splits the rows over GPUs 0..N (M a multiple
                         of N): each GPU normalizes its shard, an NCCL all-gather rebuilds the
                         batch on every GPU, checked bit for bit against one GPU's result
  axpby [M N]            default 1000 1000; y = 1.5 x - 0.75 y over five layouts (row-major,
                         padded, padded with unaligned rows, column-major, a block of a larger
                         matrix); --dtype f32|bf16|all
  gemm [M N K]           default 1000 1000 1000; C = alpha A B^T + beta C (A MxK, B NxK, C MxN,
                         row-major) on the tensor cores; --dtype bf16|f16|all (the inputs; each
                         into its own type and into f32); checked against the f64 reference
                         (sampled rows past 2^30 multiply-adds), the host execution (up to 2^25)
                         and cuBLAS (every element) within proven error bounds; --gpus N
                         splits it over GPUs 0..N (--split rows: A by rows, C all-gathered;
                         cols: B by rows, C all-gathered then copied into place; k: A and B
                         along K, the f32 partial sums reduce-scattered by rows; all, the
                         default), in --chunks J chunks of C's rows (default 1), each split
                         twice: the collectives' tensors in ordinary memory (NCCL's kernels)
                         and in NCCL's symmetric windows (2.28+: the copy engines where NCCL
                         can); each GPU's C checked bit for bit against one GPU's result (k:
                         against the f64 reference)
  all                    every kernel, dtype, tile and warps per row at ragged and large sizes (no
                         SIZES, --dtype, --smem or --warps)

Fresh random input (the seed is printed: --seed N replays the run), a NaN-poisoned output, the
kernel on the GPU against the host execution of the same partitioning code; one line per check.
Without a GPU (or without PTX for it), runs the host executions only. What `tessel tune` recorded
for this device (`tessel help tune`) is used where no tile or warps are given.

Exit status: 0 all passed on the GPU, 1 a check failed (or the GPU could not be used), 2 bad
arguments, 3 no GPU or no PTX for it (the host executions passed).";

pub const BENCH_HELP: &str = "\
Median time of --reps runs (CUDA events) after 5 warm-ups, beside cuMemcpyDtoD of the same bytes in
the same run: rmsnorm 16384x4096, 16384x12288 and 4096x32768 (bf16, f32; in the tuned
configuration, else the default, the last column says which); axpby 8192x8192 (bf16, f32; 3 bytes
moved per element byte); copy 2^26 f32, 2^27 bf16, 2^26+5 f32 (the tuned
configuration, and the default beside it); transpose 8192x8192 (pad, swizzle,
pairs and quads, each dtype) and 8191x8193 (each tile and dtype, the led kernels of pad, swizzle
and pairs), each tile with as many blocks per SM as fit; the configuration run uses marked
`chosen`, or timed after them where it sets a carveout or blocks per SM; gemm bf16 4096^3 and 8192^3 (or the SIZES given, triples M N K) in TFLOP/s beside cuBLAS on the same inputs
and the mma.sync ceiling (a register-only microbenchmark, 8 and 1 blocks of 8 warps per SM).

--gpus N (N >= 2): no KERNEL times NCCL's all-reduce (2^20 and 2^26 elements, f32 and bf16; algbw
and busbw); gemm times the split GEMM's weak scaling: each GPU's work M N K (default 8192^3) on
GPU 0 alone, against the work of N GPUs split over them (--split rows|cols|k|all, default rows),
collectives included, in one chunk and in --chunks J (default 4) whose collectives run beside the
next chunk's GEMMs; each with the collectives' tensors in ordinary memory (NCCL's kernels;
--comm-sms S: the chunks' GEMMs in persistent clusters leaving S SMs to NCCL, default a cluster per
pair of tiles) and in NCCL's symmetric windows (NCCL 2.28+ gathers on the copy engines, the GEMMs
on every SM). Efficiency = 1-GPU time / split time.

Exit status: 0 all timed, 1 a kernel failed to run (or the GPU could not be used), 2 bad
arguments, 3 no GPU or no PTX for it.";

/// A kernel, or all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Kernel {
    /// `copy_{f32,f16,bf16}`
    Copy,
    /// `transpose_{pad,swizzle,pairs,quads}_{f32,f16,bf16}` (and `transpose_{pad,swizzle,pairs}_led_*`)
    Transpose,
    /// `rmsnorm_{f32,bf16}`
    Rmsnorm,
    /// `axpby_{f32,bf16}`
    Axpby,
    /// `gemm_{bf16,f16}_{in,f32}` (tensor cores)
    Gemm,
    /// every kernel
    All,
}

impl Kernel {
    /// As the command line names it.
    fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "copy",
            Kernel::Transpose => "transpose",
            Kernel::Rmsnorm => "rmsnorm",
            Kernel::Axpby => "axpby",
            Kernel::Gemm => "gemm",
            Kernel::All => "all",
        }
    }
}

/// `--dtype`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DtypeArg {
    F32,
    F16,
    Bf16,
    /// every type the kernel has
    All,
}

/// `--split`: how a GEMM over several GPUs is split.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SplitArg {
    /// A by rows; C all-gathered
    Rows,
    /// B by rows (C by columns); C all-gathered, then copied into place
    Cols,
    /// A and B along K; the f32 partial sums reduce-scattered by rows
    K,
    /// all three
    All,
}

/// The options of a GEMM over several GPUs.
#[derive(Args)]
pub struct SplitOpts {
    /// gemm over --gpus N: how A, B and C are split [default: all in run, rows in bench]
    #[arg(long, value_enum)]
    split: Option<SplitArg>,
    /// gemm over --gpus N: chunks of C's rows, each chunk's collective beside the next chunk's
    /// GEMMs [default: 1 in run, 4 in bench]
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u32).range(1..=1024))]
    chunks: Option<u32>,
}

/// `--smem`: the transpose's shared tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SmemArg {
    /// `(64,64):(65,1)` (16-bit: `(64,64):(66,1)`)
    Pad,
    /// `Sw<5,0,6> o (64,64):(64,1)` (16-bit: `Sw<5,1,5>`)
    Swizzle,
    /// pairs of adjacent elements per access, through `(2,32,32):(64,130,2)` (pairs `(r % 2, r / 2,
    /// c)`), each thread transposing 2x2 blocks in registers
    Pairs,
    /// quads of adjacent elements per access, through `Sw<4,2,6> o (64,64):(64,1)` (16-bit: a
    /// 128x128 tile, `Sw<4,2,7> o (128,128):(128,1)`), each thread transposing 4x4 blocks in
    /// registers
    Quads,
    /// all four
    All,
}

impl SmemArg {
    /// The tile it names (`None` for all).
    fn tile(self) -> Option<Tile> {
        match self {
            SmemArg::Pad => Some(Tile::Pad),
            SmemArg::Swizzle => Some(Tile::Swizzle),
            SmemArg::Pairs => Some(Tile::Pairs),
            SmemArg::Quads => Some(Tile::Quads),
            SmemArg::All => None,
        }
    }
}

/// `tessel ptx`'s arguments.
#[derive(Args)]
pub struct PtxArgs {
    /// The arch whose PTX to print [default: the first built]
    #[arg(long, value_name = "sm_XX", value_parser = Arch::parse)]
    arch: Option<Arch>,
}

/// The options of every command that runs kernels: the inputs' seed and the device.
#[derive(Args)]
pub struct OnDevice {
    /// Seed of the random inputs [default: a fresh one, printed]
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// CUDA device ordinal
    #[arg(long, value_name = "N", default_value_t = 0)]
    device: usize,
}

/// `tessel run`'s arguments.
#[derive(Args)]
pub struct RunArgs {
    /// copy, transpose, rmsnorm, axpby, gemm or all
    #[arg(value_enum, value_name = "KERNEL", hide_possible_values = true)]
    kernel: Option<Kernel>,
    /// copy: N; transpose: ROWS COLS; rmsnorm: M N (rows, columns)
    #[arg(value_name = "SIZES", value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Element type [default: f32]
    #[arg(long, value_enum)]
    dtype: Option<DtypeArg>,
    /// The transpose's shared tile [default: the tuned configuration, else pairs with 3 blocks
    /// per SM (16-bit: quads), or pad where the output's rows are not whole sectors]
    #[arg(long, value_enum)]
    smem: Option<SmemArg>,
    /// RMSNorm's warps per row [default: the tuned configuration, else by N]
    #[arg(long, value_name = "W", value_parser = ["1", "2", "4", "8", "16", "all"])]
    warps: Option<String>,
    /// GPUs 0..N to split RMSNorm's rows or the GEMM over (NCCL collectives rebuild the result)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    gpus: u32,
    #[command(flatten)]
    split: SplitOpts,
    /// With --gpus N: one process per GPU (N copies of this command, ranks of one NCCL
    /// communicator), their outputs printed rank by rank
    #[arg(long)]
    process_per_gpu: bool,
    #[command(flatten)]
    on: OnDevice,
}

/// `tessel bench`'s arguments.
#[derive(Args)]
pub struct BenchArgs {
    /// copy, transpose, rmsnorm, axpby, gemm or all
    #[arg(value_enum, value_name = "KERNEL", default_value_t = Kernel::All)]
    kernel: Kernel,
    /// gemm only: M N K to time instead of 4096^3 and 8192^3 (several triples allowed)
    #[arg(value_name = "SIZES", value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Timed runs of each kernel (and of the memcpy)
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    reps: u32,
    /// Over GPUs 0..N (N >= 2): no KERNEL times the NCCL all-reduce, gemm the split GEMM's weak
    /// scaling (SIZES: each GPU's M N K)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    gpus: u32,
    #[command(flatten)]
    split: SplitOpts,
    /// gemm over --gpus N: the chunked run's GEMMs on persistent clusters leaving S SMs free for
    /// NCCL's kernels (NCCL_MAX_CTAS=S unless set) [default: a cluster per pair of tiles, the
    /// hardware handing SMs to the GEMM and to NCCL as clusters finish]
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u32).range(1..=128))]
    comm_sms: Option<u32>,
    /// With --gpus N: one process per GPU (N copies of this command, ranks of one NCCL
    /// communicator), their outputs printed rank by rank
    #[arg(long)]
    process_per_gpu: bool,
    #[command(flatten)]
    on: OnDevice,
}

/// The most elements one check moves: the host execution holds several copies of them.
const MAX_ELEMS: usize = 1 << 32;
/// The transpose's most rows: `ceil(ROWS / 64)` blocks along the grid's y, at most 65535.
const MAX_TRANSPOSE_ROWS: usize = 65535 * 64;

/// A size: a positive integer, `_` separators allowed.
fn parse_size(s: &str) -> Result<usize, String> {
    match s.replace('_', "").parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("a size is a positive integer".into()),
    }
}

/// An element type of the copies and transposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Dtype {
    F32,
    F16,
    Bf16,
}

impl Dtype {
    fn name(self) -> &'static str {
        match self {
            Dtype::F32 => f32::NAME,
            Dtype::F16 => f16::NAME,
            Dtype::Bf16 => bf16::NAME,
        }
    }
    /// Whether the transpose of `rows` rows of this type through `tile` runs its led kernel.
    fn led(self, tile: Tile, rows: usize) -> bool {
        match self {
            Dtype::F32 => led::<f32>(tile, rows),
            Dtype::F16 => led::<f16>(tile, rows),
            Dtype::Bf16 => led::<bf16>(tile, rows),
        }
    }
}

/// Whether the transpose of `rows` rows of `T` through `tile` runs its led kernel
/// (`TransposeTile::led`): the output the CLI makes is `(cols, rows):(rows, 1)`.
fn led<T: Elem>(tile: Tile, rows: usize) -> bool {
    let r = rows as i64;
    match tile {
        Tile::Pad => <Padded<T> as TransposeTile<T>>::led(r, r),
        Tile::Swizzle => <Swizzled<T> as TransposeTile<T>>::led(r, r),
        Tile::Pairs => <Paired<T> as TransposeTile<T>>::led(r, r),
        Tile::Quads => <Quads<T> as TransposeTile<T>>::led(r, r),
    }
}

/// The tile `--smem` names for one check, else the default for the shape (no tuning),
/// and whether its led kernel runs.
fn tile_of(d: Dtype, m: Option<SmemArg>, rows: usize) -> (Tile, bool) {
    let tile = match m.and_then(SmemArg::tile) {
        Some(t) => t,
        None => Tile::default_for(d.name(), d.led(Tile::Pad, rows)),
    };
    (tile, d.led(tile, rows))
}

/// An element type of RMSNorm (there is no f16 kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RmsDtype {
    F32,
    Bf16,
}

impl RmsDtype {
    fn name(self) -> &'static str {
        match self {
            RmsDtype::F32 => "f32",
            RmsDtype::Bf16 => "bf16",
        }
    }
}

/// One check of `tessel run`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Job {
    /// The configuration: `None` for the tuned one, else the default.
    Copy(Dtype, usize, Option<CopyConfig>),
    /// The shared tile: `None` for the tuned one, else the default (`Tile::default_for`).
    Transpose(Dtype, Option<SmemArg>, usize, usize),
    /// Warps per row: `None` for the tuned or default configuration.
    Rmsnorm(RmsDtype, usize, usize, Option<i64>),
    /// RMSNorm with its rows split over the last field's GPUs (`--gpus`).
    Sharded(RmsDtype, usize, usize, Option<i64>, usize),
    Axpby(RmsDtype, usize, usize),
    /// Inputs f16 (else bf16), output f32 (else the inputs' type), `[M, N, K]`.
    Gemm(GemmDtype, bool, [usize; 3]),
    /// The GEMM over several GPUs (`--gpus`): the output the inputs' type (f32 for the K
    /// split's partial sums).
    GemmSplit(GemmDtype, Plan),
}

/// An input type of the GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum GemmDtype {
    F16,
    Bf16,
}

impl GemmDtype {
    fn name(self) -> &'static str {
        match self {
            GemmDtype::F16 => "f16",
            GemmDtype::Bf16 => "bf16",
        }
    }
}

impl Job {
    /// The PTX entry points the check runs.
    #[cfg(test)]
    fn entries(&self) -> Vec<String> {
        match self {
            Job::Copy(d, _, cfg) => vec![match cfg {
                Some(CopyConfig::Vec { atoms, .. }) if *atoms != tessel_gpu::copy::ATOMS => {
                    format!("copy_a{atoms}_{}", d.name())
                }
                Some(CopyConfig::Bulk { .. }) => format!("bulk_copy_{}", d.name()),
                _ => format!("copy_{}", d.name()),
            }],
            Job::Transpose(d, m, r, _) => {
                let (tile, led) = tile_of(*d, *m, *r);
                let led = if led { "_led" } else { "" };
                vec![format!("transpose_{}{led}_{}", tile.name(), d.name())]
            }
            Job::Rmsnorm(d, _, c, w) | Job::Sharded(d, _, c, w, _) => {
                let w = w.unwrap_or_else(|| match d {
                    RmsDtype::F32 => RmsConfig::default_for::<f32>(*c as i64, 0).warps,
                    RmsDtype::Bf16 => RmsConfig::default_for::<bf16>(*c as i64, 0).warps,
                });
                let d = d.name();
                vec![match w {
                    1 => format!("rmsnorm_{d}"),
                    w => format!("rmsnorm_w{w}_{d}"),
                }]
            }
            Job::Axpby(RmsDtype::F32, ..) => vec!["axpby_f32".into()],
            Job::Axpby(RmsDtype::Bf16, ..) => vec!["axpby_bf16".into()],
            Job::Gemm(d, f32_out, _) => vec![format!(
                "gemm_{}_{}",
                d.name(),
                if *f32_out { "f32" } else { d.name() }
            )],
            Job::GemmSplit(d, p) => vec![format!(
                "gemm_sm90_{}_{}",
                d.name(),
                if p.split == Split::K { "f32" } else { d.name() }
            )],
        }
    }
    /// What the check is, for a line that says it could not run.
    fn name(&self) -> String {
        match self {
            Job::Copy(d, n, None) => format!("copy {} n={n}", d.name()),
            Job::Copy(d, n, Some(c)) => format!("copy {} n={n} {c}", d.name()),
            Job::Transpose(d, m, r, c) => {
                format!(
                    "transpose_{} {} {r}x{c}",
                    tile_of(*d, *m, *r).0.name(),
                    d.name()
                )
            }
            Job::Rmsnorm(d, r, c, None) => format!("rmsnorm {} {r}x{c}", d.name()),
            Job::Rmsnorm(d, r, c, Some(w)) => format!("rmsnorm {} {r}x{c} w{w}", d.name()),
            Job::Sharded(d, r, c, _, n) => format!("rmsnorm {} {r}x{c} over {n} GPUs", d.name()),
            Job::Axpby(RmsDtype::F32, r, c) => format!("axpby f32 {r}x{c}"),
            Job::Axpby(RmsDtype::Bf16, r, c) => format!("axpby bf16 {r}x{c}"),
            Job::Gemm(d, f32_out, [m, n, k]) => format!(
                "gemm {}->{} {m}x{n}x{k}",
                d.name(),
                if *f32_out { "f32" } else { d.name() }
            ),
            Job::GemmSplit(d, p) => {
                let [m, n, k] = p.mnk;
                format!(
                    "gemm {} {m}x{n}x{k} split by {} over {} GPUs in {} chunks",
                    d.name(),
                    p.split.name(),
                    p.gpus,
                    p.chunks
                )
            }
        }
    }
}

/// A bad combination of arguments: clap's kind of error and what is wrong.
type Usage = (ErrorKind, String);

/// The checks `tessel run` makes, or what makes the arguments meaningless; `Ok` only for checks
/// that can run (types a kernel has, sizes it takes).
fn plan(a: &RunArgs) -> Result<Vec<Job>, Usage> {
    let conflict = |m: &str| Err((ErrorKind::ArgumentConflict, m.to_string()));
    let Some(kernel) = a.kernel else {
        return Err((
            ErrorKind::MissingRequiredArgument,
            "run needs a KERNEL: copy, transpose, rmsnorm, axpby, gemm or all".into(),
        ));
    };
    if kernel == Kernel::All {
        if !a.sizes.is_empty() {
            return conflict("run all takes no SIZES: it runs every kernel at its own sizes");
        }
        if a.dtype.is_some() || a.smem.is_some() || a.warps.is_some() || a.gpus > 1 {
            return conflict(
                "run all runs every dtype, tile and warps per row on one GPU: --dtype, --smem, --warps and --gpus do not apply",
            );
        }
        return Ok(everything());
    }
    if a.smem.is_some() && kernel != Kernel::Transpose {
        return conflict(&format!(
            "--smem is the transpose's shared tile: {} has no choice of tile",
            kernel.name()
        ));
    }
    if a.gpus > 1 && kernel != Kernel::Rmsnorm && kernel != Kernel::Gemm {
        return conflict(&format!(
            "--gpus splits RMSNorm and the GEMM over GPUs: {} runs on one GPU",
            kernel.name()
        ));
    }
    if (a.split.split.is_some() || a.split.chunks.is_some())
        && (kernel != Kernel::Gemm || a.gpus < 2)
    {
        return conflict("--split and --chunks split a GEMM over --gpus N (N >= 2)");
    }
    if a.gpus > 1 && a.on.device != 0 {
        return conflict("--gpus N runs on GPUs 0..N: --device does not apply");
    }
    if a.process_per_gpu && a.gpus < 2 {
        return conflict("--process-per-gpu starts a process per GPU of --gpus N (N >= 2)");
    }
    if a.warps.is_some() && kernel != Kernel::Rmsnorm {
        return conflict(&format!(
            "--warps is RMSNorm's warps per row: {} has no such choice",
            kernel.name()
        ));
    }
    let (want, names, default): (usize, &str, &[usize]) = match kernel {
        Kernel::Copy => (1, "size (N)", &[1_000_003]),
        Kernel::Transpose => (2, "sizes (ROWS COLS)", &[1031, 2053]),
        Kernel::Axpby => (2, "sizes (M N)", &[1000, 1000]),
        Kernel::Gemm => (3, "sizes (M N K)", &[1000, 1000, 1000]),
        _ => (2, "sizes (M N)", &[14, 4096]),
    };
    let s = match a.sizes.len() {
        0 => default.to_vec(),
        n if n == want => a.sizes.clone(),
        n => {
            return Err((
                ErrorKind::WrongNumberOfValues,
                format!("{} takes {want} {names}, got {n}", kernel.name()),
            ))
        }
    };
    let invalid = |m: String| Err((ErrorKind::ValueValidation, m));
    // a GEMM's largest matrix is one of M K, N K, M N; the others' one tensor is all sizes
    let elems = if kernel == Kernel::Gemm {
        [(0, 2), (1, 2), (0, 1)]
            .iter()
            .map(|&(i, j)| s[i].checked_mul(s[j]))
            .try_fold(0usize, |a, x| x.map(|x| a.max(x)))
    } else {
        s.iter().try_fold(1usize, |p, &n| p.checked_mul(n))
    };
    match elems {
        Some(n) if n <= MAX_ELEMS => {}
        _ => return invalid(format!("{s:?} is more than 2^32 elements")),
    }
    let dtypes = match a.dtype.unwrap_or(DtypeArg::F32) {
        DtypeArg::F32 => vec![Dtype::F32],
        DtypeArg::F16 => vec![Dtype::F16],
        DtypeArg::Bf16 => vec![Dtype::Bf16],
        DtypeArg::All => vec![Dtype::F32, Dtype::F16, Dtype::Bf16],
    };
    Ok(match kernel {
        Kernel::Copy => dtypes
            .into_iter()
            .map(|d| Job::Copy(d, s[0], None))
            .collect(),
        Kernel::Transpose => {
            if s[0] > MAX_TRANSPOSE_ROWS {
                return invalid(format!(
                    "transpose needs ROWS <= {MAX_TRANSPOSE_ROWS} (65535 blocks of 64 rows), got {}",
                    s[0]
                ));
            }
            let tiles = match a.smem {
                None => vec![None],
                Some(SmemArg::All) => vec![
                    Some(SmemArg::Pad),
                    Some(SmemArg::Swizzle),
                    Some(SmemArg::Pairs),
                    Some(SmemArg::Quads),
                ],
                Some(m) => vec![Some(m)],
            };
            let mut jobs = vec![];
            for d in dtypes {
                jobs.extend(tiles.iter().map(|&m| Job::Transpose(d, m, s[0], s[1])));
            }
            jobs
        }
        Kernel::Axpby => f32_or_bf16(kernel, a.dtype)?
            .into_iter()
            .map(|d| Job::Axpby(d, s[0], s[1]))
            .collect(),
        Kernel::Gemm => {
            let types = match a.dtype {
                Some(DtypeArg::F32) => {
                    return invalid(
                        "gemm's inputs are 16-bit (bf16, f16; the output is that type and f32)"
                            .into(),
                    )
                }
                Some(DtypeArg::F16) => vec![GemmDtype::F16],
                Some(DtypeArg::All) => vec![GemmDtype::Bf16, GemmDtype::F16],
                Some(DtypeArg::Bf16) | None => vec![GemmDtype::Bf16],
            };
            let mut jobs = vec![];
            let mnk = [s[0], s[1], s[2]];
            for d in types {
                if a.gpus > 1 {
                    let chunks = a.split.chunks.unwrap_or(1) as usize;
                    for split in splits(a.split.split.unwrap_or(SplitArg::All)) {
                        let p = Plan::new(split, a.gpus as usize, mnk, chunks)
                            .map_err(|e| (ErrorKind::ValueValidation, e.to_string()))?;
                        // each split with its collectives' tensors in ordinary memory and in
                        // symmetric windows (the copy engines' path)
                        jobs.push(Job::GemmSplit(d, p.clone()));
                        jobs.push(Job::GemmSplit(d, p.in_windows(true)));
                    }
                    continue;
                }
                for f32_out in [false, true] {
                    jobs.push(Job::Gemm(d, f32_out, mnk));
                }
            }
            jobs
        }
        _ => {
            if s[1] % 8 != 0 {
                return invalid(format!("rmsnorm needs N a multiple of 8, got N = {}", s[1]));
            }
            let warps: Vec<Option<i64>> = match a.warps.as_deref() {
                None => vec![None],
                Some("all") => WARPS.into_iter().map(Some).collect(),
                Some(w) => vec![w.parse().ok()],
            };
            let n = a.gpus as usize;
            if s[0] % n != 0 {
                return invalid(format!(
                    "rmsnorm over {n} GPUs needs M a multiple of {n} (equal shards), got M = {}",
                    s[0]
                ));
            }
            let mut jobs = vec![];
            for d in f32_or_bf16(kernel, a.dtype)? {
                jobs.extend(warps.iter().map(|&w| match n {
                    1 => Job::Rmsnorm(d, s[0], s[1], w),
                    n => Job::Sharded(d, s[0], s[1], w, n),
                }));
            }
            jobs
        }
    })
}

/// The splits `--split` names.
fn splits(s: SplitArg) -> Vec<Split> {
    match s {
        SplitArg::Rows => vec![Split::Rows],
        SplitArg::Cols => vec![Split::Cols],
        SplitArg::K => vec![Split::K],
        SplitArg::All => vec![Split::Rows, Split::Cols, Split::K],
    }
}

/// The types `--dtype` asks of a kernel that has f32 and bf16 only (`all`: both).
fn f32_or_bf16(kernel: Kernel, d: Option<DtypeArg>) -> Result<Vec<RmsDtype>, Usage> {
    Ok(match d {
        Some(DtypeArg::F16) => {
            return Err((
                ErrorKind::ValueValidation,
                format!("{} has no f16 kernel (f32, bf16)", kernel.name()),
            ))
        }
        Some(DtypeArg::Bf16) => vec![RmsDtype::Bf16],
        Some(DtypeArg::All) => vec![RmsDtype::F32, RmsDtype::Bf16],
        Some(DtypeArg::F32) | None => vec![RmsDtype::F32],
    })
}

/// `tessel run all`: every kernel, type and tile at ragged and large sizes.
fn everything() -> Vec<Job> {
    let mut plan = vec![];
    for d in [RmsDtype::F32, RmsDtype::Bf16] {
        // every kernel at small and ragged sizes, the chosen one at large
        for (m, n) in [
            (1, 8),
            (14, 1000),
            (37, 2056),
            (3, 12288),
            (5, 32776),
            (3, 163848),
        ] {
            for w in WARPS {
                plan.push(Job::Rmsnorm(d, m, n, Some(w)));
            }
        }
        for (m, n) in [(14, 4096), (16384, 4096), (64, 32768)] {
            plan.push(Job::Rmsnorm(d, m, n, None));
        }
        for (m, n) in [(1, 1), (37, 1000), (1024, 1024), (4099, 4097)] {
            plan.push(Job::Axpby(d, m, n));
        }
    }
    for d in [GemmDtype::Bf16, GemmDtype::F16] {
        for f32_out in [false, true] {
            for mnk in [
                [1, 1, 1],
                [17, 33, 65],
                [1000, 1000, 1000],
                [4095, 4097, 1023],
            ] {
                plan.push(Job::Gemm(d, f32_out, mnk));
            }
        }
    }
    for d in [Dtype::F32, Dtype::F16, Dtype::Bf16] {
        for n in [1, 7, 4096, 1_000_003, (1 << 26) + 5] {
            plan.push(Job::Copy(d, n, None));
        }
        // the other tiles' kernels at a ragged size
        for atoms in VEC_ATOMS
            .into_iter()
            .filter(|&a| a != tessel_gpu::copy::ATOMS)
        {
            let cfg = CopyConfig::Vec {
                atoms,
                per_sm: 0,
                resident: tessel_gpu::copy::RESIDENT,
            };
            plan.push(Job::Copy(d, 1_000_003, Some(cfg)));
        }
        for m in [
            SmemArg::Pad,
            SmemArg::Swizzle,
            SmemArg::Pairs,
            SmemArg::Quads,
        ] {
            for (r, c) in [(1, 1), (63, 65), (1031, 2053), (4096, 4100)] {
                plan.push(Job::Transpose(d, Some(m), r, c));
            }
        }
        // the tuned or default configuration (its carveout and blocks per SM)
        for (r, c) in [(1031, 2053), (4096, 4100)] {
            plan.push(Job::Transpose(d, None, r, c));
        }
    }
    plan
}

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

/// `tessel ptx [--arch sm_XX]`.
pub fn ptx(a: PtxArgs) -> ExitCode {
    let built = ptx::archs();
    let arch = a.arch.map(|a| a.to_string());
    let arch = arch.as_deref().or(built.first().copied());
    match arch.and_then(ptx::for_arch) {
        Some(text) => {
            use std::io::Write;
            // a closed pipe (`tessel ptx | head`) is not an error
            let _ = std::io::stdout().lock().write_all(text.as_bytes());
            ExitCode::SUCCESS
        }
        None if built.is_empty() => {
            eprintln!("tessel ptx: this tessel was built without PTX (TESSEL_NO_PTX=1); rebuild with TESSEL_ARCH={} cargo build", arch.unwrap_or("sm_90"));
            ExitCode::from(NO_GPU)
        }
        None => {
            eprintln!(
                "tessel ptx: no PTX for {} (built: {}); rebuild with TESSEL_ARCH={0} cargo build",
                arch.unwrap_or("sm_90"),
                built.join(", "),
            );
            ExitCode::from(NO_GPU)
        }
    }
}

/// Runs one check; `tuned` has the configurations the jobs that name none use.
/// RMSNorm's configuration for rows of `c` elements: `w` warps per row where given (staging in
/// all the shared memory a block may have), else the tuned one, else the default.
fn rms_config<T: RmsElem>(gpu: Option<&Gpu>, tuned: &Tuned, c: usize, w: Option<i64>) -> RmsConfig {
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
fn check(
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
        (Some(r), _) => Devices::open_rank(r.rank, r.world, &r.id, ptx::PTX).map(Opened::Many),
        (None, 1) => Gpu::open(a.on.device, ptx::PTX).map(Opened::One),
        (None, _) => Devices::open(gpus, ptx::PTX).map(Opened::Many),
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
    for job in &plan {
        match check(gpu, devs, &tuned, job, &mut rng) {
            Ok(v) => {
                println!("{}", v.line);
                failed += usize::from(!v.ok);
                skipped += usize::from(v.skipped);
            }
            Err(e) => {
                println!("{}: FAIL {e}", job.name());
                failed += 1;
            }
        }
    }
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

fn print_timing(t: &Timing) {
    println!(
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
    );
}

/// The RMSNorm sizes `tessel bench` and `tessel tune` time: N = 4096, 12288, 32768, with 2^26
/// elements or more.
const RMS_SIZES: [(usize, usize); 3] = [(16384, 4096), (16384, 12288), (4096, 32768)];

/// The transposes' sizes for `tessel tune`: 8192 x 8192 (output rows of whole sectors) and the
/// ragged 8191 x 8193 (not: the led kernels), and whether they are led.
const TUNE_TRANSPOSE: [(usize, usize, bool); 2] = [(8192, 8192, false), (8191, 8193, true)];

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
    if !a.sizes.is_empty() && (a.kernel != Kernel::Gemm || !a.sizes.len().is_multiple_of(3)) {
        return crate::usage_error(
            "bench",
            ErrorKind::WrongNumberOfValues,
            "bench takes SIZES for gemm only, in triples M N K",
        );
    }
    let g = match Gpu::open(a.on.device, ptx::PTX) {
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
    println!(
        "{:<36} {:>9} {:>9} {:>9} {:>9} {:>8}   [min .. max ms] host us  config",
        "kernel", "ms", "GB/s", "memcpy ms", "GB/s", "of copy"
    );
    let mut rng = Rng::new(seed);
    let r = a.reps as usize;
    let which = |k| a.kernel == k || a.kernel == Kernel::All;
    let mut rows: Vec<Result<Timing, GpuError>> = vec![];
    let mut go = |t: Result<Timing, GpuError>| {
        match &t {
            Ok(t) => print_timing(t),
            Err(e) => println!("error: {e}"),
        }
        rows.push(t);
    };
    if which(Kernel::Rmsnorm) {
        fn rms<T: RmsElem>(
            g: &Gpu,
            tuned: &Tuned,
            (r, rng): (usize, &mut Rng),
            go: &mut dyn FnMut(Result<Timing, GpuError>),
        ) {
            for size in RMS_SIZES {
                let (cfg, from) = tuned.rms::<T>(Some(g), size.1 as i64);
                go(
                    jobs::bench_rmsnorm::<T>(g, size, &[cfg], r, rng).map(|mut t| {
                        let mut t = t.remove(0);
                        t.config = Some(format!("{cfg} ({})", source(from)));
                        t
                    }),
                );
            }
        }
        rms::<bf16>(&g, &tuned, (r, &mut rng), &mut go);
        rms::<f32>(&g, &tuned, (r, &mut rng), &mut go);
    }
    if which(Kernel::Axpby) {
        go(jobs::bench_axpby::<bf16>(&g, 8192, 8192, r, &mut rng));
        go(jobs::bench_axpby::<f32>(&g, 8192, 8192, r, &mut rng));
    }
    if which(Kernel::Gemm) {
        let show = |t: Result<gemm::GemmTiming, GpuError>| match t {
            Ok(t) => {
                println!("{:<36} {:>9.4} {:>9.1} TFLOP/s", t.what, t.ms, t.tflops);
                Ok(t.tflops)
            }
            Err(e) => {
                println!("error: {e}");
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
        for mnk in sizes {
            match gemm::bench_gemm::<bf16, bf16>(&g, mnk, r, &mut rng) {
                Ok(b) => {
                    let blas = match &b.blas {
                        Some(Ok(t)) => Some(t.tflops),
                        _ => None,
                    };
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
                            println!("{:<36} {}", "", vs.join(", "));
                        }
                    }
                }
                Err(e) => {
                    let _ = show(Err(e));
                }
            }
        }
    }
    if which(Kernel::Copy) {
        // the chosen configuration, and the default beside a tuned one
        fn copy<T: Elem>(
            g: &Gpu,
            tuned: &Tuned,
            n: usize,
            (r, rng): (usize, &mut Rng),
            go: &mut dyn FnMut(Result<Timing, GpuError>),
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
                        go(Ok(t));
                    }
                }
                Err(e) => go(Err(e)),
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
            go: &mut dyn FnMut(Result<Timing, GpuError>),
        ) {
            let (chosen, from) = tuned.transpose(T::NAME, led);
            let mark = |t: Result<Timing, GpuError>| {
                t.map(|mut t| {
                    t.config = Some(format!("{chosen} chosen ({})", source(from)));
                    t
                })
            };
            for tile in Tile::ALL {
                let cfg = TransposeConfig::tile(tile);
                let t = bench_tile::<T>(g, cfg, (rows, cols), r, rng);
                go(if cfg == chosen { mark(t) } else { t });
            }
            if chosen != TransposeConfig::tile(chosen.tile) {
                go(mark(bench_tile::<T>(g, chosen, (rows, cols), r, rng)));
            }
        }
        for s in TUNE_TRANSPOSE {
            shape::<f32>(&g, &tuned, s, r, &mut rng, &mut go);
            shape::<f16>(&g, &tuned, s, r, &mut rng, &mut go);
            shape::<bf16>(&g, &tuned, s, r, &mut rng, &mut go);
        }
    }
    if rows.iter().any(|t| t.is_err()) {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The rank this process was started as by `--process-per-gpu` (its copies of the command) and
/// the seed to use (the one the first process chose, else `seed`, else a fresh one); or the
/// exit status of a malformed start.
fn started_as(
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
fn open_for_bench(a: &BenchArgs) -> Result<(Devices, u64), ExitCode> {
    let n = a.gpus as usize;
    let (rank, seed) = started_as(n, a.on.seed)?;
    if a.process_per_gpu && rank.is_none() {
        match crate::ranks::spawn(n, seed) {
            Ok(code) => return Err(code),
            Err(why) => println!("one process per GPU not started ({why}): one process"),
        }
    }
    let devs = match &rank {
        Some(r) => Devices::open_rank(r.rank, r.world, &r.id, ptx::PTX),
        None => Devices::open(n, ptx::PTX),
    };
    devs.map(|d| (d, seed)).map_err(|e| {
        eprintln!("tessel bench: {e}");
        ExitCode::from(if absent(&e) { NO_GPU } else { 1 })
    })
}

/// Each GPU's `[m, n, k]` in `tessel bench gemm --gpus N`.
const WEAK_SCALING: [usize; 3] = [8192, 8192, 8192];

/// `tessel bench gemm --gpus N`: the split GEMM's weak scaling, each GPU's work fixed.
fn bench_gemm_split(a: &BenchArgs) -> ExitCode {
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
const ALL_REDUCE_ELEMS: [usize; 2] = [1 << 20, 1 << 26];

/// `tessel bench --gpus N`: the NCCL all-reduce over GPUs 0..N, each size and type checked, then
/// timed.
fn bench_all_reduce(a: &BenchArgs) -> ExitCode {
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
fn bench_tile<T: Elem>(
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

/// Checks the transpose of `rows x cols` elements of `T` in configuration `cfg` against its host
/// execution.
fn run_tile<T: Elem>(
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
    kernel: TuneKernel,
    /// Timed runs of each candidate (and of the memcpy)
    #[arg(long, value_name = "N", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    reps: u32,
    #[command(flatten)]
    on: OnDevice,
}

/// One candidate's outcome: its configuration's text and timing, or why it is out.
type Tried = (String, Result<Timing, String>);

/// What the tuner does with one kernel, type and size's candidates: `(what, n, tried, default)`.
type Found<'a> = dyn FnMut(&str, i64, Vec<Tried>, String) + 'a;

/// Prints the progress line of candidate `k` of `total`.
fn progress(k: usize, total: usize, what: &str, t: &Tried) {
    match &t.1 {
        Ok(t) => println!(
            "[{k:>3}/{total}] {what} {:<14} {:>9.4} ms {:>6.1}% of copy",
            t.config.as_deref().unwrap_or(""),
            t.ms,
            100.0 * t.ratio()
        ),
        Err(e) => println!("[{k:>3}/{total}] {what} {:<14} out: {e}", t.0),
    }
    use std::io::Write;
    let _ = std::io::stdout().flush();
}

/// The fastest of `tried` as a cache entry, and its line; `None` when none ran.
fn best(
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
    let g = match Gpu::open(a.on.device, ptx::PTX) {
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
        let total = 2 * RMS_SIZES.len() * RmsConfig::candidates(0).len();
        let mut k = 0;
        for dtype in ["bf16", "f32"] {
            let mut out = |what: &str, n: i64, tried: Vec<Tried>, default: String| {
                for t in &tried {
                    k += 1;
                    progress(k, total, what, t);
                    failed |= t.1.is_err();
                }
                if let Some(b) = best(&device, ("rmsnorm", dtype, n), &tried, &default) {
                    println!("{}", b.1);
                    found.push(b.0);
                }
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
        let cands = CopyConfig::candidates(g.rmsnorm_smem(), g.has_kernel("bulk_copy_f32"));
        let total = 3 * cands.len();
        let mut k = 0;
        for (dtype, tried) in [
            (f32::NAME, copies::<f32>(&g, &cands, r, &mut rng)),
            (f16::NAME, copies::<f16>(&g, &cands, r, &mut rng)),
            (bf16::NAME, copies::<bf16>(&g, &cands, r, &mut rng)),
        ] {
            let what = format!("copy_{dtype} 2^28 bytes");
            for t in &tried {
                k += 1;
                progress(k, total, &what, t);
                failed |= t.1.is_err();
            }
            let default = CopyConfig::DEFAULT.to_string();
            if let Some(b) = best(&device, ("copy", dtype, 0), &tried, &default) {
                println!("{}", b.1);
                found.push(b.0);
            }
        }
    }
    if which(TuneKernel::Transpose) {
        let cands = TransposeConfig::candidates();
        let total = 3 * TUNE_TRANSPOSE.len() * cands.len();
        let mut k = 0;
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
        for shape @ (rows, cols, led) in TUNE_TRANSPOSE {
            for (dtype, tried) in [
                (f32::NAME, tiles::<f32>(&g, &cands, shape, r, &mut rng)),
                (f16::NAME, tiles::<f16>(&g, &cands, shape, r, &mut rng)),
                (bf16::NAME, tiles::<bf16>(&g, &cands, shape, r, &mut rng)),
            ] {
                let what = format!("transpose_{dtype} {rows}x{cols}");
                for t in &tried {
                    k += 1;
                    progress(k, total, &what, t);
                    failed |= t.1.is_err();
                }
                let default = TransposeConfig::default_for(dtype, led).to_string();
                let key = (Tile::cache_kernel(led), dtype, 0);
                if let Some(b) = best(&device, key, &tried, &default) {
                    println!("{}", b.1);
                    found.push(b.0);
                }
            }
        }
    }
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
        assert_eq!(plan_of(&["all", "--seed", "3"]).map(|p| p.len()), Ok(168));
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
                "run needs a KERNEL: copy, transpose, rmsnorm, axpby, gemm or all",
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
