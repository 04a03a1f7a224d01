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
/// `print_layout` draws it. A rank-1 layout is one column; a layout of rank 3 or more is one
/// table per slice `L(_,_,k)`, `k` running over modes 2.. as one colexicographic index.
pub fn show(l: &Layout) -> R<String> {
    draw(l, &l.to_string(), |i| l.call(i))
}

/// The tables of `f` over the domain of `l` (its 1-D coordinates), titled `title`: one, or one
/// per slice past mode 1.
fn draw(l: &Layout, title: &str, f: impl Fn(i64) -> i64) -> R<String> {
    let (rows, cols) = match l.rank() {
        1 => (l.size(), 1),
        _ => (l.get(0).map_err(err)?.size(), l.get(1).map_err(err)?.size()),
    };
    if l.size() > 1 << 16 {
        return Err(format!("{} elements is too large to draw", l.size()));
    }
    if l.rank() <= 2 {
        return table(rows, cols, title, |m, n| f(m + n * rows));
    }
    let per = rows * cols;
    let mut out = String::new();
    for k in 0..l.size() / per {
        if k > 0 {
            out.push('\n');
        }
        let t = format!("{title}  slice (_,_,{k})");
        out.push_str(&table(rows, cols, &t, |m, n| f(m + n * rows + per * k))?);
    }
    Ok(out)
}

/// One `rows x cols` table of `at(m, n)`, titled `title`.
fn table(rows: i64, cols: i64, title: &str, at: impl Fn(i64, i64) -> i64) -> R<String> {
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
