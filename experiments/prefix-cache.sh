#!/bin/bash
# Prefix caching at cluster scale on experiments/prefix-cache.ini (Llama-3-8B, 4 x H100 on one
# node, TTFT <= 5 s, TBT p99 <= 200 ms), with the Mooncake trace ($SLICESIM_DATA/traces/mooncake,
# default ../shared/data; its hash_ids name every prompt's 512-token blocks) in place of the
# scenario's synthetic chat when present, else the synthetic chat itself (said so):
#  1. hit rate against cache size and routing, over the whole trace (run.duration_s = 0): the
#     GPU KV cache at gpu_mem_util 0.5 / 0.7 / 0.9
#     under round-robin, least-outstanding and prefix-affinity routing, then affinity with a KV
#     pool below the GPU caches (CPU DRAM 256 GiB per node; CPU 64 GiB + SSD 1 TiB); with each
#     run's ceiling (an unbounded cache shared by the 4 instances) and TTFT;
#  2. capacity at <= 9 % SLA misses (slicesim capacity, bisection on the load multiplier, over the
#     scenario's 300 s window, so that the trace spans it up to load 3) without
#     caching, with it (round-robin, affinity, affinity + CPU pool), and co-located (4
#     instances) against disaggregated prefill/decode at the same 4 GPUs (2+2, 1+3, 3+1).
# Every run goes to results/prefix-cache.db (recreated). Extra arguments go to every run.
# About 2 minutes on a 2-core machine.
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
DB=${PREFIX_CACHE_DB:-results/prefix-cache.db}
MC=${SLICESIM_DATA:-../shared/data}/traces/mooncake/synthetic_trace.jsonl
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$(dirname "$DB")"
rm -f "$DB"
SC=experiments/prefix-cache.ini
if [ -r "$MC" ]; then
    MC=$(cd "$(dirname "$MC")" && pwd)/$(basename "$MC")
    sed "s|^synthetic = .*|trace = $MC|" "$SC" >"$T/scenario.ini"
    SC=$T/scenario.ini
    what="the Mooncake trace ($MC)"
else
    echo "prefix-cache: $MC is missing (bash tools/get-data.sh fetches it); using the scenario's synthetic chat" >&2
    what="the scenario's synthetic chat (the Mooncake trace is absent)"
fi
start=$(date +%s)

num() { grep -o "\"$2\": [0-9.e+-]*" "$1" | head -1 | cut -d' ' -f2; }
pct() { awk -v v="$1" 'BEGIN { printf "%.1f %%", 100 * v }'; }
# the run's prefix_cache object (after the tenants list) and its TTFT
pc() { sed 's/.*"prefix_cache": //' "$1" | grep -o "\"$2\": [0-9.e+-]*" | head -1 | cut -d' ' -f2; }
ttft() { grep -o '"ttft_ms": {[^}]*}' "$1" | head -1 | grep -o "\"$2\": [0-9.]*" | cut -d' ' -f2; }

echo "Prefix caching on $what: Llama-3-8B on 4 x H100, seed 1."
echo
echo "**Hit rate against cache size and routing** (load 1, the whole trace; the KV cache per instance follows gpu_mem_util)"
echo
echo "| gpu_mem_util | routing | KV pool | hit rate | ceiling | TTFT mean ms | TTFT p99 ms | SLA miss |"
echo "|---:|---|---|---:|---:|---:|---:|---:|"
. experiments/links-peak.sh
row() { # row UTIL ROUTING POOL-LABEL [--set ...]
    local util=$1 routing=$2 pool=$3
    shift 3
    # shellcheck disable=SC2086 # LINKS holds several words
    "$S" replay -c "$SC" --set tenant.chat.replicas=4 --set engine.prefix_cache=on $LINKS \
        --set run.duration_s=0 --set run.warmup_s=0 --set engine.gpu_mem_util="$util" \
        --set policy.routing="$routing" "$@" --db "$DB" \
        --json --no-progress >"$T/r" 2>"$T/e" || { cat "$T/e" >&2; exit 1; }
    printf "| %s | %s | %s | %s | %s | %.0f | %.0f | %s |\n" "$util" "$routing" "$pool" \
        "$(pct "$(pc "$T/r" hit_rate)")" "$(pct "$(pc "$T/r" ceiling_hit_rate)")" \
        "$(ttft "$T/r" mean)" "$(ttft "$T/r" p99)" "$(pct "$(num "$T/r" sla_violation_rate)")"
}
for util in 0.5 0.7 0.9; do
    for routing in rr lor affinity; do
        row "$util" "$routing" none "$@"
    done
done
row 0.9 affinity "CPU 256 GiB" --set kvpool.cpu_gib=256 "$@"
row 0.9 affinity "CPU 64 GiB + SSD 1 TiB" --set kvpool.cpu_gib=64 --set kvpool.ssd_gib=1024 "$@"
echo

P="off:tenant.chat.replicas=4+engine.prefix_cache=off"
P+=",rr:tenant.chat.replicas=4+engine.prefix_cache=on"
P+=",affinity:tenant.chat.replicas=4+engine.prefix_cache=on+policy.routing=affinity"
P+=",affinity-pool:tenant.chat.replicas=4+engine.prefix_cache=on+policy.routing=affinity"
P+="+kvpool.cpu_gib=256"
P+=",disagg-2p2d:tenant.chat.prefill_replicas=2+tenant.chat.decode_replicas=2"
P+="+engine.prefix_cache=on"
P+=",disagg-1p3d:tenant.chat.prefill_replicas=1+tenant.chat.decode_replicas=3"
P+="+engine.prefix_cache=on"
P+=",disagg-3p1d:tenant.chat.prefill_replicas=3+tenant.chat.decode_replicas=1"
P+="+engine.prefix_cache=on"
# shellcheck disable=SC2086
"$S" capacity -c "$SC" --policies "$P" --db "$DB" --name capacity:prefix-cache --json $LINKS \
    --no-progress "$@" >"$T/cap.json" 2>"$T/cap.err" || { cat "$T/cap.err" >&2; exit 1; }
elapsed=$(( $(date +%s) - start ))
PYTHONPATH=experiments python3 - "$T/cap.json" "$elapsed" "$DB" <<'PY'
import json, sys
from capacity_tables import cap, censored
r, elapsed, db = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
bound = r["sla_miss_bound"]
what = {"off": "no prefix cache, round-robin, 4 instances",
        "rr": "prefix cache, round-robin, 4 instances",
        "affinity": "prefix cache, prefix-affinity routing, 4 instances",
        "affinity-pool": "the same with a 256 GiB CPU KV pool",
        "disagg-2p2d": "disaggregated: 2 prefill + 2 decode instances, prefix cache",
        "disagg-1p3d": "disaggregated: 1 prefill + 3 decode instances, prefix cache",
        "disagg-3p1d": "disaggregated: 3 prefill + 1 decode instance, prefix cache"}
base = cap(r["policies"][0])
print(f"**Capacity at <= {100 * bound:.0f} % SLA misses** (the highest load multiplier; ≥: a "
      "lower bound, the trace ran out above it)\n")
print("| bundle | what | capacity | vs no cache | SLA miss at capacity | goodput tok/s |")
print("|---|---|---:|---:|---:|---:|")
for p in r["policies"]:
    c = cap(p)
    ratio = f"{c / base:.2f}" if base else "-"
    print(f"| {p['policy']} | {what.get(p['policy'], '')} | "
          f"{'≥ ' if censored(p, bound) else ''}{c:.3f} | {ratio} | "
          f"{100 * p['sla_miss']:.1f} % | {p['goodput_tok_per_s']:.0f} |")
print(f"\nprefix-cache: {elapsed} s; every run in {db}")
PY
