#!/usr/bin/env bash
# Builds the calculator's page: tessel-web (tessel-calc and layout-core) for wasm32, embedded as
# base64 in tessel-wasm.js beside web/www's index.html and app.js, in the static folder
# target/web/. Open target/web/index.html in a browser: it works offline, from disk.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
cargo build --quiet -p tessel-web --release --target wasm32-unknown-unknown
out=target/web
mkdir -p "$out"
cp web/www/index.html web/www/app.js "$out/"
wasm=${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/tessel_web.wasm
{ printf 'const TESSEL_WASM = "'; base64 -w0 "$wasm"; printf '";\n'; } > "$out/tessel-wasm.js"
echo "$PWD/$out/index.html ($(du -k "$wasm" | cut -f1) KiB of wasm)"
