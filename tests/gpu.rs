//! The kernels on a GPU, against their host executions. Without a driver or a device these tests
//! say so and pass (CI has no GPU); `tessel run all` on a GPU machine is the full check. Inputs are
//! random: each test prints its seed, and `TESSEL_SEED=N` replays it.

use half::{bf16, f16};
use host::elem::{Elem, Paired, Quads, Rng};
use host::jobs;
use host::runtime::gpu::{Gpu, GpuError};
use host::tune::CopyConfig;
use tessel_gpu::transpose::{Padded, Swizzled};

/// The GPU, or `None` (with a message) where there is none.
fn gpu() -> Option<Gpu> {
    match Gpu::open(0, tessel::ptx::PTX) {
        Ok(g) => Some(g),
        Err(e @ (GpuError::NoDriver | GpuError::NoDevice(_))) => {
            // straight to stderr, past the test harness's capture: a skip must be seen
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "tests/gpu.rs: SKIPPED, {e}");
            None
        }
        Err(e) => panic!("a GPU is present but unusable: {e}"),
    }
}

/// The test's generator: `TESSEL_SEED`, or a fresh seed; printed with the command that replays it.
fn seeded(test: &str) -> Rng {
    Rng::from_env_or_fresh(test, "--test gpu")
}

#[test]
fn copy_matches_the_host_execution() {
    let Some(g) = gpu() else { return };
    let mut rng = seeded("copy_matches_the_host_execution");
    // every configuration the tuner may choose on this device
    let cands = CopyConfig::candidates(g.rmsnorm_smem(), g.has_kernel("bulk_copy_f32"));
    for cfg in cands {
        for n in [1, 5, 4096, 4097, 1_000_003] {
            let v = jobs::run_copy::<f32>(Some(&g), n, cfg, &mut rng).unwrap();
            assert!(v.ok, "{}", v.line);
            let v = jobs::run_copy::<bf16>(Some(&g), n, cfg, &mut rng).unwrap();
            assert!(v.ok, "{}", v.line);
        }
    }
}

#[test]
fn transpose_matches_the_host_execution() {
    let Some(g) = gpu() else { return };
    let mut rng = seeded("transpose_matches_the_host_execution");
    // the driver's shared-memory carveout and residency, 44% and 3 blocks per SM, 1% (one block
    // of a 16 KiB tile per SM) and 1 block
    for (k, rc) in [(1, 1), (63, 65), (64, 64), (1031, 2053), (256, 320)]
        .into_iter()
        .enumerate()
    {
        let r = [(0, 0), (44, 3), (1, 1)][k % 3];
        let v = jobs::run_transpose::<f32, Padded<f32>>(Some(&g), rc, r, &mut rng).unwrap();
        assert!(v.ok, "{}", v.line);
        let v = jobs::run_transpose::<bf16, Swizzled<bf16>>(Some(&g), rc, r, &mut rng).unwrap();
        assert!(v.ok, "{}", v.line);
        let v = jobs::run_transpose::<f16, Quads<f16>>(Some(&g), rc, r, &mut rng).unwrap();
        assert!(v.ok, "{}", v.line);
        let v = jobs::run_transpose::<f32, Quads<f32>>(Some(&g), rc, r, &mut rng).unwrap();
        assert!(v.ok, "{}", v.line);
    }
    for cr in [(101, 0), (0, 9), (-1, 0)] {
        let e = jobs::run_transpose::<f32, Paired<f32>>(Some(&g), (64, 64), cr, &mut rng);
        let e = e.unwrap_err().to_string();
        assert!(e.contains("0 (the driver's choice) to 100 %, not"), "{e}");
    }
}

#[test]
fn bad_layouts_are_refused() {
    let Some(g) = gpu() else { return };
    let l = |s: &str| layout_core::Layout::parse(s).unwrap();
    let a = g.filled(l("(4,8):(8,1)"), 1.0f32).unwrap();
    let mut b = g.filled(l("(4,8):(8,1)"), 0.5f32).unwrap();
    let e = g.transpose::<f32, Padded<f32>>(&a, &mut b).unwrap_err();
    assert!(e.to_string().contains("dst of shape (cols, rows)"), "{e}");
    let mut c = g.filled(l("32:1"), 0.5f32).unwrap();
    assert!(g.copy(&a, &mut c).is_err());
}

/// RMSNorm of padded rows (`x` and `y` with different row strides above `N`), with each count of
/// warps per row: the device's `y` buffer, padding included, bit-equal to the host execution's
/// (the padding stays poisoned).
#[test]
fn rmsnorm_of_padded_rows_matches_the_host_execution() {
    use host::elem::RmsElem;
    use host::tune::RmsConfig;
    use layout_core::{FlatLayout, Layout};
    use tessel_gpu::rmsnorm::WARPS;
    let Some(g) = gpu() else { return };
    let mut rng = seeded("rmsnorm_of_padded_rows_matches_the_host_execution");
    fn check<T: RmsElem>(g: &Gpu, rng: &mut Rng, (m, n, ldx, ldy): (i64, i64, i64, i64)) {
        let flat = |ld| FlatLayout::new([m, n], [ld, 1]).unwrap();
        let (lx, ly, lw) = (flat(ldx), flat(ldy), FlatLayout::new([n], [1]).unwrap());
        let x: Vec<T> = rng.fill(((m - 1) * ldx + n) as usize);
        let w: Vec<T> = rng.fill(n as usize);
        for warps in WARPS {
            let cfg = RmsConfig {
                warps,
                smem: g.rmsnorm_smem(),
            };
            let staged = T::staged_for(warps, n, cfg.smem);
            let host = host::checks::exec::rmsnorm_strided(
                &x,
                lx,
                &w,
                lw,
                ly,
                1e-6,
                (warps, staged),
                T::poison(),
            )
            .unwrap();
            let to = |l: FlatLayout<2>| l.to_layout().unwrap();
            let dx = g.upload(&x, to(lx)).unwrap();
            let dw = g.upload(&w, Layout::int(n, 1).unwrap()).unwrap();
            let mut dy = g.filled(to(ly), T::poison()).unwrap();
            g.rmsnorm_with(&dx, &dw, &mut dy, 1e-6, cfg).unwrap();
            let y = g.download(&dy).unwrap();
            let bad = y
                .iter()
                .zip(&host.out)
                .position(|(a, b)| a.bits() != b.bits());
            assert_eq!(bad, None, "{} {m}x{n} ld {ldx}/{ldy} {cfg}", T::NAME);
        }
    }
    for shape in [
        (1, 8, 16, 8),
        (37, 2056, 2064, 2112),
        (14, 4096, 4160, 4104),
        (5, 12296, 12304, 12312),
    ] {
        check::<bf16>(&g, &mut rng, shape);
        check::<f32>(&g, &mut rng, shape);
    }
    // f32 atoms are 4 wide
    check::<f32>(&g, &mut rng, (9, 1004, 1012, 1020));
    // and a refusal names its condition
    let l = |s: &str| layout_core::Layout::parse(s).unwrap();
    let x = g.filled(l("(4,64):(72,1)"), bf16::from_f32(1.0)).unwrap();
    let w = g.filled(l("64:1"), bf16::from_f32(1.0)).unwrap();
    let mut y = g.filled(l("(4,64):(8,1)"), bf16::from_f32(0.0)).unwrap();
    let e = g.rmsnorm(&x, &w, &mut y, 1e-6).unwrap_err();
    assert!(
        e.to_string()
            .contains("rmsnorm_bf16: a row-wise kernel needs y's rows not to overlap"),
        "{e}"
    );
}

/// cuBLAS, or `None` (with a message) where `libcublas.so` cannot be loaded.
fn blas(g: &Gpu) -> Option<host::blas::Blas> {
    match host::blas::Blas::new(g) {
        Ok(b) => Some(b),
        Err(e @ GpuError::NoBlas(_)) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "tests/gpu.rs: cuBLAS test SKIPPED, {e}");
            None
        }
        Err(e) => panic!("cuBLAS is present but unusable: {e}"),
    }
}

/// cuBLAS's `gemm_tn` against the `f64` reference, within `gemm_tolerance`'s bound: packed and
/// padded layouts; the inputs' padding poisoned (reading it would give NaNs), `C` poisoned where
/// `beta == 0` (cuBLAS must write every element) and its padding poisoned always (it must stay so).
#[test]
fn cublas_gemm_tn_matches_the_f64_reference() {
    use host::blas::{check_gemm, gemm_reference, gemm_tolerance, BlasElem, GemmOut};
    use host::elem::Elem;
    use layout_core::{FlatLayout, Layout};
    let Some(g) = gpu() else { return };
    let Some(blas) = blas(&g) else { return };
    let mut rng = seeded("cublas_gemm_tn_matches_the_f64_reference");

    /// `(rows,cols):(ld,1)`.
    fn rows(rows: usize, cols: usize, ld: usize) -> Layout {
        let [r, c, ld] = [rows, cols, ld].map(|v| v as i64);
        FlatLayout::new([r, c], [ld, 1])
            .unwrap()
            .to_layout()
            .unwrap()
    }
    /// Packed `(rows,cols)` in a buffer with row stride `ld`, the padding poisoned.
    fn pad<T: Elem>(packed: &[T], cols: usize, ld: usize) -> Vec<T> {
        let r = packed.len() / cols;
        let mut out = vec![T::poison(); (r - 1) * ld + cols];
        for (i, row) in packed.chunks(cols).enumerate() {
            out[i * ld..i * ld + cols].copy_from_slice(row);
        }
        out
    }
    fn check<I: BlasElem, O: GemmOut<I>>(
        g: &Gpu,
        blas: &host::blas::Blas,
        rng: &mut Rng,
        (m, n, k): (usize, usize, usize),
        (lda, ldb, ldc): (usize, usize, usize),
        (alpha, beta): (f32, f32),
    ) {
        let what = format!(
            "{} -> {} {m}x{n}x{k} ld {lda}/{ldb}/{ldc} alpha {alpha} beta {beta}",
            I::NAME,
            O::NAME
        );
        let (a, b): (Vec<I>, Vec<I>) = (rng.fill(m * k), rng.fill(n * k));
        let c: Vec<O> = if beta == 0.0 {
            vec![O::poison(); m * n]
        } else {
            rng.fill(m * n)
        };
        let da = g.upload(&pad(&a, k, lda), rows(m, k, lda)).unwrap();
        let db = g.upload(&pad(&b, k, ldb), rows(n, k, ldb)).unwrap();
        let mut dc = g.upload(&pad(&c, n, ldc), rows(m, n, ldc)).unwrap();
        blas.gemm_tn(&da, &db, &mut dc, alpha, beta)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let out = g.download(&dc).unwrap();
        let stray = (0..out.len()).find(|&i| i % ldc >= n && out[i].bits() != O::poison().bits());
        assert_eq!(stray, None, "{what}: C's padding written");
        let got: Vec<O> = out.chunks(ldc).flat_map(|row| row[..n].to_vec()).collect();
        let want = gemm_reference(&a, &b, &c, m, n, k, alpha, beta);
        let tol = gemm_tolerance(&a, &b, &c, m, n, k, alpha, beta);
        let r = check_gemm(&got, &want, &tol, n);
        assert!(r.ok(), "{what}: {r}");
    }

    for (m, n, k) in [(1, 1, 1), (17, 33, 65), (128, 256, 64)] {
        for lds in [(k, k, n), (k + 7, k + 3, n + 5)] {
            for ab in [(1.0, 0.0), (1.5, -0.75)] {
                let mnk = (m, n, k);
                check::<bf16, bf16>(&g, &blas, &mut rng, mnk, lds, ab);
                check::<bf16, f32>(&g, &blas, &mut rng, mnk, lds, ab);
                check::<f16, f16>(&g, &blas, &mut rng, mnk, lds, ab);
                check::<f16, f32>(&g, &blas, &mut rng, mnk, lds, ab);
            }
        }
    }

    // refusals name their condition
    let one = bf16::from_f32(1.0);
    let a = g.filled(rows(4, 8, 8), one).unwrap();
    let b = g.filled(rows(6, 8, 8), one).unwrap();
    let mut c = g.filled(rows(4, 6, 6), 0f32).unwrap();
    assert!(blas.gemm_tn(&a, &b, &mut c, 1.0, 0.0).is_ok());
    let col_major = g
        .filled(Layout::parse("(4,8):(1,4)").unwrap(), one)
        .unwrap();
    let e = blas.gemm_tn(&col_major, &b, &mut c, 1.0, 0.0).unwrap_err();
    assert!(e.to_string().contains("a needs unit stride along K"), "{e}");
    let b7 = g.filled(rows(6, 7, 7), one).unwrap();
    let e = blas.gemm_tn(&a, &b7, &mut c, 1.0, 0.0).unwrap_err();
    assert!(e.to_string().contains("of one K"), "{e}");
    let mut c5 = g.filled(rows(4, 5, 5), 0f32).unwrap();
    let e = blas.gemm_tn(&a, &b, &mut c5, 1.0, 0.0).unwrap_err();
    assert!(e.to_string().contains("c of shape (M,N) = (4,6)"), "{e}");
}

/// The copy engine moves every element of ragged tensors box by box, for every swizzle mode: the
/// kernel reads the box through tessel's swizzle for that mode (`TmaSwizzle::swizzle`), so a wrong
/// mapping between the two would show as wrong elements — and does, when the kernel is told
/// another mode's swizzle.
#[test]
fn tma_copy_moves_every_element_through_each_swizzle() {
    use host::runtime::tma::{encode_2d, TmaElem, TmaSwizzle, MODES};
    let Some(g) = gpu() else { return };
    if !g.arch().starts_with("sm_9") && !g.arch().starts_with("sm_1") {
        eprintln!(
            "tests/gpu.rs: TMA test SKIPPED, {} has no copy engine",
            g.arch()
        );
        return;
    }
    let mut rng = seeded("tma_copy_moves_every_element_through_each_swizzle");
    fn case<T: TmaElem>(g: &Gpu, rng: &mut Rng, rows: usize, cols: usize, ld: usize) {
        let l = |r: usize, c: usize, s: usize| {
            layout_core::Layout::parse(&format!("({r},{c}):({s},1)")).unwrap()
        };
        let src = rng.fill::<T>(rows * ld);
        let s = g
            .upload_buffer(&src)
            .unwrap()
            .view(0, l(rows, cols, ld))
            .unwrap();
        let bytes = std::mem::size_of::<T>();
        for mode in MODES {
            let span = if mode == TmaSwizzle::None {
                64
            } else {
                mode.row_bytes() as usize
            };
            let boxed = [8 + (rng.next_u64() % 3) as i64 * 8, (span / bytes) as i64];
            let map = encode_2d(g, &s, boxed, mode).unwrap();
            let mut d = g.filled(l(rows, cols, cols), T::poison()).unwrap();
            g.tma_copy(&map, &mut d).unwrap();
            let got = g.download(&d).unwrap();
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(
                        got[r * cols + c].bits(),
                        src[r * ld + c].bits(),
                        "{} {rows}x{cols} (ld {ld}) {mode:?} box {boxed:?}: element ({r},{c})",
                        T::NAME
                    );
                }
            }
        }
    }
    case::<f32>(&g, &mut rng, 300, 517, 520);
    case::<bf16>(&g, &mut rng, 77, 1000, 1000);
    case::<f32>(&g, &mut rng, 1, 4, 4);
    // the 128-byte mode read as if it were the 64-byte one: elements move
    let src = rng.fill::<bf16>(64 * 64);
    let l = layout_core::Layout::parse("(64,64):(64,1)").unwrap();
    let s = g.upload(&src, l).unwrap();
    let map = encode_2d(&g, &s, [64, 64], TmaSwizzle::B128).unwrap();
    let wrong = host::runtime::tma::TensorMap::with_mode(map, TmaSwizzle::B64);
    let mut d = g.filled(l, bf16::poison()).unwrap();
    g.tma_copy(&wrong, &mut d).unwrap();
    let got = g.download(&d).unwrap();
    assert!(got.iter().zip(&src).any(|(a, b)| a.bits() != b.bits()));
    // what the copy engine cannot take is refused, naming the condition
    let e = encode_2d(&g, &s, [64, 65], TmaSwizzle::B128)
        .unwrap_err()
        .to_string();
    assert!(e.contains("multiple of 16 bytes"), "{e}");
    let e = encode_2d(&g, &s, [8, 128], TmaSwizzle::B128)
        .unwrap_err()
        .to_string();
    assert!(e.contains("at most 128 bytes"), "{e}");
}

/// The device functions no kernel uses (shuffles, votes, atomics), through a user's path:
/// `Gpu::load`, `Module::launch_raw` of a plain entry.
#[test]
fn device_prims_give_the_known_values() {
    use tessel_gpu::prims::{BLOCKS, EXPECTED, THREADS, WORDS};
    let Some(g) = gpu() else { return };
    let module = g.load(tessel::ptx::PTX).unwrap();
    // 32-bit words, carried as f32 bits (the buffers' element types are the kernels')
    let mut init = vec![0f32; WORDS];
    init[3] = f32::from_bits(u32::MAX);
    let out = g.upload_buffer(&init).unwrap();
    let p = out.param::<1>("out").unwrap().engine().0 as *mut u32;
    let shape = tessel_gpu::ctx::Geometry {
        grid: [i64::from(BLOCKS), 1],
        threads: i64::from(THREADS),
        smem_bytes: 0,
    };
    // an entry is checked at its first launch: its name, its parameter's size (nothing runs)
    // SAFETY: refused before any launch
    let e = unsafe { module.launch_raw("device_prims", shape, (p, p)) }.unwrap_err();
    assert!(
        e.to_string().contains("8 bytes in the PTX, 16 on the host"),
        "{e}"
    );
    // SAFETY: as above
    let e = unsafe { module.launch_raw("no_such_entry", shape, p) }.unwrap_err();
    assert!(
        e.to_string().contains("no entry point no_such_entry"),
        "{e}"
    );
    // SAFETY: the entry takes one pointer to WORDS words, initialised as prims says
    unsafe { module.launch_raw("device_prims", shape, p) }.unwrap();
    // an entry found is checked again at each launch
    // SAFETY: refused before any launch
    let e = unsafe { module.launch_raw("device_prims", shape, (p, p)) }.unwrap_err();
    assert!(
        e.to_string().contains("8 bytes in the PTX, 16 on the host"),
        "{e}"
    );
    let got = g.download(&out).unwrap();
    for (i, want, what) in EXPECTED {
        assert_eq!(got[i].to_bits(), want, "out[{i}]: {what}");
    }
}

/// `mma_tile` (`ldmatrix`, `ldmatrix.trans`, `mma.sync.m16n8k16`) on the GPU against the same
/// kernel on the simulated GPU: bit for bit where every partial sum is exact (small integers),
/// within `Inputs::bound` elsewhere (the tensor cores' order and truncation are not the
/// simulator's); outputs poisoned with NaN.
#[test]
fn mma_tile_matches_the_simulated_gpu() {
    let Some(g) = gpu() else { return };
    let mut rng = seeded("mma_tile_matches_the_simulated_gpu");
    mma_tile_on::<bf16>(&g, &mut rng);
    mma_tile_on::<f16>(&g, &mut rng);
}

use tessel_gpu::mem::{Device, Gmem};
use tessel_gpu::mma_tile::{MmaTile, MmaTileParams};

fn mma_tile_on<I: tessel_gpu::mma::MmaIn + Default + Elem>(g: &Gpu, rng: &mut Rng)
where
    MmaTile<I>: tessel_gpu::ctx::Entry<Params<Device> = MmaTileParams<Gmem<I>, Gmem<f32>>>,
{
    use host::checks::mma_tile::{simulate, Inputs, N};
    let module = g.load(tessel::ptx::PTX).unwrap();
    let l = layout_core::Layout::parse("(16,16):(16,1)").unwrap();
    let (mut equal, mut total) = (0, 0);
    for small in [true, false] {
        for _ in 0..8 {
            let x = Inputs::<I>::new(rng, small);
            let (sd, sdt) = simulate::<I, false>(&x, 1).unwrap();
            let up = |v: &[I]| g.upload(v, l).unwrap();
            let (a, b, bt) = (up(&x.a), up(&x.b), up(&x.bt));
            let c = g.upload(&x.c, l).unwrap();
            let d = g.filled(l, f32::NAN).unwrap();
            let dt = g.filled(l, f32::NAN).unwrap();
            let p = MmaTileParams {
                a: a.param("a").unwrap(),
                b: b.param("b").unwrap(),
                bt: bt.param("bt").unwrap(),
                c: c.param("c").unwrap(),
                d: d.param("d").unwrap(),
                dt: dt.param("dt").unwrap(),
            };
            module.launch::<MmaTile<I>>(p).unwrap();
            let (gd, gdt) = (g.download(&d).unwrap(), g.download(&dt).unwrap());
            for (trans, gv, sv) in [(false, &gd, &sd), (true, &gdt, &sdt)] {
                for i in 0..N {
                    let what = format!("{} element {i}, trans {trans}", I::NAME);
                    if small {
                        assert_eq!(gv[i].to_bits(), sv[i].to_bits(), "{what}: {}", gv[i]);
                    } else {
                        let err = (f64::from(gv[i]) - f64::from(sv[i])).abs();
                        assert!(err <= x.bound(i, trans), "{what}: {} vs {}", gv[i], sv[i]);
                        total += 1;
                        equal += (gv[i].to_bits() == sv[i].to_bits()) as usize;
                    }
                }
            }
        }
    }
    println!(
        "mma_tile {}: small integers bit-equal; random inputs within the bound, {equal} of \
         {total} bit-equal to the simulated GPU",
        I::NAME
    );
}

/// tessel's elementary functions (`exp2`, `exp`, `log`, `tanh`, `sqrt`, `rsqrt`) on the GPU, bit
/// for bit as the simulated GPU computes them (the same `math_check` kernel on both; a NaN is
/// any NaN): random arguments over the whole `f32` range and the edges (zeros, subnormals,
/// infinities, NaN).
#[test]
fn math_is_bit_equal_on_the_gpu_and_the_simulated_gpu() {
    use host::sim::{self, HostMem, Options, Sim};
    use layout_core::{FlatLayout, FlatTensor};
    use tessel_gpu::ctx::Kernel;
    use tessel_gpu::math_check::{MathCheck, MathParams, FUNCS};
    let Some(g) = gpu() else { return };
    let mut rng = seeded("math_is_bit_equal_on_the_gpu_and_the_simulated_gpu");
    let mut x: Vec<f32> = (0..100_000)
        .map(|i| match i % 4 {
            // any bits, and values near 0 to 20 in magnitude
            0 => f32::from_bits(rng.next_u64() as u32),
            _ => ((rng.uniform() - 0.5) * 40.0) as f32,
        })
        .collect();
    x.extend([
        0.0,
        -0.0,
        1.0,
        1e-45,
        -1e-45,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::INFINITY,
    ]);
    x.extend([f32::NEG_INFINITY, f32::NAN, 0.55, 9.1, -9.1, 128.0, -150.0]);
    let (n, f) = (x.len(), FUNCS.len());
    let (lx, ly) = (
        FlatLayout::new([n as i64], [1]).unwrap(),
        FlatLayout::new([n as i64, f as i64], [f as i64, 1]).unwrap(),
    );
    // the simulated GPU
    let (mut xs, mut reads) = (x.clone(), vec![0; n]);
    let (mut want, mut writes) = (vec![f32::NAN; n * f], vec![0; n * f]);
    // SAFETY: the buffers outlive the launch and are reached only through these engines
    let p = unsafe {
        MathParams {
            x: FlatTensor::new(HostMem::new(&mut xs, &mut reads), lx),
            y: FlatTensor::new(HostMem::new(&mut want, &mut writes).once(), ly),
        }
    };
    let p = MathCheck::prepare::<Sim>(p).unwrap();
    sim::launch::<MathCheck>(&p, MathCheck::geometry::<Sim>(&p, 1, 0), Options::default()).unwrap();
    // the GPU
    let dx = g.upload(&x, lx.to_layout().unwrap()).unwrap();
    let dy = g.filled(ly.to_layout().unwrap(), f32::NAN).unwrap();
    let p = MathParams {
        x: dx.param("x").unwrap(),
        y: dy.param("y").unwrap(),
    };
    let module = g.load(tessel::ptx::PTX).unwrap();
    module.launch::<MathCheck>(p).unwrap();
    let got = g.download(&dy).unwrap();
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        let (e, k) = (i / f, i % f);
        // NaN payloads are the hardware's (the device's sqrt gives its canonical NaN)
        let same = a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan();
        assert!(same, "{}({:e}): GPU {a:e}, simulated {b:e}", FUNCS[k], x[e]);
    }
    println!("math_check: {n} arguments x {f} functions, all bit-equal");
}

/// `gemm_wg` (the copy engine's loads through tensor maps, mbarriers, `wgmma.m64n128k16`) on the
/// GPU against the same kernel on the simulated GPU and the f64 reference: bit for bit on small
/// integers (every partial sum exact), within `Inputs::bound` of the reference on random inputs;
/// C poisoned with NaN. sm_90 devices only (the sm_90a PTX).
#[test]
fn gemm_wg_matches_the_simulated_gpu() {
    let Some(g) = gpu() else { return };
    if !g.has_kernel("gemm_sm90_bf16_f32") {
        eprintln!("gemm_wg_matches_the_simulated_gpu: SKIPPED, no sm_90a PTX for this device");
        return;
    }
    let mut rng = seeded("gemm_wg_matches_the_simulated_gpu");
    gemm_wg_on::<bf16>(&g, &mut rng);
    gemm_wg_on::<f16>(&g, &mut rng);
}

use tessel_gpu::gemm_wg::{GemmWg, GemmWgParams};
use tessel_gpu::tma::GmemTensorMap;

fn gemm_wg_on<I: tessel_gpu::mma::MmaIn + Default + host::runtime::tma::TmaElem>(
    g: &Gpu,
    rng: &mut Rng,
) where
    GemmWg<I>: tessel_gpu::ctx::Entry<Params<Device> = GemmWgParams<GmemTensorMap<I>, Gmem<f32>>>,
{
    use host::checks::gemm_wg::{simulate, Inputs};
    use host::runtime::tma::{encode_2d, TmaSwizzle};
    use tessel_gpu::gemm_wg::{BK, BM, BN};
    let module = g.load(tessel::ptx::PTX).unwrap();
    let (mut equal, mut total) = (0, 0);
    for mnk in [
        [1, 1, 8],
        [17, 33, 72],
        [130, 264, 136],
        [257, 512, 72],
        [300, 200, 1024],
    ] {
        for small in [true, false] {
            let x = Inputs::<I>::new(rng, mnk, small);
            let [m, n, k] = mnk.map(|v| v as i64);
            let sim = simulate::<I, 0>(&x, 1).unwrap();
            let want = x.reference();
            let lay = |r: i64, c: i64| layout_core::Layout::parse(&format!("({r},{c}):({c},1)"));
            let a = g.upload(&x.a, lay(m, k).unwrap()).unwrap();
            let b = g.upload(&x.b, lay(n, k).unwrap()).unwrap();
            let c = g.filled(lay(m, n).unwrap(), f32::NAN).unwrap();
            let ma = encode_2d(g, &a, [BM, BK], TmaSwizzle::B128).unwrap();
            let mb = encode_2d(g, &b, [BN, BK], TmaSwizzle::B128).unwrap();
            let p = GemmWgParams {
                a: GmemTensorMap::new(ma.ptr()),
                b: GmemTensorMap::new(mb.ptr()),
                c: c.param("c").unwrap(),
                k,
            };
            module.launch::<GemmWg<I>>(p).unwrap();
            let got = g.download(&c).unwrap();
            for (e, (&gv, &sv)) in got.iter().zip(&sim).enumerate() {
                let what = format!("{} {mnk:?} element {e}", I::NAME);
                if small {
                    assert_eq!(gv.to_bits(), sv.to_bits(), "{what}: {gv} vs {sv}");
                } else {
                    let err = (f64::from(gv) - want[e]).abs();
                    assert!(err <= x.bound(e), "{what}: {gv} vs {}", want[e]);
                    total += 1;
                    equal += (gv.to_bits() == sv.to_bits()) as usize;
                }
            }
        }
    }
    println!(
        "gemm_wg {}: small integers bit-equal to the simulated GPU; random inputs within the \
         bound of the f64 reference, {equal} of {total} bit-equal to the simulated GPU",
        I::NAME
    );
}

/// `attention` (the FlashAttention forward: TMA, mbarriers, a producer and two consumer
/// warpgroups, wgmma from shared memory and from registers, `ex2.approx`) on the GPU: every row
/// of O and of the log-sum-exp within host::checks::attention's bound of the f64 reference, at
/// one tile and several, ragged lengths, GQA and MQA, causal and not, bf16 and f16, each head
/// dimension (64, 96, 128, 192, 256); outputs poisoned with NaN. sm_90 devices only (the sm_90a
/// PTX).
#[test]
fn attention_is_within_its_bound_on_the_gpu() {
    use host::checks::attention::Shape;
    let Some(g) = gpu() else { return };
    if !g.has_kernel("gemm_sm90_bf16_f32") {
        eprintln!("attention_is_within_its_bound_on_the_gpu: SKIPPED, no sm_90a PTX here");
        return;
    }
    let module = g.load(tessel::ptx::PTX).unwrap();
    let mut rng = seeded("attention_is_within_its_bound_on_the_gpu");
    let shape = |bh: [usize; 3], seq: [usize; 2], d: usize, causal: bool| Shape {
        batch: bh[0],
        heads: bh[1],
        kv_heads: bh[2],
        seq_q: seq[0],
        seq_k: seq[1],
        d,
        causal,
    };
    type A<I, const OV: usize, const C: bool> = tessel_gpu::attention::Attention<I, OV, 64, C>;
    let m = &module;
    attention_on::<bf16, A<bf16, 32, false>>(&g, m, &mut rng, shape([1, 1, 1], [1, 1], 64, false));
    attention_on::<bf16, A<bf16, 32, false>>(
        &g,
        m,
        &mut rng,
        shape([2, 4, 2], [130, 300], 64, false),
    );
    attention_on::<bf16, A<bf16, 32, true>>(
        &g,
        m,
        &mut rng,
        shape([1, 2, 1], [257, 257], 64, true),
    );
    attention_on::<f16, A<f16, 32, false>>(&g, m, &mut rng, shape([1, 3, 1], [64, 129], 64, false));
    attention_on::<bf16, A<bf16, 64, false>>(
        &g,
        m,
        &mut rng,
        shape([2, 2, 2], [384, 1000], 128, false),
    );
    attention_on::<bf16, A<bf16, 64, true>>(
        &g,
        m,
        &mut rng,
        shape([1, 4, 2], [700, 700], 128, true),
    );
    attention_on::<f16, A<f16, 64, false>>(
        &g,
        m,
        &mut rng,
        shape([1, 2, 2], [45, 257], 128, false),
    );
    attention_on::<bf16, A<bf16, 48, true>>(
        &g,
        m,
        &mut rng,
        shape([1, 2, 1], [300, 300], 96, true),
    );
    attention_on::<f16, A<f16, 48, false>>(
        &g,
        m,
        &mut rng,
        shape([2, 2, 2], [130, 517], 96, false),
    );
    // past D = 128, key tiles of 64 rows
    type A64<I, const OV: usize, const C: bool> = tessel_gpu::attention::Attention<I, OV, 32, C>;
    attention_on::<bf16, A64<bf16, 96, false>>(
        &g,
        m,
        &mut rng,
        shape([1, 4, 2], [200, 333], 192, false),
    );
    attention_on::<f16, A64<f16, 96, true>>(
        &g,
        m,
        &mut rng,
        shape([1, 2, 1], [257, 257], 192, true),
    );
    attention_on::<bf16, A64<bf16, 128, true>>(
        &g,
        m,
        &mut rng,
        shape([2, 2, 1], [190, 190], 256, true),
    );
    attention_on::<f16, A64<f16, 128, false>>(
        &g,
        m,
        &mut rng,
        shape([1, 3, 3], [65, 700], 256, false),
    );
    // FlashAttention's (B, S, H, D), and variable lengths packed (total, H, D): ragged, one
    // sequence of one query, one with no keys
    use host::checks::attention::Packing;
    let s = shape([2, 4, 2], [300, 517], 64, true);
    attention_packed_on::<bf16, A<bf16, 32, true>>(&g, m, &mut rng, s, Packing::SeqFirst);
    let s = shape([1, 2, 1], [200, 129], 256, false);
    attention_packed_on::<f16, A64<f16, 128, false>>(&g, m, &mut rng, s, Packing::SeqFirst);
    let lens = vec![[700, 1000], [1, 17], [64, 0], [333, 129]];
    for causal in [false, true] {
        let s = shape([4, 4, 2], [700, 1000], 128, causal);
        let p = Packing::Varlen(lens.clone());
        match causal {
            false => attention_packed_on::<bf16, A<bf16, 64, false>>(&g, m, &mut rng, s, p),
            true => attention_packed_on::<bf16, A<bf16, 64, true>>(&g, m, &mut rng, s, p),
        }
    }
    let s = shape([4, 2, 2], [700, 1000], 64, true);
    let p = Packing::Varlen(lens.clone());
    attention_packed_on::<f16, A<f16, 32, true>>(&g, m, &mut rng, s, p);
}

/// The parameters of `attention` on the GPU for inputs `I`.
type AttentionGpu<I> =
    tessel_gpu::attention::AttentionParams<GmemTensorMap<I>, Gmem<I>, Gmem<f32>, Gmem<i32>>;

fn attention_on<I, K>(
    g: &Gpu,
    module: &host::runtime::module::Module,
    rng: &mut Rng,
    shape: host::checks::attention::Shape,
) where
    I: host::jobs::attention::AttentionIn,
    K: tessel_gpu::ctx::Entry<Params<Device> = AttentionGpu<I>>,
{
    use host::checks::attention::Packing;
    attention_packed_on::<I, K>(g, module, rng, shape, Packing::HeadsFirst)
}

/// As `attention_on`, Q, K, V and O laid out as `packing` says.
fn attention_packed_on<I, K>(
    g: &Gpu,
    module: &host::runtime::module::Module,
    rng: &mut Rng,
    shape: host::checks::attention::Shape,
    packing: host::checks::attention::Packing,
) where
    I: host::jobs::attention::AttentionIn,
    K: tessel_gpu::ctx::Entry<Params<Device> = AttentionGpu<I>>,
{
    use host::checks::attention::{Inputs, OnGpu};
    use host::jobs::attention::{entry_name, key_tile};
    // the tensor maps' key tiles are the shape's kernel's: K must be that kernel
    assert_eq!(K::NAME, entry_name::<I>(&shape), "{shape:?}");
    let x = Inputs::<I>::packed(rng, shape, packing);
    let bn = key_tile(&shape);
    let run = OnGpu::new(g, &x, bn as i64).unwrap();
    module.launch::<K>(run.params).unwrap();
    let (o, lse) = run.outputs(g).unwrap();
    let rows: Vec<usize> = (0..x.rows()).collect();
    let worst = x
        .check(&o, &lse, &rows, bn)
        .unwrap_or_else(|e| panic!("{} {:?} {e}", I::NAME, x.packing));
    println!(
        "attention {} {shape:?} {:?}: every row within {worst:.3} of its bound",
        I::NAME,
        x.packing
    );
}

/// `cluster_check` (clusters of two blocks: distributed shared memory after `cluster_sync`, a box
/// multicast by the copy engine into both blocks, mbarrier arrivals across the cluster) on the
/// GPU: the outputs the simulated GPU gives, each element known (outputs poisoned with NaN).
#[test]
fn cluster_check_matches_the_simulated_gpu() {
    use host::runtime::tma::{encode_2d, TmaSwizzle};
    use host::sim::{self, HostMem, Options, Sim, SimTensorMap};
    use layout_core::{FlatLayout, FlatTensor, Layout};
    use tessel_gpu::cluster_check::{ClusterCheck, ClusterParams, BOX, COLS, ROWS, THREADS};
    use tessel_gpu::ctx::Kernel;
    let Some(g) = gpu() else { return };
    if !g.has_kernel("gemm_sm90_bf16_f32") {
        eprintln!("cluster_check_matches_the_simulated_gpu: SKIPPED, no sm_90a PTX here");
        return;
    }
    let mut rng = seeded("cluster_check_matches_the_simulated_gpu");
    let module = g.load(tessel::ptx::PTX).unwrap();
    let blocks = 2 * g.sms() as i64;
    // rows 16-byte multiples apart, as the copy engine needs; a box short of the tensor
    let (rows, cols) = (ROWS + 3, COLS + 4);
    let mut x: Vec<f32> = rng.fill((rows * cols) as usize);
    let (ly, lz) = (
        FlatLayout::new([blocks, THREADS], [THREADS, 1]).unwrap(),
        FlatLayout::new([blocks, BOX], [BOX, 1]).unwrap(),
    );
    // the simulated GPU
    let mut sy = vec![f32::NAN; (blocks * THREADS) as usize];
    let mut sz = vec![f32::NAN; (blocks * BOX) as usize];
    let mut rx = vec![0u32; x.len()];
    let (mut wy, mut wz) = (vec![0u32; sy.len()], vec![0u32; sz.len()]);
    // SAFETY: the buffers outlive the launch
    let p = unsafe {
        ClusterParams {
            x: SimTensorMap::new(
                HostMem::new(&mut x, &mut rx),
                [rows, cols],
                cols,
                [ROWS, COLS],
                TmaSwizzle::None,
            )
            .unwrap(),
            y: FlatTensor::new(HostMem::new(&mut sy, &mut wy).once(), ly),
            z: FlatTensor::new(HostMem::new(&mut sz, &mut wz).once(), lz),
        }
    };
    let p = ClusterCheck::<0>::prepare::<Sim>(p).unwrap();
    let geo = ClusterCheck::<0>::geometry::<Sim>(&p, 1, 0);
    sim::launch::<ClusterCheck>(&p, geo, Options { seed: 1 }).unwrap();
    // the GPU
    let lay = |r: i64, c: i64| Layout::parse(&format!("({r},{c}):({c},1)")).unwrap();
    let dx = g.upload(&x, lay(rows, cols)).unwrap();
    let map = encode_2d(&g, &dx, [ROWS, COLS], TmaSwizzle::None).unwrap();
    let dy = g.filled(lay(blocks, THREADS), f32::NAN).unwrap();
    let dz = g.filled(lay(blocks, BOX), f32::NAN).unwrap();
    let p = ClusterParams {
        x: GmemTensorMap::new(map.ptr()),
        y: dy.param("y").unwrap(),
        z: dz.param("z").unwrap(),
    };
    module.launch::<ClusterCheck>(p).unwrap();
    let (gy, gz) = (g.download(&dy).unwrap(), g.download(&dz).unwrap());
    for b in 0..blocks {
        for t in 0..THREADS {
            let i = (b * THREADS + t) as usize;
            assert_eq!(gy[i], ((100 * (b ^ 1) + t) as f32), "y[{b}, {t}]");
            assert_eq!(gy[i].to_bits(), sy[i].to_bits(), "y[{b}, {t}]");
        }
        for e in 0..BOX {
            let (i, (r, c)) = ((b * BOX + e) as usize, (e / COLS, e % COLS));
            assert_eq!(gz[i], x[(r * cols + c) as usize], "z[{b}, {e}]");
            assert_eq!(gz[i].to_bits(), sz[i].to_bits(), "z[{b}, {e}]");
        }
    }
    println!("cluster_check: {blocks} blocks in clusters of 2, as the simulated GPU");
}
