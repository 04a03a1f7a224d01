#!/usr/bin/env bash
# The PTX check (CI runs it): builds the kernels for sm_80, sm_90 and sm_90a through build.rs, assembles
# every kernel with ptxas, fails on any spill or stack frame, and writes each kernel's registers
# to gpu/registers.txt, which it prints (with what changed since the committed file).
set -euo pipefail
cd "$(dirname "$0")/.."
PTXAS=$(bash scripts/ptxas-path.sh)
[ -x "$PTXAS" ] || { echo "check-ptx: no ptxas; run scripts/setup.sh" >&2; exit 1; }
# tessel's binary as the tests build it (their dev-dependencies' features unified in, and every
# test binary beside it), so that CI's test stage after this compiles nothing more
TESSEL_ARCH=sm_80,sm_90,sm_90a cargo test --workspace --release --no-run --quiet
REPORT=gpu/registers.txt
{
  echo "# ptxas -v of every kernel ($("$PTXAS" --version | tail -1)); written by scripts/check-ptx.sh"
  for ARCH in sm_80 sm_90 sm_90a; do
    # the embedded PTX, as the driver gets it (launch bounds written in by build.rs)
    PTX=$(mktemp --suffix=.ptx)
    target/release/tessel ptx --arch "$ARCH" > "$PTX"
    "$PTXAS" -arch="$ARCH" -v "$PTX" -o /dev/null 2>&1 | awk -v arch="$ARCH" '
      /Compiling entry function/ { gsub(/\047/, "", $7); k = $7 }
      /stack frame/ { stack = $1; spill = $5 + $9 }
      /Used [0-9]+ registers/ { for (i = 1; i <= NF; i++) if ($i == "registers,") r = $(i-1)
        printf "%-6s %-28s %3d registers  %d stack  %d spill\n", arch, k, r, stack, spill }'
    rm -f "$PTX"
  done | sort
} > "$REPORT.new"
mv "$REPORT.new" "$REPORT"
cat "$REPORT"
git --no-pager diff --stat -- "$REPORT" 2>/dev/null || true
if awk 'NR > 1 && ($5 != 0 || $7 != 0) { bad = 1 } END { exit !bad }' "$REPORT"; then
  echo "check-ptx: a kernel spills or uses a stack frame" >&2
  exit 1
fi
echo "check-ptx: $(($(wc -l < "$REPORT") - 1)) kernels assemble for sm_80, sm_90 and sm_90a, no spills, no stack"
