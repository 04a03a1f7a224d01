//! The forms of `wgmma.mma_async` on the simulated GPU, one warpgroup's `64 x N x 16` product
//! `C = A B^T` against the f64 reference, bit for bit (each element's 16 products are exact and
//! rounded once): A and B in shared memory K-major and M/N-major (`wgmma_ss`, the descriptors
//! from layout-core's canonical layouts, swizzled and not), A in registers (`wgmma_rs`, the
//! `GMMA_A_REG_64X16` fragment) with B either way, `N` other than a power of two, two batches
//! chained onto the same accumulators; and the accumulators read before the `warpgroup_wait`
//! that covers them: NaN, as the PTX ISA leaves them undefined.

use core::marker::PhantomData;
use half::{bf16, f16};
use host::elem::Rng;
use host::sim::{self, HostMem, Options, Sim};
use layout_core::{
    gmma_layout_atom, make_gmma_desc, tile_to_shape, ComposedLayout, Engine, FlatLayout,
    FlatTensor, GmmaMajor, IntTuple, SwizzleMode, GMMA_A_REG_64X16,
};
use tessel_device::tma::BulkCopy;
use tessel_device::wgmma::{
    gmma_desc, gmma_desc_advance, warpgroup_arrive, warpgroup_commit_batch, warpgroup_wait,
    wgmma_rs, wgmma_ss,
};
use tessel_gpu::ctx::{Ctx, Geometry, Kernel};
use tessel_gpu::mem::{Mem, Space};
use tessel_gpu::mma::MmaIn;
use tessel_gpu::sync::sync_threads;

/// A and B in shared memory, K-major (32-byte swizzle).
const SS_K: u8 = 0;
/// A and B in shared memory, M- and N-major (128-byte swizzle).
const SS_MN: u8 = 1;
/// A in registers, B N-major (128-byte swizzle): attention's `P V`.
const RS_MN: u8 = 2;
/// A in registers, B K-major (no swizzle).
const RS_K: u8 = 3;
/// `SS_K`, the accumulators written to C before the wait.
const EARLY_READ: u8 = 4;
/// `SS_K` twice onto the same accumulators, in two batches, with `wait<1>` then `wait<0>`.
const CHAINED: u8 = 5;

/// The operands' majors and swizzles of a form.
const fn majors(form: u8) -> [(GmmaMajor, SwizzleMode); 2] {
    match form {
        SS_MN => [(GmmaMajor::MN, SwizzleMode::B128); 2],
        RS_MN => [
            (GmmaMajor::K, SwizzleMode::B32),
            (GmmaMajor::MN, SwizzleMode::B128),
        ],
        RS_K => [
            (GmmaMajor::K, SwizzleMode::B32),
            (GmmaMajor::K, SwizzleMode::None),
        ],
        _ => [(GmmaMajor::K, SwizzleMode::B32); 2],
    }
}

/// The `rows x 16` 16-bit tile of `major` and `mode`: CuTe's canonical atom tiled to the shape.
fn tile(rows: i64, (major, mode): (GmmaMajor, SwizzleMode)) -> ComposedLayout {
    let atom = gmma_layout_atom(mode, major, 16).unwrap();
    let shape = IntTuple::from_ints(&[rows, 16]).unwrap();
    let l = tile_to_shape(atom.layout(), &shape, None).unwrap();
    ComposedLayout::new(atom.swizzle(), l).unwrap()
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Params<G, C> {
    /// `64 x 16`.
    a: FlatTensor<G, 2>,
    /// `N x 16`.
    b: FlatTensor<G, 2>,
    /// `64 x N`.
    c: FlatTensor<C, 2>,
}

/// One warpgroup: copies A and B into shared memory in its form's layouts, multiplies, writes C.
struct Forms<I, const FORM: u8, const V: usize>(PhantomData<I>);

impl<I: MmaIn + Default, const FORM: u8, const V: usize> Kernel for Forms<I, FORM, V> {
    type Shared = I;
    type Params<M: Space> = Params<M::Global<I>, M::Global<f32>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(_: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        Geometry {
            grid: [1, 1],
            threads: 128,
            smem_bytes: 1024 + 2 * (64 + 2 * V as i64) * 16,
        }
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<I>>) {
        let (t, n) = (c.thread, 2 * V as i64);
        let a_tile = c
            .smem
            .advance(((1024 - c.smem.addr() % 1024) % 1024 / 2) as i64);
        let b_tile = a_tile.advance(64 * 16);
        let [ma, mb] = majors(FORM);
        let (la, lb) = (tile(64, ma), tile(n, mb));
        let mut i = t;
        while i < (64 + n) * 16 {
            let (r, k) = (i / 16, i % 16);
            if r < 64 {
                a_tile
                    .advance(la.call(r + 64 * k))
                    .write(p.a.at([r, k]).read());
            } else {
                let r = r - 64;
                b_tile
                    .advance(lb.call(r + n * k))
                    .write(p.b.at([r, k]).read());
            }
            i += 128;
        }
        a_tile.fence_proxy_async();
        sync_threads();
        let da = gmma_desc(&a_tile, make_gmma_desc(&la, 16, ma.0).unwrap());
        let db = gmma_desc(&b_tile, make_gmma_desc(&lb, 16, mb.0).unwrap());
        // B's descriptor as A's tile's moved on by the elements between them
        let moved = gmma_desc_advance::<I>(
            gmma_desc(&a_tile, make_gmma_desc(&lb, 16, mb.0).unwrap()),
            64 * 16,
        );
        assert_eq!(
            moved, db,
            "gmma_desc_advance: not the descriptor of the tile it moved to"
        );
        let mut acc = [0f32; V];
        warpgroup_arrive();
        match FORM {
            SS_MN => wgmma_ss::<I, V, true, true>(da, db, &mut acc, false),
            RS_MN | RS_K => {
                // thread t's fragment: value v at (m, k) = GMMA_A_REG_64X16(t, v)
                let mut words = [0u32; 4];
                for v in 0..8 {
                    let x = GMMA_A_REG_64X16.call(t + 128 * v);
                    let h = p.a.at([x % 64, x / 64]).read().to_bits();
                    words[v as usize / 2] |= h << (16 * (v % 2));
                }
                if FORM == RS_MN {
                    wgmma_rs::<I, V, true>(words, db, &mut acc, false)
                } else {
                    wgmma_rs::<I, V, false>(words, db, &mut acc, false)
                }
            }
            _ => wgmma_ss::<I, V, false, false>(da, db, &mut acc, false),
        }
        warpgroup_commit_batch();
        if FORM == CHAINED {
            wgmma_ss::<I, V, false, false>(da, db, &mut acc, true);
            warpgroup_commit_batch();
            warpgroup_wait::<1>();
        }
        let store = |acc: &[f32; V]| {
            for (v, &x) in acc.iter().enumerate() {
                // thread t's accumulator v: warp w's rows 16 w + l / 4 (+ 8), columns 8 j +
                // 2 (l % 4) (+ 1) (the atom's C layout, checked in the simulator's tests)
                let (w, l, j, r) = (t / 32, t % 32, v as i64 / 4, v as i64 % 4);
                let at = [16 * w + l / 4 + 8 * (r / 2), 8 * j + 2 * (l % 4) + r % 2];
                p.c.at(at).write(x);
            }
        };
        if FORM == EARLY_READ {
            store(&acc);
        }
        warpgroup_wait::<0>();
        if FORM != EARLY_READ {
            store(&acc);
        }
    }
}

/// `C` of form `FORM` with `N = 2 V` on the simulated GPU, and `A B^T` in f64 (times 2 for
/// `CHAINED`), for random A and B.
fn run<I: MmaIn + Default, const FORM: u8, const V: usize>(rng: &mut Rng) -> (Vec<f32>, Vec<f64>) {
    let n = 2 * V;
    let mut draw = |len: usize| -> Vec<I> {
        (0..len)
            .map(|_| I::from_f32(((rng.uniform() - 0.5) * (4.0 * rng.uniform()).exp2()) as f32))
            .collect()
    };
    let (mut a, mut b) = (draw(64 * 16), draw(n * 16));
    let x = |v: &I| f64::from(v.to_f32());
    let times = if FORM == CHAINED { 2.0 } else { 1.0 };
    let want: Vec<f64> = (0..64 * n)
        .map(|e| {
            let (i, j) = (e / n, e % n);
            times
                * (0..16)
                    .map(|k| x(&a[16 * i + k]) * x(&b[16 * j + k]))
                    .sum::<f64>()
        })
        .collect();
    let mut c = vec![f32::NAN; 64 * n];
    let (mut ra, mut rb, mut wc) = (vec![0; a.len()], vec![0; b.len()], vec![0; c.len()]);
    // SAFETY: the buffers outlive the launch and are reached only through these engines
    let (ea, eb, ec) = unsafe {
        (
            HostMem::new(&mut a, &mut ra),
            HostMem::new(&mut b, &mut rb),
            HostMem::new(&mut c, &mut wc).once(),
        )
    };
    let row_major = |rows: usize, cols: usize| {
        FlatLayout::new([rows as i64, cols as i64], [cols as i64, 1]).unwrap()
    };
    let p = Params {
        a: FlatTensor::new(ea, row_major(64, 16)),
        b: FlatTensor::new(eb, row_major(n, 16)),
        c: FlatTensor::new(ec, row_major(64, n)),
    };
    type K<I, const F: u8, const V: usize> = Forms<I, F, V>;
    let g = K::<I, FORM, V>::geometry::<Sim>(&p, 1, 0);
    sim::launch::<K<I, FORM, V>>(&p, g, Options { seed: 3 }).unwrap();
    (c, want)
}

fn exact<I: MmaIn + Default, const FORM: u8, const V: usize>(rng: &mut Rng) {
    let (c, want) = run::<I, FORM, V>(rng);
    for (e, (&got, &w)) in c.iter().zip(&want).enumerate() {
        assert_eq!(got, w as f32, "form {FORM}, N {}, element {e}", 2 * V);
    }
}

#[test]
fn every_form_gives_the_rounded_exact_product() {
    let mut rng =
        Rng::from_env_or_fresh("every_form_gives_the_rounded_exact_product", "wgmma_forms");
    exact::<bf16, SS_K, 32>(&mut rng);
    exact::<f16, SS_K, 12>(&mut rng);
    exact::<bf16, SS_MN, 32>(&mut rng);
    exact::<f16, SS_MN, 64>(&mut rng);
    exact::<bf16, RS_MN, 32>(&mut rng);
    exact::<f16, RS_MN, 96>(&mut rng);
    exact::<bf16, RS_K, 12>(&mut rng);
    exact::<bf16, CHAINED, 32>(&mut rng);
}

#[test]
fn accumulators_read_before_the_wait_are_nan() {
    let mut rng = Rng::new(7);
    let (c, _) = run::<bf16, EARLY_READ, 32>(&mut rng);
    assert!(c.iter().all(|x| x.is_nan()), "{:?}", &c[..4]);
}
