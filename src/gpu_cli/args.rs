//! The arguments of `tessel ptx`, `run`, `bench` (their help texts), and the plan of jobs they
//! make: every combination checked before anything runs.

use super::*;
use host::jobs::attention::Arrangement;

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
and the mma.sync ceiling (a register-only microbenchmark, 8 and 1 blocks of 8 warps per SM);
attention bf16 at batch x sequence = 16k, 16 heads, S 1k-16k, D 64, 128, 256, both masks (or the
SIZES given, sextuples B H HKV SQ SK D, each with both masks) in TFLOP/s.

Each kernel case's headline row (the configuration run uses; gemm_sm90 with C stored by the copy
engine, and cuBLAS) is a result: --peers adds torch's figures for the memory-bound cases
(scripts/peers.py, each as a percentage of torch's own copy timed in its run); --results FILE
records the results in FILE (the rows of this device's cases replaced, the rest kept; `tessel
results FILE` prints README's table of it); --svg FILE draws them (tessel's bar and the peers' per
case, against the 100% of the baseline).

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
    /// `attention_{bf16,f16}_d{64,96,128,192,256}[_causal]`, `attention_{bf16,f16}_d128_long` (the
    /// FlashAttention forward; sm_90a)
    Attention,
    /// every kernel
    All,
}

impl Kernel {
    /// As the command line names it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Kernel::Copy => "copy",
            Kernel::Transpose => "transpose",
            Kernel::Rmsnorm => "rmsnorm",
            Kernel::Axpby => "axpby",
            Kernel::Gemm => "gemm",
            Kernel::Attention => "attention",
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
    pub(super) split: Option<SplitArg>,
    /// gemm over --gpus N: chunks of C's rows, each chunk's collective beside the next chunk's
    /// GEMMs [default: 1 in run, 4 in bench]
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub(super) chunks: Option<u32>,
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
    pub(super) fn tile(self) -> Option<Tile> {
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
    pub(super) arch: Option<Arch>,
}

/// The options of every command that runs kernels: the inputs' seed and the device.
#[derive(Args)]
pub struct OnDevice {
    /// Seed of the random inputs [default: a fresh one, printed]
    #[arg(long, value_name = "N")]
    pub(super) seed: Option<u64>,
    /// CUDA device ordinal
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub(super) device: usize,
}

/// `tessel run attention --layout`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LayoutArg {
    /// `(B, H, S, D)` row-major
    Bhsd,
    /// `(B, S, H, D)` row-major
    Bshd,
    /// variable lengths, `(total, H, D)`
    Varlen,
}

impl From<LayoutArg> for Arrangement {
    fn from(l: LayoutArg) -> Self {
        match l {
            LayoutArg::Bhsd => Arrangement::HeadsFirst,
            LayoutArg::Bshd => Arrangement::SeqFirst,
            LayoutArg::Varlen => Arrangement::Varlen,
        }
    }
}

/// `tessel run`'s arguments.
#[derive(Args)]
pub struct RunArgs {
    /// copy, transpose, rmsnorm, axpby, gemm, attention or all
    #[arg(value_enum, value_name = "KERNEL", hide_possible_values = true)]
    pub(super) kernel: Option<Kernel>,
    /// copy: N; transpose: ROWS COLS; rmsnorm: M N (rows, columns); gemm: M N K; attention:
    /// B H HKV SQ SK D (batch, heads, key/value heads, query and key lengths, head dimension)
    #[arg(value_name = "SIZES", value_parser = parse_size)]
    pub(super) sizes: Vec<usize>,
    /// Element type [default: f32]
    #[arg(long, value_enum)]
    pub(super) dtype: Option<DtypeArg>,
    /// The transpose's shared tile [default: the tuned configuration, else pairs with 3 blocks
    /// per SM (16-bit: quads), or pad where the output's rows are not whole sectors]
    #[arg(long, value_enum)]
    pub(super) smem: Option<SmemArg>,
    /// RMSNorm's warps per row [default: the tuned configuration, else by N]
    #[arg(long, value_name = "W", value_parser = ["1", "2", "4", "8", "16", "all"])]
    pub(super) warps: Option<String>,
    /// GPUs 0..N to split RMSNorm's rows or the GEMM over (NCCL collectives rebuild the result)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(super) gpus: u32,
    /// attention: how Q, K, V and O lie: `(B, H, S, D)` (torch's), `(B, S, H, D)`
    /// (FlashAttention's), or variable lengths packed `(total, H, D)` (each sequence's drawn
    /// at random, SQ and SK the longest)
    #[arg(long, value_enum, default_value_t = LayoutArg::Bhsd)]
    pub(super) layout: LayoutArg,
    #[command(flatten)]
    pub(super) split: SplitOpts,
    /// With --gpus N: one process per GPU (N copies of this command, ranks of one NCCL
    /// communicator), their outputs printed rank by rank
    #[arg(long)]
    pub(super) process_per_gpu: bool,
    #[command(flatten)]
    pub(super) on: OnDevice,
}

/// `tessel bench`'s arguments.
#[derive(Args)]
pub struct BenchArgs {
    /// copy, transpose, rmsnorm, axpby, gemm, attention or all
    #[arg(value_enum, value_name = "KERNEL", default_value_t = Kernel::All)]
    pub(super) kernel: Kernel,
    /// gemm: M N K to time instead of 4096^3 and 8192^3; attention: B H HKV SQ SK D (as `run
    /// attention`), each without and with the causal mask, instead of the bench's own cases
    /// (several allowed)
    #[arg(value_name = "SIZES", value_parser = parse_size)]
    pub(super) sizes: Vec<usize>,
    /// Timed runs of each kernel (and of the memcpy)
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(super) reps: u32,
    /// Over GPUs 0..N (N >= 2): no KERNEL times the NCCL all-reduce, gemm the split GEMM's weak
    /// scaling (SIZES: each GPU's M N K)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    pub(super) gpus: u32,
    #[command(flatten)]
    pub(super) split: SplitOpts,
    /// gemm over --gpus N: the chunked run's GEMMs on persistent clusters leaving S SMs free for
    /// NCCL's kernels (NCCL_MAX_CTAS=S unless set) [default: a cluster per pair of tiles, the
    /// hardware handing SMs to the GEMM and to NCCL as clusters finish]
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u32).range(1..=128))]
    pub(super) comm_sms: Option<u32>,
    /// With --gpus N: one process per GPU (N copies of this command, ranks of one NCCL
    /// communicator), their outputs printed rank by rank
    #[arg(long)]
    pub(super) process_per_gpu: bool,
    /// attention only: time only the cases whose name contains TEXT, as the lines name them
    /// (`--case "d128 full S1024"`; several allowed, a case timed when it matches any)
    #[arg(long = "case", value_name = "TEXT")]
    pub(super) cases: Vec<String>,
    /// Also time torch's versions of the memory-bound kernels (scripts/peers.py; needs python3
    /// with torch)
    #[arg(long)]
    pub(super) peers: bool,
    /// Record the results (tessel's and the peers' headline figures) in FILE: this device's rows
    /// of the cases timed are replaced, the others kept
    #[arg(long, value_name = "FILE")]
    pub(super) results: Option<std::path::PathBuf>,
    /// Draw the results as an SVG picture in FILE
    #[arg(long, value_name = "FILE")]
    pub(super) svg: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub(super) on: OnDevice,
}

/// The most elements one check moves: the host execution holds several copies of them.
pub(super) const MAX_ELEMS: usize = 1 << 32;
/// The transpose's most rows: `ceil(ROWS / 64)` blocks along the grid's y, at most 65535.
pub(super) const MAX_TRANSPOSE_ROWS: usize = 65535 * 64;

/// A size: a positive integer, `_` separators allowed.
pub(super) fn parse_size(s: &str) -> Result<usize, String> {
    match s.replace('_', "").parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err("a size is a positive integer".into()),
    }
}

/// An element type of the copies and transposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dtype {
    F32,
    F16,
    Bf16,
}

impl Dtype {
    pub(super) fn name(self) -> &'static str {
        match self {
            Dtype::F32 => f32::NAME,
            Dtype::F16 => f16::NAME,
            Dtype::Bf16 => bf16::NAME,
        }
    }
    /// Whether the transpose of `rows` rows of this type through `tile` runs its led kernel.
    pub(super) fn led(self, tile: Tile, rows: usize) -> bool {
        match self {
            Dtype::F32 => led::<f32>(tile, rows),
            Dtype::F16 => led::<f16>(tile, rows),
            Dtype::Bf16 => led::<bf16>(tile, rows),
        }
    }
}

/// Whether the transpose of `rows` rows of `T` through `tile` runs its led kernel
/// (`TransposeTile::led`): the output the CLI makes is `(cols, rows):(rows, 1)`.
pub(super) fn led<T: Elem>(tile: Tile, rows: usize) -> bool {
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
pub(super) fn tile_of(d: Dtype, m: Option<SmemArg>, rows: usize) -> (Tile, bool) {
    let tile = match m.and_then(SmemArg::tile) {
        Some(t) => t,
        None => Tile::default_for(d.name(), d.led(Tile::Pad, rows)),
    };
    (tile, d.led(tile, rows))
}

/// An element type of RMSNorm (there is no f16 kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RmsDtype {
    F32,
    Bf16,
}

impl RmsDtype {
    pub(super) fn name(self) -> &'static str {
        match self {
            RmsDtype::F32 => "f32",
            RmsDtype::Bf16 => "bf16",
        }
    }
}

/// One check of `tessel run`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Job {
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
    /// Inputs (and O) of the type, `[B, H, HKV, SQ, SK, D]`, the causal mask.
    Attention(GemmDtype, [usize; 6], bool, Arrangement),
    /// The GEMM over several GPUs (`--gpus`): the output the inputs' type (f32 for the K
    /// split's partial sums).
    GemmSplit(GemmDtype, Plan),
}

/// An input type of the GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GemmDtype {
    F16,
    Bf16,
}

impl GemmDtype {
    pub(super) fn name(self) -> &'static str {
        match self {
            GemmDtype::F16 => "f16",
            GemmDtype::Bf16 => "bf16",
        }
    }
}

impl Job {
    /// The PTX entry points the check runs.
    #[cfg(test)]
    pub(super) fn entries(&self) -> Vec<String> {
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
            Job::Attention(d, sizes, causal, _) => {
                let s = host::checks::attention::Shape::of(*sizes, *causal);
                use host::jobs::attention::entry_name;
                vec![match d {
                    GemmDtype::Bf16 => entry_name::<half::bf16>(&s),
                    GemmDtype::F16 => entry_name::<half::f16>(&s),
                }
                .to_string()]
            }
        }
    }
    /// What the check is, for a line that says it could not run.
    pub(super) fn name(&self) -> String {
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
            Job::Attention(d, [b, h, hkv, sq, sk, dh], causal, a) => format!(
                "attention {} B{b} H{h} HKV{hkv} {sq}x{sk} D{dh}{}{}",
                d.name(),
                if *causal { " causal" } else { "" },
                if *a == Arrangement::HeadsFirst {
                    String::new()
                } else {
                    format!(" {}", a.name())
                }
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
pub(super) type Usage = (ErrorKind, String);

/// The checks `tessel run` makes, or what makes the arguments meaningless; `Ok` only for checks
/// that can run (types a kernel has, sizes it takes).
pub(super) fn plan(a: &RunArgs) -> Result<Vec<Job>, Usage> {
    let conflict = |m: &str| Err((ErrorKind::ArgumentConflict, m.to_string()));
    let Some(kernel) = a.kernel else {
        return Err((
            ErrorKind::MissingRequiredArgument,
            "run needs a KERNEL: copy, transpose, rmsnorm, axpby, gemm, attention or all".into(),
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
        Kernel::Attention => (6, "sizes (B H HKV SQ SK D)", &[1, 4, 2, 200, 300, 64]),
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
    let elems = if kernel == Kernel::Attention {
        // the largest tensor: Q and O (B H SQ D) or K and V (B HKV SK D)
        let all = |i: [usize; 4]| i.iter().try_fold(1usize, |p, &j| p.checked_mul(s[j]));
        all([0, 1, 3, 5])
            .zip(all([0, 2, 4, 5]))
            .map(|(q, k)| q.max(k))
    } else if kernel == Kernel::Gemm {
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
        Kernel::Attention => {
            let sizes = [s[0], s[1], s[2], s[3], s[4], s[5]];
            let shape = host::checks::attention::Shape::of(sizes, false);
            if let Some(why) = host::jobs::attention::refuse(&shape) {
                return invalid(why);
            }
            let types = match a.dtype {
                Some(DtypeArg::F32) => {
                    return invalid("attention's inputs are 16-bit (bf16, f16)".into())
                }
                Some(DtypeArg::F16) => vec![GemmDtype::F16],
                Some(DtypeArg::All) => vec![GemmDtype::Bf16, GemmDtype::F16],
                Some(DtypeArg::Bf16) | None => vec![GemmDtype::Bf16],
            };
            let mut jobs = vec![];
            for d in types {
                for causal in [false, true] {
                    jobs.push(Job::Attention(d, sizes, causal, a.layout.into()));
                }
            }
            jobs
        }
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
pub(super) fn splits(s: SplitArg) -> Vec<Split> {
    match s {
        SplitArg::Rows => vec![Split::Rows],
        SplitArg::Cols => vec![Split::Cols],
        SplitArg::K => vec![Split::K],
        SplitArg::All => vec![Split::Rows, Split::Cols, Split::K],
    }
}

/// The types `--dtype` asks of a kernel that has f32 and bf16 only (`all`: both).
pub(super) fn f32_or_bf16(kernel: Kernel, d: Option<DtypeArg>) -> Result<Vec<RmsDtype>, Usage> {
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
pub(super) fn everything() -> Vec<Job> {
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
    for d in [GemmDtype::Bf16, GemmDtype::F16] {
        for s in [
            [1, 1, 1, 1, 1, 64],
            [1, 4, 2, 200, 300, 64],
            [2, 2, 1, 130, 257, 128],
            [1, 16, 4, 4097, 4099, 128],
            [1, 2, 1, 130, 200, 96],
            [2, 2, 2, 150, 129, 192],
            [1, 4, 1, 300, 260, 256],
        ] {
            for causal in [false, true] {
                plan.push(Job::Attention(d, s, causal, Arrangement::HeadsFirst));
            }
        }
        // FlashAttention's (B, S, H, D) and variable lengths packed (total, H, D)
        for (s, a) in [
            ([2, 4, 2, 200, 300, 64], Arrangement::SeqFirst),
            ([1, 2, 1, 150, 129, 256], Arrangement::SeqFirst),
            ([4, 4, 2, 300, 400, 64], Arrangement::Varlen),
            ([3, 2, 1, 257, 200, 128], Arrangement::Varlen),
            // the first sequence's keys past LONG_KEYS: the full mask's key tiles of 176 rows
            ([3, 4, 2, 700, 4500, 128], Arrangement::Varlen),
            ([3, 2, 2, 130, 140, 192], Arrangement::Varlen),
        ] {
            for causal in [false, true] {
                plan.push(Job::Attention(d, s, causal, a));
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
