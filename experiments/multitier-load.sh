#!/bin/bash
# Multi-tier SLAs across load, on today's engine: multitier-llama2-7b.ini (Llama-2-7B on 4
# A100 replicas, K = 4 tiers from the enterprise mix, the scenario's per-tier SLAs) on
# vllm-0.15 with chunked prefill at a 1024-token budget, its traffic drawn from the generator
# of the shipped trace (traces/README.md: Poisson arrivals, the Azure conversation length
# quantiles) so that every seed draws a new sample, 600 s after 60 s of warm-up.
#  1. Saturation: the INFaaS baseline's capacity (slicesim capacity, seeds 1-5, bisection to
#     1 %) when the only bound is that at most 1 % of requests wait more than 5 s for their first
#     token: the highest load at which queues do not build.
#  2. A load sweep from 0.5x to 1.2x that saturation (slicesim compare, seeds 1-5) under the
#     INFaaS baseline, two-level Llumnix and K-tier Llumnix: per load and policy the SLA misses
#     and each tier's TTFT median and p99, each the mean over seeds with its two-sided 95 %
#     Student-t interval, and K-tier Llumnix's against INFaaS paired by seed.
# Runs go to results/multitier-load.db (recreated). Extra arguments go to every run. About 2
# minutes on a 2-core machine.
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
DB=${MULTITIER_LOAD_DB:-results/multitier-load.db}
SC=experiments/multitier-llama2-7b.ini
SEEDS=${SEEDS:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$(dirname "$DB")"
rm -f "$DB"
GEN="rate=5.5 duration=600 arrival=poisson"
GEN+=" prompt=quantiles:0=2,0.5=1020,0.9=1871.4,0.99=4142,1=5921"
GEN+=" output=quantiles:0=7,0.5=129,0.9=478.3,0.99=601,1=819"
COMMON=(--set tenant.chat.trace= --set "tenant.chat.synthetic=$GEN" --set tenant.chat.rate_scale=1
        --set run.duration_s=600 --set run.warmup_s=60)
start=$(date +%s)
echo "multitier-load: saturation (the INFaaS baseline, seeds 1-$SEEDS)" >&2
"$S" capacity -c "$SC" --policies infaas "${COMMON[@]}" --set tenant.chat.sla_ttft_ms=5000 \
    --set tenant.chat.sla_tbt_ms=0 --criterion pooled --sla-miss 0.01 --tol 0.01 \
    --seeds "$SEEDS" --db "$DB" --name multitier-load:saturation --json --no-progress "$@" \
    >"$T/sat.json" 2>"$T/sat.err" || { cat "$T/sat.err" >&2; exit 1; }
sat=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["policies"][0]["capacity"])' \
      "$T/sat.json")
rates=$(python3 -c 'import sys; s = float(sys.argv[1]); print(",".join("%.4g" % (f * s) for f in
        (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2)))' "$sat")
echo "multitier-load: saturation at load $sat; sweeping $rates" >&2
"$S" compare -c "$SC" --policies infaas,llumnix,llumnix-tiers "${COMMON[@]}" --rates "$rates" \
    --seeds "$SEEDS" --db "$DB" --name multitier-load --json --no-progress "$@" >"$T/sweep.json" \
    2>"$T/sweep.err" || { cat "$T/sweep.err" >&2; exit 1; }
elapsed=$(( $(date +%s) - start ))
python3 - "$T/sat.json" "$T/sweep.json" "$elapsed" "$DB" <<'PY'
import json, math, sys
sat, sweep = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
elapsed, db = sys.argv[3], sys.argv[4]
# t(0.975, df), df = 1..30 (as core/ss_stats.c)
T975 = [12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
        2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
        2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423]
def ci(x):
    n, m = len(x), sum(x) / len(x)
    if n < 2:
        return m, m, m
    h = T975[min(n - 1, 30) - 1] * math.sqrt(sum((v - m) ** 2 for v in x) / (n - 1) / n)
    return m, m - h, m + h
def fmt(x, scale=1, d=0):
    m, lo, hi = ci([scale * v for v in x])
    return f"{m:.{d}f} [{lo:.{d}f}, {hi:.{d}f}]"
p = sat["policies"][0]
print(f"**Saturation**: the INFaaS baseline keeps at most 1 % of requests waiting over 5 s for "
      f"their first token up to load {p['capacity']:.3f} [{p['ci95_lo']:.3f}, "
      f"{p['ci95_hi']:.3f}] (x the trace's 5.5 req/s; seeds {sat['seeds'][0]}-"
      f"{sat['seeds'][-1]}), i.e. {5.5 * p['capacity']:.1f} req/s\n")
runs = {}
for r in sweep["runs"]:
    runs.setdefault((r["rate"], r["policy"]), []).append(r["run"])
rates = sorted({k[0] for k in runs})
pols = ["infaas", "llumnix", "llumnix-tiers"]
n_tiers = len(next(iter(runs.values()))[0]["tiers"])
print("| load / saturation | policy | SLA miss % | " +
      " | ".join(f"tier {k} TTFT p50 / p99 ms" for k in range(n_tiers)) + " |")
print("|---:|---|---:|" + "---|" * n_tiers)
for rate in rates:
    for pol in pols:
        rs = runs[(rate, pol)]
        cells = []
        for k in range(n_tiers):
            t = [r["tiers"][k]["ttft_ms"] for r in rs]
            cells.append(f"{fmt([x['p50'] for x in t])} / {fmt([x['p99'] for x in t])}")
        print(f"| {rate / p['capacity']:.1f} | {pol} | "
              f"{fmt([r['sla_violation_rate'] for r in rs], 100, 1)} | " + " | ".join(cells) + " |")
print("\n**K-tier Llumnix against INFaaS**, paired by seed (ratios of INFaaS's figure to K-tier "
      "Llumnix's: above 1, K-tier is faster)\n")
print("| load / saturation | mean TTFT | tier 0 TTFT p99 | lowest tier TTFT p99 | E2E p99 | "
      "SLA miss, K-tier − INFaaS (points) |")
print("|---:|---|---|---|---|---|")
def ratio(a, b):
    m, lo, hi = ci([x / y for x, y in zip(a, b)])
    verdict = "faster" if lo > 1 else "slower" if hi < 1 else "no difference"
    return f"{m:.2f} [{lo:.2f}, {hi:.2f}] {verdict}"
for rate in rates:
    a, b = runs[(rate, "infaas")], runs[(rate, "llumnix-tiers")]
    g = lambda rs, f: [f(r) for r in rs]
    print(f"| {rate / p['capacity']:.1f} | "
          f"{ratio(g(a, lambda r: r['ttft_ms']['mean']), g(b, lambda r: r['ttft_ms']['mean']))} | "
          f"{ratio(g(a, lambda r: r['tiers'][0]['ttft_ms']['p99']), g(b, lambda r: r['tiers'][0]['ttft_ms']['p99']))} | "
          f"{ratio(g(a, lambda r: r['tiers'][-1]['ttft_ms']['p99']), g(b, lambda r: r['tiers'][-1]['ttft_ms']['p99']))} | "
          f"{ratio(g(a, lambda r: r['e2e_ms']['p99']), g(b, lambda r: r['e2e_ms']['p99']))} | "
          f"{fmt([100 * (y['sla_violation_rate'] - x['sla_violation_rate']) for x, y in zip(a, b)], 1, 1)} |")
print(f"\nmultitier-load: {elapsed} s; every run in {db}")
PY
