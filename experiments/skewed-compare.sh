#!/bin/bash
# skewed-three-tenants.ini on the same 8 GPUs under five policies, seeds 1-5 (compare --seeds 5,
# the mean over the seeds with its 95 % Student-t interval):
#  - container: container-level, fixed ownership (hot 2, warm 3, cold 3 containers);
#  - realloc: container-level with re-allocation every 60 s (a container changes hands after
#    draining, a 5 s teardown and loading its weights at 3 GB/s; hot may grow to 6);
#  - llumnix: Llumnix on the fixed ownership: freest-container dispatch and live migration within
#    each tenant, no scaling;
#  - llumnix-scale: Llumnix with auto-scaling: warm and cold start on 1 container each and hot may
#    scale from 2 into the other 4 GPUs (its standby containers) every 10 s;
#  - slice: container-level, fixed ownership, with SliceScheduler: hot's queued prefills run in
#    the idle GPU time of warm's and cold's containers.
# Prints per-tenant results (about 15 s); runs go to results/skewed.db. SEEDS=N sets the number
# of seeds; extra arguments go to the compare run.
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
SC=experiments/skewed-three-tenants.ini
SEEDS=${SEEDS:-5}
# SliceScheduler predicts output lengths in its what-ifs (the default, mean);
# PREDICTOR="+policy.slice_output_predictor=oracle" gives it the true ones (an oracle).
PREDICTOR=${PREDICTOR-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P="container,realloc"
P+=",llumnix:policy.cluster=llumnix+tenant.hot.max_replicas=2"
P+=",llumnix-scale:policy.cluster=llumnix+policy.scale_period_s=10+tenant.warm.replicas=1"
P+="+tenant.cold.replicas=1"
P+=",slice:policy.cluster=container+policy.ops=slice$PREDICTOR"
mkdir -p results
"$S" compare -c "$SC" --policies "$P" --seeds "$SEEDS" --db results/skewed.db --name skewed \
    --json --no-progress "$@" >"$T/c.json" 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
PYTHONPATH=experiments python3 - "$T/c.json" <<'PY'
import json, sys
from capacity_tables import ci95
d = json.load(open(sys.argv[1]))
if isinstance(d, list):  # one seed: compare's plain array
    d = {"seeds": [d[0]["run"]["seed"]], "runs": d}
names = {"container": "container", "realloc": "container + re-allocation", "llumnix": "llumnix",
         "llumnix-scale": "llumnix + auto-scaling", "slice": "container + SliceScheduler"}
seeds = d["seeds"]
print(f"Seeds {seeds[0]}-{seeds[-1]}: the mean over the seeds [95 % Student-t interval]; "
      "requests, latencies and mechanism counts are means.\n")
print("| policy | tenant | requests | SLA violations [95 %] | goodput tok/s [95 %] | TTFT p50 ms "
      "| TTFT p99 ms | E2E p99 ms | re-allocations | migrations | scale-ups |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
order = []
for r in d["runs"]:
    if r["policy"] not in order:
        order.append(r["policy"])
mean = lambda v: sum(v) / len(v)
for pol in order:
    runs = [r["run"] for r in d["runs"] if r["policy"] == pol]
    for i, tname in enumerate([t["name"] for t in runs[0]["tenants"]] + ["all"]):
        ts = [x["tenants"][i] if tname != "all" else x for x in runs]
        miss = ci95([100 * t["sla_violation_rate"] for t in ts])
        good = ci95([t["window_goodput_tokens_per_s"] for t in ts])
        req = mean([t.get("completed", 0) + t.get("rejected", 0) for t in ts])
        print(f"| {names.get(pol, pol)} | {tname} | {req:.0f} | {miss[0]:.1f} % [{miss[1]:.1f}, "
              f"{miss[2]:.1f}] | {good[0]:.0f} [{good[1]:.0f}, {good[2]:.0f}] | "
              f"{mean([t['ttft_ms']['p50'] for t in ts]):.0f} | "
              f"{mean([t['ttft_ms']['p99'] for t in ts]):.0f} | "
              f"{mean([t['e2e_ms']['p99'] for t in ts]):.0f} | "
              f"{mean([x['reallocations'] for x in runs]):.1f} | "
              f"{mean([x['migrations'] for x in runs]):.1f} | "
              f"{mean([x.get('scale_ups', 0) for x in runs]):.1f} |")
PY
PYTHONPATH=experiments python3 - "$T/c.json" <<'PY'
import json, sys
from capacity_tables import ci95
d = json.load(open(sys.argv[1]))
if isinstance(d, list):
    d = {"runs": d}
by = {}
for r in d["runs"]:
    by.setdefault(r["policy"], []).append(r["run"])
base = by["container"]
print("\nEach policy's SLA violations minus the container policy's at the same seed (all "
      "requests; hot's), paired [95 % interval]:\n")
print("| policy | all: difference, points | hot: difference, points | verdict (all) |")
print("|---|---:|---:|---|")
for pol, runs in by.items():
    if pol == "container":
        continue
    da = ci95([100 * (x["sla_violation_rate"] - b["sla_violation_rate"])
               for x, b in zip(runs, base)])
    dh = ci95([100 * (x["tenants"][0]["sla_violation_rate"] - b["tenants"][0]["sla_violation_rate"])
               for x, b in zip(runs, base)])
    v = "fewer" if da[2] < 0 else "more" if da[1] > 0 else "no difference"
    print(f"| {pol} | {da[0]:+.1f} [{da[1]:+.1f}, {da[2]:+.1f}] | {dh[0]:+.1f} [{dh[1]:+.1f}, "
          f"{dh[2]:+.1f}] | {v} |")
PY
