#!/usr/bin/env bash
# Runs every shell block (```sh) of docs/writing-kernels.md, or of the Markdown file given
# (README.md's kernel), in order, as written, in a fresh directory (the documents' "empty
# directory"), with TESSEL set to this checkout. CI runs it for both (no GPU: the programs say so
# and check their simulated GPU runs); on a GPU machine it runs the kernels there.
set -euo pipefail
TESSEL=$(cd "$(dirname "$0")/.." && pwd)
export TESSEL
doc="${1:-docs/writing-kernels.md}"
case "$doc" in /*) ;; *) doc="$TESSEL/$doc" ;; esac
name=$(basename "$doc")
# one target directory for the documents' projects and the example: tessel is compiled once
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$TESSEL/target/writing-kernels}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
script="$work/commands.sh"
{
  echo 'set -euo pipefail'
  awk '/^```sh$/ { on = 1; next } /^```$/ { on = 0; next } on' "$doc"
} > "$script"
blocks=$(grep -c '^```sh$' "$doc")
echo "writing-kernels: running the $blocks shell blocks of $name in $work"
(cd "$work" && bash "$script")
echo "writing-kernels: every command of $name ran"
