#!/bin/bash
# The static-best bundle: on a tiny two-tenant scenario with skewed load (a busy tenant and a
# quiet one on two containers each), `compare --policies container,static-best` searches the
# allocation, prints and stores the one it chose with its candidate-replay count, and its worst
# tenant misses its SLA no more often than container's; only the chosen run is stored; JSON
# carries the search; capacity searches at each probe; --search-replays caps a search, and
# slice-sized searches with SliceScheduler; slice-tuned and a bundle's own KEY=V1|V2 search
# knobs, llumnix-sized the allocation under Llumnix; a sweep refuses them. And the note the
# realloc bundle prints when no tenant has headroom (max_replicas above replicas).
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

cat >two.ini <<'EOF'
[cluster]
gpu = a100-80g
nodes = 1
gpus_per_node = 4

[policy]
batching = sarathi

[run]
seed = 1
duration_s = 120
warmup_s = 20

[tenant.busy]
model = llama-2-7b
replicas = 2
synthetic = "rate=14 duration=120 prompt=lognormal:800:0.6 output=lognormal:200:0.6"
sla_ttft_ms = 2000
sla_tbt_ms = 200

[tenant.quiet]
model = llama-2-7b
replicas = 2
synthetic = "rate=0.5 duration=120 prompt=lognormal:800:0.6 output=lognormal:200:0.6"
sla_ttft_ms = 2000
sla_tbt_ms = 200
EOF

"$S" compare -c two.ini --policies container,static-best --db c.db >table 2>err ||
    fail "compare: $(cat err)"
grep -Eq '^  1 +static-best ' table || fail "no static-best row: $(cat table)"
grep -Eq '^  static-best at load 1: busy=[0-9]+ quiet=[0-9]+ containers, [0-9]+ candidate replays$' \
    table || fail "the chosen allocation is not in the table: $(cat table)"
grep -Eq '^slicesim: static-best: policy=static-best;rate=1: chose busy=[0-9]+ quiet=[0-9]+ containers \([0-9]+ of 4 GPUs; start busy=[0-9]+ quiet=[0-9]+\), worst tenant SLA miss [0-9.]+%, [0-9]+ candidate replays(, [0-9]+ stopped early)?$' \
    err || fail "stderr line: $(cat err)"
# the busy tenant gets more than its two containers, the quiet one keeps at least one
busy=$(sed -n 's/^  static-best at load 1: busy=\([0-9]*\) quiet=\([0-9]*\) .*/\1/p' table)
quiet=$(sed -n 's/^  static-best at load 1: busy=\([0-9]*\) quiet=\([0-9]*\) .*/\2/p' table)
[ "$busy" -gt 2 ] && [ "$quiet" -ge 1 ] && [ $((busy + quiet)) -le 4 ] ||
    fail "allocation busy=$busy quiet=$quiet"
replays=$(sed -n 's/.* \([0-9]*\) candidate replays$/\1/p' table)
[ "$replays" -ge 1 ] && [ "$replays" -le 24 ] || fail "candidate replays: $replays (cap 24)"
# only the two chosen runs are stored; the chosen one with its allocation and the search
[ "$(sql c.db "SELECT count(*) FROM runs")" = 2 ] || fail "candidates were stored"
[ "$(sql c.db "SELECT count(*) FROM runs JOIN sweep_points USING (run_id) WHERE point =
    'policy=static-best;rate=1' AND params LIKE '%\"bundle.search\": \"busy=$busy quiet=$quiet containers, $replays candidate replays\"%'
    AND scenario LIKE '%[tenant.busy]%replicas = $busy%'")" = 1 ] ||
    fail "the chosen run's parameters: $(sql c.db "SELECT params FROM runs WHERE run_id = 2")"
[ "$(sql c.db "SELECT count(*) FROM runs WHERE params LIKE '%bundle.search%'")" = 1 ] ||
    fail "container's run has a search"

# JSON: the search, and the worst tenant's miss no higher than container's
"$S" compare -c two.ini --policies container,static-best --db none --json >a.json 2>err ||
    fail "compare --json: $(cat err)"
python3 - a.json "$busy" "$quiet" <<'PY' || fail "JSON: $(head -c 400 a.json)"
import json, sys
runs = json.load(open(sys.argv[1]))
assert [r["policy"] for r in runs] == ["container", "static-best"], runs
assert "search" not in runs[0]
assert runs[1]["search"].startswith("busy=%s quiet=%s containers, " % tuple(sys.argv[2:4]))
worst = [max(t["sla_violation_rate"] for t in r["run"]["tenants"]) for r in runs]
assert worst[1] <= worst[0], worst
assert worst[0] > 0.2, worst  # the scenario is skewed: container's busy tenant misses
assert [t["replicas"] for t in runs[1]["run"]["tenants"]] == [int(sys.argv[2]), int(sys.argv[3])]
PY

# capacity: a search at every probe, the allocation at capacity in the table
"$S" capacity -c two.ini --policies container,static-best --max-probes 3 --db none >cap \
    2>err || fail "capacity: $(cat err)"
[ "$(grep -c '^slicesim: static-best: policy=static-best;rate=.*: chose ' err)" = 3 ] ||
    fail "a search per probe: $(cat err)"
grep -Eq '^  static-best at load [0-9.]+: busy=[0-9]+ quiet=[0-9]+ containers, [0-9]+ candidate replays' \
    cap || fail "capacity table: $(cat cap)"

# --search-replays caps the search; slice-sized searches with SliceScheduler in every candidate
# (quiet's 60 ms TTFT bound makes it the worst tenant at the start, so the search moves)
short=(--set run.duration_s=60 --set run.warmup_s=10 --set tenant.quiet.sla_ttft_ms=60)
"$S" compare -c two.ini "${short[@]}" --policies slice-sized --db none --json >s.json 2>err ||
    fail "slice-sized: $(cat err)"
n=$(sed -n 's/^slicesim: static-best: policy=slice-sized;rate=1: chose .*, \([0-9]*\) candidate replays\(, [0-9]* stopped early\)\{0,1\}$/\1/p' err)
[ -n "$n" ] && [ "$n" -ge 2 ] || fail "slice-sized searches: $(cat err)"
python3 - s.json <<'PY' || fail "slice-sized runs SliceScheduler: $(head -c 300 s.json)"
import json, sys
run = json.load(open(sys.argv[1]))[0]["run"]
assert run["ops"] == "slice" and run["slice"]["offloads"] > 0, run["ops"]
PY
"$S" compare -c two.ini "${short[@]}" --policies slice-sized --search-replays 1 --db none \
    >table 2>err || fail "slice-sized, --search-replays 1: $(cat err)"
grep -Eq '^slicesim: static-best: policy=slice-sized;rate=1: chose busy=3 quiet=1 containers .*, 1 candidate replays \(the cap\)$' \
    err || fail "slice-sized, capped at 1: $(cat err)"
expect_error 2 "^slicesim: capacity: --search-replays: " "$S" capacity -c two.ini \
    --policies static-best --search-replays 0 --db none
expect_error 2 "^slicesim: compare: --search-replays: " "$S" compare -c two.ini \
    --policies static-best --search-replays 201 --db none

# slice-tuned: a knob search at each point; the chosen values are the run's and in its params
# (under the sanitizers its searches stop at 4 candidates: SliceScheduler's replays are slow there)
few=()
sanitized && few=(--search-replays 4)
"$S" compare -c two.ini "${short[@]}" "${few[@]}" --policies slice-tuned --db k.db >table 2>err ||
    fail "slice-tuned: $(cat err)"
line=$(grep -E '^slicesim: knob search: policy=slice-tuned;rate=1: chose policy\.slice_period_ms=[0-9.]+ policy\.slice_max_whatifs=[0-9]+ policy\.slice_horizon_ms=[0-9.]+ policy\.slice_overrun_ms=[0-9.]+, worst tenant SLA miss [0-9.]+%, [0-9]+ candidate replays( \(the cap\))?(, [0-9]+ stopped early)?$' err) ||
    fail "slice-tuned's stderr line: $(cat err)"
period=$(sed -n 's/.*slice_period_ms=\([0-9.]*\) .*/\1/p' <<<"$line")
n=$(sed -n 's/.* \([0-9]*\) candidate replays.*$/\1/p' <<<"$line")
[ "$n" -ge 1 ] && [ "$n" -le 12 ] || fail "slice-tuned: $n candidate replays (one pass: 12 at most)"
[ "$(sql k.db "SELECT count(*) FROM runs WHERE scenario LIKE '%
slice_period_ms = $period
%' AND params LIKE '%\"bundle.search\": \"policy.slice_period_ms=$period %'")" = 1 ] ||
    fail "slice-tuned's run lacks its chosen period $period: $(sql k.db "SELECT params FROM runs")"
# a knob of one's own: busy on 1 or 3 containers (quiet on 1); 3 serves busy's load, so it is
# chosen, and the run equals a plain run with 3
one=(--set tenant.quiet.replicas=1 --set run.duration_s=60 --set run.warmup_s=10)
"$S" compare -c two.ini "${one[@]}" --db none --json \
    --policies 'k:policy.cluster=container+policy.ops=home+tenant.busy.replicas=1|3' >k.json \
    2>err || fail "a knob of one's own: $(cat err)"
grep -q '^slicesim: knob search: policy=k;rate=1: chose tenant.busy.replicas=3, worst tenant SLA miss [0-9.]*%, 2 candidate replays$' \
    err || fail "knob k: $(cat err)"
"$S" compare -c two.ini "${one[@]}" --db none --json \
    --policies 'p:policy.cluster=container+policy.ops=home+tenant.busy.replicas=3' >p.json \
    2>err || fail "plain replicas=3: $(cat err)"
python3 - k.json p.json <<'PY' || fail "the searched run differs from the plain one"
import json, sys
k, p = (json.load(open(f))[0]["run"] for f in sys.argv[1:3])
assert [t["replicas"] for t in k["tenants"]] == [3, 1], k["tenants"]
assert k["tenants"] == p["tenants"] and k["requests"] == p["requests"], (k["tenants"], p["tenants"])
PY
# a listed value the policy refuses fails before anything runs, naming it
expect_error 2 "^slicesim: capacity: policy=k;rate=1: policy\.slice_period_ms=0: .*slice_period_ms" \
    "$S" capacity -c two.ini --db bad.db \
    --policies 'container,k:policy.cluster=container+policy.ops=slice+policy.slice_period_ms=20|0'
[ ! -e bad.db ] || fail "a refused knob value left a database"
expect_error 2 "policy\.slice_period_ms=20\|\|5.*non-empty" "$S" compare -c two.ini --db none \
    --policies 'k:policy.cluster=container+policy.ops=slice+policy.slice_period_ms=20||5'
# llumnix-sized: the allocation search with Llumnix in every candidate; capacity's JSON gives
# each probe's candidate replays for searching bundles only
"$S" capacity -c two.ini "${short[@]}" "${few[@]}" --policies container,llumnix-sized,slice-tuned \
    --max-probes 2 --db none --json >c.json 2>err || fail "llumnix-sized: $(cat err)"
grep -q '^slicesim: static-best: policy=llumnix-sized;rate=1: chose busy=' err ||
    fail "llumnix-sized searches: $(cat err)"
python3 - c.json <<'PY' || fail "capacity's candidate replays: $(head -c 600 c.json)"
import json, sys
pol = {p["policy"]: p for p in json.load(open(sys.argv[1]))["policies"]}
assert all("candidate_replays" not in q for q in pol["container"]["probes"])
for name, most in (("llumnix-sized", 24), ("slice-tuned", 12)):
    assert all(1 <= q["candidate_replays"] <= most for q in pol[name]["probes"]), pol[name]
PY

# refusals: nothing runs
# realloc needs headroom: a one-line note when no tenant has any, none once one has
"$S" compare -c two.ini --set run.duration_s=30 --set run.warmup_s=5 \
    --policies container,realloc,llumnix --db none >/dev/null 2>err || fail "realloc: $(cat err)"
[ "$(grep -c '^slicesim: note: ' err)" = 1 ] &&
    grep -q '^slicesim: note: realloc: re-allocation moves a container only to a tenant below its max_replicas, and every tenant has max_replicas = replicas, so it does nothing here; give one headroom, e.g. --set tenant.busy.max_replicas=4$' err ||
    fail "headroom note: $(cat err)"
"$S" compare -c two.ini --set run.duration_s=30 --set run.warmup_s=5 \
    --set tenant.busy.max_replicas=3 --policies container,realloc --db none >/dev/null 2>err ||
    fail "realloc with headroom: $(cat err)"
! grep -q 'note:' err || fail "a note with headroom: $(cat err)"

cat >sw.ini <<EOF
[sweep]
scenario = $T/two.ini
[grid]
policy = container,static-best
EOF
expect_error 2 "sw.ini:[0-9]+: grid.policy: policy 'static-best': its scenario is searched for" \
    "$S" sweep sw.ini --db none
echo "static_best_cli: all checks passed"
