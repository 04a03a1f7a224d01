#!/usr/bin/env python3
"""torch's scaled_dot_product_attention forward, each backend (cuDNN, FlashAttention-2, memory-
efficient) on the shapes `tessel bench attention` times: batch x sequence = 16k, 16 heads,
sequence 1k to 16k, head dimension 64, 128 and 256, causal and not, bf16, (B, H, S, D)
contiguous. CUDA events around each of 10 launches after 3 warm-ups; the median, in TFLOP/s
counting 4 B H S^2 D, halved by the causal mask (as FlashAttention counts). A backend that
refuses a shape is reported so.

`--rows` (for `tessel bench attention --peers`): tab-separated rows only, `case  backend  TFLOP/s`,
the cases named as `tessel bench` names them (`attention bf16 d128 causal S16384`); `--reps N`
timed launches each."""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = [
    ("cudnn", SDPBackend.CUDNN_ATTENTION),
    ("flash2", SDPBackend.FLASH_ATTENTION),
    ("efficient", SDPBackend.EFFICIENT_ATTENTION),
]


def median_ms(f, reps=10, warmup=3):
    for _ in range(warmup):
        f()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for a, b in ev:
        a.record()
        f()
        b.record()
    torch.cuda.synchronize()
    ms = sorted(a.elapsed_time(b) for a, b in ev)
    return ms[len(ms) // 2]


def main():
    rows = "--rows" in sys.argv[1:]
    reps = 10
    if "--reps" in sys.argv[1:]:
        reps = int(sys.argv[sys.argv.index("--reps") + 1])
    if not torch.cuda.is_available():
        print("sdpa.py: no CUDA device", file=sys.stderr if rows else sys.stdout)
        return 3
    if not rows:
        print(f"device: {torch.cuda.get_device_name()}; torch {torch.__version__}")
    for d in (64, 128, 256):
        for seq in (1024, 2048, 4096, 8192, 16384):
            b, h = 16384 // seq, 16
            q, k, v = (torch.randn(b, h, seq, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            for causal in (False, True):
                flops = 4 * b * h * seq * seq * d / (2 if causal else 1)
                cells = []
                mask = "causal" if causal else "full"
                for name, backend in BACKENDS:
                    try:
                        with sdpa_kernel(backend):
                            ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), reps)
                        cells.append(f"{name} {ms:7.3f} ms {flops / ms / 1e9:6.1f}")
                        if rows:
                            print(f"attention bf16 d{d} {mask} S{seq}\ttorch {name}\t{flops / ms / 1e9:.1f}")
                    except RuntimeError as e:
                        cells.append(f"{name} refused ({str(e).splitlines()[0][:40]})")
                if not rows:
                    print(f"sdpa bf16 d{d} {mask:<6} B {b:>2} S {seq:>5} H {h}: " + " | ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
