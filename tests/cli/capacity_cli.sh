#!/bin/bash
# `slicesim capacity`: per bundle the highest load within the SLA-miss bound on a tiny
# two-tenant synthetic scenario: the table's shape, the first bundle's ratio 1.00, a line per
# probe on stderr, the JSON object, every probe stored as a sweep point (synthetic tenants
# stretched so their traffic spans the window), and one clear error for bad input.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
cat >tiny.ini <<'INI'
[cluster]
gpu = a100-80g
nodes = 1

[run]
seed = 3
duration_s = 40
warmup_s = 5

[tenant.chat]
model = llama-2-7b
replicas = 1
synthetic = "rate=6 duration=40 prompt=lognormal:800:0.5 output=lognormal:120:0.5"
sla_ttft_ms = 1000
sla_tbt_ms = 100

[tenant.code]
model = llama-2-7b
replicas = 1
synthetic = "rate=2 duration=40 arrival=gamma cv=2 prompt=lognormal:1500:0.5 output=fixed:100"
sla_ttft_ms = 1000
sla_tbt_ms = 100
INI

"$S" capacity -c tiny.ini --policies container,slice --max-probes 6 --db c.db >table 2>err ||
    fail "capacity: $(cat err)"
grep -q "^slicesim capacity: tiny.ini, 2 bundle(s), SLA miss <= 9% (all tenants); ratios against container" table ||
    fail "header: $(head -1 table)"
grep -Eq '^  policy +capacity +x +goodput +SLA miss +probes +bracket$' table || fail "columns: $(cat table)"
grep -Eq '^  container +[0-9.]+ +1.00 +[0-9.]+ +[0-9.]+% +[1-6] ' table || fail "container row is 1.00: $(cat table)"
grep -Eq '^  slice +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% +[1-6] ' table || fail "slice row: $(cat table)"
grep -q "^  results: .*c.db (sweep 'capacity:tiny.ini')" table || fail "results line: $(cat table)"
n_probes=$(awk '$1 == "container" || $1 == "slice" { n += $6 } END { print n }' table)
[ "$(grep -c '^slicesim: capacity: \(container\|slice\) probe [0-9]*: load [0-9.e+-]*: SLA miss .*: \(pass\|fail\)' err)" = "$n_probes" ] ||
    fail "a progress line per probe ($n_probes): $(cat err)"
grep -q '^slicesim: capacity: container probe 1: load 1: ' err || fail "the first probe is load 1: $(cat err)"
# every probe is a run of the sweep, with its load; the synthetic tenants' generators run
# load times as long, so their traffic spans the window (duration 40 at load 1, 80 at load 2)
[ "$(sql c.db "SELECT count(*) FROM sweep_points WHERE sweep = 'capacity:tiny.ini'")" = "$n_probes" ] ||
    fail "$n_probes sweep points: $(sql c.db "SELECT group_concat(point, ' ') FROM sweep_points")"
[ "$(sql c.db "SELECT count(*) FROM sweep_points JOIN runs USING (run_id) WHERE ops = 'slice'
    AND point LIKE 'policy=slice;rate=%'")" -ge 1 ] || fail "slice points are slice runs"
[ "$(sql c.db "SELECT load FROM sweep_points JOIN runs USING (run_id)
    WHERE point = 'policy=container;rate=1'")" = "1.0" ] || fail "runs.load of the first probe"
if [ "$(sql c.db "SELECT count(*) FROM sweep_points WHERE point = 'policy=container;rate=2'")" = 1 ]; then
    sql c.db "SELECT scenario FROM sweep_points JOIN runs USING (run_id)
        WHERE point = 'policy=container;rate=2'" | grep -q 'rate=6 duration=80 ' ||
        fail "load 2 stretches the generator: $(sql c.db "SELECT scenario FROM runs LIMIT 1")"
fi

# JSON: the settings, then per bundle its capacity, ratio, status and probes
"$S" capacity -c tiny.ini --policies slice,container --max-probes 4 --sla-miss 0.2 \
    --tenant code --db none --json --no-progress >a.json 2>err || fail "capacity --json: $(cat err)"
[ ! -s err ] || fail "--no-progress wrote to stderr: $(cat err)"
python3 - a.json <<'PY' || fail "JSON: $(head -c 400 a.json)"
import json, sys
o = json.load(open(sys.argv[1]))
assert o["sla_miss_bound"] == 0.2 and o["tenant"] == "code" and o["db"] is None, o
assert o["reference"] == "slice" and o["max_probes"] == 4 and o["tol"] == 0.02, o
ps = o["policies"]
assert [p["policy"] for p in ps] == ["slice", "container"], ps
keys = {"policy", "capacity", "ratio", "status", "converged", "lo", "hi", "goodput_tok_per_s",
        "sla_miss", "at_load", "n_probes", "probes"}
for p in ps:
    assert set(p) == keys, set(p) ^ keys
    assert p["status"] in ("found", "below", "above")
    assert 1 <= p["n_probes"] == len(p["probes"]) <= 4
    assert p["probes"][0]["load"] == 1
    for q in p["probes"]:
        assert set(q) == {"load", "sla_miss", "goodput_tok_per_s", "spans", "pass"}, q
        assert q["pass"] == (q["spans"] and q["sla_miss"] <= 0.2), q
    passing = [q["load"] for q in p["probes"] if q["pass"]]
    assert p["capacity"] == (max(passing) if passing else 0), p
    # goodput and SLA miss are the probe's at capacity, or at the lowest load when none passed
    at = max(passing) if passing else min(q["load"] for q in p["probes"])
    q = [q for q in p["probes"] if q["load"] == at][0]
    assert p["at_load"] == at and p["sla_miss"] == q["sla_miss"], p
    assert p["goodput_tok_per_s"] == q["goodput_tok_per_s"], p
assert ps[0]["ratio"] == (1 if ps[0]["capacity"] > 0 else 0)
if ps[0]["capacity"] > 0:
    assert abs(ps[1]["ratio"] - ps[1]["capacity"] / ps[0]["capacity"]) < 1e-9
PY

# Every probe fails (a TTFT bound of 1 ms, which no request meets): the row says the capacity
# is below the lowest load tried, has no ratio, and shows the goodput and SLA miss measured at
# that load (it used to show "0  0.00 ... 0.00%", as if nothing had missed); the JSON's
# sla_miss and goodput are that probe's, at_load says which.
IMPOSSIBLE="--set tenant.chat.sla_ttft_ms=1 --set tenant.code.sla_ttft_ms=1"
# shellcheck disable=SC2086
"$S" capacity -c tiny.ini --policies container,slice --max-probes 3 --db none $IMPOSSIBLE \
    >ftable 2>ferr || fail "capacity, every probe failing: $(cat ferr)"
for p in container slice; do
    [ "$(grep -c "^slicesim: capacity: $p probe [0-9]*: .*: fail$" ferr)" = 3 ] ||
        fail "$p: three failing probes: $(cat ferr)"
    # the lowest load's probe line: load, SLA miss, goodput
    low=$(sed -n "s/^slicesim: capacity: $p probe [0-9]*: load \([0-9.e+-]*\): SLA miss \([0-9.]*\)%, goodput \([0-9.]*\) tok\/s: fail$/\1 \2 \3/p" ferr |
          sort -g | head -1)
    read -r load miss good <<<"$low"
    [ -n "$good" ] || fail "$p: the lowest probe's line: $(cat ferr)"
    grep -Eq "^  $p +<$load +- +$good +$miss% +3  fails at every load tried, down to $load " ftable ||
        fail "$p row, every probe failing (lowest load $load: miss $miss%, goodput $good): $(cat ftable)"
done
# shellcheck disable=SC2086
"$S" capacity -c tiny.ini --policies container,slice --max-probes 3 --db none $IMPOSSIBLE \
    --json --no-progress >f.json 2>ferr || fail "capacity --json, every probe failing: $(cat ferr)"
python3 - f.json <<'PY' || fail "JSON, every probe failing: $(head -c 600 f.json)"
import json, sys
for p in json.load(open(sys.argv[1]))["policies"]:
    assert p["status"] == "below" and p["capacity"] == 0 and p["ratio"] == 0, p
    low = min(p["probes"], key=lambda q: q["load"])
    assert not any(q["pass"] for q in p["probes"]), p
    assert p["at_load"] == low["load"] == p["hi"], p
    assert p["sla_miss"] == low["sla_miss"] > 0.09, p
    assert p["goodput_tok_per_s"] == low["goodput_tok_per_s"], p
PY

# A bursty trace's quiet stretch before the window's end is not its end: arrivals every second
# to 20 s, none until 70 s, then on to 120 s, in a 60 s window. At load 1 the probe spans the
# window (its trace goes on after it), so it is judged on its SLA, not failed for the gap.
{
    echo "request_id,arrival_s,tenant,prompt_tokens,output_tokens"
    for i in $(seq 0 20) $(seq 70 120); do echo "$i,$i,chat,200,20"; done
} >burst.csv
cat >burst.ini <<'INI'
[cluster]
gpu = a100-80g
nodes = 1
[run]
duration_s = 60
[tenant.chat]
model = llama-2-7b
replicas = 1
trace = burst.csv
sla_ttft_ms = 5000
INI
"$S" capacity -c burst.ini --policies container --max-probes 1 --db none >btable 2>berr ||
    fail "capacity on a bursty trace: $(cat berr)"
grep -q 'container probe 1: load 1: .*: pass' berr || fail "the quiet stretch failed the probe: $(cat berr)"
grep -q "arrivals end" berr && fail "a quiet stretch taken for the trace's end: $(cat berr)"

# errors: nothing runs, one line, exit 2
expect_error 2 "capacity: -c SCENARIO.ini is required" "$S" capacity --policies container
expect_error 2 "capacity: --policies A,B,... is required" "$S" capacity -c tiny.ini
expect_error 2 "policy 'magic': not a built-in bundle" "$S" capacity -c tiny.ini --policies magic
expect_error 2 "the same label twice" "$S" capacity -c tiny.ini --policies slice,slice
expect_error 2 "capacity: --sla-miss: the bound is a share of requests, 0 to 1, got '-0.1'" \
    "$S" capacity -c tiny.ini --policies slice --sla-miss -0.1
expect_error 2 "capacity: --sla-miss: the bound is a share of requests, 0 to 1, got '1.5'" \
    "$S" capacity -c tiny.ini --policies slice --sla-miss 1.5
expect_error 2 "capacity: --sla-miss: expected a number" "$S" capacity -c tiny.ini --policies slice --sla-miss x
expect_error 2 "capacity: --tenant 'chatt': no such tenant in .*tiny.ini \(its tenants: chat, code\)" \
    "$S" capacity -c tiny.ini --policies slice --tenant chatt --db d.db
[ ! -e d.db ] || fail "a bad tenant stored something"
expect_error 2 "capacity: --tol: expected a number > 0 and < 1, got '0'" "$S" capacity -c tiny.ini --policies slice --tol 0
expect_error 2 "capacity: --max-probes: expected an integer in \[1, 64\], got '0'" \
    "$S" capacity -c tiny.ini --policies slice --max-probes 0
expect_error 2 "unknown option '--rates'" "$S" capacity -c tiny.ini --policies slice --rates 1
"$S" capacity --help | grep -q "^usage: slicesim capacity -c SCENARIO.ini --policies" || fail "--help"
"$S" --help | grep -q "^  capacity " || fail "capacity in the command list"
exit 0
