//! The embedded PTX: every kernel is there, for every arch built, with no local memory, no call
//! and no integer division or remainder (the tile layouts are constants the compiler folded;
//! the GEMM's raster divides its block index by the run-time tile counts, twice per block).

use tessel_gpu::{all_kernels, KERNELS};

/// Every entry point: the registry's, the GEMMs' and the microbenchmarks'.
fn names() -> impl Iterator<Item = &'static str> {
    all_kernels().map(|k| k.name)
}

/// The body of `.entry name`.
fn entry<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("kernel {name} missing"));
    let body = &ptx[start..];
    let end = body.find("\n}\n").expect("end of the entry");
    &body[..end]
}

#[test]
fn every_kernel_for_every_arch() {
    assert!(!tessel::ptx::PTX.is_empty(), "no PTX embedded");
    for (arch, ptx) in tessel::ptx::PTX {
        assert!(ptx.contains(&format!(".target {arch}")), "{arch}");
        for k in names() {
            let body = entry(ptx, k);
            // integer division or remainder would be index math left to run time (the float
            // division of RMSNorm is arithmetic)
            for bad in ["div.s", "div.u", "rem.", ".local", "call"] {
                let allowed = if k.starts_with("gemm_") && bad.starts_with("div") {
                    2
                } else {
                    0
                };
                let found = body.matches(bad).count();
                assert!(found <= allowed, "{arch} {k}: {found} `{bad}` in the PTX");
            }
        }
    }
}

#[test]
fn tessel_ptx_prints_it() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessel"))
        .arg("ptx")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        tessel::ptx::PTX[0].1
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_tessel"))
        .args(["ptx", "--arch", "sm_1"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("sm_80 or newer"));
}

/// The shared-memory accesses of `body` whose instruction starts with `op` (`st.shared`,
/// `ld.shared`): each address as (register, immediate).
fn shared_addresses(body: &str, op: &str) -> Vec<(String, i64)> {
    body.lines()
        .map(str::trim)
        .filter(|l| l.starts_with(op))
        .map(|l| {
            let addr = &l[l.find('[').unwrap() + 1..l.find(']').unwrap()];
            match addr.split_once('+') {
                Some((r, imm)) => (r.to_string(), imm.parse().unwrap()),
                None => (addr.to_string(), 0),
            }
        })
        .collect()
}

/// A thread's values of the transpose's tile sit at constant coordinates from its origin
/// (`PLAN.value(v)`): in the padded f32 kernel every shared store (step 0, the shared tile
/// `(64,64):(65,1)`) is one base register plus an immediate, and the immediates are
/// `4 * offset(PLAN.value(v))` computed here from the same `const` layouts; every shared load
/// (step 1, the tile read transposed) likewise, at `4 * offset(j, i)` for value `(i, j)`.
#[test]
fn transpose_shared_offsets_are_immediates() {
    use std::collections::BTreeSet;
    use tessel_gpu::transpose::{Padded, SmemTile, PLAN, VALUES};
    let off = |i, j| 4 * <Padded<f32> as SmemTile<f32>>::offset(i, j);
    let values = (0..VALUES).map(|v| PLAN.value(v));
    let want_st: BTreeSet<i64> = values.clone().map(|[i, j]| off(i, j)).collect();
    let want_ld: BTreeSet<i64> = values.map(|[i, j]| off(j, i)).collect();
    assert_eq!((want_st.len(), want_ld.len()), (16, 16));
    for (arch, ptx) in tessel::ptx::PTX {
        let body = entry(ptx, "transpose_pad_f32");
        for (op, want) in [("st.shared", &want_st), ("ld.shared", &want_ld)] {
            let got = shared_addresses(body, op);
            let regs: BTreeSet<&str> = got.iter().map(|(r, _)| r.as_str()).collect();
            assert_eq!(
                regs.len(),
                1,
                "{arch} {op}: one base register, got {regs:?}"
            );
            let imms: BTreeSet<i64> = got.iter().map(|&(_, imm)| imm).collect();
            assert_eq!(&imms, want, "{arch} {op}: immediates");
        }
    }
}

/// The transposes' whole-tile path issues the thread's global loads (16 elements, 8 pairs, 4 or
/// 16 quads) before its first shared store (all in flight at once); the pairs' led kernel, its
/// staged rows' pairs before its first shared pair store.
#[test]
fn transpose_loads_before_it_stores() {
    for (arch, ptx) in tessel::ptx::PTX {
        for k in KERNELS.iter().filter(|k| k.name.starts_with("transpose")) {
            let body = entry(ptx, k.name);
            let first_store = body.find("st.shared").expect("a shared store");
            if k.name.starts_with("transpose_pairs_led") {
                // the staged rows as pairs, each thread's 10 (16-bit: 80 rows) or 9 (f32: 72)
                // loaded before their first shared store (the thread's pair that ends a row
                // among them or not); the windows written as pairs
                let (pair, values) = if k.name.ends_with("f32") {
                    (64, 9)
                } else {
                    (32, 10)
                };
                let store = format!("st.shared.b{pair}");
                let first = body.find(&store).expect("a shared pair store");
                let load = format!("ld.global.b{pair} ");
                let loads = body[..first].matches(&load).count();
                assert!(
                    (values..=values + 1).contains(&loads),
                    "{arch} {}: {loads} `{load}` before the first `{store}`",
                    k.name
                );
                let op = format!("st.global.b{pair}");
                assert!(body.contains(&op), "{arch} {}: no `{op}`", k.name);
                continue;
            }
            if k.name.starts_with("transpose_pairs") {
                // 8 pairs, each one access of twice the element's width (the tiles that move
                // element by element have loads of their own)
                let pair = if k.name.ends_with("f32") { 64 } else { 32 };
                let load = format!("ld.global.b{pair} ");
                let loads = body[..first_store].matches(&load).count();
                assert_eq!(
                    loads, 8,
                    "{arch} {}: `{load}` before the first shared store",
                    k.name
                );
                for op in [format!("st.shared.b{pair}"), format!("st.global.b{pair}")] {
                    assert!(body.contains(&op), "{arch} {}: no `{op}`", k.name);
                }
                continue;
            }
            if k.name.starts_with("transpose_quads") {
                // 4 quads of the 64x64 tile (f32) or 16 of the wide 128x128 one (16-bit), each
                // one access of four times the element's width
                let (load, stores, quads) = if k.name.ends_with("f32") {
                    (
                        "ld.global.v4.u32 ",
                        ["st.shared.v4.b32", "st.global.v4.u32"],
                        4,
                    )
                } else {
                    ("ld.global.b64 ", ["st.shared.b64", "st.global.b64"], 16)
                };
                let loads = body[..first_store].matches(load).count();
                assert_eq!(
                    loads, quads,
                    "{arch} {}: `{load}` before the first shared store",
                    k.name
                );
                for op in stores {
                    assert!(body.contains(op), "{arch} {}: no `{op}`", k.name);
                }
                continue;
            }
            let loads = body[..first_store].matches("ld.global").count();
            assert_eq!(
                loads, 16,
                "{arch} {}: global loads before the first shared store",
                k.name
            );
        }
    }
}

/// Each kernel takes the parameters its launcher passes (a launch with too few arguments reads
/// garbage: seen once as a segfault inside `cuLaunchKernel`): a declared kernel one by-value
/// `Params` struct of exactly the size the host builds.
#[test]
fn kernels_take_the_launchers_parameters() {
    for (arch, ptx) in tessel::ptx::PTX {
        // the copy engine's kernels exist in sm_90 (and newer) PTX only
        let sm90 = arch[3..5].parse::<u32>().is_ok_and(|a| a >= 90);
        let extra = tessel_gpu::sm90_kernels().filter(|_| sm90);
        // and the wgmma ones in sm_90a PTX only
        let extra = extra.chain(
            tessel_gpu::sm90a_kernels()
                .chain(tessel_gpu::checks::sm90a::KERNELS)
                .filter(|_| *arch == "sm_90a"),
        );
        // the same check a first launch makes of a user's entry
        for k in all_kernels().chain(extra).chain(tessel_gpu::TEST_KERNELS) {
            if let Err(e) = host::runtime::module::check_entry(ptx, k.name, k.param_bytes) {
                panic!("{arch}: {e}");
            }
        }
    }
}

/// Instructions in an entry's body: its lines that end a statement, less directives and labels.
fn instructions(body: &str) -> usize {
    body.lines()
        .map(str::trim)
        .filter(|l| l.contains(';') && !l.starts_with(['.', '/', '$', '{', '}', ')']))
        .count()
}

/// The kernels written on the Tensor API cost at most 5% more instructions than the hand-indexed
/// ones they replaced (`gpu/ptx-baseline.txt`, the sm_90 PTX before the rewrite).
#[test]
fn tensor_api_kernels_cost_at_most_five_percent_more() {
    let base = include_str!("../gpu/ptx-baseline.txt");
    let Some((_, ptx)) = tessel::ptx::PTX.iter().find(|(a, _)| *a == "sm_90") else {
        eprintln!("tests/ptx.rs: no sm_90 PTX built; the instruction counts are not compared");
        return;
    };
    let mut compared = 0;
    for line in base.lines().filter(|l| !l.starts_with('#')) {
        let (name, count) = line.split_once(' ').unwrap();
        let was: usize = count.parse().unwrap();
        let now = instructions(entry(ptx, name));
        eprintln!("{name}: {was} -> {now} instructions");
        assert!(
            now * 100 <= was * 105,
            "{name}: {now} instructions, more than 5% over the {was} before the rewrite"
        );
        compared += 1;
    }
    assert_eq!(compared, 11, "every kernel of the baseline is compared");
}

/// The GEMM's main loops are unrolled over a k-tile: each of its two (16-byte loads, element
/// loads) issues `MMA_M * MMA_N * K_STEPS` `mma.sync` and `(MMA_M + MMA_N / 2)` `ldmatrix.x4`
/// per k-step (plus one k-step's before the loop), with no register array left in memory.
#[test]
fn gemm_main_loops_are_unrolled() {
    use tessel_gpu::gemm::{K_STEPS, MMA_M, MMA_N};
    for (arch, ptx) in tessel::ptx::PTX {
        for k in tessel_gpu::GEMM_KERNELS {
            let body = entry(ptx, k.name);
            let mma = body.matches("mma.sync.aligned.m16n8k16").count() as i64;
            assert_eq!(mma, 2 * MMA_M * MMA_N * K_STEPS, "{arch} {}", k.name);
            let ldsm = body.matches("ldmatrix.sync.aligned.m8n8.x4").count() as i64;
            assert_eq!(
                ldsm,
                2 * (MMA_M + MMA_N / 2) * (K_STEPS + 1),
                "{arch} {}",
                k.name
            );
        }
    }
}

/// The sm_90a entries (wgmma) are in the sm_90a PTX, without local memory or calls, and
/// `gemm_sm90`'s carry the directives `ptx_directives!` declares: `.maxntid` (so that `ptxas`
/// budgets registers for the block `setmaxnreg` reshapes) and `.reqnctapercluster` (its
/// launches make clusters of `CLUSTER_M`), written by build.rs into the entry's header.
#[test]
fn sm90a_entries_and_their_directives() {
    let Some((_, ptx)) = tessel::ptx::PTX.iter().find(|(a, _)| *a == "sm_90a") else {
        eprintln!("SKIPPED: no sm_90a PTX built (TESSEL_ARCH)");
        return;
    };
    let checks = tessel_gpu::checks::sm90a::KERNELS;
    for k in tessel_gpu::sm90a_kernels().chain(checks).map(|k| k.name) {
        let body = entry(ptx, k);
        for bad in [".local", "call"] {
            assert!(!body.contains(bad), "{k}: `{bad}` in the PTX");
        }
        let header = &body[..body.find("\n{\n").expect("the body")];
        let has = |d: &str| header.lines().any(|l| l == d);
        if k.starts_with("gemm_sm90_") {
            let threads = tessel_gpu::gemm_sm90::THREADS;
            let cluster = tessel_gpu::gemm_sm90::CLUSTER_M;
            assert!(has(&format!(".maxntid {threads}, 1, 1")), "{k}: {header}");
            assert!(
                has(&format!(".reqnctapercluster {cluster}, 1, 1")),
                "{k}: {header}"
            );
        } else if k.starts_with("attention_") {
            // attention_{type}_d{D}[_causal, _long]: a producer and consumers(D) warpgroups
            let d: i64 = k
                .split("_d")
                .nth(1)
                .and_then(|r| r.split('_').next())
                .and_then(|d| d.parse().ok())
                .expect("attention's entry names its D");
            let threads = 128 * (1 + tessel_gpu::attention::consumers(d));
            assert!(has(&format!(".maxntid {threads}, 1, 1")), "{k}: {header}");
        } else {
            assert!(!header.contains(".maxntid"), "{k}: {header}");
        }
    }
}
