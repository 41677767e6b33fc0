#!/bin/bash
# The foundation's acceptance run: the public Azure LLM inference conversation trace (from
# ../shared/data, skipped when absent) on 4 x A100-80G serving Llama-2-7B completes all 19,366
# requests, and two runs give byte-identical JSON apart from wall_s and identical request rows.
set -u
S=${SLICESIM:?SLICESIM not set}
DATA=${SLICESIM_DATA:-${SS_SHARED_DATA:-${SS_SOURCE_ROOT:?}/../shared/data}}
AZ=$DATA/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
[ -r "$AZ" ] || { echo "skip: $AZ not present"; exit 77; }
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

for i in 1 2; do
    "$S" replay --trace "$AZ" --model llama-2-7b --gpu a100-80g --replicas 4 --tp 1 --json \
        --db az.db >run$i.json 2>err || fail "run $i: $(cat err)"
done
grep -q '"requests": 19366, "completed": 19366, "rejected": 0' run1.json ||
    fail "not all requests completed: $(cat run1.json)"
sed 's/"wall_s": [0-9.]*//' run1.json >a
sed 's/"wall_s": [0-9.]*//' run2.json >b
cmp -s a b || fail "runs differ: $(diff a b)"
[ "$(sql az.db "SELECT count(*) FROM (SELECT req_id, ttft_ms, e2e_ms, tbt_mean_ms, tbt_max_ms,
    preemptions FROM requests WHERE run_id = 1 EXCEPT SELECT req_id, ttft_ms, e2e_ms,
    tbt_mean_ms, tbt_max_ms, preemptions FROM requests WHERE run_id = 2)")" = 0 ] ||
    fail "request rows differ between the runs"
[ "$(sql az.db 'SELECT count(*) FROM requests WHERE run_id = 2')" = 19366 ] || fail "rows"
cat run1.json
echo "azure_replay: all checks passed"
