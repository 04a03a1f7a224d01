//! The host execution of `gemm_sm80` (`tessel_gpu::gemm`): the kernel's partitioning run on the
//! CPU, block by block, warp by warp and lane by lane, with a host buffer as each block's shared
//! memory.
//!
//! What is emulated, in the kernel's order (its `dev` module: `gemm`, `mainloop`, `fragments`,
//! `Fast`, `load_stage`, `epilogue`):
//!
//! - the stage loads: every thread's chunks of 8 16-bit elements at its [`LOAD_A`] / [`LOAD_B`]
//!   coordinates, swizzled by [`SW`] into stage `kt % STAGES`; `cp.async` with zero fill when the
//!   operands move by 16-byte chunks (`K` a multiple of 8), else the element-by-element loads
//!   and `st.shared.v4` (predicated-off elements zero);
//! - the pipeline: the prologue's loads, `cp.async.commit_group`, `cp.async.wait_group N`,
//!   `__syncthreads`, the load of tile `kt + STAGES - 1` at k-step 0 and the double-buffered
//!   fragments (those of the next k-step read before the current one's MMAs);
//! - `ldmatrix.x4` at the addresses the kernel computes for each lane (from the thread origins of
//!   the warp's lane 0 in [`A_PLAN`] / [`B_PLAN`], [`ldsm_origin`] and the m-tile / n-tile-pair
//!   strides): lane `l` receives in word `q` the elements `(l / 4, 2 (l % 4))` and
//!   `(l / 4, 2 (l % 4) + 1)` of the 8x8 matrix whose rows lanes `8q..8q+8` address;
//! - `mma.sync.m16n8k16.row.col` with `f32` accumulation, its registers mapped to `(m, k)`,
//!   `(n, k)` and `(m, n)` by the atom's TV layouts;
//! - the epilogue: the accumulators times `alpha` into the `f32` tile at [`C_PLAN`] coordinates
//!   (pitch [`C_PITCH`]), a barrier, then [`STORE_16`] / [`STORE_32`]'s accesses to C with
//!   `beta C` added (C not read when `beta == 0`), whole 16-byte accesses where the block tile
//!   lies inside C, else element by element predicated by C's bounds.
//!
//! Shared memory is tracked unit by unit (16 bits): which load (operand and k-tile) or the
//! accumulator store wrote it, from which barrier on all threads see it, and in which barrier
//! interval it was last read. A fragment used by an MMA must come entirely from its own operand's
//! loads of the k-tile being computed, landed (`cp.async` lands at the `wait_group` that covers
//! it, the latest moment it may) and published by a barrier; a write into a unit read since the
//! last barrier (`cp.async` may land as soon as it is issued) is a race; the epilogue must read
//! only accumulators stored before its barrier. Every breach is reported in
//! [`GemmRun::hazards`]. Writes to C are counted.
//!
//! The kernel's test of whether the operands move by chunks is private to its nvptx-only `dev`
//! module: it is written again here (K a multiple of 8, buffers 16-byte aligned).

use layout_core::{
    MmaAtom, TvCoords, SM80_16X8X16_F32BF16BF16F32_TN, SM80_16X8X16_F32F16F16F32_TN,
};
use std::collections::VecDeque;
use tessel_gpu::gemm::{
    raster, A_ELEMS, BK, BM, BN, CHUNKS_A, CHUNKS_B, C_PITCH, C_PLAN, K_STEPS, LOAD_A, LOAD_B,
    MMA_M, MMA_N, ROW_STEP, SMEM_BYTES, STAGES, STAGE_BYTES, STORE_16, STORE_32, SW, THREADS,
};

use crate::gemm::{GemmIn, GemmOut};

/// Rows from a warp's m-tile `i` to `i + 1` in a stage (the kernel's `A_ROWS`).
pub const A_STEP_ROWS: i64 = tessel_gpu::gemm::A_ROWS;
/// Rows from a warp's n-tile pair `jj` to `jj + 1` in a stage (the kernel's `B_ROWS`).
pub const B_STEP_ROWS: i64 = tessel_gpu::gemm::B_ROWS;

const LANES: usize = 32;
const WARPS: usize = (THREADS / 32) as usize;
const NA: usize = MMA_M as usize;
const NB: usize = MMA_N as usize;
const KS: usize = K_STEPS as usize;
/// At most this many hazards are described; all are counted.
const MAX_HAZARDS: usize = 16;

/// What a host execution of `gemm_sm80` produced.
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

/// A deliberate fault, to show that the checks can fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    /// `ldmatrix` delivers words 0 and 1 swapped.
    SwapLdsmWords,
    /// The barrier before each tile's last k-step is left out.
    SkipBarrier,
    /// Thread 0 leaves out its first store to C.
    DropStore,
    /// The fragments are read from stage 0 throughout (the read stage never advances).
    StuckRead,
}

/// `C = alpha A B^T + beta C` as `gemm_sm80` computes it: `a` `M x K`, `b` `N x K`, `c` `M x N`,
/// row-major and packed (the kernel's TN layout). `c` is read only when `beta != 0`.
///
/// # Panics
/// When a size is 0 or the slices' lengths are not `M K`, `N K` and `M N`.
#[allow(clippy::too_many_arguments)]
pub fn gemm_exec<I: GemmIn, O: GemmOut>(
    a: &[I],
    b: &[I],
    c: &[O],
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
) -> GemmRun<O> {
    exec(a, b, c, [m, n, k], alpha, beta, Fault::None)
}

/// Hazards seen, the first few described (shared by the GEMMs' host executions).
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

/// Nothing wrote the unit yet.
const NOTHING: i64 = -1;
/// The epilogue's accumulator store wrote it.
const ACC: i64 = -2;
/// What a stage load of operand `op` (0 A, 1 B) of k-tile `kt` writes.
const fn load_tag(kt: i64, op: i64) -> i64 {
    2 * kt + op
}
fn describe(tag: i64) -> String {
    match tag {
        NOTHING => "nothing".into(),
        ACC => "the accumulator store".into(),
        t => format!(
            "{}'s load of k-tile {}",
            ["A", "B"][(t % 2) as usize],
            t / 2
        ),
    }
}

/// The record of one 16-bit unit of shared memory.
#[derive(Clone, Copy)]
struct Unit {
    /// Who wrote it last ([`load_tag`], [`ACC`], [`NOTHING`]).
    by: i64,
    /// The first barrier interval in which every thread sees that write.
    visible: i64,
    /// The barrier interval in which it was last read.
    read: i64,
}

/// A `cp.async` of 16 bytes: where, what, by whom.
struct InFlight {
    byte: i64,
    data: [u16; 8],
    by: i64,
}

/// A block's shared memory, in 16-bit units, with each unit's record.
struct Smem<'h> {
    data: Vec<u16>,
    unit: Vec<Unit>,
    /// Barriers passed.
    epoch: i64,
    /// `cp.async`s issued since the last commit.
    open: Vec<InFlight>,
    /// Committed groups not yet waited for, oldest first.
    groups: VecDeque<Vec<InFlight>>,
    block: i64,
    hazards: &'h mut Hazards,
}

/// Where a fragment's elements came from: one writer, landed and published; else what went wrong.
type Source = Result<i64, String>;

fn merge(acc: &mut Option<Source>, s: Source) {
    *acc = Some(match (acc.take(), s) {
        (None, s) => s,
        (Some(Err(e)), _) => Err(e),
        (Some(Ok(_)), Err(e)) => Err(e),
        (Some(Ok(x)), Ok(y)) if x == y => Ok(x),
        (Some(Ok(x)), Ok(y)) => Err(format!("mixes {} and {}", describe(x), describe(y))),
    });
}

impl<'h> Smem<'h> {
    fn new(block: i64, hazards: &'h mut Hazards) -> Self {
        let units = (SMEM_BYTES / 2) as usize;
        Self {
            // never written: a NaN as bf16, f16 and (in pairs) f32
            data: vec![0x7fff; units],
            unit: vec![
                Unit {
                    by: NOTHING,
                    visible: i64::MAX,
                    read: -1,
                };
                units
            ],
            epoch: 0,
            open: Vec::new(),
            groups: VecDeque::new(),
            block,
            hazards,
        }
    }

    /// The units of an access of `bytes` bytes at `byte`, which must be aligned to its size.
    fn units(&mut self, byte: i64, bytes: i64, what: &str) -> std::ops::Range<usize> {
        assert!(
            byte >= 0 && byte % bytes == 0 && byte + bytes <= SMEM_BYTES,
            "block {}: {what} of {bytes} bytes at shared byte {byte}: misaligned or outside the \
             {SMEM_BYTES} bytes",
            self.block
        );
        (byte / 2) as usize..((byte + bytes) / 2) as usize
    }

    /// A write of `by` into units `r`: it must not race with a read since the last barrier, and a
    /// load must not write a unit twice.
    fn check_write(&mut self, r: std::ops::Range<usize>, by: i64, what: &str) {
        for u in r {
            let (rec, epoch, block) = (self.unit[u], self.epoch, self.block);
            if rec.read == epoch {
                self.hazards.note(|| {
                    format!(
                        "block {block}: {what} of {} overwrites shared byte {} in the barrier \
                         interval it was read ({epoch})",
                        describe(by),
                        2 * u
                    )
                });
            }
            if rec.by == by {
                self.hazards.note(|| {
                    format!(
                        "block {block}: {} writes shared byte {} twice",
                        describe(by),
                        2 * u
                    )
                });
            }
        }
    }

    /// Lands `data` at units from `byte`, written by `by`, seen by all after the next barrier.
    fn land(&mut self, byte: i64, data: &[u16], by: i64) {
        let u0 = (byte / 2) as usize;
        for (i, &d) in data.iter().enumerate() {
            self.data[u0 + i] = d;
            self.unit[u0 + i].by = by;
            self.unit[u0 + i].visible = self.epoch + 1;
        }
    }

    /// `cp.async` of 16 bytes (zero-filled by the caller when predicated off).
    fn cp_async(&mut self, byte: i64, data: [u16; 8], by: i64) {
        let r = self.units(byte, 16, "cp.async");
        self.check_write(r, by, "cp.async");
        self.open.push(InFlight { byte, data, by });
    }
    /// `cp.async.commit_group`.
    fn commit(&mut self) {
        let g = std::mem::take(&mut self.open);
        self.groups.push_back(g);
    }
    /// `cp.async.wait_group n`: all but the newest `n` groups land now.
    fn wait(&mut self, n: i64) {
        while self.groups.len() as i64 > n {
            for c in self.groups.pop_front().unwrap_or_default() {
                self.land(c.byte, &c.data, c.by);
            }
        }
    }
    /// `__syncthreads`.
    fn sync(&mut self) {
        self.epoch += 1;
    }
    /// `st.shared.v4` of 8 16-bit units.
    fn st_v4(&mut self, byte: i64, data: [u16; 8], by: i64) {
        let r = self.units(byte, 16, "st.shared.v4");
        self.check_write(r, by, "st.shared.v4");
        self.land(byte, &data, by);
    }
    /// `st.shared.v2.b32` of two `f32` accumulators.
    fn st_v2_f32(&mut self, byte: i64, x: [f32; 2]) {
        let r = self.units(byte, 8, "st.shared.v2");
        self.check_write(r, ACC, "st.shared.v2");
        let [x0, x1] = [x[0].to_bits(), x[1].to_bits()];
        let d = [x0 as u16, (x0 >> 16) as u16, x1 as u16, (x1 >> 16) as u16];
        self.land(byte, &d, ACC);
    }
    /// Reads units `r` (marking them read in this interval): who wrote them all, if they are
    /// published.
    fn read(&mut self, r: std::ops::Range<usize>) -> Source {
        let mut src = None;
        for u in r {
            let rec = self.unit[u];
            self.unit[u].read = self.epoch;
            let s = if rec.visible <= self.epoch {
                Ok(rec.by)
            } else {
                Err(format!(
                    "reads shared byte {}, written by {} and not yet published by a barrier \
                     (interval {})",
                    2 * u,
                    describe(rec.by),
                    self.epoch
                ))
            };
            merge(&mut src, s);
        }
        src.unwrap_or(Ok(NOTHING))
    }
    /// `ld.shared.v4.f32` of the epilogue: must read the accumulators, published.
    fn ld_v4_f32(&mut self, byte: i64) -> [f32; 4] {
        let r = self.units(byte, 16, "ld.shared.v4");
        let src = self.read(r.clone());
        if src != Ok(ACC) {
            let block = self.block;
            self.hazards.note(|| {
                format!(
                    "block {block}: the epilogue's load at shared byte {byte}: {}",
                    match src {
                        Ok(by) => format!("written by {}", describe(by)),
                        Err(e) => e,
                    }
                )
            });
        }
        let w = |i: usize| {
            u32::from(self.data[r.start + 2 * i])
                | (u32::from(self.data[r.start + 2 * i + 1]) << 16)
        };
        [0, 1, 2, 3].map(|i| f32::from_bits(w(i)))
    }

    /// `ldmatrix.sync.aligned.m8n8.x4.shared.b16`: `addr[l]` is the row lane `l` gives (row
    /// `l % 8` of matrix `l / 8`); lane `l` receives in word `q` the elements `(l / 4, 2 (l % 4))`
    /// (low half) and `(l / 4, 2 (l % 4) + 1)` of matrix `q`.
    fn ldmatrix_x4(&mut self, addr: &[i64; LANES]) -> ([[u32; 4]; LANES], Source) {
        let mut src = None;
        for &a in addr {
            let r = self.units(a, 16, "ldmatrix row");
            let s = self.read(r);
            merge(&mut src, s);
        }
        let mut out = [[0u32; 4]; LANES];
        for (l, words) in out.iter_mut().enumerate() {
            for (q, w) in words.iter_mut().enumerate() {
                let row = (addr[8 * q + l / 4] / 2) as usize + 2 * (l % 4);
                *w = u32::from(self.data[row]) | (u32::from(self.data[row + 1]) << 16);
            }
        }
        (out, src.unwrap_or(Ok(NOTHING)))
    }
}

/// The atom's registers as coordinates: lane `l`'s value `v` of A at `(m, k)`, of B at `(n, k)`,
/// of C at `(m, n)` (value `v` in word `v / 2`, low half first, for A and B).
struct AtomMaps {
    a: [[[usize; 2]; 8]; LANES],
    b: [[[usize; 2]; 4]; LANES],
    c: [[[usize; 2]; 4]; LANES],
}

impl AtomMaps {
    fn new(atom: &MmaAtom) -> Self {
        let [mm, nn, _] = atom.shape_mnk;
        let at = |tv: &layout_core::Layout, rows: i64, l: usize, v: usize| {
            let i = tv.call(l as i64 + 32 * v as i64);
            [(i % rows) as usize, (i / rows) as usize]
        };
        let mut s = Self {
            a: [[[0; 2]; 8]; LANES],
            b: [[[0; 2]; 4]; LANES],
            c: [[[0; 2]; 4]; LANES],
        };
        for l in 0..LANES {
            for v in 0..8 {
                s.a[l][v] = at(&atom.a, mm, l, v);
            }
            for v in 0..4 {
                s.b[l][v] = at(&atom.b, nn, l, v);
                s.c[l][v] = at(&atom.c, mm, l, v);
            }
        }
        s
    }
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32` over a warp's registers:
/// `D[m,n] = sum_k A[m,k] B[n,k] + C[m,n]`, `d` holding C and receiving D.
///
/// The products of two 16-bit values are exact in `f64` (and in `f32`); the 16 of them and
/// `C[m,n]` are summed in `f64` and rounded to `f32` once, as a fused multi-term add of the
/// tensor core rounds once per instruction (the hardware truncates where this rounds to nearest;
/// the comparison's bound allows either, for any order of additions).
fn mma<I: GemmIn>(
    maps: &AtomMaps,
    a: &[[u32; 4]; LANES],
    b: &[[u32; 2]; LANES],
    d: &mut [[f32; 4]; LANES],
) {
    let val = |w: u32, v: usize| I::widen((w >> (16 * (v % 2))) & 0xffff) as f64;
    let mut am = [[0f64; 16]; 16];
    let mut bm = [[0f64; 16]; 8];
    let mut cm = [[0f64; 8]; 16];
    for l in 0..LANES {
        for v in 0..8 {
            let [m, k] = maps.a[l][v];
            am[m][k] = val(a[l][v / 2], v);
        }
        for v in 0..4 {
            let [n, k] = maps.b[l][v];
            bm[n][k] = val(b[l][v / 2], v);
            let [m, n] = maps.c[l][v];
            cm[m][n] = f64::from(d[l][v]);
        }
    }
    for (dl, cl) in d.iter_mut().zip(&maps.c) {
        for (x, &[m, n]) in dl.iter_mut().zip(cl) {
            let s: f64 = (0..16).map(|k| am[m][k] * bm[n][k]).sum();
            *x = (s + cm[m][n]) as f32;
        }
    }
}

/// Lane `l`'s `ldmatrix` byte offsets in a stage per k-step, for A (m-tile 0) and B (n-tiles 0
/// and 1), computed as the kernel's `gemm` computes them.
#[derive(Clone, Copy)]
struct LdsmOffsets {
    a: [i64; KS],
    b: [i64; KS],
}

fn ldsm_offsets(tid: i64) -> LdsmOffsets {
    // k-step 0's place is the kernel's; k-step ks is that XOR 32 ks bytes (KSTEP_IS_XOR)
    let [a0, b0] = tessel_gpu::gemm::ldsm_offsets(tid);
    LdsmOffsets {
        a: std::array::from_fn(|ks| a0 ^ (32 * ks as i64)),
        b: std::array::from_fn(|ks| b0 ^ (32 * ks as i64)),
    }
}

/// A warp's fragments of one k-step, and where they came from.
#[derive(Clone)]
struct Frag {
    a: [[[u32; 4]; LANES]; NA],
    b: [[[u32; 2]; LANES]; NB],
    src_a: Source,
    src_b: Source,
}

/// Every warp's fragments of k-step `ks` from the stage at byte `s` (the kernel's `fragments`).
fn fragments(sm: &mut Smem, offs: &[LdsmOffsets], s: i64, ks: usize, fault: Fault) -> Vec<Frag> {
    let a_step = 2 * A_STEP_ROWS * BK;
    let b_step = 2 * B_STEP_ROWS * BK;
    let ldsm = |sm: &mut Smem, addr: [i64; LANES], src: &mut Option<Source>| {
        let (mut w, s) = sm.ldmatrix_x4(&addr);
        if fault == Fault::SwapLdsmWords {
            for x in w.iter_mut() {
                x.swap(0, 1);
            }
        }
        merge(src, s);
        w
    };
    (0..WARPS)
        .map(|w| {
            let lane = |l: usize| &offs[32 * w + l];
            let (mut src_a, mut src_b) = (None, None);
            let mut f = Frag {
                a: [[[0; 4]; LANES]; NA],
                b: [[[0; 2]; LANES]; NB],
                src_a: Ok(NOTHING),
                src_b: Ok(NOTHING),
            };
            for i in 0..NA {
                let addr = std::array::from_fn(|l| s + lane(l).a[ks] + i as i64 * a_step);
                f.a[i] = ldsm(sm, addr, &mut src_a);
            }
            let sb = s + 2 * A_ELEMS;
            for jj in 0..NB / 2 {
                let addr = std::array::from_fn(|l| sb + lane(l).b[ks] + jj as i64 * b_step);
                let r = ldsm(sm, addr, &mut src_b);
                for (l, w) in r.iter().enumerate() {
                    f.b[2 * jj][l] = [w[0], w[1]];
                    f.b[2 * jj + 1][l] = [w[2], w[3]];
                }
            }
            f.src_a = src_a.unwrap_or(Ok(NOTHING));
            f.src_b = src_b.unwrap_or(Ok(NOTHING));
            f
        })
        .collect()
}

/// One operand of the GEMM, as a stage load sees it.
struct Operand<'a, I> {
    t: &'a [I],
    rows: i64,
    k: i64,
    plan: &'a TvCoords<2>,
    chunks: i64,
    /// Block tile index along the rows.
    row0: i64,
    /// 0 for A, 1 for B.
    op: i64,
}

impl<I: GemmIn> Operand<'_, I> {
    /// Every thread's share of k-tile `kt` into the stage part at byte `s`: by 16-byte
    /// `cp.async` (the kernel's `Fast`) when `chunked`, else element by element (`load_stage`).
    fn load(&self, sm: &mut Smem, kt: i64, s: i64, chunked: bool) {
        let by = load_tag(kt, self.op);
        let tile0 = self.plan.tile()[0];
        for tid in 0..THREADS {
            let o = self.plan.thread(tid);
            if chunked {
                let row = self.row0 * tile0 + o[0];
                let col = o[1];
                let dst = 2 * SW.apply(o[0] * BK + o[1]);
                let k_ok = kt * BK + col < self.k;
                for q in 0..self.chunks {
                    let r = row + q * ROW_STEP;
                    let ok = k_ok && r < self.rows;
                    let mut data = [0u16; 8];
                    if ok {
                        let g = (r * self.k + kt * BK + col) as usize;
                        for (e, d) in data.iter_mut().enumerate() {
                            *d = self.t[g + e].bits() as u16;
                        }
                    }
                    sm.cp_async(s + dst + 2 * q * ROW_STEP * BK, data, by);
                }
            } else {
                for q in 0..self.chunks {
                    let v = 8 * q;
                    let c = self.plan.value(v);
                    let mut data = [0u16; 8];
                    for (e, d) in data.iter_mut().enumerate() {
                        let x = self.plan.value(v + e as i64);
                        let (r, col) = (self.row0 * tile0 + o[0] + x[0], kt * BK + o[1] + x[1]);
                        if r < self.rows && col < self.k {
                            let g = (r * self.k + col) as usize;
                            *d = I::narrow(self.t[g].to_f32()) as u16;
                        }
                    }
                    sm.st_v4(s + 2 * SW.apply((o[0] + c[0]) * BK + o[1] + c[1]), data, by);
                }
            }
        }
    }
}

/// The accumulators of every thread: `[warp][MMA tile i + MMA_M j][lane]`.
type Acc = Vec<[[[f32; 4]; LANES]; NA * NB]>;

#[allow(clippy::too_many_arguments)]
fn exec<I: GemmIn, O: GemmOut>(
    a: &[I],
    b: &[I],
    c: &[O],
    [m, n, k]: [usize; 3],
    alpha: f32,
    beta: f32,
    fault: Fault,
) -> GemmRun<O> {
    assert!(m >= 1 && n >= 1 && k >= 1, "gemm needs M, N, K >= 1");
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
    let (mi, ni, ki) = (m as i64, n as i64, k as i64);
    let (tiles_m, tiles_n) = ((mi + BM - 1) / BM, (ni + BN - 1) / BN);
    let ktiles = (ki + BK - 1) / BK;
    // the kernel's `chunked`: K-stride 1 and rows a multiple of 8 elements apart (the buffers
    // start 16-byte aligned); packed A and B share K
    let chunked = ki % 8 == 0;
    let atom = if I::BF16 {
        SM80_16X8X16_F32BF16BF16F32_TN
    } else {
        SM80_16X8X16_F32F16F16F32_TN
    };
    let maps = AtomMaps::new(&atom);
    let offs: Vec<LdsmOffsets> = (0..THREADS).map(ldsm_offsets).collect();
    let mut out = c.to_vec();
    let mut writes = vec![0u32; m * n];
    let mut hazards = Hazards::default();

    for blk in 0..tiles_m * tiles_n {
        let [bm, bn] = raster(blk, tiles_m, tiles_n);
        let mut sm = Smem::new(blk, &mut hazards);
        let ops = [
            Operand {
                t: a,
                rows: mi,
                k: ki,
                plan: &LOAD_A,
                chunks: CHUNKS_A,
                row0: bm,
                op: 0,
            },
            Operand {
                t: b,
                rows: ni,
                k: ki,
                plan: &LOAD_B,
                chunks: CHUNKS_B,
                row0: bn,
                op: 1,
            },
        ];
        let load = |sm: &mut Smem, kt: i64, s: i64| {
            ops[0].load(sm, kt, s, chunked);
            ops[1].load(sm, kt, s + 2 * A_ELEMS, chunked);
        };
        let acc = mainloop::<I>(&mut sm, ktiles, &offs, &maps, &load, fault);
        epilogue(
            &mut sm,
            &acc,
            [bm, bn],
            [mi, ni],
            alpha,
            beta,
            &mut out,
            &mut writes,
            fault,
        );
    }
    hazards.run(out, writes)
}

/// The kernel's `mainloop`: the pipeline over `ktiles` k-tiles, every warp's MMAs.
fn mainloop<I: GemmIn>(
    sm: &mut Smem,
    ktiles: i64,
    offs: &[LdsmOffsets],
    maps: &AtomMaps,
    load: &dyn Fn(&mut Smem, i64, i64),
    fault: Fault,
) -> Acc {
    let stage = |s: i64| s * STAGE_BYTES;
    let mut acc: Acc = vec![[[[0f32; 4]; LANES]; NA * NB]; WARPS];
    for kt in 0..STAGES - 1 {
        if kt < ktiles {
            load(sm, kt, stage(kt));
        }
        sm.commit();
    }
    sm.wait(STAGES - 2);
    sm.sync();
    let (mut read, mut write) = (0, STAGES - 1);
    let f0 = fragments(sm, offs, stage(0), 0, fault);
    let mut frag = [f0.clone(), f0];
    for kt in 0..ktiles {
        for ks in 0..KS {
            if ks == KS - 1 {
                sm.wait(STAGES - 2);
                if fault != Fault::SkipBarrier {
                    sm.sync();
                }
                read = if read == STAGES - 1 || fault == Fault::StuckRead {
                    0
                } else {
                    read + 1
                };
            }
            let next = (ks + 1) % KS;
            frag[(ks + 1) % 2] = fragments(sm, offs, stage(read), next, fault);
            if ks == 0 {
                if kt + STAGES - 1 < ktiles {
                    load(sm, kt + STAGES - 1, stage(write));
                }
                sm.commit();
                write = if write == STAGES - 1 { 0 } else { write + 1 };
            }
            for (w, f) in frag[ks % 2].iter().enumerate() {
                for (src, op) in [(&f.src_a, 0), (&f.src_b, 1)] {
                    let want = load_tag(kt, op);
                    if src != &Ok(want) {
                        let block = sm.block;
                        sm.hazards.note(|| {
                            format!(
                                "block {block} warp {w}, k-tile {kt} step {ks}: the {} fragment {}",
                                ["A", "B"][op as usize],
                                match src {
                                    Ok(by) => format!("comes from {}", describe(*by)),
                                    Err(e) => e.clone(),
                                }
                            )
                        });
                    }
                }
                for j in 0..NB {
                    for i in 0..NA {
                        mma::<I>(maps, &f.a[i], &f.b[j], &mut acc[w][i + NA * j]);
                    }
                }
            }
        }
    }
    sm.wait(0);
    sm.sync();
    acc
}

/// The kernel's accumulator store and `epilogue`: C's block tile `(bm, bn)`.
#[allow(clippy::too_many_arguments)]
fn epilogue<O: GemmOut>(
    sm: &mut Smem,
    acc: &Acc,
    [bm, bn]: [i64; 2],
    [m, n]: [i64; 2],
    alpha: f32,
    beta: f32,
    out: &mut [O],
    writes: &mut [u32],
    fault: Fault,
) {
    for tid in 0..THREADS {
        let (w, l) = ((tid / 32) as usize, (tid % 32) as usize);
        let tc = C_PLAN.thread(tid);
        for j in 0..MMA_N {
            for i in 0..MMA_M {
                let d = &acc[w][(i + MMA_M * j) as usize][l];
                for h in 0..2 {
                    let c = C_PLAN.value(4 * (i + MMA_M * j) + 2 * h);
                    let at = 4 * ((tc[0] + c[0]) * C_PITCH + tc[1] + c[1]);
                    let h = h as usize;
                    sm.st_v2_f32(at, [alpha * d[2 * h], alpha * d[2 * h + 1]]);
                }
            }
        }
    }
    sm.sync();

    let v = 128 / O::BITS;
    let plan = if O::BITS == 32 { &STORE_32 } else { &STORE_16 };
    let origin = [bm * BM, bn * BN];
    let whole = origin[0] + BM <= m && origin[1] + BN <= n && n % v == 0;
    let read_c = beta != 0.0;
    for tid in 0..THREADS {
        let o = plan.thread(tid);
        let mut a = 0;
        while a < plan.values() {
            if fault == Fault::DropStore && tid == 0 && a == 0 {
                a += v;
                continue;
            }
            let c = plan.value(a);
            let at = 4 * ((o[0] + c[0]) * C_PITCH + o[1] + c[1]);
            let mut f = [0f32; 8];
            f[..4].copy_from_slice(&sm.ld_v4_f32(at));
            if v == 8 {
                f[4..].copy_from_slice(&sm.ld_v4_f32(at + 16));
            }
            if whole {
                let g = ((origin[0] + o[0] + c[0]) * n + origin[1] + o[1] + c[1]) as usize;
                if read_c {
                    for e in 0..v as usize {
                        f[e] += beta * out[g + e].to_f32();
                    }
                }
                for e in 0..v as usize {
                    out[g + e] = O::from_f32(f[e]);
                    writes[g + e] += 1;
                }
            } else {
                for e in 0..v {
                    let x = plan.value(a + e);
                    let (r, col) = (origin[0] + o[0] + x[0], origin[1] + o[1] + x[1]);
                    if r < m && col < n {
                        let g = (r * n + col) as usize;
                        let mut y = f[e as usize];
                        if read_c {
                            y += beta * out[g].to_f32();
                        }
                        out[g] = O::from_f32(y);
                        writes[g] += 1;
                    }
                }
            }
            a += v;
        }
    }
}

/// Random inputs of a host execution's test and its verdict, shared by the GEMMs' host
/// executions.
#[cfg(test)]
pub(crate) struct Case<I, O> {
    pub a: Vec<I>,
    pub b: Vec<I>,
    pub c: Vec<O>,
    pub mnk: [usize; 3],
    pub alpha: f32,
    pub beta: f32,
}

#[cfg(test)]
impl<I: GemmIn, O: GemmOut + crate::blas::BlasElem> Case<I, O> {
    /// Random `m x n x k` inputs, C poisoned (and `beta` 0) when `beta_zero`.
    pub fn random(rng: &mut crate::elem::Rng, [m, n, k]: [usize; 3], beta_zero: bool) -> Self {
        let a = rng.fill(m * k);
        let b = rng.fill(n * k);
        let c = if beta_zero {
            vec![O::poison(); m * n]
        } else {
            rng.fill(m * n)
        };
        let alpha = (0.5 + rng.uniform().abs()) as f32;
        let beta = if beta_zero { 0.0 } else { rng.uniform() as f32 };
        Case {
            a,
            b,
            c,
            mnk: [m, n, k],
            alpha,
            beta,
        }
    }

    /// `Err` naming what is wrong with `run`: a hazard, an element of C not written exactly
    /// once, or a result outside the f64 reference's bound; else the check's line.
    pub fn judge(&self, what: &str, run: &GemmRun<O>) -> Result<String, String> {
        let [m, n, k] = self.mnk;
        if run.hazard_count > 0 {
            return Err(format!(
                "{what}: {} hazards, first: {:#?}",
                run.hazard_count, run.hazards
            ));
        }
        if let Some((i, w)) = run.coverage_error() {
            return Err(format!("{what}: C[{},{}] written {w} times", i / n, i % n));
        }
        let (want, tol) = crate::blas::gemm_reference_and_tolerance::<I, O>(
            &self.a, &self.b, &self.c, m, n, k, self.alpha, self.beta,
        );
        let chk = crate::blas::check_gemm(&run.c, &want, &tol, n);
        if !chk.ok() {
            return Err(format!("{what}: {chk}"));
        }
        Ok(format!("{what}: {chk}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blas::{check_gemm, gemm_reference, gemm_tolerance, BlasElem};
    use crate::elem::Rng;
    use half::{bf16, f16};
    use tessel_gpu::gemm::{A_PLAN, B_PLAN};

    const TARGET: &str = "-p host --lib gemm_exec";

    /// Random `m x n x k` inputs (C poisoned when `beta_zero`), the host execution with `fault`,
    /// and what is wrong with it, if anything.
    fn case<I: GemmIn, O: GemmOut + BlasElem>(
        rng: &mut Rng,
        [m, n, k]: [usize; 3],
        beta_zero: bool,
        fault: Fault,
    ) -> Result<String, String> {
        let what = format!("{}->{} {m}x{n}x{k} beta0={beta_zero}", I::NAME, O::NAME);
        let x = Case::<I, O>::random(rng, [m, n, k], beta_zero);
        let run = exec(&x.a, &x.b, &x.c, [m, n, k], x.alpha, x.beta, fault);
        x.judge(&what, &run)
    }

    fn sizes() -> Vec<[usize; 3]> {
        let (bm, bn, bk, st) = (BM as usize, BN as usize, BK as usize, STAGES as usize);
        vec![
            [1, 1, 1],
            [17, 33, 65],
            [bm + 1, bn - 3, 2 * bk + 5],
            [2 * bm, 2 * bn, 4 * bk],
            // K a multiple of 8 (cp.async), more k-tiles than stages, whole and ragged C tiles
            [bm + 1, 2 * bn, (st + 2) * bk + 8],
            // element-by-element loads over more k-tiles than stages
            [33, 40, (st + 1) * bk + 3],
        ]
    }

    #[test]
    fn gemm_exec_matches_the_reference() {
        let mut rng = Rng::from_env_or_fresh("gemm_exec_matches_the_reference", TARGET);
        let mut bad = Vec::new();
        for size in sizes() {
            for beta_zero in [true, false] {
                for r in [
                    case::<bf16, bf16>(&mut rng, size, beta_zero, Fault::None),
                    case::<bf16, f32>(&mut rng, size, beta_zero, Fault::None),
                    case::<f16, f16>(&mut rng, size, beta_zero, Fault::None),
                    case::<f16, f32>(&mut rng, size, beta_zero, Fault::None),
                ] {
                    match r {
                        Ok(line) => eprintln!("{line}"),
                        Err(e) => bad.push(e),
                    }
                }
            }
        }
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn the_public_entry_is_the_execution() {
        let mut rng = Rng::new(5);
        let (m, n, k) = (19, 12, 40);
        let a: Vec<bf16> = rng.fill(m * k);
        let b: Vec<bf16> = rng.fill(n * k);
        let c: Vec<f32> = rng.fill(m * n);
        let run = gemm_exec(&a, &b, &c, m, n, k, 1.5, -0.25);
        let inner = exec(&a, &b, &c, [m, n, k], 1.5, -0.25, Fault::None);
        assert_eq!(run.c, inner.c);
        assert_eq!(run.coverage_error(), None);
        assert!(run.hazards.is_empty());
        let want = gemm_reference(&a, &b, &c, m, n, k, 1.5, -0.25);
        let tol = gemm_tolerance(&a, &b, &c, m, n, k, 1.5, -0.25);
        assert!(check_gemm(&run.c, &want, &tol, n).ok());
    }

    #[test]
    fn swapped_ldmatrix_words_fail_the_check() {
        let mut rng = Rng::from_env_or_fresh("swapped_ldmatrix_words_fail_the_check", TARGET);
        let e = case::<bf16, f32>(&mut rng, [17, 33, 65], false, Fault::SwapLdsmWords)
            .expect_err("a wrong ldmatrix must give a wrong C");
        eprintln!("{e}");
        assert!(e.contains("worst at"), "{e}");
    }

    #[test]
    fn a_missing_barrier_is_a_hazard() {
        let mut rng = Rng::from_env_or_fresh("a_missing_barrier_is_a_hazard", TARGET);
        let k = (STAGES as usize + 1) * BK as usize;
        let e = case::<f16, f16>(&mut rng, [40, 24, k], true, Fault::SkipBarrier)
            .expect_err("reading a stage before the barrier must be seen");
        eprintln!("{e}");
        assert!(e.contains("hazards"), "{e}");
    }

    #[test]
    fn a_fragment_from_another_k_tile_is_seen() {
        let mut rng = Rng::from_env_or_fresh("a_fragment_from_another_k_tile_is_seen", TARGET);
        let e = case::<bf16, f32>(&mut rng, [20, 30, 3 * BK as usize], false, Fault::StuckRead)
            .expect_err("a fragment of k-tile 0 used for k-tile 1 must be seen");
        eprintln!("{e}");
        assert!(e.contains("comes from A's load of k-tile 0"), "{e}");
    }

    #[test]
    fn a_dropped_store_is_uncovered_c() {
        let mut rng = Rng::from_env_or_fresh("a_dropped_store_is_uncovered_c", TARGET);
        let e = case::<bf16, bf16>(&mut rng, [20, 30, 16], true, Fault::DropStore)
            .expect_err("an element of C never written must be seen");
        eprintln!("{e}");
        assert!(e.contains("written 0 times"), "{e}");
    }

    /// The kernel's `ldmatrix` addresses of A (lane `l`, m-tile `i`, k-step `ks`) are CuTe's
    /// `make_tiled_copy_A(Copy_Atom<SM75_U32x4_LDSM_N, bf16>, mma)` partition of the K-major
    /// `BM x BK` stage, through the swizzle; and every `ldmatrix.x4` of A and B the kernel issues
    /// reads its 32 rows in 4 wavefronts (conflict-free), which the unswizzled stage would not.
    #[test]
    fn ldmatrix_addresses_are_the_copy_atoms_and_conflict_free() {
        use layout_core::{
            make_tiled_copy_a, smem_wavefronts, CopyAtom, IntTuple, Layout, SM75_U32X4_LDSM_N,
        };
        use tessel_gpu::gemm::MMA;
        let copy =
            make_tiled_copy_a(&CopyAtom::new(&SM75_U32X4_LDSM_N, 16).unwrap(), &MMA).unwrap();
        let stage = Layout::row_major(IntTuple::from_ints(&[BM, BK]).unwrap()).unwrap();
        let (thr, vals) = copy.partition_modes_s(&stage).unwrap();
        let (a_step, b_step) = (2 * A_STEP_ROWS * BK, 2 * B_STEP_ROWS * BK);
        for w in 0..THREADS / 32 {
            for ks in 0..K_STEPS as usize {
                for i in 0..MMA_M {
                    let kernel: Vec<i64> = (0..32)
                        .map(|l| ldsm_offsets(32 * w + l).a[ks] + i * a_step)
                        .collect();
                    let api: Vec<i64> = (0..32)
                        .map(|l| {
                            let off = thr.call(32 * w + l) + vals.call(8 * (i + MMA_M * ks as i64));
                            2 * SW.apply(off)
                        })
                        .collect();
                    assert_eq!(kernel, api, "warp {w} k-step {ks} m-tile {i}");
                    assert_eq!(smem_wavefronts(&kernel, 16).unwrap(), 4);
                    // the same rows unswizzled: several rows share banks
                    let plain: Vec<i64> = (0..32)
                        .map(|l| {
                            2 * (thr.call(32 * w + l) + vals.call(8 * (i + MMA_M * ks as i64)))
                        })
                        .collect();
                    assert!(smem_wavefronts(&plain, 16).unwrap() > 4);
                }
                for jj in 0..MMA_N / 2 {
                    let kernel: Vec<i64> = (0..32)
                        .map(|l| ldsm_offsets(32 * w + l).b[ks] + jj * b_step)
                        .collect();
                    assert_eq!(smem_wavefronts(&kernel, 16).unwrap(), 4, "B {w} {ks} {jj}");
                }
            }
        }
    }

    #[test]
    fn the_kernels_steps_agree_with_the_plans() {
        // m-tile i of a warp's A lies i A_STEP_ROWS rows below m-tile 0; n-tile 2 jj + t of its
        // B lies jj B_STEP_ROWS rows below n-tile t
        for ks in 0..K_STEPS {
            let a0 = A_PLAN.value(8 * MMA_M * ks);
            for i in 0..MMA_M {
                let ai = A_PLAN.value(8 * (i + MMA_M * ks));
                assert_eq!(ai, [a0[0] + i * A_STEP_ROWS, a0[1]], "A m-tile {i}");
            }
            for j in 0..MMA_N {
                let b0 = B_PLAN.value(4 * (j % 2 + MMA_N * ks));
                let bj = B_PLAN.value(4 * (j + MMA_N * ks));
                assert_eq!(bj, [b0[0] + (j / 2) * B_STEP_ROWS, b0[1]], "B n-tile {j}");
            }
        }
        // the swizzle commutes with those steps, as the kernel's offsets assume
        for x in 0..4 * B_STEP_ROWS * BK {
            for d in [A_STEP_ROWS * BK, B_STEP_ROWS * BK] {
                assert_eq!(SW.apply(x + d), SW.apply(x) + d);
            }
        }
    }

    #[test]
    fn ldmatrix_delivers_rows_as_the_isa_says() {
        // each 16-bit unit holds its own index: lane l's word q must hold the elements
        // (l/4, 2(l%4)) and (l/4, 2(l%4)+1) of matrix q, whose row r lane 8q + r addresses
        let mut h = Hazards::default();
        let mut sm = Smem::new(0, &mut h);
        for (i, d) in sm.data.iter_mut().enumerate() {
            *d = i as u16;
        }
        for u in sm.unit.iter_mut() {
            u.visible = 0;
        }
        // matrix q's rows 64 bytes apart, matrices 1024 bytes apart, rows reversed
        let addr: [i64; 32] =
            std::array::from_fn(|l| 1024 * (l as i64 / 8) + 64 * (7 - l as i64 % 8));
        let (w, _) = sm.ldmatrix_x4(&addr);
        for l in 0..32 {
            for q in 0..4 {
                let row = addr[8 * q + l / 4] / 2 + 2 * (l as i64 % 4);
                assert_eq!(
                    w[l][q],
                    row as u32 | ((row as u32 + 1) << 16),
                    "lane {l} word {q}"
                );
            }
        }
    }
}
