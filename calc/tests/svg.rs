//! `tessel svg`'s pictures, rendered to pixels (resvg) and read back as XML (roxmltree): the cell
//! of a known coordinate sits under its row and column labels, carries the label the algebra
//! gives it and is filled, in the rendered pixels, with the color that label's rule gives; and
//! the gallery's pictures (docs/gallery, shown in docs/calculator.md) are golden files.

use layout_core::{ComposedLayout, Layout};
use tessel_calc::svg::{hue, svg_value, thread_color, Options, Rgb};
use tessel_calc::{eval, svg};

/// One drawn cell: its rectangle, fill and label.
#[derive(Debug)]
struct Cell {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
    fill: String,
    label: String,
}

fn num(n: roxmltree::Node, a: &str) -> f64 {
    n.attribute(a).unwrap().parse().unwrap()
}

/// Every labeled cell (a `<rect>` directly followed by its `<text>`) of the document.
fn cells(doc: &roxmltree::Document) -> Vec<Cell> {
    let els: Vec<_> = doc
        .root_element()
        .children()
        .filter(|n| n.is_element())
        .collect();
    els.windows(2)
        .filter(|w| w[0].has_tag_name("rect") && w[1].has_tag_name("text"))
        .filter(|w| w[1].attribute("class").is_none())
        .map(|w| Cell {
            x: num(w[0], "x"),
            y: num(w[0], "y"),
            w: num(w[0], "width"),
            h: num(w[0], "height"),
            fill: w[0].attribute("fill").unwrap().to_string(),
            label: w[1].text().unwrap_or("").to_string(),
        })
        .collect()
}

/// The `(x, y)` of the index label `text` (row or column numbers, class `i`), all of them.
fn index_labels(doc: &roxmltree::Document, text: &str) -> Vec<(f64, f64)> {
    doc.root_element()
        .children()
        .filter(|n| n.has_tag_name("text") && n.attribute("class") == Some("i"))
        .filter(|n| n.text() == Some(text))
        .map(|n| (num(n, "x"), num(n, "y")))
        .collect()
}

/// The cell at row `r`, column `c` of the (first) grid: under column label `c`, beside row label
/// `r`.
fn cell_at(doc: &roxmltree::Document, r: i64, c: i64) -> Cell {
    let col_x = index_labels(doc, &c.to_string());
    let row_y = index_labels(doc, &r.to_string());
    cells(doc)
        .into_iter()
        .find(|k| {
            let (cx, cy) = (k.x + k.w / 2.0, k.y + k.h / 2.0);
            col_x.iter().any(|&(x, _)| x == cx) && row_y.iter().any(|&(_, y)| y == cy)
        })
        .unwrap_or_else(|| panic!("no cell at row {r}, column {c}"))
}

/// The document rendered to pixels: the color at `(x, y)`.
fn render(svg: &str) -> resvg::tiny_skia::Pixmap {
    let tree = resvg::usvg::Tree::from_str(svg, &resvg::usvg::Options::default()).unwrap();
    let size = tree.size().to_int_size();
    let mut pix = resvg::tiny_skia::Pixmap::new(size.width(), size.height()).unwrap();
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pix.as_mut(),
    );
    pix
}

fn pixel(p: &resvg::tiny_skia::Pixmap, x: f64, y: f64) -> Rgb {
    let c = p.pixel(x as u32, y as u32).unwrap();
    Rgb(c.red(), c.green(), c.blue())
}

/// Checks the cell at `(r, c)`: its label, its fill, and the rendered pixels inside it (away
/// from the label and the border).
fn check_cell(svg: &str, pix: &resvg::tiny_skia::Pixmap, r: i64, c: i64, label: &str, color: Rgb) {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let k = cell_at(&doc, r, c);
    assert_eq!(k.label, label, "label of cell ({r},{c})");
    assert_eq!(k.fill, color.to_string(), "fill of cell ({r},{c})");
    assert_eq!(
        pixel(pix, k.x + 2.0, k.y + 2.5),
        color,
        "pixels of cell ({r},{c})"
    );
}

#[test]
fn a_layout_cell_carries_its_index_and_the_index_color() {
    let l = Layout::parse("(4,8):(8,1)").unwrap();
    let s = svg("(4,8):(8,1)").unwrap();
    let pix = render(&s);
    for (r, c) in [(0, 0), (2, 5), (3, 7)] {
        let x = l.call(r + 4 * c);
        check_cell(&s, &pix, r, c, &x.to_string(), hue(300.0 * x as f64 / 32.0));
    }
    assert_eq!(cells(&roxmltree::Document::parse(&s).unwrap()).len(), 32);
}

#[test]
fn a_swizzled_layout_is_colored_by_bank() {
    let expr = "Sw<3,3,3> o (8,64):(64,1)";
    let sw = match eval(expr).unwrap() {
        tessel_calc::Value::Composed(c) => c,
        v => panic!("{v}"),
    };
    let bank = |c: &ComposedLayout, i: i64, bytes: i64| (c.call(i) * bytes / 4) % 32;
    for bits in [16, 32] {
        let s = svg_value(
            &tessel_calc::Value::Composed(sw),
            &Options { bits, tile: None },
        )
        .unwrap();
        let pix = render(&s);
        for (r, c) in [(0, 0), (1, 0), (5, 9), (7, 63)] {
            let i = r + 8 * c;
            let b = bank(&sw, i, bits / 8);
            check_cell(
                &s,
                &pix,
                r,
                c,
                &sw.call(i).to_string(),
                hue(b as f64 * 11.25),
            );
        }
    }
}

#[test]
fn a_tv_layout_labels_each_element_with_its_thread_and_value() {
    // the SM80 16x8 C fragment: thread t holds (t/4, 2(t%4)) and (t/4, 2(t%4)+1) as values 0 and
    // 1, and the same 8 rows further down as values 2 and 3
    let s = svg("make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN)").unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap();
    // the third grid is C; its cells are the last 16 x 8
    let all = cells(&doc);
    assert_eq!(all.len(), 16 * 16 + 8 * 16 + 16 * 8);
    let c_cells = &all[all.len() - 128..];
    let pix = render(&s);
    for t in [0i64, 5, 31] {
        for v in 0..4 {
            let (m, n) = (t / 4 + 8 * (v / 2), 2 * (t % 4) + v % 2);
            let k = &c_cells[(m * 8 + n) as usize];
            assert_eq!(k.label, format!("T{t} V{v}"), "C({m},{n})");
            assert_eq!(k.fill, thread_color(t).to_string());
            assert_eq!(pixel(&pix, k.x + 2.0, k.y + 2.5), thread_color(t));
        }
    }
    // B is drawn K x N, above C and right of A
    let (a0, b0, c0) = (&all[0], &all[256], &all[all.len() - 128]);
    assert!(b0.y < c0.y && b0.x == c0.x && a0.x < c0.x && a0.y == c0.y);
}

#[test]
fn a_tiled_copy_draws_source_and_destination_side_by_side() {
    let s =
        svg("make_tiled_copy_A(SM75_U32x4_LDSM_N, make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN))")
            .unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap();
    let all = cells(&doc);
    assert_eq!(all.len(), 2 * 16 * 16);
    assert!(all[256].x > all[255].x && all[256].y == all[0].y);
    assert!(s.contains(">source<") && s.contains(">destination<"));
}

#[test]
fn a_128x256_c_tile_stays_legible() {
    // a warpgroup's 64x256 wgmma, two along M: the 128x256 C tile of a Hopper GEMM
    let v = eval("make_tiled_mma(SM90_64x256x16_F32BF16BF16_SS, (2,1))").unwrap();
    let s = svg_value(&v, &Options::default()).unwrap();
    let doc = roxmltree::Document::parse(&s).unwrap();
    let all = cells(&doc);
    let c_cells = &all[all.len() - 128 * 256..];
    // every label fits its cell at the 11px monospace font (under 7px a character)
    for k in c_cells {
        assert!(k.label.len() as f64 * 7.0 < k.w, "{k:?}");
        assert!(k.h >= 14.0);
    }
    assert!(s.contains("font-size:11px"));
    assert_eq!(c_cells[0].label, "T0 V0");
}

#[test]
fn rank_3_layouts_are_slices_and_bad_input_is_an_error() {
    let s = svg("(2,3,4):(1,2,6)").unwrap();
    for k in 0..4 {
        assert!(s.contains(&format!("slice (_,_,{k})")), "slice {k}");
    }
    assert_eq!(cells(&roxmltree::Document::parse(&s).unwrap()).len(), 24);
    let tv = eval("(4,2):(1,4)").unwrap();
    let bad = |tile: &str| {
        let tile = Some(layout_core::IntTuple::parse(tile).unwrap());
        svg_value(&tv, &Options { bits: 16, tile }).unwrap_err()
    };
    assert!(
        bad("(2,2)").contains("outside the 2x2 tile"),
        "{}",
        bad("(2,2)")
    );
    assert!(bad("(2,2,2)").contains("rank 1 or 2"));
    assert!(svg("(1024,1024):(1,1024)")
        .unwrap_err()
        .contains("too many"));
    assert!(svg("composition(").is_err());
}

/// The gallery (docs/gallery/*.svg, in docs/calculator.md) is what `tessel svg` draws today;
/// `TESSEL_BLESS=1` rewrites it.
#[test]
fn gallery_golden_files() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/gallery");
    for (file, expr, tile) in GALLERY {
        let v = eval(expr).unwrap();
        let tile = tile.map(|t| layout_core::IntTuple::parse(t).unwrap());
        let got = svg_value(&v, &Options { bits: 16, tile }).unwrap();
        let path = dir.join(file);
        if std::env::var_os("TESSEL_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &got).unwrap();
        }
        let want = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (TESSEL_BLESS=1 writes it)", path.display()));
        assert!(
            got == want,
            "{file} differs from `tessel svg` of {expr} (TESSEL_BLESS=1 rewrites it)"
        );
    }
}

/// docs/calculator.md's gallery: file, expression, tile.
const GALLERY: &[(&str, &str, Option<&str>)] = &[
    ("layout.svg", "(4,8):(8,1)", None),
    (
        "blocked_product.svg",
        "blocked_product((2,5):(5,1),(3,4):(1,3))",
        None,
    ),
    ("swizzle.svg", "Sw<2,3,3> o (8,32):(32,1)", None),
    (
        "transpose_tv.svg",
        "((32,8),(2,8)):((64,1),(2048,8))",
        Some("(64,64)"),
    ),
    (
        "tiled_copy.svg",
        "make_tiled_copy_A(SM75_U32x4_LDSM_N, make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN))",
        None,
    ),
    (
        "tiled_mma.svg",
        "make_tiled_mma(SM80_16x8x16_F32F16F16F32_TN, (2,2))",
        None,
    ),
];
