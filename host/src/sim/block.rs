//! One block on the simulated GPU: each thread a stackful coroutine (`corosensei`) running the
//! kernel's function, suspended at every barrier, warp shuffle and vote ([`Sync`]), resumed in a
//! seeded order once what it waits for is complete. A barrier completes when every thread it
//! waits for has arrived; a warp operation when all 32 lanes have reached the same kind of
//! operation, its result computed as the PTX ISA defines it. When no thread can run and nothing
//! can complete, the block is stuck: a deadlock, or a warp operation under divergent lanes,
//! reported with every thread's wait.

use super::clock::Clocks;
use super::mbarrier::Mbarriers;
use super::schedule::Schedule;
use super::shared::Smem;
use super::tensor_core::{Accumulators, SourceA, WgmmaOp};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::panic::Location;
use tessel_device::sim::{install, Shfl, Simulator, Sync, Vote};

/// Where the kernel's code made a call.
pub type Site = &'static Location<'static>;

/// A fault the simulator found, raised inside a thread (or the scheduler) and caught by the
/// launch ([`super::launch`]); `resume_unwind` carries it without the panic hook's message.
#[derive(Debug)]
pub struct Fault(pub String);

/// Raises `message` as the running launch's fault.
pub fn fault(message: String) -> ! {
    std::panic::resume_unwind(Box::new(Fault(message)))
}

/// An access of `n` elements from element `pos` of a buffer of `len` (`space`: "global" or
/// "shared"): inside it and aligned to `align` elements (a power of two), or a fault naming the
/// caller's site. Inlined, its fault out of line: every access of the simulated GPU passes here.
#[track_caller]
#[inline]
pub fn span(space: &str, (pos, len): (i64, i64), n: i64, align: i64, what: &str) -> usize {
    debug_assert!(align > 0 && align & (align - 1) == 0, "a power of two");
    if pos < 0 || pos + n > len || pos & (align - 1) != 0 {
        span_fault(space, (pos, len), n, align, what, Location::caller());
    }
    pos as usize
}

/// [`span`]'s fault.
#[cold]
#[inline(never)]
fn span_fault(
    space: &str,
    (pos, len): (i64, i64),
    n: i64,
    align: i64,
    what: &str,
    site: Site,
) -> ! {
    if pos < 0 || pos + n > len {
        fault(format!(
            "{space} {what} of {n} elements at element {pos} outside its {len} elements at {site}"
        ));
    }
    fault(format!(
        "{space} {what} at element {pos} not aligned to {align} elements at {site}"
    ))
}

/// The shared state of a cluster of blocks (one block for a kernel without clusters), reached
/// by its threads' engines and device calls (`default`: to be reused from cluster to cluster).
/// Its threads are numbered through the cluster: thread `t` of the block of rank `r` is
/// `r * threads + t`.
#[derive(Default)]
pub struct BlockState {
    /// The threads' vector clocks (and the copy engine's, the last).
    pub clocks: RefCell<Clocks>,
    /// Each block's shared memory's shadow, by rank.
    pub smem: Vec<RefCell<Smem>>,
    /// Each block's mbarriers, by rank.
    pub mbar: Vec<RefCell<Mbarriers>>,
    /// The accumulators of the wgmmas in flight.
    accumulators: RefCell<Accumulators>,
    /// The arrivals (`bar.arrive`) at named barriers that no completion has counted yet.
    arrivals: RefCell<Vec<Arrival>>,
    /// Threads per block.
    threads: usize,
    running: Cell<usize>,
    block: Cell<[i64; 2]>,
    yielders: Vec<Cell<*const Yielder<u32, (Sync, Site)>>>,
}

std::thread_local! {
    static BLOCK: Cell<*const BlockState> = const { Cell::new(std::ptr::null()) };
}

/// `f` of the running block and thread; outside a simulated block a fault.
pub fn current<R>(f: impl FnOnce(&BlockState, usize) -> R) -> R {
    let b = BLOCK.with(Cell::get);
    if b.is_null() {
        fault("a simulated-GPU engine used outside its launch".to_string());
    }
    // SAFETY: set by `run_block` to the block it runs, which outlives its threads
    let b = unsafe { &*b };
    f(b, b.running.get())
}

impl Simulator for BlockState {
    fn sync(&self, op: Sync, site: Site) -> u32 {
        let y = self.yielders[self.running.get()].get();
        // SAFETY: set by the thread's coroutine as it started; valid while it runs
        unsafe { (*y).suspend((op, site)) }
    }
}

/// A thread's arrival at a named barrier (`bar.arrive`), waiting for the barrier to complete:
/// the barrier (block and id, as [`complete`] keys them), when, which thread, the count it
/// named, where, and what the thread published (a release).
#[derive(Clone, Debug)]
struct Arrival {
    key: u32,
    at: u64,
    thread: usize,
    threads: u32,
    site: Site,
    published: Vec<super::clock::Epoch>,
}

/// Where a thread is.
#[derive(Clone, Copy, Debug)]
enum State {
    Runnable,
    Waiting(Sync, Site, u64),
    Ended,
}

/// Runs the cluster whose first block is `block` of a launch, with the reused `state`: a
/// coroutine of `thread(t)` on each of the pooled `stacks` (`smem.len()` blocks of
/// `stacks.len() / smem.len()` threads), each block with its shared memory `smem[r]` (`data`,
/// elements, bytes per element) in the shadow `state` keeps. Any fault unwinds out of it.
pub fn run_block(
    (state, block): (&mut BlockState, [i64; 2]),
    stacks: &mut [DefaultStack],
    schedule: &mut Schedule,
    smem: &[(*mut u8, usize, usize)],
    thread: &dyn Fn(usize),
) {
    let (threads, blocks) = (stacks.len(), smem.len());
    let per_block = threads / blocks;
    state.block.set(block);
    state.threads = per_block;
    // one more clock: the copy engine's
    state.clocks.get_mut().reset_with_engine(threads);
    state.smem.resize_with(blocks, Default::default);
    state.mbar.resize_with(blocks, Default::default);
    state.accumulators.get_mut().reset();
    state.arrivals.get_mut().clear();
    for (r, &m) in smem.iter().enumerate() {
        state.smem[r].get_mut().reset(m, (r * per_block, per_block));
        state.mbar[r].get_mut().reset();
    }
    state
        .yielders
        .resize_with(threads, || Cell::new(std::ptr::null()));
    let state: &BlockState = state;
    let _block = Running::new(state);
    // SAFETY: `state` outlives the coroutines, which are dropped before this function returns
    let _sim = unsafe { install(state) };
    let mut coroutines: Vec<_> = stacks
        .iter_mut()
        .enumerate()
        .map(|(t, stack)| {
            let yielder = &state.yielders[t];
            // SAFETY: the closure borrows `thread` and `state`, which outlive the coroutines
            // (dropped, unwinding their stacks, at the end of this function or on a fault)
            unsafe {
                Coroutine::with_stack_unchecked(stack, move |y: &Yielder<u32, (Sync, Site)>, _| {
                    yielder.set(y);
                    thread(t)
                })
            }
        })
        .collect();
    let mut states = vec![State::Runnable; threads];
    let mut results = vec![0u32; threads];
    let mut arrival = 0u64;
    let mut waiting = Vec::new();
    let mut order: Vec<usize> = Vec::with_capacity(threads);
    loop {
        order.clear();
        order.extend((0..threads).filter(|&t| matches!(states[t], State::Runnable)));
        schedule.shuffle(&mut order);
        for &t in &order {
            state.running.set(t);
            match coroutines[t].resume(results[t]) {
                CoroutineResult::Yield((op, site)) => {
                    states[t] = State::Waiting(op, site, arrival);
                    arrival += 1;
                }
                CoroutineResult::Return(()) => {
                    state.smem[t / per_block].borrow().check_ended(t);
                    states[t] = State::Ended;
                }
            }
        }
        if states.iter().all(|s| matches!(s, State::Ended)) {
            for (s, m) in state.smem.iter().zip(&state.mbar) {
                s.borrow().check_block_ended();
                m.borrow().check_ended();
            }
            if let Some(a) = state.arrivals.borrow().first() {
                fault(format!(
                    "the block ended with thread {}'s arrival at named barrier {} ({} threads) at \
                     {} never counted by a completion of the barrier",
                    a.thread,
                    a.key % 32,
                    a.threads,
                    a.site
                ));
            }
            return;
        }
        if !complete(state, &mut states, &mut results, &mut waiting)
            && !complete_async(state, &mut states, &mut results)
        {
            let whose = |r: usize| match blocks {
                1 => String::new(),
                _ => format!("block rank {r}'s "),
            };
            let reports: String = (state.mbar.iter().enumerate())
                .map(|(r, m)| m.borrow().report(&whose(r)))
                .collect();
            fault(stuck(&states) + &reports);
        }
    }
}

/// Sets the running block for the engines, and clears it when dropped.
struct Running;
impl Running {
    fn new(b: &BlockState) -> Self {
        BLOCK.with(|c| c.set(b));
        Running
    }
}
impl Drop for Running {
    fn drop(&mut self) {
        BLOCK.with(|c| c.set(std::ptr::null()));
    }
}

impl BlockState {
    /// The block's index.
    pub fn block(&self) -> [i64; 2] {
        self.block.get()
    }

    /// The thread that runs (or ran last).
    pub fn running(&self) -> usize {
        self.running.get()
    }

    /// The rank of thread `t`'s block in the cluster.
    pub fn rank_of(&self, t: usize) -> usize {
        t / self.threads
    }

    /// Warpgroup `wg` of the cluster as (its block's rank, its index in that block).
    fn warpgroup(&self, wg: usize) -> (usize, usize) {
        (self.rank_of(128 * wg), 128 * wg % self.threads / 128)
    }
}

/// Completes every barrier and warp operation whose threads have all arrived: their threads
/// become runnable, with their results. False when none could. `waiting` is scratch space.
fn complete(
    b: &BlockState,
    states: &mut [State],
    results: &mut [u32],
    waiting: &mut Vec<(u32, u64, usize, u32, Site, bool)>,
) -> bool {
    let (all, threads) = (states.len(), b.threads);
    let mut progress = false;
    // the cluster's barrier: every thread of every block
    let at_cluster_barrier = |s: &State| matches!(s, State::Waiting(Sync::ClusterBarrier, _, _));
    if at_cluster_barrier(&states[0]) && states.iter().all(at_cluster_barrier) {
        b.clocks.borrow_mut().block_barrier();
        b.smem.iter().for_each(|m| m.borrow_mut().block_barrier());
        states.fill(State::Runnable);
        results.fill(0);
        progress = true;
    }
    // arrivals without a wait (`bar.arrive`): the thread goes on, its arrival counted below
    let mut arrivals = b.arrivals.borrow_mut();
    for (t, s) in states.iter_mut().enumerate() {
        if let State::Waiting(Sync::BarrierArrive { id, threads: n }, site, at) = *s {
            let published = b.clocks.borrow_mut().release(t);
            let key = (t / threads) as u32 * 32 + id;
            arrivals.push(Arrival {
                key,
                at,
                thread: t,
                threads: n,
                site,
                published,
            });
            *s = State::Runnable;
            results[t] = 0;
            progress = true;
        }
    }
    // barriers: (block and id, arrival, thread, count, site, an arrival without a wait), grouped
    // by block and id in arrival order
    waiting.clear();
    for (t, s) in states.iter().enumerate() {
        if let State::Waiting(Sync::Barrier { id, threads: n }, site, at) = *s {
            waiting.push(((t / threads) as u32 * 32 + id, at, t, n, site, false));
        }
    }
    waiting.extend(
        arrivals
            .iter()
            .map(|a| (a.key, a.at, a.thread, a.threads, a.site, true)),
    );
    waiting.sort_unstable_by_key(|w| (w.0, w.1));
    for group in waiting.chunk_by(|a, b| a.0 == b.0) {
        let (id, n, site) = (group[0].0 % 32, group[0].3, group[0].4);
        if let Some(w) = group.iter().find(|w| w.3 != n) {
            fault(format!(
                "barrier {id}: thread {} waits for {n} threads at {site}, thread {} for {} at {}",
                group[0].2, w.2, w.3, w.4
            ));
        }
        if id >= 16 || (id == 0 && group.iter().any(|w| w.5)) {
            fault(format!(
                "barrier {id} at {site}: named barriers are 1 to 15 (0 is sync_threads', which \
                 named_barrier_arrive may not use)"
            ));
        }
        let need = if n == 0 { threads } else { n as usize };
        if n != 0 && (n % 32 != 0 || need > threads) {
            fault(format!(
                "barrier {id} at {site} waits for {n} threads: a multiple of 32, at most the \
                 block's {threads}"
            ));
        }
        if group.len() >= need {
            let done = &group[..need];
            let waiters: Vec<usize> = done.iter().filter(|w| !w.5).map(|w| w.2).collect();
            if need == all && waiters.len() == all {
                b.clocks.borrow_mut().block_barrier();
                b.smem[0].borrow_mut().block_barrier();
            } else {
                // the waiters see each other and what every counted arrival published
                let mut clocks = b.clocks.borrow_mut();
                clocks.join(&waiters);
                for a in arrivals
                    .iter()
                    .filter(|a| done.iter().any(|w| w.5 && w.1 == a.at))
                {
                    for &t in &waiters {
                        clocks.acquire(t, &a.published);
                    }
                }
            }
            arrivals.retain(|a| !done.iter().any(|w| w.5 && w.1 == a.at));
            for &t in &waiters {
                states[t] = State::Runnable;
                results[t] = 0;
            }
            progress = true;
        }
    }
    drop(arrivals);
    // mbarrier waits whose phase has completed: the waiter acquires what the phase published
    for (t, s) in states.iter_mut().enumerate() {
        if let State::Waiting(Sync::MbarWait { bar, parity }, site, _) = *s {
            let mut mbar = b.mbar[t / threads].borrow_mut();
            if let Some(published) = mbar.ready(bar, parity, site) {
                b.clocks.borrow_mut().acquire(t, published);
                *s = State::Runnable;
                results[t] = 0;
                progress = true;
            }
        }
    }
    // warpgroup operations: all 128 threads of a warpgroup at the same one (its wait completes
    // in `complete_async`)
    for g in 0..all / 128 {
        if !threads.is_multiple_of(128) {
            break;
        }
        let Some((op, site)) = warpgroup_meets(states, g) else {
            continue;
        };
        if matches!(op, Sync::WgmmaWait { .. }) {
            continue;
        }
        warpgroup_op(b, (g, op, site), states);
        for t in 128 * g..128 * g + 128 {
            states[t] = State::Runnable;
            results[t] = 0;
        }
        progress = true;
    }
    // warp operations: all 32 lanes at the same kind
    for w in 0..all / 32 {
        let lanes = 32 * w..32 * w + 32;
        let mut ops = [Sync::Warp; 32];
        let mut all = true;
        for (l, t) in lanes.clone().enumerate() {
            match states[t] {
                State::Waiting(op, _, _) if is_warp_op(&op) => ops[l] = op,
                _ => {
                    all = false;
                    break;
                }
            }
        }
        if !all || !ops.iter().all(|o| same_kind(o, &ops[0])) {
            continue;
        }
        let out = warp_op(&ops);
        if matches!(ops[0], Sync::Warp) {
            b.clocks
                .borrow_mut()
                .join(&lanes.clone().collect::<Vec<_>>());
        }
        for (l, t) in lanes.enumerate() {
            states[t] = State::Runnable;
            results[t] = out[l];
        }
        progress = true;
    }
    progress
}

/// Is `op` one of the warp's operations (all 32 lanes meet at it), not a barrier, an mbarrier
/// wait, a thread's bulk wait or a warpgroup's operation?
fn is_warp_op(op: &Sync) -> bool {
    !matches!(
        op,
        Sync::Barrier { .. }
            | Sync::BarrierArrive { .. }
            | Sync::ClusterBarrier
            | Sync::MbarWait { .. }
            | Sync::BulkWait { .. }
    ) && !is_warpgroup_op(op)
}

/// Is `op` one of the warpgroup's operations (all 128 threads meet at it)?
fn is_warpgroup_op(op: &Sync) -> bool {
    matches!(
        op,
        Sync::SetMaxNReg { .. }
            | Sync::WgmmaFence
            | Sync::Wgmma { .. }
            | Sync::WgmmaCommit
            | Sync::WgmmaWait { .. }
    )
}

/// Do two threads' warpgroup operations meet: the same instruction with the same operands (but
/// each thread's own accumulators)?
fn same_warpgroup_op(a: &Sync, b: &Sync) -> bool {
    let operands = |op: &Sync| match *op {
        Sync::Wgmma {
            a,
            a_regs,
            b,
            mn_major,
            bf16,
            accumulate,
            values,
            ..
        } => Sync::Wgmma {
            a,
            a_regs: a_regs.map(|_| [0; 4]),
            b,
            mn_major,
            bf16,
            accumulate,
            values,
            acc: std::ptr::null_mut(),
        },
        op => op,
    };
    operands(a) == operands(b)
}

/// The operation all 128 threads of warpgroup `g` wait at, with the first's site; `None` while
/// one is elsewhere. Threads of the warpgroup at different ones (the same `.aligned` instruction
/// must be executed by all) are a fault naming two of them.
fn warpgroup_meets(states: &[State], g: usize) -> Option<(Sync, Site)> {
    let mut first: Option<(Sync, Site, usize)> = None;
    let mut all = true;
    for (t, state) in states.iter().enumerate().skip(128 * g).take(128) {
        match *state {
            State::Waiting(op, site, _) if is_warpgroup_op(&op) => match first {
                None => first = Some((op, site, t)),
                Some((f, fsite, ft)) if !same_warpgroup_op(&f, &op) => {
                    let (nf, no) = (name(&f), name(&op));
                    let what = nf.split(['.', '(', ':']).next().unwrap_or("");
                    fault(format!(
                        "warpgroup {g}: thread {ft} at {nf} ({fsite}), thread {t} at {no} \
                         ({site}): {what} differs within the warpgroup (its threads execute the \
                         same instruction with the same operands)"
                    ))
                }
                Some(_) => {}
            },
            _ => all = false,
        }
    }
    first.filter(|_| all).map(|(op, site, _)| (op, site))
}

/// Warpgroup `g`'s `op`, met by all its threads at `site`.
fn warpgroup_op(b: &BlockState, (wg, op, site): (usize, Sync, Site), states: &[State]) {
    let group: Vec<usize> = (128 * wg..128 * wg + 128).collect();
    // the block, and the warpgroup in it
    let (r, g) = b.warpgroup(wg);
    match op {
        Sync::WgmmaFence => {
            b.clocks.borrow_mut().join(&group);
            b.smem[r].borrow_mut().warpgroups[g].1 = true;
        }
        Sync::Wgmma {
            a,
            a_regs,
            b: bd,
            mn_major,
            bf16,
            accumulate,
            values,
            ..
        } => {
            let mut smem = b.smem[r].borrow_mut();
            if !smem.warpgroups[g].1 {
                fault(format!(
                    "warpgroup {g}: wgmma at {site} with no warpgroup_arrive (wgmma.fence) since \
                     the warpgroup started or last waited: the tensor cores may not see its \
                     registers and shared memory as the threads left them"
                ));
            }
            let (acc, regs): (Vec<*mut f32>, Vec<[u32; 4]>) = group
                .iter()
                .map(|&t| match states[t] {
                    State::Waiting(Sync::Wgmma { acc, a_regs, .. }, _, _) => {
                        (acc, a_regs.unwrap_or_default())
                    }
                    _ => unreachable!("met at the wgmma"),
                })
                .unzip();
            let values = values as usize;
            let op = WgmmaOp {
                a: match a_regs {
                    Some(_) => SourceA::Regs(&regs),
                    None => SourceA::Desc(a),
                },
                b: bd,
                mn_major,
                bf16,
                accumulate,
                values,
            };
            let mut accumulators = b.accumulators.borrow_mut();
            let out = super::tensor_core::wgmma(
                (&mut smem, &b.clocks.borrow()),
                (g, 128 * wg),
                op,
                |i| accumulators.input(wg, (i / values, i % values), acc[i / values], values),
                site,
            );
            accumulators.issue(wg, acc, values, out);
        }
        Sync::WgmmaCommit => {
            let mut smem = b.smem[r].borrow_mut();
            b.accumulators.borrow_mut().commit(wg, smem.warpgroups[g].0);
            smem.wgmma_commit(g);
        }
        _ => {}
    }
}

/// Completes what the async proxy has in flight, when nothing else can go on (the latest a GPU
/// could): the copy engine's loads land, threads' bulk waits and warpgroups' wgmma waits
/// return. False when there was none.
fn complete_async(b: &BlockState, states: &mut [State], results: &mut [u32]) -> bool {
    let all = states.len();
    let mut progress = false;
    for (smem, mbar) in b.smem.iter().zip(&b.mbar) {
        progress |=
            smem.borrow_mut()
                .land_loads(&mut b.clocks.borrow_mut(), &mut mbar.borrow_mut(), all);
    }
    for t in 0..all {
        if let State::Waiting(Sync::BulkWait { n, .. }, _, _) = states[t] {
            b.smem[b.rank_of(t)].borrow_mut().bulk_wait(t, n);
            states[t] = State::Runnable;
            results[t] = 0;
            progress = true;
        }
    }
    for wg in 0..all / 128 {
        if !b.threads.is_multiple_of(128) {
            break;
        }
        if let Some((Sync::WgmmaWait { n }, _)) = warpgroup_meets(states, wg) {
            let (r, g) = b.warpgroup(wg);
            let mut smem = b.smem[r].borrow_mut();
            let batches = smem.warpgroups[g].0;
            smem.wgmma_wait(g, n);
            b.accumulators.borrow_mut().wait(wg, batches, n);
            b.clocks
                .borrow_mut()
                .join(&(128 * wg..128 * wg + 128).collect::<Vec<_>>());
            for t in 128 * wg..128 * wg + 128 {
                states[t] = State::Runnable;
                results[t] = 0;
            }
            progress = true;
        }
    }
    progress
}

/// Do two lanes' operations meet (the same instruction kind and mode)?
fn same_kind(a: &Sync, b: &Sync) -> bool {
    match (a, b) {
        (Sync::Shfl { mode: x, .. }, Sync::Shfl { mode: y, .. }) => x == y,
        (Sync::Vote { mode: x, .. }, Sync::Vote { mode: y, .. }) => x == y,
        (Sync::Warp, Sync::Warp) => true,
        (Sync::Ldmatrix { trans: x, .. }, Sync::Ldmatrix { trans: y, .. }) => x == y,
        (Sync::Mma { bf16: x, .. }, Sync::Mma { bf16: y, .. }) => x == y,
        _ => false,
    }
}

/// The results of one warp operation, all 32 lanes' `ops` of one kind, lane by lane: a shuffle
/// as `shfl.sync` computes it with the clamp operands [`tessel_device::sync`] passes (`0x1f`
/// for bfly, idx and down; 0 for up: no segments), a vote over the 32 predicates.
fn warp_op(ops: &[Sync]) -> [u32; 32] {
    let mut out = [0u32; 32];
    match ops[0] {
        Sync::Shfl { mode, .. } => {
            let values: [u32; 32] = std::array::from_fn(|l| match ops[l] {
                Sync::Shfl { value, .. } => value,
                _ => unreachable!("one kind"),
            });
            for (lane, o) in ops.iter().enumerate() {
                let Sync::Shfl { lane: b, .. } = *o else {
                    unreachable!("one kind")
                };
                let lane = lane as u32;
                let j = match mode {
                    Shfl::Bfly => Some(lane ^ (b & 31)),
                    Shfl::Idx => Some(b & 31),
                    Shfl::Down => Some(lane + b).filter(|&j| j <= 31),
                    Shfl::Up => lane.checked_sub(b),
                };
                out[lane as usize] = values[j.unwrap_or(lane) as usize];
            }
        }
        Sync::Vote { mode, .. } => {
            let bits = ops.iter().enumerate().fold(0u32, |acc, (l, o)| match o {
                Sync::Vote { pred: true, .. } => acc | 1 << l,
                _ => acc,
            });
            let r = match mode {
                Vote::Ballot => bits,
                Vote::Any => (bits != 0) as u32,
                Vote::All => (bits == u32::MAX) as u32,
            };
            out = [r; 32];
        }
        Sync::Ldmatrix { trans, .. } => {
            let rows: [[u32; 4]; 32] = std::array::from_fn(|l| match ops[l] {
                Sync::Ldmatrix { row, .. } => row,
                _ => unreachable!("one kind"),
            });
            for (l, o) in ops.iter().enumerate() {
                let Sync::Ldmatrix { out, .. } = *o else {
                    unreachable!("one kind")
                };
                // SAFETY: the lane's own result words, on its stack while it waits here
                unsafe { *out = super::tensor_core::ldmatrix(&rows, l, trans) };
            }
        }
        Sync::Mma { bf16, .. } => {
            // SAFETY: each lane's registers, on its stack while it waits here
            let regs: [&mut [u32; 10]; 32] = std::array::from_fn(|l| match ops[l] {
                Sync::Mma { regs, .. } => unsafe { &mut *regs },
                _ => unreachable!("one kind"),
            });
            super::tensor_core::mma_m16n8k16(regs, bf16);
        }
        _ => {}
    }
    out
}

/// The report of a stuck block: every thread's wait, threads waiting alike grouped into ranges;
/// a warp operation whose lanes are not all there named first.
fn stuck(states: &[State]) -> String {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (t, s) in states.iter().enumerate() {
        let what = match s {
            State::Waiting(op, site, _) => format!("wait at {} ({site})", name(op)),
            State::Ended => "have ended".to_string(),
            State::Runnable => "are runnable".to_string(),
        };
        groups.entry(what).or_default().push(t);
    }
    let divergent = (0..states.len().div_ceil(32)).find(|w| {
        let lanes = &states[32 * w..(32 * w + 32).min(states.len())];
        let warp_op = |s: &State| matches!(s, State::Waiting(op, _, _) if is_warp_op(op));
        lanes.iter().any(warp_op) && !lanes.iter().all(warp_op)
            || lanes.len() < 32 && lanes.iter().any(warp_op)
    });
    let mut m = match divergent {
        Some(w) => format!(
            "a warp operation under divergent lanes: in warp {w} not every one of 32 lanes \
             reached it; "
        ),
        None => "deadlock: no thread can go on; ".to_string(),
    };
    let mut first = true;
    for (what, ts) in groups {
        if !first {
            m.push_str("; ");
        }
        first = false;
        let _ = write!(m, "threads {} {what}", ranges(&ts));
    }
    m
}

/// `op` as the device function a kernel calls.
fn name(op: &Sync) -> String {
    match op {
        Sync::Barrier { id: 0, threads: 0 } => "sync_threads".to_string(),
        Sync::Barrier { id, threads } => format!("named_barrier({id}, {threads})"),
        Sync::BarrierArrive { id, threads } => format!("named_barrier_arrive({id}, {threads})"),
        Sync::Warp => "sync_warp".to_string(),
        Sync::Shfl { mode, .. } => format!("shfl.{}", format!("{mode:?}").to_lowercase()),
        Sync::Vote { mode, .. } => format!("vote.{}", format!("{mode:?}").to_lowercase()),
        Sync::MbarWait { bar, parity } => {
            format!("mbarrier_wait(shared byte {bar}, parity {parity})")
        }
        Sync::SetMaxNReg { inc, regs } => {
            format!("setmaxnreg.{}({regs})", if *inc { "inc" } else { "dec" })
        }
        Sync::Ldmatrix { trans: false, .. } => "ldmatrix.x4".to_string(),
        Sync::Ldmatrix { trans: true, .. } => "ldmatrix.x4.trans".to_string(),
        Sync::Mma { bf16, .. } => {
            format!("mma.sync.m16n8k16.{}", if *bf16 { "bf16" } else { "f16" })
        }
        Sync::ClusterBarrier => "cluster_sync".to_string(),
        Sync::WgmmaFence => "warpgroup_arrive (wgmma.fence)".to_string(),
        Sync::Wgmma { values, .. } => format!("wgmma.m64n{}k16", 2 * values),
        Sync::WgmmaCommit => "warpgroup_commit_batch".to_string(),
        Sync::WgmmaWait { n } => format!("warpgroup_wait::<{n}>"),
        Sync::BulkWait { n, read: true } => format!("bulk_wait_read::<{n}>"),
        Sync::BulkWait { n, read: false } => format!("bulk_wait::<{n}>"),
    }
}

/// `0-31, 64, 96-127`.
pub fn ranges(ts: &[usize]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < ts.len() {
        let mut j = i;
        while j + 1 < ts.len() && ts[j + 1] == ts[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push_str(", ");
        }
        let _ = if i == j {
            write!(out, "{}", ts[i])
        } else {
            write!(out, "{}-{}", ts[i], ts[j])
        };
        i = j + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shfl(mode: Shfl, b: u32) -> Vec<Sync> {
        (0..32)
            .map(|l| Sync::Shfl {
                mode,
                value: 100 + l,
                lane: b,
            })
            .collect()
    }

    #[test]
    fn shuffles_take_the_lanes_the_ptx_isa_names() {
        let bfly = warp_op(&shfl(Shfl::Bfly, 5));
        assert!((0..32).all(|l| bfly[l] == 100 + (l as u32 ^ 5)));
        let idx = warp_op(&shfl(Shfl::Idx, 33));
        assert!(idx.iter().all(|&v| v == 101), "idx takes src modulo 32");
        let down = warp_op(&shfl(Shfl::Down, 3));
        assert!((0..32).all(|l| down[l] == 100 + if l + 3 <= 31 { l + 3 } else { l } as u32));
        let up = warp_op(&shfl(Shfl::Up, 3));
        assert!((0..32).all(|l| up[l] == 100 + if l >= 3 { l - 3 } else { l } as u32));
    }

    #[test]
    fn votes_count_every_lane() {
        let v = |mode, f: fn(u32) -> bool| -> Vec<Sync> {
            (0..32).map(|l| Sync::Vote { mode, pred: f(l) }).collect()
        };
        assert_eq!(warp_op(&v(Vote::Ballot, |l| l % 3 == 0))[7], 0x4924_9249);
        assert_eq!(warp_op(&v(Vote::Any, |l| l == 31))[0], 1);
        assert_eq!(warp_op(&v(Vote::All, |l| l != 31))[0], 0);
        assert_eq!(warp_op(&v(Vote::All, |_| true))[0], 1);
    }

    #[test]
    fn ranges_group_consecutive_threads() {
        assert_eq!(ranges(&[0, 1, 2, 5, 7, 8]), "0-2, 5, 7-8");
    }
}
