//! Happens-before between the threads of a block: a vector clock per thread, as a race detector
//! keeps them. Thread `t`'s accesses between two of its synchronisations share its epoch
//! `(t, own[t])`; an access by `u` is ordered after that epoch when `u`'s clock has seen it.
//!
//! A block-wide barrier makes every clock the join of all of them: kept as one `floor` (each
//! thread's epoch at the last block barrier), so that it costs `O(threads)`. A named barrier, a
//! warp barrier joins a subset, kept per thread as a few `extra` entries
//! above the floor.

/// One epoch: thread and its clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Epoch {
    /// The thread.
    pub thread: u32,
    /// Its clock at the access.
    pub clock: u32,
}

/// The block's vector clocks.
#[derive(Debug, Default)]
pub struct Clocks {
    own: Vec<u32>,
    floor: Vec<u32>,
    extra: Vec<Vec<Epoch>>,
    /// Per thread: its `fence.proxy.async` count (what the async proxy sees of its writes).
    fences: Vec<u32>,
    /// The copy engine's clock, the last one, where there is one ([`Clocks::reset_with_engine`]).
    engine: Option<usize>,
}

impl Clocks {
    /// `threads` threads and the copy engine's clock after them (thread `threads`), which a
    /// barrier does not make seen: only an acquire of its epochs (an mbarrier wait) does.
    pub fn reset_with_engine(&mut self, threads: usize) {
        self.reset(threads + 1);
        self.engine = Some(threads);
    }

    /// `threads` threads, none ordered after another.
    pub fn reset(&mut self, threads: usize) {
        self.engine = None;
        self.own.clear();
        self.own.resize(threads, 1);
        self.floor.clear();
        self.floor.resize(threads, 0);
        self.extra.iter_mut().for_each(Vec::clear);
        self.extra.resize(threads, Vec::new());
        self.fences.clear();
        self.fences.resize(threads, 0);
    }

    /// Thread `t`'s `fence.proxy.async`: its writes so far are seen by the async proxy.
    pub fn fence(&mut self, t: usize) {
        self.fences[t] = self.fences[t].wrapping_add(1);
    }

    /// Thread `t`'s fences so far.
    #[inline]
    pub fn fences(&self, t: usize) -> u32 {
        self.fences[t]
    }

    /// Thread `t`'s current epoch.
    #[inline]
    pub fn now(&self, t: usize) -> Epoch {
        Epoch {
            thread: t as u32,
            clock: self.own[t],
        }
    }

    /// Is `e` ordered before thread `t`'s current epoch (or `t`'s own)?
    #[inline]
    pub fn before(&self, e: Epoch, t: usize) -> bool {
        let w = e.thread as usize;
        w == t
            || e.clock <= self.floor[w]
            || self.extra[t]
                .iter()
                .any(|x| x.thread == e.thread && e.clock <= x.clock)
    }

    /// Every thread of the block passed a barrier: each has seen every other's epoch, and starts
    /// a new one.
    pub fn block_barrier(&mut self) {
        // the copy engine's writes are seen as far as some thread had acquired them
        let engine = self.engine.map(|e| {
            let acquired = self
                .extra
                .iter()
                .flatten()
                .filter(|x| x.thread as usize == e);
            (e, acquired.map(|x| x.clock).fold(self.floor[e], u32::max))
        });
        self.floor.copy_from_slice(&self.own);
        if let Some((e, seen)) = engine {
            self.floor[e] = seen;
        }
        self.extra.iter_mut().for_each(Vec::clear);
        self.own.iter_mut().for_each(|c| *c += 1);
    }

    /// What thread `t` publishes (an mbarrier arrival: a release): its epoch and what it has seen
    /// above the floor. It then starts a new epoch, which the release does not cover.
    pub fn release(&mut self, t: usize) -> Vec<Epoch> {
        let mut seen = self.extra[t].clone();
        seen.push(self.now(t));
        self.own[t] += 1;
        seen
    }

    /// Thread `t` has seen the epochs `es` (a wait on what a release published: an acquire).
    pub fn acquire(&mut self, t: usize, es: &[Epoch]) {
        for &e in es {
            if e.clock <= self.floor[e.thread as usize] || e.thread as usize == t {
                continue;
            }
            match self.extra[t].iter_mut().find(|x| x.thread == e.thread) {
                Some(x) => x.clock = x.clock.max(e.clock),
                None => self.extra[t].push(e),
            }
        }
    }

    /// The threads of `set` passed a barrier together: each has seen what any of them had seen,
    /// and starts a new epoch.
    pub fn join(&mut self, set: &[usize]) {
        let mut seen: Vec<Epoch> = Vec::new();
        let mut add = |e: Epoch, floor: &[u32]| {
            if e.clock <= floor[e.thread as usize] {
                return;
            }
            match seen.iter_mut().find(|x| x.thread == e.thread) {
                Some(x) => x.clock = x.clock.max(e.clock),
                None => seen.push(e),
            }
        };
        for &t in set {
            add(self.now(t), &self.floor);
            for &e in &self.extra[t] {
                add(e, &self.floor);
            }
        }
        for &t in set {
            self.extra[t].clone_from(&seen);
            self.own[t] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_barrier_orders_every_thread_after_every_other() {
        let mut c = Clocks::default();
        c.reset(4);
        let e = c.now(2);
        assert!(!c.before(e, 0), "no order before a barrier");
        c.block_barrier();
        assert!((0..4).all(|t| c.before(e, t)));
        // what thread 2 does after the barrier is a new epoch, unseen by the others
        assert!(!c.before(c.now(2), 0));
    }

    #[test]
    fn an_acquire_sees_what_the_release_published_and_no_later() {
        let mut c = Clocks::default();
        c.reset(4);
        let before = c.now(1);
        let published = c.release(1);
        let after = c.now(1);
        c.acquire(3, &published);
        assert!(c.before(before, 3));
        assert!(!c.before(after, 3), "thread 1's accesses after its release");
        assert!(!c.before(before, 2), "thread 2 acquired nothing");
    }

    #[test]
    fn a_named_barrier_orders_its_threads_only() {
        let mut c = Clocks::default();
        c.reset(4);
        let e = c.now(1);
        c.join(&[0, 1]);
        assert!(c.before(e, 0));
        assert!(!c.before(e, 2), "thread 2 was not at the barrier");
        // transitively: 0 and 2 meet later, and 2 then sees 1's epoch
        c.join(&[0, 2]);
        assert!(c.before(e, 2));
        assert!(!c.before(e, 3));
    }
}
