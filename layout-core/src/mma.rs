//! MMA atoms as data, and tiled MMAs (`make_tiled_mma`).
//!
//! An [`MmaAtom`] is one warp-wide tensor-core instruction described as CuTe describes it: the
//! tile shape `(M, N, K)`, the thread layout `thr_id`, and three thread-value (TV) layouts:
//!
//! * `a`: `(thread, value) -> m + M k`, the column-major index in the `M x K` tile of A;
//! * `b`: `(thread, value) -> n + N k` in the `N x K` tile of B;
//! * `c`: `(thread, value) -> m + M n` in the `M x N` tile of C (and D).
//!
//! The constants here carry exactly CuTe's layouts (`MMA_Traits<SM80_...>` in CUTLASS's
//! `cute/atom/mma_traits_sm80.hpp`); the tests compare them with CuTe's strings.
//!
//! [`make_tiled_mma`] repeats an atom over an atom layout `(AM, AN[, AK])` of warps. Its thread
//! layout is CuTe's `thr_layout_vmnk = tiled_product(thr_id, append<3>(atom_layout))`, its tile
//! `(M AM, N AN, K AK)`, and its partitions follow CuTe's `thrfrg_A/B/C`: the tensor is divided
//! into atom tiles, each atom tile is composed with the atom's TV layout, and the tiles are
//! divided among the atom layout's warps. Thread `i` is the coordinate `(v, m, n, k)` with
//! `thr_layout_vmnk(v, m, n, k) = i` (CuTe's `right_inverse(thr_layout_vmnk)`).
//!
//! [`make_tiled_mma_permuted`] adds CuTe's `PermutationMNK`: per mode M, N, K a layout (or `_`,
//! CuTe's default, the identity over `atom M x AM` etc.). Each operand's tensor is first
//! reordered by the permutations of its two modes (`logical_divide(t, (perm_r, perm_c))`, as
//! `thrfrg_A/B/C` do) and then tiled as above; the tile becomes the permutations' sizes. E.g.
//! over 4 warps in N, `(8,4,2):(1,16,8)` gives each warp two n8 atoms side by side (n `16 w ..
//! 16 w + 15`), so that one `ldmatrix.x4` loads a warp's B for both.

use crate::composition::composition;
use crate::divide::{logical_divide_tiler, zipped_divide};
use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::inverse::right_inverse;
use crate::layout::Layout;
use crate::product::logical_product;
use crate::tiler::Tiler;
use crate::tri;

/// An element type of an MMA's operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmaType {
    /// IEEE half precision.
    F16,
    /// bfloat16.
    BF16,
    /// IEEE single precision.
    F32,
}

impl MmaType {
    /// The name CuTe's atoms use (`F16`, `BF16`, `F32`).
    pub const fn name(self) -> &'static str {
        match self {
            MmaType::F16 => "F16",
            MmaType::BF16 => "BF16",
            MmaType::F32 => "F32",
        }
    }
    /// Bits per element.
    pub const fn bits(self) -> i64 {
        match self {
            MmaType::F16 | MmaType::BF16 => 16,
            MmaType::F32 => 32,
        }
    }
}

/// One MMA instruction as data: `D = A B + C` over an `M x N x K` tile, A and B "TN" (both
/// K-major, as the PTX `mma.sync ... .row.col` reads them). The same struct carries a Hopper
/// GMMA atom's layouts ([`crate::GmmaAtom::mma`]: 128 threads, A and B from shared memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmaAtom {
    /// CuTe's name of the operation, e.g. `SM80_16x8x16_F32F16F16F32_TN`.
    pub name: &'static str,
    /// `(M, N, K)`.
    pub shape_mnk: [i64; 3],
    /// The atom's threads: `32:1`, a warp (`128:1`, a warpgroup, for GMMA atoms).
    pub thr_id: Layout,
    /// `(thread, value) -> m + M k` in the `M x K` tile of A.
    pub a: Layout,
    /// `(thread, value) -> n + N k` in the `N x K` tile of B.
    pub b: Layout,
    /// `(thread, value) -> m + M n` in the `M x N` tile of C and D.
    pub c: Layout,
    /// Element types `[D, A, B, C]`, in the order of the name.
    pub types: [MmaType; 4],
}

const fn lay(s: &str) -> Layout {
    crate::const_ok!(Layout::parse(s))
}

/// `(T32,V4) -> (M16,N8)`: C of every 16x8 atom, and A of the 16x8x8 ones (CuTe's
/// `SM80_16x8_Row`).
const ROW_16X8: Layout = lay("((4,8),(2,2)):((32,1),(16,8))");
/// `(T32,V2) -> (N8,K8)`: B of the 16x8x8 atoms (CuTe's `SM80_8x8_Row`).
const ROW_8X8: Layout = lay("((4,8),2):((16,1),8)");
/// `(T32,V8) -> (M16,K16)`: A of the 16x8x16 atoms.
const A_16X16: Layout = lay("((4,8),(2,2,2)):((32,1),(16,8,128))");
/// `(T32,V4) -> (N8,K16)`: B of the 16x8x16 atoms.
const B_8X16: Layout = lay("((4,8),(2,2)):((16,1),(8,64))");
const WARP: Layout = lay("32:1");

const fn atom_16x8x16(name: &'static str, types: [MmaType; 4]) -> MmaAtom {
    MmaAtom {
        name,
        shape_mnk: [16, 8, 16],
        thr_id: WARP,
        a: A_16X16,
        b: B_8X16,
        c: ROW_16X8,
        types,
    }
}

const fn atom_16x8x8(name: &'static str, types: [MmaType; 4]) -> MmaAtom {
    MmaAtom {
        name,
        shape_mnk: [16, 8, 8],
        thr_id: WARP,
        a: ROW_16X8,
        b: ROW_8X8,
        c: ROW_16X8,
        types,
    }
}

use MmaType::{BF16, F16, F32};

/// `mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32`.
pub const SM80_16X8X16_F32F16F16F32_TN: MmaAtom =
    atom_16x8x16("SM80_16x8x16_F32F16F16F32_TN", [F32, F16, F16, F32]);
/// `mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32`.
pub const SM80_16X8X16_F32BF16BF16F32_TN: MmaAtom =
    atom_16x8x16("SM80_16x8x16_F32BF16BF16F32_TN", [F32, BF16, BF16, F32]);
/// `mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16`.
pub const SM80_16X8X16_F16F16F16F16_TN: MmaAtom =
    atom_16x8x16("SM80_16x8x16_F16F16F16F16_TN", [F16, F16, F16, F16]);
/// `mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32`.
pub const SM80_16X8X8_F32F16F16F32_TN: MmaAtom =
    atom_16x8x8("SM80_16x8x8_F32F16F16F32_TN", [F32, F16, F16, F32]);
/// `mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32`.
pub const SM80_16X8X8_F32BF16BF16F32_TN: MmaAtom =
    atom_16x8x8("SM80_16x8x8_F32BF16BF16F32_TN", [F32, BF16, BF16, F32]);
/// `mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16`.
pub const SM80_16X8X8_F16F16F16F16_TN: MmaAtom =
    atom_16x8x8("SM80_16x8x8_F16F16F16F16_TN", [F16, F16, F16, F16]);

/// Every atom defined here.
pub const MMA_ATOMS: [MmaAtom; 6] = [
    SM80_16X8X16_F32F16F16F32_TN,
    SM80_16X8X16_F32BF16BF16F32_TN,
    SM80_16X8X16_F16F16F16F16_TN,
    SM80_16X8X8_F32F16F16F32_TN,
    SM80_16X8X8_F32BF16BF16F32_TN,
    SM80_16X8X8_F16F16F16F16_TN,
];

pub(crate) const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

impl MmaAtom {
    /// The atom named `name` (CuTe's spelling), if defined here: one of [`MMA_ATOMS`] or the
    /// `mma` of one of the GMMA atoms ([`crate::GMMA_ATOMS`]).
    pub const fn by_name(name: &str) -> Option<MmaAtom> {
        let mut i = 0;
        while i < MMA_ATOMS.len() {
            if str_eq(MMA_ATOMS[i].name, name) {
                return Some(MMA_ATOMS[i]);
            }
            i += 1;
        }
        match crate::gmma::GmmaAtom::by_name(name) {
            Some(g) => Some(g.mma),
            None => None,
        }
    }
    /// Threads of one atom (32).
    pub const fn threads(&self) -> i64 {
        self.thr_id.size()
    }
}

/// Which operand a partition is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    /// A, `M x K`.
    A,
    /// B, `N x K`.
    B,
    /// C (and D), `M x N`.
    C,
}

/// A tiled MMA: an atom repeated over a layout of warps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TiledMma {
    /// The atom.
    pub atom: MmaAtom,
    /// CuTe's `thr_layout_vmnk`: `(atom thread, m, n, k)` -> thread index.
    pub thr_layout_vmnk: Layout,
    /// The tile `(M, N, K)` that one step of the tiled MMA covers (CuTe's `tile_size_mnk`: the
    /// permutations' sizes).
    pub tile_mnk: [i64; 3],
    /// CuTe's `permutation_mnk<I>()`: the permutation of each mode, `tile:1` where none was given.
    pub permutation_mnk: [Layout; 3],
    /// `(thread, value) -> m + M k` over the `M x K` tile of A.
    pub layout_a_tv: Layout,
    /// `(thread, value) -> n + N k` over the `N x K` tile of B.
    pub layout_b_tv: Layout,
    /// `(thread, value) -> m + M n` over the `M x N` tile of C.
    pub layout_c_tv: Layout,
}

/// `make_tiled_mma(atom, atom_layout)` with the identity permutation: `atom_layout` (rank 1 to
/// 3, `(AM, AN, AK)`, missing modes `1:0`) maps a warp's coordinate to its warp index. The same
/// as [`make_tiled_mma_permuted`] with `[None, None, None]`.
///
/// Post-conditions (tested): `threads() == 32 size(atom_layout)`; `tile_mnk == (M AM, N AN, K
/// AK)`; with `AK == 1`, `layout_c_tv` is a bijection from `(threads, values)` onto the C tile;
/// every element of the A tile is held by exactly `AN` pairs `(thread, value)` (one per warp
/// column, all with the same value index), every element of B by exactly `AM`, and with `AK >
/// 1` every element of C by exactly `AK`.
///
/// Errors: `RankMismatch` for an atom layout of rank above 3; `NotBijective` when the atom
/// layout does not number its warps `0..size` one to one (e.g. `(2,2):(1,1)`).
pub const fn make_tiled_mma(atom: &MmaAtom, atom_layout: &Layout) -> Result<TiledMma> {
    make_tiled_mma_permuted(atom, atom_layout, &[None, None, None])
}

/// CuTe's `make_tiled_mma(atom, atom_layout, permutation_mnk)`: as [`make_tiled_mma`], each
/// mode M, N, K of the tile reordered by `permutation[i]` (`None` is CuTe's `_`: `M AM:1`,
/// `N AN:1`, `K AK:1`). A permutation `P` of mode M maps the tiled MMA's m index (the one the
/// atoms and warps are laid out over, atom-fastest) to the tensor's m: the element the tiled
/// MMA calls `i` is row `P(i)` of the tile. Its size is the tile's M (`tile_mnk[0]`), a multiple
/// of `M AM`; a larger one repeats the warps' atoms (`RestM` in each thread's values).
///
/// Post-conditions (tested): with every `permutation[i]` `None` or `tile:1`, the result equals
/// [`make_tiled_mma`]'s; `layout_x_tv(t, v) == P(layout_x_tv of the unpermuted tiled MMA of
/// tile `size(P)`)` mode by mode; the ownership counts of [`make_tiled_mma`].
///
/// Errors: those of [`make_tiled_mma`]; `NotDivisible` when a permutation's size is not a
/// multiple of the atom's extent times the warps in that mode; `NotBijective` when a permutation
/// is not a bijection onto `0..size` (CuTe does not check; tessel is stricter).
pub const fn make_tiled_mma_permuted(
    atom: &MmaAtom,
    atom_layout: &Layout,
    permutation: &[Option<Layout>; 3],
) -> Result<TiledMma> {
    if atom_layout.rank() > 3 {
        return Err(LayoutError::RankMismatch {
            expected: 3,
            found: atom_layout.rank(),
        });
    }
    let al = tri!(atom_layout.append_to_rank(3));
    // tiled_product(thr_id, al): (V, M, N, K)
    let lp = tri!(logical_product(&atom.thr_id, &al));
    let rest = tri!(lp.get(1));
    let thr_layout_vmnk = tri!(Layout::concat(&[
        tri!(lp.get(0)),
        tri!(rest.get(0)),
        tri!(rest.get(1)),
        tri!(rest.get(2)),
    ]));
    let n = thr_layout_vmnk.size();
    let reached = tri!(right_inverse(&thr_layout_vmnk)).size();
    if reached != n {
        return Err(LayoutError::NotBijective { size: n, reached });
    }
    let s = atom.shape_mnk;
    let mut permutation_mnk = [Layout::empty(); 3];
    let mut tile_mnk = [0i64; 3];
    let mut i = 0;
    while i < 3 {
        let base = s[i] * tri!(al.get(i)).size();
        let p = match permutation[i] {
            None => tri!(Layout::int(base, 1)),
            Some(p) => p,
        };
        let size = p.size();
        if size % base != 0 {
            return Err(LayoutError::NotDivisible {
                value: size,
                by: base,
            });
        }
        let reached = tri!(right_inverse(&p)).size();
        if reached != size || p.cosize() != size {
            return Err(LayoutError::NotBijective { size, reached });
        }
        permutation_mnk[i] = p;
        tile_mnk[i] = size;
        i += 1;
    }
    let mut t = TiledMma {
        atom: *atom,
        thr_layout_vmnk,
        tile_mnk,
        permutation_mnk,
        layout_a_tv: Layout::empty(),
        layout_b_tv: Layout::empty(),
        layout_c_tv: Layout::empty(),
    };
    t.layout_a_tv = tri!(t.ref_tv(Operand::A));
    t.layout_b_tv = tri!(t.ref_tv(Operand::B));
    t.layout_c_tv = tri!(t.ref_tv(Operand::C));
    Ok(t)
}

impl TiledMma {
    /// Threads: `size(thr_layout_vmnk)`.
    pub const fn threads(&self) -> i64 {
        self.thr_layout_vmnk.size()
    }
    /// The operand's tile `(rows, cols)`: A `(M, K)`, B `(N, K)`, C `(M, N)`.
    pub const fn tile_of(&self, op: Operand) -> [i64; 2] {
        let t = self.tile_mnk;
        match op {
            Operand::A => [t[0], t[2]],
            Operand::B => [t[1], t[2]],
            Operand::C => [t[0], t[1]],
        }
    }
    /// The TV layout of an operand: `(thread, value) -> index` in the column-major operand tile.
    pub const fn layout_tv(&self, op: Operand) -> Layout {
        match op {
            Operand::A => self.layout_a_tv,
            Operand::B => self.layout_b_tv,
            Operand::C => self.layout_c_tv,
        }
    }
    const fn ref_tv(&self, op: Operand) -> Result<Layout> {
        let [r, c] = self.tile_of(op);
        let reference = tri!(Layout::col_major(tri!(IntTuple::from_ints(&[r, c]))));
        let (thr, vals) = tri!(self.partition_modes(op, &reference));
        Layout::concat(&[thr, vals])
    }
    /// CuTe's `thrfrg_A/B/C` for a tensor of layout `l` (rank 2, `(rows, cols)` of the operand,
    /// each a multiple of the tiled MMA's tile: `Err(RankMismatch)`, `Err(NotDivisible)`
    /// otherwise), with the thread mode composed with
    /// `right_inverse(thr_layout_vmnk)`: `thread -> offset of the thread's origin`, and the
    /// thread's values `(atom_values, (rest_rows, rest_cols))`, the same for every thread.
    pub const fn partition_modes(&self, op: Operand, l: &Layout) -> Result<(Layout, Layout)> {
        if l.rank() != 2 {
            return Err(LayoutError::RankMismatch {
                expected: 2,
                found: l.rank(),
            });
        }
        let tile = self.tile_of(op);
        let mut i = 0;
        while i < 2 {
            let size = tri!(l.get(i)).size();
            if size % tile[i] != 0 {
                return Err(LayoutError::NotDivisible {
                    value: size,
                    by: tile[i],
                });
            }
            i += 1;
        }
        let s = self.atom.shape_mnk;
        let (atom_tv, atom_tile, modes) = match op {
            Operand::A => (self.atom.a, [s[0], s[2]], [1, 3]),
            Operand::B => (self.atom.b, [s[1], s[2]], [2, 3]),
            Operand::C => (self.atom.c, [s[0], s[1]], [1, 2]),
        };
        // reorder for the tiled atom: (PermRows, PermCols), each ((perm), rest)
        let p = self.permutation_mnk;
        let t_tile = tri!(Tiler::by_mode(&[
            Some(p[modes[0] - 1]),
            Some(p[modes[1] - 1])
        ]));
        let l = &tri!(logical_divide_tiler(l, &t_tile));
        // ((atom_rows, atom_cols), (rest_rows, rest_cols))
        let zd = tri!(zipped_divide(
            l,
            &tri!(Tiler::shape(&tri!(IntTuple::from_ints(&atom_tile))))
        ));
        // ((T, V), (rest_rows, rest_cols))
        let tv = tri!(composition(&tri!(zd.get(0)), &atom_tv));
        // the rest divided among the warps: ((W_rows, W_cols), (rest', rest'))
        let v = self.thr_layout_vmnk;
        let w0 = tri!(v.get(modes[0])).size();
        let w1 = tri!(v.get(modes[1])).size();
        let rd = tri!(zipped_divide(
            &tri!(zd.get(1)),
            &tri!(Tiler::shape(&tri!(IntTuple::from_ints(&[w0, w1]))))
        ));
        // (T, (W_rows, W_cols)): its index t + 32 (w0 + W_rows w1)
        let thr = tri!(Layout::concat(&[tri!(tv.get(0)), tri!(rd.get(0))]));
        let vals = tri!(Layout::concat(&[tri!(tv.get(1)), tri!(rd.get(1))]));
        // (v, m, n, k) -> that index: the mode the operand does not use gets stride 0
        let nt = tri!(v.get(0)).size();
        let sizes = [
            nt,
            tri!(v.get(1)).size(),
            tri!(v.get(2)).size(),
            tri!(v.get(3)).size(),
        ];
        let mut strides = [1, 0, 0, 0];
        strides[modes[0]] = nt;
        strides[modes[1]] = nt * w0;
        let sel = tri!(Layout::from_parts(
            tri!(IntTuple::from_ints(&sizes)),
            &strides
        ));
        // CuTe's order: (thr o sel) o right_inverse(thr_layout_vmnk), which gives CuTe's shape
        let thr = tri!(composition(&thr, &sel));
        Ok((tri!(composition(&thr, &tri!(right_inverse(&v)))), vals))
    }
    /// CuTe's `partition_fragment_A/B/C(tensor)`: the layout of a thread's register fragment
    /// for its partition of `l` (the same for every thread), shaped `(MMA, MMA_M, MMA_K)` (A),
    /// `(MMA, MMA_N, MMA_K)` (B), `(MMA, MMA_M, MMA_N)` (C), where `MMA` is the atom's values.
    ///
    /// As CuTe makes it: C is compact column-major; A and B are `make_fragment_like` of the
    /// partition, mode 0 compact column-major and the rest modes compact in the order of their
    /// strides in `l` (so that a K-major tile gives a fragment whose `MMA_K` steps are adjacent),
    /// each rest leaf's stride the product of the sizes of mode 0 and of the rest leaves of
    /// smaller stride in `l`. A size-1 leaf has stride 0, as CuTe writes static ones.
    ///
    /// Post-condition (tested): a bijection from the fragment's coordinates onto
    /// `0..size(fragment)`, of the shape of `get_slice(t).partition(op, l)`. Errors: those of
    /// [`TiledMma::partition_modes`].
    pub const fn partition_fragment(&self, op: Operand, l: &Layout) -> Result<Layout> {
        let (_, vals) = tri!(self.partition_modes(op, l));
        let rest = tri!(vals.get(1));
        let part = tri!(Layout::concat(&[
            tri!(vals.get(0)),
            tri!(rest.get(0)),
            tri!(rest.get(1))
        ]));
        let shape = part.shape();
        let s = part.shapes();
        let d = part.strides();
        let n0 = tri!(part.get(0)).shapes().len();
        let mut out = [0i64; crate::MAX_LEAVES];
        let mut acc = 1;
        let mut i = 0;
        while i < n0 {
            let zero = matches!(op, Operand::A | Operand::B) && d[i] == 0;
            out[i] = if s[i] == 1 || zero { 0 } else { acc };
            if !zero {
                acc *= s[i];
            }
            i += 1;
        }
        let mut i = n0;
        while i < s.len() {
            if matches!(op, Operand::C) {
                out[i] = if s[i] == 1 { 0 } else { acc };
                acc *= s[i];
            } else if s[i] == 1 {
                out[i] = 0;
            } else {
                // CuTe's compact_order: the sizes of the leaves of strictly smaller order
                let mut p = 1;
                let mut j = n0;
                while j < s.len() {
                    if d[j] < d[i] {
                        p *= s[j];
                    }
                    j += 1;
                }
                out[i] = acc * p;
            }
            i += 1;
        }
        Layout::from_parts(shape, &out)
    }
    /// `partition_fragment_A`: of an `M x K` layout (see [`TiledMma::partition_fragment`]).
    pub const fn partition_fragment_a(&self, l: &Layout) -> Result<Layout> {
        self.partition_fragment(Operand::A, l)
    }
    /// `partition_fragment_B`: of an `N x K` layout.
    pub const fn partition_fragment_b(&self, l: &Layout) -> Result<Layout> {
        self.partition_fragment(Operand::B, l)
    }
    /// `partition_fragment_C`: of an `M x N` layout.
    pub const fn partition_fragment_c(&self, l: &Layout) -> Result<Layout> {
        self.partition_fragment(Operand::C, l)
    }
    /// `get_slice(tid)`: thread `tid`'s view (`Err(IndexOutOfRange)` when `tid >= threads()`).
    pub const fn get_slice(&self, tid: i64) -> Result<ThrMma> {
        if tid < 0 || tid >= self.threads() {
            return Err(LayoutError::IndexOutOfRange {
                index: tid,
                size: self.threads(),
            });
        }
        Ok(ThrMma { mma: *self, tid })
    }
}

/// One thread's view of a tiled MMA (`get_slice(tid)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThrMma {
    /// The tiled MMA.
    pub mma: TiledMma,
    /// The thread.
    pub tid: i64,
}

impl ThrMma {
    /// The thread's part of an operand tensor of layout `l`: its values
    /// `(atom_values, rest_rows, rest_cols)` (CuTe's `(MMA, MMA_M, MMA_K)` for A) and the offset
    /// of its origin.
    ///
    /// Post-condition (tested): over all threads, the C partitions cover each element of `l`
    /// exactly once (with `AK == 1`); the A partitions each element `AN` times, B `AM` times.
    pub const fn partition(&self, op: Operand, l: &Layout) -> Result<(Layout, i64)> {
        let (thr, vals) = tri!(self.mma.partition_modes(op, l));
        let rest = tri!(vals.get(1));
        let flat = tri!(Layout::concat(&[
            tri!(vals.get(0)),
            tri!(rest.get(0)),
            tri!(rest.get(1))
        ]));
        Ok((flat, thr.call(self.tid)))
    }
    /// `partition_A`: of an `M x K` layout.
    pub const fn partition_a(&self, l: &Layout) -> Result<(Layout, i64)> {
        self.partition(Operand::A, l)
    }
    /// `partition_B`: of an `N x K` layout.
    pub const fn partition_b(&self, l: &Layout) -> Result<(Layout, i64)> {
        self.partition(Operand::B, l)
    }
    /// `partition_C`: of an `M x N` layout.
    pub const fn partition_c(&self, l: &Layout) -> Result<(Layout, i64)> {
        self.partition(Operand::C, l)
    }
}
