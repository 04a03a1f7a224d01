#!/usr/bin/env bash
# Installs what tessel needs on a fresh machine: the stable toolchain's rustfmt and clippy,
# CUTLASS's Python reference (pycute) for the agreement tests.
set -euo pipefail
rustup component add rustfmt clippy >/dev/null 2>&1 || true
if ! python3 -c "import pycute" 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check --no-deps "nvidia-cutlass==4.2.0.0"
fi
