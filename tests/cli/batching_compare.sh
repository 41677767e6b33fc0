#!/bin/bash
# The Azure LLM inference conversation trace (../shared/data; skipped when absent) on 2 x A100
# serving Llama-2-7B at 1.25x its rate, so that requests queue: Sarathi-Serve's chunked prefill
# gives a lower p99 TBT than vLLM's prefill-first schedule, and static batching the worst TTFT.
# Prints the rows side by side (bench/batching-compare.sh prints every policy).
set -u
S=${SLICESIM:?SLICESIM not set}
DATA=${SLICESIM_DATA:-${SS_SHARED_DATA:-${SS_SOURCE_ROOT:?}/../shared/data}}
AZ=$DATA/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
[ -r "$AZ" ] || { echo "skip: $AZ not present"; exit 77; }
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT

num() { grep -o "\"$2\": {[^}]*}" "$1" | head -1 | grep -o "\"$3\": [0-9.]*" | cut -d' ' -f2; }
for b in vllm sarathi static; do
    "$S" replay --trace "$AZ" --model llama-2-7b --gpu a100-80g --replicas 2 --rate-scale 1.25 \
        --batching "$b" --db none --json >"$T/$b.json" || fail "$b run"
    printf "%-8s TTFT p50 %10.1f ms  p99 %10.1f ms   TBT p50 %6.1f ms  p99 %7.1f ms\n" "$b" \
        "$(num "$T/$b.json" ttft_ms p50)" "$(num "$T/$b.json" ttft_ms p99)" \
        "$(num "$T/$b.json" tbt_ms p50)" "$(num "$T/$b.json" tbt_ms p99)"
done
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
lt "$(num "$T/sarathi.json" tbt_ms p99)" "$(num "$T/vllm.json" tbt_ms p99)" ||
    fail "sarathi p99 TBT is not below vllm's"
for b in vllm sarathi; do
    lt "$(num "$T/$b.json" ttft_ms p99)" "$(num "$T/static.json" ttft_ms p99)" ||
        fail "static p99 TTFT is not the worst (vs $b)"
    lt "$(num "$T/$b.json" ttft_ms p50)" "$(num "$T/static.json" ttft_ms p50)" ||
        fail "static p50 TTFT is not the worst (vs $b)"
done
echo "batching_compare: all checks passed"
