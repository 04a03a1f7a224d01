//! The kernels. Every index is a `layout-core` layout evaluated at a coordinate; the layouts that
//! describe a tile are `const`, so the compiler computes them.

use crate::device::*;
use layout_core::{const_ok, FlatLayout, Layout};

/// Copy: threads per block.
pub const COPY_THREADS: i64 = 256;
/// Copy: 32-bit words per vector access.
pub const COPY_VEC: i64 = 4;
/// Copy: vectors per thread.
pub const COPY_ITERS: i64 = 4;
/// Copy: the block's tile as (value, thread, iteration) -> word offset. A thread's 4 words are
/// contiguous (one 128-bit access), the warp's accesses are contiguous, iterations follow.
pub const COPY_TV: Layout = const_ok!(Layout::parse("(4,256,4):(1,4,1024)"));
/// Copy: words per block tile.
pub const COPY_TILE: i64 = COPY_TV.size();

/// `dst[i] = src[i]` for `i < n` 32-bit words. Vector accesses where a whole vector is in bounds,
/// single words in the ragged tail. Launch with `COPY_THREADS` threads and any grid
/// (grid-stride over tiles).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn copy_u32(src: *const u32, dst: *mut u32, n: i64) {
    let t = thread_x();
    let mut tile = block_x();
    while tile * COPY_TILE < n {
        let base = tile * COPY_TILE;
        let mut k = 0;
        while k < COPY_ITERS {
            // (value 0, thread t, iteration k) of this tile
            let off = base + COPY_TV.call(t * COPY_VEC + k * COPY_VEC * COPY_THREADS);
            if off + COPY_VEC <= n {
                store_v4(dst.add(off as usize), load_v4(src.add(off as usize)));
            } else {
                let mut v = 0;
                while v < COPY_VEC {
                    let o = base + COPY_TV.call(v + t * COPY_VEC + k * COPY_VEC * COPY_THREADS);
                    if o < n {
                        *dst.add(o as usize) = *src.add(o as usize);
                    }
                    v += 1;
                }
            }
            k += 1;
        }
        tile += grid_x();
    }
}

/// Transpose: the tile edge.
pub const TILE: i64 = 32;
/// Transpose: threads per block, as (x, y).
pub const TRANSPOSE_THREADS: (i64, i64) = (32, 8);
/// Transpose: (thread x, thread y, iteration) -> column-major tile coordinate `i + 32 j`: thread x
/// walks the tile's columns (coalesced rows of the input), y and the iteration its rows.
pub const TRANSPOSE_TV: Layout = const_ok!(Layout::parse("(32,8,4):(32,1,8)"));
/// Transpose: the tile in shared memory, row `i`, column `j` at `33 i + j`: the padding puts a
/// warp's column reads in 32 different banks.
pub const SMEM_PADDED: Layout = const_ok!(Layout::parse("(32,32):(33,1)"));
/// Transpose: shared-memory words per block.
pub const SMEM_WORDS: i64 = SMEM_PADDED.cosize();

/// `dst[j][i] = src[i][j]` for an `m x n` row-major `src` of 32-bit elements. Launch with
/// `(ceil(n/32), ceil(m/32))` blocks of 32x8 threads and `4 * SMEM_WORDS` bytes of dynamic shared
/// memory.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn transpose_u32(src: *const u32, dst: *mut u32, m: i64, n: i64) {
    let smem = core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<u32>();
    // the global tensors, with run-time extents: (m,n):(n,1) in, (n,m):(m,1) out
    let (g_in, g_out) = match (FlatLayout::row_major([m, n]), FlatLayout::row_major([n, m])) {
        (Ok(a), Ok(b)) => (a, b),
        _ => trap(),
    };
    let (tx, ty) = (thread_x(), thread_y());
    let (bm, bn) = (block_y() * TILE, block_x() * TILE);
    let mut k = 0;
    while k < 4 {
        let c = TRANSPOSE_TV.call(tx + 32 * ty + 256 * k);
        let (i, j) = (c % TILE, c / TILE);
        if g_in.contains([bm + i, bn + j]) {
            let g = g_in.dot([bm + i, bn + j]);
            *smem.add(SMEM_PADDED.dot(&[i, j]) as usize) = *src.add(g as usize);
        }
        k += 1;
    }
    sync_threads();
    let mut k = 0;
    while k < 4 {
        // the same thread layout over the output tile: (i, j) is now (output row, output column)
        let c = TRANSPOSE_TV.call(tx + 32 * ty + 256 * k);
        let (i, j) = (c % TILE, c / TILE);
        // output row bn + i holds input column bn + i; output column bm + j, input row bm + j
        if g_out.contains([bn + i, bm + j]) {
            let g = g_out.dot([bn + i, bm + j]);
            *dst.add(g as usize) = *smem.add(SMEM_PADDED.dot(&[j, i]) as usize);
        }
        k += 1;
    }
}
