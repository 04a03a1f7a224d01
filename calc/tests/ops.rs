//! The table of operations: every name is unique and reachable through the parser, and its
//! numbers of arguments are enforced before the operation runs.

use tessel_calc::{apply, eval_line, Value, OPS};

#[test]
fn names_are_unique_and_arities_are_enforced() {
    for (i, op) in OPS.iter().enumerate() {
        assert!(
            OPS[..i].iter().all(|o| o.name != op.name),
            "{} twice",
            op.name
        );
        let (lo, hi) = op.args;
        assert!(lo <= hi, "{}", op.name);
        let ints = |n: usize| vec![Value::Int(1); n];
        if lo > 0 {
            let e = apply(op.name, None, &ints(lo - 1)).unwrap_err();
            assert!(
                e.contains(&format!("{} takes", op.name)),
                "{}: {e}",
                op.name
            );
        }
        if hi < 8 {
            let e = apply(op.name, None, &ints(hi + 1)).unwrap_err();
            assert!(
                e.contains(&format!("{} takes", op.name)),
                "{}: {e}",
                op.name
            );
        }
        // through the parser too: `name()` is a call of the operation, never an unknown name
        let got = eval_line(&format!("{}()", op.name));
        assert!(!got.contains("unknown operation"), "{}: {got}", op.name);
    }
    assert!(apply("no_such_op", None, &[])
        .unwrap_err()
        .contains("unknown operation"));
}
