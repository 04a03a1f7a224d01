//! Tilers: a layout, or a tuple of layouts `<L0, L1, ...>` applied mode by mode.
//!
//! A shape `(s0, s1, ...)` used as a tiler means `<s0:1, s1:1, ...>`; a mode written `_` leaves
//! the corresponding mode of the tiled layout whole.

use crate::composition::composition;
use crate::divide::logical_divide;
use crate::error::{LayoutError, Result};
use crate::int_tuple::{skip_ws, IntTuple};
use crate::layout::Layout;
use crate::product::logical_product;
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

const fn split(f: Splitter, a: &Layout, b: &Layout) -> Result<Layout> {
    match f {
        Splitter::Compose => composition(a, b),
        Splitter::Divide => logical_divide(a, b),
        Splitter::Product => logical_product(a, b),
    }
}

/// `f` applied mode by mode (`_` keeps the mode), or to the whole layout for a layout tiler.
pub(crate) const fn by_mode(a: &Layout, t: &Tiler, f: Splitter) -> Result<Layout> {
    match t {
        Tiler::Layout(b) => split(f, a, b),
        Tiler::ByMode { n, modes } => {
            if *n > MAX_TILER_MODES {
                // a by-mode tiler built by hand, claiming more modes than it holds
                return Err(LayoutError::Capacity);
            }
            if a.rank() < *n {
                return Err(LayoutError::RankMismatch {
                    expected: *n,
                    found: a.rank(),
                });
            }
            let mut r = Layout::empty();
            let mut i = 0;
            while i < a.rank() {
                let m = tri!(a.get(i));
                let m = if i < *n {
                    match &modes[i] {
                        Some(b) => tri!(split(f, &m, b)),
                        None => m,
                    }
                } else {
                    m
                };
                tri!(r.push(&m));
                i += 1;
            }
            Ok(r)
        }
    }
}

/// `f` applied mode by mode, the results `(tile_i, rest_i)` gathered into
/// `((tile_0, tile_1, ...), (rest_0, rest_1, ..., A_n, ...))` (CuTe's `hier_unzip`); a `_` mode
/// contributes the tile `1:0` and keeps the whole mode as rest.
pub(crate) const fn hier_unzip(a: &Layout, t: &Tiler, f: Splitter) -> Result<Layout> {
    match t {
        Tiler::Layout(b) => split(f, a, b),
        Tiler::ByMode { n, modes } => {
            if *n > MAX_TILER_MODES {
                // a by-mode tiler built by hand, claiming more modes than it holds
                return Err(LayoutError::Capacity);
            }
            if a.rank() < *n {
                return Err(LayoutError::RankMismatch {
                    expected: *n,
                    found: a.rank(),
                });
            }
            let mut tiles = Layout::empty();
            let mut rests = Layout::empty();
            let mut i = 0;
            while i < a.rank() {
                let m = tri!(a.get(i));
                if i < *n {
                    match &modes[i] {
                        Some(b) => {
                            let s = tri!(split(f, &m, b));
                            tri!(tiles.push(&tri!(s.get(0))));
                            tri!(rests.push(&tri!(s.get(1))));
                        }
                        None => {
                            tri!(tiles.push(&tri!(Layout::int(1, 0))));
                            tri!(rests.push(&m));
                        }
                    }
                } else {
                    tri!(rests.push(&m));
                }
                i += 1;
            }
            Layout::concat(&[tiles, rests])
        }
    }
}

/// `(z0, z1_0, z1_1, ...)` from a zipped `(z0, z1)`: the `tiled_*` arrangement.
pub(crate) const fn tiled_modes(z: &Layout) -> Result<Layout> {
    let mut r = Layout::empty();
    tri!(r.push(&tri!(z.get(0))));
    let z1 = tri!(z.get(1));
    let mut i = 0;
    while i < z1.rank() {
        tri!(r.push(&tri!(z1.get(i))));
        i += 1;
    }
    Ok(r)
}

/// `(z0_0, z0_1, ..., z1_0, z1_1, ...)` from a zipped `(z0, z1)`: the `flat_*` arrangement.
pub(crate) const fn flat_modes(z: &Layout) -> Result<Layout> {
    let mut r = Layout::empty();
    let mut k = 0;
    while k < 2 {
        let zk = tri!(z.get(k));
        let mut i = 0;
        while i < zk.rank() {
            tri!(r.push(&tri!(zk.get(i))));
            i += 1;
        }
        k += 1;
    }
    Ok(r)
}
