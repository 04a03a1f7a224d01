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
