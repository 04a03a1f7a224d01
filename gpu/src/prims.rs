//! `device_prims`: one launch that exercises the device functions no tessel kernel uses — warp
//! shuffles (`idx`, `down`, `up`), votes and atomics — writing results whose values are known, so
//! that `tests/gpu.rs` checks each on the GPU. Launched with 2 blocks of 64 threads on `out`, 16
//! words: `out[3]` starting at `u32::MAX`, the rest at 0.

/// Words of `out`.
pub const WORDS: usize = 16;
/// Blocks of the launch.
pub const BLOCKS: u32 = 2;
/// Threads per block.
pub const THREADS: u32 = 64;

/// What `out` holds after the launch: `(index, value, what)`.
pub const EXPECTED: [(usize, u32, &str); 13] = [
    (0, BLOCKS * THREADS, "atomic_add_u32 of 1 by every thread"),
    (
        1,
        0x4280_0000,
        "atomic_add_f32 of 0.5 by every thread (64.0)",
    ),
    (
        2,
        BLOCKS * THREADS - 1,
        "atomic_max_u32 of the global thread index",
    ),
    (3, 5, "atomic_min_u32 of the global thread index + 5"),
    (4, 42, "atomic_cas_u32 0 -> 42 by one thread"),
    (5, 0, "the old value atomic_cas_u32 returned"),
    (6, 0xaaaa_aaaa, "ballot(lane is odd)"),
    (7, 1, "vote_any(lane == 3)"),
    (8, 1, "vote_all(lane < 32)"),
    (9, 0, "vote_all(lane < 31)"),
    (10, 50, "shfl_idx(10 lane, 5) in lane 0"),
    (11, 31, "shfl_down(lane, 1) in lane 31 (its own)"),
    (12, 4, "shfl_up(lane, 1) in lane 5"),
];

/// The kernel: every thread takes part in the atomics, warp 0 of block 0 writes the warp results.
///
/// # Safety
/// `out` must be `WORDS` words of global memory, initialised as the module doc says.
#[cfg(target_arch = "nvptx64")]
pub unsafe fn device_prims(out: *mut u32) {
    use crate::device::*;
    let (b, t) = (block_x() as u32, thread_x() as u32);
    let g = b * THREADS + t;
    atomic_add_u32(out, 1);
    atomic_add_f32(out.add(1) as *mut f32, 0.5);
    atomic_max_u32(out.add(2), g);
    atomic_min_u32(out.add(3), g + 5);
    let lane = t % 32;
    let ballot = ballot(lane % 2 == 1);
    let any = vote_any(lane == 3);
    let all = vote_all(lane < 32);
    let all31 = vote_all(lane < 31);
    let idx = shfl_idx(10 * lane, 5);
    let down = shfl_down(lane, 1);
    let up = shfl_up(lane, 1);
    if g == 0 {
        *out.add(5) = atomic_cas_u32(out.add(4), 0, 42);
        *out.add(6) = ballot;
        *out.add(7) = any as u32;
        *out.add(8) = all as u32;
        *out.add(9) = all31 as u32;
        *out.add(10) = idx;
    }
    if g == 31 {
        *out.add(11) = down;
    }
    if g == 5 {
        *out.add(12) = up;
    }
}
