#!/usr/bin/env python3
"""tessel's memory-bound kernels and torch's on the same sizes, one table, on the GPU present.

Each side's figure is a same-process ratio: tessel's `tessel bench` divides by `cuMemcpyDtoD` of
the same bytes in its run; torch's ops here divide by torch's own device-to-device copy of the
same bytes (`dst.copy_(src)` of contiguous byte tensors: a `cudaMemcpyAsync`), timed in this run.
Times are CUDA-event medians of --reps launches after 5 warm-ups; bytes = bytes read + written.

usage: python3 scripts/peers.py [--tessel PATH] [--reps N] [--rows KERNELS]
  --tessel PATH   the tessel binary whose `bench copy/transpose/rmsnorm` rows join the table
                  (default: .device/tessel if present, else target/release/tessel, else none)
  --rows KERNELS  torch's rows only, for `tessel bench --peers`: of the comma-separated kernels
                  (copy, transpose, rmsnorm, axpby), one line each `case<TAB>who<TAB>GB/s<TAB>%`,
                  the cases named as tessel bench names them

Without torch or without a GPU it says so and exits 3.
"""
import argparse
import os
import re
import subprocess
import sys


def torch_rows(reps, kernels=("copy", "transpose", "rmsnorm", "axpby")):
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

    # the cases as `tessel bench` names them (its `--results` rows)
    types = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    if "copy" in kernels:
        for t, n, size in (("f32", 1 << 26, "2^26"), ("bf16", 1 << 27, "2^27"), ("f32", (1 << 26) + 5, "2^26+5")):
            x = rand(n, types[t])
            y = torch.empty_like(x)
            row(f"copy {t} {size}", "torch y.copy_(x)", 2 * x.nbytes, lambda: y.copy_(x))
    if "transpose" in kernels:
        for r, c in ((8192, 8192), (8191, 8193)):
            for t in ("f32", "f16", "bf16"):
                x = rand((r, c), types[t])
                row(f"transpose {t} {r}x{c}", "torch x.t().contiguous()", 2 * x.nbytes, lambda: x.t().contiguous())
    if "rmsnorm" in kernels:
        rms = torch.compile(lambda x, w: F.rms_norm(x, (x.shape[-1],), w, 1e-6))
        for t in ("bf16", "f32"):
            for r, c in ((16384, 4096), (16384, 12288), (4096, 32768)):
                x, w = rand((r, c), types[t]), rand(c, types[t])
                row(f"rmsnorm {t} {r}x{c}", "torch F.rms_norm", 2 * x.nbytes, lambda: F.rms_norm(x, (c,), w, 1e-6))
                row(f"rmsnorm {t} {r}x{c}", "torch.compile(F.rms_norm)", 2 * x.nbytes, lambda: rms(x, w))
    if "axpby" in kernels:
        # y = alpha x + beta y: x and y read, y written (3 bytes moved per byte of x)
        axpby = torch.compile(lambda x, y: 1.5 * x + 0.5 * y)
        for t in ("bf16", "f32"):
            x, y = rand((8192, 8192), types[t]), rand((8192, 8192), types[t])
            row(f"axpby {t} 8192x8192", "torch 1.5*x + 0.5*y", 3 * x.nbytes, lambda: 1.5 * x + 0.5 * y)
            row(f"axpby {t} 8192x8192", "torch.compile(1.5*x + 0.5*y)", 3 * x.nbytes, lambda: axpby(x, y))
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
    ap.add_argument("--rows", default=None)
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("scripts/peers.py: torch is not installed: no peers to measure", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("scripts/peers.py: no GPU (torch.cuda.is_available() is false)", file=sys.stderr)
        return 3
    if a.rows is not None:
        kernels = a.rows.split(",")
        unknown = [k for k in kernels if k not in ("copy", "transpose", "rmsnorm", "axpby")]
        if unknown:
            print(f"scripts/peers.py: --rows takes copy, transpose, rmsnorm, axpby, not {unknown}", file=sys.stderr)
            return 2
        _, version, trows = torch_rows(a.reps, kernels)
        for k, op, ms, gbps, ref, pct in trows:
            print(f"{k}\t{op}\t{gbps:.1f}\t{pct:.1f}")
        return 0
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
