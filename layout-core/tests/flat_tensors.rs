//! The kernels' tensors ([`FlatTensor`], [`CoordTensor`], [`TvCoords`]) against the general
//! Tensor API: the same tiles, the same thread partitions, value by value — and each tile covered
//! exactly once by the threads' values.

use layout_core::*;
use std::collections::HashSet;

/// Tiled copies of the shapes the kernels use, and their tilers (multiples of the copy's tile).
fn cases() -> Vec<(TiledCopy, [i64; 2])> {
    let mk = |thr: &str, val: &str, bits: i64| {
        make_tiled_copy_tv(
            &Layout::parse(thr).unwrap(),
            &Layout::parse(val).unwrap(),
            128,
            bits,
        )
        .unwrap()
    };
    vec![
        // RMSNorm bf16: 4 rows of 32 lanes, 8 values each
        (mk("(4,32):(32,1)", "(1,8)", 16), [4, 256]),
        (mk("(4,32):(32,1)", "(1,8)", 16), [4, 1024]),
        // a row of 256 threads, 4 f32 each, 4 tiles along the row (the copy kernel)
        (mk("(1,256):(256,1)", "(1,4)", 32), [1, 4096]),
        // column-major threads, values down columns
        (mk("(8,4):(1,8)", "(4,1)", 32), [32, 8]),
        (mk("(8,4):(1,8)", "(4,1)", 32), [64, 16]),
        // 16 x 8 threads of 2 x 4 values (two atoms of 64 bits per thread)
        (mk("(16,8):(8,1)", "(2,4)", 16), [32, 32]),
        // the transpose's TV layout given directly (a thread's values 8 rows / 32 columns apart)
        (transpose_copy(), [64, 64]),
        (transpose_copy(), [128, 64]),
    ]
}

/// The transpose's TV layout and its tile.
const TRANSPOSE_TV: &str = "((32,8),(2,8)):((64,1),(2048,8))";

fn transpose_copy() -> TiledCopy {
    let tile = IntTuple::from_ints(&[64, 64]).unwrap();
    make_tiled_copy_from_tv(&Layout::parse(TRANSPOSE_TV).unwrap(), &tile).unwrap()
}

/// `X` of shape `(m, n)` with row stride `ld >= n`, as a general and as a flat layout.
fn tensors(m: i64, n: i64, ld: i64) -> (Tensor<Counting>, FlatTensor<Counting, 2>) {
    let flat = FlatLayout::new([m, n], [ld, 1]).unwrap();
    let general = counting(flat.to_layout().unwrap());
    let engine = Counting {
        start: 0,
        codomain: None,
    };
    (general, FlatTensor::new(engine, flat))
}

#[test]
fn partitions_equal_the_general_tensor_api() {
    let mut checked = 0usize;
    for (copy, tile) in cases() {
        let plan = TvCoords::new(&copy, tile).unwrap();
        let tshape = IntTuple::from_ints(&tile).unwrap();
        for (m, n, ld) in [
            (tile[0], tile[1], tile[1]),
            (3 * tile[0] + 1, 2 * tile[1] + 3, 2 * tile[1] + 8),
        ] {
            let (gx, fx) = tensors(m, n, ld);
            let id = make_identity_tensor(&IntTuple::from_ints(&[m, n]).unwrap()).unwrap();
            let fid = make_coord_tensor([m, n]);
            let cod = *id.engine().codomain.as_ref().unwrap();
            let tiles = [(m + tile[0] - 1) / tile[0], (n + tile[1] - 1) / tile[1]];
            for c in [[0, 0], [tiles[0] - 1, tiles[1] - 1], [tiles[0] / 2, 0]] {
                let ct = IntTuple::from_ints(&c).unwrap();
                let g_tile = gx.local_tile(&tshape, &ct).unwrap();
                let f_tile = fx.local_tile(tile, c);
                let g_ctile = id.local_tile(&tshape, &ct).unwrap();
                let f_ctile = fid.local_tile(tile, c);
                let mut seen = HashSet::new();
                for t in 0..copy.threads() {
                    let thr = copy.get_slice(t).unwrap();
                    let g_part = thr.partition_S(&g_tile).unwrap();
                    let g_cpart = thr.partition_S(&g_ctile).unwrap();
                    let fthr = plan.get_slice(t);
                    let f_part = fthr.partition_S(&f_tile);
                    let f_cpart = fthr.partition_D(&f_ctile);
                    assert_eq!(g_part.layout().size(), plan.values());
                    for v in 0..plan.values() {
                        let want = g_part.value(v);
                        assert_eq!(f_part.at(v).start, want, "offset of t={t} v={v}");
                        let coord = cod.decode(g_cpart.value(v));
                        assert_eq!(f_cpart.coord(v), [coord[0], coord[1]], "t={t} v={v}");
                        let inside = coord[0] < m && coord[1] < n;
                        assert_eq!(f_cpart.elem_less(v), inside);
                        assert!(seen.insert(f_cpart.coord(v)), "coordinate twice");
                        checked += 1;
                    }
                }
                // the threads' values cover the tile exactly once
                assert_eq!(seen.len() as i64, tile[0] * tile[1]);
                assert_eq!(
                    f_ctile.covers(tile),
                    (c[0] + 1) * tile[0] <= m && (c[1] + 1) * tile[1] <= n
                );
            }
        }
    }
    assert!(checked > 10_000, "{checked} values checked");
}

#[test]
fn a_static_stride_is_checked() {
    let (_, fx) = tensors(4, 8, 8);
    assert!(fx.with_static_stride(1, 1).is_some());
    assert!(fx.with_static_stride(0, 1).is_none());
}

#[test]
fn tiles_that_do_not_fit_the_copy_are_refused() {
    let copy = make_tiled_copy_tv(
        &Layout::parse("(4,32):(32,1)").unwrap(),
        &Layout::parse("(1,8)").unwrap(),
        128,
        16,
    )
    .unwrap();
    // 4 x 256 is the copy's tile: a 6-row tile is not a multiple of it
    assert!(TvCoords::new(&copy, [6, 256]).is_err());
}

/// A tiled copy given by its TV layout moves value `v` of thread `t` to the tile element
/// `TV(t, v)` (column-major `m + M n`): the general partition and the plan say so, and a thread's
/// values of a tensor's tile are `composition(tile, TV)` at `(t, _)`.
#[test]
fn a_tiled_copy_from_its_tv_layout_follows_it() {
    let tv = Layout::parse(TRANSPOSE_TV).unwrap();
    let copy = transpose_copy();
    assert_eq!(copy.layout_tv, tv);
    assert_eq!(
        (copy.threads(), copy.values(), copy.atom_vals),
        (256, 16, 1)
    );
    let plan = TvCoords::new(&copy, [64, 64]).unwrap();
    // a padded tensor: 3 x 2 tiles, rows 200 apart
    let (gx, fx) = tensors(192, 128, 200);
    let tshape = IntTuple::from_ints(&[64, 64]).unwrap();
    let c = [1, 1];
    let g_tile = gx
        .local_tile(&tshape, &IntTuple::from_ints(&c).unwrap())
        .unwrap();
    let by_tv = composition(g_tile.layout(), &tv).unwrap();
    let id = make_identity_tensor(&tshape).unwrap();
    let cod = *id.engine().codomain.as_ref().unwrap();
    for t in 0..256 {
        let thr = copy.get_slice(t).unwrap();
        let g_part = thr.partition_S(&g_tile).unwrap();
        let g_cpart = thr.partition_S(&id).unwrap();
        let f_part = plan.get_slice(t).partition_S(&fx.local_tile([64, 64], c));
        for v in 0..16 {
            let x = tv.call(t + 256 * v);
            let want = [x % 64, x / 64];
            let coord = cod.decode(g_cpart.value(v));
            assert_eq!([coord[0], coord[1]], want, "t={t} v={v}");
            let p = plan.thread(t);
            let q = plan.value(v);
            assert_eq!([p[0] + q[0], p[1] + q[1]], want, "t={t} v={v}");
            let off = g_tile.value(0) + by_tv.call(t + 256 * v);
            assert_eq!(g_part.value(v), off, "t={t} v={v}");
            assert_eq!(f_part.at(v).start, off, "t={t} v={v}");
        }
    }
}

#[test]
fn a_tv_layout_that_is_not_a_bijection_onto_its_tile_is_refused() {
    let tile = IntTuple::from_ints(&[64, 64]).unwrap();
    let from = |tv: &str| make_tiled_copy_from_tv(&Layout::parse(tv).unwrap(), &tile);
    // values 4 rows apart: two (thread, value) pairs on one element, the image compact to 8
    assert_eq!(
        from("((32,8),(2,8)):((64,1),(2048,4))").unwrap_err(),
        LayoutError::NotBijective {
            size: 4096,
            reached: 8
        }
    );
    // half the tile
    assert!(matches!(
        from("((32,8),(2,4)):((64,1),(2048,8))"),
        Err(LayoutError::NotBijective { size: 4096, .. })
    ));
    // not (thread, value)
    assert!(matches!(
        from("(32,8,2,8):(64,1,2048,8)"),
        Err(LayoutError::RankMismatch { expected: 2, .. })
    ));
}

#[test]
fn at_is_the_element_at_a_coordinate() {
    let (gx, fx) = tensors(5, 7, 9);
    for i in 0..5 {
        for j in 0..7 {
            let g = gx.value_at(&IntTuple::from_ints(&[i, j]).unwrap()).unwrap();
            assert_eq!(fx.at([i, j]).start, g, "({i}, {j})");
        }
    }
}

#[test]
fn a_broadcast_repeats_the_vector_in_every_row() {
    let engine = Counting {
        start: 3,
        codomain: None,
    };
    let w = FlatTensor::new(engine, FlatLayout::new([10], [2]).unwrap());
    let b = w.broadcast_rows(4).unwrap();
    assert_eq!(b.shape(), [4, 10]);
    assert_eq!(b.layout().stride(), [0, 2]);
    for i in 0..4 {
        for j in 0..10 {
            assert_eq!(b.at([i, j]).start, w.at([j]).start);
        }
    }
    // tiled and partitioned like a (4, n) tensor: every row of a tile reads the same elements
    let t = b.local_tile([4, 8], [0, 1]);
    assert_eq!(t.at([3, 1]).start, w.at([9]).start);
    assert!(w.broadcast_rows(0).is_none());
    let huge = FlatTensor::new(engine, FlatLayout::new([i64::MAX / 2], [1]).unwrap());
    assert!(huge.broadcast_rows(4).is_none(), "4 n overflows");
    // one tile of it, without the whole broadcast: equal to the tile of the broadcast
    let (tile, whole) = (w.broadcast_tile([4, 8], 1), b.local_tile([4, 8], [0, 1]));
    assert_eq!((tile.shape(), tile.layout().stride()), ([4, 8], [0, 2]));
    for (i, j) in (0..4).flat_map(|i| (0..2).map(move |j| (i, j))) {
        assert_eq!(tile.at([i, j]).start, whole.at([i, j]).start);
    }
    assert_eq!(
        huge.broadcast_tile([4, 8], 3).at([3, 5]).start,
        huge.at([29]).start
    );
}

#[test]
fn vectors_along_a_mode_start_every_n_elements() {
    // (6, 12):(15, 1) at offset 5, with quads along the rows, pairs down the columns
    let x = FlatTensor::new(
        Counting {
            start: 5,
            codomain: None,
        },
        FlatLayout::new([6, 12], [15, 1]).unwrap(),
    );
    for (k, n) in [(1, 4), (1, 3), (0, 2), (1, 1), (0, 6)] {
        let v = x.vectors_along(k, n).unwrap();
        let mut shape = x.shape();
        shape[k] /= n;
        assert_eq!(v.shape(), shape, "mode {k}, n = {n}");
        for i in 0..shape[0] {
            for j in 0..shape[1] {
                let c = if k == 0 { [n * i, j] } else { [i, n * j] };
                assert_eq!(
                    v.at([i, j]).start,
                    x.at(c).start,
                    "mode {k}, n = {n}: ({i}, {j})"
                );
                // the vector's next element is one stride of mode k further
                let mut next = c;
                next[k] += n - 1;
                let d = x.layout().stride()[k];
                assert_eq!(x.at(next).start, v.at([i, j]).start + (n - 1) * d);
            }
        }
    }
    assert_eq!(
        x.pairs_along(1).unwrap().layout(),
        x.vectors_along(1, 2).unwrap().layout()
    );
    for (k, n) in [(1, 5), (0, 4), (1, 0), (0, -2)] {
        assert!(x.vectors_along(k, n).is_none(), "mode {k}, n = {n}");
    }
}
