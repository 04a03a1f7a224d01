//! The LayerNorm kernels without a GPU: the simulated GPU against the f64 definition at ragged
//! sizes, padded rows and every staging depth, each output element written exactly once; the
//! checkers failing where they must; the conditions `prepare` refuses; and, when there is a GPU,
//! the GPU against both.

use layernorm::*;
use layernorm_kernels::{LayerNorm, LayerNormParams};
use tessel::prelude::*;

fn rng(test: &str) -> Rng {
    let seed = Rng::fresh_seed();
    eprintln!("{test}: seed {seed}");
    Rng::new(seed)
}

/// Rows of any count, columns a multiple of 8 (16 bytes of either type), padded rows.
const SHAPES: [(usize, usize, usize); 7] =
    [(1, 8, 0), (2, 24, 8), (5, 128, 0), (7, 264, 8), (4, 1024, 0), (9, 1032, 16), (3, 4096, 0)];

fn every_shape_and_depth<T: Dtype, K: Norm<T>>(test: &str) {
    let mut rng = rng(test);
    for (rows, cols, pad) in SHAPES {
        let s = Shape { rows, cols, ld: cols + pad };
        let tiles = K::staged_for(cols as i64, i64::MAX / 4);
        for staged in [0, 1, tiles, tiles + 3] {
            if let Err(e) = check_host::<T, K>(s, staged, &mut rng) {
                panic!("{s:?} staged {staged}: {e}");
            }
        }
    }
}

#[test]
fn f32_simulated_gpu_matches_f64() {
    every_shape_and_depth::<f32, LayerNorm<f32, 1>>("f32 w1");
    every_shape_and_depth::<f32, LayerNorm<f32, 2>>("f32 w2");
    every_shape_and_depth::<f32, LayerNorm<f32, 4>>("f32 w4");
}

#[test]
fn bf16_simulated_gpu_matches_f64() {
    every_shape_and_depth::<bf16, LayerNorm<bf16, 1>>("bf16 w1");
    every_shape_and_depth::<bf16, LayerNorm<bf16, 2>>("bf16 w2");
    every_shape_and_depth::<bf16, LayerNorm<bf16, 4>>("bf16 w4");
}

/// The checkers fail where they must: a tolerance away from f64, a NaN, touched padding, one bit
/// flipped between two outputs.
#[test]
fn checkers_fail_on_wrong_outputs() {
    let s = Shape { rows: 2, cols: 8, ld: 12 };
    let mut rng = rng("checkers_fail_on_wrong_outputs");
    let a = Inputs::<f32>::random(s, &mut rng);
    let run = host_execution::<f32, LayerNorm<f32, 1>>(&a, &vec![f32::poison(); s.len()], s, 1);
    let y = run.unwrap().y;
    let want = reference(&a, s);
    let tol = reference_tolerance::<f32>();
    assert!(distance(&y, &want, tol, s, f32::poison()).0 <= 1.0);
    let mut bad = y.clone();
    bad[3] += 1e-3 * (want[3].abs() as f32 + 1.0);
    assert_eq!(distance(&bad, &want, tol, s, f32::poison()).1, 3);
    assert!(distance(&bad, &want, tol, s, f32::poison()).0 > 1.0);
    bad = y.clone();
    bad[13] = f32::NAN;
    assert!(distance(&bad, &want, tol, s, f32::poison()).0.is_infinite());
    bad = y.clone();
    bad[8] = 0.0; // padding
    assert!(distance(&bad, &want, tol, s, f32::poison()).0.is_infinite());
    bad = y.clone();
    bad[5] = f32::from_bits(bad[5].to_bits() ^ 1);
    assert_eq!(first_difference(&y, &bad), Some(5));
    assert_eq!(first_difference(&y, &y), None);
}

#[test]
fn bad_parameters_are_named() {
    let (mut a, mut ra) = (vec![0f32; 64], vec![0u32; 64]);
    let (mut b, mut rb) = (vec![0f32; 64], vec![0u32; 64]);
    let (mut v, mut rv) = (vec![0f32; 8], vec![0u32; 8]);
    let l = |r, c, ld| FlatLayout::new([r, c], [ld, 1]).unwrap();
    let lv = |n| FlatLayout::new([n], [1]).unwrap();
    // SAFETY: the buffers outlive the engines, which nothing reads
    let (x, y, w) = unsafe {
        (
            HostMem::new(&mut a, &mut ra),
            HostMem::new(&mut b, &mut rb),
            HostMem::new(&mut v, &mut rv),
        )
    };
    let p = |lx, ly, n, staged| LayerNormParams {
        x: FlatTensor::new(x, lx),
        w: FlatTensor::new(w, lv(n)),
        b: FlatTensor::new(w, lv(n)),
        y: FlatTensor::new(y, ly),
        eps: 1e-5,
        staged,
    };
    let err = |p| <LayerNorm<f32, 4> as Kernel>::prepare::<Sim>(p).unwrap_err();
    assert!(err(p(l(4, 8, 8), l(8, 4, 4), 8, 0)).contains("same shape"));
    assert!(err(p(l(4, 8, 8), l(4, 8, 8), 4, 0)).contains("(w, b) of N elements"));
    assert!(err(p(l(2, 6, 6), l(2, 6, 6), 6, 0)).contains("vector width"));
    assert!(err(p(l(4, 8, 8), l(4, 8, 4), 8, 0)).contains("not to overlap"));
    assert!(err(p(l(4, 8, 8), l(4, 8, 8), 8, -1)).contains("Stage::MAX"));
    let col = FlatLayout::new([4, 8], [1, 4]).unwrap();
    assert!(err(p(col, l(4, 8, 8), 8, 0)).contains("unit column strides"));
}

#[test]
fn gpu_matches_simulated_gpu_and_f64() {
    let gpu = match Gpu::device(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gpu_matches_simulated_gpu_and_f64: skipped: {e}");
            return;
        }
    };
    let module = gpu.load(PTX).unwrap();
    let mut rng = rng("gpu_matches_simulated_gpu_and_f64");
    for (rows, cols, pad) in SHAPES {
        let s = Shape { rows, cols, ld: cols + pad };
        check_gpu::<f32, LayerNorm<f32, 4>>(&gpu, &module, s, &mut rng).unwrap();
        check_gpu::<bf16, LayerNorm<bf16, 4>>(&gpu, &module, s, &mut rng).unwrap();
    }
}
