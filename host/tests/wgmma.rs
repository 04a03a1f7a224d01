//! The copy engine (TMA loads and stores, mbarrier transaction counts) and wgmma in the simulated
//! GPU: `gemm_wg` (one warpgroup's TMA-fed wgmma GEMM, tessel_gpu::gemm_wg) exact on small
//! integers and within its bound on random inputs at small and ragged sizes, under several
//! schedules; each of its broken copies reported with the kernel's sites; and a box staged
//! through shared memory and stored by the copy engine, correct and broken (no proxy fence, a
//! write before the store has read, a store never waited for), and a rank-4 store that starts
//! before its tensor.

use half::{bf16, f16};
use host::checks::gemm_wg::{simulate, Inputs};
use host::elem::Rng;
use host::sim::{self, HostMem, Options, Sim, SimError, SimTensorMap};
use layout_core::{Engine, SwizzleMode};
use tessel_device::tma::{BulkCopy, TensorMap};
use tessel_gpu::ctx::{Ctx, Geometry, Kernel};
use tessel_gpu::mem::{AsyncCopy, Mem, Space};
use tessel_gpu::mma::MmaIn;
use tessel_gpu::sync::sync_threads;

const SIZES: [[usize; 3]; 5] = [
    [1, 1, 8],
    [17, 33, 72],
    [64, 128, 64],
    [130, 264, 136],
    [65, 129, 200],
];

fn rng(test: &str) -> Rng {
    Rng::from_env_or_fresh(test, "wgmma")
}

fn gemm_on<I: MmaIn + Default>(rng: &mut Rng) {
    for mnk in SIZES {
        for small in [true, false] {
            let x = Inputs::<I>::new(rng, mnk, small);
            let want = x.reference();
            let seed = 1 + mnk[0] as u64;
            let c = simulate::<I, 0>(&x, seed).unwrap_or_else(|e| panic!("{mnk:?}: {e}"));
            for (e, (&got, &r)) in c.iter().zip(&want).enumerate() {
                if small {
                    assert_eq!(f64::from(got), r, "{mnk:?} element {e}");
                } else {
                    let err = (f64::from(got) - r).abs();
                    assert!(err <= x.bound(e), "{mnk:?} element {e}: {got} vs {r}");
                }
            }
        }
    }
}

#[test]
fn gemm_wg_is_exact_on_small_integers_and_within_its_bound() {
    let mut rng = rng("gemm_wg_is_exact_on_small_integers_and_within_its_bound");
    gemm_on::<bf16>(&mut rng);
    gemm_on::<f16>(&mut rng);
}

#[test]
fn gemm_wg_gives_the_same_bits_under_every_schedule() {
    let mut rng = rng("gemm_wg_gives_the_same_bits_under_every_schedule");
    let x = Inputs::<bf16>::new(&mut rng, [70, 130, 200], false);
    let first = simulate::<bf16, 0>(&x, 0).unwrap();
    for seed in [1, 7, 12345] {
        let c = simulate::<bf16, 0>(&x, seed).unwrap();
        assert!(c
            .iter()
            .zip(&first)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

/// `gemm_wg`'s broken copy `BUG`: the fault names its sites in gemm_wg.rs.
fn broken<const BUG: u8>() -> String {
    let mut rng = Rng::new(3);
    let x = Inputs::<bf16>::new(&mut rng, [64, 128, 256], true);
    let e = simulate::<bf16, BUG>(&x, 5).expect_err("the broken copy must fail");
    let m = e.to_string();
    assert!(m.contains("gemm_wg.rs:"), "{m}");
    println!("BUG {BUG}: {m}");
    m
}

#[test]
fn each_broken_gemm_wg_is_reported_with_its_sites() {
    let m = broken::<1>();
    assert!(
        m.contains("wgmma issued at") && m.contains("missing warpgroup_wait"),
        "refilled under the wgmma: {m}"
    );
    let m = broken::<2>();
    assert!(
        m.contains("deadlock") && m.contains("transaction bytes pending"),
        "a wrong transaction count: {m}"
    );
    let m = broken::<3>();
    assert!(m.contains("no warpgroup_arrive"), "no fence: {m}");
    let m = broken::<4>();
    assert!(
        m.contains("TMA load issued at") && m.contains("missing mbarrier wait"),
        "no wait: {m}"
    );
}

/// A `ROWS x COLS` `f32` box: loaded by the copy engine, doubled by the threads into a second
/// box, stored by the copy engine.
const ROWS: i64 = 8;
const COLS: i64 = 32;
const BOX: i64 = ROWS * COLS;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct StoreParams<T> {
    x: T,
    y: T,
}

/// One block of 128 threads, shared memory for two boxes and two mbarriers.
const TWO_BOXES: Geometry = Geometry {
    grid: [1, 1],
    threads: 128,
    smem_bytes: 8 * BOX + 16,
};

const FINE: u8 = 0;
const NO_FENCE: u8 = 1;
const EARLY_WRITE: u8 = 2;
const NO_STORE_WAIT: u8 = 3;

/// 128 threads; shared memory: the loaded box at 0, the doubled box at `4 BOX` bytes, the
/// mbarrier after them.
struct Double<const FAULT: u8>;

impl<const FAULT: u8> Kernel for Double<FAULT> {
    type Shared = f32;
    type Params<M: Space> = StoreParams<M::TensorMap<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        TWO_BOXES
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<f32>>) {
        let (t, x, y, bar) = (
            c.thread,
            c.smem,
            c.smem.advance(BOX),
            c.smem.advance(2 * BOX),
        );
        if t == 0 {
            bar.mbarrier_init(1);
        }
        sync_threads();
        if t == 0 {
            p.x.acquire();
            p.y.acquire();
            bar.mbarrier_arrive(4 * BOX as u32);
            x.tma_load(&p.x, [0, 0], &bar);
        }
        bar.mbarrier_wait(0);
        let mut i = t;
        while i < BOX {
            y.advance(i).write(2.0 * x.advance(i).read());
            i += 128;
        }
        if FAULT != NO_FENCE {
            y.fence_proxy_async();
        }
        sync_threads();
        if t == 0 {
            y.tma_store(&p.y, [0, 0]);
            y.bulk_commit();
            if FAULT == EARLY_WRITE {
                y.write(0.0);
            }
            if FAULT != NO_STORE_WAIT {
                y.bulk_wait::<0>();
            }
        }
    }
}

fn double<const FAULT: u8>(x: &mut [f32]) -> Result<Vec<f32>, SimError> {
    let mut y = vec![f32::NAN; x.len()];
    let (mut rx, mut wy) = (vec![0u32; x.len()], vec![0u32; x.len()]);
    // SAFETY: the buffers outlive the launch
    let (ex, ey) = unsafe {
        (
            HostMem::new(x, &mut rx),
            HostMem::new(&mut y, &mut wy).once(),
        )
    };
    // a box of the top-left 8 x 32 of a 10 x 40 tensor: a ragged one would leave some out
    let map = |e| SimTensorMap::new(e, [10, 40], 40, [ROWS, COLS], SwizzleMode::None).unwrap();
    let p = StoreParams {
        x: map(ex),
        y: map(ey),
    };
    let g = Double::<FAULT>::geometry::<Sim>(&p, 1, 0);
    sim::launch::<Double<FAULT>>(&p, g, Options { seed: 2 })?;
    Ok(y)
}

#[test]
fn the_copy_engine_stores_what_the_threads_fenced() {
    let mut x: Vec<f32> = (0..400).map(|i| i as f32).collect();
    let y = double::<FINE>(&mut x).unwrap();
    for r in 0..10 {
        for c in 0..40 {
            let (i, got) = (r * 40 + c, y[r * 40 + c]);
            if r < ROWS as usize && c < COLS as usize {
                assert_eq!(got, 2.0 * x[i], "({r}, {c})");
            } else {
                assert!(got.is_nan(), "({r}, {c}) outside the box written");
            }
        }
    }
    let m = double::<NO_FENCE>(&mut x).unwrap_err().to_string();
    assert!(m.contains("no fence_proxy_async"), "{m}");
    let m = double::<EARLY_WRITE>(&mut x).unwrap_err().to_string();
    assert!(
        m.contains("TMA store issued at") && m.contains("bulk_wait_read"),
        "{m}"
    );
    let m = double::<NO_STORE_WAIT>(&mut x).unwrap_err().to_string();
    assert!(m.contains("not waited for"), "{m}");
}

/// Two boxes loaded on two mbarriers; every thread waits for the first only (unless `WAIT_B`),
/// meets the others at a barrier, and reads the second: a barrier does not make the copy engine's
/// writes seen, only a wait on their mbarrier does.
struct TwoBoxes<const WAIT_B: bool>;

impl<const WAIT_B: bool> Kernel for TwoBoxes<WAIT_B> {
    type Shared = f32;
    type Params<M: Space> = StoreParams<M::TensorMap<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        TWO_BOXES
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<f32>>) {
        let (t, a, b) = (c.thread, c.smem, c.smem.advance(BOX));
        let (bar_a, bar_b) = (c.smem.advance(2 * BOX), c.smem.advance(2 * BOX + 2));
        if t == 0 {
            bar_a.mbarrier_init(1);
            bar_b.mbarrier_init(1);
        }
        sync_threads();
        if t == 0 {
            p.x.acquire();
            bar_a.mbarrier_arrive(4 * BOX as u32);
            a.tma_load(&p.x, [0, 0], &bar_a);
            bar_b.mbarrier_arrive(4 * BOX as u32);
            b.tma_load(&p.x, [0, 0], &bar_b);
        }
        bar_a.mbarrier_wait(0);
        if WAIT_B {
            bar_b.mbarrier_wait(0);
        }
        sync_threads();
        let _ = a.advance(t).read() + b.advance(t).read(); // site: READ_B
    }
}

#[test]
fn a_barrier_does_not_stand_for_the_mbarrier_wait() {
    let run = |wait_b: bool| {
        let mut x: Vec<f32> = (0..400).map(|i| i as f32).collect();
        let mut rx = vec![0u32; x.len()];
        // SAFETY: the buffer outlives the launch
        let e = unsafe { HostMem::new(&mut x, &mut rx) };
        let map = SimTensorMap::new(e, [10, 40], 40, [ROWS, COLS], SwizzleMode::None).unwrap();
        let p = StoreParams { x: map, y: map };
        let g = TwoBoxes::<true>::geometry::<Sim>(&p, 1, 0);
        if wait_b {
            sim::launch::<TwoBoxes<true>>(&p, g, Options { seed: 4 })
        } else {
            sim::launch::<TwoBoxes<false>>(&p, g, Options { seed: 4 })
        }
    };
    run(true).unwrap();
    let m = run(false).unwrap_err().to_string();
    assert!(
        m.contains("shared-memory race") && m.contains("wgmma.rs:"),
        "{m}"
    );
}

/// The threads' box (element `i` holds `i`) stored by the copy engine at rank 4: at batch 1,
/// head 2, from row -3 and column 8 of a `(2, 3, 6, 40)` tensor (rows 0..5 of it written) (or, with `WRONG_RANK`, with
/// two coordinates for its four).
struct Store4<const WRONG_RANK: bool>;

impl<const WRONG_RANK: bool> Kernel for Store4<WRONG_RANK> {
    type Shared = f32;
    type Params<M: Space> = StoreParams<M::TensorMap<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        TWO_BOXES
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<f32>>) {
        let (t, y) = (c.thread, c.smem);
        let mut i = t;
        while i < BOX {
            y.advance(i).write(i as f32);
            i += 128;
        }
        y.fence_proxy_async();
        sync_threads();
        if t == 0 {
            p.y.acquire();
            if WRONG_RANK {
                y.tma_store(&p.y, [-3, 8]);
            } else {
                y.tma_store(&p.y, [1, 2, -3, 8]);
            }
            y.bulk_commit();
            y.bulk_wait::<0>();
        }
    }
}

fn store4<const WRONG_RANK: bool>() -> Result<Vec<f32>, SimError> {
    let (shape, stride) = ([2, 3, 6, 40], [720, 240, 40, 1]);
    let mut y = vec![f32::NAN; 1440];
    let mut wy = vec![0u32; y.len()];
    // SAFETY: the buffer outlives the launch
    let ey = unsafe { HostMem::new(&mut y, &mut wy).once() };
    let map = SimTensorMap::new_nd(ey, shape, stride, [1, 1, ROWS, COLS], SwizzleMode::None);
    let p = StoreParams {
        x: map.clone().unwrap(),
        y: map.unwrap(),
    };
    let g = Store4::<WRONG_RANK>::geometry::<Sim>(&p, 1, 0);
    sim::launch::<Store4<WRONG_RANK>>(&p, g, Options { seed: 3 })?;
    Ok(y)
}

#[test]
fn a_rank_4_store_writes_the_box_inside_the_tensor_only() {
    let y = store4::<false>().unwrap();
    for (i, &got) in y.iter().enumerate() {
        let (bh, r, c) = (i / 240, i % 240 / 40, i % 40);
        if bh == 5 && r + 3 < ROWS as usize && c >= 8 {
            // box row r + 3 (its rows 0..3 lie before the tensor), column c - 8
            assert_eq!(got, ((r + 3) * 32 + c - 8) as f32, "(1, 2, {r}, {c})");
        } else {
            assert!(got.is_nan(), "element {i} outside the box written");
        }
    }
    let m = store4::<true>().unwrap_err().to_string();
    assert!(
        m.contains("2 coordinates for a tensor map of rank 4"),
        "{m}"
    );
}
