//! The warp's tensor-core instructions on the simulated GPU, once all 32 lanes have reached one:
//! `ldmatrix` hands out the rows the lanes read as the PTX ISA says, and `mma.sync.m16n8k16`
//! computes `D = A B^T + C` from the fragments, mapped to `(m, k)`, `(n, k)` and `(m, n)` by the
//! atom's own TV layouts (layout-core's `SM80_16X8X16_F32BF16BF16F32_TN`, the atom the kernels
//! partition with).
//!
//! `wgmma.mma_async.m64nNk16` ([`wgmma`]) reads A and B from shared memory at the addresses its
//! descriptors give (layout-core's `GmmaDescriptor::hardware_address`, the PTX ISA's canonical
//! layouts), as reads of the async proxy that last until the warpgroup's wait, and writes each
//! thread's accumulators as layout-core's `SM90_64xNx16` atoms map them.

use super::block::{fault, Site};
use super::clock::Clocks;
use super::shared::{AsyncKind, AsyncOp, Smem};
use layout_core::{
    GmmaDescriptor, GmmaMajor, Layout, GMMA_ATOMS, GMMA_A_REG_64X16, SM80_16X8X16_F32BF16BF16F32_TN,
};
use std::sync::OnceLock;

/// Element `j` (0..8) of a row of 8 16-bit elements.
fn half(row: &[u32; 4], j: usize) -> u32 {
    (row[j / 2] >> (16 * (j % 2))) & 0xffff
}

/// Lane `l`'s four words of `ldmatrix.x4` from the 32 lanes' `rows` (lanes `8q..8q+8` the rows
/// of matrix `q`): elements `(l / 4, 2 (l % 4) + {0, 1})` of each matrix, or with `trans` its
/// elements `(2 (l % 4) + {0, 1}, l / 4)`.
pub fn ldmatrix(rows: &[[u32; 4]; 32], l: usize, trans: bool) -> [u32; 4] {
    let (g, t) = (l / 4, l % 4);
    std::array::from_fn(|q| {
        if trans {
            half(&rows[8 * q + 2 * t], g) | half(&rows[8 * q + 2 * t + 1], g) << 16
        } else {
            rows[8 * q + g][t]
        }
    })
}

/// Where each lane's registers sit in the atom's tiles: lane `l`'s value `v` of A at `(m, k)`, of
/// B at `(n, k)`, of C at `(m, n)`.
struct Maps {
    a: [[[usize; 2]; 8]; 32],
    b: [[[usize; 2]; 4]; 32],
    c: [[[usize; 2]; 4]; 32],
}

fn maps() -> &'static Maps {
    static MAPS: OnceLock<Maps> = OnceLock::new();
    MAPS.get_or_init(|| {
        let atom = &SM80_16X8X16_F32BF16BF16F32_TN;
        let [mm, nn, _] = atom.shape_mnk;
        let at = |tv: &Layout, rows: i64, l: usize, v: usize| {
            let i = tv.call(l as i64 + 32 * v as i64);
            [(i % rows) as usize, (i / rows) as usize]
        };
        Maps {
            a: std::array::from_fn(|l| std::array::from_fn(|v| at(&atom.a, mm, l, v))),
            b: std::array::from_fn(|l| std::array::from_fn(|v| at(&atom.b, nn, l, v))),
            c: std::array::from_fn(|l| std::array::from_fn(|v| at(&atom.c, mm, l, v))),
        }
    })
}

/// The value of 16-bit element bits `h` (`bf16` or `f16`).
fn widen(h: u32, bf16: bool) -> f64 {
    if bf16 {
        f64::from(f32::from_bits(h << 16))
    } else {
        half::f16::from_bits(h as u16).to_f64()
    }
}

/// `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}`: each lane's `regs` hold `a` (4 words),
/// `b` (2 words) and `c` (4 `f32`s), which receive `d`. The products of two 16-bit values are
/// exact in `f64`; the 16 of them and `C(m, n)` are summed in `f64` and rounded to `f32` once.
pub fn mma_m16n8k16(mut regs: [&mut [u32; 10]; 32], bf16: bool) {
    let maps = maps();
    let mut a = [[0f64; 16]; 16];
    let mut b = [[0f64; 16]; 8];
    let mut c = [[0f64; 8]; 16];
    for (l, r) in regs.iter().enumerate() {
        for (v, &[m, k]) in maps.a[l].iter().enumerate() {
            a[m][k] = widen(half(&[r[0], r[1], r[2], r[3]], v), bf16);
        }
        for (v, &[n, k]) in maps.b[l].iter().enumerate() {
            b[n][k] = widen(half(&[r[4], r[5], 0, 0], v), bf16);
        }
        for (v, &[m, n]) in maps.c[l].iter().enumerate() {
            c[m][n] = f64::from(f32::from_bits(r[6 + v]));
        }
    }
    for (l, r) in regs.iter_mut().enumerate() {
        for (v, &[m, n]) in maps.c[l].iter().enumerate() {
            let s: f64 = (0..16).map(|k| a[m][k] * b[n][k]).sum();
            r[6 + v] = ((s + c[m][n]) as f32).to_bits();
        }
    }
}

/// Thread `t`'s accumulator `v` of `m64nNk16` at `(m, n)`: entry `t * N / 2 + v`, from the
/// atom's C layout (`(t, v) -> m + 64 n`).
fn c_map(n: usize) -> &'static [[u16; 2]] {
    static MAPS: [OnceLock<Vec<[u16; 2]>>; 32] = [const { OnceLock::new() }; 32];
    MAPS[n / 8 - 1].get_or_init(|| {
        let atom = GMMA_ATOMS
            .iter()
            .find(|a| a.mma.shape_mnk[1] == n as i64)
            .expect("an atom of every N");
        let values = n / 2;
        (0..128 * values)
            .map(|i| {
                let (t, v) = (i / values, i % values);
                let x = atom.mma.c.call(t as i64 + 128 * v as i64);
                [(x % 64) as u16, (x / 64) as u16]
            })
            .collect()
    })
}

/// Where a wgmma's A comes from.
#[derive(Clone, Copy, Debug)]
pub enum SourceA<'a> {
    /// Shared memory, through this descriptor (`_SS`).
    Desc(u64),
    /// The 128 threads' registers, four words each (`_RS`, layout-core's `GMMA_A_REG_64X16`).
    Regs(&'a [[u32; 4]]),
}

/// One wgmma's operands and form, as its warpgroup issued it.
#[derive(Clone, Copy, Debug)]
pub struct WgmmaOp<'a> {
    /// A: registers or a descriptor.
    pub a: SourceA<'a>,
    /// B's descriptor.
    pub b: u64,
    /// A's and B's major-ness (`imm-trans-a`, `imm-trans-b`): MN-major where true.
    pub mn_major: [bool; 2],
    /// `bf16` operands (else `f16`).
    pub bf16: bool,
    /// Add to the accumulators (scale-d 1).
    pub accumulate: bool,
    /// Accumulators per thread (`N / 2`).
    pub values: usize,
}

/// Thread `t`'s value `v` (0..8) of the `_RS` A fragment at `(m, k)` of the `64 x 16` tile.
fn a_reg_map() -> &'static [[[u8; 2]; 8]; 128] {
    static MAP: OnceLock<[[[u8; 2]; 8]; 128]> = OnceLock::new();
    MAP.get_or_init(|| {
        std::array::from_fn(|t| {
            std::array::from_fn(|v| {
                let x = GMMA_A_REG_64X16.call(t as i64 + 128 * v as i64);
                [(x % 64) as u8, (x / 64) as u8]
            })
        })
    })
}

/// One `wgmma.mma_async.sync.aligned.m64nNk16.f32` of warpgroup `g` of its block (`N = 2
/// values`), met by its 128 threads at `site`: A (`64 x 16`) from the threads' registers or, as
/// B (`N x 16`), from `smem` at its descriptor's addresses, K- or MN-major, read as reads of
/// `reader`, the warpgroup's first thread in the cluster's numbering (checked, and in flight
/// until the warpgroup's wait). Returns each thread's `values` results, `A B^T` plus `c(i)` (its
/// accumulator `i % values`, where `accumulate`): each element's 16 exact products and
/// accumulator summed in `f64`, rounded once. [`Accumulators`] holds them until the wait.
pub fn wgmma(
    (smem, clocks): (&mut Smem, &Clocks),
    (g, reader): (usize, usize),
    op: WgmmaOp,
    c: impl Fn(usize) -> f32,
    site: Site,
) -> Vec<f32> {
    let (values, bf16) = (op.values, op.bf16);
    let n = 2 * values;
    let (len, eb) = (smem.len_bytes(), smem.elem_bytes());
    let mut elems = Vec::new();
    let mut operand = |desc: u64, rows: usize, mn: bool, name: &str| -> Vec<[f64; 16]> {
        let d = GmmaDescriptor { desc };
        let major = if mn { GmmaMajor::MN } else { GmmaMajor::K };
        (0..rows)
            .map(|r| {
                std::array::from_fn(|k| {
                    let at = d.hardware_address(major, 16, r as i64, k as i64) as usize;
                    if !at.is_multiple_of(2) || at + 2 > len {
                        fault(format!(
                            "wgmma at {site}: {name}'s element ({r}, {k}) at shared byte {at}, \
                             outside the block's {len} bytes ({d}, {}-major)",
                            major.name()
                        ));
                    }
                    elems.push(at / eb);
                    let h = smem.bytes(at, 2);
                    widen(u16::from_le_bytes([h[0], h[1]]) as u32, bf16)
                })
            })
            .collect()
    };
    let av = match op.a {
        SourceA::Desc(a) => operand(a, 64, op.mn_major[0], "A"),
        SourceA::Regs(regs) => {
            let mut av = vec![[0f64; 16]; 64];
            for (t, words) in regs.iter().enumerate() {
                for (v, &[m, k]) in a_reg_map()[t].iter().enumerate() {
                    let h = (words[v / 2] >> (16 * (v % 2))) & 0xffff;
                    av[m as usize][k as usize] = widen(h, bf16);
                }
            }
            av
        }
    };
    let bv = operand(op.b, n, op.mn_major[1], "B");
    elems.sort_unstable();
    elems.dedup();
    let reads = AsyncOp {
        kind: AsyncKind::Wgmma,
        owner: g,
        group: None,
        elems,
        site,
    };
    smem.begin_read(clocks, reader, reads);
    let mut out = vec![0f32; 128 * values];
    for (i, &[m, nn]) in c_map(n).iter().enumerate() {
        let (m, nn) = (m as usize, nn as usize);
        let s: f64 = (0..16).map(|k| av[m][k] * bv[nn][k]).sum();
        let c = if op.accumulate { f64::from(c(i)) } else { 0.0 };
        out[i] = (s + c) as f32;
    }
    out
}

/// The accumulators of the wgmmas in flight, by warpgroup: as the PTX ISA has them, undefined
/// from the wgmma until the `wgmma.wait_group` that covers it. Each wgmma's results are computed
/// as it is issued and kept here; its threads' accumulators read NaN until the wait writes the
/// results, so a kernel that reads them early computes with NaN. A wgmma that accumulates onto
/// registers an earlier one in flight writes (the same accumulators, chained without a wait, as
/// a k-loop does) starts from that one's results.
#[derive(Default)]
pub struct Accumulators {
    pending: Vec<Pending>,
}

/// One wgmma's results, waiting for the wait that covers it.
struct Pending {
    /// The warpgroup (in the cluster's numbering).
    wg: usize,
    /// Its batch, once committed.
    batch: Option<u32>,
    /// Each thread's accumulators (`values` each), and their results.
    acc: Vec<*mut f32>,
    values: usize,
    out: Vec<f32>,
}

impl Accumulators {
    /// Nothing in flight (a new block).
    pub fn reset(&mut self) {
        self.pending.clear();
    }

    /// Thread `i` (of 128) of warpgroup `wg`'s accumulator `v` at `acc` (`values` of them): the
    /// results of the latest wgmma in flight that writes them, else what the thread holds.
    pub fn input(&self, wg: usize, (i, v): (usize, usize), acc: *mut f32, values: usize) -> f32 {
        match (self.pending.iter().rev())
            .find(|p| p.wg == wg && p.values == values && p.acc[i] == acc)
        {
            Some(p) => p.out[i * values + v],
            // SAFETY: the thread's accumulators, on its stack while it waits at the wgmma
            None => unsafe { *acc.add(v) },
        }
    }

    /// Warpgroup `wg`'s wgmma writes `out` to its threads' `acc` (`values` each) at its wait;
    /// until then they read NaN.
    pub fn issue(&mut self, wg: usize, acc: Vec<*mut f32>, values: usize, out: Vec<f32>) {
        poison(&acc, values);
        self.pending.push(Pending {
            wg,
            batch: None,
            acc,
            values,
            out,
        });
    }

    /// Warpgroup `wg`'s commit: its wgmmas since the last are batch `batch`.
    pub fn commit(&mut self, wg: usize, batch: u32) {
        for p in self.pending.iter_mut().filter(|p| p.wg == wg) {
            p.batch.get_or_insert(batch);
        }
    }

    /// Warpgroup `wg`'s wait, `batches` committed and all but the `n` most recent complete: the
    /// completed wgmmas' results written, in the order they were issued; accumulators that a
    /// wgmma still in flight writes stay NaN.
    pub fn wait(&mut self, wg: usize, batches: u32, n: u32) {
        let done = |p: &Pending| p.wg == wg && p.batch.is_some_and(|b| b + n < batches);
        for p in self.pending.iter().filter(|p| done(p)) {
            for (i, &acc) in p.acc.iter().enumerate() {
                for v in 0..p.values {
                    // SAFETY: the thread's accumulators, which it keeps in place until this wait
                    // (the wgmma's contract), on its stack while it waits here
                    unsafe { *acc.add(v) = p.out[i * p.values + v] };
                }
            }
        }
        self.pending.retain(|p| !done(p));
        for p in self.pending.iter().filter(|p| p.wg == wg) {
            poison(&p.acc, p.values);
        }
    }
}

/// Each thread's `values` accumulators at `acc` set to NaN.
fn poison(acc: &[*mut f32], values: usize) {
    for &a in acc {
        for v in 0..values {
            // SAFETY: as in `Accumulators::wait`
            unsafe { *a.add(v) = f32::NAN };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_atoms_fragments_are_the_ptx_isas() {
        // lane l = 4g + t: a0 (g, 2t), a2 (g+8, 2t), a4 (g, 2t+8); b0 (k 2t, n g); c0 (g, 2t),
        // c2 (g+8, 2t)
        let m = maps();
        for l in 0..32 {
            let (g, t) = (l / 4, l % 4);
            assert_eq!(m.a[l][0], [g, 2 * t]);
            assert_eq!(m.a[l][1], [g, 2 * t + 1]);
            assert_eq!(m.a[l][2], [g + 8, 2 * t]);
            assert_eq!(m.a[l][4], [g, 2 * t + 8]);
            assert_eq!(m.a[l][6], [g + 8, 2 * t + 8]);
            assert_eq!(m.b[l][0], [g, 2 * t]);
            assert_eq!(m.b[l][2], [g, 2 * t + 8]);
            assert_eq!(m.c[l][0], [g, 2 * t]);
            assert_eq!(m.c[l][3], [g + 8, 2 * t + 1]);
        }
    }

    #[test]
    fn the_wgmma_accumulators_are_the_ptx_isas() {
        // warp w's rows 16 w ..; lane l = 4 g + q: d[4 j + r] at (16 w + g + 8 (r / 2),
        // 8 j + 2 q + r % 2)
        for n in [8, 64, 256] {
            let map = c_map(n);
            let values = n / 2;
            for t in 0..128 {
                let (w, g, q) = (t / 32, t % 32 / 4, t % 4);
                for v in 0..values {
                    let (j, r) = (v / 4, v % 4);
                    let want = [16 * w + g + 8 * (r / 2), 8 * j + 2 * q + r % 2];
                    let got = map[t * values + v];
                    assert_eq!(
                        [got[0] as usize, got[1] as usize],
                        want,
                        "n {n} t {t} v {v}"
                    );
                }
            }
        }
    }

    #[test]
    fn ldmatrix_hands_out_rows_and_their_transposes() {
        // matrix q's row r holds elements 256 q + 16 r + j
        let rows: [[u32; 4]; 32] = std::array::from_fn(|lane| {
            let (q, r) = (lane / 8, lane % 8);
            let e = |j: usize| (256 * q + 16 * r + j) as u32;
            std::array::from_fn(|w| e(2 * w) | e(2 * w + 1) << 16)
        });
        for l in 0..32 {
            let (g, t) = (l / 4, l % 4);
            let n = ldmatrix(&rows, l, false);
            let tr = ldmatrix(&rows, l, true);
            for q in 0..4 {
                let e = |r: usize, j: usize| (256 * q + 16 * r + j) as u32;
                assert_eq!(n[q], e(g, 2 * t) | e(g, 2 * t + 1) << 16);
                assert_eq!(tr[q], e(2 * t, g) | e(2 * t + 1, g) << 16);
            }
        }
    }
}
