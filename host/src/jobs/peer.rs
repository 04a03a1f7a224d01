//! Peers timed in the same run: a Python script (torch) that prints its own report lines, run
//! by an example's bench beside tessel's kernels.

use std::path::Path;
use std::process::Command;

/// Runs `python3 <script> <args>` and returns its standard output (its report lines), or one line
/// saying why nothing was measured. The script is looked for under `manifest_dir` (where the
/// example was built), then relative to the working directory, then under
/// `examples/<example>/` (a binary copied elsewhere, run from tessel's root).
pub fn torch_lines(manifest_dir: &str, example: &str, script: &str, args: &[String]) -> String {
    let candidates = [
        format!("{manifest_dir}/{script}"),
        script.to_string(),
        format!("examples/{example}/{script}"),
    ];
    let Some(path) = candidates.iter().find(|p| Path::new(p).exists()) else {
        return format!("  torch: not measured ({script} not found)");
    };
    match Command::new("python3").arg(path).args(args).output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim_end().to_string(),
        Ok(o) => format!(
            "  torch: not measured ({})",
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("failed")
        ),
        Err(e) => format!("  torch: not measured (python3: {e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::torch_lines;

    #[test]
    fn a_script_missing_failing_or_reporting() {
        let none = torch_lines("/nonexistent", "none", "scripts/none.py", &[]);
        assert_eq!(none, "  torch: not measured (scripts/none.py not found)");
        let dir = std::env::temp_dir().join(format!("tessel-peer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let root = dir.to_str().unwrap();
        std::fs::write(
            dir.join("fail.py"),
            "import sys\nsys.exit('no torch here')\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("ok.py"),
            "import sys\nprint('  peer', *sys.argv[1:])\n",
        )
        .unwrap();
        let fail = torch_lines(root, "x", "fail.py", &[]);
        let ok = torch_lines(root, "x", "ok.py", &["--rows".into(), "3".into()]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(fail, "  torch: not measured (no torch here)");
        assert_eq!(ok, "  peer --rows 3");
    }
}
