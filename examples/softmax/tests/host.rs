//! The softmax kernel without a GPU: its host execution (the kernel's own steps on the CPU, every
//! block and thread) against the f64 definition at ragged sizes, padded rows and every staging
//! depth, each output element written exactly once; the conditions `prepare` refuses; and, when
//! there is a GPU, the GPU against both.

use softmax::*;
use softmax_kernels::{Softmax, SoftmaxParams};
use tessel::prelude::*;

fn rng(test: &str) -> Rng {
    let seed = Rng::fresh_seed();
    eprintln!("{test}: seed {seed}");
    Rng::new(seed)
}

fn shapes() -> Vec<Shape> {
    let mut v = Vec::new();
    for (rows, cols, pad) in [
        (1, 1, 0),
        (2, 3, 1),
        (5, 8, 0),
        (7, 31, 3),
        (4, 256, 0),
        (9, 257, 8),
        (6, 1000, 5),
        (3, 2049, 0),
    ] {
        v.push(Shape { rows, cols, ld: cols + pad });
    }
    v
}

fn every_shape_and_depth<T: Dtype>(test: &str) {
    let mut rng = rng(test);
    for s in shapes() {
        let tiles = Softmax::<T>::tiles(s.cols as i64);
        for staged in [0, 1, tiles, tiles + 3] {
            if let Err(e) = check_host::<T>(s, staged, &mut rng) {
                panic!("{s:?} staged {staged}: {e}");
            }
        }
    }
}

#[test]
fn f32_host_execution_matches_f64() {
    every_shape_and_depth::<f32>("f32_host_execution_matches_f64");
}

#[test]
fn bf16_host_execution_matches_f64() {
    every_shape_and_depth::<bf16>("bf16_host_execution_matches_f64");
}

#[test]
fn f16_host_execution_matches_f64() {
    every_shape_and_depth::<f16>("f16_host_execution_matches_f64");
}

/// Large inputs do not overflow (the maximum is subtracted first); `-inf` elements give 0; a row
/// that is all `-inf` or holds a NaN gives NaN, as torch's softmax.
#[test]
fn numerically_safe() {
    let s = Shape::new(4, 10);
    let mut x = vec![0f32; s.len()];
    for c in 0..10 {
        x[c] = 1e30 * (c as f32 - 4.5); // row 0: huge, finite
        x[10 + c] = if c == 9 { 0.0 } else { f32::NEG_INFINITY }; // row 1: -inf, then one finite
        x[20 + c] = f32::NEG_INFINITY; // row 2: all -inf
        x[30 + c] = if c == 7 { f32::NAN } else { c as f32 }; // row 3: a NaN
    }
    let run = host_execution::<f32>(&x, &vec![f32::poison(); s.len()], s, 1).unwrap();
    let y = &run.y;
    assert_eq!(y[9], 1.0, "the largest of far-apart values takes all");
    assert!(y[..9].iter().all(|&v| v == 0.0), "{:?}", &y[..10]);
    assert_eq!(&y[10..20], &[0., 0., 0., 0., 0., 0., 0., 0., 0., 1.]);
    assert!(y[20..40].iter().all(|v| v.is_nan()), "{:?}", &y[20..40]);
}

#[test]
fn bad_parameters_are_named() {
    let (mut a, mut w) = (vec![0f32; 64], vec![0u32; 64]);
    let (mut b, mut v) = (vec![0f32; 64], vec![0u32; 64]);
    let l = |r, c, ld| FlatLayout::new([r, c], [ld, 1]).unwrap();
    // SAFETY: the buffers outlive the engines, which nothing reads
    let (x, y) = unsafe { (HostMem::new(&mut a, &mut w), HostMem::new(&mut b, &mut v)) };
    let p = |lx, ly, staged| SoftmaxParams {
        x: FlatTensor::new(x, lx),
        y: FlatTensor::new(y, ly),
        staged,
    };
    let err = |p| <Softmax<f32> as Kernel>::prepare::<Sim>(p).unwrap_err();
    assert!(err(p(l(4, 8, 8), l(8, 4, 4), 0)).contains("same shape"));
    assert!(err(p(l(4, 8, 8), l(4, 8, 4), 0)).contains("not to overlap"));
    assert!(err(p(l(4, 8, 8), l(4, 8, 8), -1)).contains("Stage::MAX"));
    let col = FlatLayout::new([4, 8], [1, 4]).unwrap();
    assert!(err(p(col, l(4, 8, 8), 0)).contains("unit column strides"));
}

#[test]
fn gpu_matches_host_execution_and_f64() {
    let gpu = match Gpu::device(0) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("gpu_matches_host_execution_and_f64: skipped: {e}");
            return;
        }
    };
    let module = gpu.load(PTX).unwrap();
    let mut rng = rng("gpu_matches_host_execution_and_f64");
    for s in shapes() {
        check_gpu::<f32>(&gpu, &module, s, &mut rng).unwrap();
        check_gpu::<bf16>(&gpu, &module, s, &mut rng).unwrap();
        check_gpu::<f16>(&gpu, &module, s, &mut rng).unwrap();
    }
}
