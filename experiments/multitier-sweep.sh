#!/bin/bash
# Multi-tier sweep on multitier-llama2-7b.ini: K = 1..10 tiers x three tier mixes (uniform,
# gaussian, enterprise) x three policies: the INFaaS baseline (container-level ownership,
# INFaaS++ dispatch), two-level Llumnix and K-tier Llumnix. Every run goes to
# results/multitier.db; the script prints, per (mix, K), the baseline's and K-tier Llumnix's
# mean TTFT and E2E p99, the speed-ups, and tier 0's and the lowest tier's p99 TTFT under
# K-tier Llumnix. Every run keeps the scenario's own per-tier SLAs, stretched to K tiers as in
# multitier-bounds.sh, and the table shows both policies' SLA misses. Extra arguments go to
# every replay (e.g. --set tenant.chat.rate_scale=3).
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
DB=results/multitier.db
SC=experiments/multitier-llama2-7b.ini
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. experiments/multitier-bounds.sh
. experiments/links-peak.sh
# The tables of docs/multi-tenant.md were made on the eager 2023 engine with prefill-first
# batching, as multitier-llama2-7b.ini then set them; EAGER pins that so they reproduce
# (EAGER="" runs today's engine with chunked prefill; multitier-load.sh sweeps the load on it).
EAGER=${EAGER-"--set tenant.chat.engine=vllm-eager --set policy.batching=vllm"}
run() { # run OUT MIX K CLUSTER ROUTING [args]
    local out=$1 mix=$2 k=$3 cluster=$4 routing=$5
    shift 5
    # shellcheck disable=SC2086 # LINKS holds several words
    "$S" replay -c "$SC" --db "$DB" --json --set tenant.chat.tiers="$k" \
        --set tenant.chat.tier_mix="$mix" --set tenant.chat.sla_ttft_ms="$(ttft_bounds "$k")" \
        --set tenant.chat.sla_tbt_ms="$(tbt_bounds "$k")" --set policy.cluster="$cluster" \
        --set policy.routing="$routing" $LINKS $EAGER "$@" >"$out"
}
# field FILE KEY SUBKEY: e.g. field f ttft_ms mean (the top-level object comes first)
field() { grep -o "\"$2\": {[^}]*}" "$1" | head -1 | grep -o "\"$3\": [0-9.]*" | cut -d' ' -f2; }
# tier FILE K SUBKEY: p99 TTFT of tier K
tier() { grep -o "{\"tier\": $2, [^]]*" "$1" | grep -o '"ttft_ms": {[^}]*}' | head -1 |
    grep -o "\"$3\": [0-9.]*" | cut -d' ' -f2; }
# miss FILE: the run's share of requests missing their tier's SLA, in %
miss() { grep -o '"sla_violation_rate": [0-9.]*' "$1" | head -1 |
    awk '{ printf "%.1f %%", 100 * $2 }'; }
printf "| mix | K | INFaaS TTFT mean ms | Llumnix (2 levels) TTFT mean ms | K-tier TTFT mean ms | TTFT speed-up vs INFaaS | INFaaS E2E p99 ms | K-tier E2E p99 ms | E2E p99 speed-up | K-tier tier-0 TTFT p99 ms | K-tier lowest-tier TTFT p99 ms | INFaaS SLA miss | K-tier SLA miss |\n"
printf "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
for mix in uniform gaussian enterprise; do
    for k in 1 2 3 4 5 6 7 8 9 10; do
        run "$T/base" "$mix" "$k" container infaas "$@"
        run "$T/llx" "$mix" "$k" llumnix llumnix "$@"
        run "$T/tier" "$mix" "$k" llumnix-tiers llumnix "$@"
        b=$(field "$T/base" ttft_ms mean) l=$(field "$T/llx" ttft_ms mean)
        t=$(field "$T/tier" ttft_ms mean)
        be=$(field "$T/base" e2e_ms p99) te=$(field "$T/tier" e2e_ms p99)
        printf "| %s | %d | %.0f | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %.0f | %.0f | %s | %s |\n" \
            "$mix" "$k" "$b" "$l" "$t" "$(awk -v a="$b" -v b="$t" 'BEGIN { print a / b }')" \
            "$be" "$te" "$(awk -v a="$be" -v b="$te" 'BEGIN { print a / b }')" \
            "$(tier "$T/tier" 0 p99)" "$(tier "$T/tier" $((k - 1)) p99)" "$(miss "$T/base")" \
            "$(miss "$T/tier")"
    done
done
