//! `gemm_wg`: `C = A B^T` by one warpgroup per `64 x BN` tile of C, the inputs brought by the
//! copy engine through [`STAGES`] stages of shared memory and multiplied by wgmma from there: the
//! smallest kernel that uses TMA, mbarriers and wgmma as `gemm_sm90` does, in the kernel model
//! (the same function runs on the GPU and on the host's simulated GPU).
//!
//! A is `M x K`, B is `N x K` (both K-major, `bf16` or `f16`, read through tensor maps with
//! boxes of `64 x BK` and `BN x BK` and the 128-byte swizzle), C is `M x N` `f32`, any layout.
//! Thread 0 fills the stages ahead: it arms a stage's mbarrier with the stage's bytes and loads
//! A's and B's boxes of a k-tile. Each k-tile, the warpgroup waits for its stage's mbarrier,
//! issues four `wgmma.m64nBNk16` (one per 16 of K) on descriptors of the stage, waits for them,
//! and thread 0 refills the stage with the k-tile `STAGES` ahead. The accumulators go to C from
//! the registers, predicated by C's bounds.
//!
//! `BUG` selects a broken copy for the simulated GPU's tests (0: none): 1 refills a stage before
//! waiting for the wgmmas that read it, 2 arms the mbarrier with 16 bytes too few, 3 leaves out
//! the wgmma fence, 4 reads a stage without waiting for its mbarrier.

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::gemm_sm90::k_major_descs;
use crate::mem::{AsyncCopy, Mem, Space};
use crate::mma::MmaIn;
use crate::sync::sync_threads;
use crate::tma::{BulkCopy, TensorMap};
use crate::unroll;
use crate::wgmma::{gmma_desc, warpgroup_arrive, warpgroup_commit_batch, warpgroup_wait, wgmma};
use core::marker::PhantomData;
use layout_core::{
    const_ok, make_coord_tensor, make_tiled_mma, Engine, FlatTensor, GmmaDescriptor, Layout,
    Operand, TvCoords, SM90_64X128X16_F32BF16BF16_SS,
};

/// Rows of A per tile (one wgmma's M).
pub const BM: i64 = 64;
/// Columns of C per tile (the wgmma's N).
pub const BN: i64 = 128;
/// K per stage: 64 16-bit elements, one 128-byte swizzled row.
pub const BK: i64 = 64;
/// Shared-memory stages.
pub const STAGES: i64 = 3;
/// Threads: one warpgroup.
pub const THREADS: i64 = 128;
/// Elements (16-bit) of a stage: A's `BM x BK`, then B's `BN x BK`.
pub const STAGE: i64 = (BM + BN) * BK;
/// Shared memory: 1024 bytes to align the stages, the stages, an mbarrier per stage.
pub const SMEM_BYTES: i64 = 1024 + 2 * STAGE * STAGES + 8 * STAGES;

// The stages are gemm_sm90's (`rows x 64` 16-bit elements, K-major, the copy engine's 128-byte
// swizzle): its per-k-block descriptors serve.
const _: () = assert!(BK == crate::gemm::BK, "gemm_wg's stages are gemm_sm90's");
const DESC_A: [GmmaDescriptor; 4] = k_major_descs(BM);
const DESC_B: [GmmaDescriptor; 4] = k_major_descs(BN);
/// The accumulators' places in the `BM x BN` tile: thread origin, value `v` of 64.
const C_PLAN: TvCoords<2> = const_ok!(TvCoords::of_mma(
    &const_ok!(make_tiled_mma(
        &SM90_64X128X16_F32BF16BF16_SS.mma,
        &const_ok!(Layout::parse("(1,1):(0,0)"))
    )),
    Operand::C,
    [BM, BN]
));

/// The parameters: tensor maps of A and B (engine `A`), C (engine `C`), and K.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GemmWgParams<A, C> {
    /// `M x K`, boxes of `BM x BK`, the 128-byte swizzle.
    pub a: A,
    /// `N x K`, boxes of `BN x BK`, the 128-byte swizzle.
    pub b: A,
    /// `M x N`.
    pub c: FlatTensor<C, 2>,
    /// K.
    pub k: i64,
}

/// The kernel, inputs `I`; `BUG` a broken copy (see the module).
pub struct GemmWg<I, const BUG: u8 = 0>(PhantomData<I>);

impl<I: MmaIn + Default, const BUG: u8> Kernel for GemmWg<I, BUG> {
    type Shared = I;
    type Params<M: Space> = GemmWgParams<M::TensorMap<I>, M::Global<f32>>;

    #[inline(always)]
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        if p.k < 1 || p.c.shape()[0] < 1 || p.c.shape()[1] < 1 {
            return Err("gemm_wg needs M, N and K of at least 1");
        }
        Ok(p)
    }

    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem: i64) -> Geometry {
        let [m, n] = p.c.shape();
        Geometry {
            grid: [(n + BN - 1) / BN, (m + BM - 1) / BM],
            threads: THREADS,
            smem_bytes: SMEM_BYTES,
        }
    }

    // inlined into the entry: a call would pass the parameters through the stack
    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<I>>) {
        let (tid, [bn, bm]) = (c.thread, c.block);
        // the stages from the first 1024-byte boundary (the swizzle's repeat), the barriers after
        let base = c
            .smem
            .advance(((1024 - c.smem.addr() % 1024) % 1024 / 2) as i64);
        let a_tile = |s: i64| base.advance(s * STAGE);
        let b_tile = |s: i64| base.advance(s * STAGE + BM * BK);
        let full = |s: i64| base.advance(STAGES * STAGE + 4 * s);
        let ktiles = (p.k + BK - 1) / BK;
        let load = |kt: i64| {
            let s = kt % STAGES;
            full(s).mbarrier_arrive((2 * STAGE - 16 * (BUG == 2) as i64) as u32);
            a_tile(s).tma_load(&p.a, [BM * bm, BK * kt], &full(s));
            b_tile(s).tma_load(&p.b, [BN * bn, BK * kt], &full(s));
        };
        if tid == 0 {
            unroll!(s < STAGES as usize => { full(s as i64).mbarrier_init(1) });
            p.a.acquire();
            p.b.acquire();
        }
        sync_threads();
        if tid == 0 {
            unroll!(kt < STAGES as usize => { if (kt as i64) < ktiles { load(kt as i64) } });
        }
        let mut acc = [0f32; (BN / 2) as usize];
        let mut kt = 0;
        while kt < ktiles {
            let s = kt % STAGES;
            if BUG != 4 {
                full(s).mbarrier_wait(((kt / STAGES) & 1) as u32);
            }
            if BUG != 3 {
                warpgroup_arrive();
            }
            unroll!(kb < 4 => {
                let (da, db) = (gmma_desc(&a_tile(s), DESC_A[kb]), gmma_desc(&b_tile(s), DESC_B[kb]));
                wgmma::<I, 64>(da, db, &mut acc, kt > 0 || kb > 0);
            });
            warpgroup_commit_batch();
            if BUG == 1 && tid == 0 && kt + STAGES < ktiles {
                load(kt + STAGES);
            }
            warpgroup_wait::<0>();
            if BUG != 1 && tid == 0 && kt + STAGES < ktiles {
                load(kt + STAGES);
            }
            kt += 1;
        }
        let (o, id) = (C_PLAN.thread(tid), make_coord_tensor(p.c.shape()));
        let (out, id) = (
            p.c.local_tile([BM, BN], [bm, bn]),
            id.local_tile([BM, BN], [bm, bn]),
        );
        unroll!(i < 16 => {
            unroll!(j < 4 => {
                let v = 4 * i + j;
                let [r, col] = C_PLAN.value(v as i64);
                let at = [o[0] + r, o[1] + col];
                if id.elem_less(at) {
                    out.at(at).write(acc[v]);
                }
            });
        });
    }
}
