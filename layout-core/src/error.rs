//! Errors of the algebra: every inadmissible input names the condition it violates.

use core::fmt;

/// Why an operation of the algebra refused its input.
///
/// Each variant names one condition of the algebra (seed 003 gives the divisibility conditions of
/// `composition`); the numbers say where it failed. In a `const` context, [`const_ok!`](crate::const_ok)
/// turns an error into a compile error that prints [`LayoutError::condition`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are the numbers named in each variant's doc
pub enum LayoutError {
    /// Composition `A o B`: a mode `a` of coalesced `A` and the remaining stride `r` of a mode of `B`
    /// must satisfy `a % r == 0 || r % a == 0` (see [`crate::composition`]).
    StrideDivisibility { shape: i64, stride: i64 },
    /// Composition `A o B`: once `B`'s stride is divided out of a mode of `A`, the `k` elements left
    /// of that mode and the remaining shape `n` of `B` must satisfy `k % n == 0 || n % k == 0`.
    ShapeDivisibility { shape: i64, rest: i64 },
    /// An intermediate value left the range of `i64`.
    Overflow,
    /// Two tuples that must have the same rank do not (`expected` modes wanted, `found` given).
    RankMismatch { expected: usize, found: usize },
    /// Two tuples that must have the same nesting (congruent, or weakly so) do not.
    ProfileMismatch,
    /// A mode index past the rank.
    ModeOutOfRange { index: usize, rank: usize },
    /// Shapes are positive integers.
    NonPositiveShape { value: i64 },
    /// `complement` needs an injective layout: sorted by stride, each stride `d` must be at least the
    /// extent `c` covered by the smaller modes.
    NotInjective { stride: i64, extent: i64 },
    /// `complement` and the inverses need non-negative strides.
    NegativeStride { value: i64 },
    /// A division needs the divisor's size to divide the target (`tile_to_shape`, `tiled_divide` of a
    /// shape).
    NotDivisible { value: i64, by: i64 },
    /// Swizzle parameters need `|S| >= B`, `B >= 0`, `M >= 0`.
    BadSwizzle,
    /// A tuple has more leaves, or more nesting, than the fixed capacity of this no-alloc crate
    /// (`MAX_LEAVES` leaves, `MAX_TOKENS` tokens).
    Capacity,
    /// A coordinate with `_` where a plain coordinate is needed, or a `_` in a shape or stride.
    UnexpectedUnderscore,
    /// A tiler mode that is itself a tuple of tilers (`<<..>,..>` or a nested shape); tilers here
    /// are one level of layouts.
    NestedTiler,
    /// The text of a tuple or layout could not be read; `at` is the byte offset.
    Parse { at: usize, what: &'static str },
    /// Composition `A o B` with several modes of `B`: within one mode of coalesced `A` (of shape
    /// `shape`), the modes of `B` together reach element `reach`, so their sum carries into the next
    /// mode of `A`, where `A` is not linear.
    ModesCarry { shape: i64, reach: i64 },
    /// A coordinate (or a thread index) outside the mode it indexes: `0 <= index < size` is
    /// needed. (Added last: the kernels' PTX depends on the order of the variants.)
    IndexOutOfRange { index: i64, size: i64 },
    /// A copy atom moves 32, 64 or 128 bits per thread (`bits` was asked for).
    UnsupportedAtom { bits: i64 },
    /// A thread-value layout given directly must map its `size` (thread, value) pairs one-to-one
    /// onto the `size` elements of its tile; `reached` is how far from 0 its image is compact
    /// (`size(right_inverse(TV))`).
    NotBijective { size: i64, reached: i64 },
    /// A shared-memory layout that no wgmma matrix descriptor describes; `what` says which
    /// condition of the canonical GMMA layouts fails.
    NotGmmaLayout { what: &'static str },
    /// The descriptor computed for a layout would read element `(m, k)` of the block from
    /// element offset `descriptor`, where the layout has it at `layout`.
    GmmaMismatch {
        m: i64,
        k: i64,
        layout: i64,
        descriptor: i64,
    },
    /// `Sw<bits,base,shift>` over elements of `elem_bits` bits is none of the hardware's
    /// swizzles (`Sw<0..=3,4,3>` on byte addresses; `base` is -1 when the width itself is
    /// unsupported).
    UnsupportedSwizzle {
        bits: i64,
        base: i64,
        shift: i64,
        elem_bits: i64,
    },
    /// A TMA swizzle code (`CUtensorMapSwizzle`) and a GMMA descriptor layout type that name
    /// different swizzles.
    SwizzleMismatch { tma: i64, gmma: i64 },
    /// A swizzle code outside its enum (`gmma`: of the descriptor's layout type, else of
    /// `CUtensorMapSwizzle`; 0 to 3 are known).
    UnknownSwizzleCode { code: i64, gmma: bool },
}

impl LayoutError {
    /// The violated condition, in words (usable in `const` panics).
    pub const fn condition(&self) -> &'static str {
        match self {
            Self::StrideDivisibility { .. } => {
                "stride divisibility condition violated: shape % stride == 0 or stride % shape == 0"
            }
            Self::ShapeDivisibility { .. } => {
                "shape divisibility condition violated: what is left of A's mode and of B's shape must divide one another"
            }
            Self::ModesCarry { .. } => {
                "B's modes together overrun a mode of A (A is not linear over their sum)"
            }
            Self::IndexOutOfRange { .. } => "coordinate outside its mode (need 0 <= c < size)",
            Self::UnsupportedAtom { .. } => "copy atoms move 32, 64 or 128 bits",
            Self::NotBijective { .. } => {
                "a thread-value layout must be a bijection onto its tile's elements"
            }
            Self::NotGmmaLayout { .. } => "not a canonical GMMA shared-memory layout",
            Self::GmmaMismatch { .. } => {
                "the GMMA descriptor would read an element from elsewhere than the layout puts it"
            }
            Self::UnsupportedSwizzle { .. } => {
                "not a hardware swizzle (Sw<B,4,3> on bytes, B = 0..3, for TMA and wgmma)"
            }
            Self::SwizzleMismatch { .. } => {
                "the TMA swizzle and the GMMA descriptor's layout type disagree"
            }
            Self::UnknownSwizzleCode { .. } => "unknown swizzle code",
            Self::Overflow => "integer overflow",
            Self::RankMismatch { .. } => "ranks do not match",
            Self::ProfileMismatch => "tuples are not congruent",
            Self::ModeOutOfRange { .. } => "mode index out of range",
            Self::NonPositiveShape { .. } => "shapes must be positive",
            Self::NotInjective { .. } => "layout is not injective (a stride is smaller than the extent of the smaller modes)",
            Self::NegativeStride { .. } => "negative strides are not supported here",
            Self::NotDivisible { .. } => "size does not divide the target",
            Self::BadSwizzle => "swizzle needs B >= 0, M >= 0 and |S| >= B",
            Self::Capacity => "tuple exceeds the fixed capacity (MAX_LEAVES leaves / MAX_TOKENS tokens)",
            Self::UnexpectedUnderscore => "unexpected '_'",
            Self::NestedTiler => "nested tilers are not supported (a tiler mode must be a layout, an integer or _)",
            Self::Parse { .. } => "cannot parse",
        }
    }
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.condition();
        match *self {
            Self::StrideDivisibility { shape, stride } => write!(
                f,
                "stride divisibility condition violated: mode of shape {shape} and stride {stride} \
                 (need {shape} % {stride} == 0 or {stride} % {shape} == 0)"
            ),
            Self::ShapeDivisibility { shape, rest } => write!(
                f,
                "shape divisibility condition violated: {rest} elements of B remain, the mode of A has \
                 {shape} (need {shape} % {rest} == 0 or {rest} % {shape} == 0)"
            ),
            Self::ModesCarry { shape, reach } => write!(
                f,
                "B's modes together reach element {reach} of a mode of A of shape {shape} \
                 (need < {shape}: A is not linear over their sum)"
            ),
            Self::RankMismatch { expected, found } => {
                write!(f, "ranks do not match: expected {expected}, found {found}")
            }
            Self::ModeOutOfRange { index, rank } => {
                write!(f, "mode index {index} out of range for rank {rank}")
            }
            Self::NonPositiveShape { value } => write!(f, "shapes must be positive, found {value}"),
            Self::NotInjective { stride, extent } => write!(
                f,
                "layout is not injective: stride {stride} < extent {extent} of the smaller modes"
            ),
            Self::NegativeStride { value } => {
                write!(f, "negative strides are not supported here, found {value}")
            }
            Self::NotDivisible { value, by } => write!(f, "{by} does not divide {value}"),
            Self::IndexOutOfRange { index, size } => write!(
                f,
                "coordinate {index} outside its mode of size {size} (need 0 <= {index} < {size})"
            ),
            Self::UnsupportedAtom { bits } => write!(
                f,
                "unsupported copy atom of {bits} bits (copy atoms move 32, 64 or 128 bits)"
            ),
            Self::NotBijective { size, reached } => write!(
                f,
                "a thread-value layout must be a bijection onto its tile's {size} elements: its \
                 image (from 0, without gaps) has {reached}"
            ),
            Self::Parse { at, what } => write!(f, "cannot parse at byte {at}: {what}"),
            Self::NotGmmaLayout { what } => {
                write!(f, "not a canonical GMMA shared-memory layout: {what}")
            }
            Self::GmmaMismatch {
                m,
                k,
                layout,
                descriptor,
            } => write!(
                f,
                "not a canonical GMMA shared-memory layout: element (m {m}, k {k}) of the block is \
                 at offset {layout}, the descriptor's canonical layout reads it from {descriptor}"
            ),
            Self::UnsupportedSwizzle {
                bits,
                base,
                shift,
                elem_bits,
            } => {
                if base < 0 {
                    write!(
                        f,
                        "no hardware swizzle over {elem_bits}-bit elements (a power of two from \
                         1 to 128 bits is needed)"
                    )
                } else {
                    write!(
                        f,
                        "Sw<{bits},{base},{shift}> over {elem_bits}-bit elements is not a hardware \
                         swizzle (TMA and wgmma swizzle Sw<B,4,3> in bytes, B = 0..3: \
                         Sw<B,M,3> with M = 7 - log2({elem_bits}) in elements)"
                    )
                }
            }
            Self::SwizzleMismatch { tma, gmma } => {
                let t = crate::gmma::SwizzleMode::from_tma_code(tma);
                let g = crate::gmma::SwizzleMode::from_gmma_layout_type(gmma);
                match (t, g) {
                    (Ok(t), Ok(g)) => write!(
                        f,
                        "the TMA swizzle {} (code {tma}) and the GMMA layout type {} (code {gmma}) \
                         disagree: {} bytes written, {} bytes read",
                        t.tma_name(),
                        g.name(),
                        t.row_bytes(),
                        g.row_bytes()
                    ),
                    _ => write!(f, "TMA swizzle code {tma} and GMMA layout type {gmma} disagree"),
                }
            }
            Self::UnknownSwizzleCode { code, gmma } => {
                if gmma {
                    write!(
                        f,
                        "unknown GMMA layout type {code} (0 INTERLEAVE, 1 B128, 2 B64, 3 B32)"
                    )
                } else {
                    write!(
                        f,
                        "unknown or unsupported TMA swizzle code {code} (0 NONE, 1 32B, 2 64B, \
                         3 128B; wgmma reads no other)"
                    )
                }
            }
            _ => f.write_str(c),
        }
    }
}

/// `Result` of the algebra.
pub type Result<T> = core::result::Result<T, LayoutError>;

/// `?` for `const fn`: the `?` operator is not yet usable in `const` code.
#[macro_export]
#[doc(hidden)]
macro_rules! tri {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return Err(e),
        }
    };
}

/// Unwraps a `Result` of the algebra in a `const` context: an error becomes a compile error that
/// names the violated condition.
///
/// ```
/// use layout_core::{const_ok, Layout};
/// const SMEM: Layout = const_ok!(Layout::parse("(8,64):(64,1)"));
/// assert_eq!(SMEM.size(), 512);
/// ```
///
/// An inadmissible constant layout does not compile:
/// ```compile_fail
/// use layout_core::{composition, const_ok, Layout};
/// // 6 % 5 != 0 and 5 % 6 != 0: the stride divisibility condition fails at compile time
/// const BAD: Layout = const_ok!(composition(
///     &const_ok!(Layout::parse("(6,2):(8,2)")),
///     &const_ok!(Layout::parse("(4,3):(5,1)")),
/// ));
/// ```
#[macro_export]
macro_rules! const_ok {
    ($e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => panic!("{}", e.condition()),
        }
    };
}
