//! Hopper GMMA: the wgmma atoms' layouts are CuTe's (strings instantiated by hand from the
//! templates of CUTLASS's `mma_traits_sm90_gmma.hpp`), C and the register A agree with the PTX
//! ISA's fragment figures, the descriptors of the canonical tiles have the field values CuTe's
//! `make_gmma_desc` gives them (derived by hand below), and an independent model of the
//! hardware's addressing, written from the PTX ISA's description in bytes, reads every element
//! of every block from where the layout has it.

use layout_core::*;

fn l(s: &str) -> Layout {
    Layout::parse(s).unwrap()
}

/// CuTe prints static integers as `_4`; tessel prints `4`.
fn cute(s: &str) -> String {
    s.replace('_', "")
}

const NS: [i64; 32] = {
    let mut n = [0; 32];
    let mut i = 0;
    while i < 32 {
        n[i] = 8 * (i as i64 + 1);
        i += 1;
    }
    n
};

#[test]
fn atoms_are_cutes() {
    assert_eq!(GMMA_ATOMS.len(), 128);
    for n in NS {
        for (t, ty) in [("BF16BF16", MmaType::BF16), ("F16F16", MmaType::F16)] {
            for src in ["SS", "RS"] {
                let name = format!("SM90_64x{n}x16_F32{t}_{src}");
                let g = GmmaAtom::by_name(&name).unwrap_or_else(|| panic!("{name}"));
                assert_eq!(g.mma.name, name);
                assert_eq!(g.mma.shape_mnk, [64, n, 16]);
                assert_eq!(g.mma.types, [MmaType::F32, ty, ty, MmaType::F32]);
                // ThrID = Layout<_128>
                assert_eq!(g.mma.thr_id.to_string(), "128:1");
                // CLayout_64xN = ((_4,_8,_4),(_2,_2,Int<N/8>)):((_128,_1,_16),(_64,_8,_512))
                assert_eq!(
                    g.mma.c.to_string(),
                    cute(&format!(
                        "((_4,_8,_4),(_2,_2,_{})):((_128,_1,_16),(_64,_8,_512))",
                        n / 8
                    ))
                );
                // BLayout = ABLayout<N,16> = (_128,(Int<N>,_16)):(_0,(_1,Int<N>))
                assert_eq!(
                    g.mma.b.to_string(),
                    cute(&format!("(_128,(_{n},_16)):(_0,(_1,_{n}))"))
                );
                if src == "SS" {
                    assert_eq!(g.source, GmmaSource::SS);
                    // ALayout = ABLayout<64,16>
                    assert_eq!(g.mma.a.to_string(), cute("(_128,(_64,_16)):(_0,(_1,_64))"));
                } else {
                    assert_eq!(g.source, GmmaSource::RS);
                    // ALayout = ALayout_64x16
                    assert_eq!(
                        g.mma.a.to_string(),
                        cute("((_4,_8,_4),(_2,_2,_2)):((_128,_1,_16),(_64,_8,_512))")
                    );
                }
                let ab = if ty == MmaType::BF16 { "bf16" } else { "f16" };
                assert_eq!(
                    g.ptx,
                    format!("wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ab}.{ab}")
                );
                // the calculator's and make_tiled_mma's lookup finds it too
                assert_eq!(MmaAtom::by_name(&name), Some(g.mma));
            }
        }
    }
    let named = [
        (SM90_64X64X16_F32BF16BF16_SS, "SM90_64x64x16_F32BF16BF16_SS"),
        (
            SM90_64X128X16_F32BF16BF16_SS,
            "SM90_64x128x16_F32BF16BF16_SS",
        ),
        (
            SM90_64X256X16_F32BF16BF16_SS,
            "SM90_64x256x16_F32BF16BF16_SS",
        ),
        (SM90_64X64X16_F32F16F16_SS, "SM90_64x64x16_F32F16F16_SS"),
        (SM90_64X128X16_F32F16F16_SS, "SM90_64x128x16_F32F16F16_SS"),
        (SM90_64X256X16_F32F16F16_SS, "SM90_64x256x16_F32F16F16_SS"),
        (SM90_64X64X16_F32BF16BF16_RS, "SM90_64x64x16_F32BF16BF16_RS"),
        (
            SM90_64X128X16_F32BF16BF16_RS,
            "SM90_64x128x16_F32BF16BF16_RS",
        ),
        (
            SM90_64X256X16_F32BF16BF16_RS,
            "SM90_64x256x16_F32BF16BF16_RS",
        ),
        (SM90_64X64X16_F32F16F16_RS, "SM90_64x64x16_F32F16F16_RS"),
        (SM90_64X128X16_F32F16F16_RS, "SM90_64x128x16_F32F16F16_RS"),
        (SM90_64X256X16_F32F16F16_RS, "SM90_64x256x16_F32F16F16_RS"),
    ];
    for (g, name) in named {
        assert_eq!(GmmaAtom::by_name(name), Some(g));
    }
}

/// The lookup runs at compile time too (kernels name their atom in a `const`).
const G128: Option<GmmaAtom> = GmmaAtom::by_name("SM90_64x128x16_F32BF16BF16_SS");
const M128: Option<MmaAtom> = MmaAtom::by_name("SM90_64x128x16_F32F16F16_RS");

#[test]
fn by_name_refuses_what_is_not_there() {
    assert_eq!(G128, Some(SM90_64X128X16_F32BF16BF16_SS));
    assert_eq!(M128, Some(SM90_64X128X16_F32F16F16_RS.mma));
    for bad in [
        "SM90_64x4x16_F32BF16BF16_SS",
        "SM90_64x264x16_F32BF16BF16_SS",
        "SM90_64x128x16_F32BF16BF16",
        "SM90_64x128x16_F16F16F16_SS", // f16 accumulators: not defined here
        "sm90_64x128x16_f32bf16bf16_ss",
        "",
    ] {
        assert_eq!(GmmaAtom::by_name(bad), None, "{bad}");
    }
    // the SM80 atoms are not GMMA atoms, and both lookups still find them
    assert_eq!(GmmaAtom::by_name("SM80_16x8x16_F32BF16BF16F32_TN"), None);
    assert_eq!(
        MmaAtom::by_name("SM80_16x8x16_F32BF16BF16F32_TN"),
        Some(SM80_16X8X16_F32BF16BF16F32_TN)
    );
}

/// The PTX ISA's accumulator fragment of `wgmma .m64nNk16` (figure "WGMMA .m64nNk16 register
/// fragment layout for accumulator matrix D"): thread `t` (warp `w = t / 32`, lane `l`) holds
/// `d[i]`, `0 <= i < N / 2`, at row `16 w + l / 4 + 8 ((i / 2) % 2)`, column
/// `2 (l % 4) + i % 2 + 8 (i / 4)`. The same figure gives A's register fragment for `N = 16`.
fn ptx_fragment(t: i64, i: i64) -> (i64, i64) {
    let (w, ln) = (t / 32, t % 32);
    (
        16 * w + ln / 4 + 8 * ((i / 2) % 2),
        2 * (ln % 4) + i % 2 + 8 * (i / 4),
    )
}

#[test]
fn c_is_owned_once_and_is_ptxs_fragment() {
    for n in NS {
        let g = GmmaAtom::by_name(&format!("SM90_64x{n}x16_F32BF16BF16_SS")).unwrap();
        let c = g.mma.c;
        let (thr, val) = (c.get(0).unwrap(), c.get(1).unwrap());
        assert_eq!((thr.size(), val.size()), (128, n / 2));
        let mut seen = vec![0u32; (64 * n) as usize];
        for t in 0..128 {
            for v in 0..n / 2 {
                let idx = thr.call(t) + val.call(v);
                seen[idx as usize] += 1;
                let (row, col) = ptx_fragment(t, v);
                assert_eq!(idx, row + 64 * col, "N {n} thread {t} value {v}");
            }
        }
        assert!(seen.iter().all(|&s| s == 1), "N {n}: C owned once");
    }
}

#[test]
fn a_from_registers_is_ptxs_fragment_and_from_smem_is_the_whole_tile() {
    let rs = SM90_64X128X16_F32BF16BF16_RS.mma.a;
    let (thr, val) = (rs.get(0).unwrap(), rs.get(1).unwrap());
    let mut seen = [0u32; 64 * 16];
    for t in 0..128 {
        for v in 0..8 {
            let idx = thr.call(t) + val.call(v);
            seen[idx as usize] += 1;
            let (m, k) = ptx_fragment(t, v);
            assert_eq!(idx, m + 64 * k, "thread {t} value {v}");
        }
    }
    assert!(seen.iter().all(|&s| s == 1));
    // SS: every thread of the warpgroup "holds" all of A and all of B (the hardware reads them)
    for g in [SM90_64X128X16_F32BF16BF16_SS, SM90_64X256X16_F32F16F16_SS] {
        for (lay, rows) in [(g.mma.a, 64), (g.mma.b, g.mma.shape_mnk[1])] {
            let (thr, val) = (lay.get(0).unwrap(), lay.get(1).unwrap());
            assert_eq!(thr.size(), 128);
            assert_eq!(thr.cosize(), 1);
            for v in 0..rows * 16 {
                assert_eq!(val.call(v), v);
            }
        }
    }
}

#[test]
fn tiled_over_two_warpgroups() {
    // CuTe: make_tiled_mma(SM90_64x128x16_F32BF16BF16_SS{}, Layout<Shape<_2,_1,_1>>{})
    let mma = make_tiled_mma(&SM90_64X128X16_F32BF16BF16_SS.mma, &l("(2,1)")).unwrap();
    assert_eq!(mma.threads(), 256);
    assert_eq!(mma.tile_mnk, [128, 128, 16]);
    let c = mma.layout_c_tv;
    let (thr, val) = (c.get(0).unwrap(), c.get(1).unwrap());
    let mut seen = vec![0u32; 128 * 128];
    for t in 0..256 {
        for v in 0..64 {
            seen[(thr.call(t) + val.call(v)) as usize] += 1;
        }
        // warpgroup 1 holds rows 64..127
        assert_eq!(thr.call(t) % 128 >= 64, t >= 128);
    }
    assert!(seen.iter().all(|&s| s == 1));
}

#[test]
fn swizzle_modes_units_and_codes() {
    use SwizzleMode::*;
    // (mode, Sw in bytes as CuTe writes it, TMA code, GMMA layout type)
    let table = [(None, 0, 0), (B32, 1, 3), (B64, 2, 2), (B128, 3, 1)];
    for (mode, tma, gmma) in table {
        assert_eq!(mode.tma_code(), tma);
        assert_eq!(mode.gmma_layout_type(), gmma);
        assert_eq!(SwizzleMode::from_tma_code(tma), Ok(mode));
        assert_eq!(SwizzleMode::from_gmma_layout_type(gmma), Ok(mode));
        // CuTe's byte swizzle Sw<B,4,3> is tessel's Sw<B,4,3> over 8-bit elements, Sw<B,3,3>
        // over 16-bit ones, Sw<B,2,3> over 32-bit ones
        for (bits, m) in [(8, 4), (16, 3), (32, 2)] {
            let sw = Swizzle::new(mode.bits(), m, 3).unwrap();
            assert_eq!(SwizzleMode::from_swizzle(&sw, bits), Ok(mode));
            assert_eq!(mode.swizzle(bits), Ok(sw));
        }
    }
    let sw = |b, m, s| Swizzle::new(b, m, s).unwrap();
    // the identity is "none" whatever M and S
    assert_eq!(SwizzleMode::from_swizzle(&sw(0, 0, 0), 16), Ok(None));
    // CuTe's byte form given as if it counted 16-bit elements: 32-byte units, no such mode
    assert_eq!(
        SwizzleMode::from_swizzle(&sw(3, 4, 3), 16),
        Err(LayoutError::UnsupportedSwizzle {
            bits: 3,
            base: 4,
            shift: 3,
            elem_bits: 16
        })
    );
    assert!(SwizzleMode::from_swizzle(&sw(3, 3, 4), 16).is_err());
    assert!(SwizzleMode::from_swizzle(&sw(4, 3, 4), 16).is_err());
    assert!(SwizzleMode::from_swizzle(&sw(3, 3, 3), 12).is_err());
    assert!(SwizzleMode::from_tma_code(4).is_err()); // CU_TENSOR_MAP_SWIZZLE_128B_ATOM_32B
    assert!(SwizzleMode::from_gmma_layout_type(-1).is_err());
    // the check: a pair agrees exactly when it names one mode
    for tma in 0..4 {
        for gmma in 0..4 {
            let agree = table.iter().any(|&(_, t, g)| t == tma && g == gmma);
            match check_swizzle_codes(tma, gmma) {
                Ok(m) => {
                    assert!(agree);
                    assert_eq!((m.tma_code(), m.gmma_layout_type()), (tma, gmma));
                }
                Err(e) => {
                    assert!(!agree);
                    assert_eq!(e, LayoutError::SwizzleMismatch { tma, gmma });
                }
            }
        }
    }
    // passing the TMA's 128B code as the descriptor's layout type: named, both
    let e = check_swizzle_codes(3, 3).unwrap_err().to_string();
    assert!(
        e.contains("CU_TENSOR_MAP_SWIZZLE_128B (code 3)") && e.contains("B32 (code 3)"),
        "{e}"
    );
    assert!(matches!(
        check_swizzle_codes(6, 1),
        Err(LayoutError::UnknownSwizzleCode {
            code: 6,
            gmma: false
        })
    ));
}

#[test]
fn layout_atoms_are_cutes() {
    // CuTe: Layout_K_SW128_Atom<T> = upcast<sizeof_bits<T>>(Sw<3,4,3> o (8,1024):(1024,1)) in
    // bits, etc.; the swizzle stays in bytes there, tessel's counts elements
    let bit_layouts = [
        (SwizzleMode::None, "(8,128):(128,1)", "(128,8):(1,128)"),
        (SwizzleMode::B32, "(8,256):(256,1)", "(256,8):(1,256)"),
        (SwizzleMode::B64, "(8,512):(512,1)", "(512,8):(1,512)"),
        (SwizzleMode::B128, "(8,1024):(1024,1)", "(1024,8):(1,1024)"),
    ];
    for (mode, k_bits, mn_bits) in bit_layouts {
        for w in [8, 16, 32] {
            for (major, bits) in [(GmmaMajor::K, k_bits), (GmmaMajor::MN, mn_bits)] {
                let atom = gmma_layout_atom(mode, major, w).unwrap();
                assert_eq!(*atom.layout(), upcast(&l(bits), w).unwrap());
                assert_eq!(atom.swizzle(), mode.swizzle(w).unwrap());
            }
        }
    }
    assert_eq!(
        gmma_layout_atom(SwizzleMode::B128, GmmaMajor::K, 16)
            .unwrap()
            .to_string(),
        "Sw<3,3,3> o 0 o (8,64):(64,1)"
    );
}

/// `tile_to_shape(GMMA::Layout_<major>_<mode>_Atom<T>{}, shape)`, as CuTe's kernels build their
/// shared-memory tiles.
fn tile(mode: SwizzleMode, major: GmmaMajor, w: i64, shape: &str) -> ComposedLayout {
    let atom = gmma_layout_atom(mode, major, w).unwrap();
    let t = tile_to_shape(atom.layout(), &IntTuple::parse(shape).unwrap(), None).unwrap();
    ComposedLayout::new(atom.swizzle(), t).unwrap()
}

/// The hardware, from the PTX ISA's description of the canonical layouts in bytes
/// ([`GmmaDescriptor::hardware_address`]): the byte address of element `(mn, k)` of the block.
fn hardware_address(d: &GmmaDescriptor, major: GmmaMajor, w: i64, mn: i64, k: i64) -> i64 {
    d.hardware_address(major, w, mn, k)
}

/// Every element of every k-block read by the model of the hardware is where the layout has it.
fn check_hardware_reads_the_layout(smem: &ComposedLayout, w: i64, major: GmmaMajor) {
    let lay = smem.layout();
    let (l0, l1) = (lay.get(0).unwrap(), lay.get(1).unwrap());
    let kb = 256 / w;
    for b in 0..l1.size() / kb {
        let d = make_gmma_desc_k(smem, w, major, b).unwrap();
        for k in 0..kb {
            for m in 0..l0.size() {
                let elem = smem
                    .swizzle()
                    .apply(smem.offset() + l0.call(m) + l1.call(b * kb + k));
                assert_eq!(
                    hardware_address(&d, major, w, m, k),
                    elem * w / 8,
                    "{smem} {major:?} block {b} (m {m}, k {k}): {d}"
                );
            }
        }
    }
}

/// Expected fields, derived by hand from CuTe's `make_gmma_desc<Major>` (mma_traits_sm90_gmma.hpp)
/// for `tile_to_shape(Layout_<major>_<mode>_Atom<bfloat16_t>, shape)`, start address 0:
///
/// K-major. `recast<uint128_t>` divides the K mode (stride 1) by 8 and the other strides by 8;
/// `logical_divide(.., Tile<8:1, 2:1>)` gives `((8,m),(2,1))`; SBO = `stride<0,1>`, the step
/// between 8-row groups; LBO = `stride<1,0>` (asserted to be 1 when swizzled).
/// * SW128 `(64,64)`: the atom `(8,64):(64,1)` tiled to `((8,8),(64,1)):((64,512),(1,_))`;
///   in u128 `((8,8),2):((8,64),1)`: LBO 1, SBO 64 (1024 bytes), type B128 = 1. The same for
///   `(128,64)` and `(256,64)` (m = 16, 32: the SBO is the same step).
/// * SW64 `(64,64)`: atom `(8,32):(32,1)`, 8-row groups 256 elements apart: SBO 32, LBO 1,
///   type 2. SW32: atom `(8,16):(16,1)`: SBO 16, LBO 1, type 3.
/// * INTERLEAVE `(64,64)`: atom `(8,8):(8,1)` tiled to `((8,8),(8,8)):((8,64),(1,512))`; u128
///   `((1,8),(8,8))`-ish, K's second u128 512 elements away: LBO 64, SBO 8 (128 bytes), type 0.
///
/// MN-major. `recast<uint128_t>` divides MN by 8; `logical_divide(.., Tile<W:1, 8:1>)` gives
/// `((W,n),(8,k))`; swizzled: LBO = `stride<0,1>` (the next W·8 MN elements), SBO =
/// `stride<1,1>` (the next 8 k); INTERLEAVE: SBO = `stride<0,1>`, LBO = `stride<1,1>`. A mode
/// of size 1 has stride 0 in CuTe (`coalesce` gives `_1:_0`), so a tile one swizzle row wide has
/// LBO 0.
/// * SW128 `(64,16)`: atom `(64,8):(1,64)` tiled to `(64,(8,2)):(1,(64,512))`: n = 1, LBO 0;
///   SBO 512 elements = 64. `(128,16)`: `((64,2),(8,2)):((1,512),(64,1024))`: LBO 64, SBO 128;
///   `(256,16)`: four atoms along MN before the next 8 k: LBO 64, SBO 256.
/// * SW64 `(64,16)`: atom `(32,8):(1,32)`: `((32,2),(8,2)):((1,256),(32,512))`: LBO 32, SBO 64,
///   type 2. SW32 `(64,16)`: `((16,4),(8,2)):((1,128),(16,512))`: LBO 16, SBO 64, type 3.
/// * INTERLEAVE `(64,16)`: atom `(8,8):(1,8)`: `((8,8),(8,2)):((1,64),(8,512))`: SBO 8 (the
///   next 8 MN elements, 128 bytes), LBO 64 (the next 8 k, 1024 bytes), type 0.
#[test]
fn descriptors_of_cutes_canonical_tiles() {
    use GmmaMajor::{K, MN};
    use SwizzleMode::*;
    // (mode, major, tile shape, LBO, SBO, layout type)
    let cases = [
        (B128, K, "(64,64)", 1, 64, 1),
        (B128, K, "(128,64)", 1, 64, 1),
        (B128, K, "(256,64)", 1, 64, 1),
        (B64, K, "(64,64)", 1, 32, 2),
        (B32, K, "(64,64)", 1, 16, 3),
        (None, K, "(64,64)", 64, 8, 0),
        (B128, MN, "(64,16)", 0, 64, 1),
        (B128, MN, "(128,16)", 64, 128, 1),
        (B128, MN, "(256,16)", 64, 256, 1),
        (B64, MN, "(64,16)", 32, 64, 2),
        (B32, MN, "(64,16)", 16, 64, 3),
        (None, MN, "(64,16)", 64, 8, 0),
    ];
    for (mode, major, shape, lbo, sbo, ty) in cases {
        let smem = tile(mode, major, 16, shape);
        let d = make_gmma_desc(&smem, 16, major).unwrap();
        let what = format!("{mode:?} {major:?} {shape}: {d}");
        assert_eq!(d.start_address(), 0, "{what}");
        assert_eq!(d.leading_byte_offset(), lbo, "{what}");
        assert_eq!(d.stride_byte_offset(), sbo, "{what}");
        assert_eq!(d.base_offset(), 0, "{what}");
        assert_eq!(d.layout_type(), ty, "{what}");
        assert_eq!(d.swizzle_mode(), mode);
        check_hardware_reads_the_layout(&smem, 16, major);
    }
    // the 64 bits: layout type 1 << 62, SBO 64 << 32, LBO 1 << 16
    let d = make_gmma_desc(&tile(B128, K, 16, "(64,64)"), 16, K).unwrap();
    assert_eq!(d.desc, 0x4000_0040_0001_0000);
    assert_eq!(
        d.to_string(),
        "GmmaDescriptor 0x4000004000010000: start_address 0 (0 B), leading_byte_offset 1 (16 B), \
         stride_byte_offset 64 (1024 B), base_offset 0, layout_type 1 (B128)"
    );
    assert_eq!(GmmaDescriptor::new(0, 1, 64, 0, B128), Ok(d));
    // the model can fail: a wrong SBO or layout type reads some element from elsewhere
    let smem = tile(B128, K, 16, "(64,64)");
    let (l0, l1) = (smem.layout().get(0).unwrap(), smem.layout().get(1).unwrap());
    for bad in [
        GmmaDescriptor::new(0, 1, 32, 0, B128).unwrap(),
        GmmaDescriptor::new(0, 1, 64, 0, B64).unwrap(),
    ] {
        let differs = (0..64).any(|m| {
            (0..16).any(|k| {
                hardware_address(&bad, K, 16, m, k)
                    != 2 * smem.swizzle().apply(l0.call(m) + l1.call(k))
            })
        });
        assert!(differs, "{bad}");
    }
}

#[test]
fn other_widths_and_larger_tiles_are_read_right() {
    use GmmaMajor::{K, MN};
    let mut checked = 0;
    for mode in [
        SwizzleMode::None,
        SwizzleMode::B32,
        SwizzleMode::B64,
        SwizzleMode::B128,
    ] {
        for w in [8, 16, 32] {
            let kb = 256 / w;
            let row = mode.row_bytes() * 8 / w; // elements in a row of the atom
            for major in [K, MN] {
                // K-major: K a multiple of the row and of 2 blocks; MN-major: MN of the row
                let k = if major == K {
                    (2 * kb).max(row)
                } else {
                    2 * kb
                };
                for mn in [64, 128, 256] {
                    if major == MN && mn % row != 0 {
                        continue;
                    }
                    for order in ["(0,1)", "(1,0)"] {
                        // column-major tiling of the atoms (CuTe's default) and K first
                        let atom = gmma_layout_atom(mode, major, w).unwrap();
                        let t = tile_to_shape(
                            atom.layout(),
                            &IntTuple::parse(&format!("({mn},{k})")).unwrap(),
                            Some(&IntTuple::parse(order).unwrap()),
                        )
                        .unwrap();
                        let smem = ComposedLayout::new(atom.swizzle(), t).unwrap();
                        check_hardware_reads_the_layout(&smem, w, major);
                        checked += 1;
                    }
                }
            }
        }
    }
    assert!(checked >= 130, "{checked}");
}

#[test]
fn k_blocks_step_the_start_address() {
    use GmmaMajor::{K, MN};
    use SwizzleMode::*;
    // K-major SW128 (64,64): block b starts 16 b elements = 32 b bytes into each row: +2 per
    // block (CuTe's DescriptorIterator adds the u128 offset of the block)
    let smem = tile(B128, K, 16, "(64,64)");
    let d0 = make_gmma_desc(&smem, 16, K).unwrap();
    for b in 0..4 {
        let d = make_gmma_desc_k(&smem, 16, K, b).unwrap();
        assert_eq!(d, d0.offset_by_bytes(32 * b).unwrap());
        assert_eq!(d.start_address(), 2 * b);
    }
    assert!(matches!(
        make_gmma_desc_k(&smem, 16, K, 4),
        Err(LayoutError::IndexOutOfRange { index: 4, size: 4 })
    ));
    // (64,128): the second atom along K starts 64 x 64 elements = 8192 bytes on: 512
    let wide = tile(B128, K, 16, "(64,128)");
    assert_eq!(
        make_gmma_desc_k(&wide, 16, K, 4).unwrap().start_address(),
        512
    );
    // INTERLEAVE K-major (64,64): block 1 is the third core-matrix column, 2 x 512 elements on
    let inter = tile(None, K, 16, "(64,64)");
    assert_eq!(
        make_gmma_desc_k(&inter, 16, K, 1).unwrap().start_address(),
        128
    );
    // MN-major SW128 (64,64): block b is 16 b columns of 64 elements: 128 b
    let mn = tile(B128, MN, 16, "(64,64)");
    for b in 0..4 {
        let d = make_gmma_desc_k(&mn, 16, MN, b).unwrap();
        assert_eq!((d.start_address(), d.stride_byte_offset()), (128 * b, 64));
    }
    // a slice's offset moves the start: rows 64.. of a (128,64) K-major SW128 tile
    let big = tile(B128, K, 16, "(128,64)");
    let off = ComposedLayout::with_offset(
        big.swizzle(),
        big.layout().get(0).unwrap().call(64),
        l("((8,8),(64,1)):((64,512),(1,0))"),
    )
    .unwrap();
    let d = make_gmma_desc(&off, 16, K).unwrap();
    assert_eq!(d.start_address(), 64 * 64 * 2 / 16);
    check_hardware_reads_the_layout(&off, 16, K);
    // offset_by_bytes refuses what the hardware cannot take
    assert!(d0.offset_by_bytes(8).is_err());
    assert!(d0.offset_by_bytes(16 << 14).is_err());
    assert_eq!(d0.offset_by_bytes(0x1000).unwrap().start_address(), 0x100);
}

#[test]
fn layouts_no_descriptor_describes_are_refused() {
    use GmmaMajor::{K, MN};
    let sw = |b, m, s| Swizzle::new(b, m, s).unwrap();
    let c = |s: Swizzle, lay: &str| ComposedLayout::new(s, l(lay)).unwrap();
    // padded rows (the SM80 kernels' trick): row 1 of the core matrix is 72 elements on, not 8
    let e = make_gmma_desc(&c(sw(0, 3, 3), "(64,64):(72,1)"), 16, K).unwrap_err();
    assert!(
        matches!(e, LayoutError::GmmaMismatch { m: 1, k: 0, .. }),
        "{e}"
    );
    // plain row-major 64x64 without swizzle: rows 64 elements apart, not 8
    assert!(make_gmma_desc(&c(sw(0, 3, 3), "(64,64):(64,1)"), 16, K).is_err());
    // 128-byte swizzle over 64-byte rows (an SW64 tile under the SW128 swizzle)
    let sw64 = tile(SwizzleMode::B64, K, 16, "(64,64)");
    let wrong = ComposedLayout::new(sw(3, 3, 3), *sw64.layout()).unwrap();
    assert!(matches!(
        make_gmma_desc(&wrong, 16, K),
        Err(LayoutError::GmmaMismatch { .. })
    ));
    // a K-major tile described as MN-major, and the other way round
    assert!(make_gmma_desc(&tile(SwizzleMode::B128, K, 16, "(64,64)"), 16, MN).is_err());
    assert!(make_gmma_desc(&tile(SwizzleMode::B128, MN, 16, "(64,16)"), 16, K).is_err());
    // the byte swizzle where elements are counted
    assert!(matches!(
        make_gmma_desc(&c(sw(3, 4, 3), "((8,8),(64,1)):((64,512),(1,0))"), 16, K),
        Err(LayoutError::UnsupportedSwizzle { .. })
    ));
    // shapes: K not a multiple of 16, MN not a multiple of 8, rank 3, 64-bit elements
    assert!(matches!(
        make_gmma_desc(&c(sw(0, 3, 3), "(8,8):(8,1)"), 16, K),
        Err(LayoutError::NotDivisible { value: 8, by: 16 })
    ));
    assert!(matches!(
        make_gmma_desc(&c(sw(0, 3, 3), "(4,16):(8,1)"), 16, K),
        Err(LayoutError::NotGmmaLayout { .. })
    ));
    assert!(matches!(
        make_gmma_desc(&c(sw(0, 3, 3), "(8,16,2):(8,1,128)"), 16, K),
        Err(LayoutError::RankMismatch { .. })
    ));
    assert!(matches!(
        make_gmma_desc(&c(sw(0, 1, 3), "(8,4):(4,1)"), 64, K),
        Err(LayoutError::NotGmmaLayout { .. })
    ));
    // a block past shared memory's 256 KiB
    assert!(matches!(
        make_gmma_desc(&c(sw(0, 3, 3), "(65536,16):(16,1)"), 16, K),
        Err(LayoutError::NotGmmaLayout { .. })
    ));
    // an offset of 8 bytes: not on a 16-byte boundary
    let odd =
        ComposedLayout::with_offset(sw(3, 3, 3), 4, l("((8,8),(64,1)):((64,512),(1,0))")).unwrap();
    assert!(matches!(
        make_gmma_desc(&odd, 16, K),
        Err(LayoutError::NotGmmaLayout { .. })
    ));
    // strides past the descriptor's 14 bits of 16 bytes (SBO of 256 KiB)
    let far = c(sw(3, 3, 3), "((8,8),(64,1)):((64,131072),(1,0))");
    assert!(matches!(
        make_gmma_desc(&far, 16, K),
        Err(LayoutError::NotGmmaLayout { .. })
    ));
}
