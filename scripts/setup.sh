#!/usr/bin/env bash
# Installs what tessel needs on a fresh machine (idempotent, quick when all is there):
#  - the stable toolchain's rustfmt and clippy;
#  - the pinned nightly with rust-src, which build.rs uses to compile gpu/ to PTX;
#  - pip's nvidia-cuda-nvcc for ptxas (the PTX check; no CUDA install or GPU needed);
#  - CUTLASS's Python reference (pycute) for the agreement tests.
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
