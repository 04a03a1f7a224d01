//! `tessel show`: a layout as a text table of its indices.

use crate::value::*;
use layout_core::*;
use std::fmt::Write as _;

/// Draws a value of the calculator (a layout, a shape, or a swizzled layout) as `tessel show`
/// prints it.
pub fn show_value(v: &Value) -> R<String> {
    match v {
        Value::Composed(c) => draw(c.layout(), &c.to_string(), |i| c.call(i)),
        other => show(&to_layout(other)?),
    }
}

/// The layout as a 2-D table of its indices, rows over mode 0 and columns over mode 1, as CuTe's
/// `print_layout` draws it. A rank-1 layout is one column.
pub fn show(l: &Layout) -> R<String> {
    draw(l, &l.to_string(), |i| l.call(i))
}

/// The table of `f` over the domain of `l` (its 1-D coordinates), titled `title`.
fn draw(l: &Layout, title: &str, f: impl Fn(i64) -> i64) -> R<String> {
    let (rows, cols) = match l.rank() {
        1 => (l.size(), 1),
        2 => (l.get(0).map_err(err)?.size(), l.get(1).map_err(err)?.size()),
        r => {
            return Err(format!(
                "show draws layouts of rank 1 or 2, this one has rank {r}"
            ))
        }
    };
    if rows * cols > 1 << 16 {
        return Err(format!("{rows}x{cols} is too large to draw"));
    }
    let at = |m: i64, n: i64| f(m + n * rows);
    let mut widest = 1;
    for m in 0..rows {
        for n in 0..cols {
            widest = widest.max(at(m, n).to_string().len());
        }
    }
    let w = widest + 2;
    let mut out = String::new();
    writeln!(out, "{title}").unwrap();
    let rule = |out: &mut String| {
        out.push_str("    ");
        for _ in 0..cols {
            out.push('+');
            out.push_str(&"-".repeat(w));
        }
        out.push_str("+\n");
    };
    out.push_str("    ");
    for n in 0..cols {
        write!(out, " {n:>width$} ", width = w - 1).unwrap();
    }
    out.push('\n');
    for m in 0..rows {
        rule(&mut out);
        write!(out, "{m:>2}  ").unwrap();
        for n in 0..cols {
            write!(out, "|{:>width$}", at(m, n), width = w - 1).unwrap();
            out.push(' ');
        }
        out.push_str("|\n");
    }
    rule(&mut out);
    Ok(out)
}
