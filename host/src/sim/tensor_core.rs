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
use layout_core::{GmmaDescriptor, GmmaMajor, Layout, GMMA_ATOMS, SM80_16X8X16_F32BF16BF16F32_TN};
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

/// One `wgmma.mma_async.sync.aligned.m64nNk16.f32` of warpgroup `g` of its block (`N = 2
/// values`), met by its 128 threads at `site`: A (`64 x 16`) and B (`N x 16`), K-major, read from
/// `smem` at the descriptors' addresses as reads of `reader`, the warpgroup's first thread in the
/// cluster's numbering (checked, and in flight until
/// the warpgroup's wait), then each thread's `acc` (`values` `f32`s) set to `A B^T` plus itself
/// where `accumulate`: each element's 16 exact products and accumulator summed in `f64`, rounded
/// once.
pub fn wgmma(
    (smem, clocks): (&mut Smem, &Clocks),
    (g, reader): (usize, usize),
    [a, b]: [u64; 2],
    (bf16, accumulate, values): (bool, bool, usize),
    acc: &[*mut f32],
    site: Site,
) {
    let n = 2 * values;
    let (len, eb) = (smem.len_bytes(), smem.elem_bytes());
    let mut elems = Vec::new();
    let mut operand = |desc: u64, rows: usize, name: &str| -> Vec<[f64; 16]> {
        let d = GmmaDescriptor { desc };
        (0..rows)
            .map(|r| {
                std::array::from_fn(|k| {
                    let at = d.hardware_address(GmmaMajor::K, 16, r as i64, k as i64) as usize;
                    if !at.is_multiple_of(2) || at + 2 > len {
                        fault(format!(
                            "wgmma at {site}: {name}'s element ({r}, {k}) at shared byte {at}, \
                             outside the block's {len} bytes ({d})"
                        ));
                    }
                    elems.push(at / eb);
                    let h = smem.bytes(at, 2);
                    widen(u16::from_le_bytes([h[0], h[1]]) as u32, bf16)
                })
            })
            .collect()
    };
    let (av, bv) = (operand(a, 64, "A"), operand(b, n, "B"));
    elems.sort_unstable();
    elems.dedup();
    let op = AsyncOp {
        kind: AsyncKind::Wgmma,
        owner: g,
        group: None,
        elems,
        site,
    };
    smem.begin_read(clocks, reader, op);
    for (i, &[m, nn]) in c_map(n).iter().enumerate() {
        let (t, v) = (i / values, i % values);
        let (m, nn) = (m as usize, nn as usize);
        let s: f64 = (0..16).map(|k| av[m][k] * bv[nn][k]).sum();
        // SAFETY: thread t's accumulators, `values` of them, on its stack while it waits here
        let d = unsafe { &mut *acc[t].add(v) };
        let c = if accumulate { f64::from(*d) } else { 0.0 };
        *d = (s + c) as f32;
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
