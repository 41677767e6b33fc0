#!/bin/bash
# CLI tests of `slicesim replay` on the shipped default trace: --help, the table and the JSON
# keys other tools rely on, the results database (one run, one row per request, summary),
# determinism of two runs, --rate-scale and --limit, --db none, and the error contract: bad
# input exits 2 with one "slicesim: ..." line naming the file/line/field or option, and a run
# that fails midway adds nothing to the database.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
TRACE=$ROOT/traces/azure-conv-synth.csv

"$S" replay --help >help || fail "--help exited non-zero"
for o in --trace --model --gpu --replicas --tp --batching --routing --seed --limit --rate-scale \
    --db --json; do
    grep -q -- "$o" help || fail "--help does not mention $o"
done

# The table, and the database it writes.
"$S" replay --trace "$TRACE" --limit 2000 --db r.db >table 2>err || fail "replay: $(cat err)"
grep -q "completed 2000" table || fail "table: $(cat table)"
grep -Eq "TTFT +[0-9.]+" table || fail "table lacks the TTFT row"
[ "$(sql r.db 'SELECT count(*) FROM runs')" = 1 ] || fail "runs rows"
[ "$(sql r.db 'SELECT count(*) FROM requests WHERE run_id = 1')" = 2000 ] || fail "requests rows"
[ "$(sql r.db 'SELECT completed FROM summary')" = 2000 ] || fail "summary row"
[ "$(sql r.db 'PRAGMA user_version')" = 18 ] || fail "schema version"
[ "$(sql r.db 'SELECT engine FROM runs')" = vllm-0.15 ] || fail "runs.engine (the default engine)"

# runs.command can be run again: an argument a shell would split or expand is quoted
mkdir "a b" && cp "$TRACE" "a b/it's.csv" || fail "trace copy"
"$S" replay --trace "a b/it's.csv" --limit 5 --db q.db >/dev/null 2>err || fail "replay: $(cat err)"
cmd=$(sql q.db 'SELECT command FROM runs')
[ "$cmd" = "slicesim replay --trace 'a b/it'\''s.csv' --limit 5 --db q.db" ] || fail "runs.command: $cmd"
eval "set -- $cmd"
[ "$4" = "a b/it's.csv" ] && [ $# -eq 8 ] || fail "runs.command does not split back: $cmd"

# JSON: the contract keys, and identical output on a second run apart from wall_s.
"$S" replay --trace "$TRACE" --limit 2000 --db r.db --json >a.json || fail "json run 1"
"$S" replay --trace "$TRACE" --limit 2000 --db r.db --json >b.json || fail "json run 2"
[ "$(wc -l <a.json)" -eq 1 ] || fail "JSON is not one line"
for k in requests completed rejected preemptions events wall_s sim_s prompt_tokens_per_s \
    output_tokens_per_s ttft_ms tbt_ms e2e_ms; do
    grep -q "\"$k\": " a.json || fail "JSON lacks $k"
done
for k in ttft_ms tbt_ms e2e_ms; do
    grep -Eq "\"$k\": \\{[^}]*\"p50\": [0-9.]+, \"p90\": [0-9.]+, \"p99\": [0-9.]+" a.json ||
        fail "JSON $k lacks p50/p90/p99"
done
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' a.json || fail "invalid JSON"
    # idle slices: the buckets add up to the totals, which the database repeats
    python3 - a.json "$(sql r.db 'SELECT idle_slices FROM summary WHERE run_id = 2')" <<'PY' ||
import json, sys
s = json.load(open(sys.argv[1]))["idle_slices"]
assert len(s["buckets"]) == 8 and s["buckets"][-1]["hi_ms"] is None, s
assert sum(b["count"] for b in s["buckets"]) == s["count"] == int(sys.argv[2]) > 0, s
assert abs(sum(b["gpu_s"] for b in s["buckets"]) - s["gpu_s"]) < 1e-6, s
PY
        fail "JSON idle_slices: $(grep -o '"idle_slices": {[^]]*' a.json)"
fi
sed 's/"wall_s": [0-9.]*//' a.json >a.cmp
sed 's/"wall_s": [0-9.]*//' b.json >b.cmp
cmp -s a.cmp b.cmp || fail "two runs differ: $(diff a.cmp b.cmp)"
[ "$(sql r.db "SELECT count(*) FROM (SELECT req_id, ttft_ms, e2e_ms, tbt_max_ms FROM requests
    WHERE run_id = 2 EXCEPT SELECT req_id, ttft_ms, e2e_ms, tbt_max_ms FROM requests WHERE run_id = 3)")" = 0 ] ||
    fail "request rows of identical runs differ"

# Doubling the rate must not lower p99 TTFT; --rate-scale is recorded.
"$S" replay --trace "$TRACE" --limit 3000 --replicas 1 --db none --json >r1.json || fail "x1"
"$S" replay --trace "$TRACE" --limit 3000 --replicas 1 --db none --json --rate-scale 2 >r2.json ||
    fail "x2"
p99() { grep -o '"ttft_ms": {[^}]*}' "$1" | head -1 | grep -o '"p99": [0-9.]*' | cut -d' ' -f2; }
awk -v a="$(p99 r1.json)" -v b="$(p99 r2.json)" 'BEGIN { exit !(b >= a) }' ||
    fail "p99 TTFT fell from $(p99 r1.json) to $(p99 r2.json) when the rate doubled"

# --db none writes nothing.
"$S" replay --trace "$TRACE" --limit 100 --db none >/dev/null || fail "--db none"
[ ! -e results ] || fail "--db none created results/"

# Errors.
expect_error 2 "unknown model 'llama-7b' \(known: .*llama-2-7b" "$S" replay --trace "$TRACE" --model llama-7b --db x.db
expect_error 2 "unknown GPU 'a100' \(known: a100-80g" "$S" replay --trace "$TRACE" --gpu a100 --db x.db
expect_error 2 "rate-scale: expected a number > 0, got '-2'" "$S" replay --trace "$TRACE" --rate-scale -2
expect_error 2 "replicas" "$S" replay --trace "$TRACE" --replicas 0
expect_error 2 "unknown or incomplete option '--replicaz'" "$S" replay --replicaz 2
expect_error 2 "unknown parameter 'max_num_seq'" "$S" replay --trace "$TRACE" --param max_num_seq=4 --db x.db
expect_error 2 "nosuch.csv" "$S" replay --trace nosuch.csv --db x.db
expect_error 2 "routing: unknown policy 'random-ish' \(known: rr, lor, random, infaas, llumnix, affinity, prefill-affinity, decode-load\)" "$S" replay --trace "$TRACE" --routing random-ish
expect_error 2 "does not fit" "$S" replay --trace "$TRACE" --model llama-2-70b --gpu l40s --db x.db
[ ! -e x.db ] || [ "$(sql x.db 'SELECT count(*) FROM runs')" = 0 ] || fail "a refused run was stored"

# A malformed row midway: exit 2, FILE:LINE: field, and the database keeps only earlier runs.
head -1001 "$TRACE" >bad.csv
echo "9999,9999.5,default,12x,10" >>bad.csv
tail -n +1002 "$TRACE" | head -100 >>bad.csv
expect_error 2 "bad.csv:1002: prompt_tokens: " "$S" replay --trace bad.csv --db r.db
[ "$(sql r.db 'SELECT count(*) FROM runs')" = 3 ] || fail "failed run changed the runs table"
[ "$(sql r.db 'SELECT count(*) FROM requests')" = 6000 ] || fail "failed run left request rows"
[ "$(sql r.db 'PRAGMA integrity_check')" = ok ] || fail "integrity_check"
# Mooncake JSONL (the public sample, when present), with timestamps spread.
MC=${SLICESIM_DATA:-${SS_SHARED_DATA:-$ROOT/../shared/data}}/traces/mooncake/synthetic_trace.jsonl
if [ -r "$MC" ]; then
    "$S" replay --trace "$MC" --trace-spread --limit 500 --db none >mc.out || fail "mooncake replay"
    grep -q "(mooncake)" mc.out || fail "mooncake not detected: $(head -1 mc.out)"
    grep -q "requests 500: " mc.out || fail "mooncake replay: $(sed -n 2p mc.out)"
fi
# On a terminal (script(1) gives it one) the progress line says how far the simulated time is
# into the run's duration, the share, the wall time elapsed and the time left; --no-progress:
# no line. (A long run with --check, so that a line is due.)
if command -v script >/dev/null && ! sanitized; then
    "$S" trace gen --rate 40 --duration 1200 -o big.csv 2>/dev/null || fail "trace gen big"
    script -qec "$S replay --trace big.csv --replicas 8 --duration 1200 --check --db none \
        >/dev/null" tty.txt >/dev/null 2>&1 || fail "replay on a terminal"
    tr '\r' '\n' <tty.txt | grep -Eq '^slicesim: simulated [0-9.]+ s of 1200 \([0-9]+ %, [0-9]+:[0-9]{2} elapsed, ~[0-9]+:[0-9]{2} left\) \| [0-9]+ arrived, [0-9]+ finished \| ' ||
        fail "replay's progress line: $(tr '\r' '\n' <tty.txt | grep simulated | head -2)"
    script -qec "$S replay --trace big.csv --replicas 8 --duration 1200 --check --db none \
        --no-progress >/dev/null" quiet.txt >/dev/null 2>&1 || fail "--no-progress"
    ! grep -q 'slicesim:' quiet.txt || fail "replay --no-progress wrote: $(cat quiet.txt)"
fi
echo "replay_cli: all checks passed"
