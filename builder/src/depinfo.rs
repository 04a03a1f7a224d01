//! Dep-info files (`target: prerequisite prerequisite ...`, Makefile syntax), as rustc and cargo
//! write them: which source files a build read.

use std::path::PathBuf;

/// The prerequisites of every rule in `text`, each once, in the order they first appear.
///
/// Rules are `target: prerequisites` lines; a line ending in an unescaped `\` goes on on the next
/// line. A space preceded by `\` is part of a path (`my\ dir/lib.rs` is `my dir/lib.rs`), other
/// whitespace separates paths; `#` lines (rustc's `# env-dep:` and `# checksum:` notes), blank
/// lines and lines with no `:` separator are skipped. Rules with no prerequisite (rustc's
/// `src/lib.rs:` lines) add nothing. Paths are returned as written (relative ones are relative
/// to the directory the compiler ran in).
pub(crate) fn prerequisites(text: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut logical = String::new();
    for line in text.lines() {
        let continued = line.ends_with('\\') && !line.ends_with("\\\\");
        logical.push_str(if continued {
            &line[..line.len() - 1]
        } else {
            line
        });
        if continued {
            logical.push(' ');
            continue;
        }
        for p in rule_prerequisites(&logical) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        logical.clear();
    }
    for p in rule_prerequisites(&logical) {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The prerequisites of one (joined) rule line.
fn rule_prerequisites(line: &str) -> Vec<PathBuf> {
    if line.trim_start().starts_with('#') {
        return Vec::new();
    }
    // the separator: the first `:` that ends a word (followed by whitespace or the end of the
    // line), so that a `:` inside a path does not count
    let bytes = line.as_bytes();
    let Some(sep) = (0..bytes.len())
        .find(|&i| bytes[i] == b':' && bytes.get(i + 1).is_none_or(|c| c.is_ascii_whitespace()))
    else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    let mut word = String::new();
    let mut chars = line[sep + 1..].chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' && chars.peek() == Some(&' ') {
            word.push(' ');
            chars.next();
        } else if c.is_whitespace() {
            if !word.is_empty() {
                paths.push(PathBuf::from(std::mem::take(&mut word)));
            }
        } else {
            word.push(c);
        }
    }
    if !word.is_empty() {
        paths.push(PathBuf::from(word));
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::prerequisites;
    use std::path::PathBuf;

    fn paths(v: &[&str]) -> Vec<PathBuf> {
        v.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn cargos_dep_info_lists_every_source() {
        let d = "/t/release/tessel_gpu.ptx: /w/gpu/src/lib.rs /w/gpu/src/mem.rs /w/layout-core/src/lib.rs\n";
        assert_eq!(
            prerequisites(d),
            paths(&[
                "/w/gpu/src/lib.rs",
                "/w/gpu/src/mem.rs",
                "/w/layout-core/src/lib.rs"
            ])
        );
    }

    #[test]
    fn escaped_spaces_are_part_of_the_path() {
        let d = "/my\\ target/k.s: /my\\ crate/src/lib.rs /my\\ crate/src/a\\ b\\ c.rs /x.rs\n";
        assert_eq!(
            prerequisites(d),
            paths(&["/my crate/src/lib.rs", "/my crate/src/a b c.rs", "/x.rs"])
        );
    }

    #[test]
    fn several_targets_give_their_prerequisites_once() {
        // rustc's own file: one rule per output, then an empty rule per source, then notes
        let d = "/t/deps/k.s: src/lib.rs src/a.rs\n\n\
                 /t/deps/k.d: src/lib.rs src/a.rs\n\n\
                 /t/deps/k.ptx: src/lib.rs src/a.rs src/b.rs\n\n\
                 src/lib.rs:\nsrc/a.rs:\nsrc/b.rs:\n\n\
                 # env-dep:CARGO_PKG_NAME=k\n# checksum:abc /x: y\n";
        assert_eq!(
            prerequisites(d),
            paths(&["src/lib.rs", "src/a.rs", "src/b.rs"])
        );
    }

    #[test]
    fn continued_lines_and_colons_in_paths() {
        let d = "out.s: a.rs \\\n  b.rs\\\n c:d.rs\n";
        assert_eq!(prerequisites(d), paths(&["a.rs", "b.rs", "c:d.rs"]));
        assert_eq!(prerequisites("no rule here\n"), Vec::<PathBuf>::new());
        assert_eq!(prerequisites("x.s:\n"), Vec::<PathBuf>::new());
        // no newline at the end
        assert_eq!(prerequisites("x.s: y.rs"), paths(&["y.rs"]));
    }
}
