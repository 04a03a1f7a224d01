#!/usr/bin/env bash
# Prints a directory to put on LD_LIBRARY_PATH so that tessel finds NCCL: cudarc looks NCCL up as
# libnccl.so (and libnccl.so.<CUDA major>), while pip's nvidia-nccl-cu12 (torch's) and many
# systems install only libnccl.so.2. The directory holds a libnccl.so link to the first
# libnccl.so.2 found (the loader's cache, then Python's nvidia.nccl package).
#   usage: export LD_LIBRARY_PATH=$(bash scripts/nccl-path.sh):$LD_LIBRARY_PATH
set -euo pipefail
lib=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / { print $NF; exit }')
if [ -z "$lib" ]; then
  lib=$(python3 -c 'import nvidia.nccl, os; d = os.path.join(list(nvidia.nccl.__path__)[0], "lib"); print(os.path.join(d, "libnccl.so.2"))' 2>/dev/null || true)
fi
[ -n "$lib" ] && [ -e "$lib" ] || { echo "nccl-path: no libnccl.so.2 found (ldconfig -p, python's nvidia.nccl)" >&2; exit 1; }
dir=${TMPDIR:-/tmp}/tessel-nccl
mkdir -p "$dir"
ln -sf "$lib" "$dir/libnccl.so"
echo "$dir"
