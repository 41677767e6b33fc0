#!/bin/bash
# Where does operator-level placement pay off? Capacity (`slicesim capacity`) of SliceScheduler
# against every tuned baseline, in regimes that each change one thing of slice-vs-container.ini
# (one 8-GPU A100 node; chat on 2 containers, code and assist on 3 each):
#   base        the scenario as shipped
#   balanced    no skew: chat at rate_scale 0.7, code at 4 req/s, assist at 3 req/s
#   skewed      more skew: chat at rate_scale 3, code at 1 req/s, assist at 0.5 req/s
#   big-chat    model mix: chat runs Llama-2-13B
#   moe-code    model mix: code runs Mixtral-8x7B on 2 containers of TP 2, assist on 2
#   bursty      burstiness: code and assist arrive in Gamma bursts with CV 4
#   tight-sla   SLA: TTFT 500 ms and TBT 100 ms for every tenant
#   loose-sla   SLA: TTFT 10 s and TBT 500 ms for every tenant
# MODE=today (the default): the scenario as shipped (vllm-0.15, chunked prefill at 2048 tokens,
# 600 s after 60 s of warm-up, predicted output lengths, the profiles' link efficiencies), every
# tenant within 9 % SLA misses (--criterion worst), seeds 1-5 with 95 % Student-t intervals,
# bisection to 2 %. Every bundle that is tuned gets the same search at every probed load: at most
# SEARCH (12) candidate replays, each judged by the same criterion (--search-replays):
#   static-best    the container policy on the allocation searched for it
#   llumnix-sized  Llumnix (dispatch and migration) on the allocation searched for it
#   realloc-tuned  re-allocation with headroom (every tenant may grow to 6), its period searched
#                  over 60|10|15|20|30|45|90|120|180|300|5|600 s
#   llumnix-tuned  Llumnix with auto-scaling and headroom (chat starts on 2 and may scale to 5,
#                  code on 2, assist on 1), its period searched over
#                  10|1|2|5|15|20|30|45|60|120|0.5 s
#   slice          SliceScheduler on the scenario's fixed allocation, its knobs at their defaults
#   slice-tuned    SliceScheduler with its tick period, what-ifs per tick, horizon and overrun
#                  searched (one pass from the defaults, 12 candidates at most)
# (The ranges reach past the ends an earlier run chose with 10 candidates: a 5 ms tick, a 4 ms
# overrun, 1 s auto-scaling, 10 s and 300 s re-allocation. WIDE=0 keeps those ranges, 10.)
#   slice-sized    SliceScheduler on the allocation searched for it
# Prints the tuning table, what each search chose most often (from the runs' stderr), then per
# regime each bundle's capacity [95 %] and SliceScheduler's
# (slice, slice-tuned, slice-sized) ratio to the best tuned baseline of the same seed (the
# highest of the first four) with its interval paired by seed and a verdict (higher, lower, or
# no difference when the interval holds 1). 4 to 46 minutes a regime on one core, about
# 3 hours for the eight.
# MODE=eager: the earlier tables (docs/slice-capacity.md, "On a 2023 eager engine") as they
# were made: the eager engine, chat on the trace file, the oracle what-if, copies at full
# bandwidth, the SLA pooled, bundles static-best, realloc-hr, llumnix-hr (slice-baselines.sh),
# slice and slice-sized untuned, one capacity run per seed (SEEDS="1 2 3", min-max shown;
# about 25 minutes for seed 1).
# REGIMES="base bursty" runs a subset. Every probe goes to results/slice-regimes.db
# (recreated; SLICE_REGIMES_DB names another). Extra arguments go to every capacity run.
# SLICE_REGIMES_OUT=DIR keeps each regime's `capacity --json` output there (REGIME.SEED.json),
# and REPORT_ONLY=1 prints the tables from the outputs in DIR without running anything: so
# regimes run in separate processes (each with its own database) report as one table.
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
DB=${SLICE_REGIMES_DB:-results/slice-regimes.db}
SC=experiments/slice-vs-container.ini
MODE=${MODE:-today}
case $MODE in
today)
    CRITERION=${CRITERION:---criterion worst}
    PREDICTOR=${PREDICTOR-}
    ENGINE=${ENGINE-} TRACE=${TRACE-} LINKS=${LINKS-} SLICE_LINK=${SLICE_LINK-}
    if [ "${WIDE:-1}" = 1 ]; then
        RT_PERIODS=${RT_PERIODS:-"60|10|15|20|30|45|90|120|180|300|5|600"}
        LT_PERIODS=${LT_PERIODS:-"10|1|2|5|15|20|30|45|60|120|0.5"}
        SEARCH=${SEARCH:-12}
    else
        SLICE_TUNED=${SLICE_TUNED:-"slice-tuned:policy.cluster=container+policy.ops=slice"`
            `"+policy.slice_period_ms=20|5|10|50+policy.slice_max_whatifs=4|16|8"`
            `"+policy.slice_horizon_ms=500|1000|250+policy.slice_overrun_ms=1|4|0.25"}
    fi
    SEARCH=${SEARCH:-10}
    PRECISION=${PRECISION:---seeds 5 --tol 0.02 --search-replays $SEARCH} ;;
eager)
    # The eager tables judge the SLA on all requests pooled (static-best's and slice-sized's
    # searches then minimise the pooled miss too), and SliceScheduler's what-ifs knew every
    # request's true output length (the oracle what-if); eager-2023.sh and links-peak.sh pin
    # the rest.
    CRITERION=${CRITERION:---criterion pooled}
    PREDICTOR=${PREDICTOR---set policy.slice_output_predictor=oracle}
    PRECISION=${PRECISION:-} ;;
*) echo "slice-regimes: MODE is today or eager, got '$MODE'" >&2; exit 2 ;;
esac
REGIMES=${REGIMES:-base balanced skewed big-chat moe-code bursty tight-sla loose-sla}
SEEDS=${SEEDS:-1}
[ "$MODE" = eager ] || SEEDS=all
if [ -n "${SLICE_REGIMES_OUT:-}" ]; then
    T=$SLICE_REGIMES_OUT
    mkdir -p "$T"
else
    [ -z "${REPORT_ONLY:-}" ] ||
        { echo "slice-regimes: REPORT_ONLY needs SLICE_REGIMES_OUT" >&2; exit 2; }
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
fi
if [ -z "${REPORT_ONLY:-}" ]; then
    mkdir -p "$(dirname "$DB")"
    rm -f "$DB"
fi

. experiments/slice-baselines.sh
. experiments/eager-2023.sh
. experiments/links-peak.sh
. experiments/regimes.sh

start=$(date +%s)
for r in $REGIMES; do
    [ -z "${REPORT_ONLY:-}" ] || break
    regime "$r"
    if [ "$MODE" = eager ]; then
        P="static-best,$REALLOC_HR,$(llumnix_hr "$LLX"),slice,slice-sized"
    else
        P="static-best,llumnix-sized,$REALLOC_TUNED,$(llumnix_tuned "$LLX")"
        P+=",slice,${SLICE_TUNED:-slice-tuned},slice-sized"
    fi
    for seed in $SEEDS; do
        if [ "$seed" = all ]; then seedset=() name="regimes:$r"; else
            seedset=(--set "run.seed=$seed") name="regimes:$r:seed$seed"; fi
        echo "slice-regimes: $r, seed $seed ($(( $(date +%s) - start )) s so far)" >&2
        # shellcheck disable=SC2086
        "$S" capacity -c "$SC" --policies "$P" ${seedset[@]+"${seedset[@]}"} $ENGINE $TRACE \
            $LINKS $SLICE_LINK --set run.duration_s=600 $CRITERION $PREDICTOR $PRECISION \
            --set run.warmup_s=60 ${sets[@]+"${sets[@]}"} --db "$DB" --name "$name" --json \
            --no-progress "$@" >"$T/$r.$seed.json" 2>"$T/$r.$seed.err" ||
            { cat "$T/$r.$seed.err" >&2; exit 1; }
    done
done
elapsed="$(( $(date +%s) - start )) s"
[ -z "${REPORT_ONLY:-}" ] || elapsed="reported from $T"

if [ "$MODE" = today ]; then
PYTHONPATH=experiments python3 - "$T" "$elapsed" "$DB" "$RT_PERIODS" "$LT_PERIODS" "${WIDE:-1}" \
    $REGIMES <<'PY'
import collections, glob, json, re, sys
from capacity_tables import cap, ci95, verdict
d, elapsed, db, rt, lt, wide, regimes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], \
    sys.argv[5], sys.argv[6], sys.argv[7:]
base = ["static-best", "llumnix-sized", "realloc-tuned", "llumnix-tuned"]
mine = ["slice", "slice-tuned", "slice-sized"]
rs = {r: json.load(open(f"{d}/{r}.all.json")) for r in regimes}
r0 = rs[regimes[0]]
knobs = {"static-best": "allocation of the 8 GPUs (whole containers, one of each tenant at least)",
         "llumnix-sized": "allocation of the 8 GPUs, judged with Llumnix",
         "realloc-tuned": f"realloc_period_s {rt.replace('|', ', ')}",
         "llumnix-tuned": f"scale_period_s {lt.replace('|', ', ')}",
         "slice": "none (the defaults: period 20 ms, 4 what-ifs, horizon 500 ms, overrun 1 ms)",
         "slice-tuned": ("slice_period_ms 20, 5, 10, 50, 2; slice_max_whatifs 4, 16, 8; "
                         "slice_horizon_ms 500, 1000, 250; slice_overrun_ms 1, 4, 0.25, 8")
                        if wide == "1" else
                        ("slice_period_ms 20, 5, 10, 50; slice_max_whatifs 4, 16, 8; "
                         "slice_horizon_ms 500, 1000, 250; slice_overrun_ms 1, 4, 0.25"),
         "slice-sized": "allocation of the 8 GPUs, judged with SliceScheduler"}
print(f"Tuning (every regime, every probed load; seeds {r0['seeds'][0]}-{r0['seeds'][-1]}): "
      "each tuned bundle searches at every probe, every candidate a replay judged by the same "
      "criterion (every tenant's SLA misses), capped at the same number of candidate replays.\n")
print("| bundle | searched | candidate replays per probe: mean (most) |")
print("|---|---|---|")
for p0 in r0["policies"]:
    name = p0["policy"]
    ns = [q.get("candidate_replays", 0) for x in rs.values() for p in x["policies"]
          if p["policy"] == name for run in p["runs"] for q in run["probes"]]
    cnt = f"{sum(ns) / len(ns):.1f} ({max(ns)})" if max(ns) else "0 (not searched)"
    print(f"| {name} | {knobs.get(name, '')} | {cnt} |")
# what each knob search chose, from the capacity runs' stderr (one line per probe)
chose = re.compile(r"^slicesim: knob search: policy=([^;]+);.*: chose (.*?), (?:worst|pooled|tenant)")
cols = [("slice-tuned", "slice_period_ms", "tick, ms"),
        ("slice-tuned", "slice_max_whatifs", "what-ifs per tick"),
        ("slice-tuned", "slice_horizon_ms", "horizon, ms"),
        ("slice-tuned", "slice_overrun_ms", "overrun, ms"),
        ("realloc-tuned", "realloc_period_s", "re-allocation, s"),
        ("llumnix-tuned", "scale_period_s", "auto-scaling, s")]
print("\nWhat each search chose: the two values it chose most often over the probes of every "
      "seed (how many probes), SliceScheduler's four knobs and the two periods.\n")
print("| regime | " + " | ".join(c[2] for c in cols) + " | slice-tuned's probes |")
print("|---|" + "---|" * len(cols) + "---:|")
for r in regimes:
    seen = {c: collections.Counter() for c in cols}
    n = 0
    for f in sorted(glob.glob(f"{d}/{r}.*.err")):
        for line in open(f):
            m = chose.match(line)
            if not m:
                continue
            n += m.group(1) == "slice-tuned"
            kv = dict(a.split("=", 1) for a in m.group(2).split())
            for c in cols:
                v = kv.get(f"policy.{c[1]}")
                if m.group(1) == c[0] and v is not None:
                    seen[c][v] += 1
    cells = [", ".join(f"{v} ({k})" for v, k in sorted(seen[c].items(),
                                                          key=lambda x: (-x[1], float(x[0])))[:2])
             for c in cols]
    print(f"| {r} | " + " | ".join(cells) + f" | {n} |")
print(f"\nCapacity at <= {100 * r0['sla_miss_bound']:.0f} % SLA misses for every tenant: the "
      "mean over the seeds [95 % Student-t interval]; ≥ n: at n seeds a lower bound (the load "
      "above passed but a tenant's arrivals ended early). SliceScheduler's ratios divide by "
      "the best of the four tuned baselines at the same seed, paired.\n")
iv = lambda m, lo, hi, f: f"{f % m} [{f % lo}, {f % hi}]"
print("| regime | " + " | ".join(base + mine) + " | slice ÷ best | slice-tuned ÷ best "
      "| slice-sized ÷ best |")
print("|---|" + "---:|" * (len(base) + len(mine)) + "---|---|---|")
for r in regimes:
    by = {p["policy"]: p for p in rs[r]["policies"]}
    cols = []
    for b in base + mine:
        p = by[b]
        n = sum(bool(x["censored"]) for x in p["runs"])
        cols.append(iv(p["capacity"], p["ci95_lo"], p["ci95_hi"], "%.2f") +
                    (f" ≥ {n}" if n else ""))
    best = [max(cap(by[b]["runs"][k]) for b in base) for k in range(len(r0["seeds"]))]
    ratios = []
    for m in mine:
        v = [cap(by[m]["runs"][k]) / best[k] if best[k] else float("nan")
             for k in range(len(best))]
        mean, lo, hi = ci95(v)
        ratios.append(f"{iv(mean, lo, hi, '%.2f')} {verdict(lo, hi)}")
    print(f"| {r} | " + " | ".join(cols) + " | " + " | ".join(ratios) + " |")
print(f"\nslice-regimes: {elapsed}; probes in {db}")
PY
exit 0
fi

PYTHONPATH=experiments python3 - "$T" "$elapsed" "$DB" "$SEEDS" $REGIMES <<'PY'
import json, sys
from capacity_tables import cap, censored, span
d, elapsed, db, seeds, regimes = sys.argv[1], sys.argv[2], sys.argv[3], \
    sys.argv[4].split(), sys.argv[5:]
base = ["static-best", "realloc-hr", "llumnix-hr"]
print(f"Capacity at <= 9 % SLA misses (all requests pooled), seeds {', '.join(seeds)} (min–max); "
      "≥: a lower bound (the load above it met the SLA, but a tenant's arrivals ended "
      "early). The ratios divide by the best tuned baseline of the same seed; ≥ 1.10 pays "
      "off.\n")
print("| regime | static-best | realloc-hr | llumnix-hr | slice | slice-sized "
      "| slice ÷ best baseline | slice-sized ÷ best baseline | pays off? |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
for r in regimes:
    runs = [json.load(open(f"{d}/{r}.{s}.json")) for s in seeds]
    by = [{p["policy"]: p for p in x["policies"]} for x in runs]
    bound = runs[0]["sla_miss_bound"]
    def col(name):
        ps = [b[name] for b in by]
        return ("≥ " if any(censored(p, bound) for p in ps) else "") + \
            span([cap(p) for p in ps], "%.3f")
    def ratio(name):
        rs = [cap(b[name]) / max(cap(b[k]) for k in base) if max(cap(b[k]) for k in base)
              else float("nan") for b in by]
        return rs, span(rs, "%.2f")
    rs, rt = ratio("slice")
    zs, zt = ratio("slice-sized")
    pays = []
    if min(rs) >= 1.10:
        pays.append("slice")
    if min(zs) >= 1.10:
        pays.append("slice-sized")
    print(f"| {r} | {col('static-best')} | {col('realloc-hr')} | {col('llumnix-hr')} | "
          f"{col('slice')} | {col('slice-sized')} | {rt} | {zt} | "
          f"{', '.join(pays) if pays else 'no'} |")
print(f"\nslice-regimes: {elapsed}; probes in {db}")
PY
