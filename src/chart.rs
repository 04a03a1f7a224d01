//! `tessel bench --svg FILE`: one run drawn as bars, each kernel case's figures (tessel's first,
//! then the peers', best first) as percentages of the baseline timed in the same run, with the
//! baseline's 100% marked.

use std::fmt::Write as _;

use crate::results::{self, Row};

/// Left of the bars: the cases' and the bars' labels.
const LABELS: f64 = 290.0;
/// The bars' full width.
const BARS: f64 = 420.0;
/// One bar's height and the space under it.
const BAR: f64 = 14.0;
const GAP: f64 = 3.0;
/// Space above a case's bars (its name) and after them.
const CASE_HEAD: f64 = 18.0;
const CASE_GAP: f64 = 8.0;

/// `s` with XML's special characters escaped.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The picture of `rows` (one device's: the first row's device, then each run's command and
/// date, are the title): a self-contained SVG document. Every row is one bar whose length is its
/// percentage on a scale from 0 to the largest percentage (at least 110%) rounded up to 10; cases
/// keep their order.
pub fn svg(rows: &[Row]) -> String {
    let cases = results::distinct(rows.iter().map(|r| r.kernel.as_str()));
    let top = rows.iter().map(|r| r.percent).fold(110.0f64, f64::max);
    let scale = (top / 10.0).ceil() * 10.0;
    let x = |p: f64| LABELS + BARS * p / scale;
    let runs: Vec<String> = results::runs_of(rows)
        .iter()
        .map(|(command, date)| format!("{command} ({date})"))
        .collect();
    let title = match rows.first() {
        Some(r) => format!("{}: {}", r.device, runs.join(", ")),
        None => "no results".to_string(),
    };
    let head = 58.0;
    let height = head
        + cases
            .iter()
            .map(|c| {
                let n = rows.iter().filter(|r| r.kernel == *c).count() as f64;
                CASE_HEAD + n * (BAR + GAP) + CASE_GAP
            })
            .sum::<f64>()
        + 10.0;
    let width = LABELS + BARS + 80.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, DejaVu Sans, sans-serif" font-size="11">"##
    );
    let _ = writeln!(s, r##"<rect width="100%" height="100%" fill="white"/>"##);
    let _ = writeln!(
        s,
        r##"<text x="8" y="16" font-size="13" font-weight="bold">{}</text>"##,
        xml(&title)
    );
    let _ = writeln!(
        s,
        r##"<text x="8" y="32" fill="#444">percent of the baseline timed in the same run (copy: a device-to-device copy of the same bytes; cuBLAS: on the same inputs)</text>"##
    );
    // the 100% line, over the whole height
    let _ = writeln!(
        s,
        r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#c33" stroke-dasharray="4 3"/><text x="{0:.1}" y="{3}" fill="#c33" text-anchor="middle">100%</text>"##,
        x(100.0),
        head - 4.0,
        height - 6.0,
        head - 6.0
    );
    let mut y = head;
    for case in &cases {
        let mut here: Vec<&Row> = rows.iter().filter(|r| r.kernel == *case).collect();
        // tessel first, then the peers best first
        here.sort_by(|a, b| {
            (b.who == "tessel")
                .cmp(&(a.who == "tessel"))
                .then(b.percent.total_cmp(&a.percent))
        });
        let of = here.first().map_or("", |r| r.of.as_str());
        let _ = writeln!(
            s,
            r##"<text x="8" y="{:.1}" font-weight="bold">{} <tspan font-weight="normal" fill="#666">(% of {})</tspan></text>"##,
            y + 12.0,
            xml(case),
            xml(of)
        );
        y += CASE_HEAD;
        for r in here {
            let fill = if r.who == "tessel" {
                "#2b6cb0"
            } else {
                "#a0aec0"
            };
            let _ = writeln!(
                s,
                r##"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect x="{LABELS}" y="{y:.1}" width="{:.1}" height="{BAR}" fill="{fill}"/><text x="{:.1}" y="{:.1}">{:.1}%</text>"##,
                LABELS - 6.0,
                y + 11.0,
                xml(&r.who),
                x(r.percent) - LABELS,
                x(r.percent) + 4.0,
                y + 11.0,
                r.percent
            );
            y += BAR + GAP;
        }
        y += CASE_GAP;
    }
    s += "</svg>\n";
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kernel: &str, who: &str, percent: f64) -> Row {
        Row {
            device: "NVIDIA H100 80GB HBM3".into(),
            date: "2026-11-28".into(),
            command: "tessel bench --peers".into(),
            kernel: kernel.into(),
            who: who.into(),
            value: 1.0,
            unit: "GB/s".into(),
            of: "copy".into(),
            percent,
        }
    }

    /// The bars' widths, in document order, read back from the XML.
    fn bars(svg: &str) -> Vec<(String, f64)> {
        let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
        let rects = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("y").is_some());
        let labels: Vec<String> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text") && n.attribute("text-anchor") == Some("end"))
            .map(|n| n.text().unwrap_or("").to_string())
            .collect();
        rects
            .map(|n| n.attribute("width").unwrap().parse().unwrap())
            .zip(labels)
            .map(|(w, l)| (l, w))
            .collect()
    }

    #[test]
    fn each_row_is_a_bar_as_long_as_its_percentage() {
        let rows = vec![
            row("rmsnorm bf16 <4096>", "torch F.rms_norm", 72.0),
            row("rmsnorm bf16 <4096>", "tessel", 96.0),
            row("rmsnorm bf16 <4096>", "torch.compile", 88.0),
            row("copy f32", "tessel", 99.0),
        ];
        let s = svg(&rows);
        let got = bars(&s);
        // tessel first, then the peers best first; the scale is 0..110%
        let names: Vec<&str> = got.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(
            names,
            ["tessel", "torch.compile", "torch F.rms_norm", "tessel"]
        );
        for ((_, w), p) in got.iter().zip([96.0, 88.0, 72.0, 99.0]) {
            assert!((w - BARS * p / 110.0).abs() < 0.06, "{w} for {p}%");
        }
        // the case name's `<` escaped, the title the run's
        assert!(s.contains("rmsnorm bf16 &lt;4096&gt;"));
        assert!(s.contains("NVIDIA H100 80GB HBM3: tessel bench --peers (2026-11-28)"));
    }

    #[test]
    fn a_figure_past_the_scale_widens_it() {
        let s = svg(&[row("gemm", "tessel", 123.0), row("gemm", "cuBLAS", 100.0)]);
        let got = bars(&s);
        assert!((got[0].1 - BARS * 123.0 / 130.0).abs() < 0.06, "{got:?}");
        assert!((got[1].1 - BARS * 100.0 / 130.0).abs() < 0.06, "{got:?}");
    }
}
