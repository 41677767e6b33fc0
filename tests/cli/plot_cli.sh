#!/bin/bash
# `slicesim plot`: every kind renders to valid PNG and SVG from a small database (a compare of
# two policies at two loads), for a sweep and for plain runs; bad input gives one clear error.
# Skips (exit 77) where gnuplot is not installed.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
command -v gnuplot >/dev/null || { echo "skip: gnuplot is not installed"; exit 77; }
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
KINDS="throughput-vs-load sla-vs-load latency-cdf gpu-timeline idle-slices tiers"
is_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

"$S" compare -c "$ROOT/experiments/slice-vs-container.ini" --set run.duration_s=60 \
    --set run.warmup_s=5 --set tenant.chat.tiers=2 --policies container,slice --rates 0.5,1 \
    --db p.db >/dev/null 2>err || fail "compare: $(cat err)"
"$S" plot p.db -o figs >out 2>err || fail "plot: $(cat err)"
for k in $KINDS; do
    is_png "figs/$k.png" || fail "$k.png is not a PNG"
    [ "$(stat -c %s "figs/$k.png")" -gt 5000 ] || fail "$k.png is nearly empty"
    grep -q "<svg" "figs/$k.svg" || fail "$k.svg is not SVG"
    grep -q "$k" out || fail "not listed: $k"
done
grep -q "container" figs/throughput-vs-load.svg || fail "the legend names the policies"
grep -q "slice" figs/tiers.svg || fail "the tiers legend names the policies"

# a database of plain replays, one kind, PNG only
"$S" replay --limit 300 --db r.db >/dev/null 2>&1 || fail "replay"
"$S" replay --limit 300 --rate-scale 2 --db r.db >/dev/null 2>&1 || fail "replay x2"
"$S" plot r.db --kind throughput-vs-load,gpu-timeline --format png -o plain >/dev/null 2>err ||
    fail "plot of plain runs: $(cat err)"
is_png plain/throughput-vs-load.png || fail "plain throughput-vs-load.png"
[ ! -e plain/gpu-timeline.svg ] || fail "--format png wrote SVG"

expect_error 2 "no-such.db: cannot open" "$S" plot no-such.db
expect_error 2 "unknown kind .*'pie'" "$S" plot p.db --kind pie
expect_error 2 "load 7: no run at that load" "$S" plot p.db --load 7 -o x
expect_error 2 "expected png, svg or both" "$S" plot p.db --format gif
echo "plot_cli: all checks passed"
