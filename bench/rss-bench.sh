#!/bin/bash
# Peak resident memory of `slicesim replay` against trace length, to show that it follows the
# requests in flight, not the number of requests: synthetic traces of 1 and 10 million
# requests (default; or the sizes given) at the default trace's rate on 4 x A100 serving
# Llama-2-7B, replayed without and with the results database. Release build (or $SLICESIM).
# Each trace is written to a temporary directory (about 42 bytes per request; 10 M requests
# take 420 MB, and the results database 1 GB) and deleted afterwards. 10 M requests take a few
# minutes per replay.
# Usage: bench/rss-bench.sh [REQUESTS ...]
set -eu
cd "$(dirname "$0")/.."
if [ -z "${SLICESIM:-}" ]; then
    bash tools/build-release.sh
    SLICESIM=./build-release/src/slicesim
fi
S=$SLICESIM
[ -x /usr/bin/time ] || { echo "rss-bench: needs GNU time (/usr/bin/time)" >&2; exit 1; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 10000000)
T=$(mktemp -d "${TMPDIR:-/tmp}/rss-bench.XXXXXX")
trap 'rm -rf "$T"' EXIT
ARGS=(--model llama-2-7b --gpu a100-80g --replicas 4 --tp 1 --json --no-progress)

field() { grep -o "\"$1\": [0-9.e+]*" "$2" | head -1 | cut -d' ' -f2; }
# peak KIB WALL_S of CMD (its stdout goes to $T/out)
peak() { /usr/bin/time -f "%M %e" -o "$T/time" "$@" >"$T/out" && cat "$T/time"; }

echo "binary: $S"
printf "startup (the binary and its shared libraries, 'slicesim list gpus'): %s KiB\n" \
    "$(peak "$S" list gpus | cut -d' ' -f1)"
printf "%12s %12s %9s %12s %9s %10s %12s\n" requests "no db KiB" "wall s" "--db KiB" "wall s" \
    "in flight" "events"
for n in "${sizes[@]}"; do
    "$S" trace gen --rate 5.5 --requests "$n" --seed 2 -o "$T/t.csv"
    read -r k0 w0 < <(peak "$S" replay --trace "$T/t.csv" "${ARGS[@]}" --db none)
    fl=$(field peak_in_flight "$T/out")
    ev=$(field events "$T/out")
    read -r k1 w1 < <(peak "$S" replay --trace "$T/t.csv" "${ARGS[@]}" --db "$T/r.db")
    rm -f "$T/t.csv" "$T/r.db" "$T/r.db-wal" "$T/r.db-shm"
    printf "%12s %12s %9s %12s %9s %10s %12s\n" "$n" "$k0" "$w0" "$k1" "$w1" "$fl" "$ev"
done
