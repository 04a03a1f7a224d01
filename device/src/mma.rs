//! A warp's tensor-core instruction (sm_80 and later): `mma.sync.m16n8k16` over register
//! fragments, `D = A B^T + C` for a 16x8 tile of `D` and 16 of K, with 16-bit inputs and `f32`
//! accumulation. The fragments are CuTe's `SM80_16x8x16_F32{BF16,F16}..._TN` atoms (layout-core's
//! `MmaAtom`s of those names): lane `l`, with `g = l / 4` and `t = l % 4`, holds
//!
//! - `a` (4 words of two elements, low half first): `A(g, 2t..2t+2)`, `A(g+8, 2t..)`,
//!   `A(g, 2t+8..)`, `A(g+8, 2t+8..)`;
//! - `b` (2 words): `B(g, 2t..2t+2)`, `B(g, 2t+8..)` (B is `N x K`: "col" in the PTX ISA);
//! - `d` (4 floats): `D(g, 2t)`, `D(g, 2t+1)`, `D(g+8, 2t)`, `D(g+8, 2t+1)`.
//!
//! `ldmatrix` ([`Ldmatrix`](crate::mem::Ldmatrix)) reads such fragments from shared memory. On the
//! host the simulated GPU performs the instruction over the warp's 32 lanes (every lane must
//! reach it, as on the device). Its arithmetic there: the products of two 16-bit values are
//! exact, and the 16 products and `C` are summed in `f64` and rounded to `f32` once. The tensor
//! core adds in its own order with its own rounding (it truncates): both agree bit for bit where
//! every partial sum is exact in `f32` (e.g. small integers), and differ by at most a few units in
//! the last place of the largest term otherwise.

use crate::real::Real;
use half::{bf16, f16};

#[cfg(not(target_arch = "nvptx64"))]
use crate::sim::{request, Sync};

/// A 16-bit input type of `mma.sync`: `bf16` or `f16`.
pub trait MmaIn: Real {
    /// `bf16` (else `f16`).
    const BF16: bool;
}
impl MmaIn for bf16 {
    const BF16: bool = true;
}
impl MmaIn for f16 {
    const BF16: bool = false;
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32`: `d = a b^T + d` over the
/// warp's 16x8x16 tile, the fragments laid out as the module says. Every lane of the warp runs
/// it (warp-uniform control flow).
#[inline(always)]
#[cfg_attr(not(target_arch = "nvptx64"), track_caller)]
pub fn mma_m16n8k16<I: MmaIn>(a: &[u32; 4], b: &[u32; 2], d: &mut [f32; 4]) {
    #[cfg(target_arch = "nvptx64")]
    if I::BF16 {
        crate::device::mma_16x8x16::<true>(a, b, d)
    } else {
        crate::device::mma_16x8x16::<false>(a, b, d)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let mut regs = [0u32; 10];
        regs[..4].copy_from_slice(a);
        regs[4..6].copy_from_slice(b);
        for (r, x) in regs[6..].iter_mut().zip(d.iter()) {
            *r = x.to_bits();
        }
        request(Sync::Mma {
            bf16: I::BF16,
            regs: &mut regs,
        });
        for (x, r) in d.iter_mut().zip(&regs[6..]) {
            *x = f32::from_bits(*r);
        }
    }
}
