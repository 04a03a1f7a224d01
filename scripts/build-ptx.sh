#!/usr/bin/env bash
# Builds the device crate gpu/ to PTX with rustc's NVPTX backend and checks it with ptxas.
#   bash scripts/build-ptx.sh [sm_XX]      (default sm_90; prints the PTX path and ptxas's report)
# Installs the pinned nightly and (for the check) pip's nvidia-cuda-nvcc if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ARCH=${1:-${TESSEL_ARCH:-sm_90}}
NIGHTLY=nightly-2026-05-20
if ! rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1; then
  rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src,llvm-tools
fi
# The PTX is the `--emit=asm` output; the link step that would follow needs llvm-bitcode-linker,
# which is not available: a linker that does nothing keeps the build clean.
LINKER="$PWD/scripts/nvptx-no-link.sh"
(cd gpu && cargo +"$NIGHTLY" rustc --quiet --release --crate-type cdylib --target nvptx64-nvidia-cuda -Zbuild-std=core \
   --target-dir "target/$ARCH" -- --emit=asm -C target-cpu="$ARCH" -C linker="$LINKER")
PTX="gpu/target/$ARCH/nvptx64-nvidia-cuda/release/deps/tessel_gpu.s"
echo "$PTX"
PTXAS=$(python3 -c "import nvidia, os; print(os.path.join(os.path.dirname(nvidia.__path__[0] + '/'), 'cu13/bin/ptxas'))" 2>/dev/null || true)
if [ ! -x "$PTXAS" ]; then
  python3 -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvcc
  PTXAS=$(python3 -c "import nvidia, os; print(os.path.join(nvidia.__path__[0], 'cu13/bin/ptxas'))")
fi
"$PTXAS" -arch="$ARCH" -v "$PTX" -o /dev/null 2>&1 | grep -E "entry function|stack frame|registers"
