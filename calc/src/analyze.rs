//! `tessel analyze`: what a warp's accesses cost, computed from layouts before a kernel runs.
//!
//! The accesses: thread `t` of a block reads or writes value `v` of a tile at tile index
//! `TV(t, v)` (a TV layout, `(thread, value) -> index`), which memory holds at element
//! `M(TV(t, v))` (the memory layout `M`, possibly swizzled). A thread moves its values `w` at a
//! time (`w` consecutive values, one vector access of `w` elements); access `g` of the 32 threads
//! of a warp is one warp request.
//!
//! - Shared memory: 32 banks of 4 bytes. A request is served in phases: 128-bit accesses 8
//!   threads at a time, 64-bit 16 at a time, narrower 32 at a time. In a phase, threads touching
//!   the same 4-byte word share it (a broadcast); a bank holding `n` distinct words is an
//!   `n`-way conflict, and the phase takes as many passes as its worst bank.
//! - Global memory: a request touches 32-byte sectors of 128-byte lines; its efficiency is the
//!   bytes it asks for over the bytes of the sectors it touches (the tile's first element is
//!   taken as 256-byte aligned).
//!
//! The model is the one CUDA's programming guide gives for sm_80/sm_90; it does not see the L1
//! cache, the order of requests in time, or accesses of other warps.

use crate::value::*;
use layout_core::*;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Threads per warp.
pub const WARP: i64 = 32;
/// The most `(thread, value)` pairs an analysis walks.
pub const MAX_PAIRS: i64 = 1 << 22;

/// Which memory the accesses go to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// Shared memory: bank conflicts.
    Shared,
    /// Global memory: sectors and lines.
    Global,
}

/// The memory side of an access: a layout, or a swizzled one.
#[derive(Clone, Copy, Debug)]
pub enum Memory {
    /// `index -> element`.
    Plain(Layout),
    /// `Sw o offset o L`.
    Swizzled(ComposedLayout),
}

impl Memory {
    /// The memory layout of a calculator value (a layout, a shape, or a swizzled layout).
    pub fn of(v: &Value) -> R<Memory> {
        match v {
            Value::Composed(c) => Ok(Memory::Swizzled(*c)),
            other => Ok(Memory::Plain(to_layout(other)?)),
        }
    }
    fn size(&self) -> i64 {
        match self {
            Memory::Plain(l) => l.size(),
            Memory::Swizzled(c) => c.size(),
        }
    }
    fn call(&self, i: i64) -> i64 {
        match self {
            Memory::Plain(l) => l.call(i),
            Memory::Swizzled(c) => c.call(i),
        }
    }
}

/// The accesses of a block: what [`analyze`] reads.
#[derive(Clone, Copy, Debug)]
pub struct Accesses {
    /// The memory layout, tile index -> element.
    pub memory: Memory,
    /// `(thread, value) -> tile index`.
    pub tv: Layout,
    /// Bits per element: 8, 16, 32, 64 or 128.
    pub bits: i64,
    /// Bits per access; `None` for the widest the layouts allow (at most 128).
    pub width: Option<i64>,
}

/// One thread's access: its thread index, first byte, bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Touch {
    thread: i64,
    byte: i64,
    bytes: i64,
}

/// The analysis of one warp request (or one phase of it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// The warp.
    pub warp: i64,
    /// The access (`w` values of each thread) the request moves.
    pub access: i64,
    /// Shared memory: the phase; global memory: 0.
    pub phase: i64,
    /// The threads of the request or phase: `lo..=hi`.
    pub threads: (i64, i64),
    /// Shared: the worst bank's distinct words (1: conflict-free). Global: sectors touched.
    pub cost: i64,
    /// Shared: the banks at the worst degree with their threads. Global: lines touched.
    pub detail: String,
    /// Global: bytes asked for (distinct), ideal sectors. Shared: 0, 0.
    pub bytes: i64,
    /// Global: the fewest sectors those bytes fit in.
    pub ideal: i64,
}

/// What [`analyze`] finds: the access width, one row per request (global) or phase (shared).
#[derive(Clone, Debug)]
pub struct Report {
    /// The memory.
    pub space: Space,
    /// Elements per access.
    pub vector: i64,
    /// Bits per element.
    pub bits: i64,
    /// The widest access the layouts allow, in elements.
    pub widest: i64,
    /// The rows.
    pub rows: Vec<Row>,
}

/// Analyzes the accesses of `a` to `space`.
///
/// Errors, each naming the violated condition: `tv` not of rank 2 (thread, value); element bits
/// not 8 to 128 and a power of two; an index of `tv` outside the memory layout's domain; an
/// access width that is not a power of two between 8 and 128 bits and a multiple of the element,
/// that does not divide a thread's values, or whose values are not consecutive and aligned in
/// memory (which thread and value break it).
pub fn analyze(a: &Accesses, space: Space) -> R<Report> {
    if a.tv.rank() != 2 {
        return Err(format!(
            "a TV layout has rank 2 (thread, value): {} has rank {}",
            a.tv,
            a.tv.rank()
        ));
    }
    if !(8..=128).contains(&a.bits) || a.bits & (a.bits - 1) != 0 {
        return Err(format!(
            "element bits must be a power of two from 8 to 128, got {}",
            a.bits
        ));
    }
    if a.tv.size() > MAX_PAIRS {
        return Err(format!(
            "{} (thread, value) pairs is more than {MAX_PAIRS} to analyze",
            a.tv.size()
        ));
    }
    let threads = a.tv.get(0).map_err(err)?.size();
    let values = a.tv.get(1).map_err(err)?.size();
    let size = a.memory.size();
    let elem = |t: i64, v: i64| -> R<i64> {
        let i = a.tv.call(t + threads * v);
        if !(0..size).contains(&i) {
            return Err(format!(
                "(thread {t}, value {v}) is tile index {i}, outside the memory layout's domain [0, {size})"
            ));
        }
        Ok(a.memory.call(i))
    };
    let mut at = vec![0i64; (threads * values) as usize];
    for t in 0..threads {
        for v in 0..values {
            at[(t * values + v) as usize] = elem(t, v)?;
        }
    }
    let at = |t: i64, v: i64| at[(t * values + v) as usize];
    let bytes = a.bits / 8;
    let widest = widest(threads, values, bytes, at);
    let vector = match a.width {
        None => widest,
        Some(w) => {
            if !(8..=128).contains(&w) || w & (w - 1) != 0 || w % a.bits != 0 {
                return Err(format!(
                    "an access is a power of two from 8 to 128 bits and a multiple of the {}-bit element, got {w}",
                    a.bits
                ));
            }
            let n = w / a.bits;
            if values % n != 0 {
                return Err(format!(
                    "{w}-bit accesses move {n} values, which do not divide a thread's {values}"
                ));
            }
            if let Some((t, v, why)) = breaks(threads, values, bytes, n, at) {
                return Err(format!(
                    "{w}-bit accesses need {n} consecutive, {}-byte aligned elements: thread {t}, value {v} {why} (the widest access here is {} bits)",
                    n * bytes,
                    widest * a.bits
                ));
            }
            n
        }
    };
    let mut rows = Vec::new();
    let warps = (threads + WARP - 1) / WARP;
    for w in 0..warps {
        let lanes = w * WARP..(threads.min((w + 1) * WARP));
        for g in 0..values / vector {
            let touches: Vec<Touch> = lanes
                .clone()
                .map(|t| Touch {
                    thread: t,
                    byte: at(t, g * vector) * bytes,
                    bytes: vector * bytes,
                })
                .collect();
            match space {
                Space::Shared => rows.extend(shared_phases(w, g, &touches)),
                Space::Global => rows.push(global_request(w, g, &touches)),
            }
        }
    }
    Ok(Report {
        space,
        vector,
        bits: a.bits,
        widest,
        rows,
    })
}

/// The widest access, in elements: the largest power of two `n` (at most 128 bits, dividing the
/// values) such that every thread's values `n g .. n g + n` are consecutive elements starting on
/// an `n`-element boundary.
fn widest(threads: i64, values: i64, bytes: i64, at: impl Fn(i64, i64) -> i64 + Copy) -> i64 {
    let mut n = 1;
    while 2 * n * bytes <= 16
        && values % (2 * n) == 0
        && breaks(threads, values, bytes, 2 * n, at).is_none()
    {
        n *= 2;
    }
    n
}

/// The first (thread, value) where `n`-element accesses fail, and why.
fn breaks(
    threads: i64,
    values: i64,
    bytes: i64,
    n: i64,
    at: impl Fn(i64, i64) -> i64,
) -> Option<(i64, i64, String)> {
    for t in 0..threads {
        for g in 0..values / n {
            let first = at(t, g * n);
            if first.rem_euclid(n) != 0 {
                return Some((
                    t,
                    g * n,
                    format!(
                        "is element {first}, byte {}, not {}-byte aligned",
                        first * bytes,
                        n * bytes
                    ),
                ));
            }
            for k in 1..n {
                if at(t, g * n + k) != first + k {
                    return Some((
                        t,
                        g * n + k,
                        format!(
                            "is element {}, not {} (after value {} at {first})",
                            at(t, g * n + k),
                            first + k,
                            g * n
                        ),
                    ));
                }
            }
        }
    }
    None
}

/// Threads per shared-memory phase for accesses of `bytes` bytes.
pub fn phase_threads(bytes: i64) -> i64 {
    match bytes {
        16.. => 8,
        8 => 16,
        _ => 32,
    }
}

/// The phases of one shared-memory request.
fn shared_phases(warp: i64, access: i64, touches: &[Touch]) -> Vec<Row> {
    let per = phase_threads(touches[0].bytes) as usize;
    touches
        .chunks(per)
        .enumerate()
        .map(|(p, phase)| {
            // bank -> distinct words, word -> threads
            let mut banks: BTreeMap<i64, BTreeMap<i64, Vec<i64>>> = BTreeMap::new();
            for t in phase {
                let (w0, w1) = (t.byte.div_euclid(4), (t.byte + t.bytes - 1).div_euclid(4));
                for word in w0..=w1 {
                    let threads = banks
                        .entry(word.rem_euclid(32))
                        .or_default()
                        .entry(word)
                        .or_default();
                    if threads.last() != Some(&t.thread) {
                        threads.push(t.thread);
                    }
                }
            }
            let worst = banks.values().map(|w| w.len() as i64).max().unwrap_or(1);
            let mut detail = String::new();
            if worst > 1 {
                let hot: Vec<_> = banks
                    .iter()
                    .filter(|(_, w)| w.len() as i64 == worst)
                    .collect();
                for (i, (bank, words)) in hot.iter().take(2).enumerate() {
                    let ts: BTreeSet<i64> = words.values().flatten().copied().collect();
                    if i > 0 {
                        detail.push_str("; ");
                    }
                    write!(detail, "bank {bank}: threads {}", ranges(&ts)).unwrap();
                }
                if hot.len() > 2 {
                    write!(detail, "; {} more banks", hot.len() - 2).unwrap();
                }
            }
            Row {
                warp,
                access,
                phase: p as i64,
                threads: (phase[0].thread, phase[phase.len() - 1].thread),
                cost: worst,
                detail,
                bytes: 0,
                ideal: 0,
            }
        })
        .collect()
}

/// One global-memory request: its sectors, lines and bytes.
fn global_request(warp: i64, access: i64, touches: &[Touch]) -> Row {
    let mut bytes = BTreeSet::new();
    for t in touches {
        bytes.extend(t.byte..t.byte + t.bytes);
    }
    let sectors: BTreeSet<i64> = bytes.iter().map(|b| b.div_euclid(32)).collect();
    let lines: BTreeSet<i64> = bytes.iter().map(|b| b.div_euclid(128)).collect();
    let n = bytes.len() as i64;
    Row {
        warp,
        access,
        phase: 0,
        threads: (touches[0].thread, touches[touches.len() - 1].thread),
        cost: sectors.len() as i64,
        detail: match lines.len() {
            1 => "1 line".into(),
            n => format!("{n} lines"),
        },
        bytes: n,
        ideal: (n + 31) / 32,
    }
}

/// `s` with each run of digits replaced by one `#` (rows that differ only in which banks or
/// threads fold together).
fn digits_folded(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('#') {
            out.push('#');
        }
    }
    out
}

/// `0-7,16-23` for a set of integers.
fn ranges(s: &BTreeSet<i64>) -> String {
    let mut out = Vec::new();
    let mut it = s.iter().copied().peekable();
    while let Some(lo) = it.next() {
        let mut hi = lo;
        while it.peek() == Some(&(hi + 1)) {
            hi = it.next().unwrap();
        }
        out.push(if lo == hi {
            lo.to_string()
        } else {
            format!("{lo}-{hi}")
        });
    }
    out.join(",")
}

impl Report {
    /// The worst shared-memory conflict degree over all phases (1: conflict-free), or the worst
    /// global efficiency in percent.
    pub fn worst(&self) -> i64 {
        match self.space {
            Space::Shared => self.rows.iter().map(|r| r.cost).max().unwrap_or(1),
            Space::Global => self
                .rows
                .iter()
                .map(|r| 100 * r.bytes / (32 * r.cost).max(1))
                .min()
                .unwrap_or(100),
        }
    }

    /// One line: the verdict.
    pub fn verdict(&self) -> String {
        let width = self.vector * self.bits;
        let widest = self.widest * self.bits;
        match self.space {
            Space::Shared => {
                let requests = self.requests();
                let worst = self.worst();
                let bad = self.rows.iter().filter(|r| r.cost > 1).count();
                let passes: i64 = self.rows.iter().map(|r| r.cost).sum();
                if worst == 1 {
                    format!(
                        "conflict-free: {requests} requests of {width}-bit accesses, {} phases, all 1-way (widest access {widest} bits)",
                        self.rows.len()
                    )
                } else {
                    format!(
                        "{worst}-way bank conflicts: {bad} of {} phases conflicted, {passes} passes where {} would do ({requests} requests of {width}-bit accesses; widest access {widest} bits)",
                        self.rows.len(),
                        self.rows.len()
                    )
                }
            }
            Space::Global => {
                let asked: i64 = self.rows.iter().map(|r| r.bytes).sum();
                let sectors: i64 = self.rows.iter().map(|r| r.cost).sum();
                let ideal: i64 = self.rows.iter().map(|r| r.ideal).sum();
                let pct = 100.0 * asked as f64 / (32 * sectors).max(1) as f64;
                let word = if sectors == ideal {
                    "coalesced"
                } else {
                    "uncoalesced"
                };
                format!(
                    "{word}: {pct:.1}% of fetched bytes used, {sectors} sectors for {ideal} ideal over {} requests of {width}-bit accesses ({widest}-bit accesses possible)",
                    self.rows.len()
                )
            }
        }
    }

    fn requests(&self) -> usize {
        let set: BTreeSet<(i64, i64)> = self.rows.iter().map(|r| (r.warp, r.access)).collect();
        set.len()
    }

    /// The verdict, then the table: one row per request (global) or phase (shared); rows that
    /// differ only in their warp and access are folded into one with a count.
    pub fn render(&self) -> String {
        let mut out = self.verdict();
        out.push('\n');
        let key = |r: &Row| {
            (
                r.phase,
                r.threads.0 % WARP,
                r.threads.1 % WARP,
                r.cost,
                digits_folded(&r.detail),
                r.bytes,
                r.ideal,
            )
        };
        let mut groups: Vec<(&Row, usize)> = Vec::new();
        for r in &self.rows {
            match groups.iter_mut().find(|(g, _)| key(g) == key(r)) {
                Some((_, n)) => *n += 1,
                None => groups.push((r, 1)),
            }
        }
        match self.space {
            Space::Shared => {
                writeln!(
                    out,
                    "{:>6} {:>6} {:>6} {:>9} {:>6}  conflicts (first such)",
                    "rows", "warp", "acc.ph", "threads", "n-way"
                )
                .unwrap();
                for (r, n) in groups {
                    writeln!(
                        out,
                        "{n:>6} {:>6} {:>6} {:>9} {:>6}  {}",
                        r.warp,
                        format!("{}.{}", r.access, r.phase),
                        format!("{}-{}", r.threads.0, r.threads.1),
                        r.cost,
                        if r.detail.is_empty() { "-" } else { &r.detail }
                    )
                    .unwrap();
                }
            }
            Space::Global => {
                writeln!(
                    out,
                    "{:>6} {:>6} {:>6} {:>9} {:>7} {:>7} {:>6} {:>9}  lines (first such)",
                    "rows", "warp", "access", "threads", "bytes", "sectors", "ideal", "used"
                )
                .unwrap();
                for (r, n) in groups {
                    writeln!(
                        out,
                        "{n:>6} {:>6} {:>6} {:>9} {:>7} {:>7} {:>6} {:>8.1}%  {}",
                        r.warp,
                        r.access,
                        format!("{}-{}", r.threads.0, r.threads.1),
                        r.bytes,
                        r.cost,
                        r.ideal,
                        100.0 * r.bytes as f64 / (32 * r.cost).max(1) as f64,
                        r.detail
                    )
                    .unwrap();
                }
            }
        }
        out.push_str(match self.space {
            Space::Shared => "(rows: the phases the line stands for, the first one's warp, access.phase and threads shown)\n",
            Space::Global => "(rows: the requests the line stands for, the first one's warp, access and threads shown)\n",
        });
        out
    }
}
