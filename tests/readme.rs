//! README.md: short, and its results table the one `tessel results` renders from the checked-in
//! results file. (Its kernel is built and run as written by `scripts/writing-kernels.sh
//! README.md`, in CI.)

use std::path::Path;

fn read(p: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(p);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_readme_is_read_in_five_minutes() {
    let n = read("README.md").lines().count();
    assert!(n <= 150, "README.md has {n} lines, more than 150");
}

#[test]
fn the_readme_table_is_the_results_file() {
    let rows = tessel::results::parse(&read("docs/results.tsv")).unwrap();
    assert!(!rows.is_empty(), "docs/results.tsv has no results");
    let readme = read("README.md");
    let table = tessel::results::markdown(&rows);
    let want = tessel::results::into_readme(&readme, &table).unwrap();
    assert!(
        want == readme,
        "README.md's results table is not docs/results.tsv's; run\n  cargo run --release -- results docs/results.tsv --readme README.md\nthe table:\n{table}"
    );
}

#[test]
fn a_changed_results_file_is_caught() {
    // the check above, on a results file with tessel's first figure far below the others
    let text = read("docs/results.tsv");
    let mut rows = tessel::results::parse(&text).unwrap();
    rows[0].percent = 1.0;
    let table = tessel::results::markdown(&rows);
    let readme = read("README.md");
    let changed = tessel::results::into_readme(&readme, &table).unwrap() != readme;
    assert!(
        changed,
        "a results file with another figure gave README's table"
    );
}

#[test]
fn every_local_link_of_the_readme_resolves() {
    let readme = read("README.md");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut links = 0;
    for (i, _) in readme.match_indices("](") {
        let rest = &readme[i + 2..];
        let target = &rest[..rest.find(')').expect("a link's closing parenthesis")];
        if target.starts_with("http") || target.starts_with('#') {
            continue;
        }
        links += 1;
        assert!(
            root.join(target).exists(),
            "README.md links to {target}, which does not exist"
        );
    }
    assert!(
        links >= 10,
        "only {links} local links found: the scan is broken"
    );
}
