//! The post-conditions of every operation, over thousands of random admissible inputs.

use layout_core::*;
use proptest::prelude::*;
use std::collections::HashSet;

const CASES: u32 = 3000;

fn cfg() -> ProptestConfig {
    ProptestConfig {
        cases: CASES,
        max_global_rejects: 100_000,
        ..ProptestConfig::default()
    }
}

/// A random nesting of `leaves` (`(a,(b,c))`, ...), depth at most 2.
fn nest(leaves: &[i64], cuts: &[usize]) -> IntTuple {
    if leaves.len() == 1 {
        return IntTuple::int(leaves[0]);
    }
    let mut t = IntTuple::empty();
    let mut i = 0;
    let mut k = 0;
    while i < leaves.len() {
        let take = (cuts.get(k).copied().unwrap_or(1) % 3 + 1).min(leaves.len() - i);
        k += 1;
        if take == 1 {
            t.push(&IntTuple::int(leaves[i])).unwrap();
        } else {
            t.push(&IntTuple::from_ints(&leaves[i..i + take]).unwrap())
                .unwrap();
        }
        i += take;
    }
    t
}

fn layout_of(shapes: Vec<i64>, strides: Vec<i64>, cuts: Vec<usize>) -> Layout {
    Layout::from_parts(nest(&shapes, &cuts), &strides).unwrap()
}

/// Any layout: shapes 1..=6, strides 0..=24.
fn any_layout() -> impl Strategy<Value = Layout> {
    (1usize..=4)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(1i64..=6, n),
                prop::collection::vec(0i64..=24, n),
                prop::collection::vec(0usize..3, n),
            )
        })
        .prop_map(|(s, d, c)| layout_of(s, d, c))
}

/// Shapes and strides powers of two: composition is always admissible.
fn pow2_layout(max_leaves: usize) -> impl Strategy<Value = Layout> {
    (1usize..=max_leaves)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(0u32..=3, n),
                prop::collection::vec(0u32..=5, n),
                prop::collection::vec(0usize..3, n),
            )
        })
        .prop_map(|(s, d, c)| {
            layout_of(
                s.iter().map(|e| 1 << e).collect(),
                d.iter().map(|e| 1 << e).collect(),
                c,
            )
        })
}

/// Injective layouts: modes placed in a random order, each stride the extent so far times a gap.
fn injective_layout() -> impl Strategy<Value = Layout> {
    (1usize..=4)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(1i64..=5, n),
                prop::collection::vec(1i64..=3, n),
                Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
                prop::collection::vec(0usize..3, n),
            )
        })
        .prop_map(|(s, gap, order, cuts)| {
            let mut d = vec![0; s.len()];
            let mut ext = 1;
            for &i in &order {
                d[i] = ext * gap[i];
                ext = d[i] * s[i];
            }
            layout_of(s, d, cuts)
        })
}

fn injective(l: &Layout) -> bool {
    let im = image(l);
    im.iter().collect::<HashSet<_>>().len() == im.len()
}

fn image(l: &Layout) -> Vec<i64> {
    (0..l.size()).map(|i| l.call(i)).collect()
}

/// `compatible(B, R)` as the post-conditions use it: same size, and each top-level mode of `B`
/// has the size of the corresponding mode of `R`.
fn compatible(b: &Layout, r: &Layout) -> bool {
    if b.size() != r.size() {
        return false;
    }
    if b.shape().is_int() {
        return true;
    }
    b.rank() == r.rank()
        && (0..b.rank()).all(|i| b.get(i).unwrap().size() == r.get(i).unwrap().size())
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn crd2idx_idx2crd_roundtrip(l in any_layout()) {
        for i in 0..l.size() {
            let c = l.idx2crd(i);
            prop_assert!(c.congruent(&l.shape()));
            prop_assert_eq!(l.crd2idx(&c).unwrap(), l.call(i));
            prop_assert_eq!(l.crd2idx(&IntTuple::int(i)).unwrap(), l.call(i));
        }
    }

    #[test]
    fn slice_plus_offset_is_the_whole(l in any_layout(), pick in prop::collection::vec(any::<bool>(), 4)) {
        // keep mode i of a flat coordinate when pick[i]
        let f = l.flatten();
        let n = f.shape().num_leaves();
        for i in 0..f.size() {
            let nat = f.idx2crd(i);
            let mut c = IntTuple::empty();
            let mut kept = IntTuple::empty();
            for k in 0..n {
                let v = nat.leaves()[k];
                if pick[k % 4] {
                    c.push(&IntTuple::hole()).unwrap();
                    kept.push(&IntTuple::int(v)).unwrap();
                } else {
                    c.push(&IntTuple::int(v)).unwrap();
                }
            }
            let c = if n == 1 && f.shape().is_int() { c.get(0).unwrap() } else { c };
            let (s, off) = f.slice(&c).unwrap();
            let sub = if kept.rank() == 0 { 0 } else { s.crd2idx(&kept).unwrap() };
            prop_assert_eq!(off + sub, f.call(i));
            // dice keeps the other modes
            let d = f.dice(&c).unwrap();
            prop_assert_eq!(d.size() * s.size().max(1), f.size());
        }
    }

    #[test]
    fn coalesce_post(l in any_layout()) {
        let r = coalesce(&l).unwrap();
        prop_assert_eq!(r.size(), l.size());
        prop_assert!(r.depth() <= 1);
        prop_assert_eq!(image(&r), image(&l));
    }

    #[test]
    fn coalesce_by_mode_post(l in any_layout()) {
        let mut prof = IntTuple::empty();
        for _ in 0..l.rank() { prof.push(&IntTuple::int(1)).unwrap(); }
        let r = coalesce_profile(&l, &prof).unwrap();
        prop_assert_eq!(r.rank(), l.rank());
        prop_assert_eq!(image(&r), image(&l));
        for i in 0..l.rank() {
            prop_assert_eq!(r.get(i).unwrap(), coalesce(&l.get(i).unwrap()).unwrap());
        }
    }

    #[test]
    fn filter_post(l in any_layout()) {
        let r = filter(&l).unwrap();
        prop_assert!(r.depth() <= 1);
        let a: HashSet<i64> = image(&l).into_iter().collect();
        let b: HashSet<i64> = image(&r).into_iter().collect();
        prop_assert_eq!(a, b);
        let zero: i64 = l.shapes().iter().zip(l.strides()).filter(|(_, d)| **d == 0).map(|(s, _)| *s).product();
        prop_assert_eq!(r.size(), l.size() / zero);
        if r.size() > 1 { prop_assert!(r.strides().iter().all(|d| *d != 0)); }
    }

    #[test]
    fn composition_post_pow2(a in pow2_layout(4), b in pow2_layout(3)) {
        prop_assume!(injective(&b) || b.shape().is_int());
        let r = composition(&a, &b).unwrap();
        prop_assert!(compatible(&b, &r), "{} o {} = {}", a, b, r);
        for i in (0..b.size()).filter(|&i| b.call(i) < a.size()) {
            prop_assert_eq!(r.call(i), a.call(b.call(i)), "{} o {} = {} at {}", a, b, r, i);
        }
    }

    #[test]
    fn composition_post_any(a in any_layout(), b in any_layout()) {
        // whenever the conditions admit the pair, the post-conditions hold
        if let (Ok(r), true) = (composition(&a, &b), injective(&b) || b.shape().is_int()) {
            prop_assert!(compatible(&b, &r));
            for i in (0..b.size()).filter(|&i| b.call(i) < a.size()) {
                prop_assert_eq!(r.call(i), a.call(b.call(i)), "{} o {} = {} at {}", a, b, r, i);
            }
        }
    }

    #[test]
    fn composition_by_mode_post(a in pow2_layout(4), b0 in pow2_layout(2), b1 in pow2_layout(2)) {
        prop_assume!(a.rank() >= 2);
        let t = Tiler::by_mode(&[Some(b0), Some(b1)]).unwrap();
        let r = composition_tiler(&a, &t).unwrap();
        prop_assert_eq!(r.rank(), a.rank());
        prop_assert_eq!(r.get(0).unwrap(), composition(&a.get(0).unwrap(), &b0).unwrap());
        prop_assert_eq!(r.get(1).unwrap(), composition(&a.get(1).unwrap(), &b1).unwrap());
    }

    #[test]
    fn complement_post(a in injective_layout(), extra in 1i64..=4) {
        let m = a.cosize() * extra;
        let r = complement(&a, m).unwrap();
        let ar = Layout::concat(&[a, r]).unwrap();
        prop_assert!(ar.cosize() >= m);
        let ri = image(&r);
        for w in ri.windows(2) { prop_assert!(w[0] < w[1], "complement({}, {}) = {} not ordered", a, m, r); }
        let ai: HashSet<i64> = image(&a).into_iter().collect();
        for v in &ri[1..] { prop_assert!(!ai.contains(v), "complement({}, {}) = {} meets A", a, m, r); }
        // (A, R) is injective: the repetitions never overlap
        let all = image(&ar);
        prop_assert_eq!(all.iter().collect::<HashSet<_>>().len(), all.len());
    }

    #[test]
    fn complement_rejects_overlap(n in 2i64..=6) {
        // n:1 then a mode of stride < n overlaps it
        let a = Layout::parse(&format!("({n},2):(1,{})", n - 1)).unwrap();
        let rejected = matches!(complement(&a, 100), Err(LayoutError::NotInjective { .. }));
        prop_assert!(rejected);
    }

    #[test]
    fn right_inverse_post(l in any_layout()) {
        let r = right_inverse(&l).unwrap();
        prop_assert!(r.depth() <= 1);
        for i in 0..r.size() { prop_assert_eq!(l.call(r.call(i)), i, "{} R={}", l, r); }
    }

    #[test]
    fn left_inverse_post(l in injective_layout()) {
        let r = left_inverse(&l).unwrap();
        for i in 0..l.size() { prop_assert_eq!(r.call(l.call(i)), i, "{} L={}", l, r); }
    }

    #[test]
    fn logical_divide_post(a in pow2_layout(4), b in pow2_layout(2)) {
        prop_assume!(b.cosize() <= a.size() && filter(&b).unwrap().size() == b.size());
        let Ok(bc) = complement(&b, a.size()) else { return Ok(()); };
        let r = logical_divide(&a, &b).unwrap();
        prop_assert_eq!(r.rank(), 2);
        let c = Layout::concat(&[b, bc]).unwrap();
        for i in 0..r.size() { prop_assert_eq!(r.call(i), a.call(c.call(i))); }
        let ab = composition(&a, &b).unwrap();
        prop_assert_eq!(image(&r.get(0).unwrap()), image(&ab));
    }

    #[test]
    fn divides_rearrange_logical_divide(m in 0u32..=3, n in 0u32..=3, tm in 0u32..=2, tn in 0u32..=2, dm in 0u32..=2, dn in 0u32..=2) {
        // A: a (2^m*2^tm) x (2^n*2^tn) layout, tiles 2^tm x 2^tn with strides 2^dm, 2^dn
        prop_assume!(dm + tm <= m + tm && dn + tn <= n + tn);
        let (sm, sn) = (1i64 << (m + tm), 1i64 << (n + tn));
        let a = Layout::parse(&format!("({sm},{sn}):({sn},1)")).unwrap();
        let b0 = Layout::int(1 << tm, 1 << dm).unwrap();
        let b1 = Layout::int(1 << tn, 1 << dn).unwrap();
        prop_assume!(b0.cosize() <= sm && b1.cosize() <= sn);
        let t = Tiler::by_mode(&[Some(b0), Some(b1)]).unwrap();
        let ld = logical_divide_tiler(&a, &t).unwrap();
        let zd = zipped_divide(&a, &t).unwrap();
        let td = tiled_divide(&a, &t).unwrap();
        let fd = flat_divide(&a, &t).unwrap();
        prop_assert_eq!(zd.get(0).unwrap(), composition_tiler(&a, &t).unwrap());
        let (t0, r0) = (ld.get(0).unwrap().get(0).unwrap().size(), ld.get(0).unwrap().get(1).unwrap().size());
        let (t1, r1) = (ld.get(1).unwrap().get(0).unwrap().size(), ld.get(1).unwrap().get(1).unwrap().size());
        for (a0, b0_, a1, b1_) in itertools(t0, r0, t1, r1) {
            let want = ld.crd2idx(&tup(&format!("(({a0},{b0_}),({a1},{b1_}))"))).unwrap();
            prop_assert_eq!(zd.crd2idx(&tup(&format!("(({a0},{a1}),({b0_},{b1_}))"))).unwrap(), want);
            prop_assert_eq!(td.crd2idx(&tup(&format!("(({a0},{a1}),{b0_},{b1_})"))).unwrap(), want);
            prop_assert_eq!(fd.crd2idx(&tup(&format!("({a0},{a1},{b0_},{b1_})"))).unwrap(), want);
        }
    }

    #[test]
    fn logical_product_post(a in injective_layout(), b in injective_layout()) {
        let Ok(r) = logical_product(&a, &b) else { return Ok(()); };
        prop_assert_eq!(r.rank(), 2);
        prop_assert_eq!(r.get(0).unwrap(), a);
        prop_assert!(compatible(&b, &r.get(1).unwrap()), "{} x {} = {}", a, b, r);
        let im = image(&r);
        prop_assert_eq!(im.iter().collect::<HashSet<_>>().len(), im.len(), "{} x {} = {} not injective", a, b, r);
    }

    #[test]
    fn products_rearrange_logical_product(a in injective_layout(), b in injective_layout()) {
        prop_assume!(a.rank() == 2 && b.rank() == 2);
        let Ok(bp) = blocked_product(&a, &b) else { return Ok(()); };
        let rp = raked_product(&a, &b).unwrap();
        let lp = logical_product(&a, &b).unwrap();
        prop_assert_eq!(image(&bp).into_iter().collect::<HashSet<_>>(), image(&lp).into_iter().collect::<HashSet<_>>());
        prop_assert_eq!(bp.rank(), 2);
        for i in 0..2 {
            prop_assert_eq!(bp.get(i).unwrap().size(), a.get(i).unwrap().size() * b.get(i).unwrap().size());
        }
        let (a0, a1) = (a.get(0).unwrap().size(), a.get(1).unwrap().size());
        let (b0, b1) = (b.get(0).unwrap().size(), b.get(1).unwrap().size());
        for (x0, y0, x1, y1) in itertools(a0, b0, a1, b1) {
            let want = lp.crd2idx(&tup(&format!("(({x0},{x1}),({y0},{y1}))"))).unwrap();
            prop_assert_eq!(bp.crd2idx(&tup(&format!("(({x0},{y0}),({x1},{y1}))"))).unwrap(), want);
            prop_assert_eq!(rp.crd2idx(&tup(&format!("(({y0},{x0}),({y1},{x1}))"))).unwrap(), want);
        }
        // zipped / tiled / flat products regroup the by-mode logical product
        let t = Tiler::by_mode(&[Some(b.get(0).unwrap()), Some(b.get(1).unwrap())]).unwrap();
        let Ok(lpt) = logical_product_tiler(&a, &t) else { return Ok(()); };
        let zp = zipped_product(&a, &t).unwrap();
        let fp = flat_product(&a, &t).unwrap();
        let tp = tiled_product(&a, &t).unwrap();
        for (x0, y0, x1, y1) in itertools(a0, b0, a1, b1) {
            let want = lpt.crd2idx(&tup(&format!("(({x0},{y0}),({x1},{y1}))"))).unwrap();
            prop_assert_eq!(zp.crd2idx(&tup(&format!("(({x0},{x1}),({y0},{y1}))"))).unwrap(), want);
            prop_assert_eq!(tp.crd2idx(&tup(&format!("(({x0},{x1}),{y0},{y1})"))).unwrap(), want);
            prop_assert_eq!(fp.crd2idx(&tup(&format!("({x0},{x1},{y0},{y1})"))).unwrap(), want);
        }
    }

    #[test]
    fn tile_to_shape_post(b0 in 1i64..=4, b1 in 1i64..=4, k0 in 1i64..=3, k1 in 1i64..=3, row in any::<bool>()) {
        let block = if row { Layout::row_major(IntTuple::from_ints(&[b0, b1]).unwrap()) } else { Layout::col_major(IntTuple::from_ints(&[b0, b1]).unwrap()) }.unwrap();
        let shape = IntTuple::from_ints(&[b0 * k0, b1 * k1]).unwrap();
        let r = tile_to_shape(&block, &shape, None).unwrap();
        prop_assert_eq!(r.rank(), 2);
        prop_assert_eq!(r.get(0).unwrap().size(), b0 * k0);
        prop_assert_eq!(r.get(1).unwrap().size(), b1 * k1);
        for m in 0..b0 { for n in 0..b1 {
            let c = IntTuple::from_ints(&[m, n]).unwrap();
            prop_assert_eq!(r.crd2idx(&c).unwrap(), block.crd2idx(&c).unwrap());
        }}
        let im = image(&r);
        prop_assert_eq!(im.iter().collect::<HashSet<_>>().len(), im.len());
        let bad = IntTuple::from_ints(&[b0 * k0 + 1, b1]).unwrap();
        if b0 > 1 { prop_assert!(tile_to_shape(&block, &bad, None).is_err()); }
    }

    #[test]
    fn swizzle_post(b in 0i64..=3, m in 0i64..=4, s in -6i64..=6, x in 0i64..100_000) {
        prop_assume!(s.abs() >= b);
        let sw = Swizzle::new(b, m, s).unwrap();
        prop_assert_eq!(sw.apply(sw.apply(x)), x);
        prop_assert_eq!(sw.apply(x) / sw.block(), x / sw.block());
    }

    #[test]
    fn swizzled_composition_post(a in pow2_layout(3), b in pow2_layout(2)) {
        prop_assume!(injective(&b) || b.shape().is_int());
        let c = ComposedLayout::new(Swizzle::new(2, 1, 3).unwrap(), a).unwrap();
        let r = c.compose(&b).unwrap();
        for i in (0..b.size()).filter(|&i| b.call(i) < a.size()) { prop_assert_eq!(r.call(i), c.call(b.call(i))); }
    }

    #[test]
    fn parse_print_roundtrip(l in any_layout()) {
        let s = l.to_string();
        prop_assert_eq!(Layout::parse(&s).unwrap(), l);
    }
}

fn tup(s: &str) -> IntTuple {
    IntTuple::parse(s).unwrap()
}

fn itertools(a: i64, b: i64, c: i64, d: i64) -> impl Iterator<Item = (i64, i64, i64, i64)> {
    (0..a).flat_map(move |w| {
        (0..b).flat_map(move |x| (0..c).flat_map(move |y| (0..d).map(move |z| (w, x, y, z))))
    })
}

#[test]
fn inadmissible_input_names_the_condition() {
    let a = Layout::parse("(6,2):(8,2)").unwrap();
    let e = composition(&a, &Layout::parse("(4,3):(5,1)").unwrap()).unwrap_err();
    assert!(
        matches!(
            e,
            LayoutError::StrideDivisibility {
                shape: 6,
                stride: 5
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("stride divisibility"));
    // (4,3):(1,5) o 6:1 would need 6 elements from a mode that has 4: 6 % 4 != 0
    let e = composition(
        &Layout::parse("(4,3):(1,5)").unwrap(),
        &Layout::parse("6:1").unwrap(),
    )
    .unwrap_err();
    assert!(
        matches!(e, LayoutError::ShapeDivisibility { shape: 4, rest: 6 }),
        "{e}"
    );
    // as a mode of a larger B, 4 of the 6 elements of (6,2):(1,7) would break linearity
    let a = Layout::parse("(6,2):(1,7)").unwrap();
    assert_eq!(
        composition(&a, &Layout::parse("4:1").unwrap())
            .unwrap()
            .to_string(),
        "4:1"
    );
    let e = composition(&a, &Layout::parse("(4,2):(1,3)").unwrap()).unwrap_err();
    assert!(
        matches!(e, LayoutError::ShapeDivisibility { shape: 6, rest: 4 }),
        "{e}"
    );
    assert!(e.to_string().contains("shape divisibility"));
    assert!(matches!(
        Layout::parse("(2,3):(1)"),
        Err(LayoutError::ProfileMismatch)
    ));
    assert!(matches!(
        Layout::parse("(0,3)"),
        Err(LayoutError::NonPositiveShape { value: 0 })
    ));
    assert!(matches!(
        Layout::parse("(4611686018427387904,4):(1,1)"),
        Err(LayoutError::Overflow)
    ));
    let two = Layout::parse("(2,3)").unwrap();
    let t3 = Tiler::parse("<2,3,4>").unwrap();
    assert!(matches!(
        composition_tiler(&two, &t3),
        Err(LayoutError::RankMismatch {
            expected: 3,
            found: 2
        })
    ));
}

#[test]
fn const_layouts_are_computed_by_the_compiler() {
    const SMEM: Layout = const_ok!(tile_to_shape(
        &const_ok!(Layout::parse("(8,8):(8,1)")),
        &const_ok!(IntTuple::parse("(32,64)")),
        None
    ));
    const IDX: i64 = SMEM.call(100);
    assert_eq!(SMEM.size(), 32 * 64);
    assert_eq!(IDX, SMEM.call(100));
    const Z: Layout = const_ok!(zipped_divide(
        &const_ok!(Layout::parse("(9,(4,8)):(59,(13,1))")),
        &const_ok!(Tiler::parse("<3:3,(2,4):(1,8)>"))
    ));
    assert_eq!(
        Z.to_string(),
        "((3,(2,4)),(3,(2,2))):((177,(13,2)),(59,(26,1)))"
    );
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn flat_layout_is_the_same_function(s in prop::collection::vec(1i64..=7, 3), d in prop::collection::vec(0i64..=50, 3)) {
        let f = FlatLayout::<3>::new([s[0], s[1], s[2]], [d[0], d[1], d[2]]).unwrap();
        let l = f.to_layout().unwrap();
        prop_assert_eq!(FlatLayout::<3>::from_layout(&l).unwrap(), f);
        prop_assert_eq!(f.size(), l.size());
        for i in 0..l.size() {
            let c = l.idx2crd(i);
            let c = [c.leaves()[0], c.leaves()[1], c.leaves()[2]];
            prop_assert!(f.contains(c));
            prop_assert_eq!(f.dot(c), l.call(i));
        }
        prop_assert!(!f.contains([s[0], 0, 0]));
        let r = FlatLayout::<3>::row_major([s[0], s[1], s[2]]).unwrap();
        prop_assert_eq!(r.to_layout().unwrap(), Layout::row_major(IntTuple::from_ints(&s).unwrap()).unwrap());
    }
}

/// Several modes of `B` that each fit in a mode of `A` but together overrun it: `A` is not linear
/// over their sum, so the by-mode result would be wrong (CuTe and pycute give `(2,3):(0,0)`, whose
/// value at 5 is 0 where `A(B(5)) = A(7) = 1`).
#[test]
fn composition_refuses_a_carry_between_modes() {
    let a = Layout::parse("(6,2):(0,1)").unwrap();
    let b = Layout::parse("(2,3):(3,2)").unwrap();
    assert_eq!(
        composition(&a, &b),
        Err(LayoutError::ModesCarry { shape: 6, reach: 7 })
    );
    // a non-injective B keeps the by-mode result, as in CuTe
    let a = Layout::parse("(4,2):(4,1)").unwrap();
    assert!(composition(&a, &Layout::parse("(2,2):(2,2)").unwrap()).is_ok());
}
