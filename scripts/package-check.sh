#!/usr/bin/env bash
# The crates as a registry takes them (CI runs it): each packaged from its own files, then checked
# from its package alone against the others' packages.
#
# `cargo package` verifies by building every package to machine code in a target directory of its
# own (415 s on a 2-core machine). Here the packages are unpacked side by side, each patched in for
# its registry version ([patch.crates-io]), and `cargo check` compiles the same sources and runs the
# same build scripts without code generation, in the checkout's target directory, so the
# third-party crates clippy checked serve as they are. A build script that writes into its
# package's sources is refused, as `cargo package` refuses it. The PTX is left out (TESSEL_NO_PTX:
# check-ptx builds it from the checkout); tessel-web is not published.
set -euo pipefail
cd "$(dirname "$0")/.."
export TESSEL_NO_PTX=1
rm -rf target/package
# --allow-dirty: a local run with uncommitted edits packages them. Offline first: the index as the
# checkout's builds left it serves (online, cargo updates it once for each package: 2 minutes here)
pack() { cargo package --workspace --exclude tessel-web --allow-dirty --no-verify "$@"; }
pack --offline || pack
work=target/package/unpacked
mkdir -p "$work"
crates=()
for c in target/package/*.crate; do
  tar xzf "$c" -C "$work"
  crates+=("$(basename "$c" .crate)")
done
{
  echo "# written by scripts/package-check.sh: the packages, each in place of its registry version"
  echo "[workspace]"
  echo 'resolver = "2"'
  printf 'members = [%s]\n' "$(printf '"%s", ' "${crates[@]}")"
  echo "[patch.crates-io]"
  for d in "${crates[@]}"; do echo "${d%-*} = { path = \"$d\" }"; done
} > "$work/Cargo.toml"
# the versions the checkout pins (the entries of crates not packaged are dropped)
cp Cargo.lock "$work/"
sources() {
  (cd "$work" && find . -name Cargo.lock -prune -o -type f -print0 | sort -z | xargs -0 sha256sum)
}
before=$(sources)
CARGO_TARGET_DIR="$PWD/target" cargo check --manifest-path "$work/Cargo.toml" --workspace
if [ "$(sources)" != "$before" ]; then
  echo "package-check: a build script changed its package's files:" >&2
  diff <(echo "$before") <(sources) >&2 || true
  exit 1
fi
echo "package-check: ${#crates[@]} packages (${crates[*]}) check from their own files"
