#!/usr/bin/env bash
# tessel's host algebra against CuTe C++ on the same expressions, in one run on this machine:
# builds benches/cute/algebra.cpp with g++ -O2 against the CUTLASS / CCCL / CUDA runtime headers of
# the pip wheels (scripts/setup.sh installs them), runs it, runs `cargo bench --bench algebra`, and
# prints each expression's median ns on both sides and the ratio tessel / CuTe.
#
# usage: scripts/algebra-vs-cute.sh        (CXX picks the compiler; g++ by default)
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${CXX:-g++}
command -v "$CXX" >/dev/null || { echo "needs a C++ compiler: $CXX not found (set CXX)" >&2; exit 2; }
inc_flags=$(python3 tests/cute_agree.py --includes) || exit 2
read -r -a inc <<< "$inc_flags"
out=target/cute-bench
mkdir -p "$out"
"$CXX" -std=c++17 -O2 -w "${inc[@]}" benches/cute/algebra.cpp -o "$out/algebra"
echo "CuTe C++ ($("$CXX" --version | head -1), -O2) ..." >&2
"$out/algebra" > "$out/cute.tsv"
echo "tessel (cargo bench --bench algebra) ..." >&2
cargo bench --bench algebra -- --noplot >&2
python3 - "$out/cute.tsv" <<'PY'
import glob, json, os, sys

cute = {}
for line in open(sys.argv[1]):
    name, ns = line.rstrip("\n").split("\t")
    cute[name] = float(ns)
ours = {}
for bench in glob.glob("target/criterion/*/new/benchmark.json"):
    est = os.path.join(os.path.dirname(bench), "estimates.json")
    ours[json.load(open(bench))["full_id"]] = json.load(open(est))["median"]["point_estimate"]
print(f"{'expression':<74} {'tessel ns':>10} {'CuTe ns':>9} {'ratio':>7}")
for name, c in cute.items():
    note = " [static strides]"
    key = name[: -len(note)] if name.endswith(note) else name
    t = ours.get(key)
    if t is None:
        print(f"{name:<74} {'-':>10} {c:>9.2f}   (no tessel bench of that name)")
        continue
    print(f"{name:<74} {t:>10.2f} {c:>9.2f} {t / c:>6.1f}x")
PY
