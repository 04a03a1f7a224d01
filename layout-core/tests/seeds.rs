//! Every worked example of seeds 000 (layouts, blocked product) and 003 (the algebra), with the
//! documents' exact answers.

use layout_core::*;

fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}
fn t(s: &str) -> IntTuple {
    IntTuple::parse(s).unwrap()
}
fn tiler(s: &str) -> Tiler {
    Tiler::parse(s).unwrap()
}
#[track_caller]
fn same(got: Layout, want: &str) {
    assert_eq!(got.to_string(), want);
}

// ---- seed 000 -------------------------------------------------------------------------------

#[test]
fn s000_row_major_4x2() {
    let a = l("(4,2):(2,1)");
    for m in 0..4 {
        for n in 0..2 {
            let c = IntTuple::from_ints(&[m, n]).unwrap();
            assert_eq!(a.crd2idx(&c).unwrap(), m * 2 + n);
            // the 1-D coordinate m + n * 4 addresses the same element
            assert_eq!(a.call(m + n * 4), m * 2 + n);
        }
    }
    assert_eq!(Layout::row_major(t("(4,2)")).unwrap(), a);
    assert_eq!(Layout::col_major(t("(4,2)")).unwrap(), l("(4,2):(1,4)"));
}

#[test]
fn s000_hierarchical_4x2() {
    // ((2,2),2):((4,1),2): A((m,n),k) = m*4 + n + k*2
    let a = l("((2,2),2):((4,1),2)");
    for m in 0..2 {
        for n in 0..2 {
            for k in 0..2 {
                let c = t(&format!("(({m},{n}),{k})"));
                assert_eq!(a.crd2idx(&c).unwrap(), m * 4 + n + k * 2);
            }
        }
    }
    assert_eq!(a.size(), 8);
    assert_eq!(a.rank(), 2);
    assert_eq!(a.depth(), 2);
}

#[test]
fn s000_default_strides() {
    // LayoutLeft (1, M, M*N), LayoutRight (N*K, K, 1)
    same(Layout::col_major(t("(3,4,5)")).unwrap(), "(3,4,5):(1,3,12)");
    same(Layout::row_major(t("(3,4,5)")).unwrap(), "(3,4,5):(20,5,1)");
}

#[test]
fn s000_coalesce_mn_and_by_mode() {
    same(coalesce(&l("(4,6):(1,4)")).unwrap(), "24:1");
    // ((M,N),K,L):((1,M),M*N,M*N*K) with Step<_1,_1,_1> -> (M*N,K,L):(1,M*N,M*N*K)
    same(
        coalesce_profile(&l("((2,3),4,5):((1,2),6,24)"), &t("(1,1,1)")).unwrap(),
        "(6,4,5):(1,6,24)",
    );
}

#[test]
fn s000_blocked_product_worked_example() {
    // M0 = 2, M1 = 2, N0 = 2, N1 = 3; tile (M0,N0):(1,M0), tiler (M1,N1):(N1,1)
    let r = blocked_product(&l("(2,2):(1,2)"), &l("(2,3):(3,1)")).unwrap();
    // ((M0,M1),(N0,N1)) : ((1, N1*M0*N0), (M0, M0*N0))
    same(r, "((2,2),(2,3)):((1,12),(2,4))");
    // A((0,1),(1,1)) = A(2,3) = storage[18]
    assert_eq!(r.crd2idx(&t("((0,1),(1,1))")).unwrap(), 18);
    assert_eq!(r.crd2idx(&t("(2,3)")).unwrap(), 18);
    // the final coalesced layout ((M0,M1), N0*N1) : ((1, N1*M0*N0), M0)
    same(
        coalesce_profile(&r, &t("(1,1)")).unwrap(),
        "((2,2),6):((1,12),2)",
    );
}

#[test]
fn s000_size_cosize_of_modes() {
    let a = l("(4,6):(6,1)");
    assert_eq!((a.size(), a.cosize()), (24, 24));
    let m1 = a.get(1).unwrap();
    assert_eq!((m1.size(), m1.cosize()), (6, 6));
}

// ---- seed 003: coalesce ------------------------------------------------------------------------

#[test]
fn s003_coalesce() {
    same(coalesce(&l("(2,(1,6)):(1,(6,2))")).unwrap(), "12:1");
    same(
        coalesce_profile(&l("(2,(1,6)):(1,(6,2))"), &t("(1,1)")).unwrap(),
        "(2,6):(1,2)",
    );
    // the four binary cases
    same(coalesce(&l("(5,1):(3,7)")).unwrap(), "5:3");
    same(coalesce(&l("(1,5):(3,7)")).unwrap(), "5:7");
    same(coalesce(&l("(5,4):(3,15)")).unwrap(), "20:3");
    same(coalesce(&l("(5,4):(3,7)")).unwrap(), "(5,4):(3,7)");
    same(coalesce(&l("(2,4):(1,2)")).unwrap(), "8:1");
}

// ---- seed 003: composition ---------------------------------------------------------------------

#[test]
fn s003_composition_worked_table() {
    let a = l("(6,2):(8,2)");
    let b = l("(4,3):(3,1)");
    let r = composition(&a, &b).unwrap();
    same(r, "((2,2),3):((24,2),8)");
    let table = [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42];
    for (i, want) in table.iter().enumerate() {
        assert_eq!(r.call(i as i64), *want);
        assert_eq!(a.call(b.call(i as i64)), *want);
    }
}

#[test]
fn s003_shape_div_and_mod() {
    for (s, d, want) in [
        ("(6,2)", 2, "(3,2)"),
        ("(6,2)", 3, "(2,2)"),
        ("(6,2)", 6, "(1,2)"),
        ("(6,2)", 12, "(1,1)"),
        ("(3,6,2,8)", 6, "(1,3,2,8)"),
        ("(3,6,2,8)", 9, "(1,2,2,8)"),
        ("(42,16,3)", 2, "(21,16,3)"),
        ("(42,16,3)", 6, "(7,16,3)"),
    ] {
        assert_eq!(t(s).shape_div(d).unwrap().to_string(), want, "{s} / {d}");
    }
    for (s, m, want) in [
        ("(6,2)", 2, "(2,1)"),
        ("(6,2)", 3, "(3,1)"),
        ("(6,2)", 6, "(6,1)"),
        ("(6,2)", 12, "(6,2)"),
        ("(3,6,2,8)", 6, "(3,2,1,1)"),
        ("(3,6,2,8)", 9, "(3,3,1,1)"),
        ("(1,2,2,8)", 2, "(1,2,1,1)"),
        ("(1,2,2,8)", 16, "(1,2,2,4)"),
    ] {
        assert_eq!(t(s).shape_mod(m).unwrap().to_string(), want, "{s} % {m}");
    }
    assert!(matches!(
        t("(6,2)").shape_div(4),
        Err(LayoutError::StrideDivisibility { .. })
    ));
    assert!(matches!(
        t("(6,2)").shape_mod(4),
        Err(LayoutError::ShapeDivisibility { .. })
    ));
}

#[test]
fn s003_composition_example_1() {
    let a = l("20:2");
    same(composition(&a, &l("5:4")).unwrap(), "5:8");
    same(composition(&a, &l("4:1")).unwrap(), "4:2");
    same(composition(&a, &l("(5,4):(4,1)")).unwrap(), "(5,4):(8,2)");
}

#[test]
fn s003_composition_example_2() {
    let a = l("(10,2):(16,4)");
    // the static result `(_5,(_2,_2)):(_16,(_80,_4))`; size-1 modes are dropped
    same(composition(&a, &l("5:1")).unwrap(), "5:16");
    same(composition(&a, &l("4:5")).unwrap(), "(2,2):(80,4)");
    same(
        composition(&a, &l("(5,4):(1,5)")).unwrap(),
        "(5,(2,2)):(16,(80,4))",
    );
}

#[test]
fn s003_by_mode_composition() {
    let a = l("(12,(4,8)):(59,(13,1))");
    let r = composition_tiler(&a, &tiler("<3:4,8:2>")).unwrap();
    same(r, "(3,(2,4)):(236,(26,1))");
    // identical to composing mode by mode
    let same_r = Layout::concat(&[
        composition(&a.get(0).unwrap(), &l("3:4")).unwrap(),
        composition(&a.get(1).unwrap(), &l("8:2")).unwrap(),
    ])
    .unwrap();
    assert_eq!(r, same_r);
    // a shape as a tiler: (3,8) is <3:1, 8:1>
    same(
        composition_tiler(&a, &tiler("(3,8)")).unwrap(),
        "(3,(4,2)):(59,(13,1))",
    );
}

// ---- seed 003: complement ----------------------------------------------------------------------

#[test]
fn s003_complement() {
    for (a, want) in [
        ("4:1", "6:4"),
        ("6:4", "4:1"),
        ("(4,6):(1,4)", "1:0"),
        ("4:2", "(2,3):(1,8)"),
        ("(2,4):(1,6)", "3:2"),
        ("(2,2):(1,6)", "(3,2):(2,12)"),
    ] {
        same(complement(&l(a), 24).unwrap(), want);
    }
    // "(4,(2,3)):(2,(1,8)) has cosize 24"; "((2,4),3):((1,6),2) ... produces unique indices"
    assert_eq!(l("(4,(2,3)):(2,(1,8))").cosize(), 24);
    let u = l("((2,2),(3,2)):((1,6),(2,12))");
    let mut seen = std::collections::HashSet::new();
    for i in 0..u.size() {
        assert!(seen.insert(u.call(i)));
    }
    assert_eq!(u.cosize(), 24);
}

// ---- seed 003: divide --------------------------------------------------------------------------

#[test]
fn s003_logical_divide_1d() {
    same(complement(&l("4:2"), 24).unwrap(), "(2,3):(1,8)");
    same(
        logical_divide(&l("(4,2,3):(2,1,8)"), &l("4:2")).unwrap(),
        "((2,2),(2,3)):((4,1),(2,8))",
    );
}

#[test]
fn s003_logical_divide_2d() {
    let a = l("(9,(4,8)):(59,(13,1))");
    let b = tiler("<3:3,(2,4):(1,8)>");
    let ld = logical_divide_tiler(&a, &b).unwrap();
    // ((TileM,RestM), (TileN,RestN)) with shape ((3,3), (8,4))
    assert_eq!(
        ld.shape()
            .get(0)
            .unwrap()
            .product_each()
            .unwrap()
            .to_string(),
        "(3,3)"
    );
    assert_eq!(
        ld.shape()
            .get(1)
            .unwrap()
            .product_each()
            .unwrap()
            .to_string(),
        "(8,4)"
    );
    // "the first mode of each mode is (3,(2,4)):(177,(13,2))", i.e. the composition
    same(composition_tiler(&a, &b).unwrap(), "(3,(2,4)):(177,(13,2))");
    same(ld.get(0).unwrap().get(0).unwrap(), "3:177");
    same(ld.get(1).unwrap().get(0).unwrap(), "(2,4):(13,2)");
}

#[test]
fn s003_zipped_divide() {
    let a = l("(9,(4,8)):(59,(13,1))");
    let b = tiler("<3:3,(2,4):(1,8)>");
    let zd = zipped_divide(&a, &b).unwrap();
    // ((TileM,TileN), (RestM,RestN)) with shape ((3,8), (3,4))
    assert_eq!(
        zd.get(0)
            .unwrap()
            .shape()
            .product_each()
            .unwrap()
            .to_string(),
        "(3,8)"
    );
    assert_eq!(
        zd.get(1)
            .unwrap()
            .shape()
            .product_each()
            .unwrap()
            .to_string(),
        "(3,4)"
    );
    // layout<0>(zipped_divide(a, b)) == composition(a, b)
    assert_eq!(zd.get(0).unwrap(), composition_tiler(&a, &b).unwrap());
    // the offset of tile (1,2) is zd(0, (1,2))
    let z1 = zd.get(1).unwrap();
    assert_eq!(
        zd.crd2idx(&t("(0,(1,2))")).unwrap(),
        z1.crd2idx(&t("(1,2)")).unwrap()
    );
    assert_eq!(zd.crd2idx(&t("(0,7)")).unwrap(), z1.call(7));
    // tiled and flat arrangements
    let td = tiled_divide(&a, &b).unwrap();
    assert_eq!(td.rank(), 3);
    assert_eq!(td.get(0).unwrap(), zd.get(0).unwrap());
    let fd = flat_divide(&a, &b).unwrap();
    assert_eq!(fd.rank(), 4);
    assert_eq!(fd.shape().product_each().unwrap().to_string(), "(3,8,3,4)");
}

// ---- seed 003: product -------------------------------------------------------------------------

#[test]
fn s003_logical_product_1d() {
    same(complement(&l("(2,2):(4,1)"), 24).unwrap(), "(2,3):(2,8)");
    same(
        composition(&l("(2,3):(2,8)"), &l("6:1")).unwrap(),
        "(2,3):(2,8)",
    );
    let r = logical_product(&l("(2,2):(4,1)"), &l("6:1")).unwrap();
    same(r, "((2,2),(2,3)):((4,1),(2,8))");
    // "identical to the result of the 1-D logical divide example"
    assert_eq!(r, logical_divide(&l("(4,2,3):(2,1,8)"), &l("4:2")).unwrap());
    // B = (4,2):(2,1): 8 repeated tiles in another order
    let r2 = logical_product(&l("(2,2):(4,1)"), &l("(4,2):(2,1)")).unwrap();
    assert_eq!(r2.get(1).unwrap().size(), 8);
}

#[test]
fn s003_logical_product_2d_by_mode_and_blocked() {
    let a = l("(2,5):(5,1)");
    // by-mode with the "unintuitive" tiler <3:5, 4:6>
    let by_mode = logical_product_tiler(&a, &tiler("<3:5,4:6>")).unwrap();
    same(by_mode, "((2,3),(5,4)):((5,10),(1,30))");
    // blocked_product gives the same 2x5 row-major block in a 3x4 column-major arrangement
    let blocked = blocked_product(&a, &l("(3,4):(1,3)")).unwrap();
    same(blocked, "((2,3),(5,4)):((5,10),(1,30))");
    same(
        coalesce_profile(&blocked, &t("(1,1)")).unwrap(),
        "(6,(5,4)):(5,(1,30))",
    );
    // raked: B's mode first in each mode
    same(
        raked_product(&a, &l("(3,4):(1,3)")).unwrap(),
        "((3,2),(4,5)):((10,5),(30,1))",
    );
}

#[test]
fn s003_zipped_tiled_products() {
    let a = l("(2,5):(5,1)");
    let b = tiler("<3:5,4:6>");
    let z = zipped_product(&a, &b).unwrap();
    same(z, "((2,5),(3,4)):((5,1),(10,30))");
    same(tiled_product(&a, &b).unwrap(), "((2,5),3,4):((5,1),10,30)");
    same(flat_product(&a, &b).unwrap(), "(2,5,3,4):(5,1,10,30)");
}
