#!/bin/bash
# The main job on a fresh machine: install what is missing, build slicesim (release), then
# compare the container-level policy, Llumnix and SliceScheduler on the default multi-tenant
# scenario (experiments/slice-vs-container.ini: three models on one 8 x A100-80G node, skewed
# load, the shipped Azure-conversation-like trace, today's engine vllm-0.15 with chunked
# prefill at its 2048-token budget) at five loads, then each one's capacity at <= 9 % SLA
# misses of every tenant against static-best (the container policy sized to the load), each
# over seeds 1-5 with 95 % Student-t intervals and the ratios paired by seed; slice-oracle is
# SliceScheduler with what-ifs that know every request's true output length (an oracle; slice
# predicts them, the default). Prints both
# tables (each tenant's miss at the capacity too), stores every run in results/main.db (the
# capacity probes with their summaries, not their per-request rows: --store summary) and
# draws the figures into plots/out/ (PNG, SVG). Extra arguments go to `slicesim compare`
# (e.g. --rates 1 for one load, --seeds 1 for one seed).
set -eu
cd "$(dirname "$0")/.."
echo "slicesim: checking the build dependencies (apt installs what is missing)"
bash tools/deps.sh
bash tools/build-release.sh
S=./build-release/src/slicesim
if [ -e results/main.db ]; then
    echo "slicesim: replacing results/main.db, the last main job's (copy it elsewhere to keep it)"
    rm -f results/main.db results/main.db-wal results/main.db-shm
fi
echo "slicesim: running the comparison: 3 policies x 5 loads x 5 seeds (about 6 s)"
"$S" compare -c experiments/slice-vs-container.ini --policies container,llumnix,slice \
    --rates 0.5,0.625,0.75,0.875,1 --seeds 5 --db results/main.db --name main "$@"
echo "slicesim: capacity at <= 9 % SLA misses of every tenant against the tuned baseline," \
     "static-best, seeds 1-5, bisection to 1 %: 20 searches (about 20 s on 2 cores)"
"$S" capacity -c experiments/slice-vs-container.ini \
    --policies static-best,container,slice,slice-oracle:policy.ops=slice+policy.slice_output_predictor=oracle \
    --seeds 5 --tol 0.01 --db results/main.db --name main-capacity --progress searches \
    --store summary
if command -v gnuplot >/dev/null; then
    echo "slicesim: drawing the figures into plots/out/"
    "$S" plot results/main.db --sweep main -o plots/out
    "$S" plot results/main.db --sweep main-capacity --kind capacity -o plots/out
else
    echo "gnuplot is not installed: no figures (slicesim plot results/main.db draws them)"
fi
