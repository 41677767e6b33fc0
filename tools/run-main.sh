#!/bin/bash
# The main job on a fresh machine: install what is missing, build slicesim (release), and
# replay the default trace (traces/azure-conv-synth.csv: one hour of Azure-conversation-like
# traffic) on 4 x A100-80G serving Llama-2-7B with vLLM batching. Prints the result table and
# stores the run in results/slicesim.db. Extra arguments go to `slicesim replay`.
set -eu
cd "$(dirname "$0")/.."
bash tools/deps.sh
bash tools/build-release.sh
exec ./build-release/src/slicesim replay --trace traces/azure-conv-synth.csv --model llama-2-7b \
    --gpu a100-80g --replicas 4 --tp 1 --db results/slicesim.db "$@"
