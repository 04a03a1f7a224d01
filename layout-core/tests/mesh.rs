//! A mesh of GPUs as a layout (`layout_core::mesh`): the shards of a global tensor cover it
//! exactly once, the all-gathered buffer is a bijection onto the global elements, and what
//! rebuilds the whole follows from the layouts.

mod common;

use common::check;
use layout_core::*;
use proptest::prelude::*;
use std::collections::HashSet;

fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap()
}

/// Every flat natural coordinate of `shape` (colexicographic).
fn coords(shape: &[i64]) -> Vec<Vec<i64>> {
    let n: i64 = shape.iter().product();
    (0..n)
        .map(|mut i| {
            shape
                .iter()
                .map(|&s| {
                    let c = i % s;
                    i /= s;
                    c
                })
                .collect()
        })
        .collect()
}

fn at(l: &Layout, c: &[i64]) -> i64 {
    l.dot(c)
}

#[test]
fn rows_of_a_row_major_matrix_gather_in_place_and_columns_do_not() {
    let global = l("(8,6):(6,1)");
    // two GPUs along the rows
    let rows = l("(2,1):(1,0)");
    assert_eq!(
        shard_shape(&global.shape(), &rows).unwrap(),
        IntTuple::parse("(4,6)").unwrap()
    );
    let (s1, off1) = shard(&global, &rows, 1).unwrap();
    assert_eq!((s1, off1), (l("(4,6):(6,1)"), 24));
    let compact = l("(4,6):(6,1)");
    assert_eq!(rebuild(&global, &rows, &compact), Ok(Rebuild::AllGather));
    // three GPUs along the columns: each shard's rows are 2 apart in a (8,2) row-major buffer
    let cols = l("(1,3):(0,1)");
    let (s2, off2) = shard(&global, &cols, 2).unwrap();
    assert_eq!((s2, off2), (l("(8,2):(6,1)"), 4));
    let compact = l("(8,2):(2,1)");
    assert_eq!(
        gathered(&cols, &compact).unwrap(),
        l("((8,1),(2,3)):((2,0),(1,16))")
    );
    assert_eq!(
        rebuild(&global, &cols, &compact),
        Ok(Rebuild::AllGatherThenCopy)
    );
    // one GPU
    assert_eq!(
        rebuild(&global, &l("(1,1):(0,0)"), &l("(8,6):(6,1)")),
        Ok(Rebuild::Whole)
    );
}

#[test]
fn bad_meshes_name_the_condition() {
    let global = l("(8,6):(6,1)");
    // 6 columns over 4 GPUs
    assert_eq!(
        shard_shape(&global.shape(), &l("(1,4):(0,1)")),
        Err(LayoutError::NotDivisible { value: 6, by: 4 })
    );
    // two coordinates on one rank
    assert!(matches!(
        mesh_coord(&l("(2,2):(1,1)"), 0),
        Err(LayoutError::NotInjective { .. })
    ));
    // a rank outside the mesh
    assert_eq!(
        mesh_coord(&l("(2,2):(1,2)"), 4),
        Err(LayoutError::IndexOutOfRange { index: 4, size: 4 })
    );
    // a mesh of another rank than the tensor
    assert_eq!(
        shard_shape(&global.shape(), &l("4:1")),
        Err(LayoutError::RankMismatch {
            expected: 2,
            found: 1
        })
    );
}

/// Random 2-D meshes `(P, Q)` numbered column- or row-major over random row- or column-major
/// global matrices: the shards cover every global element exactly once, each shard's element
/// `x` is the global one at `x + shard * mesh_coord(r)`, and the gathered layout sends that
/// coordinate to `r * S + shard_layout(x)`, a bijection onto `0..M N`.
#[test]
fn shards_cover_the_global_tensor_once_and_gather_back() {
    let strategy = (
        1i64..5,
        1i64..5,
        1i64..6,
        1i64..6,
        any::<bool>(),
        any::<bool>(),
    );
    check(
        "shards_cover_the_global_tensor_once_and_gather_back",
        300,
        1.0,
        &[],
        strategy,
        |(p, q, a, b, mesh_row_major, global_row_major), t| {
            let (m, n) = (a * p, b * q);
            let order = |row: bool, x: i64, y: i64| {
                let s = IntTuple::from_ints(&[x, y]).unwrap();
                if row {
                    Layout::row_major(s).unwrap()
                } else {
                    Layout::col_major(s).unwrap()
                }
            };
            let mesh = order(mesh_row_major, p, q);
            let global = order(global_row_major, m, n);
            let compact = Layout::row_major(IntTuple::from_ints(&[a, b]).unwrap()).unwrap();
            let g = gathered(&mesh, &compact).unwrap();
            let mut seen = HashSet::new();
            let mut slots = HashSet::new();
            for r in 0..p * q {
                let c = mesh_coord(&mesh, r).unwrap();
                prop_assert_eq!(mesh.crd2idx(&c).unwrap(), r);
                let c = c.leaves().to_vec();
                let (s, off) = shard(&global, &mesh, r).unwrap();
                for x in coords(&[a, b]) {
                    let gc = [x[0] + a * c[0], x[1] + b * c[1]];
                    prop_assert_eq!(off + at(&s, &x), at(&global, &gc));
                    prop_assert!(seen.insert(gc), "{:?} in two shards", gc);
                    let slot = g.crd2idx(&IntTuple::from_ints(&gc).unwrap()).unwrap();
                    prop_assert_eq!(slot, r * a * b + at(&compact, &x));
                    slots.insert(slot);
                }
            }
            prop_assert_eq!(seen.len() as i64, m * n);
            prop_assert_eq!(slots.len() as i64, m * n);
            prop_assert!(slots.iter().all(|&s| (0..m * n).contains(&s)));
            // the gathered buffer is the global tensor itself exactly when the two coalesce alike
            let same = coords(&[m, n])
                .iter()
                .all(|gc| g.crd2idx(&IntTuple::from_ints(gc).unwrap()).unwrap() == at(&global, gc));
            let want = if p * q == 1 {
                Rebuild::Whole
            } else if same {
                Rebuild::AllGather
            } else {
                Rebuild::AllGatherThenCopy
            };
            prop_assert_eq!(rebuild(&global, &mesh, &compact).unwrap(), want);
            t.hit();
            Ok(())
        },
    );
}
