#!/bin/bash
# The speed and memory figures a search loop lives on, for the release build and, with
# BASE=PATH, for another slicesim binary in the same run (an older build, say), in one table:
#  - instructions (valgrind --tool=callgrind, repeatable on a busy machine) of the default
#    replay (`slicesim replay --db none`), of the one-hour Azure conversation trace as
#    bench/replay-bench.sh replays it (skipped without $SLICESIM_DATA), of
#    experiments/slice-vs-container.ini with SliceScheduler and without it (--ops slice and
#    --ops home: what its what-ifs cost), and of 100,000 synthetic requests on 4 and on 1,024
#    replicas;
#  - CPU seconds (user + system) of `capacity` of four bundles including SliceScheduler on the
#    main scenario (one seed, --jobs 1, no database) and of tools/run-main.sh's two commands
#    (compare and capacity, --jobs 1);
#  - peak RSS of a 64-tenant scenario that ends before its first request;
#  - with $SLICESIM_DATA, `fit --evaluate` of the training runs (instructions, --jobs 1) and a
#    default fit of them on 2 workers (wall seconds: the aim is a fit inside a minute on 2
#    cores; a busy machine stretches it).
# The steady-state fast path is on in both; SLICESIM_NO_STEADY=1 in the environment turns it off
# (the results stay the same, tests/cli/steady.sh). Speed is measured here only, never in a test.
# About 12 minutes a binary on one core (the fit on both). Usage: [BASE=PATH] bench/speed-bench.sh
set -eu
cd "$(dirname "$0")/.."
bash tools/build-release.sh
S=$(readlink -f ./build-release/src/slicesim)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
command -v valgrind >/dev/null || { echo "speed-bench: needs valgrind" >&2; exit 1; }
bins=("$S")
[ -z "${BASE:-}" ] || bins=("$(readlink -f "$BASE")" "$S")
AZ=${SLICESIM_DATA:-../shared/data}/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
FD=${SLICESIM_DATA:-../shared/data}/serving/vllm-0.15-h100-blis
SC=experiments/slice-vs-container.ini

"$S" trace gen --rate 5.5 --requests 100000 --seed 2 -o "$T/100k.csv" 2>/dev/null
{
    printf '[cluster]\ngpu = a100-80g\nnodes = 8\n[policy]\nbatching = sarathi\n[run]\n'
    printf 'seed = 1\nduration_s = 0.001\n'
    for i in $(seq 64); do
        printf '[tenant.t%d]\nmodel = llama-2-7b\nreplicas = 1\n' "$i"
        printf 'synthetic = "rate=0.5 duration=600"\n'
    done
} >"$T/t64.ini"

# instr BIN ARGS...: callgrind's instruction count of `BIN ARGS...`, in units of 10^9
instr() {
    local bin=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$bin" "$@" >/dev/null 2>"$T/cg.err" ||
        { cat "$T/cg.err" >&2; exit 1; }
    grep -o 'Collected : [0-9]*' "$T/cg.err" | awk '{ printf "%.3f", $3 / 1e9 }'
}
# timed FORMAT AWK CMD...: /usr/bin/time's FORMAT of `CMD...`, as the awk program AWK prints it
timed() {
    local fmt=$1 prog=$2
    shift 2
    /usr/bin/time -f "$fmt" -o "$T/time" "$@" >/dev/null 2>"$T/err" || { cat "$T/err" >&2; exit 1; }
    awk "$prog" "$T/time"
}
cpu() { timed '%U %S' '{ printf "%.1f", $1 + $2 }' "$@"; }  # user + system seconds
wall() { timed '%e' '{ printf "%.1f", $1 }' "$@"; }         # elapsed seconds
rss() { timed '%M' '{ printf "%.1f", $1 / 1024 }' "$@"; }   # peak RSS, MiB

rows=("default replay (--db none), 10^9 instructions|<= 1.0"
      "Azure conversation trace, 10^9 instructions|<= 1.2"
      "slice-vs-container.ini --ops slice, 10^9 instructions|"
      "slice-vs-container.ini --ops home, 10^9 instructions|"
      "SliceScheduler's what-ifs: --ops slice / --ops home|< 3"
      "100,000 requests, 4 replicas, 10^9 instructions|"
      "100,000 requests, 1,024 replicas, 10^9 instructions|"
      "1,024 replicas / 4 replicas|<= 1.5"
      "capacity, 4 bundles with slice, CPU s|<= 10"
      "run-main's compare + capacity, CPU s|<= 30"
      "64 tenants before the first request, peak RSS MiB|<= 10"
      "fit --evaluate of the training runs, 10^9 instructions|"
      "a default fit of the training runs, --jobs 2, wall s|<= 60")
for k in "${!bins[@]}"; do
    b=${bins[$k]}
    echo "speed-bench: measuring $b" >&2
    v=()
    v+=("$(instr "$b" replay --db none --no-progress)")
    if [ -r "$AZ" ]; then
        v+=("$(instr "$b" replay --trace "$AZ" --model llama-2-7b --gpu a100-80g --replicas 4 \
            --tp 1 --db none --no-progress)")
    else
        v+=("(no data)")
    fi
    sl=$(instr "$b" replay -c "$SC" --ops slice --db none --no-progress)
    ho=$(instr "$b" replay -c "$SC" --ops home --db none --no-progress)
    v+=("$sl" "$ho" "$(awk -v a="$sl" -v b="$ho" 'BEGIN { printf "%.2f", a / b }')")
    r4=$(instr "$b" replay --trace "$T/100k.csv" --replicas 4 --db none --no-progress)
    r1k=$(instr "$b" replay --trace "$T/100k.csv" --replicas 1024 --db none --no-progress)
    v+=("$r4" "$r1k" "$(awk -v a="$r1k" -v b="$r4" 'BEGIN { printf "%.2f", a / b }')")
    jobs=()
    "$b" capacity --help 2>&1 | grep -q -- '--jobs' && jobs=(--jobs 1)
    v+=("$(cpu "$b" capacity -c "$SC" --policies static-best,container,llumnix,slice --db none \
        --no-progress ${jobs[@]+"${jobs[@]}"})")
    c1=$(cpu "$b" compare -c "$SC" --policies container,llumnix,slice --rates 0.5,0.75,1 \
        --seeds 5 --db none --no-progress)
    c2=$(cpu "$b" capacity -c "$SC" --policies static-best,container,slice,slice-oracle:policy.ops=slice+policy.slice_output_predictor=oracle \
        --seeds 5 --tol 0.01 --db none --no-progress ${jobs[@]+"${jobs[@]}"})
    v+=("$(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.1f", a + b }')")
    v+=("$(rss "$b" replay -c "$T/t64.ini" --db none --no-progress)")
    if [ -r "$FD/runs.csv" ]; then
        v+=("$(instr "$b" fit "$FD" --evaluate --jobs 1)")
        v+=("$(wall "$b" fit "$FD" --jobs 2 -o "$T/fit.ini" --no-progress)")
    else
        v+=("(no data)" "(no data)")
    fi
    printf '%s\n' "${v[@]}" >"$T/col$k"
done

if [ ${#bins[@]} -eq 2 ]; then
    printf '| | %s | %s | bar |\n|---|---|---|---|\n' "BASE" "this build"
    paste -d'\t' <(printf '%s\n' "${rows[@]}") "$T/col0" "$T/col1" |
        awk -F'\t' '{ split($1, r, "|"); printf "| %s | %s | %s | %s |\n", r[1], $2, $3, r[2] }'
else
    printf '| | this build | bar |\n|---|---|---|\n'
    paste -d'\t' <(printf '%s\n' "${rows[@]}") "$T/col0" |
        awk -F'\t' '{ split($1, r, "|"); printf "| %s | %s | %s |\n", r[1], $2, r[2] }'
fi
