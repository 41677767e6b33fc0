#!/bin/bash
# SliceScheduler against tuned baselines at equal SLA: `slicesim capacity` (bisection on the
# load multiplier) of four bundles on slice-vs-container.ini (one 8-GPU A100 node; chat on 2
# containers, code and assist on 3 each):
#  - static-best: the container policy on the allocation that suits each probed load (a search);
#  - slice: SliceScheduler (--ops slice) on the scenario's fixed 2/3/3 allocation, every
#    charged cost at its default;
#  - realloc-hr: re-allocation every 60 s, with headroom: every tenant may grow to 6 containers
#    (max_replicas = 6), into GPUs another tenant gives up (the cluster's 8 are all allocated);
#  - llumnix-hr: Llumnix (its dispatch and migration) with auto-scaling every 10 s and headroom:
#    standby containers hold GPUs from the start, so chat starts on 2 and may scale to 5, code
#    runs on 2 and assist on 1 (2 + 3 standby + 2 + 1 = 8 GPUs).
# BASELINES=tuned runs realloc-tuned and llumnix-tuned instead: the same two with their period
# searched at every probe (60, 10, 15, 20, 30, 45, 90, 120, 180, 300 s for re-allocation; 10, 1,
# 2, 5, 15, 20, 30, 45, 60, 120 s for auto-scaling; slice-baselines.sh), every searching bundle
# (static-best too) capped at 10 candidate replays per probe (--search-replays 10).
# Cases: (a) the shipped scenario; (b) chat replaying the real Azure conversation trace and (c)
# the real Azure code trace, both from $SLICESIM_DATA (default ../shared/data), skipped with a
# message when absent. Then a sensitivity table on (a): SliceScheduler with each charged cost
# doubled in the unfavourable direction.
# MODE=today (the default): the scenario as shipped (vllm-0.15, chunked prefill at 2048 tokens,
# 600 s, predicted output lengths, the profiles' link efficiencies), every tenant within the SLA
# bound (--criterion worst), seeds 1-5 (capacity --seeds 5), bisection to 1 %: means with 95 %
# Student-t intervals, ratios to static-best paired by seed. About 12 minutes on a 2-core
# machine. MODE=eager: the report's earlier tables (docs/slice-capacity.md, "On a 2023 eager
# engine"): the eager engine, a 1200 s window, chat on the trace file, the oracle what-if,
# copies at full bandwidth, the SLA pooled, seeds 1-3 as min-max, --tol 0.02 (about 8 minutes).
# Prints markdown tables; every probe goes to results/slice-capacity.db (recreated). Extra
# arguments go to every capacity run. CASES="azure-code sensitivity" (MODE=today) runs a
# subset of the cases shipped, azure-conv, azure-code and sensitivity (default: all).
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
DB=${SLICE_CAPACITY_DB:-results/slice-capacity.db}
SC=experiments/slice-vs-container.ini
MODE=${MODE:-today}
case $MODE in
today)
    CRITERION=${CRITERION:---criterion worst}
    PREDICTOR=${PREDICTOR-}
    ENGINE=${ENGINE-} WINDOW=${WINDOW-} TRACE=${TRACE-} LINKS=${LINKS-} SLICE_LINK=${SLICE_LINK-}
    PRECISION=${PRECISION:---seeds 5 --tol 0.01}
    LINK_HALF=0.38 ;; # half the A100's NVLink efficiency, 0.76 (profiles/hardware)
eager)
    # The eager tables judge the SLA on all requests pooled (static-best's search then
    # minimises the pooled miss too), and SliceScheduler's what-ifs knew every request's true
    # output length (the oracle what-if); eager-2023.sh and links-peak.sh pin the rest.
    CRITERION=${CRITERION:---criterion pooled}
    PREDICTOR=${PREDICTOR---set policy.slice_output_predictor=oracle}
    PRECISION=${PRECISION:-}
    LINK_HALF=0.4 ;; # half slice_link_eff's default then, 0.8
*) echo "slice-capacity: MODE is today or eager, got '$MODE'" >&2; exit 2 ;;
esac
DATA=${SLICESIM_DATA:-../shared/data}
AZ=$DATA/traces/azure-llm-2023
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$(dirname "$DB")"
rm -f "$DB"

. experiments/slice-baselines.sh
. experiments/eager-2023.sh
. experiments/links-peak.sh
case ${BASELINES:-hr} in
hr) POLICIES="static-best,slice,$REALLOC_HR,$(llumnix_hr)" ;;
tuned) POLICIES="static-best,slice,$REALLOC_TUNED,$(llumnix_tuned)"
       PRECISION+=" --search-replays 10" ;;
*) echo "slice-capacity: BASELINES is hr or tuned, got '$BASELINES'" >&2; exit 2 ;;
esac

cases=(shipped)
if [ -f "$AZ/AzureLLMInferenceTrace_conv.csv" ] && [ -f "$AZ/AzureLLMInferenceTrace_code.csv" ]; then
    AZ=$(cd "$AZ" && pwd)
    cases+=(azure-conv azure-code)
    sets_azure_conv=(--set tenant.chat.synthetic= --set "tenant.chat.trace=$AZ/AzureLLMInferenceTrace_conv.csv")
    sets_azure_code=(--set tenant.chat.synthetic= --set "tenant.chat.trace=$AZ/AzureLLMInferenceTrace_code.csv")
else
    echo "slice-capacity: $AZ has no Azure LLM 2023 traces; skipping the Azure cases" \
         "(bash tools/get-data.sh fetches them, or set SLICESIM_DATA)" >&2
fi

SENSITIVITY=1
if [ -n "${CASES:-}" ] && [ "$MODE" = today ]; then
    keep=()
    for c in "${cases[@]}"; do
        case " $CASES " in *" $c "*) keep+=("$c") ;; esac
    done
    cases=(${keep[@]+"${keep[@]}"})
    case " $CASES " in *" sensitivity "*) ;; *) SENSITIVITY=0 ;; esac
fi

start=$(date +%s)
if [ "$MODE" = eager ]; then seeds="1 2 3"; else seeds=all; fi
for c in ${cases[@]+"${cases[@]}"}; do
    for seed in $seeds; do
        case $c in
        shipped) sets=() ;;
        azure-conv) sets=("${sets_azure_conv[@]}") ;;
        azure-code) sets=("${sets_azure_code[@]}") ;;
        esac
        if [ "$seed" = all ]; then seedset=() name="capacity:$c"; else
            seedset=(--set "run.seed=$seed") name="capacity:$c:seed$seed"; fi
        if [ "$seed" = all ]; then echo "slice-capacity: $c, every seed" >&2; else
            echo "slice-capacity: $c, seed $seed" >&2; fi
        # shellcheck disable=SC2086
        "$S" capacity -c "$SC" --policies "$POLICIES" ${seedset[@]+"${seedset[@]}"} $CRITERION \
            $ENGINE $WINDOW $TRACE $PREDICTOR $LINKS $SLICE_LINK $PRECISION \
            ${sets[@]+"${sets[@]}"} --db "$DB" --name "$name" --json \
            --no-progress "$@" >"$T/$c.$seed.json" 2>"$T/$c.$seed.err" ||
            { cat "$T/$c.$seed.err" >&2; exit 1; }
    done
done

SENS="slice"
SENS+=",host-2x:policy.cluster=container+policy.ops=slice+policy.slice_host_factor=2"
SENS+=",whatif-2x:policy.cluster=container+policy.ops=slice+policy.slice_whatif_ms=0.16"
SENS+=",link-half:policy.cluster=container+policy.ops=slice+policy.slice_link_eff=$LINK_HALF"
SENS+=",interf-2x:policy.cluster=container+policy.ops=slice+policy.slice_interference=1.4"
if [ "$MODE" = eager ]; then seedset=(--set run.seed=1) name=capacity:sensitivity:seed1; else
    seedset=() name=capacity:sensitivity; fi
if [ "$SENSITIVITY" = 1 ]; then
echo "slice-capacity: sensitivity (shipped)" >&2
# shellcheck disable=SC2086
"$S" capacity -c "$SC" --policies "$SENS" ${seedset[@]+"${seedset[@]}"} $CRITERION $ENGINE \
    $WINDOW $TRACE $PREDICTOR $LINKS $SLICE_LINK $PRECISION --db "$DB" --name "$name" --json \
    --no-progress "$@" >"$T/sens.json" 2>"$T/sens.err" || { cat "$T/sens.err" >&2; exit 1; }
fi
elapsed=$(( $(date +%s) - start ))

if [ "$MODE" = today ]; then
PYTHONPATH=experiments python3 - "$T" "$elapsed" "$DB" ${cases[@]+"${cases[@]}"} <<'PY'
import json, os, sys
d, elapsed, db, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
iv = lambda p, k, f: f"{f % p[k]} [{f % p[k + '_ci95_lo' if k != 'capacity' else 'ci95_lo']}, " \
                     f"{f % p[k + '_ci95_hi' if k != 'capacity' else 'ci95_hi']}]"
def cens(p, bound):  # seeds whose capacity is a lower bound (the trace ran out above it)
    return sum(bool(r["censored"]) for r in p["runs"])
for c in cases:
    r = json.load(open(f"{d}/{c}.all.json"))
    bound = r["sla_miss_bound"]
    print(f"**{c}** (seeds {r['seeds'][0]}-{r['seeds'][-1]}; every tenant within "
          f"{100 * bound:.0f} %; bisected to {100 * r['tol']:.0f} %)\n")
    print("| policy | capacity [95 %] | ratio to static-best [95 %], paired | verdict | SLA miss at capacity | probes |")
    print("|---|---|---|---|---:|---:|")
    for i, p in enumerate(r["policies"]):
        n = cens(p, bound)
        capt = iv(p, "capacity", "%.3f") + (f" (≥ at {n} seed{'s' * (n > 1)})" if n else "")
        rt = "1" if i == 0 else iv(p, "ratio", "%.3f")
        print(f"| {p['policy']} | {capt} | {rt} | {p['verdict']} | {100 * p['sla_miss']:.1f} % | "
              f"{p['n_probes']} |")
    print()
if not os.path.exists(f"{d}/sens.json"):
    print(f"slice-capacity: {elapsed} s; probes in {db}")
    sys.exit(0)
s = json.load(open(f"{d}/sens.json"))
what = {"slice": "defaults (host factor 1, 0.08 ms per what-if, the link's efficiency, "
                 "interference 1.2)",
        "host-2x": "slice_host_factor 2", "whatif-2x": "slice_whatif_ms 0.16",
        "link-half": "slice_link_eff 0.38 (half the A100 NVLink's 0.76)",
        "interf-2x": "slice_interference 1.4"}
print(f"**Sensitivity** (shipped case, seeds {s['seeds'][0]}-{s['seeds'][-1]}): SliceScheduler "
      "with one charged cost doubled\n")
print("| SliceScheduler | cost doubled | capacity [95 %] | vs defaults [95 %], paired | verdict |")
print("|---|---|---|---|---|")
for i, p in enumerate(s["policies"]):
    rt = "1" if i == 0 else iv(p, "ratio", "%.3f")
    print(f"| {p['policy']} | {what.get(p['policy'], '')} | {iv(p, 'capacity', '%.3f')} | {rt} | "
          f"{p['verdict']} |")
print(f"\nslice-capacity: {elapsed} s; probes in {db}")
PY
exit 0
fi
PYTHONPATH=experiments python3 - "$T" "$elapsed" "$DB" "${cases[@]}" <<'PY'
import json, sys
from capacity_tables import cap, censored, span
d, elapsed, db, cases = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]

print("Capacity: the highest load multiplier at <= 9 % SLA misses (all requests pooled), "
      "min–max over seeds 1–3; ≥ marks a capacity that is a lower bound: the load above it passed its SLA "
      "but failed because chat's arrivals stop before the window's end (its trace ran out, or "
      "capacity took a lull of a bursty trace for its end); the ratio to static-best is then an "
      "upper bound (≤), or unknown (?) when both are.\n")
for c in cases:
    runs = [json.load(open(f"{d}/{c}.{s}.json")) for s in (1, 2, 3)]
    bound = runs[0]["sla_miss_bound"]
    print(f"**{c}**\n")
    print("| policy | capacity | ratio to static-best | SLA miss at capacity | probes |")
    print("|---|---:|---:|---:|---:|")
    for i, p0 in enumerate(runs[0]["policies"]):
        ps = [r["policies"][i] for r in runs]
        sbs = [r["policies"][0] for r in runs]
        cens = [censored(p, bound) for p in ps]
        sbc = [censored(p, bound) for p in sbs]
        capt = ("≥ " if any(cens) else "") + span([cap(p) for p in ps], "%.3f")
        ratios = [cap(p) / cap(sb) if cap(sb) else float("nan") for p, sb in zip(ps, sbs)]
        if i == 0:
            rt = "1.00"
        else:
            mark = ""
            if any(a and b for a, b in zip(cens, sbc)):
                mark = "? "
            elif any(sbc):
                mark = "≤ "
            elif any(cens):
                mark = "≥ "
            rt = mark + span(ratios, "%.2f")
        miss = span([100 * p["sla_miss"] for p in ps], "%.1f") + " %"
        print(f"| {p0['policy']} | {capt} | {rt} | {miss} | "
              f"{span([p['n_probes'] for p in ps], '%d')} |")
    print()

s = json.load(open(f"{d}/sens.json"))
bound = s["sla_miss_bound"]
base = cap(s["policies"][0])
what = {"slice": "defaults (host factor 1, 0.08 ms per what-if, link efficiency 0.8, "
                 "interference 1.2)",
        "host-2x": "slice_host_factor 2", "whatif-2x": "slice_whatif_ms 0.16",
        "link-half": "slice_link_eff 0.4", "interf-2x": "slice_interference 1.4"}
print("**Sensitivity** (shipped case, seed 1): SliceScheduler with one charged cost doubled\n")
print("| SliceScheduler | cost doubled | capacity | vs defaults | SLA miss at capacity |")
print("|---|---|---:|---:|---:|")
for p in s["policies"]:
    c = cap(p)
    print(f"| {p['policy']} | {what.get(p['policy'], '')} | "
          f"{'≥ ' if censored(p, bound) else ''}{c:.3f} | "
          f"{c / base if base else float('nan'):.2f} | {100 * p['sla_miss']:.1f} % |")
print(f"\nslice-capacity: {elapsed} s; probes in {db}")
PY
