#!/bin/bash
# Fuzz slicesim's input parsers with libFuzzer under AddressSanitizer + UndefinedBehaviorSanitizer
# (fuzz/README.md lists the targets). Builds build-fuzz with clang if needed, replays every
# target's corpus, then fuzzes each target for SECONDS. Exits non-zero on any crash, leak,
# UBSan report or hang; the failing inputs go to build-fuzz/artifacts, new interesting inputs to
# build-fuzz/corpus/TARGET (never into the source tree).
set -eu
cd "$(dirname "$0")/.."

usage() {
    cat <<'USAGE'
usage: bash tools/fuzz.sh [--jobs N] [--replay-only] [TARGET|all] [SECONDS]

Build the libFuzzer targets (build-fuzz: clang, -Dfuzzing=true, ASan + UBSan), replay each
target's corpus (fuzz/corpus/TARGET), then fuzz each target for SECONDS (default 60, or
$SS_FUZZ_SECONDS) with inputs of at most 4096 bytes.

  TARGET         one target (trace_native, scenario, ...) or all (default)
  SECONDS        fuzzing time per target (0: replay only)
  --jobs N       fuzz N targets at a time (default 1)
  --replay-only  replay the corpora, do not fuzz
  --list         print the target names
  -h, --help     this help

Found inputs: crashes, leaks, UBSan reports and timeouts are written to
build-fuzz/artifacts/TARGET-crash-..., leak-..., timeout-...; the run then fails. Reproduce
one with build-fuzz/fuzz/fuzz_TARGET FILE. New coverage-increasing inputs are kept in
build-fuzz/corpus/TARGET (copy the useful ones into fuzz/corpus/TARGET by hand).
Needs clang and libclang-rt-dev (bash tools/deps.sh installs them).
USAGE
}

jobs=1
replay_only=0
args=()
while [ $# -gt 0 ]; do
    case $1 in
    -h | --help) usage; exit 0 ;;
    --jobs) jobs=${2:?--jobs needs a number}; shift ;;
    --jobs=*) jobs=${1#--jobs=} ;;
    --replay-only) replay_only=1 ;;
    --list) ls fuzz/corpus; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) args+=("$1") ;;
    esac
    shift
done
target=${args[0]:-all}
seconds=${args[1]:-${SS_FUZZ_SECONDS:-60}}
case $seconds in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number" >&2; exit 2 ;; esac
case $jobs in '' | *[!0-9]* | 0) echo "fuzz.sh: --jobs must be >= 1" >&2; exit 2 ;; esac
[ "$seconds" -gt 0 ] || replay_only=1 # libFuzzer reads -max_total_time=0 as "no limit"

if [ "$target" = all ]; then
    targets=$(ls fuzz/corpus)
elif [ -d "fuzz/corpus/$target" ]; then
    targets=$target
else
    echo "fuzz.sh: unknown target '$target' (known: $(ls fuzz/corpus | tr '\n' ' '))" >&2
    exit 2
fi

# One run at a time per checkout: runs share build-fuzz (its binaries, logs, temporary files).
exec 9<tools/fuzz.sh # (the working directory is the repository root)
if ! flock -n 9; then
    echo "fuzz.sh: another fuzz.sh runs in this checkout; waiting for it" >&2
    flock 9
fi

B=build-fuzz
if [ ! -f $B/build.ninja ]; then
    CC=clang bash tools/quiet.sh meson setup $B -Dfuzzing=true -Db_sanitize=address,undefined -Db_lundef=false \
        --buildtype=debugoptimized -Dwerror=true -Dtests=disabled -Dmpi=disabled \
        -Dcuda=disabled -Dcuemu=disabled
fi
ninja -C $B $(for t in $targets; do echo fuzz/fuzz_$t; done)
mkdir -p $B/artifacts $B/logs $B/tmp
rm -rf $B/tmp/slicesim-fuzz-* # temporary files a crashed or stopped target left
export TMPDIR=$PWD/$B/tmp
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1

# One target: replay its corpus, then fuzz it. Output in $B/logs/TARGET.log.
run_target() {
    local t=$1 log=$B/logs/$1.log
    mkdir -p $B/corpus/$t
    {
        $B/fuzz/fuzz_$t -runs=0 -max_len=4096 -artifact_prefix=$B/artifacts/$t- fuzz/corpus/$t &&
        if [ "$replay_only" = 0 ]; then
            $B/fuzz/fuzz_$t -max_total_time="$seconds" -max_len=4096 -timeout=20 \
                -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=$B/artifacts/$t- \
                $B/corpus/$t fuzz/corpus/$t
        fi
    } >"$log" 2>&1
}

failed=()
declare -A pid_of=()
for t in $targets; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    run_target "$t" &
    pid_of[$t]=$!
done
# wait PID still gives the status of a job that wait -n reaped (bash keeps it).
for t in $targets; do
    log=$B/logs/$t.log
    if wait "${pid_of[$t]}"; then
        runs=$(grep -ao 'number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || true)
        echo "fuzz $t: ok${runs:+, $runs inputs}"
    else
        failed+=("$t")
        echo "fuzz $t: FAILED (log: $log)"
        grep -aE 'ERROR|runtime error|fuzz check failed|Test unit written' "$log" | head -5 |
            sed 's/^/    /'
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz.sh: failures in: ${failed[*]}; inputs in $B/artifacts" >&2
    exit 1
fi
if [ "$replay_only" = 1 ]; then
    echo "fuzz.sh: no failure (corpora replayed)"
else
    echo "fuzz.sh: no failure (${seconds} s per target)"
fi
