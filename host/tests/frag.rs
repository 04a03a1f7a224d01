//! Register fragments under the identity tensor's predicate, on the simulated GPU: every thread
//! loads its atom of a ragged `M x N` bf16 tensor with `Fragment::load_if` (outside elements
//! filled), writes `2x` back with `store_if`, and its fragment's sum (fills included) to `z`. The
//! outputs are written once, nothing outside `x` or `y` is touched (the simulator would report an
//! access past the buffers' ends), and the sums count the fills.

use half::bf16;
use host::sim::{self, HostMem, Options, Sim};
use layout_core::{make_coord_tensor, FlatLayout, FlatTensor};
use tessel_gpu::ctx::{Ctx, Geometry, Kernel};
use tessel_gpu::frag::Atom;
use tessel_gpu::mem::{Mem, Space, V4};
use tessel_gpu::rows::Rows;

const CUT: Rows = Rows::new(1, 16);
const FILL: f32 = -1.0;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct Params<E> {
    x: FlatTensor<E, 2>,
    y: FlatTensor<E, 2>,
    z: FlatTensor<E, 1>,
}

struct Double;

impl Kernel for Double {
    type Shared = V4;
    type Params<M: Space> = Params<M::Global<bf16>>;
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        Ok(p)
    }
    fn geometry<M: Space>(p: &Self::Params<M>, _: i64, _: i64) -> Geometry {
        let grid = [p.x.layout().tiles(CUT.tiler)[0], 1];
        Geometry {
            grid,
            threads: CUT.threads,
            smem_bytes: 0,
        }
    }
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let (b, t) = (c.block[0], c.thread);
        let thr = CUT.plan.get_slice(t);
        let id = make_coord_tensor(p.x.shape());
        let pred = thr.partition_S(&id.local_tile(CUT.tiler, [b, 0]));
        let x = Atom::<bf16>::load_if(
            &thr.partition_S(&p.x.local_tile(CUT.tiler, [b, 0])),
            &pred,
            FILL,
        );
        x.map(|v| 2.0 * v)
            .store_if(&thr.partition_D(&p.y.local_tile(CUT.tiler, [b, 0])), &pred);
        p.z.at([b * CUT.threads + t])
            .write(bf16::from_f32(x.reduce(|v| v, |a, b| a + b)));
    }
}

#[test]
fn predicated_fragments_fill_outside_and_write_inside_once() {
    let (m, n) = (6usize, 21usize); // 2 blocks of 4 rows; lane 2's atom straddles N
    let mut x: Vec<bf16> = (0..m * n)
        .map(|i| bf16::from_f32((i % 17) as f32 - 8.0))
        .collect();
    let want_x = x.clone();
    let blocks = m.div_ceil(CUT.rows as usize);
    let (mut y, mut z) = (
        vec![bf16::NAN; m * n],
        vec![bf16::NAN; blocks * CUT.threads as usize],
    );
    let (mut xr, mut yw, mut zw) = (
        vec![0u32; x.len()],
        vec![0u32; y.len()],
        vec![0u32; z.len()],
    );
    let l = FlatLayout::new([m as i64, n as i64], [n as i64, 1]).unwrap();
    let lz = FlatLayout::new([z.len() as i64], [1]).unwrap();
    // SAFETY: the buffers outlive the launch
    let p = unsafe {
        Params {
            x: FlatTensor::new(HostMem::new(&mut x, &mut xr), l),
            y: FlatTensor::new(HostMem::new(&mut y, &mut yw).once(), l),
            z: FlatTensor::new(HostMem::new(&mut z, &mut zw).once(), lz),
        }
    };
    sim::launch::<Double>(&p, Double::geometry::<Sim>(&p, 1, 0), Options { seed: 3 }).unwrap();
    assert!(xr.iter().all(|&w| w == 0), "x written");
    for (i, v) in y.iter().enumerate() {
        assert_eq!(v.to_f32(), 2.0 * want_x[i].to_f32(), "y[{i}]");
    }
    for (g, s) in z.iter().enumerate() {
        let (row, lane) = (g / 128 * 4 + g % 128 / 32, g % 32);
        let elem = |c: usize| {
            if row < m && c < n {
                want_x[row * n + c].to_f32()
            } else {
                FILL
            }
        };
        let want: f32 = (8 * lane..8 * lane + 8).map(elem).sum();
        assert_eq!(s.to_f32(), want, "z[{g}]: row {row}, lane {lane}");
    }
}
