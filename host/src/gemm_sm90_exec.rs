//! The host execution of `gemm_sm90` (`tessel_gpu::gemm_sm90`): the kernel's partitioning,
//! schedule and barrier protocol run on the CPU, cluster by cluster, with a host buffer as each
//! block's shared memory. Everything that places data is the kernel's own code: [`tile_of`],
//! [`loads`], [`descriptors`], [`C_PLAN`], [`chunk_coord`], [`STORE_16`] / [`STORE_32`], [`SW`],
//! and layout-core's model of how the hardware reads a wgmma descriptor
//! ([`GmmaDescriptor::hardware_address`]).
//!
//! What is emulated, in the kernel's order (its `dev` module: `gemm_sm90`, `consume`, `Chunk`,
//! and its `store_tile`):
//!
//! - the schedule: each cluster's two blocks take their turns from [`tile_of`]; both must take
//!   as many turns, and every tile of C is taken exactly once (the second tile of the last pairs
//!   may lie below C when M has an odd number of tiles);
//! - per cluster, seven agents interleaved in a seeded random order: each block's producer
//!   (thread 0 of warpgroup 0), its two consumer warpgroups, and the copy engine, which lands
//!   the loads in flight in any order;
//! - the producer: k-tile `it` of the block to stage `it % STAGES`, the wait for the stage's
//!   *empty* barrier's phase `(round - 1) & 1` (not in round 0), `arrive.expect_tx` of
//!   [`STAGE_BYTES`] on the *full* barrier, then [`loads`]' two boxes: each box of A
//!   (`BM x BK`) or B ([`B_BOX_ROWS`]` x BK`) at its `(k, row)` coordinates, elements outside
//!   the tensor zero-filled, written into the stage of every block of its `mask` at byte `at`
//!   swizzled by [`SW`] on the absolute shared address (the copy engine's 128-byte mode, which
//!   `tma::TmaSwizzle::B128.swizzle(16)` is), the box's bytes completed on each destination's
//!   full barrier when it lands;
//! - the mbarriers: arrival counts (full 1, empty `2 CLUSTER_M`), transaction bytes (which may
//!   run ahead of the arming, as the partner's multicast can), phases and parity waits;
//! - a consumer warpgroup: per k-tile the wait for the full barrier's phase `round & 1`, four
//!   `wgmma.m64n256k16` on [`descriptors`] (the first k-block of a tile with scale-d 0),
//!   `commit_group`, `wait_group 1`, the release of the previous k-tile's stage on the empty
//!   barriers of both blocks of the cluster; after a tile's last k-tile `wait_group 0` and named
//!   barrier 1 (both warpgroups of the block); then per [`EPI_N`]-column chunk the accumulators
//!   times `alpha` into the warpgroup's `64 x EPI_N` `f32` staging tile at
//!   `stage(kept) + wg EPI_BYTES` (pitch [`EPI_PITCH`], at [`chunk_coord`], two per 8-byte store)
//!   and `store_tile`'s copy of it into C ([`STORE_16`] / [`STORE_32`]: whole 16-byte accesses
//!   where the chunk lies inside C with rows of a multiple of 16 bytes, else element by element
//!   predicated by C's bounds; `beta C` added, C not read when `beta == 0`); or, when `beta` is
//!   0 and C has a tensor map (rows of a multiple of 16 bytes), the accumulators in C's type at
//!   [`c_box_offset`] and the copy engine's store of the chunk's boxes (`64 x c_box_cols`, the
//!   128-byte swizzle [`C_BOX_SWIZZLE`] on byte offsets), what lies outside C left out; then the
//!   release of the kept stage. The threads of one warpgroup run in order (named barriers `2 + wg` only
//!   order a warpgroup's own threads);
//! - a wgmma reads its operands when its group completes (at the `wait_group` that covers it:
//!   the latest moment it may): the `64 x 16` elements of A and `256 x 16` of B at the addresses
//!   the descriptors give (decoded by [`GmmaDescriptor::hardware_address`]), and accumulates
//!   into each consumer thread's 128 accumulators at its [`C_PLAN`] coordinates: the 16 exact
//!   products and the accumulator summed in `f64`, rounded to `f32` once per instruction.
//!
//! Checked, every breach reported in [`GemmRun::hazards`]: each 16-bit unit of shared memory is
//! tagged with who wrote it (the block's k-tile use `it`, so its turn and k-tile, and A, B or a
//! warpgroup's staged chunk). A wgmma must read only its own k-tile's operand; the epilogue's
//! store only its own warpgroup's current chunk; a staging write must lie in its warpgroup's
//! region of the kept stage, with no wgmma in flight on that stage; a load must not be issued
//! into a stage while a wgmma of that block reads it, nor over data of a use that both consumer
//! warpgroups of that block have not released; no barrier may receive more arrivals than its
//! phase expects; the agents must not deadlock. Writes to C are counted.
//!
//! Not from the kernel: the shared address of stage 0 ([`STAGE0`], any 1024-byte boundary does),
//! and C's buffer taken as 16-byte aligned (the device's allocations are).

use std::collections::VecDeque;

use layout_core::{GmmaDescriptor, GmmaMajor};
use tessel_gpu::gemm::{BK, BM, BN, STAGE_BYTES, SW};
use tessel_gpu::gemm_sm90::{
    c_box_cols, c_box_offset, chunk_coord, descriptors, kept_stage, loads, slot, staging_at,
    tile_of, BoxLoad, B_BOX_ROWS, CLUSTER_M, CONSUMERS, C_BOX_SWIZZLE, C_PLAN, EPI_BYTES, EPI_N,
    EPI_PITCH, K_BLOCKS, STAGES, STORE_16, STORE_32,
};

use crate::elem::Rng;
use crate::gemm::{GemmIn, GemmOut};

/// At most this many hazards are described; all are counted.
const MAX_HAZARDS: usize = 16;

/// What a host execution of `gemm_sm90` produced.
#[derive(Debug, Clone)]
pub struct GemmRun<O> {
    /// C, row-major `M x N`.
    pub c: Vec<O>,
    /// How many times each element of C was written.
    pub writes: Vec<u32>,
    /// The first shared-memory hazards seen (see the module's doc): none in a correct kernel.
    pub hazards: Vec<String>,
    /// All hazards seen.
    pub hazard_count: usize,
}

impl<O> GemmRun<O> {
    /// The first element of C not written exactly once, as `(row-major index, writes)`.
    pub fn coverage_error(&self) -> Option<(usize, u32)> {
        self.writes
            .iter()
            .position(|&w| w != 1)
            .map(|i| (i, self.writes[i]))
    }
}

/// Hazards seen, the first few described .
#[derive(Default)]
pub(crate) struct Hazards {
    list: Vec<String>,
    count: usize,
}
impl Hazards {
    /// One more hazard; `what` describes it while fewer than [`MAX_HAZARDS`] are.
    pub(crate) fn note(&mut self, what: impl FnOnce() -> String) {
        if self.list.len() < MAX_HAZARDS {
            self.list.push(what());
        }
        self.count += 1;
    }
    /// The run: C, its write counts, these hazards.
    pub(crate) fn run<O>(self, c: Vec<O>, writes: Vec<u32>) -> GemmRun<O> {
        GemmRun {
            c,
            writes,
            hazard_count: self.count,
            hazards: self.list,
        }
    }
}

impl<O> GemmRun<O> {
    /// `Err` naming what is wrong with this run of `x`: a hazard, an element of C not written
    /// exactly once, or a result outside the f64 reference's bound; else the check's line.
    #[cfg(test)]
    pub(crate) fn judge<I: GemmIn>(
        &self,
        x: &crate::gemm_sm80::Inputs<I, O>,
        what: &str,
    ) -> Result<String, String>
    where
        O: GemmOut + crate::blas::BlasElem,
    {
        if self.hazard_count > 0 {
            return Err(format!(
                "{what}: {} hazards, first: {:#?}",
                self.hazard_count, self.hazards
            ));
        }
        if let Some((i, w)) = self.coverage_error() {
            let n = x.mnk[1];
            return Err(format!("{what}: C[{},{}] written {w} times", i / n, i % n));
        }
        x.judge(what, &self.c)
    }
}

/// The shared address of stage 0 in the model (the kernel rounds its dynamic shared memory up
/// to a 1024-byte boundary).
pub const STAGE0: i64 = 1024;
/// The seed of [`gemm_sm90_exec`]'s interleaving.
pub const SEED: u64 = 0x5eed_0090;

const NS: usize = STAGES as usize;
const NC: usize = CLUSTER_M as usize;
const WG: i64 = 128;
/// Chunks of a warpgroup's 64 x 256.
const CHUNKS: i64 = BN / EPI_N;
/// 16-bit units of a block's shared memory in the model.
const UNITS: usize = ((STAGE0 + STAGES * STAGE_BYTES) / 2) as usize;

/// A deliberate fault, to show that the checks can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    /// A's descriptor of k-block `kb` is that of k-block `kb + 1` (mod 4).
    ShiftDescriptor,
    /// Each k-tile's stage is released as soon as its wgmmas are issued (and not again after
    /// the epilogue).
    EarlyRelease,
    /// The producer never waits for the empty barrier.
    SkipEmptyWait,
    /// B's half is loaded into the issuing block only (mask `1 << rank`, not both).
    OwnHalfOnly,
    /// A warpgroup stages its chunks in the other warpgroup's region.
    OtherStaging,
}

/// `C = alpha A B^T + beta C` as `gemm_sm90` computes it with `clusters` clusters: `a` `M x K`,
/// `b` `N x K`, `c` `M x N`, row-major and packed. `c` is read only when `beta != 0`. The agents
/// of each cluster are interleaved by a random order of seed [`SEED`].
///
/// # Panics
/// When a size or `clusters` is 0 or the slices' lengths are not `M K`, `N K` and `M N`.
#[allow(clippy::too_many_arguments)]
pub fn gemm_sm90_exec<I: GemmIn, O: GemmOut>(
    a: &[I],
    b: &[I],
    c: &[O],
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
    clusters: usize,
) -> GemmRun<O> {
    exec(a, b, c, [m, n, k], alpha, beta, clusters, SEED, Fault::None)
}

/// What wrote a unit of shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    Nothing,
    /// A's box.
    A,
    /// B's half loaded by block `by`.
    B {
        by: u8,
    },
    /// Warpgroup `wg`'s chunk `chunk` of the epilogue.
    Staged {
        wg: u8,
        chunk: u8,
    },
}

/// Who wrote a unit: what, for the block's k-tile use `it` (its turn `it / ktiles`, k-tile
/// `it % ktiles`; the epilogue's chunks carry the kept stage's use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tag {
    it: i32,
    what: What,
}
const NOBODY: Tag = Tag {
    it: -1,
    what: What::Nothing,
};

fn describe(t: Tag, ktiles: i64) -> String {
    let (i, kt) = (t.it as i64 / ktiles, t.it as i64 % ktiles);
    match t.what {
        What::Nothing => "nothing".into(),
        What::A => format!("A of turn {i} k-tile {kt}"),
        What::B { by } => format!("B (block {by}'s half) of turn {i} k-tile {kt}"),
        What::Staged { wg, chunk } => {
            format!("warpgroup {wg}'s chunk {chunk} of turn {i}")
        }
    }
}

/// An mbarrier: arrivals expected per phase, pending arrivals, transaction bytes, phases
/// completed.
#[derive(Clone, Copy, Debug)]
struct Mbar {
    expected: i64,
    pending: i64,
    tx: i64,
    phase: i64,
}
impl Mbar {
    fn new(count: i64) -> Self {
        Self {
            expected: count,
            pending: count,
            tx: 0,
            phase: 0,
        }
    }
    fn settle(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            self.phase += 1;
            self.pending = self.expected;
        }
    }
    /// `mbarrier.arrive`: `false` when the phase expects no more arrivals.
    #[must_use]
    fn arrive(&mut self) -> bool {
        if self.pending == 0 {
            return false;
        }
        self.pending -= 1;
        self.settle();
        true
    }
    fn expect_tx(&mut self, bytes: i64) {
        self.tx += bytes;
    }
    fn complete_tx(&mut self, bytes: i64) {
        self.tx -= bytes;
        self.settle();
    }
    /// `mbarrier.try_wait.parity`: has the phase of parity `p` completed (the current phase's
    /// parity is the other)?
    fn passed(&self, p: i64) -> bool {
        (self.phase & 1) != p
    }
}

/// A block of the cluster: shared memory, its tags, the barriers.
struct Block {
    data: Vec<u16>,
    tag: Vec<Tag>,
    full: [Mbar; NS],
    empty: [Mbar; NS],
    /// wgmma groups issued on each stage and not yet complete.
    reading: [i64; NS],
    /// `released[wg][it]`: warpgroup `wg` released its use `it` of a stage.
    released: [Vec<bool>; 2],
    /// Arrivals of each warpgroup at named barrier 1.
    bar1: [i64; 2],
}

impl Block {
    fn new(uses: usize) -> Self {
        Self {
            // never written: a NaN as bf16, f16 and (in pairs) f32
            data: vec![0x7fff; UNITS],
            tag: vec![NOBODY; UNITS],
            full: [Mbar::new(1); NS],
            empty: [Mbar::new(2 * CLUSTER_M); NS],
            reading: [0; NS],
            released: [vec![false; uses], vec![false; uses]],
            bar1: [0; 2],
        }
    }
}

/// A box in flight: the units it writes into block `dst`'s stage `stage`, and who it is.
struct Flight {
    dst: usize,
    stage: usize,
    bytes: i64,
    units: Vec<(usize, u16)>,
    tag: Tag,
}

/// A group of four wgmmas in flight: the k-tile use, its stage, whether it starts the tile, the
/// descriptors `[A, B]` per k-block.
struct Group {
    it: i64,
    stage: usize,
    first: bool,
    descs: [[u64; 2]; K_BLOCKS as usize],
}

/// The shared address of stage `s`.
fn stage_addr(s: i64) -> i64 {
    STAGE0 + s * STAGE_BYTES
}

/// What an agent did when asked to step.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    Blocked,
    Moved,
    Done,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CState {
    Main,
    /// Arrived at named barrier 1.
    Bar1,
    /// Staging chunk `c`.
    Stage(i64),
    /// Storing chunk `c`.
    Store(i64),
    Done,
}

/// The thread-block's producer thread.
struct Producer {
    rank: usize,
    i: i64,
    kt: i64,
    it: i64,
}

/// A consumer warpgroup.
struct Consumer {
    rank: usize,
    wg: i64,
    i: i64,
    kt: i64,
    it: i64,
    /// Each thread's 128 accumulators.
    acc: Vec<[f32; 128]>,
    groups: VecDeque<Group>,
    state: CState,
}

/// The problem and the run's outputs.
struct World<'x, I, O> {
    a: &'x [I],
    b: &'x [I],
    mnk: [i64; 3],
    tiles: [i64; 2],
    ktiles: i64,
    alpha: f32,
    beta: f32,
    /// C stored by the copy engine (`beta` 0 and C has a tensor map), else by `store_tile`.
    by_copy_engine: bool,
    fault: Fault,
    cluster: i64,
    clusters: i64,
    /// `C_PLAN`'s `(row, column)` of each consumer thread's accumulators, in its warpgroup's
    /// `64 x 256`.
    at: Vec<[[usize; 2]; 128]>,
    blocks: Vec<Block>,
    flights: Vec<Flight>,
    out: &'x mut [O],
    writes: &'x mut [u32],
    hz: &'x mut Hazards,
}

impl<I: GemmIn, O: GemmOut> World<'_, I, O> {
    fn turn(&self, rank: usize, i: i64) -> Option<[i64; 2]> {
        tile_of(self.cluster, self.clusters, rank as i64, i, self.tiles)
    }

    /// The units a box load writes into a stage at shared address `base`: element `(r, c)` of
    /// the box at byte `at + 2 (r BK + c)`, swizzled, from the tensor or 0 outside it.
    fn box_units(&self, ld: &BoxLoad, base: i64) -> Vec<(usize, u16)> {
        let (t, rows_t, box_rows) = if ld.b {
            (self.b, self.mnk[1], B_BOX_ROWS)
        } else {
            (self.a, self.mnk[0], BM)
        };
        let k = self.mnk[2];
        let mut u = Vec::with_capacity((box_rows * BK) as usize);
        for r in 0..box_rows {
            for c in 0..BK {
                let (gr, gk) = (ld.coords[1] + r, ld.coords[0] + c);
                let v = if gr < rows_t && gk < k {
                    t[(gr * k + gk) as usize].bits() as u16
                } else {
                    0
                };
                let byte = base + ld.at + 2 * (r * BK + c);
                u.push((SW.apply(byte / 2) as usize, v));
            }
        }
        u
    }

    /// A release of use `it` by `wg` of block `rank`: an arrival on the stage's empty barrier of
    /// each block of the cluster.
    fn release(&mut self, rank: usize, wg: i64, it: i64) {
        let s = slot(it).0 as usize;
        for r in 0..NC {
            if !self.blocks[r].empty[s].arrive() {
                let c = self.cluster;
                self.hz.note(|| {
                    format!(
                        "cluster {c} block {rank} warpgroup {wg}: releasing use {it} arrives on \
                         block {r}'s empty barrier {s} beyond its count"
                    )
                });
            }
        }
        self.blocks[rank].released[wg as usize][it as usize] = true;
    }

    fn producer(&mut self, p: &mut Producer) -> Step {
        let Some(blk) = self.turn(p.rank, p.i) else {
            return Step::Done;
        };
        let (s, round) = slot(p.it);
        let su = s as usize;
        if round > 0
            && self.fault != Fault::SkipEmptyWait
            && !self.blocks[p.rank].empty[su].passed((round - 1) & 1)
        {
            return Step::Blocked;
        }
        let full = &mut self.blocks[p.rank].full[su];
        full.expect_tx(STAGE_BYTES);
        if !full.arrive() {
            let (c, r, it) = (self.cluster, p.rank, p.it);
            self.hz.note(|| {
                format!("cluster {c} block {r}: arming full barrier {s} for use {it} arrives beyond its count")
            });
        }
        for mut ld in loads(blk, p.kt, p.rank as i64) {
            if ld.b && self.fault == Fault::OwnHalfOnly {
                ld.mask = 1 << p.rank;
            }
            let units = self.box_units(&ld, stage_addr(s));
            let bytes = 2 * units.len() as i64;
            let tag = Tag {
                it: p.it as i32,
                what: if ld.b {
                    What::B { by: p.rank as u8 }
                } else {
                    What::A
                },
            };
            for dst in 0..NC {
                if ld.mask & (1 << dst) == 0 {
                    continue;
                }
                self.check_load(dst, su, &units, tag);
                self.flights.push(Flight {
                    dst,
                    stage: su,
                    bytes,
                    units: units.clone(),
                    tag,
                });
            }
        }
        p.it += 1;
        p.kt += 1;
        if p.kt == self.ktiles {
            p.kt = 0;
            p.i += 1;
        }
        Step::Moved
    }

    /// A load issued into block `dst`'s stage `s`: no wgmma of `dst` reads the stage, and every
    /// unit it overwrites holds data both of `dst`'s consumer warpgroups released.
    fn check_load(&mut self, dst: usize, s: usize, units: &[(usize, u16)], tag: Tag) {
        let (c, kt) = (self.cluster, self.ktiles);
        let blk = &self.blocks[dst];
        if blk.reading[s] > 0 {
            self.hz.note(|| {
                format!(
                    "cluster {c}: the load of {} into block {dst}'s stage {s} is issued while a \
                     wgmma reads that stage",
                    describe(tag, kt)
                )
            });
        }
        for &(u, _) in units {
            let old = blk.tag[u];
            if old.what == What::Nothing {
                continue;
            }
            let i = old.it as usize;
            if !(blk.released[0][i] && blk.released[1][i]) {
                self.hz.note(|| {
                    format!(
                        "cluster {c}: the load of {} into block {dst}'s stage {s} overwrites {} \
                         at shared byte {}, not released by both consumer warpgroups",
                        describe(tag, kt),
                        describe(old, kt),
                        2 * u
                    )
                });
                return;
            }
        }
    }

    /// The copy engine lands one load in flight, picked at random.
    fn copy_engine(&mut self, rng: &mut Rng) -> Step {
        if self.flights.is_empty() {
            return Step::Blocked;
        }
        let f = self
            .flights
            .swap_remove((rng.next_u64() % self.flights.len() as u64) as usize);
        let blk = &mut self.blocks[f.dst];
        for &(u, v) in &f.units {
            blk.data[u] = v;
            blk.tag[u] = f.tag;
        }
        blk.full[f.stage].complete_tx(f.bytes);
        Step::Moved
    }

    fn consumer(&mut self, w: &mut Consumer) -> Step {
        match w.state {
            CState::Done => Step::Done,
            CState::Main => {
                if self.turn(w.rank, w.i).is_none() {
                    w.state = CState::Done;
                    return Step::Done;
                }
                let (s, round) = slot(w.it);
                if !self.blocks[w.rank].full[s as usize].passed(round & 1) {
                    return Step::Blocked;
                }
                let base = stage_addr(s) as u32;
                let descs = std::array::from_fn(|kb| {
                    let d = descriptors(base, w.wg, kb as i64);
                    if self.fault == Fault::ShiftDescriptor {
                        [descriptors(base, w.wg, (kb as i64 + 1) % K_BLOCKS)[0], d[1]]
                    } else {
                        d
                    }
                });
                self.blocks[w.rank].reading[s as usize] += 1;
                w.groups.push_back(Group {
                    it: w.it,
                    stage: s as usize,
                    first: w.kt == 0,
                    descs,
                });
                // commit_group; wait_group 1
                while w.groups.len() > 1 {
                    let g = w.groups.pop_front().expect("a group");
                    self.complete(w, g);
                }
                if self.fault == Fault::EarlyRelease {
                    self.release(w.rank, w.wg, w.it);
                } else if w.kt > 0 {
                    self.release(w.rank, w.wg, w.it - 1);
                }
                w.it += 1;
                w.kt += 1;
                if w.kt == self.ktiles {
                    // wait_group 0, then named barrier 1
                    while let Some(g) = w.groups.pop_front() {
                        self.complete(w, g);
                    }
                    self.blocks[w.rank].bar1[w.wg as usize] += 1;
                    w.state = CState::Bar1;
                }
                Step::Moved
            }
            CState::Bar1 => {
                let b = &self.blocks[w.rank].bar1;
                if b[1 - w.wg as usize] < b[w.wg as usize] {
                    return Step::Blocked;
                }
                w.state = CState::Stage(0);
                Step::Moved
            }
            CState::Stage(chunk) => {
                self.stage_chunk(w, chunk);
                w.state = CState::Store(chunk);
                Step::Moved
            }
            CState::Store(chunk) => {
                self.store_chunk(w, chunk);
                if chunk + 1 < CHUNKS {
                    w.state = CState::Stage(chunk + 1);
                } else {
                    if self.fault != Fault::EarlyRelease {
                        self.release(w.rank, w.wg, w.it - 1);
                    }
                    w.i += 1;
                    w.kt = 0;
                    w.state = CState::Main;
                }
                Step::Moved
            }
        }
    }

    /// A group of four wgmmas completes: each reads its operands through its descriptors and
    /// accumulates.
    fn complete(&mut self, w: &mut Consumer, g: Group) {
        let (c, kt) = (self.cluster, self.ktiles);
        for (kb, [da, db]) in g.descs.iter().enumerate() {
            let mut ops = [vec![[0f64; 16]; 64], vec![[0f64; 16]; BN as usize]];
            for (op, d) in [(0usize, *da), (1, *db)] {
                let desc = GmmaDescriptor { desc: d };
                let want = Tag {
                    it: g.it as i32,
                    what: What::A,
                };
                let mut bad = None;
                for (mn, row) in ops[op].iter_mut().enumerate() {
                    for (kk, x) in row.iter_mut().enumerate() {
                        let addr = desc.hardware_address(GmmaMajor::K, 16, mn as i64, kk as i64);
                        let u = (addr / 2) as usize;
                        if addr < 0 || addr % 2 != 0 || u >= UNITS {
                            bad.get_or_insert(format!("reads outside shared memory ({addr})"));
                            continue;
                        }
                        let t = self.blocks[w.rank].tag[u];
                        let ok = t.it == want.it
                            && match op {
                                0 => t.what == What::A,
                                _ => matches!(t.what, What::B { .. }),
                            };
                        if !ok {
                            bad.get_or_insert_with(|| {
                                format!("reads shared byte {addr} holding {}", describe(t, kt))
                            });
                        }
                        *x = f64::from(I::widen(u32::from(self.blocks[w.rank].data[u])));
                    }
                }
                if let Some(e) = bad {
                    let (r, wg, it) = (w.rank, w.wg, g.it);
                    self.hz.note(|| {
                        format!(
                            "cluster {c} block {r} warpgroup {wg}, use {it} (turn {} k-tile {}) \
                             k-block {kb}: the wgmma's {} {e}",
                            it / kt,
                            it % kt,
                            ["A", "B"][op]
                        )
                    });
                }
            }
            let scale = !(g.first && kb == 0);
            for (acc, at) in w.acc.iter_mut().zip(&self.at[(w.wg * WG) as usize..]) {
                for (x, &[r, col]) in acc.iter_mut().zip(at) {
                    let s: f64 = (0..16).map(|q| ops[0][r][q] * ops[1][col][q]).sum();
                    let d = if scale { f64::from(*x) } else { 0.0 };
                    *x = (s + d) as f32;
                }
            }
        }
        self.blocks[w.rank].reading[g.stage] -= 1;
    }

    /// The kept stage's use and the warpgroup's staging address of the current turn.
    fn staging(&self, w: &Consumer, wg: i64) -> (i64, i64) {
        let kept = kept_stage(w.it);
        (w.it - 1, staging_at(stage_addr(kept) as u32, wg) as i64)
    }

    /// The accumulators of chunk `chunk`, times alpha, into the warpgroup's staging tile.
    fn stage_chunk(&mut self, w: &Consumer, chunk: i64) {
        let c = self.cluster;
        let (wg, r) = (w.wg, w.rank);
        let other = if self.fault == Fault::OtherStaging {
            1 - wg
        } else {
            wg
        };
        let (use_, at0) = self.staging(w, other);
        let (_, region) = self.staging(w, wg);
        let kept = kept_stage(w.it) as usize;
        if self.blocks[r].reading[kept] > 0 {
            self.hz.note(|| {
                format!(
                    "cluster {c} block {r} warpgroup {wg}: stages chunk {chunk} while a wgmma reads \
                     the kept stage {kept}"
                )
            });
        }
        let tag = Tag {
            it: use_ as i32,
            what: What::Staged {
                wg: wg as u8,
                chunk: chunk as u8,
            },
        };
        let mut outside = None;
        for t in 0..WG {
            let o = C_PLAN.thread(wg * WG + t);
            let acc = &w.acc[t as usize];
            for v in (0..128).step_by(2) {
                let (ch, [row, col]) = chunk_coord(o, v);
                if ch != chunk {
                    continue;
                }
                let (x, y) = (
                    self.alpha * acc[v as usize],
                    self.alpha * acc[v as usize + 1],
                );
                // f32 at the pitch for store_tile; C's type in the swizzled boxes for the copy
                // engine (one 4- or 8-byte store of the pair)
                let (at, units): (i64, Vec<u16>) = if self.by_copy_engine {
                    let at = at0 + c_box_offset(O::BITS, row, col);
                    let units = if O::BITS == 32 {
                        [x, y]
                            .into_iter()
                            .flat_map(|f| [f.to_bits() as u16, (f.to_bits() >> 16) as u16])
                            .collect()
                    } else {
                        let w = O::narrow2(x, y);
                        vec![w as u16, (w >> 16) as u16]
                    };
                    (at, units)
                } else {
                    let at = at0 + 4 * (row * EPI_PITCH + col);
                    let units = [x, y]
                        .into_iter()
                        .flat_map(|f| [f.to_bits() as u16, (f.to_bits() >> 16) as u16])
                        .collect();
                    (at, units)
                };
                if at < region || at + 2 * units.len() as i64 > region + EPI_BYTES {
                    outside.get_or_insert(at);
                }
                let u = (at / 2) as usize;
                let blk = &mut self.blocks[r];
                for (q, &x) in units.iter().enumerate() {
                    blk.data[u + q] = x;
                    blk.tag[u + q] = tag;
                }
            }
        }
        if let Some(at) = outside {
            self.hz.note(|| {
                format!(
                    "cluster {c} block {r} warpgroup {wg}: chunk {chunk} staged at shared byte \
                     {at}, outside the warpgroup's {EPI_BYTES} bytes at {region}"
                )
            });
        }
    }

    /// `store_tile` of chunk `chunk`: the warpgroup's 128 threads' accesses of the staging tile
    /// into C, plus `beta C`.
    fn store_chunk(&mut self, w: &Consumer, chunk: i64) {
        let (wg, r, c, kt) = (w.wg, w.rank, self.cluster, self.ktiles);
        let blk = self.turn(r, w.i).expect("a turn");
        let (use_, s0) = self.staging(w, wg);
        let want = Tag {
            it: use_ as i32,
            what: What::Staged {
                wg: wg as u8,
                chunk: chunk as u8,
            },
        };
        let [m, n, _] = self.mnk;
        if self.by_copy_engine {
            // the boxes of the chunk, each `64 x c_box_cols` at 8 KB steps, swizzled; the
            // engine leaves out what lies outside C
            let w = c_box_cols(O::BITS);
            let units = O::BITS / 16;
            let mut bad = None;
            for bx in 0..EPI_N / w {
                let (row0, col0) = (BM * blk[0] + 64 * wg, BN * blk[1] + EPI_N * chunk + w * bx);
                for rr in 0..64 {
                    for cc in 0..w {
                        let byte =
                            s0 + bx * 64 * 128 + C_BOX_SWIZZLE.apply(rr * 128 + cc * O::BITS / 8);
                        let u = (byte / 2) as usize;
                        let sm = &self.blocks[r];
                        let mut bits = 0u32;
                        for q in 0..units as usize {
                            if sm.tag[u + q] != want {
                                bad.get_or_insert((byte, sm.tag[u + q]));
                            }
                            bits |= u32::from(sm.data[u + q]) << (16 * q);
                        }
                        let (row, col) = (row0 + rr, col0 + cc);
                        if row < m && col < n {
                            let g = (row * n + col) as usize;
                            let f = if O::BITS == 32 {
                                f32::from_bits(bits)
                            } else {
                                O::widen(bits)
                            };
                            self.out[g] = O::from_f32(f);
                            self.writes[g] += 1;
                        }
                    }
                }
            }
            if let Some((byte, t)) = bad {
                self.hz.note(|| {
                    format!(
                        "cluster {c} block {r} warpgroup {wg}: the copy engine's store of chunk \
                         {chunk} reads shared byte {byte} holding {}, not {}",
                        describe(t, kt),
                        describe(want, kt)
                    )
                });
            }
            return;
        }
        let v = 128 / O::BITS;
        let plan = if O::BITS == 32 { &STORE_32 } else { &STORE_16 };
        let tile = plan.tile();
        let at = [2 * blk[0] + wg, CHUNKS * blk[1] + chunk];
        let origin = [at[0] * tile[0], at[1] * tile[1]];
        let whole = origin[0] + tile[0] <= m && origin[1] + tile[1] <= n && n % v == 0;
        let read_c = self.beta != 0.0;
        let mut bad = None;
        for t in 0..WG {
            let o = plan.thread(t);
            let mut a = 0;
            while a < plan.values() {
                let x = plan.value(a);
                let byte = s0 + 4 * ((o[0] + x[0]) * EPI_PITCH + o[1] + x[1]);
                let mut f = [0f32; 8];
                let sm = &self.blocks[r];
                for (e, fe) in f.iter_mut().take(v as usize).enumerate() {
                    let u = (byte / 2) as usize + 2 * e;
                    for q in [u, u + 1] {
                        if sm.tag[q] != want {
                            bad.get_or_insert((byte + 4 * e as i64, sm.tag[q]));
                        }
                    }
                    *fe = f32::from_bits(u32::from(sm.data[u]) | (u32::from(sm.data[u + 1]) << 16));
                }
                if whole {
                    let g = ((origin[0] + o[0] + x[0]) * n + origin[1] + o[1] + x[1]) as usize;
                    for (e, &fe) in f.iter().take(v as usize).enumerate() {
                        let mut y = fe;
                        if read_c {
                            y += self.beta * self.out[g + e].to_f32();
                        }
                        self.out[g + e] = O::from_f32(y);
                        self.writes[g + e] += 1;
                    }
                } else {
                    for e in 0..v {
                        let xe = plan.value(a + e);
                        let (row, col) = (origin[0] + o[0] + xe[0], origin[1] + o[1] + xe[1]);
                        if row < m && col < n {
                            let g = (row * n + col) as usize;
                            let mut y = f[e as usize];
                            if read_c {
                                y += self.beta * self.out[g].to_f32();
                            }
                            self.out[g] = O::from_f32(y);
                            self.writes[g] += 1;
                        }
                    }
                }
                a += v;
            }
        }
        if let Some((byte, t)) = bad {
            self.hz.note(|| {
                format!(
                    "cluster {c} block {r} warpgroup {wg}: the store of chunk {chunk} reads shared \
                     byte {byte} holding {}, not {}",
                    describe(t, kt),
                    describe(want, kt)
                )
            });
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn exec<I: GemmIn, O: GemmOut>(
    a: &[I],
    b: &[I],
    c: &[O],
    [m, n, k]: [usize; 3],
    alpha: f32,
    beta: f32,
    clusters: usize,
    seed: u64,
    fault: Fault,
) -> GemmRun<O> {
    assert!(m >= 1 && n >= 1 && k >= 1, "gemm needs M, N, K >= 1");
    assert!(clusters >= 1, "gemm_sm90 needs at least one cluster");
    assert!(
        a.len() == m * k && b.len() == n * k && c.len() == m * n,
        "gemm of {m}x{n}x{k} needs a of {} elements, b of {}, c of {}; got {}, {}, {}",
        m * k,
        n * k,
        m * n,
        a.len(),
        b.len(),
        c.len()
    );
    let mnk = [m as i64, n as i64, k as i64];
    let tiles = [(mnk[0] + BM - 1) / BM, (mnk[1] + BN - 1) / BN];
    let ktiles = (mnk[2] + BK - 1) / BK;
    let clusters = clusters as i64;
    let mut out = c.to_vec();
    let mut writes = vec![0u32; m * n];
    let mut hz = Hazards::default();
    schedule(tiles, clusters, &mut hz);

    let at: Vec<[[usize; 2]; 128]> = (0..CONSUMERS)
        .map(|t| {
            let o = C_PLAN.thread(t);
            std::array::from_fn(|v| {
                let x = C_PLAN.value(v as i64);
                let (r, col) = (o[0] + x[0] - 64 * (t / WG), o[1] + x[1]);
                assert!(
                    (0..64).contains(&r) && (0..BN).contains(&col),
                    "C_PLAN: thread {t}'s value {v} at ({r}, {col}) of its warpgroup's 64 x {BN}"
                );
                [r as usize, col as usize]
            })
        })
        .collect();
    let mut rng = Rng::new(seed);
    for cluster in 0..clusters {
        let turns = (0..NC)
            .map(|r| {
                (0..)
                    .take_while(|&i| tile_of(cluster, clusters, r as i64, i, tiles).is_some())
                    .count()
            })
            .max()
            .unwrap_or(0);
        if turns == 0 {
            continue;
        }
        let uses = turns * ktiles as usize;
        let mut w = World::<I, O> {
            a,
            b,
            mnk,
            tiles,
            ktiles,
            alpha,
            beta,
            // GemmMaps builds C's map where the copy engine can address C: row-major here, its
            // buffer 16-byte aligned (the model assumes it)
            by_copy_engine: beta == 0.0
                && crate::tma::addressable(
                    [mnk[0], mnk[1]],
                    [mnk[1], 1],
                    std::mem::size_of::<O>() as i64,
                    0,
                )
                .is_ok(),
            fault,
            cluster,
            clusters,
            at: at.clone(),
            blocks: (0..NC).map(|_| Block::new(uses)).collect(),
            flights: Vec::new(),
            out: &mut out,
            writes: &mut writes,
            hz: &mut hz,
        };
        run_cluster(&mut w, &mut rng);
    }
    hz.run(out, writes)
}

/// The schedule's checks: both blocks of each cluster take as many turns, and every tile of C
/// is taken once (tiles below C only as the second of a pair).
fn schedule(tiles: [i64; 2], clusters: i64, hz: &mut Hazards) {
    let pairs_m = (tiles[0] + CLUSTER_M - 1) / CLUSTER_M;
    let mut taken = vec![0u32; (tiles[0] * tiles[1]) as usize];
    for cluster in 0..clusters {
        let mut count = [0i64; NC];
        for (r, cnt) in count.iter_mut().enumerate() {
            let mut i = 0;
            while let Some([bm, bn]) = tile_of(cluster, clusters, r as i64, i, tiles) {
                if bm < tiles[0] && bn < tiles[1] {
                    taken[(bm * tiles[1] + bn) as usize] += 1;
                } else if !(bm < CLUSTER_M * pairs_m && bn < tiles[1] && r > 0) {
                    hz.note(|| {
                        format!(
                            "cluster {cluster} block {r} turn {i}: tile ({bm}, {bn}) lies outside \
                             C's {} x {} tiles",
                            tiles[0], tiles[1]
                        )
                    });
                }
                i += 1;
            }
            *cnt = i;
        }
        if count.iter().any(|&c| c != count[0]) {
            hz.note(|| format!("cluster {cluster}: its blocks take {count:?} turns"));
        }
    }
    if let Some(t) = taken.iter().position(|&x| x != 1) {
        let tn = tiles[1] as usize;
        hz.note(|| {
            format!(
                "the schedule takes tile ({}, {}) {} times",
                t / tn,
                t % tn,
                taken[t]
            )
        });
    }
}

/// The cluster's agents in a random order until all are done, or none can move (a deadlock).
fn run_cluster<I: GemmIn, O: GemmOut>(w: &mut World<I, O>, rng: &mut Rng) {
    let mut producers: Vec<Producer> = (0..NC)
        .map(|rank| Producer {
            rank,
            i: 0,
            kt: 0,
            it: 0,
        })
        .collect();
    let mut consumers: Vec<Consumer> = (0..NC)
        .flat_map(|rank| {
            (0..2).map(move |wg| Consumer {
                rank,
                wg,
                i: 0,
                kt: 0,
                it: 0,
                acc: vec![[f32::NAN; 128]; WG as usize],
                groups: VecDeque::new(),
                state: CState::Main,
            })
        })
        .collect();
    // agents: producers, consumers, the copy engine (never done)
    let agents = NC + consumers.len() + 1;
    let copy = agents - 1;
    let mut done = vec![false; agents];
    loop {
        if (0..copy).all(|x| done[x]) && w.flights.is_empty() {
            return;
        }
        let mut order: Vec<usize> = (0..agents).filter(|&x| !done[x]).collect();
        // a random order: the first that can move does
        for x in (1..order.len()).rev() {
            let y = (rng.next_u64() % (x as u64 + 1)) as usize;
            order.swap(x, y);
        }
        let mut progressed = false;
        for &x in &order {
            let s = if x < NC {
                w.producer(&mut producers[x])
            } else if x < copy {
                w.consumer(&mut consumers[x - NC])
            } else {
                w.copy_engine(rng)
            };
            match s {
                Step::Done => {
                    done[x] = true;
                    progressed = true;
                }
                Step::Moved => {
                    progressed = true;
                    break;
                }
                Step::Blocked => {}
            }
        }
        if !progressed {
            let who: Vec<String> = order
                .iter()
                .map(|&x| {
                    if x < NC {
                        let p = &producers[x];
                        format!("producer {} at use {}", p.rank, p.it)
                    } else if x < copy {
                        let c = &consumers[x - NC];
                        format!(
                            "block {} warpgroup {} at use {} ({:?})",
                            c.rank, c.wg, c.it, c.state
                        )
                    } else {
                        format!("the copy engine ({} in flight)", w.flights.len())
                    }
                })
                .collect();
            let c = w.cluster;
            w.hz.note(|| format!("cluster {c}: deadlock: {}", who.join(", ")));
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blas::{check_gemm, gemm_reference_and_tolerance, BlasElem};
    use half::{bf16, f16};

    use tessel_gpu::gemm_sm90::B_AT;

    const TARGET: &str = "-p host --lib gemm_sm90_exec";

    /// Random `m x n x k` inputs (C poisoned when `beta_zero`), the host execution on `clusters`
    /// clusters with `fault`, and what is wrong with it, if anything.
    fn case<I: GemmIn, O: GemmOut + BlasElem>(
        rng: &mut Rng,
        [m, n, k]: [usize; 3],
        clusters: usize,
        beta_zero: bool,
        fault: Fault,
    ) -> Result<String, String> {
        let what = format!(
            "{}->{} {m}x{n}x{k} on {clusters} clusters, beta0={beta_zero}",
            I::NAME,
            O::NAME
        );
        let x = crate::gemm_sm80::Inputs::<I, O>::random(rng, [m, n, k], beta_zero);
        let seed = rng.next_u64();
        let run = exec(
            &x.a,
            &x.b,
            &x.c,
            [m, n, k],
            x.alpha,
            x.beta,
            clusters,
            seed,
            fault,
        );
        run.judge(&x, &what)
    }

    fn report(r: Result<String, String>, bad: &mut Vec<String>) {
        match r {
            Ok(line) => eprintln!("{line}"),
            Err(e) => bad.push(e),
        }
    }

    /// Ragged sizes: an odd number of M tiles (the last pair's second block lies below C), N
    /// not a multiple of the chunks, K not of BK, more k-tiles than stages, a tile per cluster
    /// and several.
    #[test]
    fn gemm_sm90_exec_matches_the_reference() {
        let mut rng = Rng::from_env_or_fresh("gemm_sm90_exec_matches_the_reference", TARGET);
        let mut bad = Vec::new();
        for (size, clusters) in [
            ([1, 1, 1], 1),
            ([130, 260, 136], 1),
            ([130, 260, 136], 2),
            ([257, 513, 72], 3),
            ([257, 513, 72], 66),
            ([100, 200, 6 * BK as usize + 8], 1),
        ] {
            report(
                case::<bf16, bf16>(&mut rng, size, clusters, true, Fault::None),
                &mut bad,
            );
            report(
                case::<f16, f32>(&mut rng, size, clusters, false, Fault::None),
                &mut bad,
            );
        }
        report(
            case::<bf16, f32>(&mut rng, [129, 64, 40], 2, true, Fault::None),
            &mut bad,
        );
        // C by the copy engine (beta 0, rows of a multiple of 16 bytes), ragged in M and N
        report(
            case::<bf16, bf16>(&mut rng, [130, 264, 136], 2, true, Fault::None),
            &mut bad,
        );
        report(
            case::<f16, f32>(&mut rng, [130, 260, 136], 1, true, Fault::None),
            &mut bad,
        );
        report(
            case::<f16, f16>(&mut rng, [129, 64, 40], 2, false, Fault::None),
            &mut bad,
        );
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn the_public_entry_is_the_execution() {
        let mut rng = Rng::new(7);
        let (m, n, k) = (19, 12, 40);
        let a: Vec<bf16> = rng.fill(m * k);
        let b: Vec<bf16> = rng.fill(n * k);
        let c: Vec<f32> = rng.fill(m * n);
        let run = gemm_sm90_exec(&a, &b, &c, m, n, k, 1.5, -0.25, 4);
        let inner = exec(&a, &b, &c, [m, n, k], 1.5, -0.25, 4, SEED, Fault::None);
        assert_eq!(run.c, inner.c);
        assert_eq!(run.coverage_error(), None);
        assert!(run.hazards.is_empty(), "{:?}", run.hazards);
        let (want, tol) =
            gemm_reference_and_tolerance::<bf16, f32>(&a, &b, &c, m, n, k, 1.5, -0.25);
        assert!(check_gemm(&run.c, &want, &tol, n).ok());
    }

    /// The same inputs, any interleaving: the same C, bit for bit (the arithmetic's order is
    /// the kernel's, whatever the order of the agents).
    #[test]
    fn the_interleaving_does_not_change_c() {
        let mut rng = Rng::new(11);
        let (m, n, k) = (140, 40, 5 * BK as usize + 3);
        let a: Vec<f16> = rng.fill(m * k);
        let b: Vec<f16> = rng.fill(n * k);
        let c: Vec<f16> = rng.fill(m * n);
        let runs: Vec<_> = [1, 2, 3]
            .map(|seed| exec(&a, &b, &c, [m, n, k], 0.75, 0.5, 1, seed, Fault::None))
            .into_iter()
            .collect();
        for r in &runs {
            assert_eq!(r.hazard_count, 0, "{:?}", r.hazards);
            assert_eq!(r.c, runs[0].c);
        }
    }

    /// Each fault must be seen, as hazards or a wrong C, under several interleavings (fixed
    /// seeds: a fault that an interleaving could hide must not make the test flaky).
    fn must_fail(fault: Fault, size: [usize; 3], clusters: usize, expect: &[&str]) {
        for seed in [1, 2, 3] {
            let mut rng = Rng::new(seed);
            let e = case::<bf16, f32>(&mut rng, size, clusters, false, fault)
                .expect_err("the fault must be seen");
            eprintln!("{fault:?} (seed {seed}): {e}");
            assert!(expect.iter().any(|x| e.contains(x)), "{e}");
        }
    }

    #[test]
    fn a_shifted_descriptor_is_seen() {
        // A's k-blocks paired with the wrong B's: the reads stay in the right k-tile, C is wrong
        must_fail(
            Fault::ShiftDescriptor,
            [70, 90, 2 * BK as usize],
            1,
            &["worst at"],
        );
    }

    #[test]
    fn an_early_release_is_a_hazard() {
        let k = (STAGES as usize + 3) * BK as usize;
        must_fail(Fault::EarlyRelease, [200, 300, k], 1, &["hazards"]);
    }

    #[test]
    fn a_producer_that_skips_the_empty_wait_is_a_hazard() {
        let k = (STAGES as usize + 3) * BK as usize;
        must_fail(Fault::SkipEmptyWait, [200, 300, k], 1, &["hazards"]);
    }

    #[test]
    fn a_b_half_not_multicast_is_a_hazard() {
        must_fail(Fault::OwnHalfOnly, [130, 60, 70], 1, &["hazards"]);
    }

    #[test]
    fn staging_in_the_other_warpgroups_region_is_a_hazard() {
        must_fail(Fault::OtherStaging, [130, 60, 70], 1, &["hazards"]);
    }

    /// The mbarrier model's phases and transaction bytes: the partner's bytes may land before
    /// the arming, and a wait on the parity of a phase not yet complete blocks.
    #[test]
    fn the_mbarrier_model() {
        let mut full = Mbar::new(1);
        assert!(full.passed(1) && !full.passed(0));
        full.complete_tx(100); // the partner's multicast, early
        assert!(!full.passed(0));
        full.expect_tx(300);
        assert!(full.arrive());
        assert!(!full.passed(0));
        full.complete_tx(200);
        assert!(full.passed(0) && !full.passed(1));
        let mut empty = Mbar::new(2);
        assert!(empty.arrive() && empty.arrive() && empty.passed(0));
        assert!(empty.arrive() && empty.arrive() && empty.passed(1));
        let mut one = Mbar::new(1);
        one.expect_tx(8);
        assert!(one.arrive());
        assert!(
            !one.arrive(),
            "a second arrival in a phase that expects one"
        );
    }

    /// The boxes land where the descriptors read: each element `(row, k)` of A's box and of B's
    /// two halves, loaded into a stage and read back through k-block `k / 16`'s descriptors.
    #[test]
    fn the_descriptors_read_what_the_boxes_wrote() {
        let s = 2;
        let base = stage_addr(s);
        // element (row, k) of the tile's A (rows 0..BM) or B (rows 0..BN) at shared byte
        let mut a_at = vec![0i64; (BM * BK) as usize];
        let mut b_at = vec![0i64; (BN * BK) as usize];
        for rank in 0..CLUSTER_M {
            for ld in loads([0, 0], 0, rank) {
                let rows = if ld.b { B_BOX_ROWS } else { BM };
                for r in 0..rows {
                    for c in 0..BK {
                        let byte = 2 * SW.apply((base + ld.at + 2 * (r * BK + c)) / 2);
                        if ld.b {
                            b_at[((ld.coords[1] + r) * BK + c) as usize] = byte;
                        } else {
                            a_at[(r * BK + c) as usize] = byte;
                        }
                    }
                }
            }
        }
        for kb in 0..K_BLOCKS {
            for wg in 0..2 {
                let [da, db] = descriptors(base as u32, wg, kb);
                let (da, db) = (GmmaDescriptor { desc: da }, GmmaDescriptor { desc: db });
                for kk in 0..16 {
                    for mm in 0..64 {
                        let row = 64 * wg + mm;
                        assert_eq!(
                            da.hardware_address(GmmaMajor::K, 16, mm, kk),
                            a_at[(row * BK + 16 * kb + kk) as usize],
                            "A wg {wg} kb {kb} ({mm}, {kk})"
                        );
                    }
                    for nn in 0..BN {
                        assert_eq!(
                            db.hardware_address(GmmaMajor::K, 16, nn, kk),
                            b_at[(nn * BK + 16 * kb + kk) as usize],
                            "B kb {kb} ({nn}, {kk})"
                        );
                    }
                }
            }
        }
        const { assert!(B_AT + BN * BK * 2 <= STAGE_BYTES) };
    }
}
