#!/bin/bash
# What automatic prefix caching costs the replay, in a release build: the same replay with the
# cache on and off, best-of-5 wall time (the replay's own wall_s, trace reading included as it
# streams) and, where valgrind is installed, instructions of the whole process (callgrind,
# repeatable on a noisy machine), and the ratios on / off:
#  - the Mooncake trace ($SLICESIM_DATA/traces/mooncake/synthetic_trace.jsonl: 3,993 requests,
#    15,000-token prompts on average) on 4 x H100, Llama-3-8B; skipped when the data is absent;
#  - experiments/chat-sessions.ini (synthetic conversations sharing system prompts).
# The project's bound: on stays within 2x of off. Usage: bench/prefix-bench.sh [--no-callgrind]
set -eu
cd "$(dirname "$0")/.."
bash tools/build-release.sh
S=./build-release/src/slicesim
M=${SLICESIM_DATA:-../shared/data}/traces/mooncake/synthetic_trace.jsonl
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CG=1
[ "${1:-}" = "--no-callgrind" ] && CG=0
command -v valgrind >/dev/null || CG=0

field() { grep -o "\"$1\": [0-9.e+-]*" "$2" | head -1 | cut -d' ' -f2; }
best_wall() { # best_wall CMD...: the fastest wall_s of 5 runs
    local best=""
    for _ in 1 2 3 4 5; do
        "$@" --json >"$T/one"
        local w
        w=$(field wall_s "$T/one")
        if [ -z "$best" ] || awk -v a="$w" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$w
        fi
    done
    echo "$best"
}
instructions() { # instructions CMD...: callgrind's count for the whole process
    valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$@" >/dev/null 2>"$T/cg.err"
    grep -o 'Collected : [0-9]*' "$T/cg.err" | cut -d' ' -f3
}
compare() { # compare NAME CMD...: the command with --prefix-cache on and off
    local name=$1
    shift
    local on off
    on=$(best_wall "$@" --prefix-cache on)
    off=$(best_wall "$@" --prefix-cache off)
    printf "%-14s wall (best of 5): on %8.3f s, off %8.3f s: on / off = %.2f\n" "$name" "$on" \
        "$off" "$(awk -v a="$on" -v b="$off" 'BEGIN { print a / b }')"
    if [ "$CG" = 1 ]; then
        on=$(instructions "$@" --prefix-cache on)
        off=$(instructions "$@" --prefix-cache off)
        printf "%-14s instructions:       on %8.3g,   off %8.3g:   on / off = %.2f\n" "$name" \
            "$on" "$off" "$(awk -v a="$on" -v b="$off" 'BEGIN { print a / b }')"
    fi
}

if [ -r "$M" ]; then
    compare mooncake "$S" replay --trace "$M" --model llama-3-8b --gpu h100-sxm --replicas 4 \
        --tp 1 --max-model-len 131072 --db none
else
    echo "mooncake: skipped ($M not found; tools/get-data.sh fetches it)"
fi
compare chat-sessions "$S" replay -c experiments/chat-sessions.ini --db none
