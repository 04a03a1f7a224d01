//! layout-core's TMA swizzle codes are the driver's (cudarc's bindings of cuda.h).

use layout_core::SwizzleMode;

#[test]
fn swizzle_codes_are_the_drivers() {
    use cudarc::driver::sys::CUtensorMapSwizzle as S;
    for (mode, code) in [
        (SwizzleMode::None, S::CU_TENSOR_MAP_SWIZZLE_NONE),
        (SwizzleMode::B32, S::CU_TENSOR_MAP_SWIZZLE_32B),
        (SwizzleMode::B64, S::CU_TENSOR_MAP_SWIZZLE_64B),
        (SwizzleMode::B128, S::CU_TENSOR_MAP_SWIZZLE_128B),
    ] {
        assert_eq!(mode.tma_code(), code as i64);
    }
}
