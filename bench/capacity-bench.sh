#!/bin/bash
# What stopping probes early and running searches in parallel save `slicesim capacity` on the
# main scenario (experiments/slice-vs-container.ini: static-best, container and slice, two
# seeds, bisection to 2 %, no database), in a release build, measured in one run so that the
# ratios compare like with like on the same machine:
#  - CPU seconds (user + system, the workers' included) and wall seconds of every probe in
#    full (--full-probes --jobs 1, as capacity ran before), of probes that stop once their
#    verdict is certain (--jobs 1), and of those with the searches in parallel (--jobs N, N
#    the online CPUs, at least 2);
#  - that the three answer alike: the JSON of --jobs N is --jobs 1's byte for byte, and
#    --full-probes' but for the stopped probes' own figures (lower bounds there).
# With --fit DIR it also times `slicesim fit DIR` (the default fit, e.g. on
# $SLICESIM_DATA/serving/vllm-0.15-h100-blis) with every run replayed at every evaluation
# (--full-replays) and with evaluations stopped between runs, and checks the two profiles
# are the same. Speed is measured here only, never in a test.
# Usage: bench/capacity-bench.sh [--fit DIR] [-- EXTRA CAPACITY ARGS...]
set -eu
cd "$(dirname "$0")/.."
FIT=""
if [ "${1:-}" = "--fit" ]; then
    FIT=${2:?--fit needs the folder of serving runs}
    shift 2
fi
[ "${1:-}" = "--" ] && shift
bash tools/build-release.sh
S=./build-release/src/slicesim
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
N=$(nproc 2>/dev/null || echo 2)
[ "$N" -ge 2 ] || N=2
ARGS=(capacity -c experiments/slice-vs-container.ini --policies static-best,container,slice
      --seeds 2 --tol 0.02 --db none --no-progress --json "$@")

# timed NAME CMD...: run CMD with stdout to $T/NAME.out; "wall cpu" seconds into $T/NAME.t
timed() {
    local name=$1
    shift
    /usr/bin/time -f '%e %U %S' -o "$T/$name.time" "$@" >"$T/$name.out" 2>"$T/$name.err" ||
        { cat "$T/$name.err" >&2; exit 1; }
    awk '{ printf "%.2f %.2f\n", $1, $2 + $3 }' "$T/$name.time" >"$T/$name.t"
}
wall() { cut -d' ' -f1 "$T/$1.t"; }
cpu() { cut -d' ' -f2 "$T/$1.t"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

echo "capacity: ${ARGS[*]:1}"
timed full "$S" "${ARGS[@]}" --full-probes --jobs 1
timed stop "$S" "${ARGS[@]}" --jobs 1
timed par "$S" "${ARGS[@]}" --jobs "$N"
cmp -s "$T/stop.out" "$T/par.out" || { echo "--jobs $N's JSON differs from --jobs 1's" >&2; exit 1; }
python3 - "$T/stop.out" "$T/full.out" <<'PY' || { echo "stopped probes changed the answer" >&2; exit 1; }
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
n = 0
for pa, pb in zip(a["policies"], b["policies"]):
    for ra, rb in zip(pa.get("runs", [pa]), pb.get("runs", [pb])):
        for qa, qb in zip(ra["probes"], rb["probes"]):
            if qa.get("stopped"):
                n += 1
                for k in ("sla_miss", "goodput_tok_per_s", "pooled_sla_miss", "tenant_sla_miss",
                          "stopped", "stopped_at_s"):
                    qa.pop(k, None)
                    qb.pop(k, None)
assert a == b
print(f"same answer; {n} probes stopped early")
PY
printf "every probe in full (--full-probes --jobs 1): %7.2f s CPU %7.2f s wall\n" "$(cpu full)" "$(wall full)"
printf "stopped when certain (--jobs 1):              %7.2f s CPU %7.2f s wall  (%sx less CPU)\n" \
    "$(cpu stop)" "$(wall stop)" "$(ratio "$(cpu full)" "$(cpu stop)")"
printf "and %d searches at once (--jobs %d):            %7.2f s CPU %7.2f s wall  (%sx less wall than --jobs 1)\n" \
    "$N" "$N" "$(cpu par)" "$(wall par)" "$(ratio "$(wall stop)" "$(wall par)")"

if [ -n "$FIT" ]; then
    echo "fit: $FIT (the default terms and iterations, --jobs $N)"
    timed fitfull "$S" fit "$FIT" --name bench-fit -o "$T/full.ini" --no-progress --full-replays
    timed fitstop "$S" fit "$FIT" --name bench-fit -o "$T/stop.ini" --no-progress
    nocmd() { awk '/^; Command:/ { skip = 1 } skip && /^;/ { next } { skip = 0; print }' "$1"; }
    cmp -s <(nocmd "$T/full.ini") <(nocmd "$T/stop.ini") ||
        { echo "stopped evaluations changed the fitted profile" >&2; exit 1; }
    grep -h "evaluations stopped" "$T/fitstop.err" || true
    printf "every run at every evaluation (--full-replays): %7.2f s CPU %7.2f s wall\n" \
        "$(cpu fitfull)" "$(wall fitfull)"
    printf "evaluations stopped between runs:                %7.2f s CPU %7.2f s wall  (%sx less wall)\n" \
        "$(cpu fitstop)" "$(wall fitstop)" "$(ratio "$(wall fitfull)" "$(wall fitstop)")"
fi
