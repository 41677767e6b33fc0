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
#  2. capacity at <= 9 % SLA misses of every request (slicesim capacity, bisection to 1 % on the
#     load multiplier, over the scenario's 300 s window, so that the trace spans it up to load 3)
#     without caching, with it (round-robin, affinity, affinity + CPU pool), and co-located
#     against disaggregated prefill/decode at the same 4 GPUs, the layout searched on both
#     sides with the same effort: co-located 4 x TP 1 and 2 x TP 2 (cache, affinity routing),
#     disaggregated 1+3, 2+2 and 3+1 (cache; prefill instances are picked by cached prefix);
#     prefill-first batching on the best co-located layout is the labelled ablation.
# Every tenant runs chunked prefill (sarathi) at the engine's H100 budget of 8192 tokens, the
# scenario's; copies run at the hardware profile's link efficiencies. Every run goes to
# results/prefix-cache.db (recreated). Extra arguments go to every run. About 4 minutes on a
# 2-core machine.
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
row() { # row UTIL ROUTING POOL-LABEL [--set ...]
    local util=$1 routing=$2 pool=$3
    shift 3
    "$S" replay -c "$SC" --set tenant.chat.replicas=4 --set engine.prefix_cache=on \
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

# Co-located against disaggregated at the same 4 GPUs, each side's layout and Sarathi token
# budget searched with the same effort: 3 layouts x 5 budgets a side, every candidate a
# capacity search (prefix cache on; co-located instances routed by cached prefix, as the
# disaggregated prefill instances are picked).
BUDGETS="512 1024 2048 4096 8192"
for b in $BUDGETS; do # one capacity command per budget (at most 16 bundles a command)
    on="+engine.prefix_cache=on+policy.token_budget=$b"
    G="colo-4x1-$b:tenant.chat.replicas=4+policy.routing=affinity$on"
    G+=",colo-2x2-$b:tenant.chat.replicas=2+tenant.chat.tp=2+policy.routing=affinity$on"
    G+=",colo-1x4-$b:tenant.chat.replicas=1+tenant.chat.tp=4+policy.routing=affinity$on"
    G+=",disagg-1p3d-$b:tenant.chat.prefill_replicas=1+tenant.chat.decode_replicas=3$on"
    G+=",disagg-2p2d-$b:tenant.chat.prefill_replicas=2+tenant.chat.decode_replicas=2$on"
    G+=",disagg-3p1d-$b:tenant.chat.prefill_replicas=3+tenant.chat.decode_replicas=1$on"
    "$S" capacity -c "$SC" --policies "$G" --db "$DB" --name "capacity:layouts:$b" --json \
        --tol 0.01 --no-progress "$@" >"$T/grid.$b.json" 2>"$T/grid.err" ||
        { cat "$T/grid.err" >&2; exit 1; }
done
python3 - "$T"/grid.*.json >"$T/grid.json" <<'PY'
import json, sys
grid = [json.load(open(f)) for f in sys.argv[1:]]
out = dict(grid[0], policies=[p for g in grid for p in g["policies"]])
json.dump(out, sys.stdout)
PY
# The best co-located candidate's layout and budget, for the caching rows below.
best=$(python3 - "$T/grid.json" <<'PY'
import json, sys
ps = [p for p in json.load(open(sys.argv[1]))["policies"] if p["policy"].startswith("colo-")]
b = max(ps, key=lambda p: p["capacity"] if p["status"] == "found" else 0)["policy"]
_, layout, budget = b.split("-")
n, tp = layout.split("x")
print(f"tenant.chat.replicas={n}+tenant.chat.tp={tp}+policy.token_budget={budget}")
PY
)
P="off:$best+engine.prefix_cache=off"
P+=",rr:$best+engine.prefix_cache=on"
P+=",affinity:$best+engine.prefix_cache=on+policy.routing=affinity"
P+=",affinity-pool:$best+engine.prefix_cache=on+policy.routing=affinity+kvpool.cpu_gib=256"
P+=",prefill-first:$best+engine.prefix_cache=on+policy.routing=affinity+policy.batching=vllm"
"$S" capacity -c "$SC" --policies "$P" --db "$DB" --name capacity:prefix-cache --json --tol 0.01 \
    --no-progress "$@" >"$T/cap.json" 2>"$T/cap.err" || { cat "$T/cap.err" >&2; exit 1; }
elapsed=$(( $(date +%s) - start ))
PYTHONPATH=experiments python3 - "$T/grid.json" "$T/cap.json" "$elapsed" "$DB" "$best" <<'PY'
import json, sys
from capacity_tables import cap, censored
grid, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
elapsed, db, best = sys.argv[3], sys.argv[4], sys.argv[5]
bound = r["sla_miss_bound"]
mark = lambda p: "≥ " if censored(p, bound) else ""
gp = {p["policy"]: p for p in grid["policies"]}
budgets = sorted({int(n.rsplit("-", 1)[1]) for n in gp})
layouts = []
for n in gp:
    l = n.rsplit("-", 1)[0]
    if l not in layouts:
        layouts.append(l)
print(f"**Co-located against disaggregated, each searched** (capacity at <= {100 * bound:.0f} % "
      f"SLA misses, bisected to {100 * grid['tol']:.0f} %, prefix cache on; rows: layouts on 4 "
      "GPUs, columns: Sarathi's token budget; ≥: a lower bound, the trace ran out above it)\n")
print("| layout | " + " | ".join(str(b) for b in budgets) + " |")
print("|---|" + "---:|" * len(budgets))
for l in layouts:
    cells = [f"{mark(gp[f'{l}-{b}'])}{cap(gp[f'{l}-{b}']):.3f}" for b in budgets]
    print(f"| {l} | " + " | ".join(cells) + " |")
side = lambda pre: max((p for n, p in gp.items() if n.startswith(pre)), key=cap)
c, d = side("colo-"), side("disagg-")
print(f"\nbest co-located: {c['policy']} {cap(c):.3f}; best disaggregated: {d['policy']} "
      f"{cap(d):.3f}; disaggregated / co-located {cap(d) / cap(c):.2f} (each the best of 15 "
      "candidates)\n")
what = {"off": "no prefix cache, round-robin", "rr": "prefix cache, round-robin",
        "affinity": "prefix cache, prefix-affinity routing",
        "affinity-pool": "the same with a 256 GiB CPU KV pool",
        "prefill-first": "ablation: affinity with prefill-first batching (no chunking)"}
ps = {p["policy"]: p for p in r["policies"]}
base = cap(ps["off"])
print(f"**Caching on the best co-located candidate** ({best.replace('+', ', ')}; capacity as above)\n")
print("| bundle | what | capacity | vs no cache | SLA miss at capacity | goodput tok/s |")
print("|---|---|---:|---:|---:|---:|")
for p in r["policies"]:
    ratio = f"{cap(p) / base:.2f}" if base else "-"
    print(f"| {p['policy']} | {what.get(p['policy'], '')} | {mark(p)}{cap(p):.3f} | {ratio} | "
          f"{100 * p['sla_miss']:.1f} % | {p['goodput_tok_per_s']:.0f} |")
print(f"\nprefix-cache: {elapsed} s; every run in {db}")
PY
