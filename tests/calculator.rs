//! `tessel eval` and `tessel show` as a user runs them.

use std::io::Write;
use std::process::{Command, Stdio};

fn eval_lines(input: &str) -> Vec<String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tessel"))
        .arg("eval")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn examples_of_the_issue() {
    let got = eval_lines(
        "composition((6,2):(8,2),(4,3):(3,1))
coalesce((2,(1,6)):(1,(6,2)),(1,1))
complement((2,2):(1,6),24)
zipped_divide((9,(4,8)):(59,(13,1)),<3:3,(2,4):(1,8)>)
blocked_product((2,5):(5,1),(3,4):(1,3))
size((_4,_8):(_8,_1))
cosize((2,2):(1,6))
",
    );
    assert_eq!(
        got,
        [
            "((2,2),3):((24,2),8)",
            "(2,6):(1,2)",
            "(3,2):(2,12)",
            "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))",
            "((2,3),(5,4)):((5,10),(1,30))",
            "32",
            "8",
        ]
    );
}

#[test]
fn errors_are_printed_and_evaluation_goes_on() {
    let got = eval_lines("composition((6,2):(8,2),(4,3):(5,1))\nnope(1)\n(2,3):(1)\n24:2\n");
    assert_eq!(got.len(), 4);
    assert!(
        got[0].starts_with("error: stride divisibility"),
        "{}",
        got[0]
    );
    assert_eq!(got[1], "error: unknown operation 'nope'");
    assert!(
        got[2].starts_with("error: tuples are not congruent"),
        "{}",
        got[2]
    );
    assert_eq!(got[3], "24:2");
}

#[test]
fn one_expression_as_argument_and_show() {
    let out = Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(["eval", "logical_product((2,2):(4,1),6:1)"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "((2,2),(2,3)):((4,1),(2,8))\n"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(["show", "(2,3):(3,1)"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows[0], "(2,3):(3,1)");
    assert!(rows[3].contains("| 0 | 1 | 2 |"), "{text}");
    assert!(rows[5].contains("| 3 | 4 | 5 |"), "{text}");
}
