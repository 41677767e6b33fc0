#!/bin/bash
# Every batching policy on the same trace and cluster, side by side: the Azure LLM inference
# conversation trace (../shared/data, or the shipped look-alike) on 2 x A100-80G serving
# Llama-2-7B, at the trace's rate and 1.25x (requests queue). Prints a Markdown table; every
# run also goes to results/batching-compare.db. Extra arguments go to every replay.
set -eu
cd "$(dirname "$0")/.."
bash tools/build-release.sh
S=./build-release/src/slicesim
AZ=${SLICESIM_DATA:-../shared/data}/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
[ -r "$AZ" ] || AZ=traces/azure-conv-synth.csv
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
num() { grep -o "\"$2\": {[^}]*}" "$1" | head -1 | grep -o "\"$3\": [0-9.]*" | cut -d' ' -f2; }
top() { grep -o "\"$2\": [0-9.]*" "$1" | head -1 | cut -d' ' -f2; }
echo "trace: $AZ; 2 x a100-80g, llama-2-7b"
echo
echo "| load | batching | output tok/s | TTFT p50 ms | TTFT p99 ms | TBT p50 ms | TBT p99 ms | E2E p99 ms | preemptions |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for x in 1 1.25; do
    for b in vllm sarathi orca static; do
        "$S" replay --trace "$AZ" --model llama-2-7b --gpu a100-80g --replicas 2 \
            --rate-scale "$x" --batching "$b" --db results/batching-compare.db --json "$@" >"$T/r"
        printf "| %s | %s | %.0f | %.0f | %.0f | %.1f | %.1f | %.0f | %s |\n" "$x" "$b" \
            "$(top "$T/r" window_output_tokens_per_s)" "$(num "$T/r" ttft_ms p50)" \
            "$(num "$T/r" ttft_ms p99)" "$(num "$T/r" tbt_ms p50)" "$(num "$T/r" tbt_ms p99)" \
            "$(num "$T/r" e2e_ms p99)" "$(top "$T/r" preemptions)"
    done
done
