#!/bin/bash
# Load sweep: replay the default trace (Azure-conversation-like, 5.5 req/s) on 4 x A100-80G
# serving Llama-2-7B with vLLM batching at growing arrival rates (--rate-scale), store every
# run in results/load-sweep.db, print throughput and latency per load, and draw
# plots/out/load-sweep.png with gnuplot when it is installed. This is the experiment behind
# the load table in docs/guide/worked-example.md. Extra arguments go to every `slicesim
# replay`.
set -eu
cd "$(dirname "$0")/.."
S=${SLICESIM:-./build-release/src/slicesim}
[ -n "${SLICESIM:-}" ] || bash tools/build-release.sh
DB=results/load-sweep.db
mkdir -p results plots/out
first=""
for x in 0.5 1 1.5 2 2.5 3 3.25 3.5 4; do
    "$S" replay --rate-scale "$x" --db "$DB" --json "$@" >/dev/null
    [ -n "$first" ] || first=$(sqlite3 "$DB" 'SELECT max(run_id) FROM runs')
done
query="SELECT r.rate_scale, printf('%.2f', s.requests_per_s), printf('%.0f', s.output_tokens_per_s),
  printf('%.0f', s.ttft_p50_ms), printf('%.0f', s.ttft_p99_ms), printf('%.1f', s.tbt_p50_ms),
  printf('%.1f', s.tbt_p99_ms), printf('%.0f', s.e2e_p99_ms), s.preemptions
  FROM runs r JOIN summary s USING (run_id) WHERE run_id >= $first ORDER BY r.rate_scale"
printf "| rate x | req/s | output tok/s | TTFT p50 ms | TTFT p99 ms | TBT p50 ms | TBT p99 ms | E2E p99 ms | preemptions |\n"
printf "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
sqlite3 -separator ' | ' "$DB" "$query" | sed 's/^/| /; s/$/ |/'
if command -v gnuplot >/dev/null; then
    sqlite3 -separator ' ' "$DB" "$query" >plots/out/load-sweep.dat
    gnuplot -e "datafile='plots/out/load-sweep.dat'; outfile='plots/out/load-sweep.png'" \
        plots/load-sweep.gp
    echo "plot: plots/out/load-sweep.png"
fi
