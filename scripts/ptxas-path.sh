#!/usr/bin/env bash
# Prints the path of the ptxas that pip's nvidia-cuda-nvcc installed (nothing if none).
python3 - <<'PY'
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
for root in nvidia.__path__:
    for p in sorted(glob.glob(os.path.join(root, "*", "bin", "ptxas"))):
        if os.access(p, os.X_OK):
            print(p)
            raise SystemExit(0)
PY
