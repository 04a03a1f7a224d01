//! # layout-core
//!
//! CuTe's layout algebra in `no_std` Rust, with every operation a `const fn`: a layout computed
//! from constants is itself a constant, evaluated by the compiler (this is how CuTe's static
//! integers become Rust). The same code runs in GPU kernels (PTX) and on the host.
//!
//! ```
//! use layout_core::*;
//! // ((2,2),3):((24,2),8), computed at compile time
//! const R: Layout = const_ok!(composition(
//!     &const_ok!(Layout::parse("(6,2):(8,2)")),
//!     &const_ok!(Layout::parse("(4,3):(3,1)")),
//! ));
//! assert_eq!(R, Layout::parse("((2,2),3):((24,2),8)").unwrap());
//! ```
//!
//! Every operation states its post-conditions next to it; the property tests check them.
#![no_std]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

mod error;
pub use error::{LayoutError, Result};

mod int_tuple;
pub use int_tuple::{IntTuple, MAX_LEAVES, MAX_TOKENS};

mod layout;
pub use layout::Layout;

mod flat;
pub use flat::{tiles_of, FlatLayout};

mod tiler;
pub use tiler::{Tiler, MAX_TILER_MODES};

mod coalesce;
pub use coalesce::{coalesce, coalesce_profile, filter, filter_profile};

mod composition;
pub use composition::{composition, composition_tiler};

mod complement;
pub use complement::{complement, complement_default, complement_shape};

mod inverse;
pub use inverse::{left_inverse, right_inverse};

mod divide;
pub use divide::{flat_divide, logical_divide, logical_divide_tiler, tiled_divide, zipped_divide};

mod product;
pub use product::{
    blocked_product, flat_product, logical_product, logical_product_tiler, raked_product,
    tile_to_shape, tiled_product, zipped_product,
};

mod swizzle;
pub use swizzle::{ComposedLayout, Swizzle};

mod arith;
pub use arith::{make_identity_layout, Codomain, MAX_ARITH_RANK};

mod partition;
pub use partition::{
    dice_tuple, flat_coord, inner_partition, local_partition, local_partition_proj, local_tile,
    local_tile_proj, outer_partition,
};

mod tensor;
pub use tensor::{
    counting, make_fragment_like, make_identity_tensor, Array, Counting, Engine, Ptr, Tensor,
};

mod flat_tensor;
pub use flat_tensor::{
    make_coord_tensor, CoordTensor, FlatTensor, Partition, ThrCoordTensor, ThrCoords, ThrTensor,
    TvCoords,
};

mod tiled_copy;
pub use tiled_copy::{
    make_tiled_copy_from_tv, make_tiled_copy_row_major, make_tiled_copy_tv, ThrCopy, TiledCopy,
};

mod mma;
pub use mma::{
    make_tiled_mma, make_tiled_mma_permuted, MmaAtom, MmaType, Operand, ThrMma, TiledMma,
    MMA_ATOMS, SM80_16X8X16_F16F16F16F16_TN, SM80_16X8X16_F32BF16BF16F32_TN,
    SM80_16X8X16_F32F16F16F32_TN, SM80_16X8X8_F16F16F16F16_TN, SM80_16X8X8_F32BF16BF16F32_TN,
    SM80_16X8X8_F32F16F16F32_TN,
};

mod gmma;
pub use gmma::{
    check_swizzle_codes, gmma_ab_layout, gmma_c_layout, gmma_layout_atom, make_gmma_desc,
    make_gmma_desc_k, make_gmma_descs_k, GmmaAtom, GmmaDescriptor, GmmaMajor, GmmaSource,
    SwizzleMode, GMMA_ATOMS, GMMA_A_REG_64X16, SM90_64X128X16_F32BF16BF16_RS,
    SM90_64X128X16_F32BF16BF16_SS, SM90_64X128X16_F32F16F16_RS, SM90_64X128X16_F32F16F16_SS,
    SM90_64X256X16_F32BF16BF16_RS, SM90_64X256X16_F32BF16BF16_SS, SM90_64X256X16_F32F16F16_RS,
    SM90_64X256X16_F32F16F16_SS, SM90_64X64X16_F32BF16BF16_RS, SM90_64X64X16_F32BF16BF16_SS,
    SM90_64X64X16_F32F16F16_RS, SM90_64X64X16_F32F16F16_SS,
};

mod mesh;
pub use mesh::{gathered, mesh_coord, rebuild, shard, shard_shape, Rebuild};

mod recast;
pub use recast::{downcast, recast_layout, upcast};

mod copy_atom;
pub use copy_atom::{
    make_tiled_copy_a, make_tiled_copy_b, make_tiled_copy_c, make_tiled_copy_impl, smem_wavefronts,
    AtomTiledCopy, CopyAtom, CopyTraits, COPY_ATOMS, SM75_U16X2_LDSM_T, SM75_U16X4_LDSM_T,
    SM75_U16X8_LDSM_T, SM75_U32X1_LDSM_N, SM75_U32X2_LDSM_N, SM75_U32X4_LDSM_N,
    SM80_CP_ASYNC_CACHEGLOBAL_U128, SM80_CP_ASYNC_CACHEGLOBAL_ZFILL_U128, UNIVERSAL_COPY_U32,
};
