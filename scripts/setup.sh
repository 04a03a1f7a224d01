#!/usr/bin/env bash
# Installs what tessel needs on a fresh machine (idempotent, quick when all is there):
#  - the stable toolchain's rustfmt and clippy;
#  - the pinned nightly with rust-src, which build.rs uses to compile gpu/ to PTX;
#  - pip's nvidia-cuda-nvcc for ptxas (the PTX check; no CUDA install or GPU needed);
#  - CUTLASS's Python reference (pycute) and CuTe's C++ headers for the agreement tests, with the
#    CCCL and CUDA runtime headers that CuTe's headers include (headers only, no CUDA install);
#  - the wasm32 target (the calculator's page) and, where apt-get can install them, Debian's
#    chromium and chromedriver (the page's test in a headless browser).
set -euo pipefail
NIGHTLY=nightly-2026-05-20
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if ! rustup run "$NIGHTLY" rustc --version >/dev/null 2>&1 \
   || [ ! -d "$(rustup run "$NIGHTLY" rustc --print sysroot)/lib/rustlib/src/rust/library" ]; then
  rustup toolchain install "$NIGHTLY" --profile minimal --component rust-src,llvm-tools
fi
pip() { python3 -m pip install --quiet --disable-pip-version-check "$@"; }
python3 -c "import pycute" 2>/dev/null || pip --no-deps "nvidia-cutlass==4.2.0.0"
[ -n "$(bash "$(dirname "$0")/ptxas-path.sh" 2>/dev/null)" ] || pip --no-deps "nvidia-cuda-nvcc==13.5.37"
python3 -c "import nvidia.cu13, os, sys; p = nvidia.cu13.__path__[0];
sys.exit(not all(os.path.isfile(os.path.join(p, 'include', f)) for f in
  ('cccl/cuda/std/cstdint', 'cuda_runtime_api.h', 'crt/host_defines.h')))" 2>/dev/null \
  || pip --no-deps "nvidia-cuda-cccl==13.0.85" "nvidia-cuda-runtime==13.0.96" "nvidia-cuda-crt==13.0.88"
rustup target list --installed 2>/dev/null | grep -q '^wasm32-unknown-unknown$' \
  || rustup target add wasm32-unknown-unknown
if ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1 && command -v apt-get >/dev/null; then
  sudo=$([ "$(id -u)" = 0 ] || echo sudo)
  $sudo apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 \
    || { $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q chromium chromium-driver >/dev/null 2>&1; } \
    || echo "setup.sh: could not install chromium and chromium-driver (the page's browser test needs them)" >&2
fi
