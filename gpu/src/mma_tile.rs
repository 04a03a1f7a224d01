//! `mma_tile`: one warp's 16x16 tile product through the tensor cores, the smallest kernel that
//! uses `ldmatrix` and `mma.sync` as the GEMMs do, in the kernel model: the same function runs on
//! the GPU and on the host's simulated GPU, whose results are compared bit for bit.
//!
//! `d = a b^T + c` (`b` is `N x K`: `ldmatrix`) and `dt = a bt + c` (`bt` is `K x N`:
//! `ldmatrix.trans`), all `16 x 16`, inputs `bf16` or `f16`, `c`, `d` and `dt` `f32`. The lane
//! copies its 16-byte chunk of each input tile to shared memory, the warp meets at
//! `sync_warp`, each lane gives `ldmatrix` the row of its matrix, and two `mma.sync.m16n8k16`
//! per product cover the tile's two 8-column halves.

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::mem::{Ldmatrix, Mem, Space};
use crate::mma::{mma_m16n8k16, MmaIn};
use crate::sync::sync_warp;
use crate::unroll;
use core::marker::PhantomData;
use layout_core::{Engine, FlatLayout, FlatTensor};

/// The tile's side.
pub const TILE: i64 = 16;

/// The parameters: input tiles of `I` (engine `A`), `f32` tiles (engine `C`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MmaTileParams<A, C> {
    /// `M x K`.
    pub a: FlatTensor<A, 2>,
    /// `N x K`.
    pub b: FlatTensor<A, 2>,
    /// `K x N`.
    pub bt: FlatTensor<A, 2>,
    /// `M x N`, added.
    pub c: FlatTensor<C, 2>,
    /// `a b^T + c`.
    pub d: FlatTensor<C, 2>,
    /// `a bt + c`.
    pub dt: FlatTensor<C, 2>,
}

/// The kernel, for inputs `I`; `SKIP_SYNC` leaves out the warp barrier between the copies to
/// shared memory and `ldmatrix` (a broken copy, for the simulated GPU's tests).
pub struct MmaTile<I, const SKIP_SYNC: bool = false>(PhantomData<I>);

/// A `16 x 16` row-major tile in shared memory.
const SMEM_TILE: FlatLayout<2> = match FlatLayout::new([TILE, TILE], [TILE, 1]) {
    Ok(l) => l,
    Err(_) => panic!("a 16x16 layout"),
};

/// `Ok` where `t` is a `16 x 16` tile whose rows are contiguous and 16-byte aligned.
fn whole_rows<E: Engine + Mem<T>, T: Copy>(t: &FlatTensor<E, 2>) -> Result<(), &'static str> {
    let d = t.layout().stride();
    let v = 16 / core::mem::size_of::<T>() as i64;
    if t.shape()[0] != TILE || t.shape()[1] != TILE {
        return Err("mma_tile needs 16x16 tiles");
    }
    if d[1] != 1 || d[0] % v != 0 || !t.engine().aligned16() {
        return Err("mma_tile needs rows of unit stride, 16-byte aligned");
    }
    Ok(())
}

impl<I: MmaIn + Default, const SKIP_SYNC: bool> Kernel for MmaTile<I, SKIP_SYNC> {
    type Shared = I;
    type Params<M: Space> = MmaTileParams<M::Global<I>, M::Global<f32>>;

    #[inline(always)]
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        whole_rows(&p.a)?;
        whole_rows(&p.b)?;
        whole_rows(&p.bt)?;
        let tile = |s: [i64; 2]| s[0] == TILE && s[1] == TILE;
        if !(tile(p.c.shape()) && tile(p.d.shape()) && tile(p.dt.shape())) {
            return Err("mma_tile needs 16x16 tiles");
        }
        Ok(p)
    }

    fn geometry<M: Space>(_: &Self::Params<M>, _sms: i64, _smem_limit: i64) -> Geometry {
        Geometry {
            grid: [1, 1],
            threads: 32,
            smem_bytes: 3 * TILE * TILE * core::mem::size_of::<I>() as i64,
        }
    }

    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<I>>) {
        let lane = c.thread;
        let tile = |k: i64| FlatTensor::new(c.smem.advance(k * TILE * TILE), SMEM_TILE);
        let (sa, sb, sbt) = (tile(0), tile(1), tile(2));
        // the lane's chunk of each tile: row lane / 2, columns 8 (lane % 2) ..
        let chunk = [lane / 2, 8 * (lane % 2)];
        sa.at(chunk).write_v4(p.a.at(chunk).read_v4());
        sb.at(chunk).write_v4(p.b.at(chunk).read_v4());
        sbt.at(chunk).write_v4(p.bt.at(chunk).read_v4());
        if !SKIP_SYNC {
            sync_warp();
        }
        // lanes 8q .. 8q + 8 address matrix q's rows
        let (q, i) = (lane / 8, lane % 8);
        // A's quadrants in the order of its fragment: (rows 0-7 | 8-15) x (k 0-7 | 8-15)
        let a = sa.at([i + 8 * (q % 2), 8 * (q / 2)]).ldmatrix_x4();
        // B (N x K): n-tile q / 2, k-half q % 2; Bt (K x N) the same blocks, transposed
        let b = sb.at([i + 8 * (q / 2), 8 * (q % 2)]).ldmatrix_x4();
        let bt = sbt.at([i + 8 * (q % 2), 8 * (q / 2)]).ldmatrix_x4_trans();
        // the lane's accumulators of n-tile j: (g, 2t + 8j + {0, 1}), (g + 8, ..)
        let (g, t) = (lane / 4, lane % 4);
        let at = |j: i64, v: i64| [g + 8 * (v / 2), 2 * t + 8 * j + v % 2];
        unroll!(j < 2 => {
            let (bj, btj) = ([b[2 * j], b[2 * j + 1]], [bt[2 * j], bt[2 * j + 1]]);
            let mut acc = [0f32; 4];
            unroll!(v < 4 => { acc[v] = p.c.at(at(j as i64, v as i64)).read() });
            let (mut d, mut dt) = (acc, acc);
            mma_m16n8k16::<I>(&a, &bj, &mut d);
            mma_m16n8k16::<I>(&a, &btj, &mut dt);
            unroll!(v < 4 => {
                let x = at(j as i64, v as i64);
                p.d.at(x).write(d[v]);
                p.dt.at(x).write(dt[v]);
            });
        });
    }
}
