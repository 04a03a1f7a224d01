#!/usr/bin/env python3
"""Loads tessel's Rust-built PTX through the CUDA driver API (ctypes) and checks copy_u32 and
transpose_u32 against torch on fresh random inputs with poisoned outputs; times both against a
device-to-device copy of the same bytes with CUDA events (median of 50 after warm-up).
A stop-gap harness until the Rust host runtime (cudarc) lands: usage ptx_smoke.py PTX."""
import ctypes, sys, torch

cu = ctypes.CDLL("libcuda.so.1")
def ck(r, what):
    if r != 0:
        raise SystemExit(f"{what} failed: CUresult {r}")
torch.cuda.init(); torch.zeros(1, device="cuda")
mod = ctypes.c_void_p()
ptx = open(sys.argv[1], "rb").read() + b"\0"
ck(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(ptx)), "cuModuleLoadData")
def fn(name):
    f = ctypes.c_void_p(); ck(cu.cuModuleGetFunction(ctypes.byref(f), mod, name.encode()), name); return f
copy_k, tr_k = fn("copy_u32"), fn("transpose_u32")
def launch(f, grid, block, smem, *args):
    vals = [ctypes.c_uint64(a) if isinstance(a, int) and a > 1 << 40 else ctypes.c_int64(a) for a in args]
    ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.cast(ctypes.byref(v), ctypes.c_void_p) for v in vals])
    ck(cu.cuLaunchKernel(f, *grid, *block, smem, None, ptrs, None), "cuLaunchKernel")
def copy(src, dst):
    n = src.numel(); tiles = (n + 4095) // 4096
    launch(copy_k, (min(tiles, 132 * 16), 1, 1), (256, 1, 1), 0, src.data_ptr(), dst.data_ptr(), n)
def transpose(src, dst):
    m, n = src.shape
    launch(tr_k, ((n + 31) // 32, (m + 31) // 32, 1), (32, 8, 1), 32 * 33 * 4, src.data_ptr(), dst.data_ptr(), m, n)
ok = True
for n in [1, 3, 4095, 4096, 4097, 1 << 20, (1 << 24) + 7]:
    x = torch.randn(n, device="cuda"); y = torch.full_like(x, float("nan"))
    copy(x, y); torch.cuda.synchronize()
    good = torch.equal(x, y); ok &= good
    print(f"copy_u32 n={n}: {'ok' if good else 'MISMATCH'}")
for m, n in [(1, 1), (31, 33), (100, 257), (1024, 1024), (4097, 1023)]:
    x = torch.randn(m, n, device="cuda"); y = torch.full((n, m), float("nan"), device="cuda")
    transpose(x, y); torch.cuda.synchronize()
    good = torch.equal(x.t(), y); ok &= good
    print(f"transpose_u32 {m}x{n}: {'ok' if good else 'MISMATCH'}")
def med(f, reps=50):
    for _ in range(5): f()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); b.synchronize(); ts.append(a.elapsed_time(b))
    return sorted(ts)[len(ts) // 2]
N = 8192
x = torch.randn(N * N, device="cuda"); y = torch.empty_like(x)
gb = 2 * x.numel() * 4 / 1e9
t_ref = med(lambda: y.copy_(x)); t_copy = med(lambda: copy(x, y))
x2 = x.view(N, N); y2 = torch.empty_like(x2)
t_tr = med(lambda: transpose(x2, y2))
print(f"| kernel | ms | GB/s | % of D2D copy |")
print(f"| D2D copy (torch copy_) 256 MiB f32 | {t_ref:.3f} | {gb / t_ref * 1e3:.0f} | 100 |")
print(f"| copy_u32 256 MiB | {t_copy:.3f} | {gb / t_copy * 1e3:.0f} | {100 * t_ref / t_copy:.1f} |")
print(f"| transpose_u32 8192x8192 f32 (padded smem) | {t_tr:.3f} | {gb / t_tr * 1e3:.0f} | {100 * t_ref / t_tr:.1f} |")
print("ALL OK" if ok else "FAILURES")
sys.exit(0 if ok else 1)
