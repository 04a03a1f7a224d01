//! `tessel show`'s text tables: rank 3 and more as slices, swizzled layouts through their
//! swizzle.

use tessel_calc::{eval, show_value};

/// The numbers in the table rows (`| a | b |`) of `text`, row by row.
fn rows(text: &str) -> Vec<Vec<i64>> {
    text.lines()
        .filter(|l| l.contains('|'))
        .map(|l| {
            l.split('|')
                .skip(1)
                .filter_map(|c| c.trim().parse().ok())
                .collect()
        })
        .collect()
}

#[test]
fn a_rank_3_layout_is_one_table_per_slice() {
    let s = show_value(&eval("(2,3,(2,2)):(1,2,(6,12))").unwrap()).unwrap();
    let r = rows(&s);
    assert_eq!(r.len(), 2 * 4, "{s}");
    for k in 0..4i64 {
        assert!(s.contains(&format!("slice (_,_,{k})")));
        for m in 0..2i64 {
            let want: Vec<i64> = (0..3).map(|n| m + 2 * n + 6 * k).collect();
            assert_eq!(r[(2 * k + m) as usize], want, "slice {k}, row {m}");
        }
    }
}

#[test]
fn a_swizzled_rank_3_layout_shows_the_swizzled_indices() {
    let v = eval("Sw<1,1,1> o (2,2,2):(1,2,4)").unwrap();
    let sw = match &v {
        tessel_calc::Value::Composed(c) => *c,
        v => panic!("{v}"),
    };
    let r = rows(&show_value(&v).unwrap());
    for k in 0..2i64 {
        for m in 0..2i64 {
            let want: Vec<i64> = (0..2).map(|n| sw.call(m + 2 * n + 4 * k)).collect();
            assert_eq!(r[(2 * k + m) as usize], want);
        }
    }
    // the swizzle moved something (the test would not see a missing swizzle otherwise)
    assert_ne!(
        (0..8).map(|i| sw.call(i)).collect::<Vec<_>>(),
        (0..8).collect::<Vec<_>>()
    );
}
