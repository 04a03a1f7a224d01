//! The kernels' configurations, the default of each, and the tuner's cache: the configuration
//! measured fastest on a device, per kernel, element type and size, which `tessel run` and
//! `tessel bench` use in place of the default (`tessel tune` fills it).
//!
//! The cache is a text file of tab-separated lines `device kernel dtype n config ms of_copy`
//! (`n` 0 where the choice holds for every size), at `$TESSEL_TUNE_CACHE`, else
//! `$XDG_CACHE_HOME/tessel/tune.tsv`, else `$HOME/.cache/tessel/tune.tsv`.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::elem::RmsElem;
use tessel_gpu::rmsnorm::WARPS;

/// RMSNorm's configuration: warps per row (which kernel, `rmsnorm_w<W>_<T>`) and the shared
/// memory a block stages its rows in (less staging, more blocks per multiprocessor; what does
/// not fit is read twice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RmsConfig {
    /// Warps per row: one of [`WARPS`].
    pub warps: i64,
    /// Bytes of shared memory per block for the staged tiles (and the warps' sums).
    pub smem: i64,
}

/// Atoms (16 bytes) of a row per thread that [`RmsConfig::default_for`] aims below: 6 gives the
/// tuner's choices at N = 4096, 12288 and 32768, f32 and bf16, on the H200 (session 19) and on
/// the H100 (session 10). With 8, N = 4096 had half those warps: bf16 w2 94.8% against w4's
/// 95.6-95.8% and f32 w4 94.7% against w8's 95.9-96.0% on the H200 (`docs/perf.md`).
const ATOMS_PER_THREAD: i64 = 6;

impl RmsConfig {
    /// The default for rows of `cols` elements of `T` on a device whose blocks may have `smem`
    /// bytes: the fewest warps per row that leave each thread at most 6 atoms of its row, staging
    /// in half a multiprocessor's shared memory (two blocks per SM, [`per_block`]`(smem, 2)`).
    /// Half, not all: f32 rows of 32768 elements (128 KiB) then stage 14 of their 16 tiles with
    /// two blocks per SM, 95.2% of copy on the H200 and 98.7% on the H100, where one block per SM
    /// staging the whole row ran at 84.2% and 97.3%; at N = 4096, 12288 and for bf16 the two
    /// stagings are within 0.6 points (`tune rmsnorm`, session 17, `docs/perf.md`).
    ///
    /// Post-condition: `warps` is one of [`WARPS`], `smem` is `per_block(smem, 2)`.
    pub fn default_for<T: RmsElem>(cols: i64, smem: i64) -> Self {
        let atoms = cols * T::BITS / 128;
        let warps = WARPS
            .into_iter()
            .find(|&w| 32 * w * ATOMS_PER_THREAD >= atoms)
            .unwrap_or(WARPS[WARPS.len() - 1]);
        Self {
            warps,
            smem: per_block(smem, 2),
        }
    }

    /// What the tuner tries on a device whose blocks may have `smem` bytes: every count of
    /// [`WARPS`], each staging in all of `smem` and in the share of a multiprocessor that lets
    /// 2, 3 or 4 blocks fit ([`per_block`]).
    pub fn candidates(smem: i64) -> Vec<Self> {
        WARPS
            .into_iter()
            .flat_map(|warps| {
                [1, 2, 3, 4].map(|k| Self {
                    warps,
                    smem: per_block(smem, k),
                })
            })
            .collect()
    }
}

/// As the cache writes it: `w<warps>/s<smem bytes>`.
impl fmt::Display for RmsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "w{}/s{}", self.warps, self.smem)
    }
}

impl std::str::FromStr for RmsConfig {
    type Err = String;
    /// `w<warps>/s<smem>`, the warps one of [`WARPS`], the bytes not negative.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad =
            || format!("an rmsnorm configuration is w<W>/s<bytes> (W one of {WARPS:?}), not {s:?}");
        let (w, m) = s.split_once('/').ok_or_else(bad)?;
        let warps: i64 = w
            .strip_prefix('w')
            .and_then(|w| w.parse().ok())
            .ok_or_else(bad)?;
        let smem: i64 = m
            .strip_prefix('s')
            .and_then(|m| m.parse().ok())
            .ok_or_else(bad)?;
        if !WARPS.contains(&warps) || smem < 0 {
            return Err(bad());
        }
        Ok(Self { warps, smem })
    }
}

/// The copy's configuration: which kernel moves the bytes, and how it fills the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyConfig {
    /// `copy_<T>` (2 atoms) / `copy_a<atoms>_<T>` ([`tessel_gpu::copy::VecCopy`]: each thread `atoms`
    /// loads of 16 bytes in flight) over a grid of at most `per_sm` blocks per multiprocessor,
    /// each walking its tiles (0: a block per tile), `resident` blocks at a time on a
    /// multiprocessor (each asks for shared memory it does not use so that no more fit).
    Vec {
        /// Atoms (16 bytes) per thread and tile: 2, 4, 8 or 16.
        atoms: i64,
        /// Blocks per multiprocessor in the grid (0: one per tile).
        per_sm: i64,
        /// Blocks resident per multiprocessor, 1 to 8.
        resident: i64,
    },
    /// `bulk_copy_<T>` (sm_90, `tessel_gpu::copy::bulk_copy`): the copy engine, chunks of
    /// `chunk` bytes through `stages` shared-memory stages per block, a grid of `per_sm` blocks
    /// per multiprocessor (all resident where their shared memory fits).
    Bulk {
        /// Bytes per bulk load and store: a positive multiple of 16.
        chunk: i64,
        /// Chunks in shared memory per block: at least 2.
        stages: i64,
        /// Blocks per multiprocessor.
        per_sm: i64,
    },
}

/// The shared memory each of `k` blocks may have for `k` of them to fit on a multiprocessor
/// whose blocks may have `smem` bytes: a multiprocessor has 1 KiB more than a block may have and
/// keeps 1 KiB of it per block (sm_80 and sm_90).
///
/// Post-condition: `per_block(smem, 1) == smem`; `k (per_block(smem, k) + 1024) <= smem + 1024`.
pub fn per_block(smem: i64, k: i64) -> i64 {
    ((smem + 1024) / k - 1024).clamp(0, smem)
}

/// The chunks (bytes) and blocks per multiprocessor the tuner tries for the bulk copy.
const BULK_CHUNKS: [i64; 3] = [8192, 16384, 32768];
const BULK_PER_SM: [i64; 4] = [1, 2, 4, 8];
/// The atoms per thread, grids (blocks per multiprocessor, 0 for a block per tile) and
/// residencies the tuner tries for the vector copy.
pub const VEC_ATOMS: [i64; 4] = [2, 4, 8, 16];
const VEC_GRIDS: [i64; 2] = [0, 16];
const VEC_RESIDENT: [i64; 4] = [3, 4, 6, 8];
/// At most this many stages per block (more only deepens a queue already past Little's law).
const BULK_MAX_STAGES: i64 = 8;

impl CopyConfig {
    /// Does the configuration launch: the vector copy with atoms one of [`VEC_ATOMS`], blocks
    /// per SM in the grid >= 0 and 1..=8 resident; the bulk copy with a chunk of a positive
    /// multiple of 16 bytes below 2^31 (a multiple of every element's size), at least 2 stages
    /// and 1 block per SM.
    pub fn valid(&self) -> bool {
        match *self {
            Self::Vec {
                atoms,
                per_sm,
                resident,
            } => VEC_ATOMS.contains(&atoms) && per_sm >= 0 && (1..=8).contains(&resident),
            Self::Bulk {
                chunk,
                stages,
                per_sm,
            } => chunk > 0 && chunk % 16 == 0 && chunk < 1 << 31 && stages >= 2 && per_sm >= 1,
        }
    }

    /// Without a tuned choice: `copy_<T>` as its kernel launches itself: 2 atoms per thread
    /// ([`tessel_gpu::copy::ATOMS`]), a block per tile, 6 resident
    /// ([`tessel_gpu::copy::RESIDENT`]).
    pub const DEFAULT: Self = Self::Vec {
        atoms: tessel_gpu::copy::ATOMS,
        per_sm: 0,
        resident: tessel_gpu::copy::RESIDENT,
    };

    /// What the tuner tries on a device whose blocks may have `smem` bytes of shared memory
    /// (`sm90`: whether it has the bulk copy): the default first; the vector copy for each count of
    /// [`VEC_ATOMS`], grid of `VEC_GRIDS` and residency of `VEC_RESIDENT`; the bulk copy for each chunk of
    /// `BULK_CHUNKS` and blocks per multiprocessor of `BULK_PER_SM`, with as many stages as
    /// fit (at most 8, at least 2).
    ///
    /// Post-condition: every bulk candidate's `stages * (chunk + 8)` is at most `smem`.
    pub fn candidates(smem: i64, sm90: bool) -> Vec<Self> {
        let mut c = vec![Self::DEFAULT];
        for atoms in VEC_ATOMS {
            for per_sm in VEC_GRIDS {
                for resident in VEC_RESIDENT {
                    let v = Self::Vec {
                        atoms,
                        per_sm,
                        resident,
                    };
                    if v != Self::DEFAULT {
                        c.push(v);
                    }
                }
            }
        }
        if sm90 {
            for chunk in BULK_CHUNKS {
                for per_sm in BULK_PER_SM {
                    let stages = (per_block(smem, per_sm) / (chunk + 8)).min(BULK_MAX_STAGES);
                    if stages >= 2 {
                        c.push(Self::Bulk {
                            chunk,
                            stages,
                            per_sm,
                        });
                    }
                }
            }
        }
        c
    }
}

/// As the cache writes it: `vec/a<atoms>/g<blocks per SM>/r<resident>` or
/// `bulk/c<bytes>/s<stages>/b<blocks per SM>`.
impl fmt::Display for CopyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Vec {
                atoms,
                per_sm,
                resident,
            } => write!(f, "vec/a{atoms}/g{per_sm}/r{resident}"),
            Self::Bulk {
                chunk,
                stages,
                per_sm,
            } => write!(f, "bulk/c{chunk}/s{stages}/b{per_sm}"),
        }
    }
}

impl std::str::FromStr for CopyConfig {
    type Err = String;
    /// `vec/a<A>/g<N>/r<R>` (A one of [`VEC_ATOMS`], N >= 0, R in 1..=8) or `bulk/c<bytes>/s<stages>/b<N>` (bytes a positive
    /// multiple of 16, stages >= 2, N >= 1).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "a copy configuration is vec/a<atoms: 2, 4, 8, 16>/g<blocks per SM>/r<resident, 1..8> or bulk/c<bytes, a multiple of 16>/s<stages >= 2>/b<blocks per SM >= 1>, not {s:?}"
            )
        };
        let num = |f: Option<&str>, tag: char| {
            f.and_then(|f| f.strip_prefix(tag))
                .and_then(|v| v.parse::<i64>().ok())
                .ok_or_else(bad)
        };
        let mut f = s.split('/');
        let c = match f.next() {
            Some("vec") => Self::Vec {
                atoms: num(f.next(), 'a')?,
                per_sm: num(f.next(), 'g')?,
                resident: num(f.next(), 'r')?,
            },
            Some("bulk") => Self::Bulk {
                chunk: num(f.next(), 'c')?,
                stages: num(f.next(), 's')?,
                per_sm: num(f.next(), 'b')?,
            },
            _ => return Err(bad()),
        };
        if !c.valid() || f.next().is_some() {
            return Err(bad());
        }
        Ok(c)
    }
}

/// The transposes' shared tiles, as `--smem` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tile {
    /// `transpose_pad_<T>`
    Pad,
    /// `transpose_swizzle_<T>`
    Swizzle,
    /// `transpose_pairs_<T>`
    Pairs,
    /// `transpose_quads_<T>`
    Quads,
}

impl Tile {
    /// Every tile, in the order the tuner tries them.
    pub const ALL: [Tile; 4] = [Tile::Pad, Tile::Swizzle, Tile::Pairs, Tile::Quads];
    /// As the kernels' names and `--smem` have it.
    pub fn name(self) -> &'static str {
        match self {
            Tile::Pad => "pad",
            Tile::Swizzle => "swizzle",
            Tile::Pairs => "pairs",
            Tile::Quads => "quads",
        }
    }
    /// The tile without a tuned choice for elements `dtype` (`f32`, `f16`, `bf16`): where the
    /// output's rows are not whole sectors (`led`), for 16-bit elements `pairs`, whose led kernel
    /// stages pairs (8191x8193: 86.6-87.3% of copy on the H200, 92.8-93.1% on the H100, where
    /// pad's ran at 72.6-73.4% and 85.3-85.8%; session 17), for f32 `pad`, whose led kernel ran
    /// the ragged f32 8191x8193 at 93.3% where swizzle's ran it at 80.3% (H100, session 10; both
    /// run at 88-89% on the H200 since their shared shifts, 93% on the H100); else for 16-bit
    /// elements `quads` (8192²: 93.6-93.8% on the H100, 89.2-89.6% on the H200, pairs within 0.3
    /// points, swizzle 65-80%), for f32 `pairs` (3 blocks per SM, [`TransposeConfig::default_for`]:
    /// 97.0-97.1% H100, 95.5% H200, where swizzle, the default before, ran at 96.1% and
    /// 95.0-95.1%; session 19, `docs/perf.md`).
    pub fn default_for(dtype: &str, led: bool) -> Self {
        match (led, dtype) {
            (true, "f16" | "bf16") => Tile::Pairs,
            (true, _) => Tile::Pad,
            (false, "f16" | "bf16") => Tile::Quads,
            (false, _) => Tile::Pairs,
        }
    }
    /// The cache's kernel field of a transpose's tile: `transpose` for output rows of whole
    /// sectors, `transpose_led` for the others (their kernels differ: `TransposeTile::led`).
    pub fn cache_kernel(led: bool) -> &'static str {
        if led {
            "transpose_led"
        } else {
            "transpose"
        }
    }
    /// The tile named `s`.
    pub fn parse(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| format!("a transpose tile is pad, swizzle, pairs or quads, not {s:?}"))
    }
}

/// A transpose's configuration: its shared tile, the shared-memory carveout its kernel prefers
/// (`carveout`, 0: the driver's choice; else 1 to 100, the percentage of a multiprocessor's
/// unified L1 / shared storage that may go to shared memory: the rest is L1) and the blocks
/// resident per multiprocessor (`resident`, 0: as many as fit; else 1 to 8, each block asking
/// for the least shared memory that keeps one more from fitting, [`fewest_smem`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransposeConfig {
    /// The shared tile.
    pub tile: Tile,
    /// The preferred shared-memory carveout: 0 (the driver's choice) or 1 to 100 (%).
    pub carveout: i64,
    /// Blocks resident per multiprocessor: 0 (as many as fit) or 1 to 8.
    pub resident: i64,
}

/// The shared memory a block asks for so that at most `resident` of them fit on a
/// multiprocessor whose blocks may have `smem` bytes, and no more than it takes: one byte more
/// than `resident + 1` blocks could each have ([`per_block`]). Unlike the copy's
/// `resident_smem` (the most that `resident` blocks could have) it leaves the rest of the
/// storage to L1: on the H200, 3 blocks of the f32 pairs tile asking for 56 KiB ran at
/// 95.2-95.5% of copy, 3 of 72 KiB at 91-92% (`docs/perf.md`).
///
/// Post-condition: `resident + 1` blocks of it do not fit; for `resident >= 1` and a tile of at
/// most that size, `resident` do (`resident (fewest_smem + 1024) <= smem + 1024`).
pub fn fewest_smem(smem: i64, resident: i64) -> i64 {
    (per_block(smem, resident.max(1) + 1) + 1).min(smem)
}

/// Blocks per SM of the f32 transpose without a tuned choice (output rows of whole sectors):
/// with 3 of the pairs tile (48 KiB of loads in flight per SM) it ran 0.5 points faster on the
/// H200 and 1 point faster on the H100 than with as many as fit (8), and than swizzle
/// (`docs/perf.md`, session 19).
pub const F32_RESIDENT: i64 = 3;

/// The carveouts and residencies the tuner tries for each transpose tile (0: the driver's
/// carveout, as many blocks as fit). On sm_90 a multiprocessor's shared memory is 0, 8, 16,
/// 32, 64, 100, 132, 164, 196 or 228 KiB: 72% is 164 KiB.
const TRANSPOSE_CARVEOUT: [i64; 2] = [0, 72];
const TRANSPOSE_RESIDENT: [i64; 3] = [0, 3, 4];

impl TransposeConfig {
    /// `tile` with the driver's carveout, as many blocks resident as fit.
    pub const fn tile(tile: Tile) -> Self {
        Self {
            tile,
            carveout: 0,
            resident: 0,
        }
    }

    /// Does the configuration launch: a carveout of 0 to 100, 0 to 8 resident.
    pub fn valid(&self) -> bool {
        Self::knobs_valid(self.carveout, self.resident)
    }

    /// Whether a carveout and a residency launch: 0 to 100 and 0 to 8.
    pub fn knobs_valid(carveout: i64, resident: i64) -> bool {
        (0..=100).contains(&carveout) && (0..=8).contains(&resident)
    }

    /// What follows the tile's name: `/c<carveout>` and `/r<resident>`, each left out where 0.
    pub fn knobs(carveout: i64, resident: i64) -> String {
        [('c', carveout), ('r', resident)]
            .iter()
            .filter(|(_, v)| *v != 0)
            .map(|(k, v)| format!("/{k}{v}"))
            .collect()
    }

    /// Without a tuned choice, for elements `dtype` and output rows that are whole sectors or not
    /// (`led`): [`Tile::default_for`] with the driver's carveout, and [`F32_RESIDENT`] blocks per
    /// SM for f32 output rows of whole sectors (as many as fit for the others).
    pub fn default_for(dtype: &str, led: bool) -> Self {
        let tile = Tile::default_for(dtype, led);
        match (led, dtype) {
            (false, "f32") => Self {
                resident: F32_RESIDENT,
                ..Self::tile(tile)
            },
            _ => Self::tile(tile),
        }
    }

    /// What the tuner tries: every tile of [`Tile::ALL`] with each carveout of
    /// `TRANSPOSE_CARVEOUT` and residency of `TRANSPOSE_RESIDENT`.
    pub fn candidates() -> Vec<Self> {
        let mut c = vec![];
        for tile in Tile::ALL {
            for carveout in TRANSPOSE_CARVEOUT {
                for resident in TRANSPOSE_RESIDENT {
                    c.push(Self {
                        tile,
                        carveout,
                        resident,
                    });
                }
            }
        }
        c
    }
}

/// As the cache writes it: the tile's name, then `/c<carveout>` and `/r<resident>` where they
/// are not 0.
impl fmt::Display for TransposeConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let knobs = Self::knobs(self.carveout, self.resident);
        write!(f, "{}{knobs}", self.tile.name())
    }
}

impl std::str::FromStr for TransposeConfig {
    type Err = String;
    /// `<tile>[/c<C>][/r<R>]`: tile pad, swizzle, pairs or quads, C in 1..=100, R in 1..=8.
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "a transpose configuration is <tile: pad, swizzle, pairs, quads>[/c<shared-memory carveout, 1..100 %>][/r<resident blocks per SM, 1..8>], not {s:?}"
            )
        };
        let mut f = s.split('/');
        let tile = Tile::parse(f.next().unwrap_or("")).map_err(|_| bad())?;
        let mut c = Self::tile(tile);
        let mut next = f.next();
        let num = |v: &str, tag: char, max: i64| {
            v.strip_prefix(tag)
                .and_then(|v| v.parse::<i64>().ok())
                .filter(|v| (1..=max).contains(v))
        };
        if let Some(v) = next.and_then(|v| num(v, 'c', 100)) {
            c.carveout = v;
            next = f.next();
        }
        if let Some(v) = next.and_then(|v| num(v, 'r', 8)) {
            c.resident = v;
            next = f.next();
        }
        match next {
            None => Ok(c),
            Some(_) => Err(bad()),
        }
    }
}

/// What the cache keys a device by: two devices that agree on all four run the kernels alike.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceId {
    /// The driver's name of the device.
    pub name: String,
    /// Multiprocessors.
    pub sms: i64,
    /// Memory clock, kHz (0 where the driver does not say).
    pub memory_khz: i64,
    /// Memory bus width, bits (0 where the driver does not say).
    pub bus_bits: i64,
}

impl DeviceId {
    /// The cache's first field: `name/SMs/memory kHz/bus bits` (a tab or newline in the name
    /// becomes a space).
    pub fn key(&self) -> String {
        let name: String = self
            .name
            .chars()
            .map(|c| if c == '\t' || c == '\n' { ' ' } else { c })
            .collect();
        format!("{name}/{}/{}/{}", self.sms, self.memory_khz, self.bus_bits)
    }
}

impl fmt::Display for DeviceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({} SMs, memory {} MHz x {} bits)",
            self.name,
            self.sms,
            self.memory_khz / 1000,
            self.bus_bits
        )
    }
}

/// One measured choice.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// [`DeviceId::key`] of the device it was measured on.
    pub device: String,
    /// The kernel family: `rmsnorm`, `transpose`.
    pub kernel: String,
    /// The element type: `f32`, `f16`, `bf16`.
    pub dtype: String,
    /// The size it holds for (rmsnorm: `N`), 0 for every size.
    pub n: i64,
    /// The configuration ([`RmsConfig`], [`CopyConfig`] or [`TransposeConfig`] as text).
    pub config: String,
    /// Its median milliseconds when measured.
    pub ms: f64,
    /// Its fraction of a device-to-device copy of the same bytes, measured beside it.
    pub of_copy: f64,
}

/// The tuner's cache: what is in the file, and where it goes.
#[derive(Clone, Debug, Default)]
pub struct Cache {
    path: PathBuf,
    entries: Vec<Entry>,
}

const HEADER: &str = "# tessel tune: device\tkernel\tdtype\tn\tconfig\tms\tof_copy";

impl Cache {
    /// Where the cache lives: `$TESSEL_TUNE_CACHE`, else `$XDG_CACHE_HOME/tessel/tune.tsv`, else
    /// `$HOME/.cache/tessel/tune.tsv`; `None` with none of the three set.
    pub fn default_path() -> Option<PathBuf> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if let Some(p) = var("TESSEL_TUNE_CACHE") {
            return Some(PathBuf::from(p));
        }
        let dir = var("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")))?;
        Some(dir.join("tessel").join("tune.tsv"))
    }

    /// The cache at `path`: empty where there is no file; `Err` names the file and the line that
    /// is not an entry.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let mut entries = vec![];
        for (i, line) in text.lines().enumerate() {
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            let e =
                parse_entry(line).map_err(|why| format!("{}:{}: {why}", path.display(), i + 1))?;
            entries.push(e);
        }
        Ok(Self {
            path: path.to_path_buf(),
            entries,
        })
    }

    /// The file this cache was loaded from and is saved to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every entry, in the file's order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The choice for `kernel` of `dtype` at size `n` on `device`: the entry for exactly `n`, else
    /// one for every size (`n` 0).
    pub fn lookup(&self, device: &DeviceId, kernel: &str, dtype: &str, n: i64) -> Option<&Entry> {
        let key = device.key();
        let find = |n: i64| {
            self.entries
                .iter()
                .find(|e| e.device == key && e.kernel == kernel && e.dtype == dtype && e.n == n)
        };
        find(n).or_else(|| find(0))
    }

    /// Records `e`, replacing the entry of the same device, kernel, type and size.
    pub fn record(&mut self, e: Entry) {
        let same = |o: &Entry| {
            o.device == e.device && o.kernel == e.kernel && o.dtype == e.dtype && o.n == e.n
        };
        match self.entries.iter_mut().find(|o| same(o)) {
            Some(o) => *o = e,
            None => self.entries.push(e),
        }
    }

    /// The file's text: the header, then one line per entry.
    pub fn to_text(&self) -> String {
        let mut s = format!("{HEADER}\n");
        for e in &self.entries {
            s += &format!(
                "{}\t{}\t{}\t{}\t{}\t{:.6}\t{:.4}\n",
                e.device, e.kernel, e.dtype, e.n, e.config, e.ms, e.of_copy
            );
        }
        s
    }

    /// Writes the cache to its file (its folder made where missing), whole or not at all (a
    /// temporary file renamed over it).
    pub fn save(&self) -> Result<(), String> {
        let err = |e: std::io::Error| format!("{}: {e}", self.path.display());
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let tmp = self.path.with_extension("tsv.tmp");
        std::fs::write(&tmp, self.to_text()).map_err(err)?;
        std::fs::rename(&tmp, &self.path).map_err(err)
    }
}

/// One line of the cache: seven tab-separated fields, the configuration valid for its kernel.
fn parse_entry(line: &str) -> Result<Entry, String> {
    let f: Vec<&str> = line.split('\t').collect();
    let [device, kernel, dtype, n, config, ms, of_copy] = f[..] else {
        return Err(format!("{} fields, want 7 ({HEADER})", f.len()));
    };
    let num = |s: &str, what: &str| {
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("{what} {s:?} is not a non-negative number"))
    };
    let n: i64 = n
        .parse()
        .ok()
        .filter(|&n| n >= 0)
        .ok_or_else(|| format!("n {n:?} is not a non-negative integer"))?;
    match kernel {
        "rmsnorm" => config.parse::<RmsConfig>().map(|_| ())?,
        "copy" => config.parse::<CopyConfig>().map(|_| ())?,
        "transpose" | "transpose_led" => config.parse::<TransposeConfig>().map(|_| ())?,
        k => {
            return Err(format!(
                "no kernel {k:?} is tuned (copy, rmsnorm, transpose, transpose_led)"
            ))
        }
    }
    if !["f32", "f16", "bf16"].contains(&dtype) {
        return Err(format!("dtype {dtype:?} is not f32, f16 or bf16"));
    }
    Ok(Entry {
        device: device.to_string(),
        kernel: kernel.to_string(),
        dtype: dtype.to_string(),
        n,
        config: config.to_string(),
        ms: num(ms, "ms")?,
        of_copy: num(of_copy, "of_copy")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    fn dev() -> DeviceId {
        DeviceId {
            name: "NVIDIA H200".into(),
            sms: 132,
            memory_khz: 3_201_000,
            bus_bits: 6144,
        }
    }

    #[test]
    fn default_warps_grow_with_the_row() {
        let w = |n| RmsConfig::default_for::<bf16>(n, 1000).warps;
        // bf16: 8 per atom; 6 atoms per thread
        assert_eq!(
            [w(8), w(1536), w(1544), w(4096), w(12288), w(32768)],
            [1, 1, 2, 4, 8, 16]
        );
        assert_eq!(w(1 << 20), 16);
        let f = |n| RmsConfig::default_for::<f32>(n, 7).warps;
        assert_eq!([f(4096), f(12288), f(32768)], [8, 16, 16]);
        // half of an sm_90 multiprocessor's 227 KiB, less 1 KiB a block
        assert_eq!(RmsConfig::default_for::<f32>(4096, 232448).smem, 115712);
    }

    #[test]
    fn configurations_print_and_parse_back() {
        for c in RmsConfig::candidates(232_448) {
            assert_eq!(c.to_string().parse::<RmsConfig>(), Ok(c));
        }
        // 1, 2, 3 and 4 blocks of 227 KiB-limited blocks on a 228 KiB multiprocessor
        for k in 1..=4 {
            let b = per_block(232_448, k);
            assert!(
                k * (b + 1024) <= 233_472 && k * (b + 1025) > 233_472,
                "{k}: {b}"
            );
        }
        assert_eq!(per_block(232_448, 1), 232_448);
        assert_eq!(per_block(0, 3), 0);
        for bad in ["w3/s10", "w4", "4/s10", "w4/s-1", "w4/sx"] {
            let e = bad.parse::<RmsConfig>().unwrap_err();
            assert!(e.contains("w<W>/s<bytes>"), "{bad}: {e}");
        }
        for t in Tile::ALL {
            assert_eq!(Tile::parse(t.name()), Ok(t));
        }
        let copies = CopyConfig::candidates(232_448, true);
        assert!(copies.len() > 2 && copies[0] == CopyConfig::DEFAULT);
        for c in copies {
            assert_eq!(c.to_string().parse::<CopyConfig>(), Ok(c));
            if let CopyConfig::Bulk { chunk, stages, .. } = c {
                assert!(stages >= 2 && stages * (chunk + 8) <= 232_448, "{c}");
            }
        }
        assert_eq!(CopyConfig::candidates(232_448, false).len(), 32);
        for bad in [
            "vec",
            "vec/a8/g16",
            "vec/a8/g-1/r4",
            "vec/a8/g0/r9",
            "vec/a5/g0/r3",
            "bulk/c100/s2/b1",
            "bulk/c4096/s1/b1",
            "bulk/c4096/s2/b0",
            "bulk/c4096/s2/b1/x",
            "tma/c1",
        ] {
            let e = bad.parse::<CopyConfig>().unwrap_err();
            assert!(e.contains("vec/a<"), "{bad}: {e}");
        }
        assert!(Tile::parse("diagonal")
            .unwrap_err()
            .contains("pad, swizzle, pairs or quads"));
        let transposes = TransposeConfig::candidates();
        assert_eq!(
            transposes.len(),
            Tile::ALL.len() * TRANSPOSE_CARVEOUT.len() * TRANSPOSE_RESIDENT.len()
        );
        for c in transposes {
            assert!(c.valid());
            assert_eq!(c.to_string().parse::<TransposeConfig>(), Ok(c));
        }
        // a cache written before carveouts and residencies were tuned still reads
        assert_eq!("quads".parse(), Ok(TransposeConfig::tile(Tile::Quads)));
        assert_eq!(TransposeConfig::tile(Tile::Pairs).to_string(), "pairs");
        let c = |carveout, resident| TransposeConfig {
            tile: Tile::Pairs,
            carveout,
            resident,
        };
        assert_eq!("pairs/c44".parse(), Ok(c(44, 0)));
        assert_eq!("pairs/r3".parse(), Ok(c(0, 3)));
        assert_eq!("pairs/c72/r3".parse(), Ok(c(72, 3)));
        for bad in [
            "pairs/c0",
            "pairs/c101",
            "pairs/44",
            "pairs/c4/x",
            "diagonal/c4",
            "",
            "pairs/r0",
            "pairs/r9",
            "pairs/r3/c72",
            "pairs/c7/r3/r3",
        ] {
            let e = bad.parse::<TransposeConfig>().unwrap_err();
            assert!(e.contains("[/c<shared-memory carveout"), "{bad}: {e}");
        }
        // sm_90: blocks may have 227 KiB; r of them fit, r + 1 do not
        for r in 1..=8 {
            let b = fewest_smem(232_448, r);
            assert!(
                r * (b + 1024) <= 233_472 && (r + 1) * (b + 1024) > 233_472,
                "{r}: {b}"
            );
        }
        assert_eq!(fewest_smem(232_448, 3), 57_345);
    }

    #[test]
    fn the_cache_keeps_one_choice_per_device_kernel_type_and_size() {
        let path = std::env::temp_dir().join(format!("tessel-tune-{}.tsv", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let mut c = Cache::load(&path).unwrap();
        assert!(c.entries().is_empty());
        let e = |n, config: &str, ms| Entry {
            device: dev().key(),
            kernel: "rmsnorm".into(),
            dtype: "bf16".into(),
            n,
            config: config.into(),
            ms,
            of_copy: 0.9,
        };
        c.record(e(4096, "w1/s232448", 0.5));
        c.record(e(12288, "w4/s232448", 0.7));
        c.record(e(4096, "w2/s116224", 0.4));
        c.record(Entry {
            kernel: "transpose".into(),
            config: "pairs".into(),
            ..e(0, "", 0.3)
        });
        c.record(Entry {
            kernel: Tile::cache_kernel(true).into(),
            config: "pad".into(),
            ..e(0, "", 0.3)
        });
        c.save().unwrap();
        let back = Cache::load(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(back.entries().len(), 4);
        let d = dev();
        assert_eq!(
            back.lookup(&d, "rmsnorm", "bf16", 4096).unwrap().config,
            "w2/s116224"
        );
        assert_eq!(back.lookup(&d, "rmsnorm", "bf16", 12288).unwrap().ms, 0.7);
        assert!(back.lookup(&d, "rmsnorm", "bf16", 8192).is_none());
        assert!(back.lookup(&d, "rmsnorm", "f32", 4096).is_none());
        // a size-free entry holds for every size
        assert_eq!(
            back.lookup(&d, "transpose", "bf16", 77).unwrap().config,
            "pairs"
        );
        // the led transposes' choice is apart from the others'
        assert_eq!(
            back.lookup(&d, "transpose_led", "bf16", 0).unwrap().config,
            "pad"
        );
        // another device sees none of them
        let other = DeviceId { sms: 114, ..dev() };
        assert!(back.lookup(&other, "rmsnorm", "bf16", 4096).is_none());
    }

    #[test]
    fn a_damaged_cache_names_its_line() {
        let path = std::env::temp_dir().join(format!("tessel-tune-bad-{}.tsv", std::process::id()));
        let good = format!("{}\trmsnorm\tbf16\t4096\tw1/s100\t0.5\t0.9", dev().key());
        for (bad, why) in [
            ("a\tb", "2 fields, want 7"),
            ("d\taxpby\tf32\t0\tx\t1\t1", "no kernel \"axpby\" is tuned"),
            ("d\tcopy\tf32\t0\tbulk/c100/s2/b1\t1\t1", "bulk/c<bytes"),
            ("d\trmsnorm\tf32\t0\tw5/s1\t1\t1", "w<W>/s<bytes>"),
            ("d\ttranspose\tf64\t0\tpad\t1\t1", "dtype \"f64\""),
            ("d\ttranspose\tf32\t-1\tpad\t1\t1", "n \"-1\""),
            ("d\ttranspose\tf32\t0\tpad\tNaN\t1", "ms \"NaN\""),
        ] {
            std::fs::write(&path, format!("{HEADER}\n{good}\n{bad}\n")).unwrap();
            let e = Cache::load(&path).unwrap_err();
            assert!(e.contains(":3: ") && e.contains(why), "{bad}: {e}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}
