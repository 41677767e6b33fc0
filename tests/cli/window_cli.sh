#!/bin/bash
# The measurement window ends at the last completion, as docs/reference/database.md defines it, for
# every cluster policy: periodic work after the last request (re-allocation, migration and
# SliceScheduler ticks) must not stretch it, nor the throughput divided by it, nor the idle GPU
# time that tiles it (issue 13, item 11). Unfixed, a re-allocation run's window ran to its next
# 60 s tick.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

cat >two.ini <<'EOF'
[cluster]
gpu = a100-80g
[run]
seed = 3
duration_s = 100
[tenant.hot]
model = llama-2-7b
replicas = 2
synthetic = "rate=6 duration=100 prompt=lognormal:800:0.6 output=lognormal:150:0.8"
[tenant.cold]
model = llama-2-7b
replicas = 2
synthetic = "rate=0.5 duration=100 prompt=lognormal:800:0.6 output=lognormal:150:0.8"
EOF

check_runs() { # DB WARMUP: every run's window, throughput and idle time against its requests
    local db=$1 w=$2 bad
    bad=$(sql "$db" "SELECT count(*) FROM summary s JOIN (SELECT run_id,
            max(arrival_s + e2e_ms / 1000.0) AS last,
            sum(CASE WHEN measured THEN generated_tokens ELSE 0 END) AS tokens
            FROM requests WHERE status = 'completed' GROUP BY run_id) r USING (run_id)
        WHERE abs(s.window_s - (r.last - $w)) > 1e-6
           OR abs(s.output_tokens_per_s * s.window_s - r.tokens) > 1e-3 * r.tokens")
    [ "$bad" = 0 ] || fail "$db: $bad runs whose window is not warm-up end to last completion:
$(sql "$db" "SELECT group_concat(run_id || ': window ' || window_s || ' s, sim ' || sim_s || ' s', '; ')
    FROM summary")"
}

"$S" compare -c two.ini --policies container,realloc,llumnix,llumnix-tiers,slice --db w.db \
    --no-progress >table 2>err || fail "compare: $(cat err)"
[ "$(sql w.db 'SELECT count(*) FROM summary')" = 5 ] || fail "5 runs"
check_runs w.db 0
# the ticks did run past the last completion (else this test would show nothing)
[ "$(sql w.db 'SELECT count(*) FROM summary WHERE sim_s > window_s + 1')" -ge 1 ] ||
    fail "no run simulated past its last completion: $(sql w.db 'SELECT group_concat(sim_s - window_s) FROM summary')"
# on every GPU, compute and idle slices tile the window
[ "$(sql w.db 'SELECT max(abs(g.device_busy_s + g.idle_s - s.window_s)) < 1e-6
    FROM gpus g JOIN summary s USING (run_id)')" = 1 ] ||
    fail "GPU time does not tile the window: $(sql w.db 'SELECT max(abs(g.device_busy_s + g.idle_s - s.window_s))
        FROM gpus g JOIN summary s USING (run_id)')"
# the JSON says the same as the database
"$S" replay -c two.ini --set policy.cluster=container --set policy.realloc_period_s=60 \
    --db j.db --json >r.json 2>err || fail "replay: $(cat err)"
check_runs j.db 0
grep -q "\"window_s\": $(sql j.db 'SELECT printf("%.9f", window_s) FROM summary')" r.json ||
    fail "JSON window_s differs from the database's"

# with a warm-up the window runs from its end to the last completion
"$S" compare -c two.ini --set run.warmup_s=20 --policies realloc,llumnix --db warm.db \
    --no-progress >/dev/null 2>err || fail "compare with warm-up: $(cat err)"
check_runs warm.db 20

echo "window_cli: ok"
