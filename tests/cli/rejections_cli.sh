#!/bin/bash
# Rejected requests are explained (issue 13, messages): the table says how many were rejected
# and why ("2 prompt > max-model-len 2048"), a warning says so on stderr when more than 1 % were
# rejected, the summary stores the counts by reason (rejected_* columns) and the JSON has them
# (rejected_why). A run with no SLA set reports no SLA violations, rejections or not.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# 100 requests, 0.1 s apart: rows 10 and 20 are longer than max-model-len 2048, row 30 longer
# than vLLM's max-num-batched-tokens 1024 (but within max-model-len)
{
    echo "request_id,arrival_s,tenant,prompt_tokens,output_tokens"
    for i in $(seq 0 99); do
        p=100
        [ "$i" = 10 ] || [ "$i" = 20 ] && p=3000
        [ "$i" = 30 ] && p=1500
        echo "$i,$((i / 10)).$((i % 10)),a,$p,10"
    done
} >t.csv
run() { # OUT ARGS...: replay t.csv with a small model length
    local out=$1
    shift
    "$S" replay --trace t.csv --max-model-len 2048 --max-num-batched-tokens 1024 "$@" \
        >"$out" 2>"$out.err" || fail "replay $*: $(cat "$out.err")"
}

run table --db r.db
grep -q "requests 100: completed 97, rejected 3," table || fail "table: $(cat table)"
grep -qx "  rejected 3 (3.0 %): 2 prompt > max-model-len 2048, 1 prompt > max-num-batched-tokens 1024" \
    table || fail "no reasons in the table: $(cat table)"
[ "$(cat table.err)" = "slicesim: warning: 3 of 100 requests (3.0 %) were rejected: 2 prompt > \
max-model-len 2048, 1 prompt > max-num-batched-tokens 1024" ] || fail "warning: $(cat table.err)"
[ "$(sql r.db 'SELECT rejected || "," || rejected_too_long || "," || rejected_batch_tokens || ","
    || rejected_kv_blocks || "," || rejected_preempted || "," || rejected_other FROM summary')" = \
    "3,2,1,0,0,0" ] || fail "summary: $(sql r.db 'SELECT * FROM summary')"

# no SLA is set: rejections are no SLA violations, and the table reports none
! grep -q "SLA" table || fail "SLA reported without an SLA: $(cat table)"
[ "$(sql r.db 'SELECT sla_violations FROM summary')" = 0 ] || fail "summary.sla_violations"
[ "$(sql r.db 'SELECT count(*) FROM requests WHERE sla_violated')" = 0 ] || fail "requests.sla_violated"
# with one, a rejected request violates it
run sla --set tenant.default.sla_e2e_ms=60000 --db s.db
grep -q "SLA: 3.00 % of requests violated" sla || fail "SLA with a bound: $(cat sla)"
[ "$(sql s.db 'SELECT sla_violations FROM summary')" = 3 ] || fail "summary.sla_violations"

run j.json --json --db none
grep -q '"rejected_why": {"too_long": 2, "batch_tokens": 1, "kv_blocks": 0, "preempted": 0, "other": 0}' \
    j.json || fail "JSON: $(grep -o '"rejected_why": {[^}]*}' j.json)"

# the reasons are those of the requests run (here the first 15)
run few --limit 15 --db none
grep -qx "  rejected 1 (6.7 %): 1 prompt > max-model-len 2048" few || fail "table: $(cat few)"
# 1 % or less rejected: the table still says why, but no warning
sed -i 's/^20,2.0,a,3000,10$/20,2.0,a,100,10/; s/^30,3.0,a,1500,10$/30,3.0,a,100,10/' t.csv
run one --db none
grep -qx "  rejected 1 (1.0 %): 1 prompt > max-model-len 2048" one || fail "table: $(cat one)"
[ ! -s one.err ] || fail "a warning for 1 % rejected: $(cat one.err)"
# nothing rejected: no line
sed -i 's/^10,1.0,a,3000,10$/10,1.0,a,100,10/' t.csv
run none --db none
! grep -q "rejected [0-9]* (" none || fail "a rejection line with nothing rejected: $(cat none)"

# Mooncake's synthetic trace, when the shared data is there: its long prompts at the default
# max-model-len (the issue's case)
DATA=${SLICESIM_DATA:-${SS_SHARED_DATA:-}}
MC=$DATA/traces/mooncake/synthetic_trace.jsonl
if [ -n "$DATA" ] && [ -r "$MC" ]; then
    "$S" replay --trace "$MC" --db none >mc 2>mc.err || fail "Mooncake: $(cat mc.err)"
    grep -qx "  rejected 1587 (39.7 %): 1587 prompt > max-model-len 16384" mc ||
        fail "Mooncake: $(cat mc)"
    grep -q "^slicesim: warning: 1587 of 3993 requests (39.7 %) were rejected" mc.err ||
        fail "Mooncake warning: $(cat mc.err)"
    ! grep -q "SLA" mc || fail "Mooncake: SLA reported without an SLA: $(cat mc)"
else
    echo "rejections_cli: no Mooncake trace in \$SLICESIM_DATA; that part skipped"
fi

echo "rejections_cli: ok"
