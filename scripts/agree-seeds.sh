#!/usr/bin/env bash
# The differential tests of the algebra over several seeds: tests/pycute_agree.py (pycute) and
# tests/cute_agree.py (CuTe C++) on COUNT random expressions for each seed, each seed printed, so
# that a kind of difference the tests do not know is found by running them, not by chance. CI runs
# one fixed seed of each (tests/pycute.rs, tests/cute_cpp.rs); this is the wider sweep.
#
# usage: scripts/agree-seeds.sh [SEEDS [COUNT [SEED...]]]
#   SEEDS  how many seeds to draw at random when none are given (default 10)
#   COUNT  expressions per seed and test (default 3000)
#   SEED.. the seeds to run (e.g. a failing one again)
# Needs target/release/tessel (cargo build --release) and what `tests/cute_agree.py --check` names.
# Ends with one line: 'N passed, M failed' over every expression of every run.
set -u
cd "$(dirname "$0")/.."
n=${1:-10}
count=${2:-3000}
shift $(($# < 2 ? $# : 2))
seeds=("$@")
if [ ${#seeds[@]} -eq 0 ]; then
    for _ in $(seq "$n"); do seeds+=($((RANDOM * 32768 + RANDOM))); done
fi
exe=target/release/tessel
[ -x "$exe" ] || { echo "no $exe: run cargo build --release first"; exit 2; }
python3 tests/cute_agree.py --check >/dev/null || {
    echo "CuTe C++ is missing:"; python3 tests/cute_agree.py --check; exit 2; }
echo "seeds: ${seeds[*]} ($count expressions each)"
passed=0 failed=0 bad=()
for s in "${seeds[@]}"; do
    for t in pycute_agree cute_agree; do
        out=$(python3 "tests/$t.py" "$exe" "$count" "$s" 2>&1)
        rc=$?
        last=$(printf '%s\n' "$out" | tail -n 1)
        if [[ $last =~ ([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
            passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
        else
            failed=$((failed + count)) rc=1
        fi
        echo "seed $s, $t: $last"
        if [ $rc -ne 0 ]; then
            bad+=("$t $s")
            printf '%s\n' "$out" | grep -v -E '^ +[0-9]+ ' | head -n 40 | sed 's/^/    /'
        fi
    done
done
[ ${#bad[@]} -eq 0 ] || echo "failing: ${bad[*]} (again: scripts/agree-seeds.sh 1 $count SEED)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
