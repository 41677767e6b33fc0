#!/bin/bash
# The main job on a fresh machine: install what is missing, build slicesim (release), then
# compare the container-level policy, Llumnix and SliceScheduler on the default multi-tenant
# scenario (experiments/slice-vs-container.ini: three models on one 8 x A100-80G node, skewed
# load, the shipped Azure-conversation-like trace) at three loads, then each one's capacity at
# <= 9 % SLA misses against static-best (the container policy sized to the load). Prints both
# tables, stores every run in results/main.db and draws the figures into plots/out/ (PNG, SVG).
# Extra arguments go to `slicesim compare` (e.g. --rates 1 for one load).
set -eu
cd "$(dirname "$0")/.."
echo "slicesim: checking the build dependencies (apt installs what is missing)"
bash tools/deps.sh
bash tools/build-release.sh
S=./build-release/src/slicesim
rm -f results/main.db results/main.db-wal results/main.db-shm
echo "slicesim: running the comparison: 3 policies x 3 loads (about 15 s)"
"$S" compare -c experiments/slice-vs-container.ini --policies container,llumnix,slice \
    --rates 0.5,0.75,1 --db results/main.db --name main "$@"
echo "slicesim: capacity at <= 9 % SLA misses against the tuned baseline, static-best (about 1-2 min)"
"$S" capacity -c experiments/slice-vs-container.ini --policies static-best,container,slice \
    --db results/main.db --name main-capacity --no-progress
if command -v gnuplot >/dev/null; then
    echo "slicesim: drawing the figures into plots/out/"
    "$S" plot results/main.db --sweep main -o plots/out
else
    echo "gnuplot is not installed: no figures (slicesim plot results/main.db draws them)"
fi
