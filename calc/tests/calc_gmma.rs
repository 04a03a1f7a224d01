//! The calculator's GMMA atoms, descriptors and swizzle modes (in process).

use tessel_calc::eval_line;

#[test]
fn gmma_atoms_print_cutes_layouts() {
    assert_eq!(
        eval_line("gmma_atom(SM90_64x128x16_F32BF16BF16_SS)"),
        "GMMA_Atom(SM90_64x128x16_F32BF16BF16_SS, wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16, \
         A and B from shared memory (descriptors), shape_mnk (64,128,16), ThrID 128:1, \
         ALayout (128,(64,16)):(0,(1,64)), BLayout (128,(128,16)):(0,(1,128)), \
         CLayout ((4,8,4),(2,2,16)):((128,1,16),(64,8,512)))"
    );
    assert_eq!(
        eval_line("gmma_atom(SM90_64x64x16_F32F16F16_RS)"),
        "GMMA_Atom(SM90_64x64x16_F32F16F16_RS, wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16, \
         A from registers, B from shared memory (descriptor), shape_mnk (64,64,16), ThrID 128:1, \
         ALayout ((4,8,4),(2,2,2)):((128,1,16),(64,8,512)), BLayout (128,(64,16)):(0,(1,64)), \
         CLayout ((4,8,4),(2,2,8)):((128,1,16),(64,8,512)))"
    );
    assert_eq!(
        eval_line("layout_c_tv(SM90_64x256x16_F32BF16BF16_SS)"),
        "((4,8,4),(2,2,32)):((128,1,16),(64,8,512))"
    );
    // tiled over two warpgroups in M
    assert!(
        eval_line("make_tiled_mma(SM90_64x128x16_F32BF16BF16_SS,(2,1))")
            .starts_with("TiledMMA(SM90_64x128x16_F32BF16BF16_SS, 256 threads, tile (128,128,16)")
    );
    assert_eq!(
        eval_line("gmma_atom(SM80_16x8x16_F32BF16BF16F32_TN)"),
        "error: SM80_16x8x16_F32BF16BF16F32_TN is not a GMMA (wgmma) atom"
    );
    assert!(eval_line("gmma_atom(SM90_64x4x16_F32BF16BF16_SS)").starts_with("error: unknown name"));
    assert!(eval_line("gmma_atom((2,2))").starts_with("error: expected an MMA atom"));
}

#[test]
fn gmma_descriptors() {
    // 64x64 bf16, K-major, 128-byte swizzle: tile_to_shape(Layout_K_SW128_Atom<bf16>, (64,64))
    assert_eq!(
        eval_line("gmma_desc(Sw<3,3,3> o ((8,8),64):((64,512),1), K)"),
        "GmmaDescriptor 0x4000004000010000: start_address 0 (0 B), leading_byte_offset 1 (16 B), \
         stride_byte_offset 64 (1024 B), base_offset 0, layout_type 1 (B128)"
    );
    // its k-block 3 starts 48 elements (96 bytes) into the rows
    assert_eq!(
        eval_line("gmma_desc(Sw<3,3,3> o ((8,8),64):((64,512),1), K, 16, 3)"),
        "GmmaDescriptor 0x4000004000010006: start_address 6 (96 B), leading_byte_offset 1 (16 B), \
         stride_byte_offset 64 (1024 B), base_offset 0, layout_type 1 (B128)"
    );
    // 128x16 bf16, N-major, 128-byte swizzle (B of N = 128): LBO the next 64 n, SBO the next 8 k
    assert_eq!(
        eval_line("gmma_desc(Sw<3,3,3> o ((64,2),(8,2)):((1,512),(64,1024)), MN)"),
        "GmmaDescriptor 0x4000008000400000: start_address 0 (0 B), leading_byte_offset 64 (1024 B), \
         stride_byte_offset 128 (2048 B), base_offset 0, layout_type 1 (B128)"
    );
    // no swizzle, K-major core matrices: a plain layout
    assert_eq!(
        eval_line("gmma_desc(((8,8),(8,2)):((8,64),(1,512)), K)"),
        "GmmaDescriptor 0x0000000800400000: start_address 0 (0 B), leading_byte_offset 64 (1024 B), \
         stride_byte_offset 8 (128 B), base_offset 0, layout_type 0 (INTERLEAVE)"
    );
    // refusals, with the reason
    let padded = eval_line("gmma_desc((64,16):(24,1), K)");
    assert!(
        padded.starts_with("error: not a canonical GMMA shared-memory layout: element (m 1, k 0)"),
        "{padded}"
    );
    let bytes = eval_line("gmma_desc(Sw<3,4,3> o ((8,8),64):((64,512),1), K)");
    assert!(
        bytes.starts_with("error: Sw<3,4,3> over 16-bit elements is not a hardware swizzle"),
        "{bytes}"
    );
    assert!(eval_line("gmma_desc((64,16):(16,1), N)").starts_with("error: unknown name \"N\""));
    assert!(eval_line("gmma_desc((64,16):(16,1), 1)").starts_with("error: expected K or MN"));
    assert!(
        eval_line("gmma_desc(Sw<3,3,3> o ((8,8),64):((64,512),1), K, 16, 4)")
            .starts_with("error: coordinate 4")
    );
}

#[test]
fn swizzle_modes() {
    assert_eq!(
        eval_line("swizzle_mode(Sw<3,3,3> o (8,64):(64,1))"),
        "128-byte swizzle (TMA CU_TENSOR_MAP_SWIZZLE_128B = 3, GMMA layout type B128 = 1)"
    );
    assert_eq!(
        eval_line("swizzle_mode(Sw<1,2,3> o (8,8):(8,1), 32)"),
        "32-byte swizzle (TMA CU_TENSOR_MAP_SWIZZLE_32B = 1, GMMA layout type B32 = 3)"
    );
    assert!(eval_line("swizzle_mode(Sw<3,3,3> o (8,64):(64,1), 8)").starts_with("error:"));
}
