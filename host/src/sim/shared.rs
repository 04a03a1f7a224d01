//! A block's shared memory on the simulated GPU: its elements, each with the last write and the
//! reads since (thread, epoch, site), checked against the block's happens-before ([`Clocks`]) at
//! every access; and the `cp.async` copies in flight into it, which land at the wait that covers
//! them. [`SharedMem`] is the engine a kernel's `Ctx::smem` gets.
//!
//! Reported, each with the sites of both accesses: two threads touching one element, one of them
//! writing, with no barrier between them (a race); an element read before any write; an element
//! touched while a `cp.async` into it is in flight (a missing wait, or a missing barrier after
//! it); a thread that ends with copies in flight.

use super::block::{current, fault, span, Site};
use super::clock::{Clocks, Epoch};
use super::global::HostMem;
use layout_core::Engine;
use std::panic::Location;
use tessel_device::sim::Sync;
use tessel_gpu::mem::{AsyncCopy, Dsm, Ldmatrix, Mem, Recast, V4};

/// One access: its epoch and where the kernel made it.
#[derive(Clone, Copy, Debug)]
struct Access {
    at: Epoch,
    site: Site,
}

/// What is known of one element.
#[derive(Clone, Debug, Default)]
struct Cell {
    /// The [`Smem::stamp`] this state was last brought up to: before the block's start it is an
    /// earlier block's (the element is unwritten in this one); before the last block barrier its
    /// reads are ordered before every thread.
    stamp: u32,
    /// `1 + thread` whose `cp.async` into this element is in flight, or 0.
    copy: u16,
    /// The async proxy's view: [`LOAD`], [`READ`], and for a write by a thread ([`GENERIC`])
    /// the writer's fence count when it wrote ([`TAG`] bits).
    proxy: u16,
    write: Option<Access>,
    /// The reads since the last write and block barrier: the first, and any after it (most
    /// elements have one reader between barriers; 48 bytes a cell keep the shadow in cache).
    read: Option<Access>,
    // boxed: 8 bytes in the cell, where a `Vec` takes 24 (most cells never have a second read)
    #[allow(clippy::box_collection)]
    more_reads: Option<Box<Vec<Access>>>,
}

impl Cell {
    /// Forgets the reads.
    fn clear_reads(&mut self) {
        self.read = None;
        if let Some(m) = &mut self.more_reads {
            m.clear();
        }
    }
}

/// A copy-engine load into the element is in flight.
const LOAD: u16 = 1 << 15;
/// A copy-engine store or a wgmma in flight reads the element.
const READ: u16 = 1 << 14;
/// The last write was a thread's (the generic proxy's), not the copy engine's.
const GENERIC: u16 = 1 << 13;
/// The writer's [`Smem::fences`] count, modulo `2^13`, at a [`GENERIC`] write.
const TAG: u16 = GENERIC - 1;

/// What an operation of the async proxy in flight does.
#[derive(Clone, Debug)]
pub enum AsyncKind {
    /// A copy-engine load: the 16-byte chunks it writes (byte address, bytes), the mbarrier it
    /// counts its bytes on.
    Load {
        /// The chunks.
        chunks: Vec<(usize, [u8; 16])>,
        /// The mbarrier (shared byte offset).
        bar: u32,
        /// Its bytes.
        bytes: u32,
    },
    /// A copy-engine store, issued by thread `owner`.
    Store,
    /// A wgmma of warpgroup `owner`.
    Wgmma,
}

/// An operation of the async proxy (the copy engine, the tensor cores' wgmma) on the block's
/// shared memory, in flight.
#[derive(Clone, Debug)]
pub struct AsyncOp {
    /// What it does.
    pub kind: AsyncKind,
    /// The thread that issued it (a load or store), or the warpgroup (a wgmma).
    pub owner: usize,
    /// Its bulk group or wgmma batch, `None` before the owner's next commit.
    pub group: Option<u32>,
    /// The elements it writes or reads.
    pub elems: Vec<usize>,
    /// Where it was issued.
    pub site: Site,
}

impl AsyncOp {
    fn name(&self) -> String {
        match self.kind {
            AsyncKind::Load { .. } => format!("thread {}'s TMA load", self.owner),
            AsyncKind::Store => format!("thread {}'s TMA store", self.owner),
            AsyncKind::Wgmma => format!("warpgroup {}'s wgmma", self.owner),
        }
    }
}

/// A `cp.async` in flight.
#[derive(Clone, Copy, Debug)]
struct InFlight {
    /// The group it was committed in, `None` before the thread's next commit.
    group: Option<u32>,
    elem: usize,
    elems: usize,
    data: V4,
    site: Site,
}

/// The block's shared memory: the shadow of its elements and the copies in flight.
#[derive(Debug)]
pub struct Smem {
    elem_bytes: usize,
    cells: Vec<Cell>,
    /// Counts block starts and block barriers; `block_start` is its value at the running block's
    /// start.
    stamp: u32,
    block_start: u32,
    /// Per thread: its copies in flight, and its groups committed so far.
    copies: Vec<Vec<InFlight>>,
    groups: Vec<u32>,
    /// The block's shared memory.
    data: *mut u8,
    /// The block's first thread in the cluster's numbering (`rank * threads`).
    base: usize,
    /// The async proxy's operations in flight.
    ops: Vec<AsyncOp>,
    /// Per thread: its bulk groups committed so far.
    bulk_groups: Vec<u32>,
    /// Per warpgroup: its wgmma batches committed so far, and whether it has fenced since its
    /// last wait.
    pub warpgroups: Vec<(u32, bool)>,
}

impl Default for Smem {
    fn default() -> Self {
        Smem {
            elem_bytes: 1,
            cells: Vec::new(),
            stamp: 0,
            block_start: 0,
            copies: Vec::new(),
            groups: Vec::new(),
            data: std::ptr::null_mut(),
            base: 0,
            ops: Vec::new(),
            bulk_groups: Vec::new(),
            warpgroups: Vec::new(),
        }
    }
}

/// Which access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
}

impl Smem {
    /// `elems` elements of `elem_bytes` bytes, never written, for `threads` threads.
    /// The cells of the block before are reset as they are next touched, keeping the memory of
    /// their reads.
    /// The block is `base / threads`-th of its cluster, its threads `base..base + threads`.
    pub fn reset(
        &mut self,
        (data, elems, elem_bytes): (*mut u8, usize, usize),
        (base, threads): (usize, usize),
    ) {
        self.data = data;
        self.base = base;
        self.ops.clear();
        self.bulk_groups.clear();
        self.bulk_groups.resize(threads, 0);
        self.warpgroups.clear();
        self.warpgroups.resize(threads.div_ceil(128), (0, false));
        self.elem_bytes = elem_bytes;
        self.cells.resize(elems, Cell::default());
        self.stamp += 1;
        self.block_start = self.stamp;
        self.copies.iter_mut().for_each(Vec::clear);
        self.copies.resize(threads, Vec::new());
        self.groups.clear();
        self.groups.resize(threads, 0);
    }

    /// Every thread passed a block barrier: reads before it are ordered before every access after.
    pub fn block_barrier(&mut self) {
        self.stamp += 1;
    }

    /// Thread `t`'s access of `n` elements from `i`.
    fn access(
        &mut self,
        clocks: &Clocks,
        t: usize,
        (i, n): (usize, usize),
        kind: Kind,
        site: Site,
    ) {
        let now = Access {
            at: clocks.now(t),
            site,
        };
        let (stamp, start) = (self.stamp, self.block_start);
        for e in i..i + n {
            let cell = &mut self.cells[e];
            if cell.stamp != stamp {
                if cell.stamp < start {
                    cell.write = None;
                    cell.copy = 0;
                    cell.proxy = 0;
                }
                cell.clear_reads();
                cell.stamp = stamp;
            }
            if cell.copy != 0 {
                self.in_flight(e, t, kind, site);
            }
            if cell.proxy & LOAD != 0 || (kind == Kind::Write && cell.proxy & READ != 0) {
                self.proxy_conflict(e, t, kind, site);
            }
            match kind {
                Kind::Read => {
                    let Some(w) = cell.write else {
                        fault(format!(
                            "shared element {e} read by thread {t} at {site} before any thread \
                             wrote it (never written, or its writer not yet run: a missing \
                             barrier)"
                        ));
                    };
                    if !clocks.before(w.at, t) {
                        race(e, w, "wrote", now, "read");
                    }
                    match cell.read {
                        None => cell.read = Some(now),
                        Some(r) if r.at == now.at => {}
                        Some(_) => {
                            let more = cell.more_reads.get_or_insert_default();
                            if more.last().is_none_or(|r| r.at != now.at) {
                                more.push(now);
                            }
                        }
                    }
                }
                Kind::Write => {
                    if let Some(w) = cell.write.filter(|w| !clocks.before(w.at, t)) {
                        race(e, w, "wrote", now, "wrote");
                    }
                    let unordered = |r: &&Access| !clocks.before(r.at, t);
                    let more = cell.more_reads.iter().flat_map(|m| m.iter());
                    if let Some(&r) = cell.read.iter().chain(more).find(unordered) {
                        race(e, r, "read", now, "wrote");
                    }
                    cell.write = Some(now);
                    cell.proxy = GENERIC | (clocks.fences(t) as u16 & TAG);
                    cell.clear_reads();
                }
            }
        }
    }

    /// Element `e`, touched by thread `t` at `site`, is written by a copy-engine load in flight,
    /// or (`kind` a write) read by a store or wgmma in flight: the fault.
    fn proxy_conflict(&self, e: usize, t: usize, kind: Kind, site: Site) -> ! {
        let load = self.cells[e].proxy & LOAD != 0;
        let op = self
            .ops
            .iter()
            .find(|o| matches!(o.kind, AsyncKind::Load { .. }) == load && o.elems.contains(&e))
            .expect("an element's operation in flight is in the list");
        let what = if load {
            "is in flight: a missing mbarrier wait (or a wait on another barrier or phase)"
        } else if matches!(op.kind, AsyncKind::Store) {
            "may still read it: a missing bulk_wait_read before the write"
        } else {
            "may still read it: a missing warpgroup_wait before the write (or before the stage \
             was released)"
        };
        fault(format!(
            "shared element {e} {} by thread {t} at {site} while {} issued at {} {what}",
            kind.verb(),
            op.name(),
            op.site
        ))
    }

    /// The async proxy starts writing `elems` (a copy-engine load `op` issued by thread `t`):
    /// a write of `t`'s as far as races go; the elements are then in flight until it lands.
    pub fn begin_load(&mut self, clocks: &Clocks, t: usize, op: AsyncOp) {
        for &e in &op.elems {
            self.access(clocks, t, (e, 1), Kind::Write, op.site);
            self.cells[e].proxy |= LOAD;
        }
        self.ops.push(op);
    }

    /// The async proxy starts reading `elems` (a store issued by thread `t`, or a wgmma of
    /// `t`'s warpgroup): reads of `t`'s as far as races go, of elements the copy engine wrote or
    /// whose writers fenced since; the elements are then read until the operation retires.
    /// `data` gives the bytes at a byte address.
    pub fn begin_read(&mut self, clocks: &Clocks, t: usize, op: AsyncOp) {
        for &e in &op.elems {
            self.access(clocks, t, (e, 1), Kind::Read, op.site);
            let cell = &mut self.cells[e];
            if let Some(w) = cell.write.filter(|_| cell.proxy & GENERIC != 0) {
                let u = w.at.thread as usize;
                if clocks.fences(u) as u16 & TAG == cell.proxy & TAG {
                    fault(format!(
                        "shared element {e}, written by thread {u} at {}, read by {} issued at \
                         {} with no fence_proxy_async by thread {u} after its write: the async \
                         proxy may not see it",
                        w.site,
                        op.name(),
                        op.site
                    ));
                }
            }
            cell.proxy |= READ;
        }
        self.ops.push(op);
    }

    /// The block's shared memory, `n` bytes from byte `at` (inside it: the caller checked).
    pub fn bytes(&self, at: usize, n: usize) -> &[u8] {
        // SAFETY: the block's buffer, `elem_bytes * cells.len()` bytes; the caller keeps inside
        unsafe { std::slice::from_raw_parts(self.data.add(at), n) }
    }

    /// Bytes of the block's shared memory.
    pub fn len_bytes(&self) -> usize {
        self.cells.len() * self.elem_bytes
    }

    /// Bytes per element of the shadow.
    pub fn elem_bytes(&self) -> usize {
        self.elem_bytes
    }

    /// The block's shared memory.
    pub fn data(&self) -> *mut u8 {
        self.data
    }

    /// The copy-engine loads in flight land, each as a write of the copy engine (thread
    /// `engine` of `clocks`) released to its mbarrier with its bytes. False when none was in
    /// flight.
    pub fn land_loads(
        &mut self,
        clocks: &mut Clocks,
        mbar: &mut super::mbarrier::Mbarriers,
        engine: usize,
    ) -> bool {
        let (loads, rest): (Vec<AsyncOp>, Vec<AsyncOp>) = std::mem::take(&mut self.ops)
            .into_iter()
            .partition(|o| matches!(o.kind, AsyncKind::Load { .. }));
        self.ops = rest;
        let landed = !loads.is_empty();
        for op in loads {
            let AsyncKind::Load { chunks, bar, bytes } = op.kind else {
                unreachable!("loads")
            };
            let seen = clocks.release(engine);
            let at = *seen.last().expect("the engine's own epoch");
            for (addr, data) in &chunks {
                // SAFETY: inside the block's shared memory (checked at the issue)
                unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.data.add(*addr), 16) };
            }
            for &e in &op.elems {
                let cell = &mut self.cells[e];
                // the copy engine's write: no longer in flight, not a thread's
                cell.proxy &= !(LOAD | GENERIC | TAG);
                cell.write = Some(Access { at, site: op.site });
                cell.clear_reads();
            }
            mbar.complete_tx(bar, bytes, seen, op.site);
        }
        landed
    }

    /// The operations `done` picks retire: their elements are no longer read (or written).
    pub fn retire(&mut self, done: impl Fn(&AsyncOp) -> bool) {
        let (gone, keep): (Vec<AsyncOp>, Vec<AsyncOp>) =
            std::mem::take(&mut self.ops).into_iter().partition(done);
        self.ops = keep;
        if gone.is_empty() {
            return;
        }
        for op in &gone {
            for &e in &op.elems {
                self.cells[e].proxy &= !READ;
            }
        }
        for op in self
            .ops
            .iter()
            .filter(|o| !matches!(o.kind, AsyncKind::Load { .. }))
        {
            for &e in &op.elems {
                self.cells[e].proxy |= READ;
            }
        }
    }

    /// Thread `t`'s bulk commit: its stores since the last form a group.
    pub fn bulk_commit(&mut self, t: usize) {
        let g = self.bulk_groups[t - self.base];
        for op in self.ops.iter_mut() {
            if matches!(op.kind, AsyncKind::Store) && op.owner == t && op.group.is_none() {
                op.group = Some(g);
            }
        }
        self.bulk_groups[t - self.base] += 1;
    }

    /// Thread `t`'s bulk groups but the `n` most recent are done.
    pub fn bulk_wait(&mut self, t: usize, n: u32) {
        let groups = self.bulk_groups[t - self.base];
        self.retire(|o| {
            matches!(o.kind, AsyncKind::Store)
                && o.owner == t
                && o.group.is_some_and(|g| g + n < groups)
        });
    }

    /// Warpgroup `g`'s commit: its wgmmas since the last form a batch.
    pub fn wgmma_commit(&mut self, g: usize) {
        let batch = self.warpgroups[g].0;
        for op in self.ops.iter_mut() {
            if matches!(op.kind, AsyncKind::Wgmma) && op.owner == g && op.group.is_none() {
                op.group = Some(batch);
            }
        }
        self.warpgroups[g].0 += 1;
    }

    /// Warpgroup `g`'s batches but the `n` most recent are complete; it must fence again before
    /// its next wgmma.
    pub fn wgmma_wait(&mut self, g: usize, n: u32) {
        let batches = self.warpgroups[g].0;
        self.retire(|o| {
            matches!(o.kind, AsyncKind::Wgmma)
                && o.owner == g
                && o.group.is_some_and(|b| b + n < batches)
        });
        self.warpgroups[g].1 = false;
    }

    /// At the block's end: every operation of the async proxy must have completed.
    pub fn check_block_ended(&self) {
        if let Some(op) = self.ops.first() {
            fault(format!(
                "the block ended with {} issued at {} in flight{}",
                op.name(),
                op.site,
                match op.kind {
                    AsyncKind::Load { .. } => ": nothing waited for it on its mbarrier",
                    AsyncKind::Store => ": a missing bulk_wait before the thread ended",
                    AsyncKind::Wgmma => ": a missing warpgroup_wait",
                }
            ));
        }
    }

    /// Element `e`, touched by thread `t` at `site`, has a copy in flight: the fault.
    fn in_flight(&self, e: usize, t: usize, kind: Kind, site: Site) -> ! {
        let l = self.cells[e].copy as usize - 1;
        let u = self.base + l;
        let c = self.copies[l]
            .iter()
            .find(|c| (c.elem..c.elem + c.elems).contains(&e))
            .expect("an element's copy in flight is its thread's");
        fault(format!(
            "shared element {e} {} by thread {t} at {site} while thread {u}'s cp.async into it \
             (issued at {}) is in flight: a missing cp.async wait{}",
            kind.verb(),
            c.site,
            if u == t {
                ""
            } else {
                ", or a missing barrier after it"
            }
        ))
    }

    /// Thread `t` starts a copy of `data` into the 16 bytes from element `i`.
    fn copy(&mut self, clocks: &Clocks, t: usize, i: usize, data: V4, site: Site) {
        let elems = 16 / self.elem_bytes;
        // the copy writes its bytes some time before the wait: a write, as far as races go
        self.access(clocks, t, (i, elems), Kind::Write, site);
        let l = t - self.base;
        for e in i..i + elems {
            self.cells[e].copy = 1 + l as u16;
        }
        self.copies[l].push(InFlight {
            group: None,
            elem: i,
            elems,
            data,
            site,
        });
    }

    /// Thread `t` commits its copies since its last commit as a group.
    fn commit(&mut self, t: usize) {
        let l = t - self.base;
        let g = self.groups[l];
        for c in self.copies[l].iter_mut().filter(|c| c.group.is_none()) {
            c.group = Some(g);
        }
        self.groups[l] += 1;
    }

    /// Thread `t` waits for its groups but the `n` most recent: their copies land in `data`
    /// (elements of `elem_bytes`), as writes of `t`'s current epoch.
    ///
    /// # Safety
    /// `data` must hold the block's elements.
    unsafe fn wait(&mut self, clocks: &Clocks, t: usize, n: u32, data: *mut u8) {
        let l = t - self.base;
        let done = |c: &InFlight| c.group.is_some_and(|g| g + n < self.groups[l]);
        let (landed, left): (Vec<InFlight>, Vec<InFlight>) = std::mem::take(&mut self.copies[l])
            .into_iter()
            .partition(done);
        self.copies[l] = left;
        for c in landed {
            let at = clocks.now(t);
            for e in c.elem..c.elem + c.elems {
                let cell = &mut self.cells[e];
                cell.copy = 0;
                cell.write = Some(Access { at, site: c.site });
                cell.proxy = GENERIC | (clocks.fences(t) as u16 & TAG);
                cell.clear_reads();
            }
            std::ptr::copy_nonoverlapping(
                c.data.0.as_ptr() as *const u8,
                data.add(c.elem * self.elem_bytes),
                16,
            );
        }
    }

    /// Thread `t` ended: its copies must have landed, its stores been waited for.
    pub fn check_ended(&self, t: usize) {
        let store = |o: &&AsyncOp| matches!(o.kind, AsyncKind::Store) && o.owner == t;
        if let Some(op) = self.ops.iter().find(store) {
            fault(format!(
                "thread {t} ended with its TMA store issued at {} not waited for (bulk_wait)",
                op.site
            ));
        }
        if let Some(c) = self.copies[t - self.base].first() {
            fault(format!(
                "thread {t} ended with {} cp.async copies in flight (the first issued at {}): a \
                 missing cp.async wait",
                self.copies[t - self.base].len(),
                c.site
            ));
        }
    }
}

impl Kind {
    fn verb(self) -> &'static str {
        match self {
            Kind::Read => "read",
            Kind::Write => "written",
        }
    }
}

/// Reports a race on element `e` between `a` and `b`.
fn race(e: usize, a: Access, did_a: &str, b: Access, did_b: &str) -> ! {
    fault(format!(
        "shared-memory race on element {e}: thread {} {did_a} it at {}, thread {} {did_b} it at \
         {}, with no barrier between them",
        a.at.thread, a.site, b.at.thread, b.site
    ))
}

/// The engine of a block's shared memory on the simulated GPU: elements of `U`, every access
/// bounds-checked, aligned as on the device, and checked by the block's shadow (`Smem`).
#[derive(Debug)]
pub struct SharedMem<U> {
    data: *mut U,
    len: i64,
    pos: i64,
    /// The block of the cluster whose shared memory it is.
    rank: usize,
    /// Elements of the shadow per `U` (1 but through [`Recast`]).
    scale: usize,
}
impl<U> Clone for SharedMem<U> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<U> Copy for SharedMem<U> {}

impl<U> SharedMem<U> {
    /// The engine at element 0 of the `len` elements at `data`, the shared memory of block
    /// `rank` of the cluster.
    pub(crate) fn new(data: *mut U, len: usize, rank: usize) -> Self {
        Self {
            data,
            len: len as i64,
            pos: 0,
            rank,
            scale: 1,
        }
    }

    /// The block of the cluster whose shared memory this is.
    pub(super) fn rank(&self) -> usize {
        self.rank
    }

    /// The first of `n` elements from here, inside the block's and aligned to `align` elements.
    #[track_caller]
    fn span(&self, n: i64, align: i64, what: &str) -> usize {
        span("shared", (self.pos, self.len), n, align, what)
    }

    /// The element this engine is at.
    pub(super) fn position(&self) -> i64 {
        self.pos
    }

    fn v4_elems() -> i64 {
        16 / std::mem::size_of::<U>() as i64
    }

    #[track_caller]
    fn check(&self, n: i64, align: i64, kind: Kind) -> usize {
        let what = match kind {
            Kind::Read => "read",
            Kind::Write => "write",
        };
        let i = self.span(n, align, what);
        let site = Location::caller();
        current(|b, t| {
            b.smem[self.rank].borrow_mut().access(
                &b.clocks.borrow(),
                t,
                (i * self.scale, n as usize * self.scale),
                kind,
                site,
            )
        });
        i
    }
}

impl<U> Engine for SharedMem<U> {
    fn advance(self, off: i64) -> Self {
        Self {
            pos: self.pos + off,
            ..self
        }
    }
    fn fmt_origin(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shared[{}]+{}", self.len, self.pos)
    }
}

impl<U: Copy> Mem<U> for SharedMem<U> {
    unsafe fn read(&self) -> U {
        *self.data.add(self.check(1, 1, Kind::Read))
    }
    unsafe fn write(&self, v: U) {
        *self.data.add(self.check(1, 1, Kind::Write)) = v
    }
    unsafe fn read_v4(&self) -> V4 {
        let n = Self::v4_elems();
        (self.data.add(self.check(n, n, Kind::Read)) as *const V4).read_unaligned()
    }
    unsafe fn write_v4(&self, v: V4) {
        let n = Self::v4_elems();
        (self.data.add(self.check(n, n, Kind::Write)) as *mut V4).write_unaligned(v)
    }
    fn aligned16(&self) -> bool {
        self.pos % Self::v4_elems() == 0
    }
    unsafe fn read_pair(&self) -> [U; 2] {
        let i = self.check(2, 2, Kind::Read);
        [*self.data.add(i), *self.data.add(i + 1)]
    }
    unsafe fn write_pair(&self, v: [U; 2]) {
        let i = self.check(2, 2, Kind::Write);
        *self.data.add(i) = v[0];
        *self.data.add(i + 1) = v[1];
    }
    fn aligned_pair(&self) -> bool {
        self.pos % 2 == 0
    }
    unsafe fn read_quad(&self) -> [U; 4] {
        let i = self.check(4, 4, Kind::Read);
        std::array::from_fn(|k| *self.data.add(i + k))
    }
    unsafe fn write_quad(&self, v: [U; 4]) {
        let i = self.check(4, 4, Kind::Write);
        for (k, x) in v.into_iter().enumerate() {
            *self.data.add(i + k) = x;
        }
    }
    fn aligned_quad(&self) -> bool {
        self.pos % 4 == 0
    }
    /// From the block's start, as the device's shared memory starts 1024-byte aligned.
    fn misalignment(&self, bytes: usize) -> i64 {
        let size = std::mem::size_of::<U>() as i64;
        (self.pos * size).rem_euclid(bytes as i64) / size
    }
}

impl<U: Copy> Ldmatrix for SharedMem<U> {
    unsafe fn ldmatrix_x4(&self) -> [u32; 4] {
        self.ldmatrix(false)
    }
    unsafe fn ldmatrix_x4_trans(&self) -> [u32; 4] {
        self.ldmatrix(true)
    }
}

impl<U: Copy> SharedMem<U> {
    /// This lane's row read (checked, as its access), then the warp's exchange.
    #[track_caller]
    unsafe fn ldmatrix(&self, trans: bool) -> [u32; 4] {
        let row = self.read_v4().0;
        let mut out = [0u32; 4];
        tessel_device::sim::request(Sync::Ldmatrix {
            trans,
            row,
            out: &mut out,
        });
        out
    }
}

impl<U> Recast for SharedMem<U> {
    /// Faults where `V` is narrower than the shadow's element or this position is not a whole
    /// number of `V`s from the block's start.
    fn recast<V: Copy>(&self) -> SharedMem<V> {
        let (u, v) = (std::mem::size_of::<U>(), std::mem::size_of::<V>());
        let unit = u / self.scale;
        let byte = self.pos * u as i64;
        if v % unit != 0 || byte % v as i64 != 0 {
            fault(format!(
                "recast at {} of shared byte {byte} to elements of {v} bytes: the shared memory \
                 is checked in elements of {unit} bytes, and a recast must start on a whole \
                 element of the new type and be a multiple of that width",
                Location::caller()
            ));
        }
        SharedMem {
            data: self.data as *mut V,
            len: self.len * u as i64 / v as i64,
            pos: byte / v as i64,
            rank: self.rank,
            scale: v / unit,
        }
    }
}

impl<U> Dsm for SharedMem<U> {
    fn map_rank(&self, rank: i64) -> Self {
        let site = Location::caller();
        let data = current(
            |b, _| match b.smem.get(rank as usize).filter(|_| rank >= 0) {
                Some(m) => m.borrow().data() as *mut U,
                None => fault(format!(
                    "map_rank({rank}) at {site}: the cluster has {} blocks",
                    b.smem.len()
                )),
            },
        );
        Self {
            data,
            rank: rank as usize,
            ..*self
        }
    }
    unsafe fn mbarrier_arrive_cluster(&self, rank: i64) {
        let there = self.map_rank(rank);
        let (bar, site) = (
            there.mbarrier_anywhere("mbarrier_arrive_cluster"),
            Location::caller(),
        );
        current(|b, t| {
            let seen = b.clocks.borrow_mut().release(t);
            b.mbar[rank as usize]
                .borrow_mut()
                .arrive(bar, 0, seen, site)
        });
    }
}

impl<U> AsyncCopy for SharedMem<U> {
    type Space = super::Sim;
    /// Reads the 16 bytes at `src` now (checked); they land here at the wait that covers them.
    unsafe fn copy_async_v4<T: Copy>(&self, src: &HostMem<T>) {
        self.own("cp.async");
        let data = src.read_v4();
        self.copy_in(data);
    }
    unsafe fn copy_async_v4_zfill<T: Copy>(&self, src: &HostMem<T>, full: bool) {
        self.own("cp.async");
        self.copy_in(if full { src.read_v4() } else { V4::default() });
    }
    fn commit(&self) {
        current(|b, t| b.smem[b.rank_of(t)].borrow_mut().commit(t));
    }
    unsafe fn wait_groups<const N: u32>(&self) {
        current(|b, t| {
            let data = b.smem[b.rank_of(t)].borrow().data();
            b.smem[b.rank_of(t)]
                .borrow_mut()
                .wait(&b.clocks.borrow(), t, N, data)
        });
    }
    unsafe fn wait_all(&self) {
        self.commit();
        self.wait_groups::<0>();
    }
    unsafe fn mbarrier_init(&self, count: u32) {
        let (bar, site) = (self.mbarrier("mbarrier_init"), Location::caller());
        current(|b, _| b.mbar[self.rank].borrow_mut().init(bar, count, site));
    }
    unsafe fn mbarrier_arrive(&self, bytes: u32) {
        let (bar, site) = (self.mbarrier("an mbarrier arrival"), Location::caller());
        current(|b, t| {
            let seen = b.clocks.borrow_mut().release(t);
            b.mbar[self.rank]
                .borrow_mut()
                .arrive(bar, bytes, seen, site)
        });
    }
    unsafe fn mbarrier_complete_tx(&self, bytes: u32) {
        let (bar, site) = (self.mbarrier("mbarrier_complete_tx"), Location::caller());
        current(|b, t| {
            let seen = b.clocks.borrow_mut().release(t);
            b.mbar[self.rank]
                .borrow_mut()
                .complete_tx(bar, bytes, seen, site)
        });
    }
    unsafe fn mbarrier_wait(&self, parity: u32) {
        let (bar, site) = (self.mbarrier("an mbarrier wait"), Location::caller());
        let done = current(
            |b, t| match b.mbar[self.rank].borrow_mut().ready(bar, parity, site) {
                Some(published) => {
                    b.clocks.borrow_mut().acquire(t, published);
                    true
                }
                None => false,
            },
        );
        if !done {
            // suspends until the phase completes; the simulator then acquires for this thread
            tessel_device::sim::request(Sync::MbarWait { bar, parity });
        }
    }
}

impl<U> SharedMem<U> {
    /// Starts a `cp.async` of `data` into the 16 bytes here.
    #[track_caller]
    fn copy_in(&self, data: V4) {
        let n = Self::v4_elems();
        let i = self.span(n, n, "cp.async") * self.scale;
        let site = Location::caller();
        current(|b, t| {
            b.smem[self.rank]
                .borrow_mut()
                .copy(&b.clocks.borrow(), t, i, data, site)
        });
    }

    /// The byte offset of the mbarrier here: 8 bytes inside the block's shared memory, 8-byte
    /// aligned (else a fault naming `what`'s site).
    #[track_caller]
    pub(super) fn mbarrier(&self, what: &str) -> u32 {
        self.own(what);
        self.mbarrier_anywhere(what)
    }

    /// `what` at the caller's site reaches only the block's own shared memory: a fault on
    /// another block's ([`Dsm::map_rank`]).
    #[track_caller]
    pub(super) fn own(&self, what: &str) {
        let site = Location::caller();
        current(|b, t| {
            if b.rank_of(t) != self.rank {
                fault(format!(
                    "{what} at {site} by thread {t} on the shared memory of block rank {}, not \
                     its own (rank {}): it reaches only its block's",
                    self.rank,
                    b.rank_of(t)
                ))
            }
        })
    }

    /// [`SharedMem::mbarrier`] in any block of the cluster.
    #[track_caller]
    fn mbarrier_anywhere(&self, what: &str) -> u32 {
        let size = std::mem::size_of::<U>() as i64;
        let n = (8 + size - 1) / size;
        let i = self.span(n, 1, what) as i64;
        if (i * size) % 8 != 0 {
            fault(format!(
                "{what} at {}: shared byte {} is not 8-byte aligned",
                Location::caller(),
                i * size
            ));
        }
        (i * size) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_stays_small() {
        // the shadow of a block's shared memory is read at every access: 48 bytes an element
        assert!(
            std::mem::size_of::<Cell>() <= 48,
            "{}",
            std::mem::size_of::<Cell>()
        );
    }
}
