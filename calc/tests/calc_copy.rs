//! The calculator's copy atoms, tiled copies of a tiled MMA, retile and register fragments
//! (in process).

use tessel_calc::eval_line;

const MMA: &str = "make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4))";

fn eval(e: &str) -> String {
    eval_line(&e.replace("MMA", MMA))
}

#[test]
fn copy_atoms_by_name() {
    assert_eq!(
        eval("SM75_U32x4_LDSM_N"),
        "Copy_Atom(SM75_U32x4_LDSM_N, ThrID 32:1, ValLayoutSrc (32,8):(8,1), \
         ValLayoutDst (32,(2,4)):(2,(1,64)), ValLayoutRef (32,(2,4)):(2,(1,64)), ValueType 16b)"
    );
    assert_eq!(
        eval("copy_atom(SM75_U16x8_LDSM_T)"),
        "Copy_Atom(SM75_U16x8_LDSM_T, ThrID 32:1, ValLayoutSrc (32,8):(8,1), \
         ValLayoutDst ((4,8),(1,2,4)):((16,1),(1,8,64)), ValLayoutRef ((4,8),(1,2,4)):((16,1),(1,8,64)), ValueType 16b)"
    );
    assert_eq!(
        eval("copy_atom(SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>, 32)"),
        "Copy_Atom(SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>, ThrID 1:0, ValLayoutSrc (1,4):(0,1), \
         ValLayoutDst (1,4):(0,1), ValLayoutRef (1,4):(0,1), ValueType 32b)"
    );
    assert_eq!(
        eval("copy_atom(SM75_U32x1_LDSM_N, 8)"),
        "Copy_Atom(SM75_U32x1_LDSM_N, ThrID 32:1, ValLayoutSrc ((8,4),16):((16,0),1), \
         ValLayoutDst (32,4):(4,1), ValLayoutRef (32,4):(4,1), ValueType 8b)"
    );
    assert!(eval("SM80_CP_ASYNC_CACHEGLOBAL<uint64_t>").starts_with("error:"));
    assert!(eval("SM75_U32x4_LDSM").starts_with("error: unknown name"));
    assert!(eval("copy_atom((2,2))").starts_with("error: expected a copy atom"));
    assert!(eval("copy_atom(SM75_U32x4_LDSM_N, 64)").starts_with("error:"));
}

#[test]
fn tiled_copies_of_a_tiled_mma() {
    assert_eq!(
        eval("make_tiled_copy_A(SM75_U32x4_LDSM_N, MMA)"),
        "TiledCopy(Tiler_MN (32,16), TiledLayout_TV ((4,8,2,4),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0))), \
         Copy_Atom(SM75_U32x4_LDSM_N, ThrID 32:1, ValLayoutSrc (32,8):(8,1), \
         ValLayoutDst (32,(2,4)):(2,(1,64)), ValLayoutRef (32,(2,4)):(2,(1,64)), ValueType 16b))"
    );
    assert_eq!(
        eval("get_layoutS_TV(make_tiled_copy_A(SM75_U32x4_LDSM_N, MMA))"),
        "((16,2,2,4),(8,1)):((1,256,16,0),(32,0))"
    );
    assert_eq!(
        eval("get_layoutD_TV(make_tiled_copy_A(SM75_U32x4_LDSM_N, MMA))"),
        "((4,8,2,4),((2,2,2),1)):((64,1,16,0),((32,8,256),0))"
    );
    assert_eq!(
        eval("partition_S(make_tiled_copy_A(SM75_U32x4_LDSM_N, MMA), 17, (128,32):(32,1))"),
        "40 o ((8,1),4,2):((1,0),1024,16)"
    );
    assert_eq!(
        eval("partition_D(make_tiled_copy_B(SM75_U32x2_LDSM_N, MMA), 5, (64,32):(32,1))"),
        "34 o (((2,2),1),2,2):(((1,8),0),1024,16)"
    );
    assert_eq!(
        eval("partition_fragment_A(MMA, (128,32):(32,1))"),
        "((2,2,2),4,2):((1,2,4),16,8)"
    );
    assert_eq!(
        eval("partition_fragment_C(MMA, (64,64))"),
        "((2,2),2,2):((1,2),4,8)"
    );
    assert_eq!(
        eval("retile(make_tiled_copy_A(SM75_U32x2_LDSM_N, MMA), partition_fragment_A(MMA, (128,32):(32,1)))"),
        "((4,2),4,2):((1,4),16,8)"
    );
    // the x4 moves 8 B values per thread; this tiled MMA's threads hold 4
    assert_eq!(
        eval("make_tiled_copy_B(SM75_U32x4_LDSM_N, MMA)"),
        "error: make_tiled_copy_B: the copy atom moves 8 values per thread where the tiled \
         MMA's threads hold 4 per tile (CuTe: too few vals for the CopyAtom)"
    );
    assert!(eval("make_tiled_copy_A(SM75_U32x4_LDSM_N, (2,2))")
        .starts_with("error: expected a tiled MMA"));
    assert!(eval("get_layoutS_TV((2,2))").starts_with("error: expected a tiled copy"));
}

const PMMA: &str = "make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4),<_,(8,4,2):(1,16,8),_>)";

#[test]
fn permuted_tiled_mma() {
    assert_eq!(
        eval_line(PMMA),
        "TiledMMA(SM80_16x8x16_F32BF16BF16F32_TN, 256 threads, tile (32,64,16), \
         ThrLayoutVMNK (32,2,4,1):(1,32,64,0), PermutationMNK <_,(8,4,2):(1,16,8),_>, \
         LayoutA_TV ((4,8,2,4),((2,2,2),(1,1))):((64,1,16,0),((32,8,256),(0,0))), \
         LayoutB_TV ((4,8,2,4),((2,2),(2,1))):((128,1,0,16),((64,512),(8,0))), \
         LayoutC_TV ((4,8,2,4),((2,2),(1,2))):((64,1,16,512),((32,8),(0,256))))"
    );
    // missing trailing modes are `_`; integers are n:1; a shape is a by-mode tiler
    let short = "make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4),<_,(8,4,2):(1,16,8)>)";
    assert_eq!(eval_line(short), eval_line(PMMA));
    assert_eq!(
        eval_line("layout_b_tv(make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4),<32,64,16>))"),
        "((4,8,2,4),((2,2),(2,1))):((128,1,0,8),((64,512),(32,0)))"
    );
    assert_eq!(
        eval_line("layout_b_tv(make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4),(_,64)))"),
        "((4,8,2,4),((2,2),(2,1))):((128,1,0,8),((64,512),(32,0)))"
    );
    // the identity permutation prints as make_tiled_mma's
    assert_eq!(
        eval_line("make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4),<_,_,_>)"),
        eval_line(MMA)
    );
    // the B x4 ldmatrix now fits
    let x4 = eval_line(&format!("make_tiled_copy_B(SM75_U32x4_LDSM_N, {PMMA})"));
    assert!(x4.starts_with("TiledCopy(Tiler_MN (64,16)"), "{x4}");
    assert!(eval("make_tiled_copy_B(SM75_U32x4_LDSM_N, MMA)").starts_with("error:"));
    assert_eq!(
        eval_line(&format!("partition_fragment_B({PMMA}, (256,64):(64,1))")),
        "((2,2),(2,4),4):((1,2),(16,32),4)"
    );
    // errors
    assert!(
        eval_line("make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4),<_,(8,2):(1,8)>)")
            .starts_with("error:")
    );
    assert!(
        eval_line("make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4),(8,4,2):(1,16,8))")
            .starts_with("error: expected a permutation")
    );
    assert!(
        eval_line("make_tiled_mma(SM80_16x8x16_F32BF16BF16F32_TN,(2,4),<_,_,_,_>)")
            .starts_with("error: expected a permutation")
    );
}
