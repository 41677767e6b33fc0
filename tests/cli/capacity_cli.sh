#!/bin/bash
# `slicesim capacity`: per bundle the highest load within the SLA-miss bound on a tiny
# two-tenant synthetic scenario: the table's shape, the first bundle's ratio 1.00, a line per
# probe on stderr, the JSON object, every probe stored as a sweep point (synthetic tenants
# stretched so their traffic spans the window), the row of a bundle that fails at every load,
# a rerun reusing the probes stored from the same inputs (and only those), and one clear
# error for bad input.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
capacity_tiny_ini >tiny.ini

# The search and what it stores, judged on all requests pooled (code's bursty traffic misses
# more than 9 % at every load, so no bundle would pass for every tenant: see below).
"$S" capacity -c tiny.ini --policies container,slice --max-probes 6 --db c.db \
    --criterion pooled >table 2>err || fail "capacity: $(cat err)"
grep -q "^slicesim capacity: tiny.ini, 2 bundle(s), SLA miss <= 9% (all tenants pooled); ratios against container" table ||
    fail "header: $(head -1 table)"
grep -Eq '^  policy +capacity +x +goodput +SLA miss +probes +bracket$' table || fail "columns: $(cat table)"
grep -Eq '^  container +[0-9.]+ +1.00 +[0-9.]+ +[0-9.]+% +[1-6] ' table || fail "container row is 1.00: $(cat table)"
grep -Eq '^  slice +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% +[1-6] ' table || fail "slice row: $(cat table)"
grep -q "^  results: .*c.db (sweep 'capacity:tiny.ini')" table || fail "results line: $(cat table)"
grep -q "^  each tenant's SLA miss at the capacity (pooled: all requests together):$" table &&
    grep -Eq '^    container +chat [0-9.]+%, code [0-9.]+%, pooled [0-9.]+%$' table ||
    fail "each tenant's miss: $(cat table)"
n_probes=$(awk '$1 == "container" || $1 == "slice" { n += $6 } END { print n }' table)
[ "$(grep -c '^slicesim: capacity: \(container\|slice\) probe [0-9]*: load [0-9.e+-]*: SLA miss .*: \(pass\|fail\)' err)" = "$n_probes" ] ||
    fail "a progress line per probe ($n_probes): $(cat err)"
grep -q '^slicesim: capacity: container probe 1: load 1: ' err || fail "the first probe is load 1: $(cat err)"
# every probe is a run of the sweep, with its load, but for those stopped as soon as they were
# certain to fail (capacity_stop_cli.sh); the synthetic tenants' generators run load times as
# long, so their traffic spans the window (duration 40 at load 1, 80 at load 2)
n_stored=$(( n_probes - $(grep -c ': SLA miss >[0-9.]*%.*, stopped at [0-9.]* s simulated, certain to fail: fail' err) ))
[ "$(sql c.db "SELECT count(*) FROM sweep_points WHERE sweep = 'capacity:tiny.ini'")" = "$n_stored" ] ||
    fail "$n_stored sweep points: $(sql c.db "SELECT group_concat(point, ' ') FROM sweep_points")"
[ "$(sql c.db "SELECT count(*) FROM sweep_points JOIN runs USING (run_id) WHERE ops = 'slice'
    AND point LIKE 'policy=slice;rate=%'")" -ge 1 ] || fail "slice points are slice runs"
[ "$(sql c.db "SELECT count(*) FROM sweep_points JOIN runs USING (run_id)
    WHERE sweep = 'capacity:tiny.ini' AND point NOT LIKE '%;rate=' || printf('%g', load)")" = 0 ] &&
    [ "$n_stored" -ge 1 ] || fail "runs.load of the stored probes: $(sql c.db "SELECT point, load
        FROM sweep_points JOIN runs USING (run_id)")"
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
assert o["criterion"] == "tenant", o
assert o["reference"] == "slice" and o["max_probes"] == 4 and o["tol"] == 0.02, o
ps = o["policies"]
assert [p["policy"] for p in ps] == ["slice", "container"], ps
keys = {"policy", "capacity", "ratio", "status", "converged", "lo", "hi", "goodput_tok_per_s",
        "sla_miss", "at_load", "n_probes", "probes", "pooled_sla_miss", "tenant_sla_miss",
        "ci95_lo", "ci95_hi", "ratio_ci95_lo", "ratio_ci95_hi", "verdict", "n_seeds",
        "censored"}
assert o["seeds"] == [3], o
for p in ps:
    assert set(p) == keys, set(p) ^ keys
    assert p["status"] in ("found", "below", "above")
    assert 1 <= p["n_probes"] == len(p["probes"]) <= 4
    assert p["probes"][0]["load"] == 1
    for q in p["probes"]:
        # a probe stopped once certain to fail says so; its goodput was not measured
        stop = {"stopped", "stopped_at_s"} if q.get("stopped") else set()
        assert set(q) == {"load", "sla_miss", "goodput_tok_per_s", "spans", "pass",
                          "pooled_sla_miss", "tenant_sla_miss"} | stop, q
        assert (q["goodput_tok_per_s"] is None) == bool(stop), q
        assert q["pass"] == (q["spans"] and q["sla_miss"] <= 0.2), q
        # --tenant code judges code's miss alone
        assert set(q["tenant_sla_miss"]) == {"chat", "code"}, q
        assert q["sla_miss"] == q["tenant_sla_miss"]["code"], q
    passing = [q["load"] for q in p["probes"] if q["pass"]]
    assert p["capacity"] == (max(passing) if passing else 0), p
    # goodput and SLA miss are the probe's at capacity, or at the lowest load when none passed
    at = max(passing) if passing else min(q["load"] for q in p["probes"])
    q = [q for q in p["probes"] if q["load"] == at][0]
    assert p["at_load"] == at and p["sla_miss"] == q["sla_miss"], p
    assert p["goodput_tok_per_s"] == q["goodput_tok_per_s"], p
    # one seed: no interval, the "interval" is the value itself
    assert p["n_seeds"] == 1 and p["ci95_lo"] == p["ci95_hi"] == p["capacity"], p
    assert p["ratio_ci95_lo"] == p["ratio_ci95_hi"] == p["ratio"], p
assert ps[0]["verdict"] == "reference" and ps[1]["verdict"] in ("one seed", "-"), ps
assert ps[0]["ratio"] == (1 if ps[0]["capacity"] > 0 else 0)
if ps[0]["capacity"] > 0:
    assert abs(ps[1]["ratio"] - ps[1]["capacity"] / ps[0]["capacity"]) < 1e-9
PY

# The criterion. A light chat tenant meets its SLA; a code tenant with a twentieth of the
# requests and a TTFT bound of 1 ms misses all of its own. Pooled, the misses are code's share
# of the requests, under 9 %: load 1 passes. Judged per tenant (the default, worst), code
# misses 100 %: it fails; judged on chat alone, it passes. Each tenant's miss is reported.
cat >two.ini <<'INI'
[cluster]
gpu = a100-80g
nodes = 1

[run]
seed = 5
duration_s = 60
warmup_s = 5

[tenant.chat]
model = llama-2-7b
replicas = 1
synthetic = "rate=4 duration=60 prompt=fixed:200 output=fixed:40"
sla_ttft_ms = 2000
sla_tbt_ms = 200

[tenant.code]
model = llama-2-7b
replicas = 1
synthetic = "rate=0.2 duration=60 prompt=fixed:200 output=fixed:40"
sla_ttft_ms = 1
sla_tbt_ms = 200
INI
for crit in worst pooled tenant:chat tenant:code; do
    "$S" capacity -c two.ini --policies container --max-probes 1 --db none --json \
        --no-progress --criterion $crit >"crit-${crit#*:}.json" 2>err ||
        fail "--criterion $crit: $(cat err)"
done
python3 - <<'PY' || fail "criteria: $(cat crit-*.json | head -c 1500)"
import json
probe = {}
for name, crit, want in [("worst", "worst", False), ("pooled", "pooled", True),
                         ("chat", "tenant", True), ("code", "tenant", False)]:
    o = json.load(open(f"crit-{name}.json"))
    assert o["criterion"] == crit, o
    q = o["policies"][0]["probes"][0]
    t, pooled = q["tenant_sla_miss"], q["pooled_sla_miss"]
    assert t["code"] == 1 and t["chat"] < 0.01 and 0.02 < pooled < 0.09, q
    judged = {"worst": max(t.values()), "pooled": pooled, "chat": t["chat"], "code": t["code"]}
    assert q["sla_miss"] == judged[name] and q["pass"] == want, (name, q)
    probe[name] = (t, pooled)
# one replay, judged four ways: the misses are the same figures
assert len({json.dumps(v, sort_keys=True) for v in probe.values()}) == 1, probe
PY
"$S" capacity -c two.ini --policies container --max-probes 1 --db none >ctable 2>cerr ||
    fail "capacity two.ini: $(cat cerr)"
grep -q "SLA miss <= 9% (every tenant)" ctable && grep -Eq '^    container +chat [0-9.]+%, code 100.00%, pooled [0-9.]+%$' ctable ||
    fail "the table's tenants: $(cat ctable)"
grep -Eq "^slicesim: capacity: container probe 1: load 1: SLA miss 100.00% \(worst: code; pooled [0-9.]+%\), .*: fail$" cerr ||
    fail "the probe line names the worst tenant: $(cat cerr)"
expect_error 2 "^slicesim: capacity: --criterion: expected worst, pooled or tenant:NAME, got 'best'$" \
    "$S" capacity -c two.ini --policies container --criterion best
expect_error 2 "two different criteria" \
    "$S" capacity -c two.ini --policies container --criterion pooled --tenant chat
expect_error 2 "capacity: tenant 'nope' \(of --criterion tenant:NAME, --tenant\): no such tenant" \
    "$S" capacity -c two.ini --policies container --criterion tenant:nope --db none

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
    re="^slicesim: capacity: $p probe [0-9]*: load \([0-9.e+-]*\): SLA miss \([0-9.]*\)%"
    re="$re (worst: [a-z]*; pooled [0-9.]*%)"
    low=$(sed -n "s/$re, goodput \([0-9.]*\) tok\/s: fail$/\1 \2 \3/p" ferr | sort -g | head -1)
    read -r load miss good <<<"$low"
    [ -n "$good" ] || fail "$p: the lowest probe's line: $(cat ferr)"
    grep -Eq "^  $p +<$load +- +$good +$miss% +3  fails at every load tried, down to $load " \
        ftable || fail "$p row, every probe failing (lowest $load: $miss%, $good): $(cat ftable)"
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
# When the load above the capacity met the bound but its trace ran out before the window did,
# the capacity is a lower bound, and the table and JSON say so (they used to read "fails at
# 2", as if the SLA had failed there): arrivals every second to 60 s, a 60 s window.
{
    echo "request_id,arrival_s,tenant,prompt_tokens,output_tokens"
    for i in $(seq 0 60); do echo "$i,$i,chat,200,20"; done
} >even.csv
sed 's/burst.csv/even.csv/' burst.ini >even.ini
"$S" capacity -c even.ini --policies container --max-probes 2 --db none >etable 2>eerr ||
    fail "capacity on a trace that runs out: $(cat eerr)"
grep -q "container probe 2: load 2: .*: fail: tenant chat's arrivals end at 30.0 s" eerr ||
    fail "load 2's trace ends at 30 s: $(cat eerr)"
grep -Eq "^  container +1 +1.00 .* fails at 2 \(a trace ends there: a lower bound\)$" etable ||
    fail "the censored capacity: $(cat etable)"
"$S" capacity -c even.ini --policies container --max-probes 2 --db none --json --no-progress \
    | python3 -c 'import json, sys; p = json.load(sys.stdin)["policies"][0]; assert p["censored"] is True, p' ||
    fail "censored in the JSON"
"$S" capacity -c burst.ini --policies container --max-probes 2 --db none --json --no-progress \
    --set tenant.chat.sla_ttft_ms=1 \
    | python3 -c 'import json, sys; p = json.load(sys.stdin)["policies"][0]; assert p["censored"] is False, p' ||
    fail "an SLA failure is not censored"

# ---- a rerun reuses the probes the database holds from the same inputs, and only those -------
# Run again onto the same database, capacity reads each probe stored from the same inputs
# (the scenario in canonical form, its traces, the profiles, the code that runs) instead of
# running it: one "reused N probes" line, the same table and JSON as a fresh run, no new run.
# A probe from other inputs runs again and a note says what became of the old runs. Before, a
# rerun ran every probe again and left the old runs unreferenced without a word.
runs() { sql "$1" 'SELECT count(*) FROM runs'; }
cap() { "$S" capacity -c tiny.ini --policies container,slice --max-probes 6 "$@"; }
cap --db re.db >re1 2>re1.err || fail "capacity into re.db: $(cat re1.err)"
grep -q "reused" re1.err && fail "a first run reused something: $(cat re1.err)"
n=$(runs re.db)
[ "$(sql re.db 'SELECT count(*) FROM runs WHERE inputs_digest LIKE "fnv1a64:%"')" = "$n" ] ||
    fail "every probe's run records its inputs"
cap --db re.db >re2 2>re2.err || fail "capacity again into re.db: $(cat re2.err)"
grep -q "^slicesim: capacity: reused $n probes stored in re.db (sweep 'capacity:tiny.ini') from" \
    re2.err || fail "no reuse line for $n probes: $(cat re2.err)"
[ "$(grep -c '(stored run [0-9]*, same inputs)$' re2.err)" = "$n" ] ||
    fail "reused probe lines: $(cat re2.err)"
cmp -s re1 re2 || fail "the table of the reused probes differs: $(diff re1 re2)"
[ "$(runs re.db)" = "$n" ] || fail "a rerun of the same probes stored $(( $(runs re.db) - n )) runs"
# the JSON of reused probes is a fresh run's (but for the database), and so it is when judged on
# one tenant: the stored run gives that tenant's figures
for judged in "" "--tenant code"; do
    # shellcheck disable=SC2086
    cap --db re.db --json --no-progress $judged >reused.json 2>err ||
        fail "reused --json $judged: $(cat err)"
    grep -q "^slicesim: capacity: reused [1-9][0-9]* probes" err ||
        fail "--json $judged reused none: $(cat err)"
    # shellcheck disable=SC2086
    cap --db none --json --no-progress $judged >fresh.json 2>err ||
        fail "fresh --json $judged: $(cat err)"
    grep -q "^slicesim: capacity: reused $n probes" err && fail "--db none reused probes"
    python3 - reused.json fresh.json <<'PY' || fail "reused JSON ($judged) is not a fresh run's"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert a.pop("db") and b.pop("db") is None
assert a == b, (a, b)
PY
done
# merged into another database, the probes keep what they were run from
"$S" db merge me.db re.db >/dev/null 2>err || fail "db merge: $(cat err)"
cap --db me.db >me 2>me.err || fail "capacity into the merged database: $(cat me.err)"
grep -q "^slicesim: capacity: reused $n probes stored in me.db" me.err ||
    fail "merged: $(cat me.err)"
# the code is read by its bytes: a copy of slicesim elsewhere reuses the probes, the same copy
# with one more byte (other code, to a digest) does not
cp "$S" ./slicesim2
cap2() { ./slicesim2 capacity -c tiny.ini --policies container,slice --max-probes 6 --db re.db; }
cap2 >/dev/null 2>err || fail "capacity with a copy of the binary: $(cat err)"
grep -q "^slicesim: capacity: reused $n probes" err || fail "a copy of the binary: $(cat err)"
printf '\0' >>./slicesim2
cap2 >/dev/null 2>err || fail "capacity with another binary: $(cat err)"
grep -q "reused" err && fail "another binary reused probes: $(cat err)"
# a changed scenario key (the seed) runs every probe again, and says so
before=$(runs re.db)
cap --db re.db --set run.seed=4 >re3 2>re3.err || fail "capacity, another seed: $(cat re3.err)"
grep -q "reused" re3.err && fail "probes of another seed were reused: $(cat re3.err)"
note="^slicesim: note: capacity: [1-9][0-9]* of these probes were in re.db (sweep"
note+=" 'capacity:tiny.ini') from other inputs .* and were run again: their points now name the"
note+=" new runs; the old runs stay in the database$"
grep -q "$note" re3.err || fail "no note on the probes run again: $(cat re3.err)"
n3=$(awk '$1 == "container" || $1 == "slice" { n += $6 } END { print n }' re3)
n3=$(( n3 - $(grep -c ', stopped at [0-9.]* s simulated' re3.err) )) # stopped: not stored
[ "$(runs re.db)" = $((before + n3)) ] ||
    fail "another seed: $(runs re.db) runs, want $((before + n3))"
# a changed profile: the catalog is read from a copy, then one file of it changes
cp -r "$ROOT/profiles" prof
cap --profiles prof --db pr.db >/dev/null 2>err || fail "capacity --profiles: $(cat err)"
cap --profiles prof --db pr.db >/dev/null 2>err || fail "capacity --profiles again: $(cat err)"
grep -q "^slicesim: capacity: reused $(runs pr.db) probes" err || fail "same profiles: $(cat err)"
echo "; edited" >>prof/engines/vllm-0.15.ini
cap --profiles prof --db pr.db >/dev/null 2>err || fail "capacity, a profile edited: $(cat err)"
grep -q "reused" err && fail "probes of an edited profile were reused: $(cat err)"
# a searching bundle's probes (its candidates' replays as well) always run, and say so
"$S" capacity -c tiny.ini --policies static-best --max-probes 2 --db sb.db >/dev/null 2>err ||
    fail "capacity static-best: $(cat err)"
sb1=$(runs sb.db)
"$S" capacity -c tiny.ini --policies static-best --max-probes 2 --db sb.db >/dev/null 2>err ||
    fail "capacity static-best again: $(cat err)"
grep -q "reused" err && fail "a searching bundle's probes were reused: $(cat err)"
[ "$sb1" -ge 1 ] && grep -q "^slicesim: note: capacity: $sb1 of these probes were in sb.db" err ||
    fail "static-best again: $(cat err)"
# a trace's bytes changed under the same scenario text
"$S" capacity -c burst.ini --policies container --max-probes 3 --db tr.db >/dev/null 2>err ||
    fail "capacity on a trace: $(cat err)"
"$S" capacity -c burst.ini --policies container --max-probes 3 --db tr.db >/dev/null 2>err ||
    fail "capacity on a trace again: $(cat err)"
grep -q "^slicesim: capacity: reused $(runs tr.db) probes" err || fail "same trace: $(cat err)"
sed -i 's/^3,3,chat,200,20$/3,3,chat,201,20/' burst.csv
"$S" capacity -c burst.ini --policies container --max-probes 3 --db tr.db >/dev/null 2>err ||
    fail "capacity on a changed trace: $(cat err)"
grep -q "reused" err && fail "probes of a changed trace were reused: $(cat err)"

# ---- seeds: one search per seed, the mean with its 95 % t interval, ratios paired by seed ----
# Three seeds (3, 4, 5 from run.seed = 3): each seed's search is the one-seed search at that
# seed (run.seed set), the capacity is the mean of the three with the t(0.975, 2) = 4.3027
# interval, the ratio the mean of the per-seed ratios (a seed whose reference found nothing
# has none) with its own interval, and the verdict says whether that interval holds 1.
cap --db sd.db --seeds 3 --criterion pooled --json --no-progress >seeds.json 2>err ||
    fail "capacity --seeds 3: $(cat err)"
for seed in 3 4 5; do
    cap --db none --set run.seed=$seed --criterion pooled --json --no-progress \
        >"seed$seed.json" 2>err || fail "capacity at seed $seed: $(cat err)"
done
python3 - seeds.json seed3.json seed4.json seed5.json <<'PY' || fail "--seeds 3: $(head -c 1500 seeds.json)"
import json, math, sys
o = json.load(open(sys.argv[1]))
one = [json.load(open(f)) for f in sys.argv[2:]]
assert o["seeds"] == [3, 4, 5] and "Student t" in o["interval"], o
def ci(x):
    n = len(x)
    m = sum(x) / n
    if n < 2:
        return m, m, m
    sd = math.sqrt(sum((v - m) ** 2 for v in x) / (n - 1))
    t = {2: 12.7062, 3: 4.3027}[n]  # t(0.975, n - 1)
    return m, m - t * sd / math.sqrt(n), m + t * sd / math.sqrt(n)
close = lambda a, b: abs(a - b) <= 1e-9 * max(1, abs(b))
for i, p in enumerate(o["policies"]):
    assert p["n_seeds"] == 3 and [r["seed"] for r in p["runs"]] == [3, 4, 5], p
    for r, s in zip(p["runs"], one):  # each seed's search is that seed's one-seed search
        q = s["policies"][i]
        for k in ("capacity", "status", "lo", "hi", "sla_miss", "n_probes", "probes"):
            assert r[k] == q[k], (k, r[k], q[k])
    caps = [r["capacity"] for r in p["runs"]]
    m, lo, hi = ci(caps)
    assert close(p["capacity"], m) and close(p["ci95_lo"], lo) and close(p["ci95_hi"], hi), p
    assert p["n_probes"] == sum(r["n_probes"] for r in p["runs"]), p
    ref = [r["capacity"] for r in o["policies"][0]["runs"]]
    ratios = [c / b for c, b, r in zip(caps, ref, p["runs"]) if b > 0 and r["status"] != "below"]
    if ratios:
        m, lo, hi = ci(ratios)
        assert close(p["ratio"], m) and close(p["ratio_ci95_lo"], lo), p
        assert close(p["ratio_ci95_hi"], hi), p
    want = ("reference" if i == 0 else "-" if not ratios else "one seed" if len(ratios) < 2
            else "higher" if p["ratio_ci95_lo"] > 1 else "lower" if p["ratio_ci95_hi"] < 1
            else "no difference")
    assert p["verdict"] == want, (p["verdict"], want)
    for t in ("chat", "code"):
        m, lo, hi = ci([r["tenant_sla_miss"][t] for r in p["runs"]])
        assert close(p["tenant_sla_miss"][t], m), p
        assert close(p["tenant_sla_miss_ci95"][t][0], lo), p
PY
[ "$(sql sd.db "SELECT count(*) FROM sweep_points WHERE point LIKE 'policy=container;rate=%;run.seed=4'")" -ge 1 ] ||
    fail "points name their seed: $(sql sd.db "SELECT group_concat(point, ' ') FROM sweep_points")"
cap --db sd.db --seeds 3 --criterion pooled >seeds.table 2>err || fail "capacity --seeds 3 table: $(cat err)"
grep -q "^slicesim: capacity: reused $(runs sd.db) probes" err || fail "--seeds reuse: $(cat err)"
grep -q "^slicesim capacity: tiny.ini, 2 bundle(s) x 3 seeds (3 to 5), SLA miss <= 9% (all tenants pooled); mean over seeds \[95 % Student-t interval\]; ratios against container, paired by seed$" \
    seeds.table || fail "--seeds header: $(head -1 seeds.table)"
grep -Eq '^    slice +seed 3: <?[0-9.]+( \([0-9.]+\))?, seed 4: ' seeds.table ||
    fail "each seed's capacity: $(cat seeds.table)"
grep -q '^slicesim: capacity: container seed 4 (2/3) probe 1: load 1: ' err ||
    grep -q "reused" err || fail "the progress line names the seed: $(cat err)"
expect_error 2 "capacity: --seeds: expected an integer in \[1, 32\], got '0'" \
    "$S" capacity -c tiny.ini --policies slice --seeds 0
expect_error 2 "capacity: --seeds: expected an integer in \[1, 32\], got '33'" \
    "$S" capacity -c tiny.ini --policies slice --seeds 33

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
expect_error 2 "capacity: tenant 'chatt' .*: no such tenant in .*tiny.ini \(its tenants: chat, code\)" \
    "$S" capacity -c tiny.ini --policies slice --tenant chatt --db d.db
[ ! -e d.db ] || fail "a bad tenant stored something"
expect_error 2 "capacity: --tol: expected a number > 0 and < 1, got '0'" "$S" capacity -c tiny.ini --policies slice --tol 0
expect_error 2 "capacity: --max-probes: expected an integer in \[1, 64\], got '0'" \
    "$S" capacity -c tiny.ini --policies slice --max-probes 0
# --progress searches: a line per search as it ends, "k of N searches done", the share done, the
# wall time elapsed and (but at the last) the time left, with its capacity (the table's),
# whatever --jobs; no probe lines; other modes refused in one line
for jobs in 1 2; do
    cap --db none --seeds 3 --criterion pooled --json --progress searches --jobs $jobs \
        >prog$jobs.json 2>prog$jobs.err || fail "--progress searches --jobs $jobs: $(cat prog$jobs.err)"
    python3 - prog$jobs.json prog$jobs.err seeds.json <<'PY' || fail "--progress searches --jobs $jobs: $(cat prog$jobs.err)"
import json, re, sys
o, lines, ref = json.load(open(sys.argv[1])), open(sys.argv[2]).read().splitlines(), json.load(open(sys.argv[3]))
assert [p["capacity"] for p in o["policies"]] == [p["capacity"] for p in ref["policies"]]
want = {}
for p in o["policies"]:
    for r in p["runs"]:
        cap = "capacity %.4g" % r["capacity"] if r["status"] == "found" else r["status"]
        want[(p["policy"], r["seed"])] = "%s (%d probes)" % (cap, r["n_probes"])
assert len(lines) == len(want) == 6, lines
seen = {}
for k, line in enumerate(lines, 1):
    m = re.fullmatch(r"slicesim: capacity: (\d+) of 6 searches done \((\d+) %, \d+:\d\d "
                     r"elapsed(, ~\d+:\d\d left)?\): (\S+), seed (\d+): (.*)", line)
    assert m and int(m.group(1)) == k, line
    assert int(m.group(2)) == 100 * k // 6 and bool(m.group(3)) == (k < 6), line
    seen[(m.group(4), int(m.group(5)))] = m.group(6)
assert seen == want, (seen, want)
PY
done
expect_error 2 "^slicesim: capacity: --progress: expected probes, searches or none, got 'all'\$" \
    "$S" capacity -c tiny.ini --policies slice --progress all
expect_error 2 "unknown option '--rates'" "$S" capacity -c tiny.ini --policies slice --rates 1
"$S" capacity --help | grep -q "^usage: slicesim capacity -c SCENARIO.ini --policies" || fail "--help"
"$S" --help | grep -q "^  capacity " || fail "capacity in the command list"
exit 0
