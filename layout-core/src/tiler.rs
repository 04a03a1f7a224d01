//! Tilers: a layout, or a tuple of layouts `<L0, L1, ...>` applied mode by mode.
//!
//! A shape `(s0, s1, ...)` used as a tiler means `<s0:1, s1:1, ...>`; a mode written `_` leaves
//! the corresponding mode of the tiled layout whole.

use crate::composition::compose_into;
use crate::divide::divide_into;
use crate::error::{LayoutError, Result};
use crate::int_tuple::{skip_ws, IntTuple, Span};
use crate::layout::{in_place, Layout};
use crate::product::product_into;
use crate::tri;
use core::fmt;

/// The most modes a by-mode tiler can have.
pub const MAX_TILER_MODES: usize = 4;

/// What a divide, product or composition is taken with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[allow(clippy::large_enum_variant)] // no allocation: both variants live inline, by design
pub enum Tiler {
    /// One layout, applied to the whole (1-D) layout.
    Layout(Layout),
    /// `<L0, L1, ...>`: mode `i` applies to mode `i`; `None` (written `_`) leaves it as it is.
    ByMode {
        /// Number of modes.
        n: usize,
        /// The modes; entries past `n` are `None`.
        modes: [Option<Layout>; MAX_TILER_MODES],
    },
}

impl Tiler {
    /// A tiler of one layout.
    pub const fn layout(l: Layout) -> Self {
        Tiler::Layout(l)
    }

    /// `<L0, L1, ...>` from its modes.
    pub const fn by_mode(modes: &[Option<Layout>]) -> Result<Self> {
        if modes.len() > MAX_TILER_MODES {
            return Err(LayoutError::Capacity);
        }
        let mut m = [None; MAX_TILER_MODES];
        let mut i = 0;
        while i < modes.len() {
            m[i] = modes[i];
            i += 1;
        }
        Ok(Tiler::ByMode {
            n: modes.len(),
            modes: m,
        })
    }

    /// A shape as a tiler: `(s0, s1, ...)` is `<s0:1, s1:1, ...>`, an integer `s` is `s:1`; a `_`
    /// leaves its mode whole.
    pub const fn shape(s: &IntTuple) -> Result<Self> {
        if s.is_int() {
            if s.is_hole() {
                return Err(LayoutError::UnexpectedUnderscore);
            }
            return Ok(Tiler::Layout(tri!(Layout::int(s.value(), 1))));
        }
        let r = s.rank();
        if r > MAX_TILER_MODES {
            return Err(LayoutError::Capacity);
        }
        let mut m = [None; MAX_TILER_MODES];
        let mut i = 0;
        while i < r {
            let e = tri!(s.get(i));
            if e.is_tuple() {
                return Err(LayoutError::NestedTiler);
            }
            if !e.is_hole() {
                m[i] = Some(tri!(Layout::int(e.value(), 1)));
            }
            i += 1;
        }
        Ok(Tiler::ByMode { n: r, modes: m })
    }

    /// Number of modes (1 for a layout tiler).
    pub const fn rank(&self) -> usize {
        match self {
            Tiler::Layout(_) => 1,
            Tiler::ByMode { n, .. } => *n,
        }
    }

    /// Reads `<L0,L1,...>` (modes are layouts `S:D`, shapes, or `_`), or a single layout / shape
    /// (a tuple shape without `:` is read as a by-mode shape tiler).
    pub const fn parse(s: &str) -> Result<Self> {
        let b = s.as_bytes();
        let (t, end) = tri!(Self::parse_at(b, 0));
        let end = skip_ws(b, end);
        if end != b.len() {
            return Err(LayoutError::Parse {
                at: end,
                what: "trailing characters",
            });
        }
        Ok(t)
    }

    /// Reads one tiler starting at byte `pos`; returns it and the position after it.
    pub const fn parse_at(b: &[u8], pos: usize) -> Result<(Self, usize)> {
        let mut p = skip_ws(b, pos);
        if p < b.len() && b[p] == b'<' {
            let mut m = [None; MAX_TILER_MODES];
            let mut n = 0;
            p += 1;
            loop {
                p = skip_ws(b, p);
                if n == MAX_TILER_MODES {
                    return Err(LayoutError::Capacity);
                }
                if p < b.len() && b[p] == b'<' {
                    return Err(LayoutError::NestedTiler);
                }
                let (shape, q) = tri!(IntTuple::parse_at(b, p));
                let q2 = skip_ws(b, q);
                if shape.is_hole() {
                    p = q2;
                } else if q2 < b.len() && b[q2] == b':' {
                    let (l, r) = tri!(Layout::parse_at(b, p));
                    m[n] = Some(l);
                    p = skip_ws(b, r);
                } else {
                    m[n] = Some(tri!(Layout::col_major(shape)));
                    p = q2;
                }
                n += 1;
                if p >= b.len() {
                    return Err(LayoutError::Parse {
                        at: p,
                        what: "unclosed '<'",
                    });
                }
                if b[p] == b',' {
                    p += 1;
                } else if b[p] == b'>' {
                    return Ok((Tiler::ByMode { n, modes: m }, p + 1));
                } else {
                    return Err(LayoutError::Parse {
                        at: p,
                        what: "expected ',' or '>'",
                    });
                }
            }
        }
        let (shape, q) = tri!(IntTuple::parse_at(b, p));
        let q2 = skip_ws(b, q);
        if q2 < b.len() && b[q2] == b':' {
            let (l, r) = tri!(Layout::parse_at(b, p));
            return Ok((Tiler::Layout(l), r));
        }
        Ok((tri!(Self::shape(&shape)), q))
    }
}

impl fmt::Display for Tiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tiler::Layout(l) => write!(f, "{l}"),
            Tiler::ByMode { n, modes } => {
                f.write_str("<")?;
                // (a by-mode tiler built by hand can claim more modes than it holds)
                for i in 0..*n {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    match modes.get(i) {
                        Some(Some(l)) => write!(f, "{l}")?,
                        _ => f.write_str("_")?,
                    }
                }
                f.write_str(">")
            }
        }
    }
}

/// The operation a tiler applies mode by mode (`const` code cannot call function pointers).
#[derive(Clone, Copy)]
pub(crate) enum Splitter {
    Compose,
    Divide,
    Product,
}

/// `f(A', B)` for the part `sp` of `A` (a mode, or all of it), appended to the build `r`.
const fn split_into(f: Splitter, a: &Layout, sp: Span, b: &Layout, r: &mut Layout) -> Result<()> {
    let (s, d) = a.leaves_in(sp);
    match f {
        Splitter::Compose => compose_into(s, d, b, r),
        Splitter::Divide => divide_into(s, d, b, r),
        Splitter::Product => product_into(a, sp, b, r),
    }
}

/// `f` applied mode by mode (`_` keeps the mode), or to the whole layout for a layout tiler.
pub(crate) const fn by_mode(a: &Layout, t: &Tiler, f: Splitter) -> Result<Layout> {
    let mut out = Err(LayoutError::Capacity);
    by_mode_at(a, t, f, &mut out);
    out
}

#[cfg_attr(not(target_arch = "nvptx64"), inline(never))]
const fn by_mode_at(a: &Layout, t: &Tiler, f: Splitter, out: &mut Result<Layout>) {
    in_place!(out, r => by_mode_into(a, t, f, r))
}

const fn by_mode_into(a: &Layout, t: &Tiler, f: Splitter, r: &mut Layout) -> Result<()> {
    match t {
        Tiler::Layout(b) => tri!(split_into(f, a, a.whole(), b, r)),
        Tiler::ByMode { n, modes } => {
            let rank = tri!(check_rank(a, *n));
            tri!(r.put_open());
            let mut i = 0;
            while i < rank {
                let sp = tri!(a.span(i));
                match if i < *n { &modes[i] } else { &None } {
                    Some(b) => tri!(split_into(f, a, sp, b, r)),
                    None => tri!(r.put_span(a, sp)),
                }
                i += 1;
            }
            tri!(r.put_close());
        }
    }
    Ok(())
}

/// `rank(A)`, when a by-mode tiler of `n` modes fits it.
const fn check_rank(a: &Layout, n: usize) -> Result<usize> {
    if n > MAX_TILER_MODES {
        // a by-mode tiler built by hand, claiming more modes than it holds
        return Err(LayoutError::Capacity);
    }
    let rank = a.rank();
    if rank < n {
        return Err(LayoutError::RankMismatch {
            expected: n,
            found: rank,
        });
    }
    Ok(rank)
}

/// `f` applied mode by mode, the results `(tile_i, rest_i)` gathered into
/// `((tile_0, tile_1, ...), (rest_0, rest_1, ..., A_n, ...))` (CuTe's `hier_unzip`); a `_` mode
/// contributes the tile `1:0` and keeps the whole mode as rest.
pub(crate) const fn hier_unzip(a: &Layout, t: &Tiler, f: Splitter) -> Result<Layout> {
    let mut out = Err(LayoutError::Capacity);
    hier_unzip_at(a, t, f, &mut out);
    out
}

#[cfg_attr(not(target_arch = "nvptx64"), inline(never))]
const fn hier_unzip_at(a: &Layout, t: &Tiler, f: Splitter, out: &mut Result<Layout>) {
    in_place!(out, r => hier_unzip_into(a, t, f, r))
}

const fn hier_unzip_into(a: &Layout, t: &Tiler, f: Splitter, r: &mut Layout) -> Result<()> {
    let (n, modes) = match t {
        Tiler::Layout(_) => return by_mode_into(a, t, f, r),
        Tiler::ByMode { n, modes } => (*n, modes),
    };
    let rank = tri!(check_rank(a, n));
    // each mode's (tile, rest), in one build: ((t0, r0), (t1, r1), ...)
    let mut parts = Layout::raw();
    tri!(parts.put_open());
    let mut i = 0;
    while i < rank {
        let sp = tri!(a.span(i));
        match if i < n { &modes[i] } else { &None } {
            Some(b) => tri!(split_into(f, a, sp, b, &mut parts)),
            None => {
                tri!(parts.put_open());
                if i < n {
                    tri!(parts.put_leaf(1, 0));
                }
                tri!(parts.put_span(a, sp));
                tri!(parts.put_close());
            }
        }
        i += 1;
    }
    tri!(parts.put_close());
    let all = parts.whole();
    // ((t0, t1, ...), (r0, r1, ..., A_n, ...)); a mode past the tiler has no tile
    tri!(r.put_open());
    let mut k = 0;
    while k < 2 {
        tri!(r.put_open());
        let mut j = 0;
        while j < rank {
            let pj = tri!(parts.span_within(all, j));
            if j < n {
                tri!(r.put_span(&parts, tri!(parts.span_within(pj, k))));
            } else if k == 1 {
                tri!(r.put_span(&parts, tri!(parts.span_within(pj, 0))));
            }
            j += 1;
        }
        tri!(r.put_close());
        k += 1;
    }
    r.put_close()
}

/// `(z0, z1_0, z1_1, ...)` from a zipped `(z0, z1)`: the `tiled_*` arrangement.
pub(crate) const fn tiled_modes(z: &Layout) -> Result<Layout> {
    let mut r = Layout::raw();
    tri!(r.put_open());
    tri!(r.put_span(z, tri!(z.span(0))));
    tri!(r.put_modes_of(z, tri!(z.span(1))));
    tri!(r.put_close());
    Ok(r)
}

/// `(z0_0, z0_1, ..., z1_0, z1_1, ...)` from a zipped `(z0, z1)`: the `flat_*` arrangement.
pub(crate) const fn flat_modes(z: &Layout) -> Result<Layout> {
    let mut r = Layout::raw();
    tri!(r.put_open());
    tri!(r.put_modes_of(z, tri!(z.span(0))));
    tri!(r.put_modes_of(z, tri!(z.span(1))));
    tri!(r.put_close());
    Ok(r)
}
