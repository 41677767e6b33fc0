#!/bin/bash
# Golden results: every case of tests/golden/cases.txt (replays, compares and a sweep over
# every batching, routing and cluster policy, SliceScheduler, auto-scaling, re-allocation, the
# engines, pipeline stages, swapping and prefix caching) prints the JSON stored in
# tests/golden/NAME.json, byte for byte apart from wall-clock fields. A refactor that keeps behaviour leaves them all unchanged; a change that means to
# change results regenerates them with SS_GOLDEN_UPDATE=1 and says why in its commit
# (tests/golden/README.md). Each case runs twice: as it is, and with the steady-state fast path
# off (SLICESIM_NO_STEADY=1: every iteration asks its batching policy), which must print the
# same bytes.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
if sanitized; then
    # 40x slower under the sanitizers (six minutes): the golden results are a behaviour check,
    # which the optimised builds make; the sanitized suite runs the same code in the other tests
    echo "golden: skipped under -Db_sanitize=$SS_SANITIZE (run in the optimised builds)"
    exit 77
fi
cd "$ROOT" || exit 1
G=tests/golden
bad=0
n=0
while read -r name args; do
    case "$name" in '' | '#'*) continue ;; esac
    read -ra argv <<<"$args"
    case "${argv[0]}" in
    sweep) extra=(--json --db "$T/$name.db") ;;
    *) extra=(--json --db none) ;;
    esac
    if ! "$S" "${argv[@]}" "${extra[@]}" >"$T/$name.raw" 2>"$T/$name.err"; then
        echo "golden: $name: slicesim ${argv[*]} failed: $(cat "$T/$name.err")" >&2
        bad=1
        continue
    fi
    [ "${argv[0]}" != sweep ] || rm -f "$T/$name.db"
    if ! SLICESIM_NO_STEADY=1 "$S" "${argv[@]}" "${extra[@]}" >"$T/$name.slow" 2>"$T/$name.err"
    then
        echo "golden: $name: SLICESIM_NO_STEADY=1 slicesim ${argv[*]} failed: $(cat "$T/$name.err")" >&2
        bad=1
        continue
    fi
    # wall-clock fields: wall_s, decision_wall_s (SliceScheduler's own time), decisions_per_s
    for f in raw slow; do
        sed -e 's/"\([a-z_]*wall_s\)": [0-9.e+-]*/"\1": 0/g' \
            -e 's/"decisions_per_s": [0-9.e+-]*/"decisions_per_s": 0/g' "$T/$name.$f" >"$T/$name.$f.json"
    done
    mv "$T/$name.raw.json" "$T/$name.json"
    n=$((n + 1))
    if ! cmp -s "$T/$name.json" "$T/$name.slow.json"; then
        echo "golden: $name: slicesim ${argv[*]} prints other bytes with SLICESIM_NO_STEADY=1:" >&2
        diff <(tr ',' '\n' <"$T/$name.slow.json") <(tr ',' '\n' <"$T/$name.json") | head -20 >&2
        bad=1
    fi
    if [ "${SS_GOLDEN_UPDATE:-0}" = 1 ]; then
        cp "$T/$name.json" "$G/$name.json" || fail "cannot write $G/$name.json"
    elif ! cmp -s "$T/$name.json" "$G/$name.json"; then
        echo "golden: $name: slicesim ${argv[*]} differs from $G/$name.json:" >&2
        diff <(tr ',' '\n' <"$G/$name.json" 2>/dev/null) <(tr ',' '\n' <"$T/$name.json") | head -20 >&2
        bad=1
    fi
done <"$G/cases.txt"
[ "$n" -ge 21 ] || fail "only $n golden cases ran"
[ "$bad" = 0 ] || fail "golden results differ (SS_GOLDEN_UPDATE=1 regenerates them; say why)"
echo "golden: $n cases unchanged"
