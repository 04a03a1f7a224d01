//! The kernels' partitioning, run on the CPU for every block and thread (no GPU needed): the
//! threads' writes cover the output exactly once and give the definition's result, at random
//! sizes and grids; and the layouts the kernels are built from have the properties the kernels
//! rely on.

use half::{bf16, f16};
use host::checks::exec;
use host::elem::{Elem, Paired, Quads, Rng, TransposeTile};
use layout_core::{coalesce, left_inverse, FlatLayout, Layout};
use proptest::prelude::*;
// the seeded runner of the layout-core tests (one file, used by both crates)
#[path = "../../layout-core/tests/common/mod.rs"]
mod common;
use common::check;
use tessel_gpu::copy::{VecCopy, THREADS as COPY_THREADS};
use tessel_gpu::rmsnorm::WARPS;
use tessel_gpu::transpose::{
    Padded, SmemTile, Swizzled, TransposePairsLed, PAIR_IN, PLAN, THREADS, TILE, TV, VALUES,
};

fn copy_ok<T: Elem>(n: usize, grid: i64, seed: u64) -> Result<(), TestCaseError> {
    let src: Vec<T> = Rng::new(seed).fill(n);
    let run = exec::copy(&src, grid, T::poison());
    prop_assert_eq!(run.coverage_error(), None, "n={} grid={}", n, grid);
    prop_assert!(run.out.iter().zip(&src).all(|(a, b)| a.bits() == b.bits()));
    Ok(())
}

fn transpose_ok<T: Elem, S: TransposeTile<T>>(
    rows: usize,
    cols: usize,
    seed: u64,
) -> Result<(), TestCaseError> {
    let src: Vec<T> = Rng::new(seed).fill(rows * cols);
    let run = exec::transpose::<T, S>(&src, rows as i64, cols as i64, T::poison());
    prop_assert_eq!(run.coverage_error(), None, "{}x{}", rows, cols);
    for i in 0..rows {
        for j in 0..cols {
            prop_assert_eq!(
                run.out[j * rows + i].bits(),
                src[i * cols + j].bits(),
                "({}, {})",
                i,
                j
            );
        }
    }
    Ok(())
}

// Every case of these tests is checked (the sizes are all admissible): the minimum share is 1.

#[test]
fn copy_covers_every_element_once() {
    let strategy = (1usize..40_000, 1i64..12, any::<u64>());
    check(
        "copy_covers_every_element_once",
        200,
        1.0,
        &[],
        strategy,
        |(n, grid, seed), t| {
            copy_ok::<f32>(n, grid, seed)?;
            copy_ok::<f16>(n, grid, seed)?;
            copy_ok::<bf16>(n, grid, seed)?;
            t.hit();
            Ok(())
        },
    );
}

#[test]
fn transpose_covers_every_element_once() {
    // (rows, cols, seed) = (1, 2, 0) failed once (exec.proptest-regressions)
    let fixed = [(1, 2, 0)];
    let strategy = (1usize..200, 1usize..200, any::<u64>());
    check(
        "transpose_covers_every_element_once",
        200,
        1.0,
        &fixed,
        strategy,
        |(rows, cols, seed), t| {
            transpose_ok::<f32, Padded<f32>>(rows, cols, seed)?;
            transpose_ok::<f32, Swizzled<f32>>(rows, cols, seed)?;
            transpose_ok::<f16, Padded<f16>>(rows, cols, seed)?;
            transpose_ok::<bf16, Swizzled<bf16>>(rows, cols, seed)?;
            transpose_ok::<f16, Paired<f16>>(rows, cols, seed)?;
            transpose_ok::<f32, Paired<f32>>(rows, cols, seed)?;
            transpose_ok::<bf16, Quads<bf16>>(rows, cols, seed)?;
            transpose_ok::<f32, Quads<f32>>(rows, cols, seed)?;
            t.hit();
            Ok(())
        },
    );
}

#[test]
fn copy_at_tile_edges() {
    let tile = VecCopy::<f32>::TILE as usize;
    for n in [1, 3, 4, 5, tile - 1, tile, tile + 1, 3 * tile + 7] {
        for grid in [1, 2, 5] {
            copy_ok::<f32>(n, grid, n as u64).unwrap();
        }
    }
    let tile16 = VecCopy::<f16>::TILE as usize;
    for n in [7, 8, 9, tile16 - 1, tile16 + 1] {
        copy_ok::<f16>(n, 3, n as u64).unwrap();
    }
}

#[test]
fn transpose_at_tile_edges() {
    for (r, c) in [(1, 1), (64, 64), (65, 63), (128, 1), (1, 129), (200, 64)] {
        transpose_ok::<f32, Swizzled<f32>>(r, c, 7).unwrap();
        transpose_ok::<bf16, Padded<bf16>>(r, c, 7).unwrap();
        transpose_ok::<bf16, Paired<bf16>>(r, c, 7).unwrap();
        transpose_ok::<bf16, Quads<bf16>>(r, c, 7).unwrap();
    }
    // whole tiles as quads, beside tiles that are not (a ragged edge, rows of 2 mod 4): 64x64
    // tiles of f32, 128x128 ones of 16-bit elements (parts of whose edge tiles lie wholly outside)
    for (r, c) in [(128, 64), (64, 192), (130, 68), (68, 130)] {
        transpose_ok::<f32, Quads<f32>>(r, c, 8).unwrap();
    }
    for (r, c) in [(256, 128), (128, 384), (260, 132), (132, 260), (200, 130)] {
        transpose_ok::<f16, Quads<f16>>(r, c, 8).unwrap();
    }
    // the led pairs (odd rows: led), blocks inside the output and at its edges
    for (r, c) in [(257, 260), (301, 520), (519, 300), (385, 129)] {
        transpose_ok::<bf16, Paired<bf16>>(r, c, 9).unwrap();
        transpose_ok::<f32, Paired<f32>>(r, c, 9).unwrap();
    }
}

/// `L` maps `0..size(L)` one-to-one onto `0..n`.
fn is_bijection(l: &Layout, n: i64) -> bool {
    let mut seen = vec![false; n as usize];
    l.size() == n
        && (0..l.size()).all(|x| {
            let y = l.call(x);
            (0..n).contains(&y) && !std::mem::replace(&mut seen[y as usize], true)
        })
}

#[test]
fn copy_tv_is_a_bijection_with_contiguous_vectors() {
    for (copy, vec) in [(VecCopy::<f32>::COPY, 4), (VecCopy::<f16>::COPY, 8)] {
        let tv = copy.layout_tv;
        assert!(is_bijection(&tv, tv.size()), "{tv}");
        // mode 1 (a thread's values) is one contiguous 128-bit vector
        assert_eq!(coalesce(&tv.get(1).unwrap()), Layout::int(vec, 1));
        assert_eq!(tv.get(0).unwrap().size(), COPY_THREADS);
    }
}

/// The plan the kernel partitions its tiles with puts value `v` of thread `t` at the tile
/// coordinate that `TV` gives (column-major `i + 64 j`).
#[test]
fn transpose_plan_follows_its_tv_layout() {
    assert_eq!(TV.size(), THREADS * VALUES);
    assert_eq!((PLAN.threads(), PLAN.values()), (THREADS, VALUES));
    assert!(is_bijection(&TV, TILE * TILE));
    for t in 0..THREADS {
        for v in 0..VALUES {
            let x = TV.call(t + THREADS * v);
            let ([i0, j0], [i, j]) = (PLAN.thread(t), PLAN.value(v));
            assert_eq!([i0 + i, j0 + j], [x % TILE, x / TILE], "t = {t}, v = {v}");
        }
    }
    // the left inverse takes a tile element back to its (thread, value)
    let inv = left_inverse(&TV).unwrap();
    for x in 0..TV.size() {
        assert_eq!(inv.call(TV.call(x)), x);
    }
}

/// A transpose of a `rows x cols` input with row stride `ld_in` into an output with row stride
/// `ld_out`: every output element written exactly once and equal to the definition, the padding
/// never written.
fn transpose_strided_ok<T: Elem, S: TransposeTile<T>>(
    rows: usize,
    cols: usize,
    ld_in: usize,
    ld_out: usize,
    seed: u64,
) {
    let src: Vec<T> = Rng::new(seed).fill(rows * ld_in);
    let lin = FlatLayout::new([rows as i64, cols as i64], [ld_in as i64, 1]).unwrap();
    let lout = FlatLayout::new([cols as i64, rows as i64], [ld_out as i64, 1]).unwrap();
    let run = exec::transpose_layouts::<T, S>(&src, lin, lout, T::poison()).unwrap();
    let what = format!("{rows}x{cols} rows {ld_in} apart in, {ld_out} out");
    for (k, &w) in run.writes.iter().enumerate() {
        let (j, i) = (k / ld_out, k % ld_out);
        if i < rows {
            assert_eq!(w, 1, "{what}: ({j}, {i}) written {w} times");
            assert_eq!(
                run.out[k].bits(),
                src[i * ld_in + j].bits(),
                "{what}: ({j}, {i})"
            );
        } else {
            assert_eq!(w, 0, "{what}: padding at {k} written");
        }
    }
}

/// `S`'s two kernels with the choice between them forced (`LED`): each is correct for any
/// strides, whichever the host would pick.
struct Forced<S, const LED: bool>(std::marker::PhantomData<S>);
impl<T: Elem, S: TransposeTile<T>, const LED: bool> TransposeTile<T> for Forced<S, LED> {
    const TILE: &'static str = S::TILE;
    type Kernel = S::Kernel;
    type Led = S::Led;
    fn led(_: i64, _: i64) -> bool {
        LED
    }
}

/// The host launches the led kernel where the output's rows are not whole sectors, and its grid
/// (`LEAD` rows more) fits the device's 65535 blocks along y.
#[test]
fn the_led_kernel_runs_where_rows_are_not_whole_sectors() {
    let pad = <Padded<f32> as TransposeTile<f32>>::led;
    // f32: a sector is 8 elements
    assert!(!pad(8192, 8192) && !pad(8, 3));
    assert!(pad(8191, 8191) && pad(8193, 8) && pad(12, 5));
    // 16-bit: 16 elements
    let swz = <Swizzled<bf16> as TransposeTile<bf16>>::led;
    assert!(!swz(16, 5) && swz(8, 5));
    // the grid: ceil((rows + 8) / 64) <= 65535
    assert!(pad(4_194_231, 4_194_231) && !pad(4_194_239, 4_194_239));
    // the pairs' led kernel writes pairs; the quads have none
    assert!(<Paired<f16> as TransposeTile<f16>>::led(8191, 8191));
    assert!(!<Paired<f16> as TransposeTile<f16>>::led(8192, 8191));
    assert!(!<Quads<f32> as TransposeTile<f32>>::led(8191, 8191));
}

#[test]
fn transpose_takes_any_row_stride() {
    for (r, c, ld_in, ld_out) in [
        (1, 1, 3, 1),
        (64, 64, 100, 64),
        (65, 63, 70, 65),
        (130, 70, 71, 131),
        (3, 200, 256, 5),
        (128, 130, 132, 136),
        (300, 290, 293, 301),
    ] {
        transpose_strided_ok::<f32, Padded<f32>>(r, c, ld_in, ld_out, 11);
        transpose_strided_ok::<f32, Swizzled<f32>>(r, c, ld_in, ld_out, 12);
        transpose_strided_ok::<bf16, Swizzled<bf16>>(r, c, ld_in, ld_out, 13);
        transpose_strided_ok::<f16, Padded<f16>>(r, c, ld_in, ld_out, 14);
        // odd row strides: the pair transpose's whole tiles move element by element
        transpose_strided_ok::<f16, Paired<f16>>(r, c, ld_in, ld_out, 15);
        transpose_strided_ok::<f32, Paired<f32>>(r, c, ld_in, ld_out, 16);
        // strides of 4k: the quads' whole tiles as quads; others element by element
        transpose_strided_ok::<bf16, Quads<bf16>>(r, c, ld_in, ld_out, 20);
        transpose_strided_ok::<f32, Quads<f32>>(r, c, ld_in, ld_out, 21);
        // both kernels of a tile at every stride: the led one where the output rows are whole
        // sectors too, the other where they are not
        transpose_strided_ok::<f32, Forced<Padded<f32>, true>>(r, c, ld_in, ld_out, 17);
        transpose_strided_ok::<f32, Forced<Padded<f32>, false>>(r, c, ld_in, ld_out, 18);
        transpose_strided_ok::<bf16, Forced<Swizzled<bf16>, true>>(r, c, ld_in, ld_out, 19);
        transpose_strided_ok::<bf16, Forced<Swizzled<bf16>, false>>(r, c, ld_in, ld_out, 20);
        transpose_strided_ok::<f16, Forced<Paired<f16>, true>>(r, c, ld_in, ld_out, 22);
        transpose_strided_ok::<f32, Forced<Paired<f32>, true>>(r, c, ld_in, ld_out, 23);
    }
}

/// What the kernel needs of its layouts is checked before it runs: unit strides along the rows,
/// the output's shape the input's transposed.
#[test]
fn transpose_refuses_what_it_cannot_run() {
    let src = vec![1.0f32; 4 * 8];
    let l = |s: [i64; 2], d: [i64; 2]| FlatLayout::new(s, d).unwrap();
    let run = |lin, lout| exec::transpose_layouts::<f32, Padded<f32>>(&src, lin, lout, 0.0);
    // a column-major input: its rows are not contiguous
    let e = run(l([4, 8], [1, 4]), l([8, 4], [4, 1])).unwrap_err();
    assert!(e.contains("unit strides"), "{e}");
    // a column-major output
    let e = run(l([4, 8], [8, 1]), l([8, 4], [1, 8])).unwrap_err();
    assert!(e.contains("unit strides"), "{e}");
    // an output of the input's shape
    let e = run(l([4, 8], [8, 1]), l([4, 8], [8, 1])).unwrap_err();
    assert!(e.contains("shape (cols, rows)"), "{e}");
    assert!(run(l([4, 8], [8, 1]), l([8, 4], [4, 1])).is_ok());
}

/// The distinct 32-bit words `offs` touch (elements of `size` bytes), and the banks they lie in.
fn words_and_banks(offs: impl Iterator<Item = i64>, size: i64) -> (usize, usize) {
    let mut words: Vec<i64> = offs.map(|o| o * size / 4).collect();
    words.sort();
    words.dedup();
    let mut banks: Vec<i64> = words.iter().map(|w| w % 32).collect();
    banks.sort();
    banks.dedup();
    (words.len(), banks.len())
}

/// A shared tile is injective and inside `ELEMS`, and the 32 accesses of a warp — down a column
/// (phase 2) or along a row (phase 1) — touch words in as many banks as words: no conflicts.
fn smem_conflict_free<T: Copy, S: SmemTile<T>>() {
    let size = std::mem::size_of::<T>() as i64;
    let mut seen = vec![false; S::ELEMS as usize];
    for i in 0..TILE {
        for j in 0..TILE {
            let o = S::offset(i, j);
            assert!((0..S::ELEMS).contains(&o), "{} ({i},{j}) -> {o}", S::NAME);
            assert!(
                !std::mem::replace(&mut seen[o as usize], true),
                "{} not injective",
                S::NAME
            );
        }
    }
    for a in 0..TILE {
        for b0 in (0..TILE).step_by(32) {
            let (w, b) = words_and_banks((0..32).map(|k| S::offset(b0 + k, a)), size);
            assert_eq!(w, b, "{} column {a}: {w} words in {b} banks", S::NAME);
            let (w, b) = words_and_banks((0..32).map(|k| S::offset(a, b0 + k)), size);
            assert_eq!(w, b, "{} row {a}: {w} words in {b} banks", S::NAME);
        }
    }
}

#[test]
fn shared_tiles_are_injective_and_conflict_free() {
    smem_conflict_free::<f32, Padded<f32>>();
    smem_conflict_free::<f32, Swizzled<f32>>();
    smem_conflict_free::<f16, Padded<f16>>();
    smem_conflict_free::<f16, Swizzled<f16>>();
}

/// The led pair transpose's reads of 16-bit elements (its led tile, read as the output tile): a
/// warp reads one column `a` of the tile's rows `r0 + 2 tx + h` (lanes `tx`, element `h` of their
/// pair), from whatever row `r0` the window's shift gives. Where `src`'s rows are an odd number
/// of elements apart (the ragged inputs), the tile's are too, and those reads fall in as many
/// banks as words; an even row stride gives 2-way conflicts. Its step-0 pair writes, a warp along
/// a row from either base, likewise in as many banks as words.
#[test]
fn the_led_pairs_read_without_conflicts() {
    let lead = 16; // the 16-bit led tile's rows above the tile: a sector's worth
                   // a warp's lanes are 32 consecutive pairs of one output row
    for v in [0, 1] {
        let c: Vec<[i64; 2]> = (0..32).map(|t| PAIR_IN.get_slice(t).coord(v)).collect();
        assert!(c
            .iter()
            .enumerate()
            .all(|(t, &[r, q])| r == c[0][0] && q == c[0][1] + t as i64));
    }
    let reads = |ld: i64, base: i64| {
        let s = TransposePairsLed::<u16>::row_stride(ld);
        // tile column `1 + a` holds the block's column `a`
        let off = move |a: i64, r: i64| base + r * s + 1 + a;
        (0..TILE)
            .flat_map(|a| (0..=lead).flat_map(move |r0| (0..2).map(move |h| (a, r0, h))))
            .map(|(a, r0, h)| words_and_banks((0..32).map(|tx| off(a, r0 + 2 * tx + h)), 2))
            .collect::<Vec<_>>()
    };
    for base in [0, 1] {
        assert!(reads(8193, base).iter().all(|&(w, b)| w == b));
        assert!(reads(8192, base).iter().all(|&(w, b)| w == 2 * b));
    }
    let rows = TILE + lead;
    for (a0, ld) in [0, 1]
        .into_iter()
        .flat_map(|a0| [8191, 8192, 8193].map(|ld| (a0, ld)))
    {
        // the tile from element `1 - a_0`; row r's pairs from `a_r` elements below its column 0
        let s = TransposePairsLed::<u16>::row_stride(ld);
        let a = |r: i64| (a0 + r * ld) % 2;
        let start = |r: i64| 1 - a0 + r * s + 1 - a(r);
        for r in 0..rows {
            assert_eq!(
                start(r) % 2,
                0,
                "ld {ld}, a_0 {a0}: row {r}'s pairs off a pair boundary"
            );
            let (w, b) = words_and_banks((0..32).map(|q| start(r) + 2 * q), 2);
            assert_eq!(
                (w, b),
                (32, 32),
                "ld {ld}: row {r}'s pair writes in {b} banks"
            );
        }
        // pair 32 of the rows that need it, row t by thread t, a warp at a time
        for warp in 0..rows / 32 + 1 {
            let last = (32 * warp..(32 * warp + 32).min(rows)).filter(|&t| a(t) == 1);
            let (w, b) = words_and_banks(last.map(|t| start(t) + 64), 2);
            assert_eq!(
                w, b,
                "ld {ld}, a_0 {a0}: pair 32 of warp {warp} in {b} banks"
            );
        }
    }
}

/// RMSNorm's host execution at random shapes, warps per row and staging depths: every output
/// element written exactly once, within the tolerance of the f64 reference.
#[test]
fn rmsnorm_covers_every_element_once() {
    let strategy = (
        1usize..20,
        1usize..200,
        (0usize..WARPS.len(), 0i64..6),
        any::<u64>(),
    );
    check(
        "rmsnorm_covers_every_element_once",
        60,
        1.0,
        &[],
        strategy,
        |(m, n8, (wi, staged), seed), t| {
            use host::jobs::{rel_error, rmsnorm_reference, rmsnorm_tolerance};
            let n = 8 * n8;
            let cfg = (WARPS[wi], staged);
            let mut rng = Rng::new(seed);
            let (x, w): (Vec<bf16>, Vec<bf16>) = (rng.fill(m * n), rng.fill(n));
            let run = exec::rmsnorm(&x, &w, m as i64, n as i64, 1e-6, cfg, bf16::poison());
            prop_assert_eq!(run.coverage_error(), None, "{}x{} {:?}", m, n, cfg);
            let err = rel_error(&run.out, &rmsnorm_reference(&x, &w, n, 1e-6));
            prop_assert!(err <= rmsnorm_tolerance::<bf16>(), "error {}", err);
            let (x, w): (Vec<f32>, Vec<f32>) = (rng.fill(m * n), rng.fill(n));
            let run = exec::rmsnorm(&x, &w, m as i64, n as i64, 1e-6, cfg, f32::poison());
            prop_assert_eq!(run.coverage_error(), None);
            prop_assert!(rel_error(&run.out, &rmsnorm_reference(&x, &w, n, 1e-6)) <= 1e-5);
            t.hit();
            Ok(())
        },
    );
}

/// RMSNorm with 8 and 16 warps per row over rows longer than the staged tiles: the next
/// `HELD` tiles held in registers across the steps (f32 with 16 warps), any further ones read
/// twice, the last tile ragged or whole. Every output element written exactly once, within the tolerance of the f64
/// reference.
#[test]
fn rmsnorm_holds_tiles_past_the_staged_ones() {
    use host::jobs::{rel_error, rmsnorm_reference, rmsnorm_tolerance};
    use tessel_gpu::real::Real as RmsElem;
    use tessel_gpu::rmsnorm::RmsNorm;
    fn tile_n<T: RmsElem>(w: i64) -> i64 {
        match w {
            8 => RmsNorm::<T, 8>::CUT.tiler[1],
            _ => RmsNorm::<T, 16>::CUT.tiler[1],
        }
    }
    fn held<T: RmsElem>(w: i64) -> i64 {
        match w {
            8 => RmsNorm::<T, 8>::HELD as i64,
            _ => RmsNorm::<T, 16>::HELD as i64,
        }
    }
    let strategy = (
        1usize..4,
        (prop::sample::select(vec![8i64, 16]), 0i64..4, 0i64..3),
        0i64..2,
        any::<u64>(),
    );
    check(
        "rmsnorm_holds_tiles_past_the_staged_ones",
        12,
        1.0,
        &[],
        strategy,
        |(m, (w, staged, more), ragged, seed), t| {
            let mut rng = Rng::new(seed);
            // f32: `staged + HELD + 1 + more` tiles (one at least read twice), the last short of 8
            // elements when ragged
            let tiles = staged + held::<f32>(w) + 1 + more;
            let n = tiles * tile_n::<f32>(w) - 8 * ragged;
            let (x, y): (Vec<f32>, Vec<f32>) = (rng.fill(m * n as usize), rng.fill(n as usize));
            let run = exec::rmsnorm(&x, &y, m as i64, n, 1e-6, (w, staged), f32::poison());
            prop_assert_eq!(
                run.coverage_error(),
                None,
                "f32 {}x{} w{} staged {}",
                m,
                n,
                w,
                staged
            );
            prop_assert!(rel_error(&run.out, &rmsnorm_reference(&x, &y, n as usize, 1e-6)) <= 1e-5);
            let tiles = staged + held::<bf16>(w) + 1 + more;
            let n = tiles * tile_n::<bf16>(w) - 8 * ragged;
            let (x, y): (Vec<bf16>, Vec<bf16>) = (rng.fill(m * n as usize), rng.fill(n as usize));
            let run = exec::rmsnorm(&x, &y, m as i64, n, 1e-6, (w, staged), bf16::poison());
            prop_assert_eq!(
                run.coverage_error(),
                None,
                "bf16 {}x{} w{} staged {}",
                m,
                n,
                w,
                staged
            );
            let err = rel_error(&run.out, &rmsnorm_reference(&x, &y, n as usize, 1e-6));
            prop_assert!(err <= rmsnorm_tolerance::<bf16>(), "error {}", err);
            t.hit();
            Ok(())
        },
    );
}

/// The RMSNorm kernel's partition is the tensor API's: thread `t`'s values of
/// `partition_S(local_tile(make_coord_tensor((M,N)), (R, 32WV), (b, k)))` through the kernel's
/// `PLAN` are those of the general `partition_S(get_slice(t), local_tile(make_identity_tensor((M,N)),
/// ...))` with the copy of `(ROWS, 32W)` threads of `(1, V)` values, and they are one atom: `V` consecutive columns of one row.
#[test]
fn rmsnorm_coordinates_are_the_identity_tensors() {
    use layout_core::{make_coord_tensor, make_identity_tensor, IntTuple};
    use tessel_gpu::real::Real as RmsElem;
    use tessel_gpu::rmsnorm::RmsNorm;
    fn check<T: RmsElem, const W: i64>(m: i64, n: i64) {
        type K<T, const W: i64> = RmsNorm<T, W>;
        let id = make_identity_tensor(&IntTuple::from_ints(&[m, n]).unwrap()).unwrap();
        let cod = id.engine().codomain.unwrap();
        let fid = make_coord_tensor([m, n]);
        let cut = K::<T, W>::CUT;
        let (tiler, plan, rows) = (cut.tiler, cut.plan, cut.rows);
        let copy = layout_core::make_tiled_copy_row_major([rows, 32 * W], [1, cut.v], 128, T::BITS)
            .unwrap();
        assert_eq!(plan.values(), cut.v);
        assert_eq!(copy.threads(), cut.threads);
        for b in 0..(m + rows - 1) / rows {
            for k in 0..K::<T, W>::tiles(n) {
                let tile = id
                    .local_tile(
                        &IntTuple::from_ints(&tiler).unwrap(),
                        &IntTuple::from_ints(&[b, k]).unwrap(),
                    )
                    .unwrap();
                let ftile = fid.local_tile(tiler, [b, k]);
                for t in 0..copy.threads() {
                    let part = copy.get_slice(t).unwrap().partition_S(&tile).unwrap();
                    let fpart = plan.get_slice(t).partition_S(&ftile);
                    let c0 = fpart.coord(0);
                    for v in 0..part.layout().size() {
                        let c = cod.decode(part.value(v));
                        assert_eq!(fpart.coord(v), [c[0], c[1]], "b={b} k={k} t={t} v={v}");
                        assert_eq!(fpart.coord(v), [c0[0], c0[1] + v]);
                        assert_eq!(fpart.elem_less(v), fpart.elem_less(0));
                    }
                }
            }
        }
    }
    check::<half::bf16, 1>(14, 1024);
    check::<f32, 1>(9, 520);
    check::<half::bf16, 2>(5, 1032);
    check::<f32, 4>(3, 1028);
    check::<half::bf16, 16>(2, 4104);
}

/// `axpby` over every layout of `jobs::run_axpby` (row-major, padded, padded with unaligned rows,
/// column-major, a block of a larger matrix) at ragged and whole-tile sizes: each element of `y`
/// written once, nothing else, equal to the definition.
#[test]
fn axpby_host_execution_over_any_layout() {
    let mut rng = host::elem::Rng::new(7);
    for (m, n) in [(1, 1), (16, 256), (17, 300), (33, 513), (64, 64)] {
        for v in host::jobs::run_axpby::<f32>(None, m, n, &mut rng)
            .unwrap()
            .into_iter()
            .chain(host::jobs::run_axpby::<half::bf16>(None, m, n, &mut rng).unwrap())
        {
            assert!(v.ok, "{}", v.line);
        }
    }
}

/// The kernel refuses operands of different shapes (the launcher and the device check alike).
#[test]
fn axpby_refuses_different_shapes() {
    let l = |s, d| layout_core::FlatLayout::new(s, d).unwrap();
    let (x, y) = (vec![0f32; 64], vec![0f32; 64]);
    let e = host::checks::exec::axpby(
        (&x, 0, &l([8, 8], [8, 1])),
        (&y, 0, &l([8, 4], [8, 1])),
        1.0,
        1.0,
    );
    assert_eq!(
        e.err().as_deref(),
        Some("axpby needs x and y of the same shape")
    );
}
/// `M x N` with row stride `ld`: the layout and a buffer of its cosize, padding elements `pad`.
fn padded<T: Elem>(
    rng: &mut Rng,
    m: usize,
    n: usize,
    ld: usize,
    pad: T,
) -> (Vec<T>, FlatLayout<2>) {
    let l = FlatLayout::new([m as i64, n as i64], [ld as i64, 1]).unwrap();
    let mut buf = vec![pad; (m - 1) * ld + n];
    for i in 0..m {
        buf[i * ld..i * ld + n].copy_from_slice(&rng.fill::<T>(n));
    }
    (buf, l)
}

/// RMSNorm of padded rows (`x` and `y` with row strides above `N`, and different): the output is
/// the unpadded run's bit for bit, each element of `y` written once, the padding never.
fn rmsnorm_padded_ok<T: Elem + tessel_gpu::real::Real>(
    m: usize,
    n: usize,
    pads: (usize, usize),
    cfg: (i64, i64),
    seed: u64,
) -> Result<(), TestCaseError> {
    let mut rng = Rng::new(seed);
    let (ldx, ldy) = (n + pads.0, n + pads.1);
    let (x, lx) = padded::<T>(&mut rng, m, n, ldx, T::poison());
    let w: Vec<T> = rng.fill(n);
    let ly = FlatLayout::new([m as i64, n as i64], [ldy as i64, 1]).unwrap();
    let lw = FlatLayout::new([n as i64], [1]).unwrap();
    let run = exec::rmsnorm_strided(&x, lx, &w, lw, ly, 1e-6, cfg, T::poison()).unwrap();
    let dense: Vec<T> = (0..m)
        .flat_map(|i| x[i * ldx..i * ldx + n].to_vec())
        .collect();
    let want = exec::rmsnorm(&dense, &w, m as i64, n as i64, 1e-6, cfg, T::poison());
    prop_assert_eq!(want.coverage_error(), None);
    for (k, (v, &c)) in run.out.iter().zip(&run.writes).enumerate() {
        let (i, j) = (k / ldy, k % ldy);
        if j < n {
            prop_assert_eq!(c, 1, "y({}, {}) written {} times", i, j, c);
            prop_assert_eq!(v.bits(), want.out[i * n + j].bits(), "y({}, {})", i, j);
        } else {
            prop_assert_eq!(c, 0, "padding {} written", k);
            prop_assert_eq!(v.bits(), T::poison().bits());
        }
    }
    Ok(())
}

#[test]
fn rmsnorm_of_padded_rows() {
    // (m, n / 8, x's padding / 8, y's padding / 8, (warps, staged), seed)
    let strategy = (
        1usize..12,
        1usize..100,
        1usize..20,
        0usize..20,
        (0usize..WARPS.len(), 0i64..5),
        any::<u64>(),
    );
    check(
        "rmsnorm_of_padded_rows",
        40,
        1.0,
        &[],
        strategy,
        |(m, n8, px, py, (wi, staged), seed), t| {
            let cfg = (WARPS[wi], staged);
            rmsnorm_padded_ok::<bf16>(m, 8 * n8, (8 * px, 8 * py), cfg, seed)?;
            // f32 atoms are 4 wide: N and the paddings multiples of 4 only
            rmsnorm_padded_ok::<f32>(m, 8 * n8 - 4, (4 * px, 4 * py), cfg, seed)?;
            t.hit();
            Ok(())
        },
    );
}

/// What the RMSNorm kernel refuses, each with the condition it names.
#[test]
fn rmsnorm_refuses_what_it_cannot_do() {
    let l2 = |s: [i64; 2], d: [i64; 2]| FlatLayout::new(s, d).unwrap();
    let l1 = |n: i64, d: i64| FlatLayout::new([n], [d]).unwrap();
    let buf = vec![bf16::from_f32(1.0); 4096];
    let refuse_warps = |lx, lw, ly, cfg: (i64, i64), want: &str| {
        let why = exec::rmsnorm_strided(&buf, lx, &buf, lw, ly, 1e-6, cfg, bf16::poison())
            .err()
            .unwrap_or_else(|| panic!("{lx:?} {lw:?} {ly:?} {cfg:?} accepted"));
        assert!(why.contains(want), "{why:?} does not say {want:?}");
    };
    let refuse = |lx, lw, ly, staged, want: &str| refuse_warps(lx, lw, ly, (1, staged), want);
    let (x, w) = (l2([4, 64], [64, 1]), l1(64, 1));
    // N = 12: not whole 128-bit atoms of bf16
    let x12 = l2([4, 12], [16, 1]);
    refuse(x12, l1(12, 1), x12, 1, "multiple of the vector width");
    // column-major x: no unit stride along the rows
    refuse(l2([4, 64], [1, 4]), w, x, 1, "unit column strides");
    // w strided
    refuse(x, l1(64, 2), x, 1, "unit strides");
    // rows not 16-byte aligned
    let x_odd = l2([4, 64], [68 + 1, 1]);
    refuse(x_odd, w, x, 1, "row strides");
    // shapes that differ
    refuse(x, w, l2([3, 64], [64, 1]), 1, "same shape");
    refuse(x, l1(56, 1), x, 1, "(w, b) of N elements");
    refuse(x, w, x, -1, "stages");
    // y's rows overlapping (row stride 8 < N = 64): threads would race
    refuse(x, w, l2([4, 64], [8, 1]), 1, "not to overlap");
    // a count of warps per row with no kernel
    refuse_warps(x, w, x, (3, 1), "1, 2, 4, 8 and 16 warps per row");
    // and what it accepts: f32 rows of 4-wide atoms (N = 12), padded
    let xf = FlatLayout::new([3, 12], [16, 1]).unwrap();
    let run = exec::rmsnorm_strided(
        &[1.0f32; 48],
        xf,
        &[1.0f32; 12],
        l1(12, 1),
        xf,
        0.0,
        (1, 1),
        f32::poison(),
    )
    .unwrap();
    assert!(run
        .out
        .chunks(16)
        .all(|r| r[..12].iter().all(|&v| v == 1.0)));
}
