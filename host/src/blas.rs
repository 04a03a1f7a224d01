//! cuBLAS as the reference and the speed peer of tessel's GEMM: [`Blas::gemm_tn`] runs
//! `cublasGemmEx` on a [`Gpu`]'s stream, and [`gemm_reference`], [`gemm_tolerance`] and
//! [`check_gemm`] say on the host whether a GEMM's result (cuBLAS's or a kernel's) is right.
//!
//! cuBLAS is loaded at run time like the driver: a machine without `libcublas.so` gets
//! [`GpuError::NoBlas`] from [`Blas::new`], and everything else still works.
//!
//! tessel's GEMM is "TN": `C = alpha A B^T + beta C` with `A` `(M,K)`, `B` `(N,K)` and `C` `(M,N)`,
//! all three row-major (unit stride along `K`, `K` and `N`), any row strides.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use cudarc::cublas::{result, sys, CudaBlas};
use cudarc::driver::{CudaStream, DevicePtr};
use half::{bf16, f16};

use crate::elem::Elem;
use crate::runtime::gpu::{flat_param, DeviceTensor, Gpu, GpuError, Result};
use crate::runtime::library::{self, first_missing, Library};

/// An element type cuBLAS reads or writes: its `cudaDataType`, and what rounding to it costs
/// (for [`gemm_tolerance`]).
pub trait BlasElem: Elem {
    /// `CUDA_R_32F`, `CUDA_R_16F` or `CUDA_R_16BF`.
    const DATA_TYPE: sys::cudaDataType;
    /// The unit roundoff of round-to-nearest: `2^-p` for `p` significand bits (`f32` 24, `f16` 11,
    /// `bf16` 8).
    const EPS: f64;
    /// The smallest normal value: the most a result that underflows loses, subnormal or flushed
    /// to zero.
    const MIN_NORMAL: f64;
}
impl BlasElem for f32 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_32F;
    const EPS: f64 = 1.0 / (1u64 << 24) as f64;
    const MIN_NORMAL: f64 = f32::MIN_POSITIVE as f64;
}
impl BlasElem for f16 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_16F;
    const EPS: f64 = 1.0 / (1u64 << 11) as f64;
    const MIN_NORMAL: f64 = 1.0 / (1u64 << 14) as f64;
}
impl BlasElem for bf16 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_16BF;
    const EPS: f64 = 1.0 / (1u64 << 8) as f64;
    const MIN_NORMAL: f64 = f32::MIN_POSITIVE as f64;
}

/// An output type of a GEMM of inputs `I` with `f32` accumulation (`CUBLAS_COMPUTE_32F`): `I`
/// itself or `f32` — the pairs `cublasGemmEx` takes (it refuses `f16` inputs into `bf16` and
/// the reverse).
pub trait GemmOut<I: BlasElem>: BlasElem {}
impl GemmOut<f16> for f16 {}
impl GemmOut<f16> for f32 {}
impl GemmOut<bf16> for bf16 {}
impl GemmOut<bf16> for f32 {}

/// cuBLAS on a [`Gpu`]'s stream: its calls are ordered with the kernels' launches and copies.
pub struct Blas {
    blas: CudaBlas,
    stream: Arc<CudaStream>,
}

/// The functions of `libcublas` that [`Blas`] calls: resolved when it is made, so that none is
/// found missing (a panic in cudarc) later.
const SYMBOLS: [&str; 4] = [
    "cublasCreate_v2",
    "cublasSetStream_v2",
    "cublasGemmEx",
    "cublasDestroy_v2",
];

impl Blas {
    /// A cuBLAS handle on `gpu`'s stream; [`GpuError::NoBlas`] when `libcublas.so` cannot be
    /// loaded or lacks a function [`Blas`] calls.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        let cublas = Library {
            file: "libcublas.so",
            what: "a cuBLAS",
            hint: "install CUDA's cuBLAS, or put its directory in LD_LIBRARY_PATH",
        };
        // SAFETY: only probes whether the library loads.
        let present = unsafe { sys::is_culib_present() };
        library::probe(&cublas, present, first_missing!(sys, SYMBOLS)).map_err(GpuError::NoBlas)?;
        let stream = gpu.stream().clone();
        let blas = catch_unwind(AssertUnwindSafe(|| CudaBlas::new(stream.clone())))
            .map_err(|p| GpuError::NoBlas(library::panic_message(&*p)))?
            .map_err(|err| GpuError::Blas {
                what: "creating a cuBLAS handle".into(),
                err,
            })?;
        Ok(Self { blas, stream })
    }

    /// `C = alpha A B^T + beta C` with `cublasGemmEx`, `f32` accumulation
    /// (`CUBLAS_COMPUTE_32F`): `A` `(M,K)`, `B` `(N,K)`, `C` `(M,N)`, each a flat rank-2 layout
    /// with unit stride along its second mode (`K`, `K`, `N`) and a row stride at least that
    /// mode's extent; an error names the violated condition. As in BLAS, `C` is not read when
    /// `beta == 0` (it may hold NaNs).
    ///
    /// cuBLAS is column-major: row-major `C` `(M,N)` is column-major `C^T` `(N,M)`, and
    /// `C^T = alpha B A^T + beta C^T` is cuBLAS's `op(A) = B^T` (row-major `B` read as
    /// column-major `(K,N)`, transposed), `op(B) = A^T` read as column-major `(K,M)` untransposed:
    /// `transa = T`, `transb = N`, `m = N`, `n = M`, `k = K`, the leading dimensions the row
    /// strides.
    pub fn gemm_tn<I: BlasElem, O: GemmOut<I>>(
        &self,
        a: &DeviceTensor<I>,
        b: &DeviceTensor<I>,
        c: &mut DeviceTensor<O>,
        alpha: f32,
        beta: f32,
    ) -> Result<()> {
        let ma = Matrix::of(a, ["a", "M", "K"])?;
        let mb = Matrix::of(b, ["b", "N", "K"])?;
        let mc = Matrix::of(c, ["c", "M", "N"])?;
        if mb.cols != ma.cols {
            return Err(GpuError::Invalid(format!(
                "gemm_tn needs a (M,K) and b (N,K) of one K, got a {} and b {}",
                a.layout(),
                b.layout()
            )));
        }
        if (mc.rows, mc.cols) != (ma.rows, mb.rows) {
            return Err(GpuError::Invalid(format!(
                "gemm_tn needs c of shape (M,N) = ({},{}), got {}",
                ma.rows,
                mb.rows,
                c.layout()
            )));
        }
        for (name, ctx) in [
            ("a", a.buffer().context()),
            ("b", b.buffer().context()),
            ("c", c.buffer().context()),
        ] {
            if !Arc::ptr_eq(ctx, self.stream.context()) {
                return Err(GpuError::Invalid(format!(
                    "{name} was allocated through another Gpu (context) than this Blas's"
                )));
            }
        }
        let (pa, _ga) = a.buffer().device_ptr(&self.stream);
        let (pb, _gb) = b.buffer().device_ptr(&self.stream);
        let (pc, _gc) = c.buffer().device_ptr(&self.stream);
        let at = |p: u64, off: u64, size: usize| (p + off * size as u64) as *const c_void;
        let pa = at(pa, ma.offset, size_of::<I>());
        let pb = at(pb, mb.offset, size_of::<I>());
        let pc = at(pc, mc.offset, size_of::<O>()) as *mut c_void;
        self.stream
            .context()
            .bind_to_thread()
            .map_err(|err| GpuError::Driver {
                what: "making the context current for cuBLAS".into(),
                err,
            })?;
        // cuBLAS's A is b, its B is a
        let g = GemmEx::tn(&ma, &mb, &mc);
        // SAFETY: the handle is on this stream's context, made current; `Matrix::of` checked
        // that every element cuBLAS reads or writes (`rows` rows of `cols` elements, `ld` apart,
        // from the offset) lies inside its buffer, and the dimensions and leading dimensions fit
        // in `i32`; alpha and beta are host `f32`s, as `CUBLAS_COMPUTE_32F` with the default
        // (host) pointer mode reads them; `c` is borrowed mutably, so no other tensor shares its
        // buffer.
        unsafe {
            result::gemm_ex(
                *self.blas.handle(),
                g.transa,
                g.transb,
                g.m,
                g.n,
                g.k,
                (&alpha as *const f32).cast(),
                pb,
                I::DATA_TYPE,
                g.lda,
                pa,
                I::DATA_TYPE,
                g.ldb,
                (&beta as *const f32).cast(),
                pc,
                O::DATA_TYPE,
                g.ldc,
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|err| GpuError::Blas {
            what: format!(
                "cublasGemmEx {}x{}x{} {} -> {}",
                ma.rows,
                mb.rows,
                ma.cols,
                I::NAME,
                O::NAME
            ),
            err,
        })
    }
}

/// A row-major matrix as cuBLAS takes it: `rows` rows of `cols` contiguous elements, `ld` apart,
/// from element `offset` of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Matrix {
    rows: i32,
    cols: i32,
    ld: i32,
    offset: u64,
}

impl Matrix {
    /// `t` as a row-major matrix; `names` are the tensor's and its two modes' (`["a", "M", "K"]`)
    /// for the errors.
    fn of<T>(t: &DeviceTensor<T>, names: [&str; 3]) -> Result<Self> {
        let [name, rows_name, cols_name] = names;
        let l = flat_param::<2>(name, t.layout())?;
        Self::check(l.shape(), l.stride(), t.offset(), t.len(), names).map_err(|why| {
            GpuError::Invalid(format!(
                "gemm_tn's {name} ({rows_name},{cols_name}) is {} at offset {}: {why}",
                t.layout(),
                t.offset()
            ))
        })
    }

    /// The checks of [`Matrix::of`] on a layout `shape:stride` at `offset` in a buffer of `len`.
    /// The stride of a mode of extent 1 is never used: a single row's stride is taken to be
    /// `cols`, a single column's 1.
    fn check(
        [rows, cols]: [i64; 2],
        [row_stride, col_stride]: [i64; 2],
        offset: i64,
        len: usize,
        [name, rows_name, cols_name]: [&str; 3],
    ) -> std::result::Result<Self, String> {
        if cols > 1 && col_stride != 1 {
            return Err(format!(
                "{name} needs unit stride along {cols_name} (its second mode), got {col_stride}"
            ));
        }
        let ld = if rows > 1 { row_stride } else { cols };
        if ld < cols {
            return Err(format!(
                "{name}'s row stride {ld} must be at least {cols_name} = {cols} (rows that do \
                 not overlap, in increasing order)"
            ));
        }
        let int = |what: &str, v: i64| {
            i32::try_from(v).map_err(|_| format!("{what} = {v} does not fit in cuBLAS's i32"))
        };
        let (r, c, l) = (int(rows_name, rows)?, int(cols_name, cols)?, int("ld", ld)?);
        // the last element cuBLAS touches: offset + (rows - 1) * ld + cols - 1
        let end = (rows - 1)
            .checked_mul(ld)
            .and_then(|v| v.checked_add(cols))
            .and_then(|v| v.checked_add(offset));
        match end {
            Some(end) if offset >= 0 && end <= len as i64 => Ok(Self {
                rows: r,
                cols: c,
                ld: l,
                offset: offset as u64,
            }),
            _ => Err(format!(
                "{name} reaches elements {offset}..{} with row stride {ld}, outside the buffer \
                 of {len}",
                end.map_or("overflow".to_string(), |e| e.to_string())
            )),
        }
    }
}

/// The arguments of `cublasGemmEx` besides pointers, types and scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct GemmEx {
    transa: sys::cublasOperation_t,
    transb: sys::cublasOperation_t,
    m: i32,
    n: i32,
    k: i32,
    lda: i32,
    ldb: i32,
    ldc: i32,
}

impl GemmEx {
    /// tessel's `C = alpha A B^T + beta C` (`a` `(M,K)`, `b` `(N,K)`, `c` `(M,N)`, row-major, of
    /// agreeing shapes) as cuBLAS's column-major `C^T = alpha op(b) op(a) + beta C^T`: cuBLAS's
    /// `A` is `b` (`(K,N)` column-major, transposed), its `B` is `a` (`(K,M)` column-major), its
    /// `C` is `c` (`(N,M)` column-major).
    fn tn(a: &Matrix, b: &Matrix, c: &Matrix) -> Self {
        Self {
            transa: sys::cublasOperation_t::CUBLAS_OP_T,
            transb: sys::cublasOperation_t::CUBLAS_OP_N,
            m: b.rows,
            n: a.rows,
            k: a.cols,
            lda: b.ld,
            ldb: a.ld,
            ldc: c.ld,
        }
    }
}

/// The exact product terms of element `(i, j)`: `sum_p a[i,p] b[j,p]` and `sum_p |a[i,p] b[j,p]|`
/// in `f64`.
fn dot<I: Elem>(a: &[I], b: &[I], i: usize, j: usize, k: usize) -> (f64, f64) {
    let (ra, rb) = (&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]);
    ra.iter().zip(rb).fold((0.0, 0.0), |(s, m), (x, y)| {
        let p = x.to_f64() * y.to_f64();
        (s + p, m + p.abs())
    })
}

/// Panics unless the slices are `(M,K)`, `(N,K)` and `(M,N)` packed.
fn check_lengths(a: usize, b: usize, c: usize, m: usize, n: usize, k: usize) {
    assert!(
        a == m * k && b == n * k && c == m * n,
        "gemm of {m}x{n}x{k} needs a of {} elements, b of {}, c of {}; got {a}, {b}, {c}",
        m * k,
        n * k,
        m * n
    );
}

/// `alpha A B^T + beta C` in `f64`: `a` `(M,K)`, `b` `(N,K)` and `c` `(M,N)`, all row-major and
/// packed (element `(i,j)` of `c` at `i * N + j`). Products of two 16-bit (or `f32`) values are
/// exact in `f64`; the sums of `K` of them are off by at most `K 2^-53` of the sum of their
/// magnitudes. As in BLAS, `c` is not read when `beta == 0` (a poisoned `c` gives no NaN).
///
/// # Panics
/// When the slices' lengths are not `M K`, `N K` and `M N`.
#[allow(clippy::too_many_arguments)]
pub fn gemm_reference<I: Elem, O: Elem>(
    a: &[I],
    b: &[I],
    c: &[O],
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
) -> Vec<f64> {
    parts(a, b, c, [m, n, k], alpha, beta)
        .map(|(want, _)| want)
        .collect()
}

/// Each element's reference `alpha sum a b + beta c` and the magnitudes of its terms
/// `|alpha| sum |a b| + |beta c|`, row by row (`c` not read when `beta == 0`).
fn parts<'a, I: Elem, O: Elem>(
    a: &'a [I],
    b: &'a [I],
    c: &'a [O],
    [m, n, k]: [usize; 3],
    alpha: f32,
    beta: f32,
) -> impl Iterator<Item = (f64, f64)> + 'a {
    check_lengths(a.len(), b.len(), c.len(), m, n, k);
    let (alpha, beta) = (f64::from(alpha), f64::from(beta));
    (0..m * n).map(move |e| {
        let (i, j) = (e / n, e % n);
        let (s, mag) = dot(a, b, i, j, k);
        let cij = if beta == 0.0 { 0.0 } else { c[e].to_f64() };
        (
            alpha * s + beta * cij,
            alpha.abs() * mag + beta.abs() * cij.abs(),
        )
    })
}

/// `2^-e`.
fn pow2(e: i32) -> f64 {
    2f64.powi(-e)
}

/// A bound on `|got - reference|` for each element of a GEMM of `I` inputs accumulated in `f32`
/// and rounded to `O` (the arguments as [`gemm_reference`]'s); `f64::INFINITY` where no bound
/// holds (`K` past 2^21).
///
/// The model of the device: each product `a b` of two 16-bit values is exact in `f32` (at most
/// 2 x 11 significant bits, exponents well inside `f32`'s range); the `K` products are summed in
/// `f32` in any order and grouping (tiles, split-K, a tensor core's fused multi-term adds), the
/// sum `s` scaled and added to `beta c` in `f32`, and that `y` rounded to `O`.
///
/// Accumulation. An `f32` addition rounded to nearest errs by at most `2^-24` of its result, one
/// that truncates by `2^-23`. A tensor core's fused add of several terms aligns them to the
/// largest and truncates the bits below its last place (Fasi, Higham, Mikaitis and Pranesh,
/// "Numerical behavior of NVIDIA tensor cores", 2021): each term aligned loses less than `2^-23`
/// of the largest term, and that and the step's result are both at most the running sum of
/// magnitudes. Charging each product its own alignment, the accumulator's alignment at the step
/// it enters, and the step's rounding — at most `K` of each — and each at most `2^-23` of
/// `T = sum_p |a_p b_p|`, the sum errs by at most `3 K 2^-23 T`; the epilogue's (`alpha s`,
/// `beta c`, their sum: at most three roundings) is charged the same way on
/// `S = |alpha| T + |beta| |c|`. With `u = 3 2^-23` and `n = K + 1` charges, and the
/// second-order terms (a rounding of a value already off) absorbed as usual
/// (`gamma_n = n u / (1 - n u)`, Higham, "Accuracy and Stability of Numerical Algorithms", 3.1):
///
/// `|y - ref| <= E = gamma_n S + (K + 2) 2^-126 + (K + 1) 2^-52 S`
///
/// where the second term covers intermediate results that underflow (flushed to zero or
/// subnormal: each loses less than `f32`'s smallest normal) and the third the `f64` reference's
/// own rounding.
///
/// Output. Rounding `y` to `O` to nearest errs by at most `eps_O |y| <= eps_O (|ref| + E)`
/// (`eps_O` = 2^-8 for `bf16`, 2^-11 for `f16`, 2^-24 for `f32`), or by less than `O`'s smallest
/// normal where it underflows. So
///
/// `|got - ref| <= eps_O |ref| + (1 + eps_O) E + min_normal_O`.
///
/// For 16-bit outputs the first term dominates: an answer two units in the last place off the
/// correctly rounded one is outside the bound. For `f32` outputs `E` dominates, and is loose by
/// about `sqrt(K)` for random signs (it holds for the worst order of additions).
///
/// # Panics
/// As [`gemm_reference`].
#[allow(clippy::too_many_arguments)]
pub fn gemm_tolerance<I: Elem, O: BlasElem>(
    a: &[I],
    b: &[I],
    c: &[O],
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
) -> Vec<f64> {
    gemm_reference_and_tolerance::<I, O>(a, b, c, m, n, k, alpha, beta).1
}

/// [`gemm_reference`] and [`gemm_tolerance`] in one pass over the products.
///
/// # Panics
/// As [`gemm_reference`].
#[allow(clippy::too_many_arguments)]
pub fn gemm_reference_and_tolerance<I: Elem, O: BlasElem>(
    a: &[I],
    b: &[I],
    c: &[O],
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
) -> (Vec<f64>, Vec<f64>) {
    parts(a, b, c, [m, n, k], alpha, beta)
        .map(|(want, big)| (want, element_bound::<O>(want, big, k)))
        .unzip()
}

/// The `f32` accumulation's part `E` of [`gemm_tolerance`]'s bound, for an element whose terms'
/// magnitudes sum to `big` (`|alpha| sum |a b| + |beta c|`) over `k` products.
pub fn accumulation_bound(big: f64, k: usize) -> f64 {
    let charges = (k + 1) as f64;
    let nu = charges * 3.0 * pow2(23);
    let gamma = if nu < 0.5 {
        nu / (1.0 - nu)
    } else {
        f64::INFINITY
    };
    gamma * big + (k + 2) as f64 * pow2(126) + charges * pow2(52) * big
}

/// [`gemm_tolerance`]'s bound for one element: reference `want`, magnitudes `big`, `k` products.
pub fn element_bound<O: BlasElem>(want: f64, big: f64, k: usize) -> f64 {
    let e = accumulation_bound(big, k);
    O::EPS * (want.abs() + e) + (1.0 + O::EPS) * e + O::MIN_NORMAL
}

/// A bound on `|x - y|` for two results `x`, `y` of the same GEMM element, each within
/// [`element_bound`] of the unknown reference: with `|ref| <= R = (|y| + 2 E + min_normal) /
/// (1 - eps)` (from `y`'s own bound), both bounds are at most `element_bound(R)`, which grows
/// with `|ref|`; the triangle inequality doubles it.
pub fn pair_bound<O: BlasElem>(y: f64, big: f64, k: usize) -> f64 {
    let e = accumulation_bound(big, k);
    let r = (y.abs() + 2.0 * e + O::MIN_NORMAL) / (1.0 - O::EPS);
    2.0 * element_bound::<O>(r, big, k)
}

/// The worst element of a GEMM's result against its reference, by error relative to its bound.
#[derive(Clone, Debug, PartialEq)]
pub struct GemmCheck {
    /// `max |got - want| / tol` over the elements (`INFINITY` for a NaN or infinity in `got`):
    /// the result is within its bound when this is at most 1.
    pub worst: f64,
    /// Where: row `i` and column `j` of `C`.
    pub at: (usize, usize),
    /// The result there.
    pub got: f64,
    /// The reference there.
    pub want: f64,
    /// The bound there.
    pub tol: f64,
}

impl GemmCheck {
    /// Is every element within its bound?
    pub fn ok(&self) -> bool {
        self.worst <= 1.0
    }
    /// `|got - want| / |want|` at the worst element (`INFINITY` for a wrong zero).
    pub fn relative(&self) -> f64 {
        let err = (self.got - self.want).abs();
        if err == 0.0 {
            0.0
        } else {
            err / self.want.abs()
        }
    }
}

impl std::fmt::Display for GemmCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (i, j) = self.at;
        write!(
            f,
            "worst at ({i},{j}): got {:e}, want {:e}, error {:.3e} = {:.3} of the bound {:.3e} \
             (relative {:.3e})",
            self.got,
            self.want,
            (self.got - self.want).abs(),
            self.worst,
            self.tol,
            self.relative()
        )
    }
}

/// `got` (row-major `(M,N)`, packed) against `want` and the bounds `tol` of
/// [`gemm_reference`] and [`gemm_tolerance`]: the worst element relative to its bound, and
/// where it is (the first of equals; a NaN or infinity counts as infinitely wrong).
///
/// # Panics
/// When the three lengths differ or are not a multiple of `n`.
pub fn check_gemm<O: Elem>(got: &[O], want: &[f64], tol: &[f64], n: usize) -> GemmCheck {
    assert!(
        got.len() == want.len() && got.len() == tol.len() && n > 0 && got.len().is_multiple_of(n),
        "check_gemm needs results, references and bounds of one length, a multiple of N = {n}: \
         got {}, {}, {}",
        got.len(),
        want.len(),
        tol.len()
    );
    let mut worst = GemmCheck {
        worst: -1.0,
        at: (0, 0),
        got: 0.0,
        want: 0.0,
        tol: 0.0,
    };
    for (idx, ((g, &w), &t)) in got.iter().zip(want).zip(tol).enumerate() {
        let g = g.to_f64();
        let err = (g - w).abs();
        let ratio = if err.is_finite() {
            err / t
        } else {
            f64::INFINITY
        };
        if ratio > worst.worst {
            worst = GemmCheck {
                worst: ratio,
                at: (idx / n, idx % n),
                got: g,
                want: w,
                tol: t,
            };
        }
    }
    worst.worst = worst.worst.max(0.0);
    worst
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elem::Rng;

    fn v<T: Elem>(x: &[f64]) -> Vec<T> {
        x.iter().map(|&x| T::from_f64(x)).collect()
    }

    #[test]
    fn the_reference_is_a_times_b_transposed() {
        // A (2,3), B (2,3): C = A B^T (2,2)
        let a: Vec<bf16> = v(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let b: Vec<bf16> = v(&[1.0, 0.0, -1.0, 0.5, 0.25, 2.0]);
        let c: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0];
        let r = gemm_reference(&a, &b, &c, 2, 2, 3, 1.0, 0.0);
        assert_eq!(r, vec![-2.0, 7.0, -2.0, 15.25]);
        let r = gemm_reference(&a, &b, &c, 2, 2, 3, 2.0, -0.5);
        assert_eq!(r, vec![-4.5, 13.0, -5.5, 28.5]);
        // beta == 0 reads no C: a poisoned one gives no NaN
        let poisoned = vec![f32::poison(); 4];
        let r = gemm_reference(&a, &b, &poisoned, 2, 2, 3, 1.0, 0.0);
        assert_eq!(r, vec![-2.0, 7.0, -2.0, 15.25]);
    }

    #[test]
    #[should_panic(expected = "needs a of 6 elements")]
    fn the_reference_refuses_wrong_lengths() {
        let a: Vec<f16> = v(&[1.0; 5]);
        gemm_reference(&a, &a, &[0f32; 4], 2, 2, 3, 1.0, 0.0);
    }

    /// `sum_p a[i,p] b[j,p]` accumulated in `f32` with `add`, forwards or backwards, then `alpha s + beta c`
    /// in `f32`, rounded to `O`: what a correct device may compute.
    fn device_like<I: Elem, O: Elem>(
        (a, b, c): (&[I], &[I], &[O]),
        (m, n, k): (usize, usize, usize),
        (alpha, beta): (f32, f32),
        add: impl Fn(f32, f32) -> f32,
        reverse: bool,
    ) -> Vec<O> {
        let mut out = Vec::with_capacity(m * n);
        for i in 0..m {
            for j in 0..n {
                let mut s = 0f32;
                for q in 0..k {
                    let p = if reverse { k - 1 - q } else { q };
                    let prod = a[i * k + p].to_f64() as f32 * b[j * k + p].to_f64() as f32;
                    s = add(s, prod);
                }
                let y = alpha * s
                    + if beta == 0.0 {
                        0.0
                    } else {
                        beta * c[i * n + j].to_f64() as f32
                    };
                out.push(O::from_f64(y as f64));
            }
        }
        out
    }

    /// `x + y` in `f32`, truncated (rounded toward zero) as a tensor core's adder does.
    fn add_truncating(x: f32, y: f32) -> f32 {
        let exact = x as f64 + y as f64;
        let r = exact as f32;
        if (r as f64).abs() > exact.abs() {
            f32::from_bits(r.to_bits() - 1)
        } else {
            r
        }
    }

    fn case<I: BlasElem, O: BlasElem>(rng: &mut Rng, m: usize, n: usize, k: usize) {
        let (a, b): (Vec<I>, Vec<I>) = (rng.fill(m * k), rng.fill(n * k));
        let c: Vec<O> = rng.fill(m * n);
        for (alpha, beta) in [(1.0, 0.0), (1.5, -0.75)] {
            let want = gemm_reference(&a, &b, &c, m, n, k, alpha, beta);
            let tol = gemm_tolerance(&a, &b, &c, m, n, k, alpha, beta);
            let ops = (&a[..], &b[..], &c[..]);
            for reverse in [false, true] {
                let rn = device_like(ops, (m, n, k), (alpha, beta), |x, y| x + y, reverse);
                let rz = device_like(ops, (m, n, k), (alpha, beta), add_truncating, reverse);
                for got in [rn, rz] {
                    let r = check_gemm(&got, &want, &tol, n);
                    assert!(r.ok(), "{} -> {} {m}x{n}x{k}: {r}", I::NAME, O::NAME);
                }
            }
            // the correctly rounded answers pass
            let exact: Vec<O> = want.iter().map(|&w| O::from_f64(w)).collect();
            assert!(check_gemm(&exact, &want, &tol, n).ok());
        }
    }

    #[test]
    fn correct_f32_accumulations_are_within_the_bound() {
        let mut rng = Rng::from_env_or_fresh("correct_f32_accumulations", "-p tessel-host");
        for (m, n, k) in [(1, 1, 1), (3, 5, 7), (4, 4, 1000), (2, 3, 4096)] {
            case::<bf16, bf16>(&mut rng, m, n, k);
            case::<bf16, f32>(&mut rng, m, n, k);
            case::<f16, f16>(&mut rng, m, n, k);
            case::<f16, f32>(&mut rng, m, n, k);
        }
    }

    #[test]
    fn wrong_results_are_caught_where_they_are() {
        let mut rng = Rng::from_env_or_fresh("wrong_results_are_caught", "-p tessel-host");
        let (m, n, k) = (5, 7, 64);
        let (a, b): (Vec<bf16>, Vec<bf16>) = (rng.fill(m * k), rng.fill(n * k));
        let c: Vec<bf16> = rng.fill(m * n);
        let want = gemm_reference(&a, &b, &c, m, n, k, 1.0, 0.5);
        let tol = gemm_tolerance(&a, &b, &c, m, n, k, 1.0, 0.5);
        let right: Vec<bf16> = want.iter().map(|&w| bf16::from_f64(w)).collect();
        assert!(check_gemm(&right, &want, &tol, n).ok());
        // two units in the last place off the correctly rounded answer, where the answer is
        // largest (where the accumulation's share of the bound is smallest)
        let big = (0..m * n)
            .max_by(|&x, &y| want[x].abs().total_cmp(&want[y].abs()))
            .unwrap();
        let mut wrong = right.clone();
        wrong[big] = bf16::from_bits(wrong[big].to_bits() + 2);
        let r = check_gemm(&wrong, &want, &tol, n);
        assert!(!r.ok(), "{r}");
        assert_eq!(r.at, (big / n, big % n));
        // an element left unwritten (the poison) is infinitely wrong
        let mut unwritten = right.clone();
        unwritten[2 * n] = bf16::poison();
        let r = check_gemm(&unwritten, &want, &tol, n);
        assert_eq!((r.worst, r.at), (f64::INFINITY, (2, 0)), "{r}");
        assert!(r.to_string().contains("worst at (2,0): got NaN"), "{r}");
        // C^T instead of C (B A^T)
        let sq: Vec<bf16> = rng.fill(n * k);
        let c: Vec<bf16> = vec![bf16::poison(); n * n];
        let want = gemm_reference(&sq, &b, &c, n, n, k, 1.0, 0.0);
        let tol = gemm_tolerance(&sq, &b, &c, n, n, k, 1.0, 0.0);
        let transposed = gemm_reference(&b, &sq, &c, n, n, k, 1.0, 0.0);
        let transposed: Vec<bf16> = transposed.iter().map(|&w| bf16::from_f64(w)).collect();
        assert!(!check_gemm(&transposed, &want, &tol, n).ok());
    }

    #[test]
    fn accumulating_in_16_bits_is_caught() {
        let mut rng = Rng::from_env_or_fresh("accumulating_in_16_bits_is_caught", "-p tessel-host");
        let (m, n, k) = (4, 4, 512);
        let (a, b): (Vec<bf16>, Vec<bf16>) = (rng.fill(m * k), rng.fill(n * k));
        let c: Vec<f32> = vec![0.0; m * n];
        let want = gemm_reference(&a, &b, &c, m, n, k, 1.0, 0.0);
        let tol = gemm_tolerance(&a, &b, &c, m, n, k, 1.0, 0.0);
        let ops = (&a[..], &b[..], &c[..]);
        let bf16_sum = |x: f32, y: f32| bf16::from_f32(x + y).to_f32();
        let got = device_like(ops, (m, n, k), (1.0, 0.0), bf16_sum, false);
        let r = check_gemm(&got, &want, &tol, n);
        assert!(!r.ok(), "{r}");
    }

    /// `cublasGemmEx` as cuBLAS documents it, in `f64`: column-major `C (m,n) = alpha op(A)
    /// op(B) + beta C` with `op(A)` `(m,k)`, `op(B)` `(k,n)`, element `(i,j)` of a matrix at
    /// `i + j ld`; also checks the leading dimensions it requires.
    fn cublas_gemm_ex(g: &GemmEx, a: &[f64], b: &[f64], c: &mut [f64], alpha: f64, beta: f64) {
        use sys::cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
        let [m, n, k, lda, ldb, ldc] = [g.m, g.n, g.k, g.lda, g.ldb, g.ldc].map(|v| v as usize);
        assert!(lda >= if g.transa == N { m } else { k }.max(1));
        assert!(ldb >= if g.transb == N { k } else { n }.max(1));
        assert!(ldc >= m.max(1));
        let op_a = |i: usize, p: usize| match g.transa {
            T => a[p + i * lda],
            _ => a[i + p * lda],
        };
        let op_b = |p: usize, j: usize| match g.transb {
            T => b[j + p * ldb],
            _ => b[p + j * ldb],
        };
        for j in 0..n {
            for i in 0..m {
                let s: f64 = (0..k).map(|p| op_a(i, p) * op_b(p, j)).sum();
                let cij = &mut c[i + j * ldc];
                *cij = alpha * s + if beta == 0.0 { 0.0 } else { beta * *cij };
            }
        }
    }

    #[test]
    fn the_cublas_arguments_compute_tessels_tn_gemm() {
        let mut rng = Rng::new(7);
        let names = ["x", "R", "C"];
        for (m, n, k, pad) in [
            (1, 1, 1, 0),
            (3, 5, 7, 0),
            (4, 6, 9, 3),
            (1, 8, 5, 2),
            (6, 1, 1, 1),
        ] {
            let (lda, ldb, ldc) = (k + pad, k + 2 * pad, n + pad);
            let mat = |r: usize, c: usize, ld: usize| {
                Matrix::check(
                    [r as i64, c as i64],
                    [ld as i64, 1],
                    0,
                    (r - 1) * ld + c,
                    names,
                )
                .unwrap()
            };
            let (ma, mb, mc) = (mat(m, k, lda), mat(n, k, ldb), mat(m, n, ldc));
            // packed values (f32: exact in f64), and the same in padded buffers (padding NaN:
            // never read)
            let (a, b, c): (Vec<f32>, Vec<f32>, Vec<f32>) =
                (rng.fill(m * k), rng.fill(n * k), rng.fill(m * n));
            let padded = |v: &[f32], cols: usize, ld: usize| {
                let mut out = vec![f64::NAN; (v.len() / cols - 1) * ld + cols];
                for (i, row) in v.chunks(cols).enumerate() {
                    for (o, &x) in out[i * ld..i * ld + cols].iter_mut().zip(row) {
                        *o = f64::from(x);
                    }
                }
                out
            };
            let (pa, pb, mut pc) = (padded(&a, k, lda), padded(&b, k, ldb), padded(&c, n, ldc));
            let g = GemmEx::tn(&ma, &mb, &mc);
            cublas_gemm_ex(&g, &pb, &pa, &mut pc, 1.5, -0.5);
            let want = gemm_reference(&a, &b, &c, m, n, k, 1.5, -0.5);
            for i in 0..m {
                for j in 0..n {
                    let (got, w) = (pc[i * ldc + j], want[i * n + j]);
                    assert!(
                        (got - w).abs() <= 1e-12,
                        "{m}x{n}x{k} ({i},{j}): {got} vs {w}"
                    );
                }
                // the padding is not written
                assert!(pc[i * ldc + n..(i * ldc + ldc).min(pc.len())]
                    .iter()
                    .all(|v| v.is_nan()));
            }
        }
    }

    #[test]
    fn layouts_cublas_cannot_take_are_refused() {
        let names = ["a", "M", "K"];
        let ok = |s, d, off, len| Matrix::check(s, d, off, len, names);
        let m = ok([4, 8], [8, 1], 0, 32).unwrap();
        assert_eq!((m.rows, m.cols, m.ld, m.offset), (4, 8, 8, 0));
        // padded rows, an offset
        assert_eq!(ok([4, 8], [10, 1], 2, 40).unwrap().ld, 10);
        // a single row's stride is never used; nor a single column's
        assert_eq!(ok([1, 8], [3, 1], 0, 8).unwrap().ld, 8);
        assert_eq!(ok([4, 1], [1, 5], 0, 4).unwrap().ld, 1);
        let err = |s, d, off, len| ok(s, d, off, len).unwrap_err();
        assert!(err([4, 8], [1, 4], 0, 32).contains("a needs unit stride along K"));
        assert!(err([4, 8], [4, 1], 0, 32).contains("row stride 4 must be at least K = 8"));
        assert!(err([4, 8], [-8, 1], 24, 32).contains("row stride -8"));
        assert!(err([4, 8], [8, 1], 1, 32).contains("outside the buffer of 32"));
        assert!(err([4, 8], [8, 1], -1, 32).contains("outside the buffer"));
        assert!(err([1 << 31, 1], [1, 1], 0, 1 << 31).contains("M = 2147483648 does not fit"));
        assert!(err([2, 8], [1 << 31, 1], 0, 1 << 33).contains("ld = 2147483648 does not fit"));
    }
}
