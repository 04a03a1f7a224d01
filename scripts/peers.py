#!/usr/bin/env python3
"""tessel's memory-bound kernels and torch's on the same sizes, one table, on the GPU present.

Each side's figure is a same-process ratio: tessel's `tessel bench` divides by `cuMemcpyDtoD` of
the same bytes in its run; torch's ops here divide by torch's own device-to-device copy of the
same bytes (`dst.copy_(src)` of contiguous byte tensors: a `cudaMemcpyAsync`), timed in this run.
Times are CUDA-event medians of --reps launches after 5 warm-ups; bytes = bytes read + written.

usage: python3 scripts/peers.py [--tessel PATH] [--reps N]
  --tessel PATH   the tessel binary whose `bench copy/transpose/rmsnorm` rows join the table
                  (default: .device/tessel if present, else target/release/tessel, else none)

Without torch or without a GPU it says so and exits 3.
"""
import argparse
import os
import re
import subprocess
import sys


def torch_rows(reps):
    import torch
    import torch.nn.functional as F

    dev = torch.device("cuda")
    gen = torch.Generator(device=dev)
    gen.manual_seed(int.from_bytes(os.urandom(4), "little"))

    def rand(shape, dtype):
        # never zeros: inputs in [-1, 1)
        return (torch.rand(shape, generator=gen, device=dev, dtype=torch.float32) * 2 - 1).to(dtype)

    def time_ms(f):
        for _ in range(5):
            f()
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
        for a, b in ev:
            a.record()
            f()
            b.record()
        torch.cuda.synchronize()
        ms = sorted(a.elapsed_time(b) for a, b in ev)
        return ms[len(ms) // 2]

    def memcpy_ms(nbytes):
        s = torch.empty(nbytes, dtype=torch.uint8, device=dev).random_(generator=gen)
        d = torch.empty_like(s)
        return time_ms(lambda: d.copy_(s))

    rows = []

    def row(kernel, op, nbytes_moved, f):
        ms = time_ms(f)
        ref = memcpy_ms(nbytes_moved // 2)
        rows.append((kernel, op, ms, nbytes_moved / ms / 1e6, ref, 100.0 * ref / ms))

    for dtype, n, name in ((torch.float32, 1 << 26, "copy_f32 n = 2^26"), (torch.bfloat16, 1 << 27, "copy_bf16 n = 2^27")):
        x = rand(n, dtype)
        y = torch.empty_like(x)
        row(name, "y.copy_(x)", 2 * x.nbytes, lambda: y.copy_(x))
    for dtype, (r, c), name in (
        (torch.float32, (8192, 8192), "transpose f32 8192x8192"),
        (torch.float16, (8192, 8192), "transpose f16 8192x8192"),
        (torch.bfloat16, (8192, 8192), "transpose bf16 8192x8192"),
        (torch.float32, (8191, 8193), "transpose f32 8191x8193"),
    ):
        x = rand((r, c), dtype)
        row(name, "x.t().contiguous()", 2 * x.nbytes, lambda: x.t().contiguous())
    rms = torch.compile(lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6))
    for dtype, (r, c), name in (
        (torch.bfloat16, (16384, 4096), "rmsnorm bf16 16384x4096"),
        (torch.float32, (16384, 4096), "rmsnorm f32 16384x4096"),
        (torch.bfloat16, (16384, 12288), "rmsnorm bf16 16384x12288"),
        (torch.bfloat16, (4096, 32768), "rmsnorm bf16 4096x32768"),
    ):
        x, w = rand((r, c), dtype), rand(c, dtype)
        row(name, "F.rms_norm", 2 * x.nbytes, lambda: F.rms_norm(x, (c,), w, 1e-6))
        row(name, "torch.compile(F.rms_norm)", 2 * x.nbytes, lambda: rms(x, w))
    return torch.cuda.get_device_name(), torch.__version__, rows


def tessel_rows(binary, reps):
    """`tessel bench` rows: (kernel, ms, GB/s, memcpy ms, % of copy)."""
    rows = []
    for k in ("copy", "transpose", "rmsnorm"):
        out = subprocess.run([binary, "bench", k, "--reps", str(reps)], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"tessel bench {k}: exit {out.returncode}\n{out.stdout}{out.stderr}", file=sys.stderr)
            continue
        for line in out.stdout.splitlines():
            m = re.match(r"^(\S.*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)%", line)
            if m:
                rows.append((m.group(1), float(m.group(2)), float(m.group(3)), float(m.group(4)), float(m.group(6))))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessel", default=None)
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("scripts/peers.py: torch is not installed: no peers to measure", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("scripts/peers.py: no GPU (torch.cuda.is_available() is false)", file=sys.stderr)
        return 3
    binary = a.tessel
    if binary is None:
        binary = next((p for p in (".device/tessel", "target/release/tessel") if os.path.exists(p)), None)
    name, version, trows = torch_rows(a.reps)
    print(f"device: {name}; torch {version}; CUDA-event medians of {a.reps} launches; % of the same run's D2D copy of the same bytes")
    print()
    print("| kernel | who | ms | GB/s | memcpy ms | % of D2D copy |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    if binary:
        for k, ms, gbps, ref, pct in tessel_rows(binary, a.reps):
            print(f"| `{k}` | tessel | {ms:.4f} | {gbps:.0f} | {ref:.4f} | {pct:.1f} |")
    else:
        print("| (no tessel binary: --tessel PATH) | | | | | |")
    for k, op, ms, gbps, ref, pct in trows:
        print(f"| {k} | torch `{op}` | {ms:.4f} | {gbps:.0f} | {ref:.4f} | {pct:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
