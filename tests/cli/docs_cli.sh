#!/bin/bash
# What a newcomer reads stands alone: the README and docs/ point at no file a clone lacks
# (../shared/DESIGN.md was one), every tools/, experiments/, docs/, bench/ and tests/ path the
# README names exists, tools/get-data.sh says where the public data comes from, and
# tools/skipped.py reports skipped tests with their reasons.
set -u
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$ROOT" || exit 1

bad=$(grep -n '\.\./shared/[A-Za-z]*\.md' README.md docs/*.md traces/README.md \
      profiles/*.md experiments/README.md 2>/dev/null)
[ -z "$bad" ] || fail "docs name files outside the project: $bad"
# paths that start a word (not build-release/bench/..., a build output)
for p in $(grep -oE '(^|[^A-Za-z0-9_./-])(tools|experiments|docs|bench|tests)/[A-Za-z0-9_./-]*[A-Za-z0-9_]' \
           README.md | sed 's/^[^a-z]//' | sort -u); do
    [ -e "$p" ] || fail "README names $p, which does not exist"
done

# the experiment scripts at least parse (running them takes minutes)
for f in experiments/*.sh; do
    bash -n "$f" || fail "$f does not parse (bash -n)"
done

bash tools/get-data.sh --list >"$T/list" || fail "get-data.sh --list failed"
for d in traces/azure-llm-2023 traces/mooncake traces/servegen traces/vidur profiles/vidur/compute \
         profiles/vidur/network; do
    grep -q "$d" "$T/list" || fail "get-data.sh --list does not say what fills $d"
done
SLICESIM_DATA=/somewhere bash tools/get-data.sh --list | grep -q "into /somewhere" ||
    fail "get-data.sh does not honour SLICESIM_DATA"
bash tools/get-data.sh --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "get-data.sh --bogus: want exit 2"

if command -v python3 >/dev/null; then
    mkdir -p "$T/b/meson-logs"
    printf '%s\n' '{"name": "x / data_test", "result": "SKIP", "stdout": "working\nskip: data absent\n"}' \
        '{"name": "x / ok_test", "result": "OK", "stdout": ""}' >"$T/b/meson-logs/testlog.json"
    out=$(python3 tools/skipped.py "$T/b")
    [ "$out" = "  skipped in $T/b: x / data_test: skip: data absent" ] ||
        fail "skipped.py: '$out'"
fi
echo "docs_cli: ok"
