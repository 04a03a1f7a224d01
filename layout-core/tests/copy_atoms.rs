//! Copy atoms (ldmatrix, cp.async): their layouts are CuTe's (strings from CUTLASS's
//! `copy_traits_sm75.hpp` / `copy_traits_sm80.hpp`); tiled copies made from a tiled MMA move,
//! by a simulation of the instruction, exactly the elements the MMA's fragments hold; the
//! bank-conflict model sees the swizzled tiles conflict-free and the plain ones not.

use layout_core::*;

fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap()
}

#[test]
fn atoms_are_cutes() {
    // name, ThrID, SrcLayout, DstLayout (= RefLayout) in bits, then Src and Dst in 16-bit
    // elements (CuTe's recast_layout<uint1_t, half_t>, worked out by hand from its upcast rule)
    let cases = [
        (
            SM75_U32X1_LDSM_N,
            "SM75_U32x1_LDSM_N",
            "32:1",
            "((8,4),128):((128,0),1)",
            "(32,32):(32,1)",
            "((8,4),8):((8,0),1)",
            "(32,2):(2,1)",
        ),
        (
            SM75_U32X2_LDSM_N,
            "SM75_U32x2_LDSM_N",
            "32:1",
            "((16,2),128):((128,0),1)",
            "(32,(32,2)):(32,(1,1024))",
            "((16,2),8):((8,0),1)",
            "(32,(2,2)):(2,(1,64))",
        ),
        (
            SM75_U32X4_LDSM_N,
            "SM75_U32x4_LDSM_N",
            "32:1",
            "(32,128):(128,1)",
            "(32,(32,4)):(32,(1,1024))",
            "(32,8):(8,1)",
            "(32,(2,4)):(2,(1,64))",
        ),
        (
            SM75_U16X2_LDSM_T,
            "SM75_U16x2_LDSM_T",
            "32:1",
            "((8,4),128):((128,0),1)",
            "((4,8),(16,2)):((256,16),(1,128))",
            "((8,4),8):((8,0),1)",
            "((4,8),(1,2)):((16,1),(1,8))",
        ),
        (
            SM75_U16X4_LDSM_T,
            "SM75_U16x4_LDSM_T",
            "32:1",
            "((16,2),128):((128,0),1)",
            "((4,8),(16,2,2)):((256,16),(1,128,1024))",
            "((16,2),8):((8,0),1)",
            "((4,8),(1,2,2)):((16,1),(1,8,64))",
        ),
        (
            SM75_U16X8_LDSM_T,
            "SM75_U16x8_LDSM_T",
            "32:1",
            "(32,128):(128,1)",
            "((4,8),(16,2,4)):((256,16),(1,128,1024))",
            "(32,8):(8,1)",
            "((4,8),(1,2,4)):((16,1),(1,8,64))",
        ),
        (
            SM80_CP_ASYNC_CACHEGLOBAL_U128,
            "SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>",
            "1:0",
            "(1,128):(0,1)",
            "(1,128):(0,1)",
            "(1,8):(0,1)",
            "(1,8):(0,1)",
        ),
        (
            SM80_CP_ASYNC_CACHEGLOBAL_ZFILL_U128,
            "SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<uint128_t>",
            "1:0",
            "(1,128):(0,1)",
            "(1,128):(0,1)",
            "(1,8):(0,1)",
            "(1,8):(0,1)",
        ),
    ];
    for (t, name, thr, src, dst, src16, dst16) in cases {
        assert_eq!(t.name, name);
        assert_eq!(CopyTraits::by_name(name), Some(t));
        assert_eq!(t.thr_id.to_string(), thr, "{name}");
        assert_eq!(t.src.to_string(), src, "{name}");
        assert_eq!(t.dst.to_string(), dst, "{name}");
        // ldmatrix's reference is its destination, cp.async's its source (equal anyway)
        if t.thr_id.size() == 32 {
            assert_eq!(t.reference, t.dst, "{name}");
        } else {
            assert_eq!(t.reference, t.src, "{name}");
        }
        let a = CopyAtom::new(&t, 16).unwrap();
        assert_eq!(a.val_layout_src.to_string(), src16, "{name}");
        assert_eq!(a.val_layout_dst.to_string(), dst16, "{name}");
        assert_eq!(a.val_layout_ref, a.val_layout_dst, "{name}");
        // every bit moved is a bit received: src and dst have the same image, of the same size
        // up to the threads that only receive (x1, x2 give fewer addresses than lanes)
        let image = |l: &Layout| {
            let mut v: Vec<i64> = (0..l.size()).map(|i| l.call(i)).collect();
            v.sort();
            v.dedup();
            v
        };
        assert_eq!(image(&t.src), image(&t.dst), "{name}");
        assert_eq!(image(&t.dst).len() as i64, t.dst.size(), "{name}");
    }
    let zfill: Vec<bool> = COPY_ATOMS.iter().map(|t| t.zfill).collect();
    assert_eq!(
        zfill,
        [false, false, false, false, false, false, false, true, false]
    );
    assert_eq!(CopyTraits::by_name("SM80_CP_ASYNC_CACHEGLOBAL"), None);
    assert_eq!(CopyTraits::by_name("SM75_U32x4_LDSM"), None);
    // 32-bit elements: an ldmatrix register holds one
    let a = CopyAtom::new(&SM75_U32X4_LDSM_N, 32).unwrap();
    assert_eq!(a.val_layout_dst.to_string(), "(32,(1,4)):(1,(1,32))");
    assert_eq!(a.num_val_src(), 4);
    assert_eq!(a.num_val_dst(), 4);
    // elements wider than the atom's register do not fit its threads
    assert!(CopyAtom::new(&SM75_U32X4_LDSM_N, 64).is_err());
}

#[test]
fn recast_is_cutes() {
    // upcast: the unit-stride mode shrinks, the others' strides divide; stride 0 stays
    assert_eq!(
        upcast(&l("((8,4),128):((128,0),1)"), 16)
            .unwrap()
            .to_string(),
        "((8,4),8):((8,0),1)"
    );
    assert_eq!(
        upcast(&l("(4,8):(2,16)"), 4).unwrap().to_string(),
        "(2,8):(1,4)"
    );
    assert!(matches!(
        upcast(&l("4:3"), 2),
        Err(LayoutError::NotDivisible { .. })
    ));
    // downcast: the unit-stride mode grows, the others' strides multiply
    assert_eq!(
        downcast(&l("(32,8):(8,1)"), 2).unwrap().to_string(),
        "(32,16):(16,1)"
    );
    assert!(downcast(&l("(4,8):(2,16)"), 2).is_err());
    // recast 16 -> 32 -> 16 bits is the identity here; 16 -> 24 bits goes through 48
    let x = l("(32,(2,4)):(2,(1,64))");
    let y = recast_layout(16, 32, &x).unwrap();
    assert_eq!(y.to_string(), "(32,(1,4)):(1,(1,32))");
    assert_eq!(recast_layout(16, 16, &x).unwrap(), x);
    assert_eq!(
        recast_layout(16, 24, &l("(4,6):(6,1)"))
            .unwrap()
            .to_string(),
        "(4,4):(4,1)"
    );
}

const TN: MmaAtom = SM80_16X8X16_F32BF16BF16F32_TN;

/// What an ldmatrix does, written from the PTX ISA (not from CuTe's layouts): for
/// `.x{1,2,4}`, lanes `8 i .. 8 i + 7` give the row addresses of matrix `i`; lane `l` receives,
/// in register `i`, the two 16-bit elements at row `l / 4`, columns `2 (l % 4)` and `+1` of
/// matrix `i` (`.trans`: rows `2 (l % 4)`, `+1` and column `l / 4`). `rows[i][r]` is the
/// element offset of row `r` of matrix `i`; returns `[lane][register][half]` offsets.
fn ldmatrix(rows: &[[i64; 8]], trans: bool) -> Vec<Vec<[i64; 2]>> {
    (0..32)
        .map(|lane| {
            rows.iter()
                .map(|m| {
                    let g = (lane % 4) as usize * 2;
                    if trans {
                        [m[g] + lane / 4, m[g + 1] + lane / 4]
                    } else {
                        let r = m[(lane / 4) as usize];
                        [r + g as i64, r + g as i64 + 1]
                    }
                })
                .collect()
        })
        .collect()
}

/// For every thread and every ldmatrix of a tiled copy over a tiled MMA's operand: the rows the
/// lanes give (value `(0, x)` of the copy's source partition, each a run of 8 consecutive
/// elements), run through [`ldmatrix`], land in each lane's registers on exactly the elements
/// that the lane's MMA fragment holds in those registers (the register a copy value writes is
/// `retile(partition_fragment)`). Returns the count of elements checked.
#[allow(clippy::needless_range_loop)]
fn check_copy_feeds_mma(
    mma: &TiledMma,
    op: Operand,
    traits: &CopyTraits,
    smem: &Layout,
    trans: bool,
) -> usize {
    let atom = CopyAtom::new(traits, 16).unwrap();
    let copy = match op {
        Operand::A => make_tiled_copy_a(&atom, mma),
        Operand::B => make_tiled_copy_b(&atom, mma),
        Operand::C => make_tiled_copy_c(&atom, mma),
    }
    .unwrap();
    assert_eq!(copy.threads(), mma.threads());
    let (thr, vals) = copy.partition_modes_s(smem).unwrap();
    let frag = mma.partition_fragment(op, smem).unwrap();
    let re = copy.retile(&frag).unwrap();
    // per atom: 8 source values (a row), 2 destination values per matrix
    let (ns, av) = (atom.num_val_src(), atom.num_val_ref());
    assert_eq!(ns, 8);
    let nmat = av as usize / 2;
    let atoms = vals.size() / ns; // ldmatrix instructions per thread
    assert_eq!(re.size(), frag.size());
    assert_eq!(frag.size(), atoms * av);
    // register index -> fragment coordinate, to read the MMA's own partition
    let mut coord_of = vec![-1; frag.size() as usize];
    for c in 0..frag.size() {
        let r = frag.call(c);
        assert_eq!(coord_of[r as usize], -1, "fragment {frag} not injective");
        coord_of[r as usize] = c;
    }
    let mut checked = 0;
    for warp in 0..mma.threads() / 32 {
        for x in 0..atoms {
            // source: lane l's row for matrix i is its value (0, x), for lanes 8 i + r
            let mut rows = vec![[0i64; 8]; nmat];
            for lane in 0..32 {
                let t = 32 * warp + lane;
                let base = thr.call(t) + vals.call(ns * x);
                for e in 0..8 {
                    assert_eq!(
                        thr.call(t) + vals.call(ns * x + e),
                        base + e,
                        "row not contiguous"
                    );
                }
                let (i, r) = ((lane / 8) as usize, (lane % 8) as usize);
                if i < nmat {
                    rows[i][r] = base;
                }
            }
            let got = ldmatrix(&rows, trans);
            for lane in 0..32 {
                let t = 32 * warp + lane;
                let (part, origin) = mma.get_slice(t).unwrap().partition(op, smem).unwrap();
                for reg in 0..nmat {
                    for h in 0..2 {
                        // copy destination value (2 reg + h) of atom x -> MMA register
                        let j = av * x + 2 * reg as i64 + h as i64;
                        let mreg = re.call(j);
                        let want = origin + part.call(coord_of[mreg as usize]);
                        assert_eq!(
                            got[lane as usize][reg][h], want,
                            "{} {op:?} thread {t} atom {x} reg {reg}.{h}",
                            traits.name
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked as i64, mma.threads() * frag.size());
    checked
}

#[test]
fn ldmatrix_n_feeds_the_mma_fragments() {
    let mma = make_tiled_mma(&TN, &l("(2,4)")).unwrap();
    // A: 128x32 and 128x64 K-major; x4, x2, x1
    for smem in ["(128,32):(32,1)", "(128,64):(64,1)", "(64,32):(1,64)"] {
        for t in [SM75_U32X4_LDSM_N, SM75_U32X2_LDSM_N, SM75_U32X1_LDSM_N] {
            if smem.ends_with("(1,64)") {
                continue; // M-major A is for .trans
            }
            assert!(check_copy_feeds_mma(&mma, Operand::A, &t, &l(smem), false) > 0);
        }
    }
    // B (N x K, K-major): x2 and x1 (x4 needs 8 B values per thread: see the permuted MMA)
    for t in [SM75_U32X2_LDSM_N, SM75_U32X1_LDSM_N] {
        check_copy_feeds_mma(&mma, Operand::B, &t, &l("(64,32):(32,1)"), false);
    }
    // other warp layouts and the 16x8x8 atom
    for (atom, al) in [
        (SM80_16X8X16_F16F16F16F16_TN, "(4,2):(2,1)"),
        (SM80_16X8X16_F32F16F16F32_TN, "(1,1)"),
        (SM80_16X8X8_F32F16F16F32_TN, "(2,2)"),
    ] {
        let mma = make_tiled_mma(&atom, &l(al)).unwrap();
        let k = mma.tile_mnk[2] * 2;
        let sa =
            Layout::row_major(IntTuple::from_ints(&[mma.tile_mnk[0] * 2, k]).unwrap()).unwrap();
        let x = if atom.shape_mnk[2] == 8 {
            SM75_U32X2_LDSM_N
        } else {
            SM75_U32X4_LDSM_N
        };
        check_copy_feeds_mma(&mma, Operand::A, &x, &sa, false);
    }
}

/// The (2,4) tiled MMA with N permuted by `(8,4,2):(1,16,8)`: each warp's two n8 atoms are
/// adjacent (n `16 w .. 16 w + 15`), a thread holds 8 B values per tile, and one ldmatrix.x4
/// loads them (CuTe's `Tile<_32, Layout<Shape<_8,_4,_2>, Stride<_1,_16,_8>>, _16>`).
fn permuted_mma() -> TiledMma {
    make_tiled_mma_permuted(&TN, &l("(2,4)"), &[None, Some(l("(8,4,2):(1,16,8)")), None]).unwrap()
}

#[test]
fn ldmatrix_x4_feeds_the_permuted_b_fragments() {
    let mma = permuted_mma();
    assert_eq!(mma.tile_mnk, [32, 64, 16]);
    // B: 256 x 64 (N x K), K-major
    let smem = l("(256,64):(64,1)");
    for t in [SM75_U32X4_LDSM_N, SM75_U32X2_LDSM_N, SM75_U32X1_LDSM_N] {
        assert_eq!(
            check_copy_feeds_mma(&mma, Operand::B, &t, &smem, false),
            256 * 8 * 4 * 4
        );
    }
    // A is unchanged by an N permutation
    for t in [SM75_U32X4_LDSM_N, SM75_U16X8_LDSM_T] {
        let (sm, tr) = if t.name.ends_with('T') {
            ("(64,32):(1,64)", true)
        } else {
            ("(128,32):(32,1)", false)
        };
        check_copy_feeds_mma(&mma, Operand::A, &t, &l(sm), tr);
    }
    // N-major B through .trans
    check_copy_feeds_mma(
        &mma,
        Operand::B,
        &SM75_U16X8_LDSM_T,
        &l("(128,32):(1,128)"),
        true,
    );
    // each warp's x4 reads 16 consecutive n: lanes 8 i + r give row n = 16 w + 8 (i / 2) + r
    let copy = make_tiled_copy_b(&CopyAtom::new(&SM75_U32X4_LDSM_N, 16).unwrap(), &mma).unwrap();
    let (thr, _) = copy.partition_modes_s(&smem).unwrap();
    for t in 0..256 {
        let (w, lane) = (t / 32 % 8, t % 32);
        let (i, r) = (lane / 8, lane % 8);
        let off = thr.call(t);
        assert_eq!(off / 64, 16 * (w / 2) + 8 * (i / 2) + r, "thread {t}");
        assert_eq!(off % 64, 8 * (i % 2), "thread {t}");
    }
}

/// Byte addresses of one ldmatrix.x4 of the permuted MMA's B (copy step `x`) for warp `w` over a
/// 256 x 64 K-major tile, through the swizzle.
#[test]
fn swizzled_permuted_b_is_conflict_free() {
    let mma = permuted_mma();
    let copy = make_tiled_copy_b(&CopyAtom::new(&SM75_U32X4_LDSM_N, 16).unwrap(), &mma).unwrap();
    let smem = l("(256,64):(64,1)");
    let (thr, vals) = copy.partition_modes_s(&smem).unwrap();
    let steps = vals.size() / 8;
    assert_eq!(steps, 4 * 4); // 256 / 64 tiles in N, 64 / 16 in K
    let sw = Swizzle::new(3, 3, 3).unwrap();
    for w in 0..8 {
        for x in 0..steps {
            let addr = |s: Option<Swizzle>| -> Vec<i64> {
                (0..32)
                    .map(|lane| {
                        let off = thr.call(32 * w + lane) + vals.call(8 * x);
                        2 * s.map_or(off, |s| s.apply(off))
                    })
                    .collect()
            };
            assert_eq!(
                smem_wavefronts(&addr(Some(sw)), 16).unwrap(),
                4,
                "warp {w} step {x}"
            );
            // unswizzled 128-byte rows: 8-way
            assert_eq!(smem_wavefronts(&addr(None), 16).unwrap(), 32);
        }
    }
}

#[test]
fn ldmatrix_t_feeds_the_mma_fragments() {
    // M-major A (K x M in memory: element (m, k) at m + 64 k) and N-major B, through .trans
    let mma = make_tiled_mma(&TN, &l("(2,4)")).unwrap();
    for t in [SM75_U16X8_LDSM_T, SM75_U16X4_LDSM_T, SM75_U16X2_LDSM_T] {
        check_copy_feeds_mma(&mma, Operand::A, &t, &l("(64,32):(1,64)"), true);
    }
    for t in [SM75_U16X4_LDSM_T, SM75_U16X2_LDSM_T] {
        check_copy_feeds_mma(&mma, Operand::B, &t, &l("(64,32):(1,64)"), true);
    }
}

/// The thread -> row mapping the kernel computes by hand is what the API gives: lane `l` of the
/// A ldmatrix.x4 gives row `l % 16`, k offset `8 (l / 16)`.
#[test]
fn ldmatrix_x4_a_addresses() {
    let mma = make_tiled_mma(&TN, &l("(2,4)")).unwrap();
    let copy = make_tiled_copy_a(&CopyAtom::new(&SM75_U32X4_LDSM_N, 16).unwrap(), &mma).unwrap();
    let smem = l("(128,32):(32,1)");
    let (thr, vals) = copy.partition_modes_s(&smem).unwrap();
    assert_eq!(thr.to_string(), "(16,2,2,4):(32,8,512,0)");
    assert_eq!(vals.to_string(), "((8,1),4,2):((1,0),1024,16)");
    for t in 0..256 {
        let (lane, wm) = (t % 32, (t / 32) % 2);
        for i in 0..4 {
            for ks in 0..2 {
                let off = thr.call(t) + vals.call(8 * (i + 4 * ks));
                let (row, k) = (off / 32, off % 32);
                // warp row wm's m-tiles are rows 16 wm + 32 i (CuTe tiles warps innermost)
                assert_eq!(row, lane % 16 + 16 * wm + 32 * i);
                assert_eq!(k, 8 * (lane / 16) + 16 * ks);
            }
        }
    }
    let frag = mma.partition_fragment_a(&smem).unwrap();
    assert_eq!(frag.to_string(), "((2,2,2),4,2):((1,2,4),16,8)");
    assert_eq!(
        copy.retile(&frag).unwrap().to_string(),
        "((8,1),4,2):((1,0),16,8)"
    );
    // the copy's TV layouts as CuTe prints them
    assert_eq!(
        copy.layout_s_tv().unwrap().to_string(),
        "((16,2,2,4),(8,1)):((1,256,16,0),(32,0))"
    );
    assert_eq!(
        copy.layout_d_tv().unwrap().to_string(),
        "((4,8,2,4),((2,2,2),1)):((64,1,16,0),((32,8,256),0))"
    );
}

/// Each element of the operand tile is read by the copy's source values as often as the MMA's
/// threads hold it: A `AN` times, B `AM` times.
#[test]
fn copies_cover_the_tile() {
    let mma = make_tiled_mma(&TN, &l("(2,4)")).unwrap();
    let a16 = |t: &CopyTraits| CopyAtom::new(t, 16).unwrap();
    // (copy, tile rows, cols, destination copies, source copies): the lanes of an x1 (x2)
    // that give no address repeat those that do, 4 (2) times
    for (copy, rows, cols, times, src_times) in [
        (
            make_tiled_copy_a(&a16(&SM75_U32X4_LDSM_N), &mma).unwrap(),
            32,
            16,
            4,
            4,
        ),
        (
            make_tiled_copy_a(&a16(&SM75_U32X1_LDSM_N), &mma).unwrap(),
            32,
            16,
            4,
            16,
        ),
        (
            make_tiled_copy_b(&a16(&SM75_U32X2_LDSM_N), &mma).unwrap(),
            32,
            16,
            2,
            4,
        ),
        (
            make_tiled_copy_b(&a16(&SM75_U16X4_LDSM_T), &mma).unwrap(),
            32,
            16,
            2,
            4,
        ),
    ] {
        for (tv, times) in [
            (copy.layout_s_tv().unwrap(), src_times),
            (copy.layout_d_tv().unwrap(), times),
        ] {
            let mut seen = vec![0; rows * cols];
            for i in 0..tv.size() {
                seen[tv.call(i) as usize] += 1;
            }
            assert!(seen.iter().all(|&s| s == times), "{tv}");
        }
    }
}

/// The C fragment: every element of a tiled MMA's C owned by exactly one (thread, register).
#[test]
fn c_fragment_owned_once() {
    let mmas = [
        make_tiled_mma(&TN, &l("(2,4)")).unwrap(),
        make_tiled_mma(&TN, &l("(2,2):(2,1)")).unwrap(),
        permuted_mma(),
    ];
    for mma in mmas {
        let (m, n) = (mma.tile_mnk[0] * 2, mma.tile_mnk[1] * 3);
        let c = Layout::row_major(IntTuple::from_ints(&[m, n]).unwrap()).unwrap();
        let frag = mma.partition_fragment_c(&c).unwrap();
        let nv = mma.layout_c_tv.get(1).unwrap().size();
        assert_eq!(frag.size(), nv * 6);
        let mut owner = vec![None; (m * n) as usize];
        for t in 0..mma.threads() {
            let (part, origin) = mma.get_slice(t).unwrap().partition_c(&c).unwrap();
            assert_eq!(part.shape(), frag.shape());
            let mut regs = vec![false; frag.size() as usize];
            for j in 0..part.size() {
                let r = frag.call(j) as usize;
                assert!(!regs[r]);
                regs[r] = true;
                let e = (origin + part.call(j)) as usize;
                assert_eq!(owner[e], None);
                owner[e] = Some((t, r));
            }
        }
        assert!(owner.iter().all(|o| o.is_some()));
    }
}

#[test]
fn fragments_are_cutes() {
    let mma = make_tiled_mma(&TN, &l("(2,4)")).unwrap();
    // C is compact column-major, size-1 modes stride 0
    assert_eq!(
        mma.partition_fragment_c(&l("(32,32):(32,1)"))
            .unwrap()
            .to_string(),
        "((2,2),1,1):((1,2),0,0)"
    );
    // A: its rest modes ordered by their strides in memory
    assert_eq!(
        mma.partition_fragment_a(&l("(64,32):(32,1)"))
            .unwrap()
            .to_string(),
        "((2,2,2),2,2):((1,2,4),16,8)"
    );
    assert_eq!(
        mma.partition_fragment_a(&l("(64,32):(1,64)"))
            .unwrap()
            .to_string(),
        "((2,2,2),2,2):((1,2,4),8,16)"
    );
    assert_eq!(
        mma.partition_fragment_b(&l("(64,32):(32,1)"))
            .unwrap()
            .to_string(),
        "((2,2),2,2):((1,2),8,4)"
    );
}

/// Byte addresses of one ldmatrix.x4 of A (CPY_M step `i`, k step `ks`) for warp `w`, through
/// the swizzle.
fn ldsm_a_addresses(sw: Option<Swizzle>, k: i64, w: i64, i: i64, ks: i64) -> Vec<i64> {
    let mma = make_tiled_mma(&TN, &l("(2,4)")).unwrap();
    let copy = make_tiled_copy_a(&CopyAtom::new(&SM75_U32X4_LDSM_N, 16).unwrap(), &mma).unwrap();
    let smem = Layout::row_major(IntTuple::from_ints(&[128, k]).unwrap()).unwrap();
    let (thr, vals) = copy.partition_modes_s(&smem).unwrap();
    let cpy_m = vals.get(1).unwrap().size();
    (0..32)
        .map(|lane| {
            let off = thr.call(32 * w + lane) + vals.call(8 * (i + cpy_m * ks));
            2 * sw.map_or(off, |s| s.apply(off))
        })
        .collect()
}

#[test]
fn swizzled_ldmatrix_is_conflict_free() {
    for (k, sw) in [
        (32, Swizzle::new(2, 3, 3).unwrap()),
        (64, Swizzle::new(3, 3, 3).unwrap()),
    ] {
        for w in 0..8 {
            for i in 0..4 {
                for ks in 0..k / 16 {
                    let a = ldsm_a_addresses(Some(sw), k, w, i, ks);
                    assert_eq!(
                        smem_wavefronts(&a, 16).unwrap(),
                        4,
                        "k {k} warp {w} {i} {ks}"
                    );
                    let plain = ldsm_a_addresses(None, k, w, i, ks);
                    // 64-byte rows: rows r and r + 2 share banks, 4-way; 128-byte rows: 8-way
                    let degree = if k == 32 { 4 } else { 8 };
                    assert_eq!(smem_wavefronts(&plain, 16).unwrap(), 4 * degree);
                }
            }
        }
    }
}

#[test]
fn wavefront_model() {
    // 32 consecutive words: one wavefront; a stride of 32 words: 32
    let lin: Vec<i64> = (0..32).map(|i| 4 * i).collect();
    assert_eq!(smem_wavefronts(&lin, 4).unwrap(), 1);
    let col: Vec<i64> = (0..32).map(|i| 128 * i).collect();
    assert_eq!(smem_wavefronts(&col, 4).unwrap(), 32);
    // the same word for all: a broadcast
    assert_eq!(smem_wavefronts(&[8; 32], 4).unwrap(), 1);
    // 16-byte accesses: 4 phases of 8 threads; consecutive: 4 wavefronts
    let v: Vec<i64> = (0..32).map(|i| 16 * i).collect();
    assert_eq!(smem_wavefronts(&v, 16).unwrap(), 4);
    // 8-byte: 2 phases of 16
    let v: Vec<i64> = (0..32).map(|i| 8 * i).collect();
    assert_eq!(smem_wavefronts(&v, 8).unwrap(), 2);
    assert!(matches!(
        smem_wavefronts(&[2], 4),
        Err(LayoutError::NotDivisible { .. })
    ));
    assert!(matches!(
        smem_wavefronts(&[0], 2),
        Err(LayoutError::UnsupportedAtom { .. })
    ));
}

#[test]
fn errors_are_named() {
    let mma = make_tiled_mma(&TN, &l("(2,4)")).unwrap();
    let x4 = CopyAtom::new(&SM75_U32X4_LDSM_N, 16).unwrap();
    // B holds 4 values per thread, the x4 moves 8: CuTe's "too few vals"
    assert!(matches!(
        make_tiled_copy_b(&x4, &mma),
        Err(LayoutError::NotDivisible { value: 4, by: 8 })
    ));
    // so does a permutation of N of size 32 over 4 warps in N (one n8 atom per warp) ...
    let p = [Some(l("32")), Some(l("(8,2,2):(1,16,8)")), Some(l("16"))];
    let m24 = make_tiled_mma_permuted(&TN, &l("(2,4)"), &p).unwrap();
    assert!(matches!(
        make_tiled_copy_b(&x4, &m24),
        Err(LayoutError::NotDivisible { value: 4, by: 8 })
    ));
    // ... but over 2 warps in N it gives each warp two adjacent atoms
    let m22 = make_tiled_mma_permuted(&TN, &l("(2,2)"), &p).unwrap();
    assert_eq!(make_tiled_copy_b(&x4, &m22).unwrap().values(), 8);
    check_copy_feeds_mma(
        &m22,
        Operand::B,
        &SM75_U32X4_LDSM_N,
        &l("(64,32):(32,1)"),
        false,
    );
    let c = make_tiled_copy_a(&x4, &mma).unwrap();
    assert!(matches!(
        c.partition_s(&l("(48,32):(32,1)"), 0),
        Err(LayoutError::NotDivisible { value: 48, by: 32 })
    ));
    assert!(matches!(
        c.partition_s(&l("(64,32):(32,1)"), 256),
        Err(LayoutError::IndexOutOfRange { .. })
    ));
    assert!(matches!(
        c.retile(&l("(8,4)")),
        Err(LayoutError::RankMismatch { .. })
    ));
}

/// Usable in `const` items: the kernel's addresses are constants.
const MMA: TiledMma = const_ok!(make_tiled_mma(&TN, &const_ok!(Layout::parse("(2,4)"))));
const COPY_A: AtomTiledCopy = const_ok!(make_tiled_copy_a(
    &const_ok!(CopyAtom::new(&SM75_U32X4_LDSM_N, 16)),
    &MMA
));
const PART_A: (Layout, Layout) =
    const_ok!(COPY_A.partition_modes_s(&const_ok!(Layout::parse("(128,32):(32,1)"))));

#[test]
fn const_copy() {
    assert_eq!(PART_A.0.call(17), 32 + 8);
    assert_eq!(PART_A.1.call(8), 1024);
}
