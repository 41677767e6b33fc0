#!/bin/bash
# Does operator-level placement add anything once GPUs can be shared, and where? Capacity
# (`slicesim capacity`) per tenant (every tenant within 9 % SLA misses, --criterion worst),
# seeds 1-5 with 95 % Student-t intervals, bisection to 2 %, in the eight regimes of
# slice-vs-container.ini (experiments/regimes.sh; base is the scenario as shipped, the main
# job's), of the bundles a multi-tenant operator tries first and SliceScheduler beside them,
# each tuned bundle searched the same way at every probed load (at most SEARCH (12) candidate
# replays, judged by the same criterion):
#   static-best  whole-GPU containers, the allocation of the 8 GPUs searched for the load
#   mig-best     MIG instances, their layout on the 8 GPUs searched the same way
#   mps-best     MPS clients, likewise
#   muxserve     the models multiplexed on GPUs with a shared KV pool, likewise
#   slice-sized  SliceScheduler on whole-GPU containers sized for it
#   slice-mig    SliceScheduler on the MIG layout searched for it
# (docs/guide/gpu-sharing.md says what each sharing costs in the model.) Prints per regime each
# bundle's capacity [95 %], the best sharing baseline's ratio to static-best and SliceScheduler's
# (slice-sized, slice-mig) ratio to the best of the four baselines at the same seed, paired, with
# a verdict (higher, lower, or no difference when the interval holds 1).
# REGIMES="base balanced" runs a subset; SHARING_DB names the database (default
# results/sharing.db, recreated); SHARING_OUT=DIR keeps each regime's `capacity --json` (and
# REPORT_ONLY=1 prints the tables from DIR without running: regimes run in separate processes
# report as one table). Extra arguments go to every capacity run. Several hours on one core
# for the eight regimes (the searches replay up to 12 candidates at every probe).
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
DB=${SHARING_DB:-results/sharing.db}
SC=experiments/slice-vs-container.ini
REGIMES=${REGIMES:-base balanced skewed big-chat moe-code bursty tight-sla loose-sla}
SEARCH=${SEARCH:-12}
if [ -n "${SHARING_OUT:-}" ]; then
    T=$SHARING_OUT
    mkdir -p "$T"
else
    [ -z "${REPORT_ONLY:-}" ] || { echo "sharing: REPORT_ONLY needs SHARING_OUT" >&2; exit 2; }
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
fi
if [ -z "${REPORT_ONLY:-}" ]; then
    mkdir -p "$(dirname "$DB")"
    rm -f "$DB"
fi
. experiments/slice-baselines.sh
. experiments/regimes.sh
P=static-best,mig-best,mps-best,muxserve,slice-sized,slice-mig
start=$(date +%s)
for r in $REGIMES; do
    [ -z "${REPORT_ONLY:-}" ] || break
    regime "$r"
    echo "sharing: $r ($(( $(date +%s) - start )) s so far)" >&2
    "$S" capacity -c "$SC" --policies "$P" --set run.duration_s=600 --set run.warmup_s=60 \
        --criterion worst --seeds 5 --tol 0.02 --search-replays "$SEARCH" \
        ${sets[@]+"${sets[@]}"} --db "$DB" --name "sharing:$r" --json --no-progress "$@" \
        >"$T/$r.json" 2>"$T/$r.err" || { cat "$T/$r.err" >&2; exit 1; }
done
elapsed="$(( $(date +%s) - start )) s"
[ -z "${REPORT_ONLY:-}" ] || elapsed="reported from $T"
PYTHONPATH=experiments python3 - "$T" "$elapsed" "$DB" $REGIMES <<'PY'
import json, re, sys
from capacity_tables import cap, ci95, verdict
d, elapsed, db, regimes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
base = ["static-best", "mig-best", "mps-best", "muxserve"]
mine = ["slice-sized", "slice-mig"]
rs = {r: json.load(open(f"{d}/{r}.json")) for r in regimes}
r0 = rs[regimes[0]]
iv = lambda m, lo, hi, f: f"{f % m} [{f % lo}, {f % hi}]"
print(f"Capacity at <= {100 * r0['sla_miss_bound']:.0f} % SLA misses for every tenant, seeds "
      f"{r0['seeds'][0]}-{r0['seeds'][-1]}: the mean [95 % Student-t interval]. The ratios are "
      "paired by seed: the best sharing baseline (mig-best, mps-best, muxserve) over "
      "static-best, and SliceScheduler over the best of the four baselines.\n")
print("| regime | " + " | ".join(base + mine) + " | best sharing ÷ static-best "
      "| slice-sized ÷ best | slice-mig ÷ best |")
print("|---|" + "---:|" * (len(base) + len(mine)) + "---|---|---|")
for r in regimes:
    by = {p["policy"]: p for p in rs[r]["policies"]}
    n = len(r0["seeds"])
    cols = [iv(by[b]["capacity"], by[b]["ci95_lo"], by[b]["ci95_hi"], "%.2f") +
            (" ≥" if any(x["censored"] for x in by[b]["runs"]) else "") for b in base + mine]
    def paired(num, den):
        v = [num(k) / den(k) if den(k) else float("nan") for k in range(n)]
        m, lo, hi = ci95(v)
        return f"{iv(m, lo, hi, '%.2f')} {verdict(lo, hi)}"
    share = lambda k: max(cap(by[b]["runs"][k]) for b in base[1:])
    best = lambda k: max(cap(by[b]["runs"][k]) for b in base)
    ratios = [paired(share, lambda k: cap(by["static-best"]["runs"][k]))]
    ratios += [paired(lambda k, m=m: cap(by[m]["runs"][k]), best) for m in mine]
    print(f"| {r} | " + " | ".join(cols) + " | " + " | ".join(ratios) + " |")
chose = re.compile(r"^slicesim: (mig-best|mps-best|muxserve): policy=[^:]*: chose (.*) containers")
print("\nWhat the sharing searches chose at the last probe of each seed's capacity search:\n")
for r in regimes:
    last = {}
    for line in open(f"{d}/{r}.err"):
        m = chose.match(line)
        if m:
            last[m.group(1)] = m.group(2)
    for b in base[1:]:
        if b in last:
            print(f"- {r}, {b}: {last[b]}")
print(f"\nsharing: {elapsed}; probes in {db}")
PY
