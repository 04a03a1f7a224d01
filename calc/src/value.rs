//! The calculator's values, how they print, and the coercions between them (a shape where a
//! layout is wanted is its column-major layout, and so on).

use layout_core::*;
use std::fmt;

/// A value of the calculator.
#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // short-lived values of one expression
pub enum Value {
    /// A plain integer.
    Int(i64),
    /// A shape or coordinate without strides.
    Tuple(IntTuple),
    /// `shape:stride`.
    Layout(Layout),
    /// `<L0, L1, ...>`.
    Tiler(Tiler),
    /// `Sw<B,M,S> o offset o L`.
    Composed(ComposedLayout),
    /// `offset o layout` (the result of slicing with an offset).
    Offset(i64, Layout),
    /// A counting tensor: integers (a layout used as a tensor) or ArithTuples (identity tensors).
    Tensor(Tensor<Counting>),
    /// A tiled copy (`tiled_copy_tv`).
    Copy(TiledCopy),
    /// An MMA atom (`SM80_16x8x16_F32F16F16F32_TN`).
    Atom(MmaAtom),
    /// A tiled MMA (`make_tiled_mma`).
    Mma(TiledMma),
    /// A copy atom with its element width (`SM75_U32x4_LDSM_N`, `copy_atom(NAME, BITS)`).
    CopyAtom(CopyAtom),
    /// A tiled copy of a copy atom (`make_tiled_copy_A/B/C`).
    AtomCopy(AtomTiledCopy),
    /// A Hopper GMMA atom with its instruction (`gmma_atom(NAME)`).
    Gmma(GmmaAtom),
    /// `K` or `MN`: which mode of a GMMA operand tile is contiguous.
    Major(GmmaMajor),
    /// A wgmma shared-memory matrix descriptor (`gmma_desc`).
    Desc(GmmaDescriptor),
    /// A hardware swizzle mode (`swizzle_mode`).
    Mode(SwizzleMode),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::Tuple(t) => write!(f, "{t}"),
            Value::Layout(l) => write!(f, "{l}"),
            Value::Tiler(t) => write!(f, "{t}"),
            Value::Composed(c) => write!(f, "{c}"),
            Value::Offset(o, l) => write!(f, "{o} o {l}"),
            Value::Tensor(t) => write!(f, "{t}"),
            Value::Copy(c) => write!(
                f,
                "TiledCopy(tile {}, {} threads x {} values, atoms of {}; TV {})",
                c.tile,
                c.threads(),
                c.values(),
                c.atom_vals,
                c.layout_tv
            ),
            Value::Atom(a) => write!(
                f,
                "MMA_Atom({}, shape_mnk ({},{},{}), ThrID {}, LayoutA_TV {}, LayoutB_TV {}, LayoutC_TV {})",
                a.name, a.shape_mnk[0], a.shape_mnk[1], a.shape_mnk[2], a.thr_id, a.a, a.b, a.c
            ),
            Value::Mma(m) => {
                write!(
                    f,
                    "TiledMMA({}, {} threads, tile ({},{},{}), ThrLayoutVMNK {}, ",
                    m.atom.name,
                    m.threads(),
                    m.tile_mnk[0],
                    m.tile_mnk[1],
                    m.tile_mnk[2],
                    m.thr_layout_vmnk,
                )?;
                // the permutation, where one is not the identity (CuTe's `_`)
                let ident = |i: usize| {
                    let p = m.permutation_mnk[i];
                    p.rank() == 1 && p.strides() == [1] && p.size() == m.tile_mnk[i]
                };
                if !(0..3).all(ident) {
                    let modes: Vec<String> = (0..3)
                        .map(|i| {
                            if ident(i) {
                                "_".to_string()
                            } else {
                                m.permutation_mnk[i].to_string()
                            }
                        })
                        .collect();
                    write!(f, "PermutationMNK <{}>, ", modes.join(","))?;
                }
                write!(
                    f,
                    "LayoutA_TV {}, LayoutB_TV {}, LayoutC_TV {})",
                    m.layout_a_tv, m.layout_b_tv, m.layout_c_tv
                )
            }
            Value::CopyAtom(a) => write!(
                f,
                "Copy_Atom({}, ThrID {}, ValLayoutSrc {}, ValLayoutDst {}, ValLayoutRef {}, ValueType {}b)",
                a.traits.name,
                a.traits.thr_id,
                a.val_layout_src,
                a.val_layout_dst,
                a.val_layout_ref,
                a.val_bits
            ),
            Value::AtomCopy(c) => write!(
                f,
                "TiledCopy(Tiler_MN ({},{}), TiledLayout_TV {}, {})",
                c.tile[0],
                c.tile[1],
                c.layout_tv,
                Value::CopyAtom(c.atom)
            ),
            Value::Gmma(g) => write!(
                f,
                "GMMA_Atom({}, {}, {}, shape_mnk ({},{},{}), ThrID {}, ALayout {}, BLayout {}, CLayout {})",
                g.mma.name,
                g.ptx,
                match g.source {
                    GmmaSource::SS => "A and B from shared memory (descriptors)",
                    GmmaSource::RS => "A from registers, B from shared memory (descriptor)",
                },
                g.mma.shape_mnk[0],
                g.mma.shape_mnk[1],
                g.mma.shape_mnk[2],
                g.mma.thr_id,
                g.mma.a,
                g.mma.b,
                g.mma.c
            ),
            Value::Major(m) => f.write_str(m.name()),
            Value::Desc(d) => write!(f, "{d}"),
            Value::Mode(m) => write!(
                f,
                "{} (TMA {} = {}, GMMA layout type {} = {})",
                match m {
                    SwizzleMode::None => "no swizzle",
                    SwizzleMode::B32 => "32-byte swizzle",
                    SwizzleMode::B64 => "64-byte swizzle",
                    SwizzleMode::B128 => "128-byte swizzle",
                },
                m.tma_name(),
                m.tma_code(),
                m.name(),
                m.gmma_layout_type()
            ),
        }
    }
}

/// A result whose error is the reason, ready to print after `error: `.
pub type R<T> = std::result::Result<T, String>;

/// layout-core's error as the calculator prints it.
pub fn err(e: LayoutError) -> String {
    e.to_string()
}

/// How deeply calls, tilers and swizzles may nest in one expression (a bound on the parser's
/// recursion; tuples have their own bound, `MAX_TOKENS / 2`).
pub const MAX_NESTING: usize = 64;

/// A value used where a layout is wanted.
pub fn to_layout(v: &Value) -> R<Layout> {
    match v {
        Value::Layout(l) => Ok(*l),
        Value::Tuple(t) => Layout::col_major(*t).map_err(err),
        Value::Int(n) => Layout::int(*n, 1).map_err(err),
        other => Err(format!("expected a layout, found {other}")),
    }
}

pub fn to_tiler(v: &Value) -> R<Tiler> {
    match v {
        Value::Tiler(t) => Ok(*t),
        Value::Layout(l) => Ok(Tiler::Layout(*l)),
        Value::Tuple(t) => Tiler::shape(t).map_err(err),
        Value::Int(n) => Ok(Tiler::Layout(Layout::int(*n, 1).map_err(err)?)),
        other => Err(format!("expected a tiler, found {other}")),
    }
}

/// A value used where a tensor is wanted: a layout is the counting tensor `0 o L`.
pub fn to_tensor(v: &Value) -> R<Tensor<Counting>> {
    match v {
        Value::Tensor(t) => Ok(*t),
        Value::Offset(o, l) => Ok(counting(*l).with_layout((*l, *o))),
        other => Ok(counting(to_layout(other)?)),
    }
}

pub fn to_copy(v: &Value) -> R<TiledCopy> {
    match v {
        Value::Copy(c) => Ok(*c),
        other => Err(format!("expected a tiled copy, found {other}")),
    }
}

/// A tiled MMA's `PermutationMNK`: a by-mode tiler of at most 3 modes (`<_,(8,4,2):(1,16,8),_>`,
/// or a shape `(32,64,16)` / `(_,64)`), missing modes `_`.
pub fn permutation(v: &Value) -> R<[Option<Layout>; 3]> {
    match to_tiler(v)? {
        Tiler::ByMode { n, modes } if n <= 3 => Ok([modes[0], modes[1], modes[2]]),
        _ => Err(format!(
            "expected a permutation per mode M, N, K (a tiler <PM,PN,PK> of at most 3 modes, _ for none), found {v}"
        )),
    }
}

pub fn to_atom(v: &Value) -> R<MmaAtom> {
    match v {
        Value::Atom(a) => Ok(*a),
        other => Err(format!("expected an MMA atom, found {other}")),
    }
}

pub fn to_copy_atom(v: &Value) -> R<CopyAtom> {
    match v {
        Value::CopyAtom(a) => Ok(*a),
        other => Err(format!("expected a copy atom, found {other}")),
    }
}

pub fn to_mma(v: &Value) -> R<TiledMma> {
    match v {
        Value::Mma(m) => Ok(*m),
        other => Err(format!("expected a tiled MMA, found {other}")),
    }
}

pub fn to_tuple(v: &Value) -> R<IntTuple> {
    match v {
        Value::Tuple(t) => Ok(*t),
        Value::Int(n) => Ok(IntTuple::int(*n)),
        other => Err(format!("expected a tuple, found {other}")),
    }
}

/// A value used where an integer is wanted (an index, a count): tuples are refused, never
/// silently replaced by their product.
pub fn to_int(v: &Value) -> R<i64> {
    match v {
        Value::Int(n) => Ok(*n),
        other => Err(format!("expected an integer, found {other}")),
    }
}

/// A value used where a cotarget is wanted (`complement`): an integer, or a shape's size.
pub fn to_size(v: &Value) -> R<i64> {
    match v {
        Value::Tuple(t) => t.size().map_err(err),
        other => to_int(other),
    }
}

/// A mode index: an integer, 0 or more.
pub fn to_mode(v: &Value) -> R<usize> {
    let i = to_int(v)?;
    usize::try_from(i).map_err(|_| format!("mode index {i} is negative"))
}
