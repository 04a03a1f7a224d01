//! `math_check`: tessel's elementary functions ([`crate::math`]) of a vector, one thread per
//! element, so that `tests/gpu.rs` compares the GPU's bits with the simulated GPU's (the same
//! function on both): `y(i, f)` is function `f` of [`FUNCS`] at `x(i)`.

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::math::{exp, exp2, log, rsqrt, sqrt, tanh};
use crate::mem::{Mem, Space};
use layout_core::FlatTensor;

/// The functions, in the order of `y`'s columns.
pub const FUNCS: [&str; 6] = ["exp2", "exp", "log", "tanh", "sqrt", "rsqrt"];
/// Threads per block.
pub const THREADS: i64 = 128;

/// `x` (`n`) and `y` (`n x FUNCS.len()`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MathParams<E> {
    /// The arguments.
    pub x: FlatTensor<E, 1>,
    /// The results.
    pub y: FlatTensor<E, 2>,
}

/// The kernel.
pub struct MathCheck;

impl Kernel for MathCheck {
    type Shared = ();
    type Params<M: Space> = MathParams<M::Global<f32>>;

    #[inline(always)]
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        if p.y.shape()[0] != p.x.shape()[0] || p.y.shape()[1] != FUNCS.len() as i64 {
            return Err("math_check needs y of shape (len(x), 6)");
        }
        Ok(p)
    }

    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem: i64) -> Geometry {
        Geometry {
            grid: [((p.x.shape()[0] + THREADS - 1) / THREADS).max(1), 1],
            threads: THREADS,
            smem_bytes: 0,
        }
    }

    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<()>>) {
        let i = c.block[0] * THREADS + c.thread;
        if i < p.x.shape()[0] {
            let x = p.x.at([i]).read();
            let y = [exp2(x), exp(x), log(x), tanh(x), sqrt(x), rsqrt(x)];
            for (f, v) in y.into_iter().enumerate() {
                p.y.at([i, f as i64]).write(v);
            }
        }
    }
}
