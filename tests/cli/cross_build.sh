#!/bin/bash
# Determinism across builds: the same scenarios and seeds must give identical results from
# different builds of slicesim (debug with its per-event invariant checks, release, the
# AddressSanitizer + UBSan build, ...): the `replay --json` object without its wall-clock
# fields, and every row of every results table without the wall-clock and build columns,
# floats compared exactly (Python's repr round-trips them).
# Usage: cross_build.sh SLICESIM_A SLICESIM_B [...]; under meson (suite 'cross') the builds
# are $SLICESIM and those in SS_CROSS_BUILDS (space-separated), and the test skips without
# them. tools/run-tests.sh runs it on its three builds.
set -u
ROOT=${SS_SOURCE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
    [ -n "${SS_CROSS_BUILDS:-}" ] || {
        echo "skip: set SS_CROSS_BUILDS to the other builds' slicesim binaries"
        exit 77
    }
    read -r -a bins <<<"${SLICESIM:?SLICESIM not set} $SS_CROSS_BUILDS"
fi
[ ${#bins[@]} -ge 2 ] || fail "need at least two builds to compare"
for i in "${!bins[@]}"; do
    [ -x "${bins[$i]}" ] || fail "${bins[$i]}: not an executable"
    bins[$i]=$(readlink -f "${bins[$i]}")
done
E=$ROOT/experiments
TR=$ROOT/traces/azure-conv-synth.csv
# The scenarios: multi-tenant tiers and SLAs; Llumnix live migration; SliceScheduler's
# what-ifs and offloaded prefills; random routing with preemption by swap under overload.
scenarios=(
    "-c $E/example-two-tenants.ini --set run.duration_s=120"
    "-c $E/slice-vs-container.ini --set run.duration_s=20 --set run.warmup_s=2 --set policy.cluster=llumnix --set tenant.chat.rate_scale=2"
    "-c $E/slice-vs-container.ini --set run.duration_s=20 --set run.warmup_s=2 --ops slice --set tenant.chat.rate_scale=1.5"
    "--trace $TR --limit 1500 --replicas 2 --rate-scale 6 --gpu-mem-util 0.5 --routing random --preempt swap --seed 7"
)

# dump DB: every row of every results table, wall-clock and build columns left out.
dump() {
    python3 - "$1" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
skip = {"created_utc", "version", "build", "wall_s", "result_json", "slice_wall_s"}
for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
    cols = [c[1] for c in db.execute(f"PRAGMA table_info({t})") if c[1] not in skip]
    sel = ", ".join(cols)
    for row in db.execute(f"SELECT {sel} FROM {t} ORDER BY {sel}"):
        print(t, *(repr(v) for v in row), sep="|")
PY
}

# norm JSON: the --json object without its wall-clock fields, keys sorted.
norm() {
    python3 - "$1" <<'PY'
import json, sys
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items()
                if k not in ("wall_s", "decision_wall_s", "decisions_per_s")}
    if isinstance(o, list):
        return [strip(v) for v in o]
    return o
print(json.dumps(strip(json.load(open(sys.argv[1]))), sort_keys=True, indent=0))
PY
}

for k in "${!scenarios[@]}"; do
    for i in "${!bins[@]}"; do
        d=$T/s$k-b$i
        mkdir -p "$d"
        # shellcheck disable=SC2086 # the scenario is a list of words
        (cd "$d" && "${bins[$i]}" replay ${scenarios[$k]} --no-progress --json --db r.db \
            >run.json 2>err) || fail "${bins[$i]}: scenario $k: $(cat "$d/err")"
        norm "$d/run.json" >"$d/json" || fail "scenario $k: JSON"
        dump "$d/r.db" >"$d/rows" || fail "scenario $k: rows"
        [ -s "$d/rows" ] || fail "scenario $k: no rows"
        if [ "$i" -gt 0 ]; then
            for f in json rows; do
                cmp -s "$T/s$k-b0/$f" "$d/$f" || fail "scenario $k (${scenarios[$k]}): $f of \
${bins[0]} and ${bins[$i]} differ: $(diff "$T/s$k-b0/$f" "$d/$f" | head -4)"
            done
        fi
    done
    echo "scenario $k: $(wc -l <"$T/s$k-b0/rows") rows identical across ${#bins[@]} builds"
done
echo "cross_build: all checks passed"
