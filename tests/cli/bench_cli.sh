#!/bin/bash
# The benchmarks still run (they are run by hand, so nothing else would notice one that stopped
# working): bench_des dispatches a small queue, and bench_whatif replays the shipped trace to a
# pause and forks it, each printing its figures; every bench script parses (bash -n). Nothing
# here is timed.
set -u
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
B=${SS_BUILD_ROOT:?SS_BUILD_ROOT not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT" || exit 1
[ -x "$B/bench/bench_des" ] || { echo "skip: benchmarks not built"; exit 77; }
out=$("$B/bench/bench_des" 20000 10) || fail "bench_des failed: $out"
echo "$out" | grep -q '"events": 20010, "pending": 10' || fail "bench_des: $out"
out=$("$B/bench/bench_whatif" traces/azure-conv-synth.csv 3 60 50 20 2>&1) ||
    fail "bench_whatif failed: $out"
echo "$out" | grep -q "requests in flight" || fail "bench_whatif: no pause line: $out"
echo "$out" | grep -Eq "20 what-ifs of 1 container\(s\) to \+50 ms: .* what-ifs/s" ||
    fail "bench_whatif: no what-if line: $out"
out=$("$B/bench/bench_whatif" traces/azure-conv-synth.csv 3 60 50 20 all 2>&1) ||
    fail "bench_whatif all failed: $out"
echo "$out" | grep -q "20 what-ifs of 4 container(s)" || fail "bench_whatif all: $out"
for f in bench/*.sh; do bash -n "$f" || fail "$f does not parse (bash -n)"; done
echo "bench_cli: ok"
