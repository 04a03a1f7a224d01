//! The simulated GPU catches each injected fault, naming the kernel's sites: a kernel that
//! rotates a vector through shared memory twice, written correctly and broken one way at a time
//! (a missing barrier, a missing cp.async wait, an element written twice, a shuffle under
//! divergent lanes, a barrier some threads never reach); and a handoff between warps through an
//! mbarrier, correct, with a wrong transaction count, and without its wait. A failing schedule
//! replays from its seed; a correct kernel gives the same result under every seed. Atomic
//! additions hand out each ticket once, and one outside its buffer is reported at its site.

use host::sim::{self, HostMem, Options, Sim, SimError};
use layout_core::{Engine, FlatLayout, FlatTensor};
use tessel_gpu::ctx::{Ctx, Geometry, Kernel};
use tessel_gpu::mem::{AsyncCopy, Atomic, Mem, Space, V4};
use tessel_gpu::sync::{sync_threads, warp_sum};

/// Threads of the block.
const THREADS: i64 = 128;

/// `x` and `y`, `4 THREADS` floats each.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Params<E> {
    x: FlatTensor<E, 1>,
    y: FlatTensor<E, 1>,
}

/// One block of [`THREADS`] threads with `smem_bytes` of shared memory.
fn one_block(smem_bytes: i64) -> Geometry {
    Geometry {
        grid: [1, 1],
        threads: THREADS,
        smem_bytes,
    }
}

/// The faults: none, or one of these.
const CORRECT: u8 = 0;
const NO_BARRIER: u8 = 1;
const NO_WAIT: u8 = 2;
const TWICE: u8 = 3;
const DIVERGENT: u8 = 4;
const DEADLOCK: u8 = 5;
const OUTSIDE: u8 = 6;

/// Thread `t` stages `x`'s 16 bytes `t` in shared slot `t` (by `cp.async` when `ASYNC`), reads
/// slot `t + 1` after a barrier and restages it in its own slot after another, and writes slot
/// `t + 1` to `y`'s 16 bytes `t` after a third: `y[t] = x[(t + 2) % THREADS]`, in 16-byte units.
struct Rotate<const FAULT: u8, const ASYNC: bool>;

impl<const FAULT: u8, const ASYNC: bool> Kernel for Rotate<FAULT, ASYNC> {
    type Shared = V4;
    type Params<M: Space> = Params<M::Global<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        one_block(16 * THREADS)
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let t = c.thread;
        let slot = |i: i64| c.smem.advance(i % THREADS);
        let x = p.x.engine().advance(4 * t);
        if ASYNC {
            slot(t).copy_async_v4(&x); // site: COPY
            if FAULT != NO_WAIT {
                slot(t).wait_all();
            }
        } else {
            slot(t).write(x.read_v4()); // site: STAGE
        }
        if FAULT == DEADLOCK && t >= 64 {
            return;
        }
        sync_threads(); // site: BARRIER_1
        let v = slot(t + 1).read(); // site: READ
        if FAULT != NO_BARRIER {
            sync_threads();
        }
        slot(t).write(v); // site: RESTAGE
        sync_threads();
        let out = match FAULT {
            TWICE if t == 1 => 0,
            OUTSIDE if t == THREADS - 1 => THREADS,
            _ => t,
        };
        let y = p.y.engine().advance(4 * out);
        y.write_v4(slot(t + 1).read()); // site: WRITE
        if FAULT == DIVERGENT && t % 32 < 16 {
            // a warp's sum taken by half its lanes
            let _ = warp_sum(1.0); // site: SHFL
        }
        sync_threads();
    }
}

/// Runs kernel `K` (its geometry) on `x` under `seed`: the output `y` (NaN where unwritten; a
/// second write of an element is a fault) and the launch's result.
fn launch<K>(x: &[f32], seed: u64) -> (Vec<f32>, Result<(), SimError>)
where
    K: Kernel<Params<Sim> = Params<HostMem<f32>>>,
{
    let n = x.len();
    let mut x = x.to_vec();
    let mut y = vec![f32::NAN; n];
    let (mut xw, mut yw) = (vec![0u32; n], vec![0u32; n]);
    let l = FlatLayout::new([n as i64], [1]).unwrap();
    // SAFETY: the buffers outlive the launch
    let p = unsafe {
        Params {
            x: FlatTensor::new(HostMem::new(&mut x, &mut xw), l),
            y: FlatTensor::new(HostMem::new(&mut y, &mut yw).once(), l),
        }
    };
    let r = sim::launch::<K>(&p, K::geometry::<Sim>(&p, 1, 0), Options { seed });
    (y, r)
}

/// Runs `Rotate<F, A>` under `seed` on a fresh `x`; the output `y` and the launch's result.
fn rotate<const F: u8, const A: bool>(seed: u64) -> (Vec<f32>, Result<(), SimError>) {
    let x: Vec<f32> = (0..4 * THREADS).map(|i| i as f32 * 0.5 - 7.0).collect();
    launch::<Rotate<F, A>>(&x, seed)
}

/// The report of a broken kernel, which must mention every one of `wants`.
fn fails<const F: u8, const A: bool>(seed: u64, wants: &[String]) -> SimError {
    let e = rotate::<F, A>(seed)
        .1
        .expect_err("the broken kernel must fail");
    let text = e.to_string();
    println!("{text}");
    for w in wants {
        assert!(text.contains(w.as_str()), "{text}\n does not mention {w}");
    }
    e
}

/// `tests/sim.rs:LINE:` of the kernel's line marked `// site: NAME`.
fn at(name: &str) -> String {
    let marker = format!("// site: {name}");
    let line = include_str!("sim.rs")
        .lines()
        .position(|l| l.ends_with(&marker))
        .expect("a marked site");
    format!("tests/sim.rs:{}:", line + 1)
}

#[test]
fn the_correct_kernel_rotates_under_every_schedule() {
    for seed in 0..6 {
        for asynchronous in [false, true] {
            let (y, r) = if asynchronous {
                rotate::<CORRECT, true>(seed)
            } else {
                rotate::<CORRECT, false>(seed)
            };
            r.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
            for (i, v) in y.iter().enumerate() {
                let from = (i + 8) % (4 * THREADS as usize);
                assert_eq!(*v, from as f32 * 0.5 - 7.0, "seed {seed}, element {i}");
            }
        }
    }
}

#[test]
fn a_missing_barrier_is_a_race_naming_both_sites() {
    for seed in [0, 1, 7] {
        let e = fails::<NO_BARRIER, false>(seed, &["shared-memory race".into()]);
        // a read of slot t + 1 and its restaging by thread t + 1, in either order
        assert!(
            e.message.contains(&at("READ")) && e.message.contains(&at("RESTAGE")),
            "{e}"
        );
    }
}

#[test]
fn a_missing_cp_async_wait_names_the_copy_and_the_access() {
    fails::<NO_WAIT, true>(
        3,
        &[
            "in flight".into(),
            "missing cp.async wait".into(),
            at("COPY"),
        ],
    );
}

#[test]
fn an_element_written_twice_names_both_writers() {
    fails::<TWICE, false>(
        1,
        &["global element".into(), "written twice".into(), at("WRITE")],
    );
}

#[test]
fn an_access_outside_its_buffer_names_the_site() {
    fails::<OUTSIDE, false>(
        1,
        &[
            "global vector write".into(),
            "outside its".into(),
            at("WRITE"),
        ],
    );
}

#[test]
fn a_shuffle_under_divergent_lanes_is_reported_with_each_wait() {
    fails::<DIVERGENT, false>(
        2,
        &[
            "divergent lanes".into(),
            format!(
                "threads 0-15, 32-47, 64-79, 96-111 wait at shfl.bfly (host/{}",
                at("SHFL")
            ),
        ],
    );
}

#[test]
fn a_barrier_some_threads_never_reach_is_a_deadlock() {
    let e = fails::<DEADLOCK, false>(
        4,
        &[
            "deadlock".into(),
            format!(
                "threads 0-63 wait at sync_threads (host/{}",
                at("BARRIER_1")
            ),
            "threads 64-127 have ended".into(),
        ],
    );
    assert_eq!(e.block, [0, 0]);
}

#[test]
fn a_failing_seed_replays_and_names_itself() {
    let (_, first) = rotate::<NO_BARRIER, true>(11);
    let first = first.expect_err("racy");
    assert_eq!(first.seed, 11);
    assert!(first.to_string().contains("TESSEL_SIM_SEED=11"));
    assert_eq!(rotate::<NO_BARRIER, true>(11).1, Err(first.clone()));
    // another schedule meets the race in another order
    let others: Vec<_> = (12..20)
        .map(|s| rotate::<NO_BARRIER, true>(s).1.unwrap_err().message)
        .collect();
    assert!(others.iter().any(|m| *m != first.message));
}

/// Each half of the block (64 threads) stages its slots and meets at its own named barrier
/// (1 and 2), then reads a slot of its own half (`CROSS`: of the other half, which no barrier
/// orders), and writes `y[t]` as that slot plus the warp's ballot of `t % 3 == 0`.
struct Halves<const CROSS: bool>;

impl<const CROSS: bool> Kernel for Halves<CROSS> {
    type Shared = f32;
    type Params<M: Space> = Params<M::Global<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        one_block(4 * THREADS)
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let t = c.thread;
        c.smem.advance(t).write(p.x.engine().advance(t).read()); // site: HALF_STAGE
        let half = t / 64;
        tessel_gpu::sync::named_barrier(1 + half as u32, 64);
        let from = if CROSS { (t + 64) % THREADS } else { t ^ 1 };
        let v = c.smem.advance(from).read(); // site: HALF_READ
        let votes = tessel_gpu::sync::ballot(t % 3 == 0);
        p.y.engine().advance(t).write(v + votes as f32);
    }
}

fn halves<const CROSS: bool>() -> (Vec<f32>, Result<(), SimError>) {
    let x: Vec<f32> = (0..THREADS).map(|i| i as f32).collect();
    launch::<Halves<CROSS>>(&x, 5)
}

#[test]
fn named_barriers_order_their_own_threads_and_votes_count_every_lane() {
    let (y, r) = halves::<false>();
    r.unwrap();
    for (t, v) in y.iter().enumerate() {
        let warp = 32 * (t / 32);
        let ballot = (0..32)
            .filter(|l| (warp + l) % 3 == 0)
            .fold(0u32, |b, l| b | 1 << l);
        assert_eq!(*v, (t ^ 1) as f32 + ballot as f32, "thread {t}");
    }
}

#[test]
fn a_read_across_named_barriers_is_a_race() {
    let e = halves::<true>()
        .1
        .expect_err("no barrier orders the halves");
    assert!(e.message.contains("shared-memory race"), "{e}");
    assert!(
        e.message.contains(&at("HALF_STAGE")) && e.message.contains(&at("HALF_READ")),
        "{e}"
    );
}

/// The mbarrier faults: none, or one of these.
const WRONG_TX: u8 = 1;
const NO_MBAR_WAIT: u8 = 2;

/// Warp 1 hands 32 floats of `x` to warp 0 through shared memory and an mbarrier (bytes 0..8,
/// the floats after it): thread 0 initialises it for one arrival, warp 1's lanes each write a
/// float and complete 4 transaction bytes, its lane 0 arrives announcing 128 (`WRONG_TX`: 256);
/// warp 0 waits for phase 0 (`NO_MBAR_WAIT`: does not) and writes `y[t] = 2 x[32 + t]`, warp 1
/// `y[t] = x[t]`. Each lane completes before or after lane 0's announcement, as the schedule has
/// it: the transaction count may dip below zero meanwhile.
struct Handoff<const FAULT: u8>;

impl<const FAULT: u8> Kernel for Handoff<FAULT> {
    type Shared = f32;
    type Params<M: Space> = Params<M::Global<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        Geometry {
            grid: [1, 1],
            threads: 64,
            smem_bytes: 8 + 4 * 32,
        }
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let (t, bar) = (c.thread, c.smem);
        let slot = |i: i64| c.smem.advance(2 + i);
        if t == 0 {
            bar.mbarrier_init(1); // site: MBAR_INIT
        }
        sync_threads();
        if t >= 32 {
            slot(t - 32).write(p.x.engine().advance(t).read()); // site: HAND_WRITE
            if t == 32 {
                bar.mbarrier_arrive(if FAULT == WRONG_TX { 256 } else { 128 }); // site: EXPECT
            }
            bar.mbarrier_complete_tx(4);
            p.y.engine()
                .advance(t)
                .write(p.x.engine().advance(t).read());
        } else {
            if FAULT != NO_MBAR_WAIT {
                bar.mbarrier_wait(0); // site: MBAR_WAIT
            }
            let v = slot(t).read(); // site: HAND_READ
            p.y.engine().advance(t).write(2.0 * v);
        }
    }
}

fn handoff<const F: u8>(seed: u64) -> (Vec<f32>, Vec<f32>, Result<(), SimError>) {
    let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.25 - 3.0).collect();
    let (y, r) = launch::<Handoff<F>>(&x, seed);
    (x, y, r)
}

#[test]
fn an_mbarrier_hands_data_over_under_every_schedule() {
    for seed in 0..24 {
        let (x, y, r) = handoff::<CORRECT>(seed);
        r.unwrap_or_else(|e| panic!("{e}"));
        for t in 0..64 {
            let want = if t < 32 { 2.0 * x[32 + t] } else { x[t] };
            assert_eq!(y[t], want, "seed {seed}, thread {t}");
        }
    }
}

#[test]
fn a_wrong_mbarrier_transaction_count_is_a_deadlock_naming_the_sites() {
    let e = handoff::<WRONG_TX>(3)
        .2
        .expect_err("phase 0 never completes");
    let text = e.to_string();
    println!("{text}");
    for want in [
        "mbarrier_wait(shared byte 0, parity 0)".to_string(),
        at("MBAR_WAIT"),
        at("MBAR_INIT"),
        at("EXPECT"),
        "128 transaction bytes pending".to_string(),
    ] {
        assert!(text.contains(&want), "{text}\n does not mention {want}");
    }
}

#[test]
fn a_read_without_the_mbarrier_wait_is_a_race() {
    // every schedule reads a slot before its write, or unordered after it
    for seed in 0..8 {
        let e = handoff::<NO_MBAR_WAIT>(seed)
            .2
            .expect_err("nothing orders the handoff");
        let m = &e.message;
        assert!(
            m.contains("shared-memory race") || m.contains("before any thread wrote it"),
            "{e}"
        );
        assert!(m.contains(&at("HAND_READ")), "{e}");
    }
}

/// The turn faults: none, or one of these.
const NO_TURN_WAIT: u8 = 1;
const EXTRA_ARRIVAL: u8 = 2;

/// Two warps take turns through shared memory as FlashAttention-3's warpgroups take turns at the
/// tensor cores: in round `r` (of 4) warp `r % 2` writes `x[32 r + lane]` into the round's 32
/// slots and arrives at named barrier `1 + r % 2` without waiting (`bar.arrive`); the other warp
/// waits there (`NO_TURN_WAIT`: not in round 2) and writes `y[32 r + lane] = 2 slot`.
/// `EXTRA_ARRIVAL`: warp 0 arrives once more at the end, an arrival no completion counts.
struct Turns<const FAULT: u8>;

impl<const FAULT: u8> Kernel for Turns<FAULT> {
    type Shared = f32;
    type Params<M: Space> = Params<M::Global<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        Geometry {
            grid: [1, 1],
            threads: 64,
            smem_bytes: 4 * 128,
        }
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        use tessel_gpu::sync::{named_barrier, named_barrier_arrive};
        let (warp, lane) = (c.thread / 32, c.thread % 32);
        for r in 0..4 {
            let (at, bar) = (32 * r + lane, 1 + (r % 2) as u32);
            if warp == r % 2 {
                c.smem.advance(at).write(p.x.engine().advance(at).read()); // site: TURN_WRITE
                named_barrier_arrive(bar, 64); // site: TURN_ARRIVE
            } else {
                if !(FAULT == NO_TURN_WAIT && r == 2) {
                    named_barrier(bar, 64);
                }
                let v = c.smem.advance(at).read(); // site: TURN_READ
                p.y.engine().advance(at).write(2.0 * v);
            }
        }
        if FAULT == EXTRA_ARRIVAL && warp == 0 {
            named_barrier_arrive(1, 64); // site: TURN_EXTRA
        }
    }
}

fn turns<const F: u8>(seed: u64) -> (Vec<f32>, Vec<f32>, Result<(), SimError>) {
    let x: Vec<f32> = (0..128).map(|i| i as f32 * 0.75 - 20.0).collect();
    let (y, r) = launch::<Turns<F>>(&x, seed);
    (x, y, r)
}

#[test]
fn warps_take_turns_through_bar_arrive_under_every_schedule() {
    for seed in 0..16 {
        let (x, y, r) = turns::<CORRECT>(seed);
        r.unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for i in 0..128 {
            assert_eq!(y[i], 2.0 * x[i], "seed {seed}, element {i}");
        }
    }
}

#[test]
fn a_turn_taken_without_the_wait_is_a_race_and_a_stray_arrival_is_reported() {
    for seed in 0..8 {
        let e = turns::<NO_TURN_WAIT>(seed)
            .2
            .expect_err("nothing orders round 2");
        let m = &e.message;
        assert!(
            m.contains("shared-memory race") || m.contains("before any thread wrote it"),
            "{e}"
        );
        assert!(m.contains(&at("TURN_READ")), "{e}");
    }
    let e = turns::<EXTRA_ARRIVAL>(1)
        .2
        .expect_err("an arrival left over");
    println!("{e}");
    assert!(
        e.message.contains("named barrier 1") && e.message.contains(&at("TURN_EXTRA")),
        "{e}"
    );
}

/// Two warpgroups move registers as a producer / consumer kernel does: warpgroup 0
/// `setmaxnreg_dec::<40>`, warpgroup 1 `setmaxnreg_inc::<232>` (`SPLIT`: warp 3, the last of
/// warpgroup 0, takes warpgroup 1's), then each thread writes `y[t] = x[t] + 1`.
struct Regs<const SPLIT: bool>;

impl<const SPLIT: bool> Kernel for Regs<SPLIT> {
    type Shared = f32;
    type Params<M: Space> = Params<M::Global<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        Geometry {
            grid: [1, 1],
            threads: 256,
            smem_bytes: 0,
        }
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let t = c.thread;
        if t < 128 && !(SPLIT && t >= 96) {
            tessel_gpu::sync::setmaxnreg_dec::<40>(); // site: DEC
        } else {
            tessel_gpu::sync::setmaxnreg_inc::<232>(); // site: INC
        }
        p.y.engine()
            .advance(t)
            .write(p.x.engine().advance(t).read() + 1.0);
    }
}

#[test]
fn setmaxnreg_meets_its_warpgroup() {
    let x: Vec<f32> = (0..256).map(|i| i as f32).collect();
    for seed in [0, 1, 2] {
        let (y, r) = launch::<Regs<false>>(&x, seed);
        r.unwrap();
        assert!(y.iter().enumerate().all(|(t, v)| *v == t as f32 + 1.0));
    }
    let e = launch::<Regs<true>>(&x, 4).1.unwrap_err();
    assert!(
        e.message
            .contains("setmaxnreg differs within the warpgroup"),
        "{e}"
    );
    assert!(
        e.message.contains(&at("DEC")) && e.message.contains(&at("INC")),
        "{e}"
    );
}

/// The counters (the tickets', the parities') and the tickets taken, `i32` in global memory.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct TicketParams<E> {
    counter: FlatTensor<E, 1>,
    tickets: FlatTensor<E, 1>,
}

/// Blocks of the ticket launch.
const TICKET_BLOCKS: i64 = 3;

/// Every thread of [`TICKET_BLOCKS`] blocks takes a ticket, counter 0's old value, by an atomic
/// addition of 1 (`OUTSIDE`: thread 5 of block 1 adds at the element past the counters), and
/// writes it at its index in the launch; then each adds its ticket's parity to counter 1 by the
/// acquire-release form.
struct Tickets<const OUTSIDE: bool>;

impl<const OUTSIDE: bool> Kernel for Tickets<OUTSIDE> {
    type Shared = f32;
    type Params<M: Space> = TicketParams<M::Global<i32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        Geometry {
            grid: [TICKET_BLOCKS, 1],
            threads: THREADS,
            smem_bytes: 0,
        }
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let g = c.block[0] * THREADS + c.thread;
        let at = if OUTSIDE && g == THREADS + 5 { 2 } else { 0 };
        let ticket = p.counter.engine().advance(at).atomic_add(1); // site: TICKET
        p.tickets.engine().advance(g).write(ticket);
        sync_threads();
        p.counter.engine().advance(1).atomic_add_acq_rel(ticket & 1);
    }
}

/// `Tickets<OUTSIDE>` under `seed` from counters at `start`: the counters' ends, the tickets
/// (`i32::MIN` where unwritten), the launch's result.
fn tickets<const OUTSIDE: bool>(
    start: i32,
    seed: u64,
) -> (Vec<i32>, Vec<i32>, Result<(), SimError>) {
    let n = (TICKET_BLOCKS * THREADS) as usize;
    let (mut counter, mut cw) = (vec![start; 2], vec![0u32; 2]);
    let (mut tickets, mut tw) = (vec![i32::MIN; n], vec![0u32; n]);
    // SAFETY: the buffers outlive the launch
    let p = unsafe {
        TicketParams {
            counter: FlatTensor::new(
                HostMem::new(&mut counter, &mut cw),
                FlatLayout::new([2], [1]).unwrap(),
            ),
            tickets: FlatTensor::new(
                HostMem::new(&mut tickets, &mut tw).once(),
                FlatLayout::new([n as i64], [1]).unwrap(),
            ),
        }
    };
    let r = sim::launch::<Tickets<OUTSIDE>>(
        &p,
        Tickets::<OUTSIDE>::geometry::<Sim>(&p, 1, 0),
        Options { seed },
    );
    (counter, tickets, r)
}

/// Atomic additions as the model defines them: the tickets of every thread of the launch are
/// `start .. start + n`, each once, in some order (wrapping past `i32::MAX`), and each counter
/// ends at the sum of the additions to it, under every schedule; an addition outside the
/// counters' buffer is reported at its site.
#[test]
fn atomic_additions_hand_out_each_ticket_once() {
    let n = (TICKET_BLOCKS * THREADS) as i32;
    for (start, seed) in [(0, 0), (-7, 1), (i32::MAX - 100, 2)] {
        let (end, mut got, r) = tickets::<false>(start, seed);
        r.unwrap();
        got.sort_unstable_by_key(|t| t.wrapping_sub(start));
        let want: Vec<i32> = (0..n).map(|k| start.wrapping_add(k)).collect();
        assert_eq!(got, want, "start {start}");
        let odd = want.iter().filter(|t| *t & 1 == 1).count() as i32;
        assert_eq!(
            end,
            [start.wrapping_add(n), start.wrapping_add(odd)],
            "start {start}"
        );
    }
    let e = tickets::<true>(0, 3).2.unwrap_err();
    assert!(
        e.message.contains("atomic addition") && e.message.contains("outside its"),
        "{e}"
    );
    assert!(e.message.contains(&at("TICKET")), "{e}");
}
