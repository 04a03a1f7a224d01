//! Tensor maps for the copy engine (TMA), built from tessel layouts: `cuTensorMapEncodeTiled` of a
//! `DeviceTensor` of rank 2 to 5 (the last dimension contiguous), a box, and a swizzle mode whose shared-memory layout
//! is a tessel `Swizzle` (`SwizzleMode::swizzle`). The map goes to global memory; kernels fence
//! it in (`tensormap_acquire`) before the copy engine reads it.

use cudarc::driver::{sys, CudaSlice, DevicePtr};

use crate::elem::Elem;
use crate::runtime::gpu::{DeviceTensor, Gpu, GpuError, Result};
pub use crate::sim::{addressable, addressable_nd, check_box, check_box_nd};

/// The copy engine's shared-memory swizzle modes: layout-core's `SwizzleMode` (one mapping
/// between tessel's `Swizzle`, the TMA codes and the GMMA layout types).
pub use layout_core::SwizzleMode as TmaSwizzle;

/// Every mode.
pub const MODES: [TmaSwizzle; 4] = [
    TmaSwizzle::None,
    TmaSwizzle::B32,
    TmaSwizzle::B64,
    TmaSwizzle::B128,
];

/// `CU_TENSOR_MAP_SWIZZLE_*` of `mode` (its `SwizzleMode::tma_code`).
fn code(mode: TmaSwizzle) -> sys::CUtensorMapSwizzle {
    use sys::CUtensorMapSwizzle::*;
    match mode.tma_code() {
        0 => CU_TENSOR_MAP_SWIZZLE_NONE,
        1 => CU_TENSOR_MAP_SWIZZLE_32B,
        2 => CU_TENSOR_MAP_SWIZZLE_64B,
        _ => CU_TENSOR_MAP_SWIZZLE_128B,
    }
}

/// An element type the copy engine moves.
pub trait TmaElem: Elem {
    /// `CU_TENSOR_MAP_DATA_TYPE_*`.
    const DATA_TYPE: sys::CUtensorMapDataType;
}
impl TmaElem for f32 {
    const DATA_TYPE: sys::CUtensorMapDataType =
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
}
impl TmaElem for half::bf16 {
    const DATA_TYPE: sys::CUtensorMapDataType =
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}
impl TmaElem for half::f16 {
    const DATA_TYPE: sys::CUtensorMapDataType =
        sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
}

/// A tensor map in device memory of a rank-`R` tensor, with what it was built from.
#[derive(Debug)]
pub struct TensorMap<const R: usize = 2> {
    buf: CudaSlice<u64>,
    /// The tensor's shape (outermost first: `(rows, cols)` at rank 2).
    pub shape: [i64; R],
    /// The box, as the shape.
    pub boxed: [i64; R],
    /// The swizzle mode.
    pub mode: TmaSwizzle,
    /// The device address of the tensor's origin.
    pub origin: u64,
}

impl<const R: usize> TensorMap<R> {
    /// The same map, described as laid out by `mode` (for tests that show a mismatch between
    /// the map's mode and the kernel's swizzle is seen).
    pub fn with_mode(self, mode: TmaSwizzle) -> Self {
        TensorMap { mode, ..self }
    }
    /// The map's device address (64-byte aligned).
    pub fn ptr(&self) -> *const u8 {
        let (p, _) = self.buf.device_ptr(self.buf.stream());
        p as *const u8
    }
}

/// The tensor map of `t`, rank 2 `(rows, cols)` with unit column stride, loaded `boxed` =
/// `(box_rows, box_cols)` at a time into shared memory laid out by `mode`. `Err` names the
/// violated condition: the copy engine's (box extents 1..=256, the box's row a multiple of 16
/// bytes and at most the swizzle span, the row stride a multiple of 16 bytes below 2^40, the
/// origin 16-byte aligned) or the layout's.
pub fn encode_2d<T: TmaElem>(
    g: &Gpu,
    t: &DeviceTensor<T>,
    boxed: [i64; 2],
    mode: TmaSwizzle,
) -> Result<TensorMap> {
    let p = t.param::<2>("tma source")?;
    let bytes = std::mem::size_of::<T>() as i64;
    if let Err(m) = addressable(p.shape(), p.layout().stride(), bytes, p.engine().0 as u64) {
        return Err(GpuError::Invalid(format!("tensor map: {m}")));
    }
    encode(g, t, boxed, mode)
}

/// The tensor map of `t`, flat of rank `R` (2 to 5, outermost first, the last dimension
/// contiguous), loaded `boxed` at a time into shared memory laid out by `mode` (innermost
/// dimension first). `Err` names the violated condition: the copy engine's
/// ([`addressable_nd`], [`check_box_nd`]) or the layout's.
pub fn encode<T: TmaElem, const R: usize>(
    g: &Gpu,
    t: &DeviceTensor<T>,
    boxed: [i64; R],
    mode: TmaSwizzle,
) -> Result<TensorMap<R>> {
    let p = t.param::<R>("tma source")?;
    let (shape, stride) = (p.shape(), p.layout().stride());
    let bytes = std::mem::size_of::<T>() as i64;
    let bad = |m: String| Err(GpuError::Invalid(format!("tensor map: {m}")));
    if let Err(m) = addressable_nd(&shape, &stride, bytes, p.engine().0 as u64) {
        return bad(m);
    }
    if let Err(m) = check_box_nd(&boxed, bytes, mode) {
        return bad(m);
    }
    // the driver's order: innermost first; a stride per dimension past the first (one of extent
    // 1 is never stepped: the packed stride, rounded up to 16 bytes)
    let dims: Vec<u64> = shape.iter().rev().map(|&e| e as u64).collect();
    let strides: Vec<u64> = (0..R - 1)
        .map(|k| {
            let packed = shape[k + 1..].iter().product::<i64>();
            let d = if shape[k] > 1 { stride[k] } else { packed };
            ((d * bytes) as u64).next_multiple_of(16)
        })
        .rev()
        .collect();
    let boxd: Vec<u32> = boxed.iter().rev().map(|&e| e as u32).collect();
    let estr = vec![1u32; R];
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: the vectors hold rank R (strides rank R - 1) values, the address is the tensor's
    // device origin, checked above against the copy engine's rules; the call only writes `map`.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            T::DATA_TYPE,
            R as u32,
            p.engine().0 as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxd.as_ptr(),
            estr.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            code(mode),
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    if r != sys::CUresult::CUDA_SUCCESS {
        return bad(format!("cuTensorMapEncodeTiled refused it ({r:?})"));
    }
    // SAFETY: written by the successful call
    let map = unsafe { map.assume_init() };
    let buf = g.upload_words(&map.opaque)?;
    Ok(TensorMap {
        buf,
        shape,
        boxed,
        mode,
        origin: p.engine().0 as u64,
    })
}

/// The tensor maps of a GEMM's A, B and C for `gemm_tma` and `gemm_sm90`
/// ([`Gpu::gemm_mapped`]): boxes of `BM x BK` and `BN x BK`, the 128-byte swizzle (the kernels'
/// stages).
#[derive(Debug)]
pub struct GemmMaps {
    /// A's: boxes of `BM x BK`.
    pub a: TensorMap,
    /// B's: boxes of `BN x BK` (`gemm_tma`).
    pub b: TensorMap,
    /// B's: boxes of `B_BOX_ROWS x BK`, half of B's tile (`gemm_sm90`'s blocks each load one
    /// and multicast it to both blocks of their cluster).
    pub b_half: TensorMap,
    /// C's: boxes of `64 x c_box_cols`, 128-byte swizzle, for `gemm_sm90`'s stores; `None`
    /// where the copy engine cannot address C (rows not contiguous or not a multiple of 16
    /// bytes apart, origin not 16-byte aligned): the kernel's threads write it then.
    pub c: Option<TensorMap>,
    /// The origin of the C it was built for.
    c_origin: u64,
}

impl GemmMaps {
    /// The maps of `a` (`M x K`) and `b` (`N x K`), both K-major with rows of a multiple of 16
    /// bytes (`Err` names what is not).
    pub fn new<I: TmaElem, O: TmaElem>(
        g: &Gpu,
        a: &DeviceTensor<I>,
        b: &DeviceTensor<I>,
        c: &DeviceTensor<O>,
    ) -> Result<Self> {
        use tessel_gpu::gemm::{BK, BM, BN};
        use tessel_gpu::gemm_sm90::{c_box_cols, B_BOX_ROWS};
        let bits = 8 * std::mem::size_of::<O>() as i64;
        Ok(GemmMaps {
            a: encode_2d(g, a, [BM, BK], TmaSwizzle::B128)?,
            b: encode_2d(g, b, [BN, BK], TmaSwizzle::B128)?,
            b_half: encode_2d(g, b, [B_BOX_ROWS, BK], TmaSwizzle::B128)?,
            c: encode_2d(g, c, [64, c_box_cols(bits)], TmaSwizzle::B128).ok(),
            c_origin: c.param::<2>("c")?.engine().0 as u64,
        })
    }
    /// Were they built from `a`, `b` and `c`?
    pub fn of<I: Elem, O: Elem>(
        &self,
        a: &DeviceTensor<I>,
        b: &DeviceTensor<I>,
        c: &DeviceTensor<O>,
    ) -> Result<bool> {
        let (pa, pb, pc) = (a.param::<2>("a")?, b.param::<2>("b")?, c.param::<2>("c")?);
        Ok(self.a.origin == pa.engine().0 as u64
            && self.b.origin == pb.engine().0 as u64
            && self.a.shape == pa.shape()
            && self.b.shape == pb.shape()
            && self.c_origin == pc.engine().0 as u64
            && self.c.as_ref().is_none_or(|m| m.shape == pc.shape()))
    }
}

#[cfg(test)]
mod tests {
    use super::TmaSwizzle;

    /// The 128-byte mode of 16-bit elements is the GEMM's stage swizzle: the copy engine fills
    /// the stages exactly as the cp.async path lays them out.
    /// The copy engine's addressing rules, each breach named.
    #[test]
    fn addressable_names_what_the_copy_engine_cannot_address() {
        use super::addressable;
        assert_eq!(addressable([130, 264], [264, 1], 2, 0), Ok(()));
        assert_eq!(addressable([1, 259], [259, 1], 2, 64), Ok(()));
        let e = addressable([130, 260], [260, 1], 2, 0).unwrap_err();
        assert!(e.contains("multiple of 16 bytes"), "{e}");
        let e = addressable([4, 8], [1, 4], 4, 0).unwrap_err();
        assert!(e.contains("column stride 1"), "{e}");
        let e = addressable([4, 8], [4, 1], 4, 0).unwrap_err();
        assert!(e.contains("cover a row"), "{e}");
        let e = addressable([4, 8], [8, 1], 4, 8).unwrap_err();
        assert!(e.contains("16-byte aligned"), "{e}");
    }

    /// Rank 2 to 5: any order of strides (FlashAttention's `(B, S, H, D)`), each breach named.
    #[test]
    fn addressable_nd_names_what_the_copy_engine_cannot_address() {
        use super::{addressable_nd, check_box_nd};
        let bshd = [2, 300, 4, 64];
        assert_eq!(
            addressable_nd(&bshd, &[300 * 256, 64, 256, 1], 2, 0),
            Ok(())
        );
        assert_eq!(addressable_nd(&[1, 4, 8], &[0, 8, 1], 2, 32), Ok(()));
        let e = addressable_nd(&[2; 6], &[32, 16, 8, 4, 2, 1], 2, 0).unwrap_err();
        assert!(e.contains("rank 2 to 5"), "{e}");
        let e = addressable_nd(&[2, 3, 8], &[48, 12, 1], 2, 0).unwrap_err();
        assert!(e.contains("multiple of 16 bytes"), "{e}");
        let e = addressable_nd(&[2, 0, 8], &[64, 8, 1], 2, 0).unwrap_err();
        assert!(e.contains("extents must be 1 to 2^32"), "{e}");
        let e = addressable_nd(&[2, 3, 8], &[64, 8, 2], 2, 0).unwrap_err();
        assert!(e.contains("column stride 1"), "{e}");
        assert_eq!(check_box_nd(&[1, 1, 192, 64], 2, TmaSwizzle::B128), Ok(()));
        let e = check_box_nd(&[1, 1, 257, 64], 2, TmaSwizzle::B128).unwrap_err();
        assert!(e.contains("1 to 256") && e.contains("1x1x257x64"), "{e}");
    }

    #[test]
    fn the_gemm_stages_are_the_128_byte_mode() {
        assert_eq!(TmaSwizzle::B128.swizzle(16).unwrap(), tessel_gpu::gemm::SW);
        assert_eq!(TmaSwizzle::B64.swizzle(32).unwrap().params(), (2, 2, 3));
        assert_eq!(TmaSwizzle::None.swizzle(16).unwrap().apply(77), 77);
        assert!(TmaSwizzle::B32.swizzle(24).is_err());
        for (m, c) in super::MODES.iter().zip(0..) {
            assert_eq!(super::code(*m) as i64, c);
        }
    }
}
