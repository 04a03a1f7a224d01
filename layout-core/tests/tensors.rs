//! Tensors, identity tensors, partitioning and tiled copies: the examples of seeds 002 and 004
//! exactly, and the post-conditions over random inputs.

mod common;

use common::check;
use layout_core::*;
use proptest::prelude::*;

fn t(s: &str) -> IntTuple {
    IntTuple::parse(s).unwrap()
}
fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap()
}

#[test]
fn local_tile_examples() {
    let c = |s: &str| counting(l(s));
    let cases = [
        (
            c("(4,6):(6,1)").local_tile(&t("(2,2)"), &t("(1,1)")),
            "14 o (2,2):(6,1)",
        ),
        (
            c("(4,6,8):(48,8,1)").local_tile(&t("(2,2)"), &t("(1,2)")),
            "128 o (2,2,8):(48,8,1)",
        ),
        (
            c("(4,6):(6,1)").local_tile(&t("(2,2)"), &t("(0,_)")),
            "0 o (2,2,3):(6,1,2)",
        ),
        (
            c("(4,8):(8,1)").local_tile_proj(&t("(2,2,4)"), &t("(0,0,_)"), &t("(1,X,1)")),
            "0 o (2,4,2):(8,1,4)",
        ),
        (
            c("(8,6):(1,8)").local_partition(&l("(4,2):(1,4)"), 1),
            "1 o (2,3):(4,16)",
        ),
        (
            c("(8,6):(1,8)").local_partition_proj(&l("(4,2):(1,4)"), 1, &t("(1,X)")),
            "1 o (2,6):(4,8)",
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got.unwrap().to_string(), want);
    }
}

#[test]
fn identity_tensor_examples() {
    let id = make_identity_tensor(&t("(14,1024)")).unwrap();
    assert_eq!(id.to_string(), "(0,0) o (14,1024):(1@0,1@1)");
    let tile = id.local_tile(&t("(4,1024)"), &t("(3,0)")).unwrap();
    assert_eq!(tile.to_string(), "(12,0) o (4,1024):(1@0,1@1)");
    let nested = make_identity_tensor(&t("((2,4),3)")).unwrap();
    assert_eq!(
        nested.to_string(),
        "((0,0),0) o ((2,4),3):((1@0@0,1@1@0),1@1)"
    );

    // seed 002: a (4,32) row-major thread layout, 8 values each, 128-bit atoms of 64-bit elements
    let copy = make_tiled_copy_tv(
        &Layout::ordered(t("(4,32)"), t("(1,0)")).unwrap(),
        &l("(1,8):(1,1)"),
        128,
        64,
    )
    .unwrap();
    let part = |tid: i64| {
        tile.with_layout(copy.partition(tile.layout(), tid).unwrap())
            .to_string()
    };
    assert_eq!(part(0), "(12,0) o ((2,4),1,4):((1@1,2@1),0,256@1)");
    assert_eq!(part(1), "(12,8) o ((2,4),1,4):((1@1,2@1),0,256@1)");
    assert_eq!(part(32), "(13,0) o ((2,4),1,4):((1@1,2@1),0,256@1)");
    let g = counting(l("(14,1024):(1024,1)"))
        .local_tile(&t("(4,1024)"), &t("(0,0)"))
        .unwrap();
    assert_eq!(
        g.with_layout(copy.partition(g.layout(), 0).unwrap())
            .to_string(),
        "0 o ((2,4),1,4):((1,2),0,256)"
    );
}

#[test]
fn slices_coordinates_and_thread_copies() {
    let id = make_identity_tensor(&t("(14,1024)")).unwrap();
    let cod = id.engine().codomain.unwrap();
    assert_eq!(
        cod.decode(id.value_at(&t("(3,700)")).unwrap())[..2],
        [3, 700]
    );
    assert_eq!(cod.decode(id.value_at(&t("3")).unwrap())[..2], [3, 0]); // 1-D
    let row = id.slice(&t("(5,_)")).unwrap();
    assert_eq!(row.to_string(), "(5,0) o (1024):(1@1)");
    let copy = make_tiled_copy_tv(
        &Layout::ordered(t("(4,32)"), t("(1,0)")).unwrap(),
        &l("(1,8):(1,1)"),
        128,
        16,
    )
    .unwrap();
    // the same cut from the row-major shorthand
    assert_eq!(
        make_tiled_copy_row_major([4, 32], [1, 8], 128, 16).unwrap(),
        copy
    );
    assert_ne!(
        make_tiled_copy_row_major([32, 4], [1, 8], 128, 16).unwrap(),
        copy
    );
    let tile = id.local_tile(&t("(4,256)"), &t("(3,1)")).unwrap();
    let thr = copy.get_slice(33).unwrap();
    assert_eq!(
        thr.partition_S(&tile).unwrap().to_string(),
        "(13,264) o ((8,1),1,1):((1@1,0),0,0)"
    );
    assert_eq!(
        thr.partition_D(&tile).unwrap(),
        thr.partition_S(&tile).unwrap()
    );
    assert!(copy.get_slice(128).is_err());
}

#[test]
fn fragments_and_pointers() {
    let mut f = make_fragment_like::<f32, 8>(&l("((2,4),1):((1,2),0)"), 0.5).unwrap();
    assert_eq!(f.layout().to_string(), "((2,4),1):((1,2),8)");
    f.set(3, 2.0).unwrap();
    assert_eq!(f.get(3), Some(2.0));
    assert_eq!(f.get(2), Some(0.5));
    assert!(make_fragment_like::<f32, 4>(&l("(2,4):(4,1)"), 0.0).is_err());
    let mut data = [0i32; 12];
    let p = Tensor::new(Ptr(data.as_mut_ptr()), l("(3,4):(4,1)"));
    let row = p.slice(&t("(1,_)")).unwrap();
    // SAFETY: row 1 of a 3x4 array
    unsafe {
        for j in 0..4 {
            row.write(j, 10 + j as i32);
        }
        assert_eq!(row.read(2), 12);
    }
    assert_eq!(&data[4..8], &[10, 11, 12, 13]);
}

#[test]
fn bad_arguments_are_errors() {
    let c = counting(l("(4,6):(6,1)"));
    assert!(c.local_tile(&t("(2,2)"), &t("(0,0,0,0)")).is_err());
    assert!(make_identity_tensor(&t("(1,2,3,4,5)")).is_err()); // more than 4 leaves
    assert!(make_tiled_copy_tv(&l("4:1"), &l("3:1"), 128, 32).is_err()); // 3 values, atoms of 4
    assert!(make_tiled_copy_tv(&l("4:1"), &l("4:1"), 96, 32).is_err()); // no 96-bit atom
    let copy = make_tiled_copy_tv(&l("4:1"), &l("4:1"), 128, 32).unwrap();
    assert!(copy.partition(&l("(16):(1)"), 4).is_err()); // thread 4 of 4
}

/// A random tiled copy: a (tm,tn) thread layout in either order, (vm,vn) values, an atom of 32, 64
/// or 128 bits of 16-bit elements (2, 4 or 8 values) that divides the values: `vn` is drawn as a
/// multiple of what the atom needs beyond `vm`. Returns the parameters; the test builds the copy.
fn arb_copy() -> impl Strategy<Value = (i64, i64, bool, i64, i64, i64)> {
    (1i64..5, 1i64..9, any::<bool>(), 1i64..3, 1i64..5, 0usize..3).prop_map(
        |(tm, tn, row, vm, k, atom)| {
            let bits = [32, 64, 128][atom];
            let atom_vals = bits / 16;
            // the smallest vn with atom_vals | vm * vn, times k
            let vn = atom_vals / gcd(atom_vals, vm) * k;
            (tm, tn, row, vm, vn, bits)
        },
    )
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Every element of a (rm x rn)-tile region of an identity tensor is in exactly one thread's
/// partition, exactly once, and the partition's mode 0 is one atom.
#[test]
fn tiled_copy_covers_each_element_once() {
    let strategy = (arb_copy(), 1i64..3, 1i64..3);
    // the generator makes only admissible copies: every case is checked
    check(
        "tiled_copy_covers_each_element_once",
        1000,
        1.0,
        &[],
        strategy,
        |((tm, tn, row, vm, vn, bits), rm, rn), t| {
            let thr = Layout::ordered(
                IntTuple::from_ints(&[tm, tn]).unwrap(),
                IntTuple::from_ints(if row { &[1, 0] } else { &[0, 1] }).unwrap(),
            )
            .unwrap();
            let val = Layout::col_major(IntTuple::from_ints(&[vm, vn]).unwrap()).unwrap();
            let copy = make_tiled_copy_tv(&thr, &val, bits, 16).unwrap();
            let (m, n) = (tm * vm, tn * vn);
            let shape = IntTuple::from_ints(&[m * rm, n * rn]).unwrap();
            let id = make_identity_tensor(&shape).unwrap();
            let cod = id.engine().codomain.unwrap();
            let mut seen = vec![0u32; (m * rm * n * rn) as usize];
            for tid in 0..copy.threads() {
                let p = id.with_layout(copy.partition(id.layout(), tid).unwrap());
                prop_assert_eq!(
                    p.layout().get(0).unwrap().get(0).unwrap().size(),
                    copy.atom_vals
                );
                for i in 0..p.layout().size() {
                    let c = cod.decode(p.value(i));
                    seen[(c[0] + m * rm * c[1]) as usize] += 1;
                }
            }
            prop_assert!(seen.iter().all(|&s| s == 1), "{:?}", copy);
            t.hit();
            Ok(())
        },
    );
}

/// Tiles of an identity tensor (M,N): a thread's predicate `elem_less(value, (M,N))` is true
/// exactly for the coordinates inside the tensor, and the value is the coordinate.
#[test]
fn predicates_are_true_exactly_inside() {
    // (mm, nn, tm, tn) = (1, 1, 1, 2) failed once (tensors.proptest-regressions)
    let fixed = [(1, 1, 1, 2)];
    let strategy = (1i64..40, 1i64..40, 1i64..9, 1i64..9);
    check(
        "predicates_are_true_exactly_inside",
        1000,
        1.0,
        &fixed,
        strategy,
        |(mm, nn, tm, tn), t| {
            let id = make_identity_tensor(&IntTuple::from_ints(&[mm, nn]).unwrap()).unwrap();
            let cod = id.engine().codomain.unwrap();
            let thr = Layout::col_major(IntTuple::from_ints(&[tm, tn]).unwrap()).unwrap();
            let (bm, bn) = ((mm + tm - 1) / tm, (nn + tn - 1) / tn);
            let mut inside = 0;
            for i in 0..bm {
                for j in 0..bn {
                    let tile = id
                        .local_tile(
                            &IntTuple::from_ints(&[tm, tn]).unwrap(),
                            &IntTuple::from_ints(&[i, j]).unwrap(),
                        )
                        .unwrap();
                    for tid in 0..thr.size() {
                        let p = tile.local_partition(&thr, tid).unwrap();
                        for v in 0..p.layout().size() {
                            let c = cod.decode(p.value(v));
                            let want = c[0] < mm && c[1] < nn;
                            prop_assert_eq!(p.elem_less(v, &[mm, nn]), want);
                            // the value is the coordinate: tile origin + the thread's element
                            prop_assert_eq!(c[0], i * tm + tid % tm);
                            prop_assert_eq!(c[1], j * tn + tid / tm);
                            inside += want as i64;
                        }
                    }
                }
            }
            prop_assert_eq!(inside, mm * nn);
            t.hit();
            Ok(())
        },
    );
}

/// local_partition over all threads covers a divisible layout's elements exactly once, and
/// local_tile over all tile coordinates likewise.
#[test]
fn partitions_cover_exactly_once() {
    let strategy = (1i64..5, 1i64..5, 1i64..4, 1i64..4, any::<bool>());
    check(
        "partitions_cover_exactly_once",
        1000,
        1.0,
        &[],
        strategy,
        |(a, b, c, d, row), t| {
            let shape = IntTuple::from_ints(&[a * c, b * d]).unwrap();
            let lay = if row {
                Layout::row_major(shape).unwrap()
            } else {
                Layout::col_major(shape).unwrap()
            };
            let n = (a * b * c * d) as usize;
            let thr = Layout::col_major(IntTuple::from_ints(&[a, b]).unwrap()).unwrap();
            let mut seen = vec![0u32; n];
            for tid in 0..a * b {
                let p = counting(lay).local_partition(&thr, tid).unwrap();
                for i in 0..p.layout().size() {
                    seen[p.value(i) as usize] += 1;
                }
            }
            prop_assert!(seen.iter().all(|&s| s == 1));
            let mut seen = vec![0u32; n];
            for i in 0..c {
                for j in 0..d {
                    let p = counting(lay)
                        .local_tile(
                            &IntTuple::from_ints(&[a, b]).unwrap(),
                            &IntTuple::from_ints(&[i, j]).unwrap(),
                        )
                        .unwrap();
                    for x in 0..p.layout().size() {
                        seen[p.value(x) as usize] += 1;
                    }
                }
            }
            prop_assert!(seen.iter().all(|&s| s == 1));
            t.hit();
            Ok(())
        },
    );
}

/// ArithTuples: decode(encode(c)) == c inside the lanes.
#[test]
fn arith_roundtrip() {
    let strategy = proptest::collection::vec(0i64..(1 << 20), 1..=3);
    check("arith_roundtrip", 1000, 1.0, &[], strategy, |c, t| {
        let cod = Codomain::new(&IntTuple::from_ints(&c).unwrap()).unwrap();
        let x = cod.encode(&c).unwrap();
        prop_assert_eq!(&cod.decode(x)[..c.len()], &c[..]);
        t.hit();
        Ok(())
    });
}

/// An origin moved near the ends of `i64` (coordinates are not range-checked, so slicing can
/// put it anywhere): the operations refuse a tensor whose values would overflow, instead of
/// panicking later in `value`, `value_at`, or the next move (the fuzz test found these).
#[test]
fn origins_near_the_ends_of_i64_are_errors() {
    let c = counting(l("(2,2):(1,2)"));
    // a coordinate outside the shape is refused before any origin moves
    assert_eq!(
        c.slice(&t("(9223372036854775807,_)")),
        Err(LayoutError::IndexOutOfRange {
            index: i64::MAX,
            size: 2
        })
    );
    // origin MAX - 3, values up to MAX - 3 + 3 = MAX: the last value is i64::MAX
    let far = c.try_with_layout((l("(2,2):(1,2)"), i64::MAX - 3)).unwrap();
    assert_eq!(far.value(3), i64::MAX);
    // one further is refused (it panicked in `Counting::advance`)
    assert_eq!(
        c.try_with_layout((l("(2,2):(1,2)"), i64::MAX - 2)),
        Err(LayoutError::Overflow)
    );
    assert_eq!(
        far.try_with_layout((l("2:1"), 3)),
        Err(LayoutError::Overflow)
    );
    assert_eq!(far.value_at(&t("(1,1)")), Ok(i64::MAX));
    assert!(far.value_at(&t("(2,0)")).is_err());
    // register fragments: an element past the end of the array is refused
    let f = make_fragment_like::<i32, 4>(&l("(2,2):(1,2)"), 0).unwrap();
    let f = f.try_with_layout((l("2:1"), 3)).unwrap();
    assert_eq!(f.get(1), None);
}

/// A thread index of `i64::MIN` over a stride of -1: `flat_coord` divided `i64::MIN / -1`,
/// which overflows (the fuzz test found it); the coordinate is `2^63 mod s`.
#[test]
fn flat_coord_of_the_most_negative_index() {
    let thr = l("(3,2):(-1,0)");
    // 2^63 = 3 * 3074457345618258602 + 2
    assert_eq!(flat_coord(&thr, i64::MIN), t("(2,0)"));
    assert_eq!(flat_coord(&l("1:-1"), i64::MIN), t("0"));
    // a thread index outside the thread layout is refused
    assert!(counting(l("(6,4):(1,6)"))
        .local_partition(&thr, i64::MIN)
        .is_err());
}
