//! The entries' performance directives, which rustc cannot write: a kernel crate declares them as
//! globals, and the builder moves them into the entries' headers.

/// Writes the entries' performance directives into their headers: for every global
/// `<entry>__<directive>` (a `u32`, as tessel's `ptx_directives!` declares them) with
/// `<directive>` `maxntid` or `reqnctapercluster`, the line `.<directive> N, 1, 1` after the
/// entry's parameter list.
///
/// `Ok` holds `ptx` with those lines added and nothing else changed (the globals stay). `Err`
/// names the global when its initialiser is not a `u32`, when `N` is 0 or over the directive's
/// limit (1024 threads for `maxntid`, 16 blocks for `reqnctapercluster`), or when the PTX has no
/// entry of that name.
pub(crate) fn launch_bounds(ptx: &str) -> Result<String, String> {
    let mut out = ptx.to_string();
    for line in ptx.lines() {
        let Some(rest) = line.strip_prefix(".visible .global .align 4 .b8 ") else {
            continue;
        };
        let Some((decl, init)) = rest.split_once("[4] = {") else {
            continue;
        };
        let Some((name, directive)) = ["maxntid", "reqnctapercluster"]
            .iter()
            .find_map(|d| Some((decl.strip_suffix(&format!("__{d}"))?, *d)))
        else {
            continue;
        };
        // the u32's bytes, little-endian, trailing zeros left out
        let bytes: Result<Vec<u32>, _> = init
            .trim_end_matches("};")
            .split(',')
            .map(|b| b.trim().parse::<u32>())
            .collect();
        let n = match bytes {
            Ok(b) if !b.is_empty() && b.len() <= 4 && b.iter().all(|&x| x < 256) => {
                b.iter().rev().fold(0u32, |n, &x| (n << 8) | x)
            }
            _ => return Err(format!("{decl}: not a u32 initialiser: {line}")),
        };
        let limit = if directive == "maxntid" { 1024 } else { 16 };
        if n == 0 || n > limit {
            return Err(format!("{decl}: {n} outside 1..={limit}"));
        }
        let head = format!(".entry {name}(");
        let Some(at) = out.find(&head) else {
            return Err(format!("{decl} names no entry {name} in the PTX"));
        };
        let Some(close) = out[at..].find("\n)\n") else {
            return Err(format!("{name}: the entry's parameter list has no end"));
        };
        let pos = at + close + 3;
        out.insert_str(pos, &format!(".{directive} {n}, 1, 1\n"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::launch_bounds;

    /// Two entries, the first with both directives (128 = `{128}`, 384 = `{128, 1}`).
    fn ptx(maxntid: &str, cluster: &str, entry: &str) -> String {
        format!(
            "//\n.version 8.3\n.target sm_90a\n.address_size 64\n\n\
             .visible .global .align 4 .b8 {entry}__maxntid[4] = {{{maxntid}}};\n\
             .visible .global .align 4 .b8 {entry}__reqnctapercluster[4] = {{{cluster}}};\n\n\
             .visible .entry gemm(\n\t.param .align 8 .b8 gemm_param_0[120]\n)\n{{\n\tret;\n}}\n\n\
             .visible .entry axpby(\n\t.param .u64 axpby_param_0\n)\n{{\n\tret;\n}}\n"
        )
    }

    #[test]
    fn directives_go_after_the_parameter_list_of_their_entry() {
        let src = ptx("128, 1", "2", "gemm");
        let out = launch_bounds(&src).unwrap();
        assert!(
            out.contains(
                ".entry gemm(\n\t.param .align 8 .b8 gemm_param_0[120]\n)\n\
                 .reqnctapercluster 2, 1, 1\n.maxntid 384, 1, 1\n{\n"
            ),
            "{out}"
        );
        // the other entry is untouched, and nothing else changed
        assert!(out.contains(".entry axpby(\n\t.param .u64 axpby_param_0\n)\n{\n"));
        assert_eq!(
            out.replace(".reqnctapercluster 2, 1, 1\n", "")
                .replace(".maxntid 384, 1, 1\n", ""),
            src
        );
        assert_eq!(
            launch_bounds(&ptx("0, 4", "16", "gemm"))
                .unwrap()
                .matches(".maxntid 1024, 1, 1\n")
                .count(),
            1
        );
    }

    #[test]
    fn ptx_without_directives_is_unchanged() {
        let src = ptx("128", "2", "gemm")
            .replace("__maxntid", "__other")
            .replace("__reqnctapercluster", "_x");
        assert_eq!(launch_bounds(&src).unwrap(), src);
    }

    #[test]
    fn bad_values_are_refused_naming_the_global() {
        for (maxntid, cluster, want) in [
            ("0", "2", "gemm__maxntid: 0 outside 1..=1024"),
            ("1, 4", "2", "gemm__maxntid: 1025 outside 1..=1024"),
            ("128", "17", "gemm__reqnctapercluster: 17 outside 1..=16"),
            ("128", "0", "gemm__reqnctapercluster: 0 outside 1..=16"),
            ("256", "2", "gemm__maxntid: not a u32 initialiser"),
            ("1, 2, 3, 4, 5", "2", "gemm__maxntid: not a u32 initialiser"),
            ("x", "2", "gemm__maxntid: not a u32 initialiser"),
        ] {
            let e = launch_bounds(&ptx(maxntid, cluster, "gemm")).unwrap_err();
            assert!(e.starts_with(want), "{maxntid} / {cluster}: {e}");
        }
    }

    #[test]
    fn a_directive_of_a_missing_entry_is_refused() {
        let e = launch_bounds(&ptx("128", "2", "gemv")).unwrap_err();
        assert_eq!(e, "gemv__maxntid names no entry gemv in the PTX");
        // `.entry gemm(` is not `.entry gem(`
        let e = launch_bounds(&ptx("128", "2", "gem")).unwrap_err();
        assert_eq!(e, "gem__maxntid names no entry gem in the PTX");
    }
}
