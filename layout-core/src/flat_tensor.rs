//! Kernels' tensors: static rank, run-time extents, `const` tiles and partitions (seed 002's
//! pattern with CuTe's mix of static and dynamic integers).
//!
//! - [`FlatTensor`]: `engine o (s_0,..):(d_0,..)`, a [`FlatLayout`] known only at run time (the
//!   global tensor a kernel receives as a parameter); `local_tile` by a `const` tile shape.
//! - [`CoordTensor`]: `make_identity_tensor(shape)` of a run-time shape: the value at a coordinate
//!   is the coordinate; its tiles and partitions give the predicates (`elem_less`).
//! - [`TvCoords`]: a tiled copy's partition of a tile, computed at compile time: the partition of
//!   the tile's identity tensor split into a thread part (a `const` layout per coordinate, evaluated
//!   at the thread index) and a value part (a `const` layout per coordinate, a constant at each
//!   unrolled value). `get_slice(t)` then `partition_S` / `partition_D` of a tile give a thread's
//!   view: an origin moved once, and per-value offsets `dot(value coordinate, strides)`.
//!
//! Everything about the tile and the thread-value layout is `const`; what is left at run time is
//! the thread's origin, the tensor's extents and strides, and one multiply-add per coordinate.
//!
//! Post-conditions (tested against the general [`crate::Tensor`] API on random shapes): for every
//! thread `t` and value `v`, `partition_S(local_tile(X, tile, c))` of thread `t` at value `v` is
//! the element that `ThrCopy::partition_S(local_tile(...))` gives there, and the identity
//! tensor's value there is its coordinate in `X`.

use crate::arith::make_identity_layout;
use crate::error::{LayoutError, Result};
use crate::flat::FlatLayout;
use crate::int_tuple::IntTuple;
use crate::layout::Layout;
use crate::mma::{Operand, TiledMma};
use crate::tensor::Engine;
use crate::tiled_copy::TiledCopy;
use crate::tri;

/// `engine o layout` with a run-time layout of static rank `N`. `#[repr(C)]`: it crosses a kernel
/// launch as one parameter.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FlatTensor<E, const N: usize> {
    engine: E,
    layout: FlatLayout<N>,
}

impl<E: Engine, const N: usize> FlatTensor<E, N> {
    /// `engine o layout`.
    pub const fn new(engine: E, layout: FlatLayout<N>) -> Self {
        Self { engine, layout }
    }
    /// The engine (its origin).
    pub const fn engine(&self) -> E {
        self.engine
    }
    /// The layout.
    pub const fn layout(&self) -> &FlatLayout<N> {
        &self.layout
    }
    /// The shape.
    #[inline(always)]
    pub const fn shape(&self) -> [i64; N] {
        self.layout.shape()
    }
    /// The same tensor with mode `k`'s stride the constant `d`, or `None` when the run-time
    /// stride differs (a kernel that needs `d` there, e.g. 1 for vector accesses, checks it once
    /// and then computes with the constant).
    #[inline(always)]
    pub const fn with_static_stride(self, k: usize, d: i64) -> Option<Self> {
        let mut stride = self.layout.stride();
        if stride[k] != d {
            return None;
        }
        stride[k] = d;
        Some(Self {
            engine: self.engine,
            layout: FlatLayout::new_unchecked(self.layout.shape(), stride),
        })
    }
    /// `X(c)` as a position: the engine at natural coordinate `c` (origin plus `dot(c, strides)`),
    /// to read or write the element there. Unchecked, as [`FlatTensor::local_tile`]: `c` must be
    /// inside the shape for the position to be the tensor's.
    #[inline(always)]
    pub fn at(&self, c: [i64; N]) -> E {
        self.engine.advance(self.layout.dot(c))
    }
    /// `local_tile(X, tile, c)`: the `tile`-shaped block at tile coordinate `c`, its origin at
    /// element `c * tile` (componentwise). The tile's shape is `tile` even where it overhangs the
    /// tensor's edge: predicate its elements with the identity tensor's tile.
    ///
    /// Post-condition: `R(x) == X(c * tile + x)` for every `x` inside the tile.
    #[inline(always)]
    pub fn local_tile(&self, tile: [i64; N], c: [i64; N]) -> Self {
        let mut origin = [0i64; N];
        let mut k = 0;
        while k < N {
            origin[k] = c[k] * tile[k];
            k += 1;
        }
        Self {
            engine: self.engine.advance(self.layout.dot(origin)),
            layout: FlatLayout::new_unchecked(tile, self.layout.stride()),
        }
    }
}

impl<E: Engine, const N: usize> FlatTensor<E, N> {
    /// The tensor of pairs along mode `k`: [`FlatTensor::vectors_along`]`(k, 2)` (read a pair
    /// with `Mem::read_pair`).
    ///
    /// Post-condition: `R(.., c, ..) == X(.., 2c, ..)`, and `X(.., 2c + 1, ..)` is one `d_k` further.
    #[inline(always)]
    pub const fn pairs_along(&self, k: usize) -> Option<Self> {
        self.vectors_along(k, 2)
    }

    /// The tensor of `n`-element vectors along mode `k`: `(.., s_k / n, ..):(.., n d_k, ..)`, each
    /// position the first of `n` elements adjacent along mode `k` (CuTe's `recast` to a type `n`
    /// times as wide, with offsets still counted in elements: read a vector of 4 with
    /// `Mem::read_quad`). `None` unless `n >= 1` divides `s_k`.
    ///
    /// Post-condition: `R(.., c, ..) == X(.., n c, ..)`, and `X(.., n c + i, ..)` is `i d_k`
    /// further, for `i < n`.
    #[inline(always)]
    pub const fn vectors_along(&self, k: usize, n: i64) -> Option<Self> {
        let (mut shape, mut stride) = (self.layout.shape(), self.layout.stride());
        if n < 1 || shape[k] % n != 0 {
            return None;
        }
        shape[k] /= n;
        stride[k] *= n;
        Some(Self {
            engine: self.engine,
            layout: FlatLayout::new_unchecked(shape, stride),
        })
    }
}

impl<E: Engine> FlatTensor<E, 1> {
    /// `make_tensor(engine, prepend(layout, rows:0))`: the vector `n:d` as each row of a
    /// `(rows, n):(0, d)` matrix (a broadcast: every row coordinate reads the same elements), to be
    /// tiled and partitioned like a `(rows, n)` tensor. `None` unless `rows >= 1` and `rows * n`
    /// fits an `i64` (the layout invariant).
    ///
    /// Post-condition: `R(i, j) == X(j)` for every `i < rows`, `j < n`.
    #[inline(always)]
    pub const fn broadcast_rows(&self, rows: i64) -> Option<FlatTensor<E, 2>> {
        let (n, d) = (self.layout.shape()[0], self.layout.stride()[0]);
        match FlatLayout::new([rows, n], [0, d]) {
            Ok(layout) => Some(FlatTensor {
                engine: self.engine,
                layout,
            }),
            Err(_) => None,
        }
    }

    /// Tile `(0, k)` of the broadcast `(rows, n):(0, d)` cut in tiles of `tile`:
    /// `local_tile(broadcast_rows(tile[0]), tile, (0, k))` without building the whole broadcast
    /// (only a tile's layout, `tile:(0, d)`, which a kernel's constant tile keeps in range). As
    /// [`FlatTensor::local_tile`], unchecked: predicate the columns past `n`.
    ///
    /// Post-condition: `R(i, j) == X(k tile[1] + j)` for every `i < tile[0]` and
    /// `k tile[1] + j < n`.
    #[inline(always)]
    pub fn broadcast_tile(&self, tile: [i64; 2], k: i64) -> FlatTensor<E, 2> {
        let d = self.layout.stride()[0];
        FlatTensor {
            engine: self.engine.advance(k * tile[1] * d),
            layout: FlatLayout::new_unchecked(tile, [0, d]),
        }
    }
}

/// `make_identity_tensor(shape)` for a run-time `shape`: the value at coordinate `x` is
/// `origin + x`. Tiling and partitioning move the origin; `shape` is what the predicates compare
/// with ([`CoordTensor::bound`], the whole tensor's extents).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoordTensor<const N: usize> {
    origin: [i64; N],
    bound: [i64; N],
}

/// `make_identity_tensor(shape)`: coordinates `(0,..)` to `shape - 1`.
#[inline(always)]
pub const fn make_coord_tensor<const N: usize>(shape: [i64; N]) -> CoordTensor<N> {
    CoordTensor {
        origin: [0; N],
        bound: shape,
    }
}

impl<const N: usize> CoordTensor<N> {
    /// The coordinate at this tensor's origin.
    pub const fn origin(&self) -> [i64; N] {
        self.origin
    }
    /// The extents of the whole tensor (the predicates' bound).
    pub const fn bound(&self) -> [i64; N] {
        self.bound
    }
    /// `local_tile(identity, tile, c)`: origin `c * tile`.
    #[inline(always)]
    pub const fn local_tile(&self, tile: [i64; N], c: [i64; N]) -> Self {
        let mut origin = self.origin;
        let mut k = 0;
        while k < N {
            origin[k] += c[k] * tile[k];
            k += 1;
        }
        Self {
            origin,
            bound: self.bound,
        }
    }
    /// Is the whole `tile`-shaped block from the origin inside the tensor? (With a tile that
    /// passes, no element of it needs its own predicate.)
    #[inline(always)]
    pub const fn covers(&self, tile: [i64; N]) -> bool {
        let mut last = [0i64; N];
        let mut k = 0;
        while k < N {
            last[k] = tile[k] - 1;
            k += 1;
        }
        self.elem_less(last)
    }
    /// `elem_less(origin + x, bound)`: is the coordinate `x` from the origin inside the tensor?
    #[inline(always)]
    pub const fn elem_less(&self, x: [i64; N]) -> bool {
        let mut k = 0;
        while k < N {
            let c = self.origin[k] + x[k];
            if c < 0 || c >= self.bound[k] {
                return false;
            }
            k += 1;
        }
        true
    }
}

/// A tiled copy's partition of an `N`-dimensional tile, as coordinates (compile time).
///
/// `thr[k]` maps a thread to coordinate `k` of its origin in the tile, `val[k]` a value (a 1-D
/// index over the thread's `((atom_vals, atoms), rest..)` values) to coordinate `k` from that
/// origin: value `v` of thread `t` sits at `thr(t) + val(v)`.
#[derive(Clone, Copy, Debug)]
pub struct TvCoords<const N: usize> {
    thr: [Layout; N],
    val: [Layout; N],
    values: i64,
    atom_vals: i64,
    threads: i64,
    tile: [i64; N],
}

impl<const N: usize> TvCoords<N> {
    /// The partition of the `tile`-shaped tile (a multiple of the copy's tile in each mode) by
    /// `copy`: the partition of `make_identity_tensor(tile)`, its ArithTuple strides split into
    /// one integer layout per coordinate.
    ///
    /// Post-conditions: over all threads `t < threads()` and values `v < values()`,
    /// `thread(t) + value(v)` covers each coordinate of the tile exactly once (a tiled copy's
    /// TV layout is a bijection onto its tile, repeated over the rest modes).
    pub const fn new(copy: &TiledCopy, tile: [i64; N]) -> Result<Self> {
        let shape = tri!(IntTuple::from_ints(&tile));
        let ct = copy.tile.leaves();
        if ct.len() != N {
            return Err(LayoutError::RankMismatch {
                expected: ct.len(),
                found: N,
            });
        }
        let mut k = 0;
        while k < N {
            if tile[k] <= 0 || tile[k] % ct[k] != 0 {
                return Err(LayoutError::NotDivisible {
                    value: tile[k],
                    by: ct[k],
                });
            }
            k += 1;
        }
        let (id, cod) = tri!(make_identity_layout(&shape));
        let (thr, vals) = tri!(copy.partition_modes(&id));
        let mut out = Self {
            thr: [Layout::empty(); N],
            val: [Layout::empty(); N],
            values: vals.size(),
            atom_vals: copy.atom_vals,
            threads: copy.threads(),
            tile,
        };
        let mut k = 0;
        while k < N {
            out.thr[k] = tri!(lane(&thr, &cod, k));
            out.val[k] = tri!(lane(&vals, &cod, k));
            k += 1;
        }
        Ok(out)
    }
    /// Values per thread.
    pub const fn values(&self) -> i64 {
        self.values
    }
    /// Values per atom (one access).
    pub const fn atom_vals(&self) -> i64 {
        self.atom_vals
    }
    /// Threads.
    pub const fn threads(&self) -> i64 {
        self.threads
    }
    /// The tile shape.
    pub const fn tile(&self) -> [i64; N] {
        self.tile
    }
    /// Thread `t`'s origin in the tile.
    #[inline(always)]
    pub const fn thread(&self, t: i64) -> [i64; N] {
        let mut c = [0i64; N];
        let mut k = 0;
        while k < N {
            c[k] = self.thr[k].call(t);
            k += 1;
        }
        c
    }
    /// Value `v`'s coordinate from its thread's origin.
    #[inline(always)]
    pub const fn value(&self, v: i64) -> [i64; N] {
        let mut c = [0i64; N];
        let mut k = 0;
        while k < N {
            c[k] = self.val[k].call(v);
            k += 1;
        }
        c
    }
    /// `get_slice(t)`: thread `t`'s view.
    #[inline(always)]
    pub const fn get_slice(&self, t: i64) -> ThrCoords<'_, N> {
        ThrCoords {
            plan: self,
            origin: self.thread(t),
        }
    }
}

impl TvCoords<2> {
    /// A tiled MMA's partition of an operand tile (`partition_A/B/C` of
    /// `make_identity_tensor(tile)`; `tile` a multiple of the operand's MMA tile): thread `t`'s
    /// value `v`, `v` a 1-D index over `(atom_values, rest_rows, rest_cols)`, sits at
    /// `thread(t) + value(v)`.
    ///
    /// Post-condition (tests/flat_tensors.rs): equal, thread for thread and value for value, to
    /// [`ThrMma::partition`](crate::ThrMma::partition) of a column-major layout of `tile`.
    pub const fn of_mma(mma: &TiledMma, op: Operand, tile: [i64; 2]) -> Result<TvCoords<2>> {
        let shape = tri!(IntTuple::from_ints(&tile));
        let (id, cod) = tri!(make_identity_layout(&shape));
        let (thr, vals) = tri!(mma.partition_modes(op, &id));
        Ok(TvCoords {
            thr: [tri!(lane(&thr, &cod, 0)), tri!(lane(&thr, &cod, 1))],
            val: [tri!(lane(&vals, &cod, 0)), tri!(lane(&vals, &cod, 1))],
            values: vals.size(),
            atom_vals: 1,
            threads: mma.threads(),
            tile,
        })
    }
}

/// Lane `k` of an ArithTuple-strided layout as an integer layout (same shape, stride `d_i`'s leaf
/// `k`).
const fn lane(l: &Layout, cod: &crate::arith::Codomain, k: usize) -> Result<Layout> {
    let d = l.strides();
    let mut out = [0i64; crate::int_tuple::MAX_LEAVES];
    let mut i = 0;
    while i < d.len() {
        if d[i] < 0 {
            return Err(LayoutError::NegativeStride { value: d[i] });
        }
        out[i] = cod.get(d[i], k);
        i += 1;
    }
    Layout::from_parts(l.shape(), out.split_at(d.len()).0)
}

/// One thread's view of a [`TvCoords`] partition (`get_slice(t)`).
#[derive(Clone, Copy, Debug)]
pub struct ThrCoords<'a, const N: usize> {
    plan: &'a TvCoords<N>,
    origin: [i64; N],
}

impl<'a, const N: usize> ThrCoords<'a, N> {
    /// The thread's origin in the tile.
    pub const fn origin(&self) -> [i64; N] {
        self.origin
    }
    /// The coordinate of the thread's value `v` in the tile: its origin plus the value's offset.
    #[inline(always)]
    pub const fn coord(&self, v: i64) -> [i64; N] {
        let c = self.plan.value(v);
        let mut r = self.origin;
        let mut k = 0;
        while k < N {
            r[k] += c[k];
            k += 1;
        }
        r
    }
    /// `partition_S(tile)`: the thread's values of a tile of a tensor (or of an identity tensor).
    #[allow(non_snake_case)]
    #[inline(always)]
    pub fn partition_S<T: Partition<N>>(&self, tile: &T) -> T::Part<'a> {
        tile.partition(self.plan, self.origin)
    }
    /// `partition_D(tile)`: the destination's values, cut as the source's.
    #[allow(non_snake_case)]
    #[inline(always)]
    pub fn partition_D<T: Partition<N>>(&self, tile: &T) -> T::Part<'a> {
        tile.partition(self.plan, self.origin)
    }
}

/// What a thread's partition of a tile is made of.
pub trait Partition<const N: usize> {
    /// The thread's values.
    type Part<'a>;
    /// The values of the thread whose origin in the tile is `origin`.
    fn partition<'a>(&self, plan: &'a TvCoords<N>, origin: [i64; N]) -> Self::Part<'a>;
}

/// A thread's values of a tensor tile: value `v` at offset `dot(value(v), strides)` from the
/// thread's origin.
#[derive(Clone, Copy, Debug)]
pub struct ThrTensor<'a, E, const N: usize> {
    engine: E,
    stride: [i64; N],
    plan: &'a TvCoords<N>,
}

impl<E: Engine, const N: usize> Partition<N> for FlatTensor<E, N> {
    type Part<'a> = ThrTensor<'a, E, N>;
    #[inline(always)]
    fn partition<'a>(&self, plan: &'a TvCoords<N>, origin: [i64; N]) -> ThrTensor<'a, E, N> {
        ThrTensor {
            engine: self.engine.advance(self.layout.dot(origin)),
            stride: self.layout.stride(),
            plan,
        }
    }
}

impl<E: Engine, const N: usize> ThrTensor<'_, E, N> {
    /// The engine at the thread's origin.
    pub fn engine(&self) -> E {
        self.engine
    }
    /// Values per thread.
    pub const fn size(&self) -> i64 {
        self.plan.values
    }
    /// The offset of value `v` from the thread's origin (a constant times each stride, for a
    /// constant `v`).
    #[inline(always)]
    pub fn offset(&self, v: i64) -> i64 {
        let c = self.plan.value(v);
        let mut r = 0;
        let mut k = 0;
        while k < N {
            r += c[k] * self.stride[k];
            k += 1;
        }
        r
    }
    /// The engine at value `v` (an atom's first value, for vector accesses).
    #[inline(always)]
    pub fn at(&self, v: i64) -> E {
        self.engine.advance(self.offset(v))
    }
}

/// A thread's values of an identity tile: value `v`'s coordinate in the whole tensor.
#[derive(Clone, Copy, Debug)]
pub struct ThrCoordTensor<'a, const N: usize> {
    coords: CoordTensor<N>,
    plan: &'a TvCoords<N>,
}

impl<const N: usize> Partition<N> for CoordTensor<N> {
    type Part<'a> = ThrCoordTensor<'a, N>;
    #[inline(always)]
    fn partition<'a>(&self, plan: &'a TvCoords<N>, origin: [i64; N]) -> ThrCoordTensor<'a, N> {
        ThrCoordTensor {
            coords: self.local_tile(origin, [1; N]),
            plan,
        }
    }
}

impl<const N: usize> ThrCoordTensor<'_, N> {
    /// Value `v`'s coordinate in the whole tensor.
    #[inline(always)]
    pub const fn coord(&self, v: i64) -> [i64; N] {
        let c = self.plan.value(v);
        let o = self.coords.origin();
        let mut r = [0i64; N];
        let mut k = 0;
        while k < N {
            r[k] = o[k] + c[k];
            k += 1;
        }
        r
    }
    /// `elem_less(coord(v), shape)`: the predicate of value `v`.
    #[inline(always)]
    pub const fn elem_less(&self, v: i64) -> bool {
        self.coords.elem_less(self.plan.value(v))
    }
}
