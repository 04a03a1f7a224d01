"""torch's F.layer_norm (eager, and compiled by torch.compile) and its device copy of the same bf16
and f32 matrices, timed with CUDA events launch by launch in turn (as the Rust bench times
tessel's); one line per dtype and version, as % of torch's copy. Run by the example's bench when
torch is present."""
import argparse

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=16384)
p.add_argument("--cols", type=int, default=4096)
p.add_argument("--reps", type=int, default=50)
p.add_argument("--device", type=int, default=0)
a = p.parse_args()
dev = torch.device("cuda", a.device)

for dtype in (torch.bfloat16, torch.float32):
    x = (torch.rand(a.rows, a.cols, device=dev) * 16 - 8).to(dtype)
    y = torch.empty_like(x)
    w = torch.rand(a.cols, device=dev).to(dtype) + 0.5
    b = torch.rand(a.cols, device=dev).to(dtype) - 0.5
    eager = lambda: F.layer_norm(x, (a.cols,), w, b, 1e-5)
    compiled = torch.compile(lambda x, w, b: F.layer_norm(x, (a.cols,), w, b, 1e-5))
    fs = [eager, lambda: compiled(x, w, b), lambda: y.copy_(x)]
    times = [[] for _ in fs]
    for _ in range(10):
        for f in fs:
            f()
    torch.cuda.synchronize()
    ev = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
           for _ in fs] for _ in range(a.reps)]
    for r in range(a.reps):
        for i, f in enumerate(fs):
            ev[r][i][0].record()
            f()
            ev[r][i][1].record()
    torch.cuda.synchronize()
    for r in range(a.reps):
        for i in range(len(fs)):
            times[i].append(ev[r][i][0].elapsed_time(ev[r][i][1]))
    med = [sorted(t)[len(t) // 2] for t in times]
    gb = 2 * x.numel() * x.element_size() / 1e9
    name = {torch.bfloat16: "bf16", torch.float32: "f32"}[dtype]
    for i, what in ((0, "F.layer_norm"), (1, "torch.compile")):
        print(f"  {what:<13} {name:<4} {a.rows}x{a.cols}: {med[i] * 1e3:8.1f} us {gb / med[i] * 1e3:7.0f} GB/s"
              f" | copy_ {med[2] * 1e3:8.1f} us {gb / med[2] * 1e3:7.0f} GB/s | {100 * med[2] / med[i]:5.1f}% of copy")
