#!/bin/bash
# skewed-three-tenants.ini on the same 8 GPUs under five policies:
#  - container-level, fixed ownership (hot 2, warm 3, cold 3 containers);
#  - container-level with re-allocation every 60 s (a container changes hands after draining,
#    a 5 s teardown and loading its weights at 3 GB/s);
#  - Llumnix on the fixed ownership: freest-container dispatch and live migration within each
#    tenant, no scaling;
#  - Llumnix with auto-scaling: warm and cold start on 1 container each and hot may scale from
#    2 into the other 4 GPUs (its standby containers) every 10 s;
#  - container-level, fixed ownership, with SliceScheduler: hot's queued prefills run in the
#    idle GPU time of warm's and cold's containers.
# Prints per-tenant results; runs go to results/skewed.db.
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
SC=experiments/skewed-three-tenants.ini
# SliceScheduler predicts output lengths in its what-ifs (the default, mean);
# PREDICTOR="--set policy.slice_output_predictor=oracle" gives it the true ones (an oracle).
PREDICTOR=${PREDICTOR-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
policies=("container" "container + re-allocation" "llumnix" "llumnix + auto-scaling"
          "container + SliceScheduler")
args=("--set policy.cluster=container"
      "--set policy.cluster=container --set policy.realloc_period_s=60"
      "--set policy.cluster=llumnix --set tenant.hot.max_replicas=2"
      "--set policy.cluster=llumnix --set policy.scale_period_s=10 --set tenant.warm.replicas=1 --set tenant.cold.replicas=1"
      "--set policy.cluster=container --ops slice $PREDICTOR")
printf "| policy | tenant | requests | SLA violations | goodput tok/s | TTFT p50 ms | TTFT p99 ms | E2E p99 ms | re-allocations | migrations | scale-ups |\n"
printf "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
for i in 0 1 2 3 4; do
    # shellcheck disable=SC2086
    "$S" replay -c "$SC" --db results/skewed.db --json ${args[$i]} "$@" \
        >"$T/r$i" 2>/dev/null
    python3 - "$T/r$i" "${policies[$i]}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for t in d["tenants"] + [dict(d, name="all")]:
    print("| %s | %s | %d | %.1f %% | %.0f | %.0f | %.0f | %.0f | %d | %d | %d |" % (
        sys.argv[2], t["name"], t.get("completed", 0) + t.get("rejected", 0),
        100 * t["sla_violation_rate"], t["window_goodput_tokens_per_s"], t["ttft_ms"]["p50"],
        t["ttft_ms"]["p99"], t["e2e_ms"]["p99"], d["reallocations"], d["migrations"],
        d.get("scale_ups", 0)))
PY
done
