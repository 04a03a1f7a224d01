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
use tessel_gpu::mem::{AsyncCopy, Ldmatrix, Mem, V4};

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
    copy: u32,
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
#[derive(Debug, Default)]
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
    pub fn reset(&mut self, elems: usize, elem_bytes: usize, threads: usize) {
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
                }
                cell.clear_reads();
                cell.stamp = stamp;
            }
            if cell.copy != 0 {
                self.in_flight(e, t, kind, site);
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
                    cell.clear_reads();
                }
            }
        }
    }

    /// Element `e`, touched by thread `t` at `site`, has a copy in flight: the fault.
    fn in_flight(&self, e: usize, t: usize, kind: Kind, site: Site) -> ! {
        let u = self.cells[e].copy as usize - 1;
        let c = self.copies[u]
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
        for e in i..i + elems {
            self.cells[e].copy = 1 + t as u32;
        }
        self.copies[t].push(InFlight {
            group: None,
            elem: i,
            elems,
            data,
            site,
        });
    }

    /// Thread `t` commits its copies since its last commit as a group.
    fn commit(&mut self, t: usize) {
        let g = self.groups[t];
        for c in self.copies[t].iter_mut().filter(|c| c.group.is_none()) {
            c.group = Some(g);
        }
        self.groups[t] += 1;
    }

    /// Thread `t` waits for its groups but the `n` most recent: their copies land in `data`
    /// (elements of `elem_bytes`), as writes of `t`'s current epoch.
    ///
    /// # Safety
    /// `data` must hold the block's elements.
    unsafe fn wait(&mut self, clocks: &Clocks, t: usize, n: u32, data: *mut u8) {
        let done = |c: &InFlight| c.group.is_some_and(|g| g + n < self.groups[t]);
        let (landed, left): (Vec<InFlight>, Vec<InFlight>) = std::mem::take(&mut self.copies[t])
            .into_iter()
            .partition(done);
        self.copies[t] = left;
        for c in landed {
            let at = clocks.now(t);
            for e in c.elem..c.elem + c.elems {
                let cell = &mut self.cells[e];
                cell.copy = 0;
                cell.write = Some(Access { at, site: c.site });
                cell.clear_reads();
            }
            std::ptr::copy_nonoverlapping(
                c.data.0.as_ptr() as *const u8,
                data.add(c.elem * self.elem_bytes),
                16,
            );
        }
    }

    /// Thread `t` ended: its copies must have landed.
    pub fn check_ended(&self, t: usize) {
        if let Some(c) = self.copies[t].first() {
            fault(format!(
                "thread {t} ended with {} cp.async copies in flight (the first issued at {}): a \
                 missing cp.async wait",
                self.copies[t].len(),
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
/// bounds-checked, aligned as on the device, and checked by the block's shadow ([`Smem`]).
#[derive(Debug)]
pub struct SharedMem<U> {
    data: *mut U,
    len: i64,
    pos: i64,
}
impl<U> Clone for SharedMem<U> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<U> Copy for SharedMem<U> {}

impl<U> SharedMem<U> {
    /// The engine at element 0 of the block's `len` elements at `data`.
    pub(crate) fn new(data: *mut U, len: usize) -> Self {
        Self {
            data,
            len: len as i64,
            pos: 0,
        }
    }

    /// The first of `n` elements from here, inside the block's and aligned to `align` elements.
    #[track_caller]
    fn span(&self, n: i64, align: i64, what: &str) -> usize {
        span("shared", (self.pos, self.len), n, align, what)
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
            b.smem
                .borrow_mut()
                .access(&b.clocks.borrow(), t, (i, n as usize), kind, site)
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

impl<U> AsyncCopy for SharedMem<U> {
    type Space = super::Sim;
    /// Reads the 16 bytes at `src` now (checked); they land here at the wait that covers them.
    unsafe fn copy_async_v4<T: Copy>(&self, src: &HostMem<T>) {
        let data = src.read_v4();
        let n = Self::v4_elems();
        let i = self.span(n, n, "cp.async");
        let site = Location::caller();
        current(|b, t| {
            b.smem
                .borrow_mut()
                .copy(&b.clocks.borrow(), t, i, data, site)
        });
    }
    fn commit(&self) {
        current(|b, t| b.smem.borrow_mut().commit(t));
    }
    unsafe fn wait_groups<const N: u32>(&self) {
        let data = self.data as *mut u8;
        current(|b, t| b.smem.borrow_mut().wait(&b.clocks.borrow(), t, N, data));
    }
    unsafe fn wait_all(&self) {
        self.commit();
        self.wait_groups::<0>();
    }
    unsafe fn mbarrier_init(&self, count: u32) {
        let (bar, site) = (self.mbarrier("mbarrier_init"), Location::caller());
        current(|b, _| b.mbar.borrow_mut().init(bar, count, site));
    }
    unsafe fn mbarrier_arrive(&self, bytes: u32) {
        let (bar, site) = (self.mbarrier("an mbarrier arrival"), Location::caller());
        current(|b, t| {
            let seen = b.clocks.borrow_mut().release(t);
            b.mbar.borrow_mut().arrive(bar, bytes, seen, site)
        });
    }
    unsafe fn mbarrier_complete_tx(&self, bytes: u32) {
        let (bar, site) = (self.mbarrier("mbarrier_complete_tx"), Location::caller());
        current(|b, t| {
            let seen = b.clocks.borrow_mut().release(t);
            b.mbar.borrow_mut().complete_tx(bar, bytes, seen, site)
        });
    }
    unsafe fn mbarrier_wait(&self, parity: u32) {
        let (bar, site) = (self.mbarrier("an mbarrier wait"), Location::caller());
        let done = current(|b, t| match b.mbar.borrow_mut().ready(bar, parity, site) {
            Some(published) => {
                b.clocks.borrow_mut().acquire(t, published);
                true
            }
            None => false,
        });
        if !done {
            // suspends until the phase completes; the simulator then acquires for this thread
            tessel_device::sim::request(Sync::MbarWait { bar, parity });
        }
    }
}

impl<U> SharedMem<U> {
    /// The byte offset of the mbarrier here: 8 bytes inside the block's shared memory, 8-byte
    /// aligned (else a fault naming `what`'s site).
    #[track_caller]
    fn mbarrier(&self, what: &str) -> u32 {
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
