#!/bin/bash
# What the SQLite results store costs a replay, in instructions (valgrind --tool=callgrind: the
# whole process, repeatable on a noisy machine), in a release build, on the shipped trace:
#  - creating a database: a 1-request replay into a new file less the same replay with --db none
#    (the schema, the prepared statements, one run's rows and the commit);
#  - a replay of REQUESTS requests into a new file against --db none, and the ratio (the bar
#    for a search loop that stores every candidate: at most 1.15), and what each stored request
#    costs beyond the creation.
# Usage: bench/store-bench.sh [REQUESTS...]   (default 3000; e.g. 3000 10000)
set -eu
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "store-bench: needs valgrind" >&2; exit 1; }
bash tools/build-release.sh
S=./build-release/src/slicesim
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
[ $# -gt 0 ] || set -- 3000

instructions() { # instructions N DB: callgrind's count for a replay of N requests into DB
    rm -f "$2" "$2-wal" "$2-shm"
    valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$S" replay --limit "$1" --db "$2" \
        --no-progress >/dev/null 2>"$T/cg.err"
    grep -o 'Collected : [0-9]*' "$T/cg.err" | cut -d' ' -f3
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

one=$(instructions 1 "$T/one.db")
one0=$(instructions 1 none)
create=$((one - one0))
printf "%-28s %14s %14s %14s %8s\n" "" "stored" "--db none" "store's part" "ratio"
printf "%-28s %14d %14d %14d %8s\n" "1 request, new database" "$one" "$one0" "$create" \
    "$(ratio "$one" "$one0")"
for n in "$@"; do
    db=$(instructions "$n" "$T/n.db")
    db0=$(instructions "$n" none)
    printf "%-28s %14d %14d %14d %8s\n" "$n requests, new database" "$db" "$db0" \
        "$((db - db0))" "$(ratio "$db" "$db0")"
    printf "  beyond creating it: %d instructions a stored request\n" \
        "$(((db - db0 - create) / (n - 1)))"
done
