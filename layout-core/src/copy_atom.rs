//! Copy atoms as data (ldmatrix, cp.async), tiled copies of them that match a tiled MMA
//! (`make_tiled_copy_A/B/C`), `retile`, and a model of shared-memory bank conflicts.
//!
//! A [`CopyTraits`] is one copy instruction as CuTe's `Copy_Traits<Op>` describes it, in bits:
//!
//! * `thr_id`: the atom's logical threads (`32:1` for a warp-wide ldmatrix, `1:0` for a
//!   one-thread cp.async);
//! * `src`: `(source thread, source value) -> bit` of the data the atom moves;
//! * `dst`: `(destination thread, destination value) -> bit`;
//! * `reference`: the `(thread, value)` numbering the tiled copy's TV layout is written in (for
//!   ldmatrix the destination's, for cp.async the source's).
//!
//! A bit `b` is the same datum in all three: e.g. `SM75_U32x4_LDSM_N`'s source thread `t`
//! supplies the 128 bits `128 t ..` (one 16-byte row of one of four 8x8 matrices), and its
//! destination thread `t` receives bits `32 t .. 32 t + 31` of each matrix in register `r`
//! (`+ 1024 r`). The constants carry exactly CuTe's layouts (CUTLASS
//! `cute/atom/copy_traits_sm75.hpp`, `copy_traits_sm80.hpp`, `copy_traits.hpp`); the tests
//! compare them with CuTe's strings.
//!
//! A [`CopyAtom`] is CuTe's `Copy_Atom<Op, ValType>`: the traits and an element width, with
//! the three layouts recast from bits to elements ([`recast_layout`]).
//!
//! [`make_tiled_copy_a`] (and `_b`, `_c`) is CuTe's `make_tiled_copy_A(copy_atom, tiled_mma)`:
//! the tiled copy whose TV layout is the tiled MMA's TV layout of that operand, so that what the
//! copy writes into a thread's registers is what the MMA reads from them. Partitioning a
//! shared-memory tile by it ([`AtomTiledCopy::partition_modes_s`]) gives, as `const` layouts,
//! `thread -> offset of its origin` and `copy value -> offset from the origin`; an ldmatrix lane
//! passes the address of its value `(0, x)` for atom `x`. A swizzled tile `Sw o L` is
//! partitioned through `L`, the swizzle applied to the sum.
//!
//! ```
//! use layout_core::*;
//! const MMA: TiledMma = const_ok!(make_tiled_mma(
//!     &SM80_16X8X16_F32BF16BF16F32_TN,
//!     &const_ok!(Layout::parse("(2,4)"))
//! ));
//! const LDSM: CopyAtom = const_ok!(CopyAtom::new(&SM75_U32X4_LDSM_N, 16));
//! const COPY_A: AtomTiledCopy = const_ok!(make_tiled_copy_a(&LDSM, &MMA));
//! // a 128x32 K-major bf16 tile in shared memory
//! const SMEM_A: Layout = const_ok!(Layout::parse("(128,32):(32,1)"));
//! const PART: (Layout, Layout) = const_ok!(COPY_A.partition_modes_s(&SMEM_A));
//! // lane 17's row for the first ldmatrix.x4: row 1, k 8 (matrix 2: rows 0-7, k 8-15)
//! assert_eq!(PART.0.call(17) + PART.1.call(0), 32 + 8);
//! ```

use crate::coalesce::coalesce_profile;
use crate::composition::composition;
use crate::divide::zipped_divide;
use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::inverse::right_inverse;
use crate::layout::Layout;
use crate::mma::{Operand, TiledMma};
use crate::product::logical_product;
use crate::recast::{recast_layout, upcast};
use crate::tiled_copy::mode_size;
use crate::tiler::Tiler;
use crate::tri;

/// One copy instruction as data, its layouts in bits (CuTe's `Copy_Traits<Op>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyTraits {
    /// CuTe's name, e.g. `SM75_U32x4_LDSM_N` or `SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>`.
    pub name: &'static str,
    /// The PTX instruction it issues.
    pub ptx: &'static str,
    /// Logical thread -> thread index: `32:1` (a warp) or `1:0` (one thread).
    pub thr_id: Layout,
    /// `(src thread, src value) -> bit`.
    pub src: Layout,
    /// `(dst thread, dst value) -> bit`.
    pub dst: Layout,
    /// `(thread, value) -> bit` of the reference numbering (CuTe's `RefLayout`).
    pub reference: Layout,
    /// Whether a predicated-off copy writes zeros to its destination (`cp.async` with
    /// `src-size` 0, CuTe's `_ZFILL` ops). Without it, a predicated-off copy is not issued and
    /// the destination keeps what it held.
    pub zfill: bool,
}

const fn lay(s: &str) -> Layout {
    crate::const_ok!(Layout::parse(s))
}

/// `ldmatrix.sync.aligned.x1.m8n8.shared.b16`: lanes 0-7 each give one 16-byte row; lane `t`
/// receives 32 bits.
pub const SM75_U32X1_LDSM_N: CopyTraits = CopyTraits {
    name: "SM75_U32x1_LDSM_N",
    ptx: "ldmatrix.sync.aligned.x1.m8n8.shared.b16",
    thr_id: lay("32:1"),
    src: lay("((8,4),128):((128,0),1)"),
    dst: lay("(32,32):(32,1)"),
    reference: lay("(32,32):(32,1)"),
    zfill: false,
};
/// `ldmatrix.sync.aligned.x2.m8n8.shared.b16`: lanes 0-15 give rows, two 8x8 matrices.
pub const SM75_U32X2_LDSM_N: CopyTraits = CopyTraits {
    name: "SM75_U32x2_LDSM_N",
    ptx: "ldmatrix.sync.aligned.x2.m8n8.shared.b16",
    thr_id: lay("32:1"),
    src: lay("((16,2),128):((128,0),1)"),
    dst: lay("(32,(32,2)):(32,(1,1024))"),
    reference: lay("(32,(32,2)):(32,(1,1024))"),
    zfill: false,
};
/// `ldmatrix.sync.aligned.x4.m8n8.shared.b16`: all 32 lanes give rows, four 8x8 matrices.
pub const SM75_U32X4_LDSM_N: CopyTraits = CopyTraits {
    name: "SM75_U32x4_LDSM_N",
    ptx: "ldmatrix.sync.aligned.x4.m8n8.shared.b16",
    thr_id: lay("32:1"),
    src: lay("(32,128):(128,1)"),
    dst: lay("(32,(32,4)):(32,(1,1024))"),
    reference: lay("(32,(32,4)):(32,(1,1024))"),
    zfill: false,
};
/// `ldmatrix.sync.aligned.x1.trans.m8n8.shared.b16`: one 8x8 matrix, transposed.
pub const SM75_U16X2_LDSM_T: CopyTraits = CopyTraits {
    name: "SM75_U16x2_LDSM_T",
    ptx: "ldmatrix.sync.aligned.x1.trans.m8n8.shared.b16",
    thr_id: lay("32:1"),
    src: lay("((8,4),128):((128,0),1)"),
    dst: lay("((4,8),(16,2)):((256,16),(1,128))"),
    reference: lay("((4,8),(16,2)):((256,16),(1,128))"),
    zfill: false,
};
/// `ldmatrix.sync.aligned.x2.trans.m8n8.shared.b16`: two 8x8 matrices, transposed.
pub const SM75_U16X4_LDSM_T: CopyTraits = CopyTraits {
    name: "SM75_U16x4_LDSM_T",
    ptx: "ldmatrix.sync.aligned.x2.trans.m8n8.shared.b16",
    thr_id: lay("32:1"),
    src: lay("((16,2),128):((128,0),1)"),
    dst: lay("((4,8),(16,2,2)):((256,16),(1,128,1024))"),
    reference: lay("((4,8),(16,2,2)):((256,16),(1,128,1024))"),
    zfill: false,
};
/// `ldmatrix.sync.aligned.x4.trans.m8n8.shared.b16`: four 8x8 matrices, transposed.
pub const SM75_U16X8_LDSM_T: CopyTraits = CopyTraits {
    name: "SM75_U16x8_LDSM_T",
    ptx: "ldmatrix.sync.aligned.x4.trans.m8n8.shared.b16",
    thr_id: lay("32:1"),
    src: lay("(32,128):(128,1)"),
    dst: lay("((4,8),(16,2,4)):((256,16),(1,128,1024))"),
    reference: lay("((4,8),(16,2,4)):((256,16),(1,128,1024))"),
    zfill: false,
};
/// `cp.async.cg.shared.global.L2::128B` of 16 bytes, one thread. A predicated-off copy is not
/// issued (the shared memory keeps its contents): see [`SM80_CP_ASYNC_CACHEGLOBAL_ZFILL_U128`].
pub const SM80_CP_ASYNC_CACHEGLOBAL_U128: CopyTraits = CopyTraits {
    name: "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>",
    ptx: "cp.async.cg.shared.global.L2::128B",
    thr_id: lay("1:0"),
    src: lay("(1,128):(0,1)"),
    dst: lay("(1,128):(0,1)"),
    reference: lay("(1,128):(0,1)"),
    zfill: false,
};
/// The same 16-byte `cp.async.cg` with a `src-size` operand: predicated off, it reads nothing
/// and writes 16 zero bytes (`zfill`).
pub const SM80_CP_ASYNC_CACHEGLOBAL_ZFILL_U128: CopyTraits = CopyTraits {
    name: "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>",
    ptx: "cp.async.cg.shared.global.L2::128B",
    thr_id: lay("1:0"),
    src: lay("(1,128):(0,1)"),
    dst: lay("(1,128):(0,1)"),
    reference: lay("(1,128):(0,1)"),
    zfill: true,
};
/// A plain 32-bit load or store by one thread (`UniversalCopy<uint32_t>`).
pub const UNIVERSAL_COPY_U32: CopyTraits = CopyTraits {
    name: "UniversalCopy<uint32_t>",
    ptx: "ld/st.b32",
    thr_id: lay("1:0"),
    src: lay("(1,32):(0,1)"),
    dst: lay("(1,32):(0,1)"),
    reference: lay("(1,32):(0,1)"),
    zfill: false,
};

/// Every copy atom defined here.
pub const COPY_ATOMS: [CopyTraits; 9] = [
    SM75_U32X1_LDSM_N,
    SM75_U32X2_LDSM_N,
    SM75_U32X4_LDSM_N,
    SM75_U16X2_LDSM_T,
    SM75_U16X4_LDSM_T,
    SM75_U16X8_LDSM_T,
    SM80_CP_ASYNC_CACHEGLOBAL_U128,
    SM80_CP_ASYNC_CACHEGLOBAL_ZFILL_U128,
    UNIVERSAL_COPY_U32,
];

impl CopyTraits {
    /// The atom named `name` (CuTe's spelling, with its template argument where it has one:
    /// `SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>`), if defined here.
    pub const fn by_name(name: &str) -> Option<CopyTraits> {
        let mut i = 0;
        while i < COPY_ATOMS.len() {
            if crate::mma::str_eq(COPY_ATOMS[i].name, name) {
                return Some(COPY_ATOMS[i]);
            }
            i += 1;
        }
        None
    }
    /// Threads of one atom: `size(thr_id)`.
    pub const fn threads(&self) -> i64 {
        self.thr_id.size()
    }
}

/// CuTe's `Copy_Atom<Op, ValType>`: a copy instruction and the width of the elements it moves,
/// its layouts in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyAtom {
    /// The instruction.
    pub traits: CopyTraits,
    /// Bits per element (`sizeof_bits<ValType>`).
    pub val_bits: i64,
    /// `(src thread, src value) -> element` (`ValLayoutSrc`).
    pub val_layout_src: Layout,
    /// `(dst thread, dst value) -> element` (`ValLayoutDst`).
    pub val_layout_dst: Layout,
    /// `(thread, value) -> element` (`ValLayoutRef`).
    pub val_layout_ref: Layout,
}

impl CopyAtom {
    /// `Copy_Atom<Op, T>` for elements of `val_bits` bits: each bit layout recast with
    /// `recast_layout<uint1_t, T>` (for 16-bit elements, `SM75_U32x4_LDSM_N`'s destination
    /// `(32,(32,4)):(32,(1,1024))` is `(32,(2,4)):(2,(1,64))`: 2 elements per register).
    ///
    /// Post-condition (CuTe's assertions): mode 0 of each layout has `size(thr_id)` threads,
    /// else `Err(NotDivisible)`; errors of [`recast_layout`] where an element does not fit the
    /// atom's runs of bits (e.g. 256-bit elements).
    pub const fn new(traits: &CopyTraits, val_bits: i64) -> Result<CopyAtom> {
        let src = tri!(recast_layout(1, val_bits, &traits.src));
        let dst = tri!(recast_layout(1, val_bits, &traits.dst));
        let rf = tri!(recast_layout(1, val_bits, &traits.reference));
        let n = traits.threads();
        let ls = [src, dst, rf];
        let mut i = 0;
        while i < 3 {
            let t = tri!(ls[i].get(0)).size();
            if t != n {
                return Err(LayoutError::NotDivisible { value: t, by: n });
            }
            i += 1;
        }
        Ok(CopyAtom {
            traits: *traits,
            val_bits,
            val_layout_src: src,
            val_layout_dst: dst,
            val_layout_ref: rf,
        })
    }
    /// Values per thread of the source (`NumValSrc`).
    pub const fn num_val_src(&self) -> i64 {
        match self.val_layout_src.get(1) {
            Ok(v) => v.size(),
            Err(_) => 0,
        }
    }
    /// Values per thread of the destination (`NumValDst`).
    pub const fn num_val_dst(&self) -> i64 {
        match self.val_layout_dst.get(1) {
            Ok(v) => v.size(),
            Err(_) => 0,
        }
    }
    /// Values per thread of the reference (`AtomNumVal`).
    pub const fn num_val_ref(&self) -> i64 {
        match self.val_layout_ref.get(1) {
            Ok(v) => v.size(),
            Err(_) => 0,
        }
    }
}

/// A tiled copy of a [`CopyAtom`]: CuTe's `TiledCopy<Copy_Atom, LayoutCopy_TV, Tiler_MN>`.
/// (The older [`TiledCopy`](crate::TiledCopy) is the one of a universal copy, made from thread
/// and value layouts.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomTiledCopy {
    /// The atom.
    pub atom: CopyAtom,
    /// `(thread, value) -> m + M n` over the tile, in the atom's reference numbering
    /// (`TiledLayout_TV`); an element may be held by several threads (an MMA's A and B).
    pub layout_tv: Layout,
    /// The tile `(M, N)` (`Tiler_MN`).
    pub tile: [i64; 2],
}

/// `make_tiled_copy_impl(atom, layout_tv, tile)`.
///
/// Errors: `RankMismatch` for a TV layout not of rank 2; `NotDivisible` when its threads are
/// not a multiple of the atom's, or its values of the atom's reference values (CuTe's
/// "TiledCopy uses too few thrs/vals for selected CopyAtom").
pub const fn make_tiled_copy_impl(
    atom: &CopyAtom,
    layout_tv: &Layout,
    tile: [i64; 2],
) -> Result<AtomTiledCopy> {
    if layout_tv.rank() != 2 {
        return Err(LayoutError::RankMismatch {
            expected: 2,
            found: layout_tv.rank(),
        });
    }
    let nt = tri!(layout_tv.get(0)).size();
    let nv = tri!(layout_tv.get(1)).size();
    let at = atom.traits.threads();
    let av = atom.num_val_ref();
    if nt % at != 0 {
        return Err(LayoutError::NotDivisible { value: nt, by: at });
    }
    if nv % av != 0 {
        return Err(LayoutError::NotDivisible { value: nv, by: av });
    }
    Ok(AtomTiledCopy {
        atom: *atom,
        layout_tv: *layout_tv,
        tile,
    })
}

/// `make_tiled_copy_A(copy_atom, tiled_mma)`: the tiled copy over the tiled MMA's `M x K` tile
/// of A whose TV layout is the MMA's (`layout_a_tv`): thread `t`'s destination value `v` is
/// element `layout_a_tv(t, v)`, the element the MMA reads from that register.
///
/// Post-conditions (tested): `threads() == tiled_mma.threads()`; the copy's destination values
/// of each thread, over the tile, are the elements of the thread's A fragment, value for value
/// after [`AtomTiledCopy::retile`]; the elements the threads' source values read cover the tile,
/// each `AN` times (once per warp column). Errors: those of [`make_tiled_copy_impl`].
pub const fn make_tiled_copy_a(atom: &CopyAtom, mma: &TiledMma) -> Result<AtomTiledCopy> {
    make_tiled_copy_impl(atom, &mma.layout_a_tv, mma.tile_of(Operand::A))
}

/// `make_tiled_copy_B(copy_atom, tiled_mma)`: as [`make_tiled_copy_a`], over the `N x K` tile of
/// B (each element read `AM` times).
pub const fn make_tiled_copy_b(atom: &CopyAtom, mma: &TiledMma) -> Result<AtomTiledCopy> {
    make_tiled_copy_impl(atom, &mma.layout_b_tv, mma.tile_of(Operand::B))
}

/// `make_tiled_copy_C(copy_atom, tiled_mma)`: as [`make_tiled_copy_a`], over the `M x N` tile of
/// C (each element once, with `AK == 1`).
pub const fn make_tiled_copy_c(atom: &CopyAtom, mma: &TiledMma) -> Result<AtomTiledCopy> {
    make_tiled_copy_impl(atom, &mma.layout_c_tv, mma.tile_of(Operand::C))
}

impl AtomTiledCopy {
    /// Threads (`size<0>(TiledLayout_TV)`).
    pub const fn threads(&self) -> i64 {
        mode_size(&self.layout_tv, 0)
    }
    /// Values per thread and tile (`size<1>(TiledLayout_TV)`).
    pub const fn values(&self) -> i64 {
        mode_size(&self.layout_tv, 1)
    }
    /// `right_inverse(ref) o src` (or `o dst`): an atom's `(thread, value)` of the source (the
    /// destination) -> its `(thread, value)` in the reference numbering.
    const fn ref2trg(&self, dst: bool) -> Result<Layout> {
        let a = &self.atom;
        let trg = if dst {
            a.val_layout_dst
        } else {
            a.val_layout_src
        };
        composition(&tri!(right_inverse(&a.val_layout_ref)), &trg)
    }
    /// CuTe's `tile2thrfrg`: a tensor `((tile_m, tile_n), rest)` (the tile mode indexed
    /// `m + M n`) -> `(thread, (atom_vals, atoms), rest)`.
    const fn tile2thrfrg(&self, t: &Layout, dst: bool) -> Result<Layout> {
        let a = &self.atom;
        let at = a.traits.threads();
        let av = a.num_val_ref();
        // ((atom_tid, atom_val), (rest_tid, rest_val))
        let zd = tri!(zipped_divide(
            &self.layout_tv,
            &tri!(Tiler::shape(&tri!(IntTuple::from_ints(&[at, av]))))
        ));
        let trg = tri!(composition(&tri!(zd.get(0)), &tri!(self.ref2trg(dst))));
        let rest = tri!(zd.get(1));
        let zipped = tri!(Layout::concat(&[
            tri!(Layout::concat(&[tri!(trg.get(0)), tri!(rest.get(0))])),
            tri!(Layout::concat(&[tri!(trg.get(1)), tri!(rest.get(1))])),
        ]));
        let profile = tri!(IntTuple::parse("(1,(1,1))"));
        let thrval2mn = tri!(coalesce_profile(&zipped, &profile));
        let tv = tri!(composition(&tri!(t.get(0)), &thrval2mn));
        Layout::concat(&[tri!(tv.get(0)), tri!(tv.get(1)), tri!(t.get(1))])
    }
    const fn tidfrg(&self, l: &Layout, dst: bool) -> Result<Layout> {
        if l.rank() != 2 {
            return Err(LayoutError::RankMismatch {
                expected: 2,
                found: l.rank(),
            });
        }
        let mut i = 0;
        while i < 2 {
            let size = tri!(l.get(i)).size();
            if size % self.tile[i] != 0 {
                return Err(LayoutError::NotDivisible {
                    value: size,
                    by: self.tile[i],
                });
            }
            i += 1;
        }
        let zd = tri!(zipped_divide(
            l,
            &tri!(Tiler::shape(&tri!(IntTuple::from_ints(&self.tile))))
        ));
        self.tile2thrfrg(&zd, dst)
    }
    /// CuTe's `tidfrg_S`: a rank-2 layout `l` (each mode a multiple of the tile:
    /// `Err(NotDivisible)` otherwise) -> `(thread, (atom_vals, atoms), (rest_m, rest_n))`, each
    /// thread's source values.
    pub const fn tidfrg_s(&self, l: &Layout) -> Result<Layout> {
        self.tidfrg(l, false)
    }
    /// CuTe's `tidfrg_D`: as [`AtomTiledCopy::tidfrg_s`], the destination values.
    pub const fn tidfrg_d(&self, l: &Layout) -> Result<Layout> {
        self.tidfrg(l, true)
    }
    const fn modes(&self, l: &Layout, dst: bool) -> Result<(Layout, Layout)> {
        let f = tri!(self.tidfrg(l, dst));
        let rest = tri!(f.get(2));
        Ok((
            tri!(f.get(0)),
            tri!(Layout::concat(&[
                tri!(f.get(1)),
                tri!(rest.get(0)),
                tri!(rest.get(1))
            ])),
        ))
    }
    /// Every thread's source partition of `l` in two halves: `thread -> offset of its origin`,
    /// and `((atom_vals, atoms), rest_m, rest_n) -> offset from the origin` (CuTe's
    /// `(CPY, CPY_M, CPY_N)`), the same for all threads. Value `(i, x)` of mode 0 is value `i` of
    /// atom `x`: an ldmatrix lane passes the address of `(0, x)`.
    pub const fn partition_modes_s(&self, l: &Layout) -> Result<(Layout, Layout)> {
        self.modes(l, false)
    }
    /// As [`AtomTiledCopy::partition_modes_s`], the destination partition.
    pub const fn partition_modes_d(&self, l: &Layout) -> Result<(Layout, Layout)> {
        self.modes(l, true)
    }
    /// `get_slice(tid).partition_S(l)`: thread `tid`'s source values and its origin
    /// (`Err(IndexOutOfRange)` for `tid` outside `0..threads()`).
    pub const fn partition_s(&self, l: &Layout, tid: i64) -> Result<(Layout, i64)> {
        tri!(self.check_tid(tid));
        let (thr, vals) = tri!(self.modes(l, false));
        Ok((vals, thr.call(tid)))
    }
    /// `get_slice(tid).partition_D(l)`: the destination values.
    pub const fn partition_d(&self, l: &Layout, tid: i64) -> Result<(Layout, i64)> {
        tri!(self.check_tid(tid));
        let (thr, vals) = tri!(self.modes(l, true));
        Ok((vals, thr.call(tid)))
    }
    const fn check_tid(&self, tid: i64) -> Result<()> {
        if tid < 0 || tid >= self.threads() {
            return Err(LayoutError::IndexOutOfRange {
                index: tid,
                size: self.threads(),
            });
        }
        Ok(())
    }
    const fn layout_tv_of(&self, dst: bool) -> Result<Layout> {
        let [m, n] = self.tile;
        let mn = tri!(Layout::col_major(tri!(IntTuple::from_ints(&[m, n]))));
        let r = tri!(Layout::concat(&[mn, tri!(Layout::int(1, 0))]));
        let f = tri!(self.tile2thrfrg(&r, dst));
        Layout::concat(&[tri!(f.get(0)), tri!(f.get(1))])
    }
    /// CuTe's `get_layoutS_TV`: `(thread, (atom_vals, atoms)) -> m + M n`, the tile element of
    /// each source value.
    pub const fn layout_s_tv(&self) -> Result<Layout> {
        self.layout_tv_of(false)
    }
    /// CuTe's `get_layoutD_TV`: the tile element of each destination value.
    pub const fn layout_d_tv(&self) -> Result<Layout> {
        self.layout_tv_of(true)
    }
    /// CuTe's `retile`: a thread's register fragment `l` (rank `R`, mode 0 its `V` values per
    /// MMA, e.g. [`TiledMma::partition_fragment_a`]) seen in the copy's value order,
    /// `((atom_vals, atoms), rest...)`: value `(i, x)` of the result is the register that value
    /// `i` of copy atom `x` writes (its destination value).
    ///
    /// Post-condition (tested): for every thread, `partition_d` of the tile and `retile` of the
    /// MMA's fragment name the same elements, value for value. Errors: `RankMismatch` for `l` not
    /// of rank 3; the algebra's where the fragment does not tile as the copy needs.
    pub const fn retile(&self, l: &Layout) -> Result<Layout> {
        if l.rank() != 3 {
            return Err(LayoutError::RankMismatch {
                expected: 3,
                found: l.rank(),
            });
        }
        let v = tri!(l.get(0)).size();
        let nt = self.threads();
        let [m, n] = self.tile;
        // (m, n) -> the group of V values within TiledLayout_TV
        let mn = tri!(Layout::col_major(tri!(IntTuple::from_ints(&[m, n]))));
        let rinv = tri!(composition(&tri!(right_inverse(&self.layout_tv)), &mn));
        let frg_mn = tri!(upcast(&rinv, nt * v));
        // (atom_vals, rest_vals) -> (v, m, n)
        let vl = tri!(Layout::int(v, 1));
        let frg_v = tri!(zipped_divide(
            &tri!(logical_product(&vl, &tri!(right_inverse(&frg_mn)))),
            &Tiler::layout(tri!(Layout::int(self.atom.num_val_ref(), 1)))
        ));
        // tile the fragment by (V, tile of frg_mn)
        let pm = tri!(frg_mn.get(0)).size();
        let pn = tri!(frg_mn.get(1)).size();
        let tiler = tri!(IntTuple::from_ints(&[v, pm, pn]));
        let t = tri!(zipped_divide(l, &tri!(Tiler::shape(&tiler))));
        let vt = tri!(composition(&tri!(t.get(0)), &frg_v));
        // slice the rest at (0, _, _): its mode 0 has size 1
        let rest = tri!(t.get(1));
        let mut out = tri!(Layout::concat(&[vt]));
        let mut k = 1;
        while k < rest.rank() {
            tri!(out.push(&tri!(rest.get(k))));
            k += 1;
        }
        Ok(out)
    }
}

/// Shared-memory wavefronts of one warp-wide access, on 32 banks of 4 bytes: `addrs[i]` is the
/// byte address thread `i` accesses, each access `access_bytes` wide (4, 8 or 16).
///
/// The model: the warp's accesses are served in phases of `128 / access_bytes` consecutive
/// threads (all 32 for 4 bytes, 16 for 8, 8 for 16 — for ldmatrix, each 8-lane group that gives
/// the 8 rows of one matrix). Within a phase, a bank serves one 4-byte word per wavefront (the
/// same word to several threads is one broadcast); the phase needs as many wavefronts as the
/// bank with the most distinct words. The result is the sum over the phases; the conflict-free
/// minimum is the number of phases, and the result divided by it is the conflict degree. For an
/// ldmatrix `.x1` / `.x2` / `.x4`, pass the 8 / 16 / 32 lanes that give addresses.
///
/// Errors: `UnsupportedAtom` for another width; `NotDivisible` for an address not aligned to
/// the width; `NegativeStride` for a negative address; `Capacity` for more than 32 threads.
pub const fn smem_wavefronts(addrs: &[i64], access_bytes: i64) -> Result<i64> {
    if !(access_bytes == 4 || access_bytes == 8 || access_bytes == 16) {
        return Err(LayoutError::UnsupportedAtom {
            bits: access_bytes * 8,
        });
    }
    if addrs.len() > 32 {
        return Err(LayoutError::Capacity);
    }
    let per_phase = (128 / access_bytes) as usize;
    let words = (access_bytes / 4) as usize;
    let mut total = 0;
    let mut p0 = 0;
    while p0 < addrs.len() {
        let end = if p0 + per_phase < addrs.len() {
            p0 + per_phase
        } else {
            addrs.len()
        };
        // the distinct words seen, per bank (at most 32 words per phase)
        let mut seen = [[-1i64; 32]; 32];
        let mut count = [0usize; 32];
        let mut i = p0;
        while i < end {
            let a = addrs[i];
            if a < 0 {
                return Err(LayoutError::NegativeStride { value: a });
            }
            if a % access_bytes != 0 {
                return Err(LayoutError::NotDivisible {
                    value: a,
                    by: access_bytes,
                });
            }
            let mut w = 0;
            while w < words {
                let word = a / 4 + w as i64;
                let bank = (word % 32) as usize;
                let mut k = 0;
                let mut dup = false;
                while k < count[bank] {
                    if seen[bank][k] == word {
                        dup = true;
                    }
                    k += 1;
                }
                if !dup {
                    seen[bank][count[bank]] = word;
                    count[bank] += 1;
                }
                w += 1;
            }
            i += 1;
        }
        let mut most = 0;
        let mut b = 0;
        while b < 32 {
            if count[b] > most {
                most = count[b];
            }
            b += 1;
        }
        total += most as i64;
        p0 = end;
    }
    Ok(total)
}
