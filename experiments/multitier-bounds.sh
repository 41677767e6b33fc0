# Sourced by the multi-tier scripts: the per-tier SLA bounds of multitier-llama2-7b.ini (TTFT
# 500, 1000, 2000, 4000 ms and TBT p99 100, 150, 200, 300 ms for its K = 4) stretched to K tiers
# geometrically between the strictest and the loosest bound: tier k of K gets 500 x 8^(k/(K-1))
# ms and 100 x 3^(k/(K-1)) ms (K = 4 gives the scenario's bounds to within rounding).
bounds() { # bounds K LO RATIO: K values LO x RATIO^(k/(K-1)), comma-separated, whole ms
    awk -v K="$1" -v lo="$2" -v r="$3" 'BEGIN {
        for (k = 0; k < K; k++) {
            v = K > 1 ? lo * r ^ (k / (K - 1)) : lo
            printf "%s%d", k ? "," : "", v + 0.5
        }
    }'
}
ttft_bounds() { bounds "$1" 500 8; }
tbt_bounds() { bounds "$1" 100 3; }
