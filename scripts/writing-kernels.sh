#!/usr/bin/env bash
# Runs every shell block of docs/writing-kernels.md, in order, as written, in a fresh directory
# (the guide's "empty directory"), with TESSEL set to this checkout. CI runs it (no GPU: the
# programs say so and check their host executions); on a GPU machine it runs the kernels there.
set -euo pipefail
TESSEL=$(cd "$(dirname "$0")/.." && pwd)
export TESSEL
# one target directory for the guide's project and the example: tessel is compiled once
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TESSEL/target/writing-kernels}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
script="$work/guide.sh"
{
  echo 'set -euo pipefail'
  awk '/^```sh$/ { on = 1; next } /^```$/ { on = 0; next } on' "$TESSEL/docs/writing-kernels.md"
} > "$script"
blocks=$(grep -c '^```sh$' "$TESSEL/docs/writing-kernels.md")
echo "writing-kernels: running the guide's $blocks shell blocks in $work"
(cd "$work" && bash "$script")
echo "writing-kernels: every command of docs/writing-kernels.md ran"
