#!/bin/bash
# A full replay of the default trace (19,675 requests, with the results database and the
# report) under valgrind's memcheck: no invalid access, no use of uninitialised memory, no
# leak (definite or possible), on an uninstrumented build. About 15-40 s.
# Usage: valgrind_replay.sh SLICESIM; under meson (suite 'valgrind') it runs $SLICESIM when
# SS_VALGRIND=1 and skips otherwise (tools/run-tests.sh runs it on the release build). Skips
# when valgrind is missing or the binary is sanitizer-instrumented.
set -u
ROOT=${SS_SOURCE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
S=${1:-}
if [ -z "$S" ]; then
    [ "${SS_VALGRIND:-0}" = 1 ] || { echo "skip: set SS_VALGRIND=1 to run"; exit 77; }
    S=${SLICESIM:?SLICESIM not set}
fi
command -v valgrind >/dev/null || { echo "skip: valgrind is not installed"; exit 77; }
if ldd "$S" 2>/dev/null | grep -q 'lib[at]san'; then
    echo "skip: $S is sanitizer-instrumented"
    exit 77
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
valgrind --leak-check=full --error-exitcode=1 --log-file="$T/vg" \
    "$S" replay --trace "$ROOT/traces/azure-conv-synth.csv" --no-progress --db "$T/v.db" \
    >"$T/out" 2>"$T/err" || fail "valgrind: $(grep -E 'ERROR SUMMARY|lost:' "$T/vg") $(cat "$T/err")"
grep -q "requests 19675: completed" "$T/out" || fail "the replay did not finish: $(cat "$T/out")"
grep -q "ERROR SUMMARY: 0 errors" "$T/vg" || fail "$(grep 'ERROR SUMMARY' "$T/vg")"
[ "$(sql "$T/v.db" 'SELECT count(*) FROM requests')" = 19675 ] || fail "stored rows"
echo "valgrind_replay: $(grep -E 'in use at exit|definitely lost|ERROR SUMMARY' "$T/vg" | sed 's/==[0-9]*== //' |
    tr '\n' ' ')"
echo "valgrind_replay: all checks passed"
