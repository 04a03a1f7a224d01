//! `attention` (tessel_gpu::attention, the FlashAttention forward: a producer warpgroup feeding
//! two consumers through mbarriers, wgmma from shared memory and from registers, the online
//! softmax) on the simulated GPU: O and the log-sum-exp of every row within the bound derived in
//! host::checks::attention, for one tile and several, ragged lengths, the causal mask, GQA and
//! MQA, bf16 and f16, under several schedules; the same bits under every schedule; and each
//! broken copy of the pipeline reported or caught by the check.

use half::{bf16, f16};
use host::checks::attention::{simulate, simulate_at, simulate_on, Inputs, Packing, Shape};
use host::elem::Rng;
use tessel_gpu::attention::{first_row, heads_together, unit_order, warpgroup_tiles, Attention};
use tessel_gpu::mma::MmaIn;

fn rng(test: &str) -> Rng {
    Rng::from_env_or_fresh(test, "attention")
}

/// Do two runs give the same bits of O and of the log-sum-exp (NaN equal to itself)?
fn same_bits(a: &(Vec<f32>, Vec<f32>), b: &(Vec<f32>, Vec<f32>)) -> bool {
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    bits(&a.0) == bits(&b.0) && bits(&a.1) == bits(&b.1)
}

fn shape(bh: [usize; 3], seq: [usize; 2], d: usize, causal: bool) -> Shape {
    Shape {
        batch: bh[0],
        heads: bh[1],
        kv_heads: bh[2],
        seq_q: seq[0],
        seq_k: seq[1],
        d,
        causal,
    }
}

/// Every row of the simulated kernel within its bound (key tiles of 128 rows).
fn within<I: MmaIn + Default, const OV: usize, const C: bool>(rng: &mut Rng, s: Shape, seed: u64) {
    within_tiles::<I, OV, 64, C>(rng, s, seed)
}

/// Every row of the simulated kernel with key tiles of `2 SV` rows within its bound.
fn within_tiles<I: MmaIn + Default, const OV: usize, const SV: usize, const C: bool>(
    rng: &mut Rng,
    s: Shape,
    seed: u64,
) {
    checked::<I, OV, SV, C>(&Inputs::<I>::new(rng, s), seed)
}

/// Every row of the simulated kernel on `x` within its bound.
fn checked<I: MmaIn + Default, const OV: usize, const SV: usize, const C: bool>(
    x: &Inputs<I>,
    seed: u64,
) {
    let (s, p) = (x.shape, &x.packing);
    let (o, lse) =
        simulate::<I, OV, SV, C, 0>(x, seed).unwrap_or_else(|e| panic!("{s:?} {p:?}: {e}"));
    let rows: Vec<usize> = (0..x.rows()).collect();
    let worst = x
        .check(&o, &lse, &rows, 2 * SV)
        .unwrap_or_else(|e| panic!("{p:?}: {e}"));
    println!("{s:?} {p:?}: worst error {worst:.3} of its bound");
}

/// Every row of the simulated kernel (the full mask, key tiles of `2 SV` rows) on `x` within its
/// bound, with `sms` multiprocessors each (persistent blocks taking their units in turn), under
/// schedule `seed + sms`.
fn on_multiprocessors<I: MmaIn + Default, const OV: usize, const SV: usize>(
    x: &Inputs<I>,
    seed: u64,
    sms: &[i64],
) {
    let rows: Vec<usize> = (0..x.rows()).collect();
    for &sms in sms {
        let (o, lse) = simulate_on::<I, OV, SV, false, 0>(x, seed + sms as u64, sms)
            .unwrap_or_else(|e| panic!("{sms} multiprocessors: {e}"));
        let worst = x
            .check(&o, &lse, &rows, 2 * SV)
            .unwrap_or_else(|e| panic!("{sms}: {e}"));
        println!("{sms} multiprocessors: worst error {worst:.3} of its bound");
    }
}

/// FlashAttention's `(B, S, H, D)` (strides the copy engine's maps and O's stores take as
/// given) and variable lengths packed `(total, H, D)`: ragged, a sequence of one query, one of
/// no keys (O of 0, the log-sum-exp +inf), query and key lengths apart, GQA, both masks.
#[test]
fn attention_takes_any_strides_and_packed_variable_lengths() {
    let mut rng = rng("attention_takes_any_strides_and_packed_variable_lengths");
    let seq_first = |rng: &mut Rng, s| Inputs::<bf16>::packed(rng, s, Packing::SeqFirst);
    checked::<bf16, 32, 64, false>(
        &seq_first(&mut rng, shape([2, 4, 2], [70, 130], 64, false)),
        1,
    );
    checked::<bf16, 32, 64, true>(
        &seq_first(&mut rng, shape([1, 2, 1], [200, 200], 64, true)),
        2,
    );
    let lens = vec![[130, 200], [1, 17], [64, 0], [70, 129]];
    let varlen = |rng: &mut Rng, d, causal| {
        Inputs::<f16>::packed(
            rng,
            shape([4, 4, 2], [130, 200], d, causal),
            Packing::Varlen(lens.clone()),
        )
    };
    checked::<f16, 32, 64, false>(&varlen(&mut rng, 64, false), 3);
    checked::<f16, 32, 64, true>(&varlen(&mut rng, 64, true), 4);
    checked::<f16, 64, 64, true>(&varlen(&mut rng, 128, true), 5);
    checked::<f16, 128, 32, false>(&varlen(&mut rng, 256, false), 6);
}

/// Persistent blocks over packed variable lengths: units past a short sequence's rows skipped,
/// a sequence with no keys, a block taking every unit or a few (1 and 3 multiprocessors).
#[test]
fn attention_persistent_blocks_take_varlen_units_in_turn() {
    let mut rng = rng("attention_persistent_blocks_take_varlen_units_in_turn");
    let lens = vec![[400, 300], [1, 17], [64, 0], [250, 129], [193, 192]];
    let x = Inputs::<bf16>::packed(
        &mut rng,
        shape([5, 2, 1], [400, 300], 64, false),
        Packing::Varlen(lens),
    );
    on_multiprocessors::<bf16, 32, 64>(&x, 11, &[1, 3]);
}

/// O at an odd offset in its buffer, so that no row is 16-byte aligned: the stores take O's
/// rows an element at a time, with the same bits as the aligned stores' (D = 64 and, in two
/// passes of its staging, D = 256).
#[test]
fn attention_stores_o_at_any_alignment() {
    let mut rng = rng("attention_stores_o_at_any_alignment");
    let x = Inputs::<bf16>::new(&mut rng, shape([1, 2, 1], [150, 200], 64, false));
    let aligned = simulate::<bf16, 32, 64, false, 0>(&x, 1).unwrap();
    let odd = simulate_at::<bf16, 32, 64, false, 0>(&x, 1, 2, 1).unwrap();
    assert!(same_bits(&odd, &aligned), "D = 64");
    let x = Inputs::<f16>::new(&mut rng, shape([1, 1, 1], [70, 90], 256, true));
    let aligned = simulate::<f16, 128, 32, true, 0>(&x, 2).unwrap();
    let odd = simulate_at::<f16, 128, 32, true, 0>(&x, 2, 2, 3).unwrap();
    assert!(same_bits(&odd, &aligned), "D = 256");
    let rows: Vec<usize> = (0..x.rows()).collect();
    x.check(&odd.0, &odd.1, &rows, 64)
        .expect("D = 256 within its bound");
}

#[test]
fn attention_is_within_its_bound_d64() {
    let mut rng = rng("attention_is_within_its_bound_d64");
    within::<bf16, 32, false>(&mut rng, shape([1, 1, 1], [1, 1], 64, false), 1);
    within::<bf16, 32, false>(&mut rng, shape([1, 2, 1], [17, 33], 64, false), 2);
    within::<bf16, 32, false>(&mut rng, shape([2, 2, 2], [130, 300], 64, false), 3);
    within::<f16, 32, false>(&mut rng, shape([1, 4, 1], [64, 129], 64, false), 4);
    within::<bf16, 32, true>(&mut rng, shape([1, 2, 2], [200, 200], 64, true), 5);
    within::<bf16, 32, true>(&mut rng, shape([1, 2, 1], [70, 260], 64, true), 6);
}

#[test]
fn attention_is_within_its_bound_d128() {
    let mut rng = rng("attention_is_within_its_bound_d128");
    within::<bf16, 64, false>(&mut rng, shape([1, 1, 1], [128, 128], 128, false), 7);
    within::<f16, 64, false>(&mut rng, shape([1, 2, 1], [45, 257], 128, false), 8);
    within::<bf16, 64, true>(&mut rng, shape([1, 1, 1], [257, 257], 128, true), 9);
}

/// D = 128 without the mask in key tiles of 176 rows (the long sequences' kernel): one tile
/// short of its keys, several with the last one ragged, ragged packed lengths over persistent
/// blocks on 1 and 3 multiprocessors (O staged in two passes of 64 columns).
#[test]
fn attention_is_within_its_bound_d128_tiles_of_176() {
    let mut rng = rng("attention_is_within_its_bound_d128_tiles_of_176");
    within_tiles::<bf16, 64, 88, false>(&mut rng, shape([1, 1, 1], [64, 100], 128, false), 16);
    within_tiles::<f16, 64, 88, false>(&mut rng, shape([1, 2, 1], [150, 400], 128, false), 17);
    let lens = vec![[300, 530], [1, 17], [129, 176], [64, 0]];
    let x = Inputs::<bf16>::packed(
        &mut rng,
        shape([4, 2, 1], [300, 530], 128, false),
        Packing::Varlen(lens),
    );
    on_multiprocessors::<bf16, 64, 88>(&x, 18, &[1, 3]);
}

/// D = 96 (its second panel half the copy engine's zeros), 192 and 256 (key tiles of 64 rows).
#[test]
fn attention_is_within_its_bound_d96_d192_d256() {
    let mut rng = rng("attention_is_within_its_bound_d96_d192_d256");
    within::<bf16, 48, false>(&mut rng, shape([1, 2, 1], [130, 200], 96, false), 10);
    within::<f16, 48, true>(&mut rng, shape([1, 1, 1], [150, 150], 96, true), 11);
    within_tiles::<bf16, 96, 32, false>(&mut rng, shape([1, 2, 2], [40, 130], 192, false), 12);
    within_tiles::<f16, 96, 32, true>(&mut rng, shape([1, 1, 1], [129, 129], 192, true), 13);
    within_tiles::<bf16, 128, 32, true>(&mut rng, shape([1, 2, 1], [131, 140], 256, true), 14);
    within_tiles::<f16, 128, 32, false>(&mut rng, shape([1, 1, 1], [20, 70], 256, false), 15);
}

/// The same bits under every schedule of the simulated GPU's threads (the causal mask: the
/// first block takes every unit from the counter, as the simulated GPU runs blocks in turn),
/// and on 1 to 4 multiprocessors (the full mask's 8 units, 2 query tiles of 4 heads: persistent
/// blocks taking 8, 4, 3 or 2 each).
#[test]
fn attention_gives_the_same_bits_under_every_schedule() {
    let mut rng = rng("attention_gives_the_same_bits_under_every_schedule");
    let x = Inputs::<bf16>::new(&mut rng, shape([1, 2, 1], [130, 260], 64, true));
    let first = simulate::<bf16, 32, 64, true, 0>(&x, 0).unwrap();
    for seed in [1, 7, 12345] {
        let run = simulate::<bf16, 32, 64, true, 0>(&x, seed).unwrap();
        assert!(same_bits(&run, &first), "seed {seed}");
    }
    let x = Inputs::<bf16>::new(&mut rng, shape([2, 2, 1], [300, 260], 64, false));
    let first = simulate_on::<bf16, 32, 64, false, 0>(&x, 3, 1).unwrap();
    for sms in [2, 3, 4] {
        let run = simulate_on::<bf16, 32, 64, false, 0>(&x, 3 + sms as u64, sms).unwrap();
        assert!(same_bits(&run, &first), "{sms} multiprocessors");
    }
}

/// The units' order: every (query tile, head) once, heads taken `g` together (the last group
/// short), within a group the tiles in order.
#[test]
fn attention_units_cover_every_tile_once_in_groups_of_heads() {
    for (q_tiles, heads, g) in [
        (1, 1, 1),
        (8, 256, 32),
        (3, 7, 2),
        (5, 10, 4),
        (4, 3, 8),
        (128, 16, 2),
    ] {
        let mut seen = vec![false; (q_tiles * heads) as usize];
        let mut last = (-1, -1);
        for u in 0..q_tiles * heads {
            let (x, h) = unit_order(u, q_tiles, heads, g);
            assert!(
                (0..q_tiles).contains(&x) && (0..heads).contains(&h),
                "{u}: ({x}, {h})"
            );
            let i = (h * q_tiles + x) as usize;
            assert!(
                !seen[i],
                "({x}, {h}) twice, at unit {u} ({q_tiles} x {heads}, {g} together)"
            );
            seen[i] = true;
            let group = (h / g, x);
            assert!(
                group >= last,
                "unit {u}: ({x}, {h}) after {last:?} (group, tile)"
            );
            last = group;
        }
    }
    assert_eq!(heads_together(1024, 128), 32);
    assert_eq!(heads_together(16384, 128), 2);
    assert_eq!(heads_together(1 << 20, 256), 1);
}

/// The query tiles of a sequence end with its last row: tiles `0..ceil(sq / bm)` cover `0..sq`,
/// each row once, tile 0 starting in `-bm < first <= 0`.
#[test]
fn attention_query_tiles_end_with_the_sequence() {
    for bm in [64, 128, 192] {
        for sq in 1..=3 * bm + 1 {
            let tiles = (sq + bm - 1) / bm;
            let f0 = first_row(bm, 0, sq);
            assert!(-bm < f0 && f0 <= 0, "bm {bm}, sq {sq}: tile 0 at {f0}");
            let mut seen = vec![0; sq as usize];
            for qt in 0..tiles {
                let f = first_row(bm, qt, sq);
                for row in (f..f + bm).filter(|r| (0..sq).contains(r)) {
                    seen[row as usize] += 1;
                }
            }
            assert!(seen.iter().all(|&n| n == 1), "bm {bm}, sq {sq}: {seen:?}");
            assert_eq!(first_row(bm, tiles - 1, sq) + bm, sq, "bm {bm}, sq {sq}");
        }
    }
}

/// Each consumer warpgroup takes the fewest leading key tiles that hold every key its rows in
/// the sequence see (none where they all come before it), at most the unit's: every query tile
/// of 128 and 192 rows, key tiles of 64, 128 and 176, both masks, lengths 1-700 and keys 0-700.
#[test]
fn attention_warpgroups_take_the_key_tiles_their_rows_see() {
    let (mut fewer, mut all) = (0, 0);
    for (bm, wgs) in [(128, 2), (192, 3)] {
        for bn in [64, 128, 176] {
            for causal in [false, true] {
                for sq in (1..700).step_by(7) {
                    for sk in (0..700).step_by(11) {
                        for qt in 0..(sq + bm - 1) / bm {
                            let first = first_row(bm, qt, sq);
                            let seen = if causal { sk.min(first + bm) } else { sk };
                            let tiles = (seen + bn - 1) / bn;
                            for wg in 0..wgs {
                                let rows = (first + 64 * wg).max(0)..first + 64 * (wg + 1);
                                // the tiles of the keys the rows see, by each row
                                let want = rows
                                    .map(|r| if causal { sk.min(r + 1) } else { sk })
                                    .map(|k| (k + bn - 1) / bn)
                                    .max()
                                    .unwrap_or(0);
                                let args = [sk, tiles, bn].map(|v| v as i32);
                                let n = warpgroup_tiles(first as i32, wg as i32, args, causal);
                                assert_eq!(
                                    n as i64, want,
                                    "bm {bm} bn {bn} causal {causal} sq {sq} sk {sk} qt {qt} wg {wg}"
                                );
                                assert!(n as i64 <= tiles);
                                fewer += (want < tiles) as usize;
                                all += 1;
                            }
                        }
                    }
                }
            }
        }
    }
    println!("{fewer} of {all} warpgroups take fewer key tiles than their unit");
    assert!(fewer > 0);
}

/// Broken copy `BUG` of the kernel with `D = 2 OV` and key tiles of `2 SV` rows, without the mask,
/// on a problem of three key tiles: the simulator's report, or the check's.
fn broken<const OV: usize, const SV: usize, const BUG: u8>() -> String {
    let x = Inputs::<bf16>::new(
        &mut Rng::new(3),
        shape([1, 1, 1], [128, 6 * SV], 2 * OV, false),
    );
    let m = match simulate::<bf16, OV, SV, false, BUG>(&x, 5) {
        Err(e) => e.to_string(),
        Ok((o, lse)) => {
            let rows: Vec<usize> = (0..128).collect();
            x.check(&o, &lse, &rows, 128)
                .expect_err("the broken copy must fail")
        }
    };
    println!("BUG {BUG}, D = {}, key tiles of {}: {m}", 2 * OV, 2 * SV);
    m
}

/// The pipeline's faults 1-4 and 6 of the kernel with `D = 2 OV` and key tiles of `2 SV` rows,
/// each caught.
fn broken_pipeline_caught<const OV: usize, const SV: usize>() {
    let m = broken::<OV, SV, 1>();
    assert!(
        m.contains("attention.rs:") && m.contains("wgmma"),
        "early release: {m}"
    );
    let m = broken::<OV, SV, 2>();
    assert!(m.contains("attention.rs:"), "no wait for the release: {m}");
    let m = broken::<OV, SV, 3>();
    assert!(m.contains("no warpgroup_arrive"), "no fence: {m}");
    let m = broken::<OV, SV, 4>();
    // (the stage's K released unwaited: the simulator sees the copy engine's next write race
    // the wgmma; where it does not, the scores read early are NaN)
    assert!(
        m.contains("NaN") || (m.contains("attention.rs:") && m.contains("wgmma")),
        "S read before its wait: {m}"
    );
    let m = broken::<OV, SV, 6>();
    assert!(
        m.contains("attention.rs:"),
        "O copied out before the staging's writes: {m}"
    );
}

/// D = 128 in key tiles of 176 rows: the consumers' loop that overlaps a tile's softmax with the previous
/// tile's `P V` (`Attention::OVERLAP`), its faults caught as the other loop's are.
#[test]
fn each_broken_overlapped_attention_is_caught() {
    const {
        assert!(
            Attention::<bf16, 64, 88, false>::OVERLAP && !Attention::<bf16, 64, 64, false>::OVERLAP
        )
    };
    broken_pipeline_caught::<64, 88>();
}

#[test]
fn each_broken_attention_is_caught() {
    broken_pipeline_caught::<32, 64>();
    // a block of two units: the second's Q loaded over the first's while its S is computed
    let x = Inputs::<bf16>::new(&mut Rng::new(4), shape([1, 2, 1], [100, 384], 64, false));
    let m = simulate_on::<bf16, 32, 64, false, 5>(&x, 5, 1)
        .expect_err("a Q loaded before its release must be reported")
        .to_string();
    println!("BUG 5: {m}");
    assert!(m.contains("attention.rs:"), "Q refilled early: {m}");
    // causal, two units on two blocks (run in turn): the first takes both, the counter left at
    // them and a look past them by each block, two blocks done
    let x = Inputs::<bf16>::new(&mut Rng::new(5), shape([1, 1, 1], [200, 200], 64, true));
    let m = simulate::<bf16, 32, 64, true, 7>(&x, 5)
        .expect_err("counters left set must be reported")
        .to_string();
    println!("BUG 7: {m}");
    assert!(
        m.contains("scheduler's counters at [4, 2]"),
        "the counters not set back: {m}"
    );
    // D = 64 (query tiles of 192 rows) and 100 queries: the tile's first warpgroup's rows all
    // come before the sequence, so the producer releases the three key tiles' stages for it,
    // here not
    let x = Inputs::<bf16>::new(&mut Rng::new(6), shape([1, 1, 1], [100, 384], 64, false));
    let m = simulate::<bf16, 32, 64, false, 8>(&x, 5)
        .expect_err("stages never released must be reported")
        .to_string();
    println!("BUG 8: {m}");
    assert!(m.contains("deadlock"), "stages passed on unreleased: {m}");
}
