#!/bin/bash
# `slicesim replay -c SCENARIO`: multi-tenant runs from scenario files, --set overrides, the
# per-tenant and per-tier JSON and database rows, and the error contract for scenario files,
# --set and tenant options on multi-tenant scenarios. A parameter meant for another policy is a
# warning, an unknown one an error.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
EX=$ROOT/experiments/example-two-tenants.ini

"$S" replay -c "$EX" --db r.db --json >a.json 2>err || fail "example scenario: $(cat err)"
for k in sla_violation_rate goodput_tokens_per_s migrations tenants tiers; do
    grep -q "\"$k\": " a.json || fail "JSON lacks $k"
done
grep -q '"tenants": \[{"name": "chat", "model": "llama-2-7b"' a.json || fail "tenant chat"
grep -q '{"name": "batch", "model": "llama-3-8b"' a.json || fail "tenant batch"
grep -q '"tiers": \[{"tier": 0, "requests": [0-9]*, "completed"' a.json || fail "tier 0"
grep -q '{"tier": 1, ' a.json || fail "tier 1"
if command -v python3 >/dev/null; then
    python3 - a.json <<'PY' || fail "tenant and tier counts do not add up"
import json, sys
d = json.load(open(sys.argv[1]))
assert sum(t["requests"] for t in d["tenants"]) == d["measured_requests"]
assert sum(t["requests"] for t in d["tiers"]) == d["measured_requests"]
for g in d["tenants"] + d["tiers"]:
    for k in ("ttft_ms", "tbt_ms", "e2e_ms"):
        assert set(("p50", "p90", "p99")) <= set(g[k])
PY
fi
# The table says what its counts count (the warm-up's requests are not measured) and over
# which span each of its two goodputs is: the arrival window's, and the measurement window's
# that the tenant table uses. The numbers are the JSON's.
"$S" replay -c "$EX" --db none >table 2>err || fail "example scenario table: $(cat err)"
if command -v python3 >/dev/null; then
    python3 - a.json table <<'PY' || fail "the table's counts or goodputs: $(sed -n 2,8p table)"
import json, sys
d, t = json.load(open(sys.argv[1])), open(sys.argv[2]).read().splitlines()
n, m = d["requests"], d["measured_requests"]
want = ("  requests %d: %d in the 60.0 s warm-up (not measured), %d measured: completed %d, "
        % (n, n - m, m, d["completed"]))
assert n > m > 0 and t[1].startswith(want), (t[1], want)
arr = [x for x in t if x.startswith("  in the arrival window (")]
assert len(arr) == 1 and arr[0].endswith(", goodput %.1f" % d["window_goodput_tokens_per_s"]), arr
sla = [x for x in t if x.startswith("  SLA: ")]
assert len(sla) == 1 and sla[0].endswith(
    "goodput %.1f output tokens/s over the measurement window (%.1f s, the warm-up's end to the "
    "last completion)" % (d["goodput_tokens_per_s"], d["window_s"])), sla
assert not [x for x in t if x.startswith("  measured: ")], "the old measured line is back"
PY
fi
[ "$(sql r.db 'SELECT count(*) FROM tenants')" = 2 ] || fail "tenants rows"
[ "$(sql r.db 'SELECT count(*) FROM tiers')" = 2 ] || fail "tiers rows"
[ "$(sql r.db "SELECT cluster_policy FROM runs")" = container ] || fail "runs.cluster_policy"
sql r.db "SELECT scenario FROM runs" | grep -q '^\[tenant.batch\]' || fail "runs.scenario text"

# --set overrides any key; a run with llumnix-tiers migrates and stores its counts
"$S" replay -c "$EX" --db r.db --json --set tenant.chat.rate_scale=3 \
    --set policy.cluster=llumnix-tiers >b.json 2>err || fail "--set run: $(cat err)"
grep -q '"cluster": "llumnix-tiers"' b.json || fail "cluster not overridden"
grep -q '"routing": "rr"' b.json || fail "the file's explicit routing must stay"
[ "$(sql r.db "SELECT count(*) FROM runs WHERE cluster_policy = 'llumnix-tiers'")" = 1 ] ||
    fail "second run not stored"

# the multi-tier experiment, shortened with a tenant option (it has one tenant): K = 4 tiers,
# Llumnix dispatch by default with the llumnix-tiers cluster
"$S" replay -c "$ROOT/experiments/multitier-llama2-7b.ini" --limit 3000 --db r.db --json \
    >c.json 2>err || fail "multitier scenario: $(cat err)"
grep -q '"routing": "llumnix"' c.json || fail "llumnix clusters dispatch with llumnix"
[ "$(sql r.db "SELECT count(*) FROM tiers WHERE run_id = 3")" = 4 ] || fail "4 tiers stored"

# SliceScheduler on its experiment, shortened: offloads happen, the run says how many, and the
# database records the placement
SV="$ROOT/experiments/slice-vs-container.ini"
"$S" replay -c "$SV" --ops slice --set run.duration_s=80 --set run.warmup_s=20 --db r.db \
    --json >d.json 2>err || fail "slice scenario: $(cat err)"
grep -q '"ops": "slice"' d.json || fail "JSON lacks the placement"
grep -Eq '"slice": \{"offloads": [1-9]' d.json || fail "no offload: $(grep -o '"slice": {[^}]*' d.json)"
[ "$(sql r.db "SELECT count(*) FROM runs JOIN summary USING (run_id) WHERE ops = 'slice' AND
    offloads > 0 AND whatifs >= offloads")" = 1 ] || fail "slice run not stored"
# deterministic: a second run differs only in its wall-clock figures
"$S" replay -c "$SV" --ops slice --set run.duration_s=80 --set run.warmup_s=20 --db none \
    --json >d2.json 2>err || fail "slice scenario again: $(cat err)"
strip_wall() { sed -E 's/"(wall_s|decision_wall_s|decisions_per_s)": [0-9.e+-]*//g' "$1"; }
[ "$(strip_wall d.json)" = "$(strip_wall d2.json)" ] || fail "two slice runs differ"
"$S" replay -c "$SV" --set run.duration_s=80 --set run.warmup_s=20 --db none --json >e.json ||
    fail "container run of the slice scenario"
grep -q '"ops": "home"' e.json || fail "the scenario's default placement is home"
grep -q '"slice"' e.json && fail "a home run reports SliceScheduler figures"
expect_error 2 "ops: expected one of home, slice, greedy, got .slices.$" "$S" replay --ops slices --limit 10 --db none
# any batching: Orca holds its reservation for a moved request; static batching takes none
for b in orca static; do
    "$S" replay -c "$SV" --ops slice --batching "$b" --set run.duration_s=80 \
        --set run.warmup_s=20 --db none --json >"$b.json" 2>err || fail "slice + $b: $(cat err)"
done
grep -Eq '"slice": \{"offloads": [1-9]' orca.json || fail "no offload under orca"
grep -Eq '"slice": \{"offloads": 0,' static.json || fail "offloads under static batching"
expect_error 2 "slice_weights: expected auto, stream or stage" \
    "$S" replay --ops slice --param slice_weights=fast --limit 10 --db none

# warnings and errors
"$S" replay --limit 50 --db none --param token_budget=100 >/dev/null 2>err ||
    fail "a parameter of another policy must not stop the run"
grep -q "parameter 'token_budget' is not used .*(it belongs to sarathi)" err ||
    fail "no warning: $(cat err)"
expect_error 2 "^slicesim: replay: --set: run.sed: unknown key" \
    "$S" replay -c "$EX" --set run.sed=3 --db none
expect_error 2 "need a one-tenant scenario" "$S" replay -c "$EX" --model llama-2-13b --db none
printf '[run]\nseed = 1\n[tenant.x]\nmodel = llama-2-7b\nreplicas = two\n' >bad.ini
expect_error 2 "bad.ini:5: tenant.x.replicas: " "$S" replay -c bad.ini --db none
printf '[polcy]\n' >bad2.ini
expect_error 2 "bad2.ini:1: section \\[polcy\\]: unknown section" "$S" replay -c bad2.ini --db none
expect_error 2 "no-such.ini" "$S" replay -c no-such.ini --db none
printf '[tenant.x]\nmodel = llama-2-7b\ntrace = %s\nsynthetic = "rate=1 duration=5"\n' \
    "$ROOT/traces/azure-conv-synth.csv" >two.ini
expect_error 2 "two.ini:1: tenant.x: needs exactly one workload source" "$S" replay -c two.ini --db none
# a bad value inside the synthetic spec: the file, line and key, then the spec's own key
printf '[tenant.x]\nmodel = llama-2-7b\n\nsynthetic = "rate=1 duration=5 cv=0"\n' >syn.ini
expect_error 2 "^slicesim: replay: syn.ini:4: tenant.x.synthetic: cv: expected a positive number, got '0'$" \
    "$S" replay -c syn.ini --db none
expect_error 2 "^slicesim: replay: --set: tenant.x.synthetic: prompt: 'fixed:0': N: must be in" \
    "$S" replay -c syn.ini --db none --set "tenant.x.synthetic=rate=1 duration=5 prompt=fixed:0"
echo "scenario_cli: all checks passed"
