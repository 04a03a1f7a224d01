//! A block's mbarriers as the PTX ISA defines them (`mbarrier.*`, shared::cta): an 8-byte object
//! in shared memory with an expected arrival count, the arrivals still pending in the current
//! phase, and a transaction count (bytes that `expect_tx` announced and `complete_tx`, or the copy
//! engine, has not delivered yet). The phase completes when both reach zero: its number goes up
//! by one, the pending arrivals are reset to the count. `try_wait.parity p` succeeds once the
//! phase of parity `p` has completed (the current phase's parity differs from `p`).
//!
//! Happens-before: an arrival or a completed transaction publishes its thread's epochs to the
//! phase (a release), a wait that succeeds takes those of the last completed phase of its parity
//! (an acquire). The transaction count may go below zero for a while (bytes that land before the
//! `expect_tx` that announces them), within `2^20 - 1` either way. Faults: use before `init`, a
//! count outside `1..2^20`, more arrivals than the count in a phase, a transaction count out of
//! range, a block that ends with transaction bytes outstanding; a phase that never completes is a
//! deadlock, reported with each barrier's pending arrivals and bytes and the sites that announced
//! them.

use super::block::fault;
use super::clock::Epoch;
use std::collections::BTreeMap;
use std::panic::Location;

type Site = &'static Location<'static>;

/// One mbarrier.
#[derive(Debug)]
struct Mbar {
    count: u32,
    pending: u32,
    tx: i64,
    phase: u64,
    /// Epochs published to the current phase.
    arrived: Vec<Epoch>,
    /// Epochs of the last completed phase of each parity.
    done: [Vec<Epoch>; 2],
    init: Site,
    /// `expect_tx` sites of the current phase.
    expects: Vec<Site>,
}

/// The block's mbarriers, by byte offset in shared memory.
#[derive(Debug, Default)]
pub struct Mbarriers {
    bars: BTreeMap<u32, Mbar>,
}

impl Mbarriers {
    /// A new block: no barrier initialised.
    pub fn reset(&mut self) {
        self.bars.clear();
    }

    fn get(&mut self, bar: u32, what: &str, site: Site) -> &mut Mbar {
        match self.bars.get_mut(&bar) {
            Some(m) => m,
            None => fault(format!(
                "{what} at {site} on the mbarrier at shared byte {bar}, which no \
                 mbarrier_init set up"
            )),
        }
    }

    /// `mbarrier.init [bar], count`: phase 0, `count` arrivals pending, no transactions.
    pub fn init(&mut self, bar: u32, count: u32, site: Site) {
        if !(1..1 << 20).contains(&count) {
            fault(format!(
                "mbarrier_init at {site}: count {count} outside 1 to 2^20 - 1"
            ));
        }
        let m = Mbar {
            count,
            pending: count,
            tx: 0,
            phase: 0,
            arrived: Vec::new(),
            done: [Vec::new(), Vec::new()],
            init: site,
            expects: Vec::new(),
        };
        self.bars.insert(bar, m);
    }

    /// `mbarrier.arrive.expect_tx [bar], bytes` (`bytes == 0`: `mbarrier.arrive`) by a thread
    /// whose published epochs are `seen`.
    pub fn arrive(&mut self, bar: u32, bytes: u32, seen: Vec<Epoch>, site: Site) {
        let m = self.get(bar, "an arrival", site);
        if m.pending == 0 {
            fault(format!(
                "mbarrier at shared byte {bar} (init at {}): an arrival at {site} past its count \
                 of {} in phase {}",
                m.init, m.count, m.phase
            ));
        }
        if bytes > 0 {
            m.tx += bytes as i64;
            m.expects.push(site);
            m.in_range(bar, site);
        }
        m.pending -= 1;
        m.arrived.extend(seen);
        m.try_complete();
    }

    /// `mbarrier.complete_tx [bar], bytes`, by a thread whose published epochs are `seen`.
    pub fn complete_tx(&mut self, bar: u32, bytes: u32, seen: Vec<Epoch>, site: Site) {
        let m = self.get(bar, "a transaction", site);
        m.tx -= bytes as i64;
        m.in_range(bar, site);
        m.arrived.extend(seen);
        m.try_complete();
    }

    /// Has the phase of parity `parity` completed? With it, the epochs that phase published.
    pub fn ready(&mut self, bar: u32, parity: u32, site: Site) -> Option<&[Epoch]> {
        let m = self.get(bar, "a wait", site);
        ((m.phase & 1) as u32 != parity & 1).then(|| &m.done[(parity & 1) as usize][..])
    }

    /// At the block's end: a fault where transaction bytes are still outstanding (bytes would land
    /// in shared memory the block no longer has, or announced bytes never came).
    pub fn check_ended(&self) {
        if let Some((bar, m)) = self.bars.iter().find(|(_, m)| m.tx != 0) {
            fault(format!(
                "the block ended with mbarrier at shared byte {bar} (init at {}) in phase {} \
                 waiting for {} transaction bytes{}",
                m.init,
                m.phase,
                m.tx,
                sites(&m.expects)
            ));
        }
    }

    /// Each barrier whose current phase is incomplete, for a deadlock's report.
    /// `whose`: the block's name in a cluster (`block rank 1's `), else empty.
    pub fn report(&self, whose: &str) -> String {
        let mut out = String::new();
        for (bar, m) in &self.bars {
            if m.pending == m.count && m.tx == 0 {
                continue;
            }
            out += &format!(
                "; {whose}mbarrier at shared byte {bar} (init at {}) in phase {}: {} of {} arrivals \
                 pending, {} transaction bytes pending (negative: completed beyond what \
                 expect_tx announced){}",
                m.init,
                m.phase,
                m.pending,
                m.count,
                m.tx,
                sites(&m.expects)
            );
        }
        out
    }
}

impl Mbar {
    /// The transaction count within the PTX ISA's range, `2^20 - 1` either way.
    fn in_range(&self, bar: u32, site: Site) {
        if self.tx.abs() >= 1 << 20 {
            fault(format!(
                "mbarrier at shared byte {bar} (init at {}): transaction count {} at {site} in \
                 phase {}, outside -(2^20 - 1) to 2^20 - 1{}",
                self.init,
                self.tx,
                self.phase,
                sites(&self.expects)
            ));
        }
    }

    fn try_complete(&mut self) {
        if self.pending == 0 && self.tx == 0 {
            let parity = (self.phase & 1) as usize;
            self.done[parity] = std::mem::take(&mut self.arrived);
            self.phase += 1;
            self.pending = self.count;
            self.expects.clear();
        }
    }
}

/// ` (expect_tx at A, B)` or nothing.
fn sites(s: &[Site]) -> String {
    if s.is_empty() {
        return String::new();
    }
    let list: Vec<String> = s.iter().map(|l| l.to_string()).collect();
    format!(" (expect_tx at {})", list.join(", "))
}
