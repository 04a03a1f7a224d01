//! `tessel svg`: pictures of layouts as SVG documents.
//!
//! - A layout: a grid of cells, rows over mode 0 and columns over mode 1 (rank 1: one column),
//!   each cell labeled with its index and colored by it; a layout of rank 3 or more is drawn as
//!   the slices `L(_,_,k)` side by side.
//! - A swizzled layout `Sw<B,M,S> o L`: the same grid, colored by the shared-memory bank of each
//!   index (32 banks of 4 bytes, elements of [`Options::bits`] bits).
//! - A TV layout over a tile ([`Options::tile`]): each cell of the tile labeled `T#` / `V#`, the
//!   thread and the value that hold it, colored by thread, as CuTe's `print_latex` draws it.
//! - A tiled copy: its source and destination TV layouts side by side.
//! - An MMA atom or tiled MMA: A (`M x K`) on the left, B (`K x N`) above, C (`M x N`) below B
//!   and right of A, as CuTe arranges them.
//!
//! Every cell is one `<rect>` followed by its `<text>`, centred in it; the document's size is
//! the pictures' size, so a 128x256 C tile stays legible when zoomed.

use crate::value::*;
use layout_core::*;
use std::fmt::Write as _;

/// What a picture needs beyond the value.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Bits per element, for the banks of a swizzled layout (default 16, CuTe's usual half).
    pub bits: i64,
    /// The tile a TV layout `(thread, value) -> index` is drawn over (none: a layout is drawn as
    /// itself).
    pub tile: Option<IntTuple>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bits: 16,
            tile: None,
        }
    }
}

/// The most cells one document draws.
pub const MAX_CELLS: i64 = 1 << 17;

/// The most `(thread, value)` pairs a TV layout drawn over a tile may have (an element may be
/// held by several threads: an MMA's A and B are).
pub const MAX_TV: i64 = 1 << 20;

/// Evaluates `src` and draws it with the default options.
pub fn svg(src: &str) -> R<String> {
    svg_value(&crate::eval(src)?, &Options::default())
}

/// Draws a value of the calculator (see the module's documentation for what each kind looks
/// like).
pub fn svg_value(v: &Value, o: &Options) -> R<String> {
    let panels = match (v, &o.tile) {
        (Value::Copy(c), None) => {
            let (m, n) = tile_mn(&c.tile)?;
            vec![
                tv_panel("source", &c.layout_tv, m, n, false)?,
                tv_panel("destination", &c.layout_tv, m, n, false)?,
            ]
        }
        (Value::AtomCopy(c), None) => {
            let [m, n] = c.tile;
            vec![
                tv_panel("source", &c.layout_s_tv().map_err(err)?, m, n, false)?,
                tv_panel("destination", &c.layout_d_tv().map_err(err)?, m, n, false)?,
            ]
        }
        (Value::Atom(a), None) => mma_panels(a.shape_mnk, &a.a, &a.b, &a.c)?,
        (Value::Mma(t), None) => {
            mma_panels(t.tile_mnk, &t.layout_a_tv, &t.layout_b_tv, &t.layout_c_tv)?
        }
        (Value::Composed(c), None) => {
            if o.bits <= 0 || o.bits > 1024 {
                return Err(format!(
                    "element bits must be 1 to 1024 to find banks, got {}",
                    o.bits
                ));
            }
            let bytes = o.bits as f64 / 8.0;
            slices(c.layout(), &c.to_string(), |i| {
                let x = c.call(i);
                let bank = ((x as f64 * bytes) as i64).div_euclid(4).rem_euclid(32);
                (x.to_string(), hue(bank as f64 * 360.0 / 32.0))
            })?
        }
        (v, Some(tile)) => {
            let l = to_layout(v)?;
            let (m, n) = tile_mn(tile)?;
            vec![tv_panel(&format!("{l} over {tile}"), &l, m, n, false)?]
        }
        (v, None) => {
            let l = to_layout(v)?;
            let top = (l.cosize().max(1)) as f64;
            slices(&l, &l.to_string(), |i| {
                let x = l.call(i);
                (x.to_string(), hue(300.0 * x as f64 / top))
            })?
        }
    };
    let mma = matches!((v, &o.tile), (Value::Atom(_) | Value::Mma(_), None));
    Ok(document(&panels, mma, legend(v, o)))
}

/// A sentence under the pictures saying what the colors mean.
fn legend(v: &Value, o: &Options) -> String {
    match (v, &o.tile) {
        (Value::Composed(_), None) => format!(
            "color: shared-memory bank of the index (32 banks of 4 bytes, {}-bit elements)",
            o.bits
        ),
        (Value::Layout(_) | Value::Tuple(_) | Value::Int(_), None) => {
            "color: the index (its value)".into()
        }
        _ => {
            "T# / V#: the thread and the value holding the element (the first thread where several \
              do); color: the thread"
                .into()
        }
    }
}

/// A grid of labeled, colored cells with a title.
#[derive(Clone)]
struct Panel {
    title: String,
    rows: i64,
    cols: i64,
    /// Row-major; `None` for a cell no thread holds.
    cells: Vec<Option<(String, Rgb)>>,
    /// Where the grid's top-left corner goes (set by the arrangement).
    at: (i64, i64),
}

/// An sRGB color.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl std::fmt::Display for Rgb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// A light color of hue `h` degrees (saturation 60%, lightness 78%: black text stays legible).
pub fn hue(h: f64) -> Rgb {
    let (s, l) = (0.6, 0.78);
    let c = (1.0 - (2.0 * l - 1.0f64).abs()) * s;
    let hp = h.rem_euclid(360.0) / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as i64 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let u = |v: f64| ((v + m) * 255.0).round() as u8;
    Rgb(u(r), u(g), u(b))
}

/// The color of thread `t`: hues a golden angle apart, so neighbouring threads differ.
pub fn thread_color(t: i64) -> Rgb {
    hue(t as f64 * 137.507_764)
}

/// `(M, N)` of a rank-1 or rank-2 tile shape (a rank-1 tile is one column).
fn tile_mn(tile: &IntTuple) -> R<(i64, i64)> {
    let size = |t: IntTuple| t.size().map_err(err);
    match tile.rank() {
        _ if tile.is_int() => Ok((tile.value(), 1)),
        1 => Ok((size(tile.get(0).map_err(err)?)?, 1)),
        2 => Ok((
            size(tile.get(0).map_err(err)?)?,
            size(tile.get(1).map_err(err)?)?,
        )),
        r => Err(format!(
            "a TV layout is drawn over a tile of rank 1 or 2, not {r}"
        )),
    }
}

/// Checks that `cells` more cells may be drawn.
fn check_cells(cells: i64) -> R<()> {
    if !(0..=MAX_CELLS).contains(&cells) {
        return Err(format!(
            "{cells} cells is too many to draw (at most {MAX_CELLS})"
        ));
    }
    Ok(())
}

/// The tile `M x N` (or, `transposed`, `N x M`) with each cell `T# V#`: `tv` maps `(thread,
/// value)` to `m + M n`. Errors when `tv` is not rank 2 or reaches outside the tile.
fn tv_panel(title: &str, tv: &Layout, m: i64, n: i64, transposed: bool) -> R<Panel> {
    if tv.rank() != 2 {
        return Err(format!(
            "a TV layout has rank 2 (thread, value), {tv} has rank {}",
            tv.rank()
        ));
    }
    check_cells(m.checked_mul(n).unwrap_or(i64::MAX))?;
    if tv.size() > MAX_TV {
        return Err(format!(
            "the TV layout {tv} has {} (thread, value) pairs, more than {MAX_TV} to draw",
            tv.size()
        ));
    }
    let threads = tv.get(0).map_err(err)?.size();
    let values = tv.get(1).map_err(err)?.size();
    let mut owner: Vec<Option<(i64, i64)>> = vec![None; (m * n) as usize];
    for v in 0..values {
        for t in 0..threads {
            let i = tv.call(t + threads * v);
            if !(0..m * n).contains(&i) {
                return Err(format!(
                    "the TV layout {tv} sends (thread {t}, value {v}) to {i}, outside the {m}x{n} tile"
                ));
            }
            let slot = &mut owner[i as usize];
            if slot.is_none_or(|(t0, _)| t < t0) {
                *slot = Some((t, v));
            }
        }
    }
    let (rows, cols) = if transposed { (n, m) } else { (m, n) };
    let mut cells = Vec::with_capacity((m * n) as usize);
    for r in 0..rows {
        for c in 0..cols {
            let (mm, nn) = if transposed { (c, r) } else { (r, c) };
            cells.push(
                owner[(mm + m * nn) as usize].map(|(t, v)| (format!("T{t} V{v}"), thread_color(t))),
            );
        }
    }
    Ok(Panel {
        title: title.to_string(),
        rows,
        cols,
        cells,
        at: (0, 0),
    })
}

/// A, B and C of an MMA arranged as CuTe does: B (`K x N`) above C, A (`M x K`) left of C.
fn mma_panels(mnk: [i64; 3], a: &Layout, b: &Layout, c: &Layout) -> R<Vec<Panel>> {
    let [m, n, k] = mnk;
    check_cells(m.saturating_mul(n + k).saturating_add(n.saturating_mul(k)))?;
    let pa = tv_panel(&format!("A ({m}x{k})"), a, m, k, false)?;
    let pb = tv_panel(&format!("B ({k}x{n})"), b, n, k, true)?;
    let pc = tv_panel(&format!("C ({m}x{n})"), c, m, n, false)?;
    Ok(vec![pa, pb, pc])
}

/// The layout `l` (through `f`: 1-D coordinate -> label and color) as one grid for rank 1 or 2,
/// or one grid per slice `L(_,_,k)` (`k` over modes 2.. as one colexicographic index).
fn slices(l: &Layout, title: &str, f: impl Fn(i64) -> (String, Rgb)) -> R<Vec<Panel>> {
    check_cells(l.size())?;
    let (rows, cols) = match l.rank() {
        1 => (l.size(), 1),
        _ => (l.get(0).map_err(err)?.size(), l.get(1).map_err(err)?.size()),
    };
    let per = rows * cols;
    let count = if per == 0 { 0 } else { l.size() / per };
    let mut out = Vec::new();
    for s in 0..count.max(1) {
        let mut cells = Vec::with_capacity(per as usize);
        for r in 0..rows {
            for c in 0..cols {
                cells.push(Some(f(r + rows * c + per * s)));
            }
        }
        let title = if l.rank() > 2 {
            format!("{title}  slice (_,_,{s})")
        } else {
            title.to_string()
        };
        out.push(Panel {
            title,
            rows,
            cols,
            cells,
            at: (0, 0),
        });
    }
    Ok(out)
}

/// Pixel sizes: a cell's width fits the longest label of its panel.
const CELL_H: i64 = 20;
const CHAR_W: i64 = 7;
const MARGIN: i64 = 40;
const TITLE_H: i64 = 24;

fn cell_w(p: &Panel) -> i64 {
    let longest = p
        .cells
        .iter()
        .flatten()
        .map(|(s, _)| s.len() as i64)
        .max()
        .unwrap_or(1);
    // even, so that a label's centre is a whole pixel
    ((longest * CHAR_W + 10).max(26) + 1) & !1
}

/// Each panel's size in pixels, its title and index labels included.
fn size(p: &Panel) -> (i64, i64) {
    (
        MARGIN + p.cols * cell_w(p),
        TITLE_H + CELL_H + p.rows * CELL_H,
    )
}

/// Places the panels: an MMA's three as CuTe does (B over C, A left of C), others left to
/// right; returns the document's width and height.
fn arrange(panels: &mut [Panel], mma: bool) -> (i64, i64) {
    if mma {
        let (wa, ha) = size(&panels[0]);
        let (wb, hb) = size(&panels[1]);
        let (wc, hc) = size(&panels[2]);
        panels[0].at = (MARGIN, MARGIN + hb);
        panels[1].at = (MARGIN + wa + MARGIN, MARGIN);
        panels[2].at = (MARGIN + wa + MARGIN, MARGIN + hb);
        return (
            MARGIN + wa + MARGIN + wb.max(wc) + MARGIN,
            MARGIN + hb + ha.max(hc) + MARGIN,
        );
    }
    let mut x = MARGIN;
    let mut h = 0;
    for p in panels.iter_mut() {
        let (w, ph) = size(p);
        p.at = (x, MARGIN);
        x += w + MARGIN;
        h = h.max(ph);
    }
    (x, MARGIN + h + MARGIN)
}

/// Escapes text for XML.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The SVG document of the panels (an MMA's A, B, C when `mma`), with `legend` under them.
fn document(panels: &[Panel], mma: bool, legend: String) -> String {
    let mut panels = panels.to_vec();
    let (w, h) = arrange(&mut panels, mma);
    let h = h + TITLE_H;
    let mut s = String::new();
    writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#
    )
    .unwrap();
    s.push_str(
        "<style>text{font-family:monospace;font-size:11px;text-anchor:middle;dominant-baseline:central}\
         .t{font-size:13px;text-anchor:start}.i{fill:#666}rect{stroke:#333;stroke-width:0.5}</style>\n",
    );
    writeln!(
        s,
        r##"<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff" style="stroke:none"/>"##
    )
    .unwrap();
    for p in &panels {
        let cw = cell_w(p);
        let (x0, y0) = (p.at.0 + MARGIN, p.at.1 + TITLE_H + CELL_H);
        writeln!(
            s,
            r#"<text class="t" x="{}" y="{}">{}</text>"#,
            p.at.0,
            p.at.1 + TITLE_H / 2,
            xml(&p.title)
        )
        .unwrap();
        for c in 0..p.cols {
            writeln!(
                s,
                r#"<text class="i" x="{}" y="{}">{c}</text>"#,
                x0 + c * cw + cw / 2,
                y0 - CELL_H / 2
            )
            .unwrap();
        }
        for r in 0..p.rows {
            writeln!(
                s,
                r#"<text class="i" x="{}" y="{}">{r}</text>"#,
                x0 - MARGIN / 2,
                y0 + r * CELL_H + CELL_H / 2
            )
            .unwrap();
            for c in 0..p.cols {
                let (x, y) = (x0 + c * cw, y0 + r * CELL_H);
                match &p.cells[(r * p.cols + c) as usize] {
                    Some((label, color)) => writeln!(
                        s,
                        r#"<rect x="{x}" y="{y}" width="{cw}" height="{CELL_H}" fill="{color}"/><text x="{}" y="{}">{}</text>"#,
                        x + cw / 2,
                        y + CELL_H / 2,
                        xml(label)
                    ),
                    None => writeln!(
                        s,
                        r##"<rect x="{x}" y="{y}" width="{cw}" height="{CELL_H}" fill="#ffffff"/>"##
                    ),
                }
                .unwrap();
            }
        }
    }
    writeln!(
        s,
        r#"<text class="t" x="{MARGIN}" y="{}">{}</text>"#,
        h - TITLE_H,
        xml(&legend)
    )
    .unwrap();
    s.push_str("</svg>\n");
    s
}
