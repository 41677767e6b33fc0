#!/bin/bash
# slice-vs-container.ini under the container-level policy and under SliceScheduler (weights
# staged on helpers when their free KV blocks allow, the default, and always streamed) and under
# the greedy placement (the same moves to the first idle container, no what-if), same trace and
# seed. Prints per-tenant results, the throughput and goodput (over the arrival window) and
# their ratios against the
# container policy, what SliceScheduler did, and its cost in wall time per simulated hour.
# Runs go to results/slice.db. Extra arguments go to every replay
# (e.g. --set tenant.chat.rate_scale=1.6).
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
DB=results/slice.db
SC=experiments/slice-vs-container.ini
. experiments/eager-2023.sh
. experiments/links-peak.sh
# shellcheck disable=SC2206
PIN=($ENGINE $WINDOW $TRACE $LINKS $SLICE_LINK)
# The shipped rows in docs/guide/slicescheduler.md were made when SliceScheduler's what-ifs knew
# every request's true output length: with the oracle what-if, which PREDICTOR pins so that they
# reproduce (the docs label them so). PREDICTOR="" runs the default instead, the mean predictor
# that a deployed scheduler could have (docs/guide/slicescheduler.md, "What a what-if knows").
PREDICTOR=${PREDICTOR---set policy.slice_output_predictor=oracle}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$S" replay -c "$SC" ${PIN[@]+"${PIN[@]}"} --db "$DB" --json "$@" >"$T/home.json"
# shellcheck disable=SC2086
"$S" replay -c "$SC" ${PIN[@]+"${PIN[@]}"} --db "$DB" --json --ops slice $PREDICTOR "$@" >"$T/slice.json"
# shellcheck disable=SC2086
"$S" replay -c "$SC" ${PIN[@]+"${PIN[@]}"} --db "$DB" --json --ops slice --param slice_weights=stream $PREDICTOR "$@" \
    >"$T/stream.json"
"$S" replay -c "$SC" ${PIN[@]+"${PIN[@]}"} --db "$DB" --json --ops greedy "$@" >"$T/greedy.json"
python3 - "$T" <<'PY'
import json, sys
d = sys.argv[1]
runs = [("container", "home"), ("SliceScheduler", "slice"),
        ("SliceScheduler, streamed weights", "stream"), ("greedy, no what-if", "greedy")]
res = {k: json.load(open(f"{d}/{k}.json")) for _, k in runs}
print("| policy | tenant | requests | SLA violations | output tok/s | goodput tok/s | TTFT p50 ms "
      "| TTFT p99 ms | TBT p99 ms | E2E p99 ms |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for name, k in runs:
    r = res[k]
    rows = [(t["name"], t) for t in r["tenants"]] + [("all", r)]
    for tname, t in rows:
        print(f"| {name} | {tname} | {t.get('measured_requests', t['requests'])} | "
              f"{100 * t['sla_violation_rate']:.1f} % | {t['window_output_tokens_per_s']:.0f} | "
              f"{t['window_goodput_tokens_per_s']:.0f} | {t['ttft_ms']['p50']:.0f} | "
              f"{t['ttft_ms']['p99']:.0f} | {t['tbt_ms']['p99']:.1f} | {t['e2e_ms']['p99']:.0f} |")
h = res["home"]
print()
print("| policy | output tokens/s vs container | goodput vs container | offloads | operators "
      "offloaded | GiB moved | idle slices used | what-ifs | decisions/s | first-token "
      "prediction error ms | moved compute in idle stretches < 10 ms / 10-100 ms / 0.1-1 s / > 1 s "
      "| wall s per simulated hour |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
for name, k in runs:
    r = res[k]
    sl = r.get("slice", {})
    per_hour = r["wall_s"] / r["sim_s"] * 3600
    st = sl.get("moved_gpu_s_by_idle_stretch", {})
    moved = sum(st.values())
    split = " / ".join(f"{100 * st[k] / moved:.0f} %" for k in ("lt_10ms", "10_100ms", "100ms_1s",
                                                              "gt_1s")) if moved else "-"
    print(f"| {name} | {r['window_output_tokens_per_s'] / h['window_output_tokens_per_s']:.2f} | "
          f"{r['window_goodput_tokens_per_s'] / h['window_goodput_tokens_per_s']:.2f} | "
          f"{sl.get('offloads', 0)} | {sl.get('offloaded_ops', 0)} | "
          f"{sl.get('offload_gib', 0):.0f} | {sl.get('slices_used', 0)} | {sl.get('whatifs', 0)} | "
          f"{sl.get('decisions_per_s', 0):.0f} | {sl.get('prediction_error_ms', 0):.1f} | "
          f"{split} | {per_hour:.2f} |")
PY
