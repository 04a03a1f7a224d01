//! MMA atoms and tiled MMAs: the atoms' layouts are CuTe's (strings from CUTLASS's
//! `mma_traits_sm80.hpp`), and the tiled MMAs' TV layouts and partitions agree with a direct
//! definition of which thread holds which element.

use layout_core::*;

fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap()
}

const A16: &str = "((4,8),(2,2,2)):((32,1),(16,8,128))";
const B16: &str = "((4,8),(2,2)):((16,1),(8,64))";
const ROW16X8: &str = "((4,8),(2,2)):((32,1),(16,8))";
const ROW8X8: &str = "((4,8),2):((16,1),8)";

#[test]
fn atoms_are_cutes() {
    type Case<'a> = (&'a MmaAtom, &'a str, [i64; 3], &'a str, &'a str, &'a str);
    let cases: [Case; 6] = [
        (
            &SM80_16X8X16_F32F16F16F32_TN,
            "SM80_16x8x16_F32F16F16F32_TN",
            [16, 8, 16],
            A16,
            B16,
            ROW16X8,
        ),
        (
            &SM80_16X8X16_F32BF16BF16F32_TN,
            "SM80_16x8x16_F32BF16BF16F32_TN",
            [16, 8, 16],
            A16,
            B16,
            ROW16X8,
        ),
        (
            &SM80_16X8X16_F16F16F16F16_TN,
            "SM80_16x8x16_F16F16F16F16_TN",
            [16, 8, 16],
            A16,
            B16,
            ROW16X8,
        ),
        (
            &SM80_16X8X8_F32F16F16F32_TN,
            "SM80_16x8x8_F32F16F16F32_TN",
            [16, 8, 8],
            ROW16X8,
            ROW8X8,
            ROW16X8,
        ),
        (
            &SM80_16X8X8_F32BF16BF16F32_TN,
            "SM80_16x8x8_F32BF16BF16F32_TN",
            [16, 8, 8],
            ROW16X8,
            ROW8X8,
            ROW16X8,
        ),
        (
            &SM80_16X8X8_F16F16F16F16_TN,
            "SM80_16x8x8_F16F16F16F16_TN",
            [16, 8, 8],
            ROW16X8,
            ROW8X8,
            ROW16X8,
        ),
    ];
    for (atom, name, mnk, a, b, c) in cases {
        assert_eq!(atom.name, name);
        assert_eq!(MmaAtom::by_name(name), Some(*atom));
        assert_eq!(atom.shape_mnk, mnk);
        assert_eq!(atom.thr_id.to_string(), "32:1");
        assert_eq!(atom.a.to_string(), a, "{name} A");
        assert_eq!(atom.b.to_string(), b, "{name} B");
        assert_eq!(atom.c.to_string(), c, "{name} C");
        // each layout is a bijection (thread, value) -> its tile
        for (tv, size) in [
            (atom.a, mnk[0] * mnk[2]),
            (atom.b, mnk[1] * mnk[2]),
            (atom.c, mnk[0] * mnk[1]),
        ] {
            assert_eq!(tv.get(0).unwrap().size(), 32);
            let mut seen = vec![0; size as usize];
            for i in 0..tv.size() {
                seen[tv.call(i) as usize] += 1;
            }
            assert!(seen.iter().all(|&s| s == 1), "{name} {tv}");
        }
        let tn = format!(
            "{}{}{}{}",
            atom.types[0].name(),
            atom.types[1].name(),
            atom.types[2].name(),
            atom.types[3].name()
        );
        assert!(name.contains(&tn));
    }
    assert_eq!(MmaAtom::by_name("SM80_16x8x16_F32F16F16F32"), None);
}

/// One known entry of the PTX fragment layout (ISA, `mma.m16n8k16` with `.f16`): thread 5 (group
/// 1, lane-in-group 1) holds C rows 1 and 9, columns 2 and 3; A `a0,a1` at row 1, columns 2, 3,
/// and `a4,a5` at columns 10, 11.
#[test]
fn atom_matches_ptx_fragments() {
    let at = SM80_16X8X16_F32F16F16F32_TN;
    let c: Vec<(i64, i64)> = (0..4)
        .map(|v| at.c.call(5 + 32 * v))
        .map(|i| (i % 16, i / 16))
        .collect();
    assert_eq!(c, [(1, 2), (1, 3), (9, 2), (9, 3)]);
    let a: Vec<(i64, i64)> = (0..8)
        .map(|v| at.a.call(5 + 32 * v))
        .map(|i| (i % 16, i / 16))
        .collect();
    assert_eq!(
        a,
        [
            (1, 2),
            (1, 3),
            (9, 2),
            (9, 3),
            (1, 10),
            (1, 11),
            (9, 10),
            (9, 11)
        ]
    );
    let b: Vec<(i64, i64)> = (0..4)
        .map(|v| at.b.call(5 + 32 * v))
        .map(|i| (i % 8, i / 8))
        .collect();
    // B is n + 8 k: thread 5 holds column n = 1, rows k = 2, 3, 10, 11
    assert_eq!(b, [(1, 2), (1, 3), (1, 10), (1, 11)]);
}

/// The thread coordinate `(v, m, n, k)` with `thr_layout_vmnk(v, m, n, k) == tid`, by search.
fn thr_coord(t: &TiledMma, tid: i64) -> [i64; 4] {
    let v = t.thr_layout_vmnk;
    let s: Vec<i64> = (0..4).map(|i| v.get(i).unwrap().size()).collect();
    let mut found = None;
    for j in 0..v.size() {
        if v.call(j) == tid {
            assert!(found.is_none());
            let c = [
                j % s[0],
                j / s[0] % s[1],
                j / (s[0] * s[1]) % s[2],
                j / (s[0] * s[1] * s[2]),
            ];
            found = Some(c);
        }
    }
    found.unwrap()
}

/// `(row, col)` in the operand's tile of thread `tid`'s value `val`, straight from the
/// definition: the atom's TV layout at the warp's own atom tile.
fn by_definition(t: &TiledMma, op: Operand, tid: i64, val: i64) -> (i64, i64) {
    let [v, m, n, k] = thr_coord(t, tid);
    let s = t.atom.shape_mnk;
    let (tv, rows, w) = match op {
        Operand::A => (t.atom.a, s[0], [m * s[0], k * s[2]]),
        Operand::B => (t.atom.b, s[1], [n * s[1], k * s[2]]),
        Operand::C => (t.atom.c, s[0], [m * s[0], n * s[1]]),
    };
    let i = tv.call(v + 32 * val);
    (w[0] + i % rows, w[1] + i / rows)
}

const OPS: [Operand; 3] = [Operand::A, Operand::B, Operand::C];

fn check_tiled(atom: &MmaAtom, al: &str) {
    let al = l(al);
    let t = make_tiled_mma(atom, &al).unwrap();
    let w: Vec<i64> = (0..3)
        .map(|i| al.append_to_rank(3).unwrap().get(i).unwrap().size())
        .collect();
    assert_eq!(t.threads(), 32 * al.size());
    let s = atom.shape_mnk;
    assert_eq!(t.tile_mnk, [s[0] * w[0], s[1] * w[1], s[2] * w[2]]);
    for op in OPS {
        let tv = t.layout_tv(op);
        let [rows, cols] = t.tile_of(op);
        assert_eq!(tv.rank(), 2, "{op:?} {tv}");
        assert_eq!(tv.get(0).unwrap().size(), t.threads(), "{op:?} {tv}");
        let nv = tv.get(1).unwrap().size();
        // the copies of each element: A across the warp columns (AN), B across the warp rows
        // (AM), C across the K warps (AK)
        let copies = match op {
            Operand::A => w[1],
            Operand::B => w[0],
            Operand::C => w[2],
        };
        assert_eq!(t.threads() * nv, rows * cols * copies, "{op:?}");
        let mut holders = vec![Vec::new(); (rows * cols) as usize];
        for tid in 0..t.threads() {
            for val in 0..nv {
                let i = tv.call(tid + t.threads() * val);
                let (r, c) = by_definition(&t, op, tid, val);
                assert_eq!(
                    (i % rows, i / rows),
                    (r, c),
                    "{op:?} {tv} thread {tid} value {val}"
                );
                holders[i as usize].push((tid, val));
            }
        }
        for h in &holders {
            assert_eq!(h.len() as i64, copies, "{op:?} {tv}");
            // the copies are the same value index of different threads
            assert!(h.iter().all(|&(_, v)| v == h[0].1));
        }
    }
}

#[test]
fn tiled_mmas_agree_with_the_definition() {
    for atom in &MMA_ATOMS {
        for al in [
            "1",
            "(1,1)",
            "(2,2):(1,2)",
            "(2,2):(2,1)",
            "(2,4)",
            "(4,2):(2,1)",
            "(1,2,2)",
            "(2,1,2):(2,1,1)",
        ] {
            check_tiled(atom, al);
        }
    }
}

#[test]
fn single_atom_tiled_mma_is_the_atom() {
    let at = SM80_16X8X16_F32BF16BF16F32_TN;
    let t = make_tiled_mma(&at, &l("(1,1)")).unwrap();
    for (tv, atv) in [
        (t.layout_a_tv, at.a),
        (t.layout_b_tv, at.b),
        (t.layout_c_tv, at.c),
    ] {
        for i in 0..atv.size() {
            assert_eq!(tv.call(i), atv.call(i));
        }
    }
    assert_eq!(t.tile_mnk, [16, 8, 16]);
}

/// Partitions of a tensor larger than the tile: each thread's value `(j, (rm, rc))` is the
/// element the TV layout gives for value `j`, in tile `(rm, rc)`; over all threads the C
/// partitions cover the tensor once, A `AN` times, B `AM` times.
#[test]
fn partitions_tile_the_tensor() {
    for atom in [SM80_16X8X16_F32F16F16F32_TN, SM80_16X8X8_F16F16F16F16_TN] {
        for al in ["(2,2):(1,2)", "(2,4)", "(4,2):(2,1)"] {
            let t = make_tiled_mma(&atom, &l(al)).unwrap();
            let w = [l(al).get(0).unwrap().size(), l(al).get(1).unwrap().size()];
            for op in OPS {
                let [rows, cols] = t.tile_of(op);
                let (big_r, big_c) = (rows * 2, cols * 3);
                // a row-major tensor: offsets differ from column-major indices
                let ten = Layout::row_major(IntTuple::from_ints(&[big_r, big_c]).unwrap()).unwrap();
                let mut seen = vec![0; (big_r * big_c) as usize];
                let tv = t.layout_tv(op);
                for tid in 0..t.threads() {
                    let (vals, origin) = t.get_slice(tid).unwrap().partition(op, &ten).unwrap();
                    let nv = tv.get(1).unwrap().size();
                    assert_eq!(vals.size(), nv * 6);
                    assert_eq!(vals.rank(), 3);
                    assert_eq!(vals.get(1).unwrap().size(), 2);
                    assert_eq!(vals.get(2).unwrap().size(), 3);
                    for j in 0..vals.size() {
                        let (v, rest) = (j % nv, j / nv);
                        let (rm, rc) = (rest % 2, rest / 2);
                        let i = tv.call(tid + t.threads() * v);
                        let (r, c) = (i % rows + rm * rows, i / rows + rc * cols);
                        let off = origin + vals.call(j);
                        assert_eq!(off, r * big_c + c, "{op:?} {al} thread {tid} value {j}");
                        seen[off as usize] += 1;
                    }
                }
                let copies = match op {
                    Operand::A => w[1],
                    Operand::B => w[0],
                    Operand::C => 1,
                };
                assert!(seen.iter().all(|&s| s == copies), "{op:?} {al}");
            }
        }
    }
}

#[test]
fn errors_are_named() {
    let at = SM80_16X8X16_F32F16F16F32_TN;
    assert!(matches!(
        make_tiled_mma(&at, &l("(2,2):(1,1)")),
        Err(LayoutError::NotBijective { .. })
    ));
    assert!(matches!(
        make_tiled_mma(&at, &l("(1,1,1,2)")),
        Err(LayoutError::RankMismatch { .. })
    ));
    let t = make_tiled_mma(&at, &l("(2,2)")).unwrap();
    assert!(matches!(
        t.get_slice(128),
        Err(LayoutError::IndexOutOfRange { .. })
    ));
    // a tensor not divisible by the atom tile
    let thr = t.get_slice(0).unwrap();
    assert!(matches!(
        thr.partition_c(&Layout::col_major(IntTuple::from_ints(&[48, 16]).unwrap()).unwrap()),
        Err(LayoutError::NotDivisible { value: 48, by: 32 })
    ));
    assert!(matches!(
        thr.partition_a(&l("(32,16,2)")),
        Err(LayoutError::RankMismatch { .. })
    ));
}

/// The atoms and tiled MMAs are usable in `const` items.
const TILED: TiledMma = const_ok!(make_tiled_mma(
    &SM80_16X8X16_F32F16F16F32_TN,
    &const_ok!(Layout::parse("(2,2)"))
));

#[test]
fn const_tiled_mma() {
    assert_eq!(TILED.threads(), 128);
    assert_eq!(TILED.tile_mnk, [32, 16, 16]);
}
