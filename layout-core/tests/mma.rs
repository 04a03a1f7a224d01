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

fn perm(s: &str) -> Option<Layout> {
    (s != "_").then(|| l(s))
}

fn permuted(al: &str, p: [&str; 3]) -> TiledMma {
    make_tiled_mma_permuted(
        &SM80_16X8X16_F32BF16BF16F32_TN,
        &l(al),
        &[perm(p[0]), perm(p[1]), perm(p[2])],
    )
    .unwrap()
}

/// Permuted tiled MMAs (SM80_16x8x16) whose TV layouts are checked against CuTe's strings.
const PERMUTED: [(&str, [&str; 3]); 6] = [
    ("(2,4)", ["_", "(8,4,2):(1,16,8)", "_"]),
    ("(2,4)", ["32", "(8,2,2):(1,16,8)", "16"]),
    ("(2,2)", ["32", "(8,2,2):(1,16,8)", "16"]),
    (
        "(2,2)",
        ["(16,2,2):(1,32,16)", "(8,2,2):(1,16,8)", "(8,2,2):(1,16,8)"],
    ),
    ("(4,2):(2,1)", ["(2,8,4):(8,1,16)", "32", "_"]),
    ("(2,4)", ["64", "64", "_"]),
];

/// `layout_{a,b,c}_tv` of permuted tiled MMAs are CuTe's strings. The expected strings come from
/// an independent model: `TiledMMA::thrfrg_A/B/C` and `get_layoutA/B/C_TV` of CUTLASS's
/// `cute/atom/mma_atom.hpp` transcribed line by line onto pycute's algebra (CUTLASS
/// `python/pycute`, treating every integer as static as C++ CuTe does), run outside this
/// repository; the one place where pycute's `None` differs from C++'s `_` (`zipped_divide` with
/// `_` keeps the mode split by its own two modes) was written out. The same model reproduces
/// the unpermuted strings below.
#[test]
fn permuted_tv_layouts_are_cutes() {
    let want: [[&str; 3]; 6] = [
        [
            "((4,8,2,4),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))",
            "((4,8,2,4),((2,2),(2,1))):((128,1,0,16),((64,512),(8,0)))",
            "((4,8,2,4),((2,2),(1,2))):((64,1,16,512),((32,8),(0,256)))",
        ],
        [
            "((4,8,2,4),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))",
            "((4,8,2,2,2),((2,2),(1,1))):((64,1,0,16,8),((32,256),(0,0)))",
            "((4,8,2,2,2),((2,2),(1,1))):((64,1,16,512,256),((32,8),(0,0)))",
        ],
        [
            "((4,8,2,2),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0)))",
            "((4,8,2,2),((2,2),(2,1))):((64,1,0,16),((32,256),(8,0)))",
            "((4,8,2,2),((2,2),(1,2))):((64,1,16,512),((32,8),(0,256)))",
        ],
        [
            "((4,8,2,2),((2,2,2),(2,2))):((128,1,32,0),((64,8,1024),(16,512)))",
            "((4,8,2,2),((2,2),(2,2))):((64,1,0,16),((32,512),(8,256)))",
            "((4,8,2,2),((2,2),(2,2))):((128,1,32,1024),((64,8),(16,512)))",
        ],
        [
            "(((4,2,4),2,4),((2,2,2),(1,1))):(((128,8,1),0,16),((64,4,512),(0,0)))",
            "(((4,8),2,4),((2,2),(2,1))):(((64,1),8,0),((32,256),(16,0)))",
            "(((4,2,4),2,4),((2,2),(1,2))):(((128,8,1),512,16),((64,4),(0,1024)))",
        ],
        [
            "((4,8,2,4),((2,2,2),(2,1))):((128,1,16,0),((64,8,512),(32,0)))",
            "((4,8,2,4),((2,2),(2,1))):((128,1,0,8),((64,512),(32,0)))",
            "((4,8,2,4),((2,2),(2,2))):((128,1,16,512),((64,8),(32,2048)))",
        ],
    ];
    for ((al, p), w) in PERMUTED.iter().zip(want) {
        let t = permuted(al, *p);
        assert_eq!(t.layout_a_tv.to_string(), w[0], "A {al} {p:?}");
        assert_eq!(t.layout_b_tv.to_string(), w[1], "B {al} {p:?}");
        assert_eq!(t.layout_c_tv.to_string(), w[2], "C {al} {p:?}");
    }
    // unpermuted, from the same model
    let t = make_tiled_mma(&SM80_16X8X16_F32BF16BF16F32_TN, &l("(2,2):(2,1)")).unwrap();
    assert_eq!(
        t.layout_c_tv.to_string(),
        "(((4,8),2,2),((2,2),(1,1))):(((64,1),256,16),((32,8),(0,0)))"
    );
    let t = make_tiled_mma(&SM80_16X8X16_F32BF16BF16F32_TN, &l("(2,4)")).unwrap();
    assert_eq!(
        t.layout_b_tv.to_string(),
        "((4,8,2,4),((2,2),(1,1))):((64,1,0,8),((32,256),(0,0)))"
    );
}

/// A permuted tiled MMA is the unpermuted one of the same tile (integer permutations of the
/// same sizes) with each operand index mapped through the permutations of its two modes; the
/// ownership counts are those of `make_tiled_mma`.
#[test]
fn permutation_maps_the_unpermuted_tile() {
    for (al, p) in PERMUTED {
        let t = permuted(al, p);
        let sizes = t.tile_mnk.map(|s| s.to_string());
        let plain = permuted(al, [&sizes[0], &sizes[1], &sizes[2]]);
        assert_eq!(plain.tile_mnk, t.tile_mnk);
        let w = [l(al).get(0).unwrap().size(), l(al).get(1).unwrap().size()];
        for (op, modes, copies) in [
            (Operand::A, [0, 2], w[1]),
            (Operand::B, [1, 2], w[0]),
            (Operand::C, [0, 1], 1),
        ] {
            let [rows, cols] = t.tile_of(op);
            let (tv, ptv) = (t.layout_tv(op), plain.layout_tv(op));
            for m in 0..2 {
                let (a, b) = (tv.get(m).unwrap(), ptv.get(m).unwrap());
                assert_eq!(a.size(), b.size(), "{op:?} {al} {p:?}");
            }
            let (pr, pc) = (t.permutation_mnk[modes[0]], t.permutation_mnk[modes[1]]);
            let mut seen = vec![0; (rows * cols) as usize];
            for x in 0..tv.size() {
                let i = ptv.call(x);
                let j = pr.call(i % rows) + rows * pc.call(i / rows);
                assert_eq!(tv.call(x), j, "{op:?} {al} {p:?} {x}");
                seen[j as usize] += 1;
            }
            // each element of C exactly once, A AN times, B AM times
            assert!(seen.iter().all(|&s| s == copies), "{op:?} {al} {p:?}");
        }
    }
}

/// With `_` (or the integer tile, CuTe's default) in every mode, `make_tiled_mma_permuted` is
/// `make_tiled_mma`; and the TV layouts are, as functions, those of the function before
/// permutations were added (strings recorded from it: it nested the thread mode differently).
#[test]
fn identity_permutation_is_the_old_function() {
    let atom = SM80_16X8X16_F32BF16BF16F32_TN;
    for al in ["(2,4)", "(2,2):(2,1)", "(1,2,2)", "(4,2):(2,1)"] {
        let t = make_tiled_mma(&atom, &l(al)).unwrap();
        assert_eq!(make_tiled_mma_permuted(&atom, &l(al), &[None; 3]), Ok(t));
        let ints = t.tile_mnk.map(|s| Some(Layout::int(s, 1).unwrap()));
        assert_eq!(make_tiled_mma_permuted(&atom, &l(al), &ints), Ok(t));
    }
    let old = [
        (
            "(2,4)",
            [
                "(((4,8,2),4),((2,2,2),(1,1))):(((64,1,16),0),((32,8,256),(0,0)))",
                "(((4,8),2,4),((2,2),(1,1))):(((64,1),0,8),((32,256),(0,0)))",
                "((4,8,2,4),((2,2),(1,1))):((64,1,16,256),((32,8),(0,0)))",
            ],
        ),
        (
            "(2,2):(2,1)",
            [
                "(((4,8),2,2),((2,2,2),(1,1))):(((64,1),0,16),((32,8,256),(0,0)))",
                "(((4,8),2,2),((2,2),(1,1))):(((32,1),8,0),((16,128),(0,0)))",
                "(((4,8),2,2),((2,2),(1,1))):(((64,1),256,16),((32,8),(0,0)))",
            ],
        ),
        (
            "(1,2,2)",
            [
                "(((4,8),2,2),((2,2,2),(1,1))):(((32,1),0,256),((16,8,128),(0,0)))",
                "((4,16,2),((2,2),(1,1))):((32,1,256),((16,128),(0,0)))",
                "(((4,8,2),2),((2,2),(1,1))):(((32,1,128),0),((16,8),(0,0)))",
            ],
        ),
    ];
    for (al, w) in old {
        let t = make_tiled_mma(&atom, &l(al)).unwrap();
        for (op, s) in OPS.iter().zip(w) {
            let (tv, o) = (t.layout_tv(*op), l(s));
            assert_eq!(tv.size(), o.size());
            assert!(
                (0..o.size()).all(|i| tv.call(i) == o.call(i)),
                "{op:?} {al}"
            );
        }
    }
}

/// Partitions of a tensor of several tiles by a permuted tiled MMA: each thread's elements are
/// its TV layout's elements in every tile, C's cover the tensor once; `TvCoords::of_mma` agrees
/// with the TV layout.
#[test]
fn permuted_partitions() {
    for (al, p) in PERMUTED {
        let t = permuted(al, p);
        for op in OPS {
            let [rows, cols] = t.tile_of(op);
            let (big_r, big_c) = (rows * 2, cols * 3);
            let ten = Layout::row_major(IntTuple::from_ints(&[big_r, big_c]).unwrap()).unwrap();
            let tv = t.layout_tv(op);
            let nv = tv.get(1).unwrap().size();
            let frag = t.partition_fragment(op, &ten).unwrap();
            assert_eq!(frag.size(), nv * 6);
            let plan = TvCoords::of_mma(&t, op, [rows, cols]).unwrap();
            assert_eq!(plan.values(), nv);
            let mut seen = vec![0; (big_r * big_c) as usize];
            for tid in 0..t.threads() {
                let (vals, origin) = t.get_slice(tid).unwrap().partition(op, &ten).unwrap();
                assert_eq!(vals.shape(), frag.shape());
                let mut got: Vec<i64> = (0..vals.size()).map(|j| origin + vals.call(j)).collect();
                let mut want = Vec::new();
                for v in 0..nv {
                    let i = tv.call(tid + t.threads() * v);
                    let (r, c) = (i % rows, i / rows);
                    let (o, d) = (plan.thread(tid), plan.value(v));
                    assert_eq!(
                        (o[0] + d[0], o[1] + d[1]),
                        (r, c),
                        "{op:?} {al} {p:?} thread {tid} value {v}"
                    );
                    for (rm, rc) in [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)] {
                        want.push((r + rm * rows) * big_c + c + rc * cols);
                    }
                }
                got.sort();
                want.sort();
                assert_eq!(got, want, "{op:?} {al} {p:?} thread {tid}");
                for e in got {
                    seen[e as usize] += 1;
                }
            }
            if op == Operand::C {
                assert!(seen.iter().all(|&s| s == 1), "{al} {p:?}");
            }
        }
    }
}

#[test]
fn permutation_errors() {
    let at = SM80_16X8X16_F32F16F16F32_TN;
    // N: 4 warps of n8 need a multiple of 32
    assert!(matches!(
        make_tiled_mma_permuted(&at, &l("(2,4)"), &[None, Some(l("(8,2):(1,8)")), None]),
        Err(LayoutError::NotDivisible { value: 16, by: 32 })
    ));
    // not a bijection onto 0..32
    assert!(matches!(
        make_tiled_mma_permuted(&at, &l("(2,4)"), &[None, Some(l("(8,4):(1,16)")), None]),
        Err(LayoutError::NotBijective { .. })
    ));
    assert!(matches!(
        make_tiled_mma_permuted(&at, &l("(2,4)"), &[None, Some(l("(8,4):(1,0)")), None]),
        Err(LayoutError::NotBijective { .. })
    ));
    // a tensor must be a multiple of the permuted tile
    let t = make_tiled_mma_permuted(&at, &l("(2,4)"), &[None, Some(l("(8,4,2):(1,16,8)")), None])
        .unwrap();
    assert_eq!(t.tile_mnk, [32, 64, 16]);
    assert!(matches!(
        t.get_slice(0).unwrap().partition_b(&l("(32,16):(16,1)")),
        Err(LayoutError::NotDivisible { value: 32, by: 64 })
    ));
}

/// Usable in `const` items.
const PERMUTED_MMA: TiledMma = const_ok!(make_tiled_mma_permuted(
    &SM80_16X8X16_F32F16F16F32_TN,
    &const_ok!(Layout::parse("(2,4)")),
    &[
        None,
        Some(const_ok!(Layout::parse("(8,4,2):(1,16,8)"))),
        None
    ]
));

#[test]
fn const_permuted_tiled_mma() {
    assert_eq!(PERMUTED_MMA.tile_mnk, [32, 64, 16]);
    // thread 32 (warp 1: m 16..31, n 0..15) holds B element n 1 of its second n8 atom at 8 + 1
    assert_eq!(PERMUTED_MMA.layout_b_tv.call(32 + 5 + 256 * 4) % 64, 9);
}
