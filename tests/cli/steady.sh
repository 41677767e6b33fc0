#!/bin/bash
# The steady-state fast path changes nothing: a replay of 1,000,000 requests under KV pressure
# (tens of thousands of recompute preemptions, decodes crossing block boundaries, batches
# forming and draining) prints the same bytes with the fast path on (the default) and off
# (SLICESIM_NO_STEADY=1: every iteration asks its batching policy), and so do shorter replays
# under Sarathi with swapping and least-outstanding routing, under Orca and static batching,
# and of scenarios with SLA tiers and TBT bounds (some broken) and with SliceScheduler's what-ifs
# (whose forks take steady runs too). (tests/cli/golden.sh runs every golden case both ways.)
# Under the sanitizers 3,000 requests, the two tenants and SliceScheduler run, so that the
# steady runs' code is checked there too.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
# Under the sanitizers (40x slower; a debug build checks every invariant after every event
# unless told not to, which takes steady runs off) a small part runs, with --no-check.
small=0
if sanitized; then small=1; fi

both() { # both NAME ARGS...: the replay's JSON with the fast path on and off is the same
    local name=$1
    shift
    "$S" replay "$@" --no-check --db none --no-progress --json >"$T/$name.on" 2>"$T/$name.err" ||
        fail "$name: slicesim replay $*: $(cat "$T/$name.err")"
    SLICESIM_NO_STEADY=1 "$S" replay "$@" --no-check --db none --no-progress --json >"$T/$name.off" \
        2>"$T/$name.err" || fail "$name: SLICESIM_NO_STEADY=1 slicesim replay $*: $(cat "$T/$name.err")"
    for f in on off; do
        sed -e 's/"\([a-z_]*wall_s\)": [0-9.e+-]*/"\1": 0/g' \
            -e 's/"decisions_per_s": [0-9.e+-]*/"decisions_per_s": 0/g' "$T/$name.$f" >"$T/$name.$f.json"
    done
    cmp -s "$T/$name.on.json" "$T/$name.off.json" ||
        fail "$name: the fast path changes the replay: $(diff <(tr ',' '\n' <"$T/$name.off.json") \
            <(tr ',' '\n' <"$T/$name.on.json") | head -10)"
}
field() { grep -o "\"$1\": [0-9]*" "$2" | head -1 | cut -d' ' -f2; }

E=${SS_SOURCE_ROOT:-.}/experiments
N=1000000
[ $small = 0 ] || N=3000
"$S" trace gen --rate 30 --requests $N --prompt lognormal:300:0.8:8:2000 \
    --output lognormal:24:1.0:1:400 --seed 3 -o "$T/1m.csv" 2>"$T/err" || fail "trace gen: $(cat "$T/err")"
both million --trace "$T/1m.csv" --replicas 2 --gpu-mem-util 0.21
[ "$(field requests "$T/million.on")" = $N ] || fail "million: not every request replayed"
[ "$(field preemptions "$T/million.on")" -gt $((N / 100)) ] ||
    fail "million: too few preemptions to exercise the fast path's way back ($(field preemptions "$T/million.on"))"
if [ $small = 1 ]; then
    both two-tenants -c "$E/example-two-tenants.ini" --set run.duration_s=120
    both slice -c "$E/slice-vs-container.ini" --set run.duration_s=30 --set run.warmup_s=5 --ops slice
    echo "steady: the fast path on and off print the same bytes ($N requests, two tenants," \
         "SliceScheduler; a part, under -Db_sanitize=$SS_SANITIZE)"
    exit 0
fi

head -200001 "$T/1m.csv" >"$T/200k.csv"
both sarathi-swap --trace "$T/200k.csv" --replicas 3 --gpu-mem-util 0.2 --batching sarathi \
    --token-budget 256 --preempt swap --routing lor
[ "$(field swap_outs "$T/sarathi-swap.on")" -gt 0 ] || fail "sarathi-swap: nothing was swapped"
both orca --trace "$T/200k.csv" --replicas 3 --batching orca --max-batch 32
both static --trace "$T/200k.csv" --replicas 3 --batching static --max-batch 8
# with an observer (the timeline) no step ends within another's handler, but the steady ones
# still take the one-pass path: the timeline, every iteration in it, is the same both ways
head -2001 "$T/1m.csv" >"$T/2k.csv"
for f in on off; do
    off=0
    [ $f = on ] || off=1
    SLICESIM_NO_STEADY=$off "$S" replay --trace "$T/2k.csv" --no-check \
        --replicas 2 --gpu-mem-util 0.21 --db none --no-progress --timeline "$T/tl.$f.json" \
        >/dev/null 2>"$T/err" || fail "timeline: the replay failed: $(cat "$T/err")"
done
cmp -s "$T/tl.on.json" "$T/tl.off.json" || fail "timeline: the fast path changes the timeline"
both tiers -c "$E/multitier-llama2-7b.ini" --set run.duration_s=300
both two-tenants -c "$E/example-two-tenants.ini" --set run.duration_s=300
grep -q '"sla_violation_rate": 0\.[0-9]*[1-9]' "$T/two-tenants.on" ||
    fail "two-tenants: no SLA broken: the TBT bounds are not exercised"
both slice -c "$E/slice-vs-container.ini" --set run.duration_s=60 --set run.warmup_s=10 \
    --ops slice --set tenant.chat.rate_scale=2
echo "steady: the fast path on and off print the same bytes (1,000,000 and 3 x 200,000 requests;" \
     "tiers, TBT bounds, SliceScheduler)"
