#!/bin/bash
# Cache-aware routing on the Mooncake synthetic trace (its hash_ids give every prompt's blocks):
# Llama-3-8B on 4 x H100-SXM (TP 1), where each instance's KV cache holds a fraction of the
# trace's distinct blocks. For round-robin, least-outstanding and prefix-affinity routing it
# prints the prefix-cache hit rate, the spread over the instances, the ceiling (an unbounded
# cache shared by the four), the blocks evicted and the TTFT, as a Markdown table; every run
# also goes to results/affinity-mooncake.db. Extra arguments go to every replay.
set -eu
cd "$(dirname "$0")/.."
bash tools/build-release.sh
S=./build-release/src/slicesim
MC=${SLICESIM_DATA:-../shared/data}/traces/mooncake/synthetic_trace.jsonl
[ -r "$MC" ] || { echo "affinity-mooncake: $MC is missing (tools/get-data.sh fetches it)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# the overall prefix_cache object's fields (after the tenants list), and the tenant's spread
pc() { sed 's/.*"ops": "[a-z]*", "prefix_cache": //' "$1" | grep -o "\"$2\": [0-9.]*" | head -1 | cut -d' ' -f2; }
spread() { grep -o '"instance_hit_rate": {[^}]*}' "$1" | grep -o "\"$2\": [0-9.]*" | cut -d' ' -f2; }
ttft() { grep -o '"ttft_ms": {[^}]*}' "$1" | head -1 | grep -o "\"$2\": [0-9.]*" | cut -d' ' -f2; }
echo "trace: $MC; 4 x h100-sxm, llama-3-8b, --max-model-len 131072"
echo
echo "| routing | hit rate | instances min / max | ceiling | blocks evicted | TTFT mean ms | TTFT p99 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for r in rr lor affinity; do
    "$S" replay --trace "$MC" --trace-format mooncake --model llama-3-8b --max-model-len 131072 \
        --gpu h100-sxm --tp 1 --replicas 4 --routing "$r" --db results/affinity-mooncake.db \
        --json --no-progress "$@" >"$T/r"
    printf "| %s | %.1f %% | %.1f / %.1f %% | %.1f %% | %s | %.1f | %.1f |\n" "$r" \
        "$(echo "100 * $(pc "$T/r" hit_rate)" | bc -l)" \
        "$(echo "100 * $(spread "$T/r" min)" | bc -l)" "$(echo "100 * $(spread "$T/r" max)" | bc -l)" \
        "$(echo "100 * $(pc "$T/r" ceiling_hit_rate)" | bc -l)" "$(pc "$T/r" evictions)" \
        "$(ttft "$T/r" mean)" "$(ttft "$T/r" p99)"
done
