//! `y = alpha x + beta y` over two matrices of one shape, any layouts: the smallest kernel that
//! shows the whole pattern — a run-time tensor per operand, a `const` tiled copy and tiler, the
//! identity tensor's partition as predicate, 128-bit atoms where the layouts allow them.
//!
//! Block `(bx, by)` takes the tile `local_tile(X, (16, 32V), (by, bx))`: 8 rows of 32 threads,
//! each thread `V` contiguous elements of a row per atom (one 128-bit access), two atoms a thread
//! (rows `r` and `r + 8`). A tile wholly inside the matrices, over layouts whose rows are
//! contiguous and 16-byte aligned, moves atom by atom; any other tile (a ragged edge, a
//! column-major or strided layout) element by element, each predicated by `elem_less`.
//!
//! Each element is `fma(alpha, x, beta * y)` in `f32`, rounded to the element type once: the
//! device's `fma.rn.f32` and the host's `f32::mul_add` round alike, so the host execution is
//! bit-equal.

use crate::ctx::{Ctx, Geometry, Kernel};
use crate::mem::{Mem, Space, V4};
use crate::real::Real;
use layout_core::{
    const_ok, make_coord_tensor, make_tiled_copy_tv, FlatTensor, IntTuple, Layout, TiledCopy,
    TvCoords,
};

/// Threads per block.
pub const THREADS: i64 = 256;
/// Atoms per thread and tile.
pub const ATOMS: i64 = 2;
const _: () = assert!(ATOMS == 2, "the vector path unrolls two atoms");

/// The parameters: `x` and `y` of one shape `(M, N)`, any strides; `y` is read and written.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AxpbyParams<E> {
    /// The input.
    pub x: FlatTensor<E, 2>,
    /// The input and output.
    pub y: FlatTensor<E, 2>,
    /// `alpha`.
    pub alpha: f32,
    /// `beta`.
    pub beta: f32,
}

/// The kernel for elements of type `T` (`f32` or `bf16`).
pub struct Axpby<T>(core::marker::PhantomData<T>);

impl<T: Real> Axpby<T> {
    /// Elements per 128-bit atom.
    pub const V: i64 = 128 / T::BITS;
    /// `(8,32)` row-major threads, `(1,V)` values: a copy tile of `(8, 32V)`.
    pub const COPY: TiledCopy = const_ok!(make_tiled_copy_tv(
        &const_ok!(Layout::parse("(8,32):(32,1)")),
        &const_ok!(Layout::from_parts(
            const_ok!(IntTuple::from_ints(&[1, Self::V])),
            &[1, 1]
        )),
        128,
        T::BITS
    ));
    /// A block's tile: two copy tiles down the rows.
    pub const TILER: [i64; 2] = [8 * ATOMS, 32 * Self::V];
    /// The copy's partition of a tile, as coordinates.
    pub const PLAN: TvCoords<2> = const_ok!(TvCoords::new(&Self::COPY, Self::TILER));
    const _ATOMS: () = assert!(
        Self::PLAN.values() == ATOMS * Self::V && Self::PLAN.atom_vals() == Self::V,
        "a thread's values are ATOMS atoms"
    );

    /// `fma(alpha, x, beta * y)`, rounded once to `f32` (the device's `fma.rn.f32`).
    #[inline(always)]
    fn axpby(alpha: f32, x: f32, beta: f32, y: f32) -> f32 {
        crate::math::fma(alpha, x, beta * y)
    }

    /// One 128-bit atom of `x` and `y`, combined: `V` elements packed in four words.
    #[inline(always)]
    fn combine(alpha: f32, x: V4, beta: f32, y: V4) -> V4 {
        let mut out = [0u32; 4];
        let per = (32 / T::BITS) as usize;
        let mut w = 0;
        while w < 4 {
            if per == 1 {
                out[w] = T::narrow(Self::axpby(alpha, T::widen(x.0[w]), beta, T::widen(y.0[w])));
            } else {
                let lo = Self::axpby(alpha, T::widen(x.0[w]), beta, T::widen(y.0[w]));
                let hi = Self::axpby(alpha, T::widen(x.0[w] >> 16), beta, T::widen(y.0[w] >> 16));
                out[w] = T::narrow2(lo, hi);
            }
            w += 1;
        }
        V4(out)
    }

    /// Can the tiles of `t` move as 128-bit atoms? Rows contiguous, each atom 16-byte aligned
    /// (the origin aligned and the row stride a multiple of `V`).
    #[inline(always)]
    fn vectors<E: Mem<T>>(t: &FlatTensor<E, 2>) -> bool {
        let d = t.layout().stride();
        d[1] == 1 && d[0] % Self::V == 0 && t.engine().aligned16()
    }
}

impl<T: Real> Kernel for Axpby<T> {
    type Shared = ();
    type Params<M: Space> = AxpbyParams<M::Global<T>>;

    /// `x` and `y` of one shape; any strides.
    fn prepare<M: Space>(p: Self::Params<M>) -> Result<Self::Params<M>, &'static str> {
        if p.x.shape() != p.y.shape() {
            return Err("axpby needs x and y of the same shape");
        }
        Ok(p)
    }

    /// One block per tile: `(ceil(N / 32V), ceil(M / 16))`.
    fn geometry<M: Space>(p: &Self::Params<M>, _sms: i64, _smem_limit: i64) -> Geometry {
        let [rows, cols] = p.x.layout().tiles(Self::TILER);
        Geometry {
            grid: [cols, rows],
            threads: THREADS,
            smem_bytes: 0,
        }
    }

    /// Thread `c.thread` of block `c.block`: its atoms of the block's tile, or its elements
    /// predicated by `elem_less` where the tile is ragged or the layouts not vectorizable.
    #[inline(always)]
    unsafe fn thread<M: Space>(p: &Self::Params<M>, c: &Ctx<M::Shared<Self::Shared>>) {
        let () = Self::_ATOMS;
        let coord = [c.block[1], c.block[0]];
        let id = make_coord_tensor(p.x.shape());
        let thr = Self::PLAN.get_slice(c.thread);
        let c_t = id.local_tile(Self::TILER, coord);
        let t_x = thr.partition_S(&p.x.local_tile(Self::TILER, coord));
        let t_y = thr.partition_D(&p.y.local_tile(Self::TILER, coord));
        if c_t.covers(Self::TILER) && Self::vectors(&p.x) && Self::vectors(&p.y) {
            let x = [t_x.at(0).read_v4(), t_x.at(Self::V).read_v4()];
            let y = [t_y.at(0).read_v4(), t_y.at(Self::V).read_v4()];
            t_y.at(0)
                .write_v4(Self::combine(p.alpha, x[0], p.beta, y[0]));
            t_y.at(Self::V)
                .write_v4(Self::combine(p.alpha, x[1], p.beta, y[1]));
        } else {
            let t_c = thr.partition_S(&c_t);
            let mut v = 0;
            while v < t_x.size() {
                if t_c.elem_less(v) {
                    let (x, y) = (t_x.at(v), t_y.at(v));
                    let r = Self::axpby(p.alpha, x.read().to_f32(), p.beta, y.read().to_f32());
                    y.write(T::from_f32(r));
                }
                v += 1;
            }
        }
    }
}
