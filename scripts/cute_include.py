#!/usr/bin/env python3
"""Prints the g++ include flags for CuTe C++ from the pip wheels (nvidia-cutlass, nvidia-cuda-cccl,
nvidia-cuda-runtime, nvidia-cuda-crt; scripts/setup.sh installs them), one line, or names what is
missing on stderr and exits 1."""
import os
import sys


def include_dirs():
    dirs, missing = [], []
    try:
        import cutlass_library
        dirs.append(os.path.join(os.path.dirname(cutlass_library.__file__), "source", "include"))
    except ImportError:
        missing.append("nvidia-cutlass (cutlass_library)")
    try:
        import nvidia
        roots = [os.path.join(p, "cu13", "include") for p in nvidia.__path__]
    except ImportError:
        roots = []
    need = {"cccl/cuda": "nvidia-cuda-cccl", "cuda_runtime_api.h": "nvidia-cuda-runtime",
            "crt/host_defines.h": "nvidia-cuda-crt"}
    for rel, wheel in need.items():
        hit = [r for r in roots if os.path.exists(os.path.join(r, rel))]
        if not hit:
            missing.append(wheel)
        elif rel == "cccl/cuda":
            dirs.append(os.path.join(hit[0], "cccl"))
        elif hit[0] not in dirs:
            dirs.append(hit[0])
    return dirs, missing


if __name__ == "__main__":
    dirs, missing = include_dirs()
    if missing:
        print("missing: " + ", ".join(missing) + " (pip install --no-deps them; scripts/setup.sh)",
              file=sys.stderr)
        sys.exit(1)
    print(" ".join("-I" + d for d in dirs))
