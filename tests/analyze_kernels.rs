//! `tessel analyze` on the transpose kernel's own tiles, as the kernel defines them
//! (`tessel_gpu::transpose`): the padded and the swizzled shared tiles are conflict-free in both
//! steps, the plain one is 32-way when read down its columns; the global accesses are coalesced.

use layout_core::{ComposedLayout, Layout};
use tessel_calc::analyze::{analyze, Accesses, Memory, Space};
use tessel_gpu::transpose::{Padded, SmemTile, Swizzled, TV};

/// `select<1,0>(L)`: the tile read transposed, as step 1 reads it.
fn transposed(l: &Layout) -> Layout {
    Layout::concat(&[l.get(1).unwrap(), l.get(0).unwrap()]).unwrap()
}

fn worst(memory: Memory, bits: i64, space: Space) -> i64 {
    let a = Accesses {
        memory,
        tv: TV,
        bits,
        width: None,
    };
    analyze(&a, space).unwrap().worst()
}

#[test]
fn the_transpose_tiles() {
    for bits in [32, 16] {
        let (pad, sw) = if bits == 32 {
            (Padded::<f32>::LAYOUT, Swizzled::<f32>::SWIZZLED)
        } else {
            (Padded::<u16>::LAYOUT, Swizzled::<u16>::SWIZZLED)
        };
        let swt = ComposedLayout::new(sw.swizzle(), transposed(sw.layout())).unwrap();
        for (name, step0, step1) in [
            ("pad", Memory::Plain(pad), Memory::Plain(transposed(&pad))),
            ("swizzle", Memory::Swizzled(sw), Memory::Swizzled(swt)),
        ] {
            assert_eq!(
                worst(step0, bits, Space::Shared),
                1,
                "{name} {bits}-bit, step 0"
            );
            assert_eq!(
                worst(step1, bits, Space::Shared),
                1,
                "{name} {bits}-bit, step 1"
            );
        }
    }
    let plain = Layout::parse("(64,64):(64,1)").unwrap();
    assert_eq!(worst(Memory::Plain(plain), 32, Space::Shared), 1);
    assert_eq!(
        worst(Memory::Plain(transposed(&plain)), 32, Space::Shared),
        32
    );
    // 16-bit: a column's elements are 128 bytes apart, each in its own word of one bank
    assert_eq!(
        worst(Memory::Plain(transposed(&plain)), 16, Space::Shared),
        32
    );
    // global: a warp on 32 consecutive elements of a row, whole sectors
    assert_eq!(worst(Memory::Plain(plain), 32, Space::Global), 100);
}

/// The pair transpose's shared tile (`PAIR_SMEM`, pairs `(r % 2, r / 2, c)`), in units of pairs:
/// its step-0 row writes and its step-1 reads (lane `q` on rows `2q`, `2q + 1` of one pair column)
/// are conflict-free for 16-bit pairs (32-bit accesses) and 32-bit pairs (64-bit accesses).
#[test]
fn the_pair_transpose_tile() {
    use tessel_gpu::transpose::{PAIR_SMEM, PAIR_TV_IN};
    let [h, r2, c] = PAIR_SMEM.stride();
    // element strides halved: offsets in pairs; the pair tile's index is r + 64 c, r = (2, 32)
    let memory = Layout::parse(&format!("((2,32),32):(({},{}),{})", h / 2, r2 / 2, c / 2)).unwrap();
    // step 1: thread (tx, ty), value (h, k) reads pair (2 tx + h, ty + 8 k)
    let reads = Layout::parse("((32,8),(2,4)):((2,64),(1,512))").unwrap();
    for bits in [32, 64] {
        for (what, tv) in [("step 0 writes", PAIR_TV_IN), ("step 1 reads", reads)] {
            let a = Accesses {
                memory: Memory::Plain(memory),
                tv,
                bits,
                width: Some(bits),
            };
            let r = analyze(&a, Space::Shared).unwrap();
            assert_eq!(r.worst(), 1, "{what}, {bits}-bit pairs: {}", r.verdict());
        }
    }
}

/// The wide quad tile of the 16-bit transposes (`WIDE_SMEM` under `WIDE_SWIZZLE`), in units of
/// quads: quad `q` of row `r` at `32 r + (q ^ (r / 4 % 16))`, `Sw<4,0,7> o (128,32):(32,1)`. Its
/// step-0 row writes and its step-1 reads (lane `b` on rows `4b .. 4b + 4` of one quad column, for
/// each of a thread's four 4x4 blocks) are conflict-free for 64-bit quads.
#[test]
fn the_wide_quad_transpose_tile() {
    use layout_core::Swizzle;
    use tessel_gpu::transpose::{WIDE_SMEM, WIDE_SWIZZLE, WIDE_TV_IN};
    assert_eq!(WIDE_SMEM.stride(), [128, 1]);
    assert_eq!(WIDE_SWIZZLE, Swizzle::new(4, 2, 7).unwrap());
    let memory = ComposedLayout::new(
        Swizzle::new(4, 0, 7).unwrap(),
        Layout::parse("(128,32):(32,1)").unwrap(),
    )
    .unwrap();
    // step 1: thread (b, a), value (i, j) reads quad (4b + i, a + 8j)
    let reads = Layout::parse("((32,8),(4,4)):((4,128),(1,1024))").unwrap();
    for (what, tv) in [("step 0 writes", WIDE_TV_IN), ("step 1 reads", reads)] {
        let a = Accesses {
            memory: Memory::Swizzled(memory),
            tv,
            bits: 64,
            width: Some(64),
        };
        let r = analyze(&a, Space::Shared).unwrap();
        assert_eq!(r.worst(), 1, "{what}: {}", r.verdict());
    }
}

/// The quad transpose's shared tile (`QUAD_SMEM` under `QUAD_SWIZZLE`), in units of quads: quad
/// `q` of row `r` at `16 r + (q ^ (r / 4 % 16))`, `Sw<4,0,6> o (64,16):(16,1)`. Its step-0 row
/// writes and its step-1 reads (lane `b` on rows `4b .. 4b + 4` of one quad column) are
/// conflict-free for 16-bit quads (64-bit accesses) and 32-bit quads (128-bit accesses).
#[test]
fn the_quad_transpose_tile() {
    use layout_core::Swizzle;
    use tessel_gpu::transpose::{QUAD_SMEM, QUAD_SWIZZLE, QUAD_TV_IN};
    // the element tile and its swizzle, in quads: offsets and the swizzle's bits divided by 4
    assert_eq!(QUAD_SMEM.stride(), [64, 1]);
    assert_eq!(QUAD_SWIZZLE, Swizzle::new(4, 2, 6).unwrap());
    let memory = ComposedLayout::new(
        Swizzle::new(4, 0, 6).unwrap(),
        Layout::parse("(64,16):(16,1)").unwrap(),
    )
    .unwrap();
    // step 1: thread (b, a), value i reads quad (4b + i, a)
    let reads = Layout::parse("((16,16),4):((4,64),1)").unwrap();
    for bits in [64, 128] {
        for (what, tv) in [("step 0 writes", QUAD_TV_IN), ("step 1 reads", reads)] {
            let a = Accesses {
                memory: Memory::Swizzled(memory),
                tv,
                bits,
                width: Some(bits),
            };
            let r = analyze(&a, Space::Shared).unwrap();
            assert_eq!(r.worst(), 1, "{what}, {bits}-bit quads: {}", r.verdict());
        }
    }
}
