//! `tessel analyze`'s model on known cases, and against a brute-force count written
//! differently (hash maps over every byte) on random layouts.

use std::collections::{HashMap, HashSet};
use tessel_calc::analyze::{analyze, phase_threads, Accesses, Memory, Report, Space};
use tessel_calc::eval;

fn acc(memory: &str, tv: &str, bits: i64, width: Option<i64>) -> Accesses {
    Accesses {
        memory: Memory::of(&eval(memory).unwrap()).unwrap(),
        tv: tessel_calc::to_layout(&eval(tv).unwrap()).unwrap(),
        bits,
        width,
    }
}

fn smem(memory: &str, tv: &str, bits: i64) -> Report {
    analyze(&acc(memory, tv, bits, None), Space::Shared).unwrap()
}

fn gmem(memory: &str, tv: &str, bits: i64) -> Report {
    analyze(&acc(memory, tv, bits, None), Space::Global).unwrap()
}

#[test]
fn row_reads_of_128_bits_are_four_conflict_free_phases() {
    // thread (c, r) in (8, 4) reads row r, columns 4c .. 4c+3 of a row-major 32x32 f32 tile
    let r = smem("(32,32):(32,1)", "((8,4),4):((128,1),32)", 32);
    assert_eq!(r.vector, 4);
    assert!(r.rows.iter().all(|p| p.cost == 1));
    // 32 threads x 4 values / (8 threads a phase) = 4 phases per warp
    assert_eq!(r.rows.iter().filter(|p| p.warp == 0).count(), 4);
    assert!(r.verdict().starts_with("conflict-free"), "{}", r.verdict());
}

#[test]
fn stride_two_is_two_way_and_a_broadcast_is_free() {
    let r = smem("64:1", "(32,1):(2,1)", 32);
    assert_eq!(r.worst(), 2);
    assert!(r.verdict().starts_with("2-way"), "{}", r.verdict());
    assert!(
        r.rows[0].detail.contains("bank 0: threads 0,16"),
        "{}",
        r.rows[0].detail
    );
    let b = smem("64:1", "(32,1):(0,1)", 32);
    assert_eq!(b.worst(), 1);
    // 16-bit neighbours share a word: no conflict either
    assert_eq!(smem("64:1", "(32,1):(1,1)", 16).worst(), 1);
}

#[test]
fn global_rows_columns_and_misalignment() {
    let row = gmem("(64,64):(64,1)", "((32,8),(2,8)):((64,1),(2048,8))", 32);
    assert!(row.rows.iter().all(|q| q.cost == 4 && q.bytes == 128));
    assert_eq!(row.worst(), 100);
    let col = gmem("(64,64):(1,64)", "((32,8),(2,8)):((64,1),(2048,8))", 32);
    assert!(col.rows.iter().all(|q| q.cost == 32));
    assert_eq!(col.worst(), 12);
    assert!(
        col.verdict().starts_with("uncoalesced: 12.5%"),
        "{}",
        col.verdict()
    );
    // 32 floats from element 1: bytes 4 .. 131, five sectors over two lines
    let off = gmem("Sw<0,4,3> o 1 o 64:1", "(32,1):(1,0)", 32);
    assert_eq!((off.rows[0].cost, off.rows[0].ideal), (5, 4));
    assert_eq!(off.rows[0].detail, "2 lines");
    // 8 consecutive bf16 per thread along a row: 128-bit accesses, 16 sectors per request
    let v = gmem("(4,256):(256,1)", "(32,8):(32,4)", 16);
    assert_eq!((v.vector, v.rows[0].cost, v.rows[0].ideal), (8, 16, 16));
    // the same 8 down a row each: 128-bit accesses still, but 32 sectors for 16
    let w = gmem("(32,64):(64,1)", "(32,8):(1,32)", 16);
    assert_eq!((w.vector, w.rows[0].cost, w.rows[0].ideal), (8, 32, 16));
}

#[test]
fn bad_input_names_the_condition() {
    let e = |m: &str, tv: &str, bits: i64, w: Option<i64>| {
        analyze(&acc(m, tv, bits, w), Space::Shared).unwrap_err()
    };
    assert!(e("16:1", "(32,1):(1,0)", 32, None).contains("outside the memory layout's domain"));
    assert!(e("64:1", "32:1", 32, None).contains("rank 2"));
    assert!(e("64:1", "(32,1):(1,0)", 12, None).contains("power of two"));
    assert!(e("64:1", "(32,2):(1,32)", 32, Some(64)).contains("thread 0, value 1"));
    assert!(e("64:1", "(32,2):(2,1)", 32, Some(48)).contains("power of two"));
    assert!(e("64:1", "(16,2):(2,1)", 32, Some(128)).contains("do not divide"));
    // a partial last warp is analyzed, not refused
    let r = smem("64:1", "(40,1):(1,0)", 32);
    assert_eq!(r.rows.last().unwrap().threads, (32, 39));
}

/// A small deterministic generator (the test prints its seed).
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> i64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n) as i64
    }
}

#[test]
fn the_model_agrees_with_a_brute_force_count() {
    let seed = std::env::var("TESSEL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_u64 ^ std::process::id() as u64);
    eprintln!("analyze brute force: seed {seed} (TESSEL_SEED replays it)");
    let mut g = Lcg(seed);
    let (mut vectors, mut conflicts) = (0, 0);
    for case in 0..300 {
        let threads = [8, 32, 48, 64][g.below(4) as usize];
        let values = [1, 2, 4, 8][g.below(4) as usize];
        let bits = [8, 16, 32, 64][g.below(4) as usize];
        // values adjacent in memory half the time, so that vector accesses come up
        let (dt, dv) = (g.below(9), if g.below(2) == 0 { 1 } else { g.below(70) });
        let tv = format!("({threads},{values}):({dt},{dv})");
        let span = (threads - 1) * dt + (values - 1) * dv + 1;
        let ms = [1, 1, 2, 3][g.below(4) as usize];
        let memory = format!("{span}:{ms}");
        let a = acc(&memory, &tv, bits, None);
        let what = format!("case {case}: {memory} through {tv}, {bits}-bit");
        let rs = analyze(&a, Space::Shared).unwrap();
        let rg = analyze(&a, Space::Global).unwrap();
        let n = rs.vector;
        vectors += (n > 1) as i32;
        conflicts += (rs.worst() > 1) as i32;
        let bytes = bits / 8;
        let at = |t: i64, v: i64| ms * (t * dt + v * dv);
        // every request: its threads' byte ranges
        let mut shared = Vec::new();
        let mut global = Vec::new();
        for w0 in (0..threads).step_by(32) {
            for k in 0..values / n {
                let ts: Vec<i64> = (w0..(w0 + 32).min(threads)).collect();
                let ranges: Vec<(i64, i64)> = ts
                    .iter()
                    .map(|&t| (at(t, k * n) * bytes, n * bytes))
                    .collect();
                let sec: HashSet<i64> = ranges
                    .iter()
                    .flat_map(|&(b, l)| (b..b + l).map(|x| x / 32))
                    .collect();
                global.push(sec.len() as i64);
                for phase in ranges.chunks(phase_threads(n * bytes) as usize) {
                    let mut banks: HashMap<i64, HashSet<i64>> = HashMap::new();
                    for &(b, l) in phase {
                        for x in b..b + l {
                            banks.entry((x / 4) % 32).or_default().insert(x / 4);
                        }
                    }
                    shared.push(banks.values().map(|s| s.len() as i64).max().unwrap());
                }
            }
        }
        let got: Vec<i64> = rs.rows.iter().map(|r| r.cost).collect();
        assert_eq!(got, shared, "{what}");
        let got: Vec<i64> = rg.rows.iter().map(|r| r.cost).collect();
        assert_eq!(got, global, "{what}");
    }
    // the cases reach both vector accesses and conflicts
    assert!(
        vectors > 10 && conflicts > 10,
        "{vectors} vector cases, {conflicts} conflicted"
    );
}
