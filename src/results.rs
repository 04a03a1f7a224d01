//! The results file: the headline rows `tessel bench --results FILE` writes (each kernel case,
//! tessel's and the peers' figures, as a percentage of the same run's baseline), README.md's
//! results table rendered from it, and `tessel bench --svg FILE`'s picture of one run.
//!
//! The file is tab-separated text, one row per line under a header, `#` lines comments:
//! `device, date, command, kernel, who, value, unit, of, percent`. A run replaces the rows of its
//! device and kernel cases (every `who` of them) and keeps the rest, so a file gathers the newest
//! run of each device.

use std::fmt::Write as _;

/// One figure: `who` ran `kernel` on `device` at `value` `unit`, `percent` of `of` timed in the
/// same run (`copy`: a device-to-device copy of the same bytes; `cuBLAS`: cuBLAS on the same
/// inputs).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The device's name, as the driver gives it.
    pub device: String,
    /// The run's date, `YYYY-MM-DD` (UTC).
    pub date: String,
    /// The command that measured it.
    pub command: String,
    /// The kernel case: operation, element type, size (e.g. `rmsnorm bf16 16384x4096`).
    pub kernel: String,
    /// `tessel`, or the peer (e.g. `torch F.rms_norm`, `cuBLAS`).
    pub who: String,
    /// The figure, in `unit`.
    pub value: f64,
    /// `GB/s` or `TFLOP/s`.
    pub unit: String,
    /// The baseline `percent` is of: `copy` or `cuBLAS`.
    pub of: String,
    /// `value` as a percentage of the baseline's in the same run.
    pub percent: f64,
}

/// The header line of a results file.
pub const HEADER: &str = "device\tdate\tcommand\tkernel\twho\tvalue\tunit\tof\tpercent";

/// The rows of a results file; `Err` names the line and what is wrong with it.
pub fn parse(text: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    let mut header = false;
    for (i, line) in text.lines().enumerate() {
        let at = |what: String| format!("results line {}: {what}", i + 1);
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if !header {
            if line != HEADER {
                return Err(at(format!("the header is `{}`", HEADER.replace('\t', " "))));
            }
            header = true;
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        let [device, date, command, kernel, who, value, unit, of, percent] = f[..] else {
            return Err(at(format!("{} fields, not the header's 9", f.len())));
        };
        let number = |s: &str, name: &str| match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(at(format!("{name} `{s}` is not a non-negative number"))),
        };
        if [device, date, command, kernel, who, unit, of]
            .iter()
            .any(|s| s.is_empty())
        {
            return Err(at("an empty field".into()));
        }
        rows.push(Row {
            device: device.into(),
            date: date.into(),
            command: command.into(),
            kernel: kernel.into(),
            who: who.into(),
            value: number(value, "value")?,
            unit: unit.into(),
            of: of.into(),
            percent: number(percent, "percent")?,
        });
    }
    Ok(rows)
}

/// The text of a results file holding `rows`: `parse(&render(r)) == r` up to the figures'
/// printed precision (values to 0.1, percentages to 0.1).
pub fn render(rows: &[Row]) -> String {
    let mut s = String::from(
        "# tessel's results: written by `tessel bench ... --results FILE`; README.md's table is\n\
         # rendered from it (`tessel results FILE --readme README.md`). Percentages are of the\n\
         # baseline timed in the same run.\n",
    );
    s += HEADER;
    s.push('\n');
    for r in rows {
        let clean = |t: &str| t.replace(['\t', '\n'], " ");
        let _ = writeln!(
            s,
            "{}\t{}\t{}\t{}\t{}\t{:.1}\t{}\t{}\t{:.1}",
            clean(&r.device),
            clean(&r.date),
            clean(&r.command),
            clean(&r.kernel),
            clean(&r.who),
            r.value,
            clean(&r.unit),
            clean(&r.of),
            r.percent
        );
    }
    s
}

/// `old` with `new` in place of the rows of each (device, kernel) case `new` measured: those keep
/// their place, the others follow in `new`'s order.
pub fn merge(old: &[Row], new: &[Row]) -> Vec<Row> {
    let case = |r: &Row| (r.device.clone(), r.kernel.clone());
    let fresh: Vec<_> = new.iter().map(case).collect();
    let mut out: Vec<Row> = Vec::new();
    let mut placed = vec![false; new.len()];
    for r in old {
        if !fresh.contains(&case(r)) {
            out.push(r.clone());
            continue;
        }
        // the first old row of a case brings in all of the case's new rows
        for (k, n) in new.iter().enumerate() {
            if !placed[k] && case(n) == case(r) {
                out.push(n.clone());
                placed[k] = true;
            }
        }
    }
    out.extend(
        new.iter()
            .zip(&placed)
            .filter(|(_, p)| !**p)
            .map(|(n, _)| n.clone()),
    );
    out
}

/// The UTC date `YYYY-MM-DD` of `secs` seconds after the Unix epoch (the proleptic Gregorian
/// calendar: days to year, month, day by 400-year eras).
pub fn date_of(secs: u64) -> String {
    let days = (secs / 86_400) as i64 + 719_468;
    let era = days.div_euclid(146_097);
    let doe = days - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `n` as a power of two and a remainder under 64 when it is one (`2^26`, `2^26+5`), else in digits:
/// the copy cases' sizes.
pub fn power_of_two(n: usize) -> String {
    if n < 1024 {
        return n.to_string();
    }
    let p = n.ilog2();
    match n - (1usize << p) {
        0 => format!("2^{p}"),
        r if r < 64 => format!("2^{p}+{r}"),
        _ => n.to_string(),
    }
}

/// The short name of a device for a table's column (`NVIDIA H100 80GB HBM3` gives `H100`).
pub fn short_device(name: &str) -> String {
    let name = name.trim_start_matches("NVIDIA ");
    name.split_whitespace().next().unwrap_or(name).to_string()
}

/// A kernel case's operation, element type and size: its words (`rmsnorm`, `bf16`,
/// `16384x4096`); missing ones empty.
pub fn parts_of(kernel: &str) -> (&str, &str, &str) {
    let mut w = kernel.splitn(3, ' ');
    let mut next = || w.next().unwrap_or("");
    (next(), next(), next())
}

/// The distinct items of `items`, in the order they first appear.
pub fn distinct<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for x in items {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}

/// Each run of `rows` (command and date), in the order they first appear.
pub fn runs_of<'a>(rows: impl IntoIterator<Item = &'a Row>) -> Vec<(&'a str, &'a str)> {
    distinct(
        rows.into_iter()
            .map(|r| (r.command.as_str(), r.date.as_str())),
    )
}

/// `lo%` or `lo-hi%` (one decimal).
fn range(v: &[f64]) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if format!("{lo:.1}") == format!("{hi:.1}") {
        format!("{lo:.1}%")
    } else {
        format!("{lo:.1}-{hi:.1}%")
    }
}

/// The sizes of an operation's cases in a cell: joined by commas, or, where there are more than
/// four and each is the same number of words (`d128 causal S4096`), word by word: the distinct
/// words joined by `/`, or where more than three are each a number after one prefix, the prefix
/// and their range (`d64/d128 full/causal S1024-16384`).
pub fn sizes_cell(sizes: &[&str]) -> String {
    let words: Vec<Vec<&str>> = sizes.iter().map(|s| s.split(' ').collect()).collect();
    let n = words.first().map_or(0, |w| w.len());
    if sizes.len() <= 4 || n < 2 || words.iter().any(|w| w.len() != n) {
        return sizes.join(", ");
    }
    let column = |i: usize| -> String {
        let here = distinct(words.iter().map(|w| w[i]));
        let prefix: String = here[0]
            .chars()
            .take_while(|c| !c.is_ascii_digit())
            .collect();
        let numbers: Option<Vec<u64>> = here
            .iter()
            .map(|w| w.strip_prefix(prefix.as_str())?.parse().ok())
            .collect();
        match numbers {
            Some(v) if here.len() > 3 => {
                let (lo, hi) = (v.iter().min(), v.iter().max());
                format!("{prefix}{}-{}", lo.unwrap_or(&0), hi.unwrap_or(&0))
            }
            _ => here.join("/"),
        }
    };
    (0..n).map(column).collect::<Vec<_>>().join(" ")
}

/// README.md's results table: a row per operation (in the file's order) with its element types
/// and sizes, a pair of columns per device (in the file's order): tessel's percentages of the
/// baseline over the cases, and the best peer's over the same cases (each case's best; the
/// baseline itself is no peer) with its name(s); then one line with each device's runs (commands
/// and dates).
pub fn markdown(rows: &[Row]) -> String {
    let devices = distinct(rows.iter().map(|r| r.device.as_str()));
    let ops = distinct(rows.iter().map(|r| parts_of(&r.kernel).0));
    let mut s = String::from("| kernel | types | sizes | of |");
    for d in &devices {
        let _ = write!(s, " {} tessel | best peer |", short_device(d));
    }
    s += "\n| --- | --- | --- | --- |";
    s += &" ---: | --- |".repeat(devices.len());
    s.push('\n');
    for op in &ops {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| parts_of(&r.kernel).0 == *op)
            .collect();
        let types = distinct(mine.iter().map(|r| parts_of(&r.kernel).1));
        let sizes = sizes_cell(&distinct(mine.iter().map(|r| parts_of(&r.kernel).2)));
        let cases = distinct(mine.iter().map(|r| r.kernel.as_str()));
        let _ = write!(
            s,
            "| {op} | {} | {} | {} |",
            types.join(", "),
            sizes,
            mine[0].of
        );
        for d in &devices {
            let here: Vec<&&Row> = mine.iter().filter(|r| r.device == *d).collect();
            let ours: Vec<f64> = here
                .iter()
                .filter(|r| r.who == "tessel")
                .map(|r| r.percent)
                .collect();
            // each case's best peer
            let peers: Vec<&&&Row> = cases
                .iter()
                .filter_map(|case| {
                    here.iter()
                        .filter(|r| r.kernel == *case && r.who != "tessel" && r.who != r.of)
                        .max_by(|a, b| a.percent.total_cmp(&b.percent))
                })
                .collect();
            let best: Vec<f64> = peers.iter().map(|r| r.percent).collect();
            let who = distinct(peers.iter().map(|r| r.who.as_str()));
            let cell = |v: &[f64]| {
                if v.is_empty() {
                    String::new()
                } else {
                    range(v)
                }
            };
            let peer = if who.is_empty() {
                String::new()
            } else {
                let who: Vec<String> = who.iter().map(|w| format!("`{w}`")).collect();
                format!("{} {}", cell(&best), who.join(" / "))
            };
            for c in [cell(&ours), peer] {
                s += &if c.is_empty() {
                    " |".to_string()
                } else {
                    format!(" {c} |")
                };
            }
        }
        s.push('\n');
    }
    let mut runs = Vec::new();
    for d in &devices {
        let mine: Vec<String> = runs_of(rows.iter().filter(|r| r.device == *d))
            .iter()
            .map(|(c, day)| format!("`{c}` ({day})"))
            .collect();
        runs.push(format!("{d}: {}", mine.join(", ")));
    }
    let _ = writeln!(s, "\n{}.", runs.join("; "));
    s
}

/// Replaces the text between README's markers `<!-- results -->` and `<!-- /results -->` with
/// `table`; `Err` when the markers are missing or out of order.
pub fn into_readme(readme: &str, table: &str) -> Result<String, String> {
    let (open, close) = ("<!-- results -->\n", "<!-- /results -->");
    let a = readme
        .find(open)
        .ok_or("README has no `<!-- results -->` line")?;
    let b = readme[a..]
        .find(close)
        .map(|b| a + b)
        .ok_or("README has no `<!-- /results -->` after `<!-- results -->`")?;
    Ok(format!("{}{open}{table}{}", &readme[..a], &readme[b..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(device: &str, kernel: &str, who: &str, percent: f64) -> Row {
        Row {
            device: device.into(),
            date: "2026-11-28".into(),
            command: "tessel bench rmsnorm --peers".into(),
            kernel: kernel.into(),
            who: who.into(),
            value: 2900.5,
            unit: "GB/s".into(),
            of: "copy".into(),
            percent,
        }
    }

    #[test]
    fn sizes_near_a_power_of_two_read_as_one() {
        assert_eq!(power_of_two(1 << 26), "2^26");
        assert_eq!(power_of_two((1 << 26) + 5), "2^26+5");
        assert_eq!(power_of_two(3000), "3000");
        assert_eq!(power_of_two(1000), "1000");
        assert_eq!(power_of_two(0), "0");
    }

    #[test]
    fn dates_are_utc_calendar_days() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(date_of(951_868_799), "2000-02-29");
        assert_eq!(date_of(951_868_800), "2000-03-01");
        assert_eq!(date_of(1_795_824_000), "2026-11-28");
        assert_eq!(date_of(4_107_542_400), "2100-03-01");
    }

    #[test]
    fn a_file_reads_back_what_was_written() {
        let rows = vec![
            row(
                "NVIDIA H100 80GB HBM3",
                "rmsnorm bf16 16384x4096",
                "tessel",
                96.1,
            ),
            row(
                "NVIDIA H100 80GB HBM3",
                "rmsnorm bf16 16384x4096",
                "torch F.rms_norm",
                72.4,
            ),
        ];
        assert_eq!(parse(&render(&rows)).unwrap(), rows);
    }

    #[test]
    fn bad_files_name_the_line_and_the_fault() {
        assert_eq!(
            parse("a\tb\n").unwrap_err(),
            format!(
                "results line 1: the header is `{}`",
                HEADER.replace('\t', " ")
            )
        );
        let short = format!("# c\n{HEADER}\nd\t2026\tc\tk\tw\t1\tGB/s\tcopy\n");
        assert_eq!(
            parse(&short).unwrap_err(),
            "results line 3: 8 fields, not the header's 9"
        );
        let nan = format!("{HEADER}\nd\t2026\tc\tk\tw\tNaN\tGB/s\tcopy\t1\n");
        assert_eq!(
            parse(&nan).unwrap_err(),
            "results line 2: value `NaN` is not a non-negative number"
        );
        let empty = format!("{HEADER}\nd\t\tc\tk\tw\t1\tGB/s\tcopy\t1\n");
        assert_eq!(parse(&empty).unwrap_err(), "results line 2: an empty field");
    }

    #[test]
    fn a_run_replaces_its_cases_and_keeps_the_rest() {
        let (h100, h200) = ("NVIDIA H100 80GB HBM3", "NVIDIA H200");
        let old = vec![
            row(h100, "copy f32", "tessel", 99.0),
            row(h100, "rmsnorm", "tessel", 90.0),
            row(h100, "rmsnorm", "torch", 70.0),
            row(h200, "rmsnorm", "tessel", 91.0),
        ];
        let new = vec![
            row(h100, "rmsnorm", "tessel", 96.0),
            row(h100, "axpby", "tessel", 97.0),
        ];
        let got = merge(&old, &new);
        let want = vec![
            old[0].clone(),
            new[0].clone(),
            old[3].clone(),
            new[1].clone(),
        ];
        assert_eq!(got, want);
        // merging the same run twice changes nothing
        assert_eq!(merge(&got, &new), got);
    }

    #[test]
    fn many_sizes_read_word_by_word() {
        let cases: Vec<String> = ["d64", "d128", "d256"]
            .iter()
            .flat_map(|d| {
                [1024, 2048, 16384]
                    .iter()
                    .flat_map(move |s| ["full", "causal"].map(|m| format!("{d} {m} S{s}")))
            })
            .collect();
        let cases: Vec<&str> = cases.iter().map(|c| c.as_str()).collect();
        assert_eq!(sizes_cell(&cases[..4]), cases[..4].join(", "));
        assert_eq!(
            sizes_cell(&cases),
            "d64/d128/d256 full/causal S1024/S2048/S16384"
        );
        let more = ["a S1", "a S20", "a S3", "b S4", "b S5"];
        assert_eq!(sizes_cell(&more), "a/b S1-20");
        let words = ["x 1", "y 2", "z 3", "w 4", "v 5"];
        assert_eq!(sizes_cell(&words), "x/y/z/w/v 1-5");
        let uneven = ["a b", "a b", "c", "d e", "f g"];
        assert_eq!(sizes_cell(&uneven), uneven.join(", "));
        let single = ["2^26", "2^27", "2^26+5", "7", "9"];
        assert_eq!(sizes_cell(&single), single.join(", "));
    }

    #[test]
    fn the_table_has_a_column_pair_per_device_and_the_best_peer() {
        let (h100, h200) = ("NVIDIA H100 80GB HBM3", "NVIDIA H200");
        let rows = vec![
            row(h100, "rmsnorm bf16 4096", "tessel", 96.1),
            row(h100, "rmsnorm bf16 4096", "torch F.rms_norm", 72.4),
            row(h100, "rmsnorm bf16 4096", "torch.compile", 88.0),
            row(h100, "rmsnorm f32 8192", "tessel", 97.16),
            row(h100, "rmsnorm f32 8192", "torch F.rms_norm", 91.0),
            row(h100, "rmsnorm f32 8192", "torch.compile", 90.0),
            row(h200, "rmsnorm bf16 4096", "tessel", 95.0),
            row(h200, "gemm bf16 4096", "tessel", 99.0),
        ];
        let t = markdown(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(
            lines[0],
            "| kernel | types | sizes | of | H100 tessel | best peer | H200 tessel | best peer |"
        );
        assert_eq!(
            lines[2],
            "| rmsnorm | bf16, f32 | 4096, 8192 | copy | 96.1-97.2% | 88.0-91.0% `torch.compile` / `torch F.rms_norm` | 95.0% | |"
        );
        assert_eq!(lines[3], "| gemm | bf16 | 4096 | copy | | | 99.0% | |");
        assert_eq!(
            lines[5],
            "NVIDIA H100 80GB HBM3: `tessel bench rmsnorm --peers` (2026-11-28); NVIDIA H200: `tessel bench rmsnorm --peers` (2026-11-28)."
        );
        let readme = "# x\n<!-- results -->\nold\n<!-- /results -->\nend\n";
        let new = into_readme(readme, &t).unwrap();
        assert!(new.starts_with("# x\n<!-- results -->\n| kernel"), "{new}");
        assert!(
            new.ends_with(".\n\n<!-- /results -->\nend\n")
                || new.ends_with(".\n<!-- /results -->\nend\n"),
            "{new}"
        );
        assert_eq!(
            into_readme("no markers", &t).unwrap_err(),
            "README has no `<!-- results -->` line"
        );
    }
}
