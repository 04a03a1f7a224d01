#!/usr/bin/env bash
# The device check (docs/perf.md), run on the GPU machine from the repository root with the
# binaries in .device/ (tessel, test-gpu): every kernel against its host execution, the GPU
# tests, compute-sanitizer's memcheck, racecheck and synccheck, then `tessel bench` twice.
T=.device/tessel
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$T run all; echo "run-all rc=$?"
.device/test-gpu 2>&1 | grep -E "test result|SKIP|panicked"
for tool in memcheck racecheck synccheck; do
  for args in "transpose 257 131 --dtype all --smem all" "rmsnorm 37 12296 --dtype all --warps all" \
              "axpby 37 1000 --dtype all" "copy 100003 --dtype all" \
              "gemm 130 260 136 --dtype all" "gemm 130 264 136 --dtype all" \
              "gemm 17 33 65 --dtype all"; do
    # shellcheck disable=SC2086
    echo "$tool $args: $(compute-sanitizer --tool $tool $T run $args 2>&1 \
      | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|checks passed' | tr '\n' ' ')"
  done
done
$T bench
$T bench
