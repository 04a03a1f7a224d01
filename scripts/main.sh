#!/usr/bin/env bash
# The main job (README's first command): build tessel and run the calculator tour.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release
./target/release/tessel eval < examples/tour.txt
./target/release/tessel show '(4,8):(8,1)'
