#!/usr/bin/env bash
# The main job (README's first command): install what is missing, build tessel (and its kernels'
# PTX), run every kernel on the GPU against the host execution of the same partitioning code, tune
# the kernels that have several configurations for this GPU and benchmark them; without a GPU, run
# the host executions and say so. Then the calculator tour.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release
T=./target/release/tessel
status=0
$T run all || status=$?
case $status in
  0) $T tune && $T bench ;;
  3) echo ">>> no GPU on this machine: the kernels ran as host executions only (nothing was run or timed on a GPU)" ;;
  *) echo ">>> a kernel check FAILED" >&2; exit "$status" ;;
esac
echo
echo ">>> the layout calculator (examples/tour.txt)"
$T eval < examples/tour.txt
$T show '(4,8):(8,1)'
echo
echo ">>> a kernel of one's own: examples/softmax (a crate outside the workspace, built with tessel-build)"
(cd examples/softmax && cargo run --release)
