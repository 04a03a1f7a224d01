//! Hopper's warpgroup MMA (`wgmma.mma_async`, CuTe's GMMA) as data: the atoms, the
//! shared-memory matrix descriptor, and the swizzle modes that TMA and wgmma must agree on.
//!
//! # Atoms
//!
//! A [`GmmaAtom`] is one `wgmma.mma_async.m64nNk16` as CuTe's `MMA_Traits<SM90_64xNx16_...>`
//! describe it (CUTLASS `cute/atom/mma_traits_sm90_gmma.hpp`, the N of `_ext.hpp` included):
//! 128 threads (a warpgroup, `ThrID = 128:1`) and, as for the SM80 atoms ([`MmaAtom`]), three
//! layouts `(thread, value) -> index` into the column-major operand tiles:
//!
//! * C (`CLayout_64xN`): `((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))`, each of the `64 N`
//!   accumulators owned by exactly one `(thread, value)`;
//! * A and B of an `_SS` atom live in shared memory and are read through a descriptor, so CuTe
//!   gives every thread the whole tile (`ABLayout<M,K>`): `(128,(M,K)):(0,(1,M))`;
//! * A of an `_RS` atom is in registers (`ALayout_64x16`, the layout of C for `N = 16`).
//!
//! Because a GMMA atom's `mma` is an ordinary [`MmaAtom`], `make_tiled_mma` tiles it over
//! warpgroups as it tiles the SM80 atoms over warps.
//!
//! # Descriptors
//!
//! A [`GmmaDescriptor`] is the 64-bit matrix descriptor wgmma reads an operand in shared memory
//! through (PTX ISA, "Matrix Descriptor Format"; CuTe's `GmmaDescriptor`): start address, leading
//! byte offset (LBO) and stride byte offset (SBO), each in 16-byte units in 14 bits, a 3-bit
//! base offset and a 2-bit layout type (the swizzle). [`make_gmma_desc`] computes it from a tessel
//! shared-memory layout, as CuTe's `make_gmma_desc<Major>` does, and then checks it: the
//! canonical layout the hardware reads through the descriptor must put every element of the
//! `MN x K` block exactly where the given layout does.
//!
//! # Units
//!
//! tessel's swizzled layouts `Sw<B,M,S> o L` count in elements. The hardware swizzles are
//! defined on byte addresses: a `16 * 2^B`-byte swizzle XORs address bits `[4, 4+B)` with bits
//! `[7, 7+B)`, which is `Sw<B,4,3>` in bytes. In elements of `w` bits that is
//! `Sw<B, 7 - log2(w), 3>`: for 16-bit elements CuTe's 128-byte swizzle `Sw<3,4,3>` (bytes) is
//! `Sw<3,3,3>`, for 32-bit `Sw<3,2,3>`, for 8-bit `Sw<3,4,3>`. ([`SwizzleMode::from_swizzle`]
//! and [`SwizzleMode::swizzle`] convert.) CuTe keeps the byte form inside its
//! `smem_ptr_flag` layouts; tessel keeps one unit, the element, everywhere.

use crate::error::{LayoutError, Result};
use crate::int_tuple::IntTuple;
use crate::layout::Layout;
use crate::mma::{str_eq, MmaAtom, MmaType};
use crate::swizzle::{ComposedLayout, Swizzle};
use crate::tri;
use core::fmt;

/// Where a GMMA atom reads A from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GmmaSource {
    /// `_SS`: A and B in shared memory, each through a [`GmmaDescriptor`].
    SS,
    /// `_RS`: A in registers (4 registers of two 16-bit values per thread), B in shared memory.
    RS,
}

/// One `wgmma.mma_async` instruction as data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GmmaAtom {
    /// The MMA as CuTe's traits give it: `name` (e.g. `SM90_64x128x16_F32BF16BF16_SS`),
    /// `shape_mnk = (64, N, 16)`, `thr_id = 128:1`, and the layouts `a`, `b`, `c`.
    pub mma: MmaAtom,
    /// Where A comes from.
    pub source: GmmaSource,
    /// The PTX instruction, e.g. `wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16`.
    pub ptx: &'static str,
}

const fn lay_parts(shape: &str, leaves: &[i64], strides: &[i64]) -> Layout {
    let s = crate::const_ok!(IntTuple::parse(shape)).with_leaves(leaves);
    crate::const_ok!(Layout::from_parts(s, strides))
}

/// CuTe's `CLayout_64xN`: `((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))`. Thread `t` = lane `l`
/// of warp `w`: rows `16 w + l / 4 (+ 8)`, columns `2 (l % 4) (+ 1) (+ 8 j)`.
pub const fn gmma_c_layout(n: i64) -> Layout {
    lay_parts(
        "((4,8,4),(2,2,1))",
        &[4, 8, 4, 2, 2, n / 8],
        &[128, 1, 16, 64, 8, 512],
    )
}

/// CuTe's `ABLayout<MN,K>`: `(128,(MN,K)):(0,(1,MN))`, the whole operand tile for every thread
/// of the warpgroup (the operand is read from shared memory by the hardware).
pub const fn gmma_ab_layout(mn: i64, k: i64) -> Layout {
    lay_parts("(128,(1,1))", &[128, mn, k], &[0, 1, mn])
}

/// CuTe's `ALayout_64x16`: A of 16-bit `_RS` atoms in registers,
/// `((4,8,4),(2,2,2)):((128,1,16),(64,8,512))`.
pub const GMMA_A_REG_64X16: Layout = lay_parts(
    "((4,8,4),(2,2,2))",
    &[4, 8, 4, 2, 2, 2],
    &[128, 1, 16, 64, 8, 512],
);

/// The canonical layout of the fields (checked: a layout refused by `from_parts` is an error,
/// not a panic).
const fn canonical(shape: &str, leaves: &[i64], strides: &[i64]) -> Result<Layout> {
    let s = tri!(IntTuple::parse(shape)).with_leaves(leaves);
    Layout::from_parts(s, strides)
}

const WARPGROUP: Layout = lay_parts("128", &[128], &[1]);

const fn gmma(
    n: i64,
    ab: MmaType,
    source: GmmaSource,
    name: &'static str,
    ptx: &'static str,
) -> GmmaAtom {
    GmmaAtom {
        mma: MmaAtom {
            name,
            shape_mnk: [64, n, 16],
            thr_id: WARPGROUP,
            a: match source {
                GmmaSource::SS => gmma_ab_layout(64, 16),
                GmmaSource::RS => GMMA_A_REG_64X16,
            },
            b: gmma_ab_layout(n, 16),
            c: gmma_c_layout(n),
            types: [MmaType::F32, ab, ab, MmaType::F32],
        },
        source,
        ptx,
    }
}

macro_rules! gmma_atom {
    ($n:literal, BF16, $src:ident) => {
        gmma(
            $n,
            MmaType::BF16,
            GmmaSource::$src,
            concat!(
                "SM90_64x",
                stringify!($n),
                "x16_F32BF16BF16_",
                stringify!($src)
            ),
            concat!(
                "wgmma.mma_async.sync.aligned.m64n",
                stringify!($n),
                "k16.f32.bf16.bf16"
            ),
        )
    };
    ($n:literal, F16, $src:ident) => {
        gmma(
            $n,
            MmaType::F16,
            GmmaSource::$src,
            concat!(
                "SM90_64x",
                stringify!($n),
                "x16_F32F16F16_",
                stringify!($src)
            ),
            concat!(
                "wgmma.mma_async.sync.aligned.m64n",
                stringify!($n),
                "k16.f32.f16.f16"
            ),
        )
    };
}

macro_rules! gmma_table {
    ($($n:literal)*) => {
        [$(
            gmma_atom!($n, BF16, SS),
            gmma_atom!($n, BF16, RS),
            gmma_atom!($n, F16, SS),
            gmma_atom!($n, F16, RS),
        )*]
    };
}

/// Every GMMA atom defined here: `SM90_64xNx16_F32{BF16BF16,F16F16}_{SS,RS}` for `N` in
/// `8, 16, ..., 256` (CuTe's eight usual N and those of `mma_traits_sm90_gmma_ext.hpp`).
pub static GMMA_ATOMS: [GmmaAtom; 128] = gmma_table!(
    8 16 24 32 40 48 56 64 72 80 88 96 104 112 120 128
    136 144 152 160 168 176 184 192 200 208 216 224 232 240 248 256
);

/// `SM90_64x64x16_F32BF16BF16_SS`.
pub const SM90_64X64X16_F32BF16BF16_SS: GmmaAtom = gmma_atom!(64, BF16, SS);
/// `SM90_64x128x16_F32BF16BF16_SS`.
pub const SM90_64X128X16_F32BF16BF16_SS: GmmaAtom = gmma_atom!(128, BF16, SS);
/// `SM90_64x256x16_F32BF16BF16_SS`.
pub const SM90_64X256X16_F32BF16BF16_SS: GmmaAtom = gmma_atom!(256, BF16, SS);
/// `SM90_64x64x16_F32F16F16_SS`.
pub const SM90_64X64X16_F32F16F16_SS: GmmaAtom = gmma_atom!(64, F16, SS);
/// `SM90_64x128x16_F32F16F16_SS`.
pub const SM90_64X128X16_F32F16F16_SS: GmmaAtom = gmma_atom!(128, F16, SS);
/// `SM90_64x256x16_F32F16F16_SS`.
pub const SM90_64X256X16_F32F16F16_SS: GmmaAtom = gmma_atom!(256, F16, SS);
/// `SM90_64x64x16_F32BF16BF16_RS`.
pub const SM90_64X64X16_F32BF16BF16_RS: GmmaAtom = gmma_atom!(64, BF16, RS);
/// `SM90_64x128x16_F32BF16BF16_RS`.
pub const SM90_64X128X16_F32BF16BF16_RS: GmmaAtom = gmma_atom!(128, BF16, RS);
/// `SM90_64x256x16_F32BF16BF16_RS`.
pub const SM90_64X256X16_F32BF16BF16_RS: GmmaAtom = gmma_atom!(256, BF16, RS);
/// `SM90_64x64x16_F32F16F16_RS`.
pub const SM90_64X64X16_F32F16F16_RS: GmmaAtom = gmma_atom!(64, F16, RS);
/// `SM90_64x128x16_F32F16F16_RS`.
pub const SM90_64X128X16_F32F16F16_RS: GmmaAtom = gmma_atom!(128, F16, RS);
/// `SM90_64x256x16_F32F16F16_RS`.
pub const SM90_64X256X16_F32F16F16_RS: GmmaAtom = gmma_atom!(256, F16, RS);

impl GmmaAtom {
    /// The atom named `name` (CuTe's spelling, e.g. `SM90_64x128x16_F32BF16BF16_SS`), if defined
    /// here.
    pub const fn by_name(name: &str) -> Option<GmmaAtom> {
        let mut i = 0;
        while i < GMMA_ATOMS.len() {
            if str_eq(GMMA_ATOMS[i].mma.name, name) {
                return Some(GMMA_ATOMS[i]);
            }
            i += 1;
        }
        None
    }
}

/// Which mode of an operand tile is contiguous in 16-byte chunks: K (CuTe's `GMMA::Major::K`,
/// wgmma's `imm-trans = 0`) or M/N (`Major::MN`, `imm-trans = 1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GmmaMajor {
    /// K-major: the rows of the `MN x K` tile are contiguous.
    K,
    /// M- or N-major: the columns are contiguous.
    MN,
}

impl GmmaMajor {
    /// `K` or `MN`.
    pub const fn name(self) -> &'static str {
        match self {
            GmmaMajor::K => "K",
            GmmaMajor::MN => "MN",
        }
    }
}

/// A shared-memory swizzle mode of the hardware: the 16-byte chunks of each `16 * 2^B`-byte row
/// XORed with the row index mod `2^B` (`Sw<B,4,3>` on byte addresses), or none.
///
/// The TMA (`CUtensorMapSwizzle`) and wgmma (the descriptor's layout type) number these
/// differently; [`SwizzleMode::tma_code`] and [`SwizzleMode::gmma_layout_type`] give each, and
/// [`check_swizzle_codes`] refuses a pair that disagrees.
///
/// | mode   | bytes (CuTe) | 16-bit elements | TMA code | GMMA layout type |
/// |--------|--------------|-----------------|----------|------------------|
/// | `None` | `Sw<0,4,3>`  | `Sw<0,3,3>`     | 0 `SWIZZLE_NONE` | 0 `INTERLEAVE` |
/// | `B32`  | `Sw<1,4,3>`  | `Sw<1,3,3>`     | 1 `SWIZZLE_32B`  | 3 `B32`  |
/// | `B64`  | `Sw<2,4,3>`  | `Sw<2,3,3>`     | 2 `SWIZZLE_64B`  | 2 `B64`  |
/// | `B128` | `Sw<3,4,3>`  | `Sw<3,3,3>`     | 3 `SWIZZLE_128B` | 1 `B128` |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwizzleMode {
    /// No swizzle (TMA `SWIZZLE_NONE`, GMMA `INTERLEAVE`).
    None,
    /// 32-byte swizzle.
    B32,
    /// 64-byte swizzle.
    B64,
    /// 128-byte swizzle.
    B128,
}

/// `log2(w)` for a power of two `1 <= w <= 128`, else `None`.
const fn log2_elem(w: i64) -> Option<i64> {
    let mut l = 0;
    while l <= 7 {
        if w == 1 << l {
            return Some(l);
        }
        l += 1;
    }
    None
}

impl SwizzleMode {
    /// `B` of `Sw<B,4,3>`: 0, 1, 2, 3.
    pub const fn bits(self) -> i64 {
        match self {
            SwizzleMode::None => 0,
            SwizzleMode::B32 => 1,
            SwizzleMode::B64 => 2,
            SwizzleMode::B128 => 3,
        }
    }
    /// The swizzled row in bytes (32, 64, 128), and 16 for `None` (one 16-byte chunk: CuTe's
    /// INTERLEAVE atom rows).
    pub const fn row_bytes(self) -> i64 {
        16 << self.bits()
    }
    /// The mode whose `B` is `b`.
    pub const fn from_bits(b: i64) -> Option<SwizzleMode> {
        match b {
            0 => Some(SwizzleMode::None),
            1 => Some(SwizzleMode::B32),
            2 => Some(SwizzleMode::B64),
            3 => Some(SwizzleMode::B128),
            _ => None,
        }
    }
    /// The mode of tessel's swizzle `sw`, counted in elements of `elem_bits` bits: any `Sw<0,M,S>`
    /// (the identity) is `None`; otherwise `Sw<B,M,3>` with `1 <= B <= 3` and
    /// `M + log2(elem_bits) == 7` (16-byte units). So `Sw<3,3,3>` is `B128` for 16-bit elements,
    /// and `B64` is `Sw<2,2,3>` for 32-bit ones.
    ///
    /// Errors: `UnsupportedSwizzle` for any other swizzle (e.g. `Sw<3,4,3>` over 16-bit
    /// elements: 32-byte units, which neither TMA nor wgmma has) or an element width that is not
    /// a power of two from 1 to 128.
    pub const fn from_swizzle(sw: &Swizzle, elem_bits: i64) -> Result<SwizzleMode> {
        let (b, m, s) = sw.params();
        let bad = LayoutError::UnsupportedSwizzle {
            bits: b as i64,
            base: m as i64,
            shift: s as i64,
            elem_bits,
        };
        let lg = match log2_elem(elem_bits) {
            Some(l) => l,
            None => return Err(bad),
        };
        if b == 0 {
            return Ok(SwizzleMode::None);
        }
        if m as i64 + lg != 7 || s != 3 {
            return Err(bad);
        }
        match SwizzleMode::from_bits(b as i64) {
            Some(x) => Ok(x),
            None => Err(bad),
        }
    }
    /// tessel's swizzle of this mode over elements of `elem_bits` bits: `Sw<B, 7 - log2(w), 3>`
    /// (`None` gives the identity `Sw<0, 7 - log2(w), 3>`).
    ///
    /// Post-condition (tested): `from_swizzle(&self.swizzle(w)?, w) == Ok(self)`. Errors:
    /// `UnsupportedSwizzle` for an element width that is not a power of two from 1 to 128.
    pub const fn swizzle(self, elem_bits: i64) -> Result<Swizzle> {
        match log2_elem(elem_bits) {
            Some(lg) => Swizzle::new(self.bits(), 7 - lg, 3),
            None => Err(LayoutError::UnsupportedSwizzle {
                bits: self.bits(),
                base: -1,
                shift: 3,
                elem_bits,
            }),
        }
    }
    /// `CUtensorMapSwizzle`: `CU_TENSOR_MAP_SWIZZLE_NONE = 0`, `_32B = 1`, `_64B = 2`,
    /// `_128B = 3` (CuTe's `TMA::SmemSwizzleBits` has the same values).
    pub const fn tma_code(self) -> i64 {
        self.bits()
    }
    /// The descriptor's layout type: `INTERLEAVE = 0`, `B128 = 1`, `B64 = 2`, `B32 = 3` (CuTe's
    /// `GMMA::LayoutType`; PTX: "0 no swizzle, 1 128B, 2 64B, 3 32B"): the reverse of the TMA's
    /// order for the swizzled modes.
    pub const fn gmma_layout_type(self) -> i64 {
        match self {
            SwizzleMode::None => 0,
            SwizzleMode::B128 => 1,
            SwizzleMode::B64 => 2,
            SwizzleMode::B32 => 3,
        }
    }
    /// The mode of a `CUtensorMapSwizzle` value. Errors: `UnknownSwizzleCode` for anything but
    /// 0 to 3 (4 to 6 are Blackwell's 128-byte swizzles of 32- and 64-byte atoms, which wgmma
    /// cannot read).
    pub const fn from_tma_code(code: i64) -> Result<SwizzleMode> {
        match SwizzleMode::from_bits(code) {
            Some(m) => Ok(m),
            None => Err(LayoutError::UnknownSwizzleCode { code, gmma: false }),
        }
    }
    /// The mode of a descriptor layout type. Errors: `UnknownSwizzleCode` outside 0 to 3.
    pub const fn from_gmma_layout_type(code: i64) -> Result<SwizzleMode> {
        match code {
            0 => Ok(SwizzleMode::None),
            1 => Ok(SwizzleMode::B128),
            2 => Ok(SwizzleMode::B64),
            3 => Ok(SwizzleMode::B32),
            _ => Err(LayoutError::UnknownSwizzleCode { code, gmma: true }),
        }
    }
    /// CuTe's names: `INTERLEAVE`, `B32`, `B64`, `B128`.
    pub const fn name(self) -> &'static str {
        match self {
            SwizzleMode::None => "INTERLEAVE",
            SwizzleMode::B32 => "B32",
            SwizzleMode::B64 => "B64",
            SwizzleMode::B128 => "B128",
        }
    }
    /// The `CUtensorMapSwizzle` enumerator's name.
    pub const fn tma_name(self) -> &'static str {
        match self {
            SwizzleMode::None => "CU_TENSOR_MAP_SWIZZLE_NONE",
            SwizzleMode::B32 => "CU_TENSOR_MAP_SWIZZLE_32B",
            SwizzleMode::B64 => "CU_TENSOR_MAP_SWIZZLE_64B",
            SwizzleMode::B128 => "CU_TENSOR_MAP_SWIZZLE_128B",
        }
    }
}

/// Checks that a TMA swizzle code (`CUtensorMapSwizzle`, which writes the tile) and a GMMA
/// descriptor layout type (which reads it) name the same swizzle, and returns it.
///
/// Errors: `UnknownSwizzleCode` for a code outside either enum's 0 to 3; `SwizzleMismatch
/// { tma, gmma }` when both are valid and differ, e.g. `(3, 3)`: TMA `SWIZZLE_128B` but GMMA `B32`
/// (the mistake of passing one enum's number for the other's).
pub const fn check_swizzle_codes(tma: i64, gmma: i64) -> Result<SwizzleMode> {
    let t = tri!(SwizzleMode::from_tma_code(tma));
    let g = tri!(SwizzleMode::from_gmma_layout_type(gmma));
    if t.bits() != g.bits() {
        return Err(LayoutError::SwizzleMismatch { tma, gmma });
    }
    Ok(t)
}

/// CuTe's canonical GMMA layout atom (`GMMA::Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom<T>`) in
/// elements of `elem_bits` bits: 8 rows of `row_bytes` bytes, K-major `(8, R):(R, 1)` or
/// MN-major `(R, 8):(1, R)` with `R = 8 row_bytes / elem_bits`, under `mode.swizzle(elem_bits)`.
/// E.g. `B128`, `K`, 16 bits: `Sw<3,3,3> o (8,64):(64,1)`. `tile_to_shape` of its layout gives
/// the tiles [`make_gmma_desc`] describes.
///
/// Errors: `UnsupportedSwizzle` for a width that is not a power of two from 1 to 128, or wider
/// than a row.
pub const fn gmma_layout_atom(
    mode: SwizzleMode,
    major: GmmaMajor,
    elem_bits: i64,
) -> Result<ComposedLayout> {
    let sw = tri!(mode.swizzle(elem_bits));
    let r = mode.row_bytes() * 8 / elem_bits;
    if r < 1 {
        return Err(LayoutError::UnsupportedSwizzle {
            bits: mode.bits(),
            base: -1,
            shift: 3,
            elem_bits,
        });
    }
    let l = match major {
        GmmaMajor::K => lay_parts("(1,1)", &[8, r], &[r, 1]),
        GmmaMajor::MN => lay_parts("(1,1)", &[r, 8], &[1, r]),
    };
    ComposedLayout::new(sw, l)
}

/// The 64-bit shared-memory matrix descriptor of `wgmma.mma_async` (CuTe's `GmmaDescriptor`):
///
/// | bits    | field |
/// |---------|-------|
/// | 0-13    | start address `>> 4` |
/// | 16-29   | leading dimension byte offset (LBO) `>> 4` |
/// | 32-45   | stride dimension byte offset (SBO) `>> 4` |
/// | 49-51   | base offset |
/// | 62-63   | layout type (`SwizzleMode::gmma_layout_type`) |
///
/// The other bits are 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GmmaDescriptor {
    /// The descriptor as the instruction takes it.
    pub desc: u64,
}

const FIELD_14: i64 = (1 << 14) - 1;

impl GmmaDescriptor {
    /// The descriptor of the given fields, each in its hardware unit (addresses and offsets in
    /// 16 bytes). Errors: `NotGmmaLayout` when a field does not fit (14 bits; 3 for the base
    /// offset) or is negative.
    pub const fn new(
        start_address: i64,
        leading_byte_offset: i64,
        stride_byte_offset: i64,
        base_offset: i64,
        mode: SwizzleMode,
    ) -> Result<Self> {
        if start_address < 0 || start_address > FIELD_14 {
            return Err(LayoutError::NotGmmaLayout {
                what: "the start address is outside shared memory's 256 KiB (14 bits of 16 bytes)",
            });
        }
        if leading_byte_offset < 0 || leading_byte_offset > FIELD_14 {
            return Err(LayoutError::NotGmmaLayout {
                what: "the leading byte offset is negative or does not fit 14 bits of 16 bytes",
            });
        }
        if stride_byte_offset < 0 || stride_byte_offset > FIELD_14 {
            return Err(LayoutError::NotGmmaLayout {
                what: "the stride byte offset is negative or does not fit 14 bits of 16 bytes",
            });
        }
        if base_offset < 0 || base_offset > 7 {
            return Err(LayoutError::NotGmmaLayout {
                what: "the base offset has 3 bits",
            });
        }
        Ok(Self {
            desc: (start_address as u64)
                | (leading_byte_offset as u64) << 16
                | (stride_byte_offset as u64) << 32
                | (base_offset as u64) << 49
                | (mode.gmma_layout_type() as u64) << 62,
        })
    }
    /// Start address `>> 4` (bits 0-13).
    pub const fn start_address(&self) -> i64 {
        (self.desc & FIELD_14 as u64) as i64
    }
    /// Leading dimension byte offset `>> 4` (bits 16-29).
    pub const fn leading_byte_offset(&self) -> i64 {
        ((self.desc >> 16) & FIELD_14 as u64) as i64
    }
    /// Stride dimension byte offset `>> 4` (bits 32-45).
    pub const fn stride_byte_offset(&self) -> i64 {
        ((self.desc >> 32) & FIELD_14 as u64) as i64
    }
    /// Base offset (bits 49-51).
    pub const fn base_offset(&self) -> i64 {
        ((self.desc >> 49) & 7) as i64
    }
    /// Layout type (bits 62-63): 0 INTERLEAVE, 1 B128, 2 B64, 3 B32.
    pub const fn layout_type(&self) -> i64 {
        (self.desc >> 62) as i64
    }
    /// The swizzle the layout type names.
    pub const fn swizzle_mode(&self) -> SwizzleMode {
        match SwizzleMode::from_gmma_layout_type(self.layout_type()) {
            Ok(m) => m,
            Err(_) => SwizzleMode::None, // 2 bits: every value is a mode
        }
    }
    /// The shared-memory byte address from which `wgmma` reads element `(mn, k)` (`k` in
    /// `0..256 / elem_bits`, the K of one instruction) of the `MN x K` operand this descriptor
    /// describes, `major` its major-ness: a model of the hardware written from the PTX ISA's
    /// description of the canonical layouts in bytes, independent of [`make_gmma_desc_k`]'s
    /// derivation from a layout (the `gmma` tests check that the two agree).
    ///
    /// Core matrices of 8 rows of 16 bytes; for a swizzled mode (`W = 2^B` 16-byte chunks per
    /// row) rows of `R = 16 W` bytes, 8 of them in a repeat, and the 16-byte chunk index
    /// (address bits 4..) XORed with the row index within the repeat (address bits 7..), on the
    /// absolute address, as the hardware does (which is why swizzled tiles start on a multiple
    /// of `8 R` bytes). In 16-byte units `T = 128 / elem_bits` elements:
    ///
    /// - K-major, INTERLEAVE: core matrix `(mn / 8, k / T)`, SBO steps MN, LBO steps K;
    /// - K-major, swizzled: `start + (mn / 8) SBO + (mn % 8) R + k elem_bytes`;
    /// - MN-major, INTERLEAVE: core matrices of 8 k-rows of `T` mn-elements, SBO steps MN, LBO K;
    /// - MN-major, swizzled: rows of `R` bytes along MN, one per k; LBO steps `T W` of MN, SBO
    ///   steps 8 of K.
    ///
    /// The base offset is taken as 0 (tessel's descriptors, as CuTe's, set it so).
    pub const fn hardware_address(&self, major: GmmaMajor, elem_bits: i64, mn: i64, k: i64) -> i64 {
        let eb = elem_bits / 8; // bytes per element
        let t = 16 / eb; // elements per 16 bytes
        let start = 16 * self.start_address();
        let (lbo, sbo) = (
            16 * self.leading_byte_offset(),
            16 * self.stride_byte_offset(),
        );
        // log2 of the 16-byte chunks per swizzled row, by layout type: INTERLEAVE, B128, B64, B32
        let bits = match self.layout_type() {
            0 => 0,
            1 => 3,
            2 => 2,
            _ => 1,
        };
        let ww = 1 << bits;
        let r = 16 * ww;
        let addr = match (major, bits) {
            (GmmaMajor::K, 0) => {
                start + (mn / 8) * sbo + (k / t) * lbo + (mn % 8) * 16 + (k % t) * eb
            }
            (GmmaMajor::K, _) => start + (mn / 8) * sbo + (mn % 8) * r + k * eb,
            (GmmaMajor::MN, 0) => {
                start + (mn / t) * sbo + (k / 8) * lbo + (k % 8) * 16 + (mn % t) * eb
            }
            (GmmaMajor::MN, _) => {
                start + (mn / (t * ww)) * lbo + (k / 8) * sbo + (k % 8) * r + (mn % (t * ww)) * eb
            }
        };
        addr ^ (((addr >> 7) & (ww - 1)) << 4)
    }
    /// The same descriptor `bytes` further on (CuTe's `DescriptorIterator + offset`, which adds
    /// `bytes / 16` to the low word): how a kernel steps to the next k-block or stage, or places
    /// a tile that [`make_gmma_desc`] described at address 0 at its shared-memory address.
    ///
    /// Errors: `NotGmmaLayout` when `bytes` is not a multiple of 16 or the start address leaves
    /// its 14 bits (CuTe's 32-bit add would carry into the LBO silently).
    pub const fn offset_by_bytes(&self, bytes: i64) -> Result<Self> {
        if bytes % 16 != 0 {
            return Err(LayoutError::NotGmmaLayout {
                what: "a descriptor moves in steps of 16 bytes",
            });
        }
        let start = self.start_address() + bytes / 16;
        Self::new(
            start,
            self.leading_byte_offset(),
            self.stride_byte_offset(),
            self.base_offset(),
            self.swizzle_mode(),
        )
    }
}

impl fmt::Display for GmmaDescriptor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GmmaDescriptor 0x{:016x}: start_address {} ({} B), leading_byte_offset {} ({} B), \
             stride_byte_offset {} ({} B), base_offset {}, layout_type {} ({})",
            self.desc,
            self.start_address(),
            16 * self.start_address(),
            self.leading_byte_offset(),
            16 * self.leading_byte_offset(),
            self.stride_byte_offset(),
            16 * self.stride_byte_offset(),
            self.base_offset(),
            self.layout_type(),
            self.swizzle_mode().name()
        )
    }
}

/// The descriptor of k-block 0 of an `MN x K` operand tile in shared memory: [`make_gmma_desc_k`]
/// with `k_block = 0`.
pub const fn make_gmma_desc(
    smem: &ComposedLayout,
    elem_bits: i64,
    major: GmmaMajor,
) -> Result<GmmaDescriptor> {
    make_gmma_desc_k(smem, elem_bits, major, 0)
}

/// CuTe's `make_gmma_desc<Major>` for the `MN x KB` block `k_block` of a shared-memory tile
/// `smem = Sw o off o L` (`L` of rank 2, `(MN, K)`, in elements of `elem_bits` = 8, 16 or 32
/// bits; `KB = 256 / elem_bits`, the K of one wgmma: 32 bytes), the tile's base at shared
/// address 0 ([`GmmaDescriptor::offset_by_bytes`] moves it).
///
/// In 16-byte units (`T = 128 / elem_bits` elements) and with `W = 2^B` the swizzle's 16-byte
/// chunks per row, the canonical layouts of the PTX ISA / CuTe are, before the swizzle:
///
/// ```text
/// K-major,  INTERLEAVE : ((8,m),(T,2)):((1T,SBO),(1,LBO))
/// K-major,  B32/64/128 : ((8,m),(T,2)):((WT,SBO),(1,T))          LBO = 1 ("unused, assumed 1")
/// MN-major, INTERLEAVE : ((T,m),(8,k)):((1,SBO),(T,LBO))
/// MN-major, B32/64/128 : ((T,W,m),(8,k)):((1,T,LBO),(WT,SBO))
/// ```
///
/// The fields are read off `L` as CuTe reads them off its `logical_divide` by `(8, 2)` /
/// `(W, 8)` 16-byte units: SBO (K-major) is `L(8, 0)`, the step to the next 8 rows; LBO
/// (INTERLEAVE K-major) `L(0, T)`; LBO / SBO (MN-major) `L(WT, 0)` and `L(0, 8)`, swapped for
/// INTERLEAVE — each relative to `L(0, k0)` and 0 where the tile has no second repeat (CuTe's
/// stride of a size-1 mode, `_0`). The start address is `(off + L(0, k0)) * elem_bits / 128`
/// with `k0 = k_block KB`; the base offset 0, as CuTe sets it.
///
/// Post-condition (checked here, tested): for every `(m, k)` of the block, the hardware's
/// element, `Sw_mode(start + canonical(m, k))`, is the layout's, `Sw(off + L(m, k0 + k))`.
/// That holds on the GPU when the tile's base address is aligned to the swizzle's repeat
/// (`8 row_bytes`: 256, 512, 1024 bytes for B32, B64, B128), which is where tessel's swizzle,
/// counted from the tile's base, and the hardware's, on address bits, coincide.
///
/// Errors: `UnsupportedSwizzle` (see [`SwizzleMode::from_swizzle`]); `NotGmmaLayout` for an
/// element width other than 8, 16, 32, a rank other than 2, `MN` not a multiple of 8 (K-major)
/// or of `W T` (MN-major), an offset that is not a whole number of 16-byte units, or a field that
/// does not fit; `NotDivisible` when `KB` does not divide `K`; `IndexOutOfRange` for a k-block
/// past the tile; `GmmaMismatch { m, k, layout, descriptor }` (element offsets) for the first
/// element the descriptor would read from elsewhere than the layout has it (e.g. a padded or
/// non-canonical layout).
pub const fn make_gmma_desc_k(
    smem: &ComposedLayout,
    elem_bits: i64,
    major: GmmaMajor,
    k_block: i64,
) -> Result<GmmaDescriptor> {
    if elem_bits != 8 && elem_bits != 16 && elem_bits != 32 {
        return Err(LayoutError::NotGmmaLayout {
            what: "wgmma reads 8-, 16- or 32-bit elements from shared memory",
        });
    }
    let mode = tri!(SwizzleMode::from_swizzle(&smem.swizzle(), elem_bits));
    let hw = tri!(mode.swizzle(elem_bits));
    let l = smem.layout();
    if l.rank() != 2 {
        return Err(LayoutError::RankMismatch {
            expected: 2,
            found: l.rank(),
        });
    }
    let (l0, l1) = (tri!(l.get(0)), tri!(l.get(1)));
    let (mn, kk) = (l0.size(), l1.size());
    let t = 128 / elem_bits;
    let kb = 256 / elem_bits;
    let w = 1i64 << mode.bits();
    if kk % kb != 0 {
        return Err(LayoutError::NotDivisible { value: kk, by: kb });
    }
    if k_block < 0 || k_block >= kk / kb {
        return Err(LayoutError::IndexOutOfRange {
            index: k_block,
            size: kk / kb,
        });
    }
    // the block (MN rows of 32 bytes) lies in shared memory's 256 KiB, which also bounds the
    // check's loop below
    if mn > (256 << 10) / 32 {
        return Err(LayoutError::NotGmmaLayout {
            what: "the MN x K block is larger than shared memory's 256 KiB",
        });
    }
    let k0 = k_block * kb;
    let origin = l1.call(k0);
    // f(m, k): the offset of (m, k0 + k) from the block's origin, before the swizzle
    let start = smem.offset() + origin;
    if start % t != 0 {
        return Err(LayoutError::NotGmmaLayout {
            what: "the block does not start on a 16-byte boundary",
        });
    }
    let swizzled = !matches!(mode, SwizzleMode::None);
    // the fields, in elements, and the canonical layout's strides
    let (lbo, sbo, canon) = match major {
        GmmaMajor::K => {
            if mn % 8 != 0 {
                return Err(LayoutError::NotGmmaLayout {
                    what: "a K-major GMMA operand has a multiple of 8 rows",
                });
            }
            let sbo = if mn > 8 { l0.call(8) } else { 0 };
            let lbo = if swizzled {
                t
            } else {
                l1.call(k0 + t) - origin
            };
            let c = canonical("((1,1),(1,1))", &[8, mn / 8, t, 2], &[w * t, sbo, 1, lbo]);
            (lbo, sbo, c)
        }
        GmmaMajor::MN => {
            if mn % (w * t) != 0 {
                return Err(LayoutError::NotGmmaLayout {
                    what: "an MN-major GMMA operand has a multiple of the swizzle's row (W T elements) in MN",
                });
            }
            let next_mn = if mn > w * t { l0.call(w * t) } else { 0 };
            let next_k = if kb > 8 { l1.call(k0 + 8) - origin } else { 0 };
            if swizzled {
                let c = canonical(
                    "((1,1,1),(1,1))",
                    &[t, w, mn / (w * t), 8, kb / 8],
                    &[1, t, next_mn, w * t, next_k],
                );
                (next_mn, next_k, c)
            } else {
                let c = canonical(
                    "((1,1),(1,1))",
                    &[t, mn / t, 8, kb / 8],
                    &[1, next_mn, t, next_k],
                );
                (next_k, next_mn, c)
            }
        }
    };
    // the descriptor's fields count 16-byte units
    if lbo % t != 0 || sbo % t != 0 {
        return Err(LayoutError::NotGmmaLayout {
            what: "the layout's leading or stride offset is not a whole number of 16-byte units",
        });
    }
    let desc = tri!(GmmaDescriptor::new(start / t, lbo / t, sbo / t, 0, mode));
    // the check: the hardware's element (m, k) is the layout's
    let canon = tri!(canon);
    let (c0, c1) = (tri!(canon.get(0)), tri!(canon.get(1)));
    let sw = smem.swizzle();
    let mut k = 0;
    while k < kb {
        let mut m = 0;
        while m < mn {
            let layout = sw.apply(smem.offset() + l0.call(m) + l1.call(k0 + k));
            let descriptor = hw.apply(start + c0.call(m) + c1.call(k));
            if layout != descriptor {
                return Err(LayoutError::GmmaMismatch {
                    m,
                    k,
                    layout,
                    descriptor,
                });
            }
            m += 1;
        }
        k += 1;
    }
    Ok(desc)
}

/// The descriptors of k-blocks `0..N` of `smem` ([`make_gmma_desc_k`] of each): what a main loop
/// issues over a stage's K, one wgmma per k-block, at the tile's base address plus the stage's.
///
/// Post-condition: element `k` is `make_gmma_desc_k(smem, elem_bits, major, k)`. Errors as
/// [`make_gmma_desc_k`]'s, `IndexOutOfRange` where the tile has fewer than `N` k-blocks.
///
/// ```
/// use layout_core::*;
/// // 64 rows of 64 16-bit elements, K-major, the 128-byte swizzle: 4 k-blocks of 16
/// let t = ComposedLayout::new(Swizzle::new(3, 3, 3)?, Layout::parse("(64,64):(64,1)")?)?;
/// let d = make_gmma_descs_k::<4>(&t, 16, GmmaMajor::K)?;
/// assert_eq!(d[3], make_gmma_desc_k(&t, 16, GmmaMajor::K, 3)?);
/// // the start address moves 32 bytes (two 16-byte units) per k-block
/// assert_eq!(d[1].desc - d[0].desc, 2);
/// assert!(make_gmma_descs_k::<5>(&t, 16, GmmaMajor::K).is_err());
/// # Ok::<(), LayoutError>(())
/// ```
pub const fn make_gmma_descs_k<const N: usize>(
    smem: &ComposedLayout,
    elem_bits: i64,
    major: GmmaMajor,
) -> Result<[GmmaDescriptor; N]> {
    let mut d = [GmmaDescriptor { desc: 0 }; N];
    let mut k = 0;
    while k < N {
        d[k] = tri!(make_gmma_desc_k(smem, elem_bits, major, k as i64));
        k += 1;
    }
    Ok(d)
}
