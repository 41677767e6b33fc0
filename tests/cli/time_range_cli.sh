#!/bin/bash
# CLI tests at the edges of simulated time: idle GPU time summed over many GPUs over months does
# not wrap (issue 13, item 4), and a rate scale that would push arrivals beyond the simulated
# time range is bad input, refused before anything runs or is stored, at every entry point
# that shapes arrivals: replay --rate-scale, --set tenant.X.rate_scale, compare --rates and a
# sweep's rate grid (issue 13, item 3).
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# ---- idle GPU time: 1,024 GPUs, two requests 121 days apart ---------------------------------
cat >two.csv <<'EOF'
request_id,arrival_s,tenant,prompt_tokens,output_tokens
0,0,a,100,10
1,10454400,a,100,10
EOF
"$S" replay --trace two.csv --replicas 1024 --db two.db >table 2>err || fail "replay: $(cat err)"
grep -Eq "idle GPU slices: [0-9]+, [0-9]+\.[0-9] GPU-s \((99\.[0-9]|100\.0) % of GPU time\)" table ||
    fail "idle line: $(grep idle table)"
# every GPU idles all but a few ms of the window: the stored total is 1,024 windows, nearly
[ "$(sql two.db 'SELECT idle_gpu_s > 0.9999 * 1024 * window_s AND idle_gpu_s <= 1024 * window_s
    FROM summary')" = 1 ] || fail "summary.idle_gpu_s $(sql two.db 'SELECT idle_gpu_s FROM summary')"
[ "$(sql two.db 'SELECT abs(sum(gpu_s) - (SELECT idle_gpu_s FROM summary)) < 1e-3 AND min(gpu_s) >= 0
    FROM idle_slices')" = 1 ] || fail "idle_slices rows do not add up to the summary"
[ "$(sql two.db 'SELECT abs(sum(idle_s) - (SELECT idle_gpu_s FROM summary)) < 1e-3 FROM gpus')" = 1 ] ||
    fail "gpus.idle_s does not add up to the summary"

# ---- a rate scale that pushes arrivals beyond the simulated time range ----------------------
# Every entry point refuses it with exit 2 and one line naming rate_scale and the range, before
# anything runs or is stored. Unfixed, arrivals were clamped to the end of time and the run
# aborted ("event scheduled into the past", SIGABRT).
TRACE=$ROOT/traces/azure-conv-synth.csv
RANGE="rate_scale: arrival times would exceed the simulated time range \(0 to 1e\+09 s\)"
expect_error 2 "replay: tenant default: $RANGE" \
    "$S" replay --trace "$TRACE" --limit 20 --rate-scale 1e-10 --db r.db
expect_error 2 "replay: tenant default: $RANGE.* at rate_scale 1e-12" \
    "$S" replay --trace "$TRACE" --limit 20 --set tenant.default.rate_scale=1e-12 --db r.db
[ ! -e r.db ] || fail "a refused replay created its database"
# a small rate scale that keeps arrivals within the range runs
"$S" replay --trace "$TRACE" --limit 20 --rate-scale 1e-4 --db none >table 2>err ||
    fail "replay --rate-scale 1e-4: $(cat err)"
grep -q "completed 20," table || fail "replay --rate-scale 1e-4: $(cat table)"
# a duration ends the tenant before its arrivals leave the range: nothing to refuse
"$S" replay --trace "$TRACE" --limit 20 --rate-scale 1e-10 --set run.duration_s=1e8 --db none \
    >table 2>err || fail "replay with a duration: $(cat err)"
grep -q "requests 0:" table || fail "replay with a duration: $(cat table)"

cat >one.ini <<EOF
[cluster]
gpu = a100-80g
[run]
seed = 1
[tenant.chat]
model = llama-2-7b
replicas = 1
trace = $TRACE
limit = 20
EOF
expect_error 2 "compare: policy=container;rate=1e-12: tenant chat: $RANGE" \
    "$S" compare -c one.ini --policies container,llumnix --rates 1,1e-12 --db c.db
[ ! -e c.db ] || fail "a refused compare created its database"

# a sweep whose last point is bad is refused before its first point runs, with --jobs 1 too
cat >exp.ini <<EOF
[sweep]
name = tiny
scenario = one.ini
[grid]
rate = 1, 0.5, 1e-10
EOF
for jobs in 1 2; do
    expect_error 2 "sweep: rate=1e-10: tenant chat: $RANGE" \
        "$S" sweep exp.ini --jobs $jobs --db s.db
    [ ! -e s.db ] || [ "$(sql s.db 'SELECT count(*) FROM runs')" = 0 ] ||
        fail "a refused sweep (--jobs $jobs) ran points"
done
# without the bad point it runs
sed -i 's/, 1e-10$//' exp.ini
"$S" sweep exp.ini --jobs 1 --db s.db >/dev/null 2>err || fail "sweep: $(cat err)"
[ "$(sql s.db 'SELECT count(*) FROM sweep_points')" = 2 ] || fail "sweep: 2 points"

# a trace whose own arrival lies beyond the range is refused too (as it is read)
printf 'request_id,arrival_s,tenant,prompt_tokens,output_tokens\n0,0,a,100,10\n1,2e9,a,100,10\n' \
    >far.csv
expect_error 2 "replay: tenant default: $RANGE: the arrival at 2e\+09 s becomes 2e\+09 s at rate_scale 1$" \
    "$S" replay --trace far.csv --db none

echo "time_range_cli: ok"
