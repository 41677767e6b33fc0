#!/bin/bash
# What a newcomer reads stands alone: the README and docs/ point at no file a clone lacks
# (../shared/DESIGN.md was one), every tools/, experiments/, docs/, bench/ and tests/ path the
# README and docs/ name exists, the README stays at most 300 lines, every relative link in the
# project's Markdown resolves to a file and heading (tools/check-links.py), tools/get-data.sh
# says where the public data comes from and, without the network, fails in one line and leaves
# no folder, and tools/skipped.py reports skipped tests with their reasons.
set -u
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$ROOT" || exit 1

bad=$(grep -n '\.\./shared/[A-Za-z]*\.md' README.md $(find docs -name '*.md') traces/README.md \
      profiles/*.md experiments/README.md 2>/dev/null)
[ -z "$bad" ] || fail "docs name files outside the project: $bad"
# paths that start a word (not build-release/bench/..., a build output), in the README and
# the guide, whose commands run from the checkout's root
for f in README.md $(find docs -name '*.md' | sort); do
    for p in $(grep -oE '(^|[^A-Za-z0-9_./-])(tools|experiments|docs|bench|tests)/[A-Za-z0-9_./-]*[A-Za-z0-9_]' \
               "$f" | sed 's/^[^a-z]//' | sort -u); do
        [ -e "$p" ] || fail "$f names $p, which does not exist"
    done
done

# the README fits on a few screens; the rest is in docs/
n=$(wc -l <README.md)
[ "$n" -le 300 ] || fail "README.md has $n lines: at most 300 (move the detail to docs/)"

# every relative link names a file that exists and a heading that is there
if command -v python3 >/dev/null; then
    python3 tools/check-links.py "$ROOT" >"$T/links" || fail "broken links: $(cat "$T/links")"
    mkdir -p "$T/l/docs"
    printf '# Top\n\n## A part\n\n[ok](docs/x.md#b) [ok](#a-part) [gone](docs/y.md) [bad](#c)\n' \
        >"$T/l/README.md"
    printf '# X\n\n## B\n\n```\n# not a heading\n[in code](nowhere.md)\n```\n[up](../README.md#not-a-heading)\n' \
        >"$T/l/docs/x.md"
    python3 tools/check-links.py "$T/l" >"$T/lo"
    [ $? -eq 1 ] || fail "check-links.py: want exit 1 on broken links"
    [ "$(cat "$T/lo")" = "README.md:5: docs/y.md: no such file
README.md:5: #c: no heading with that anchor in README.md
docs/x.md:9: ../README.md#not-a-heading: no heading with that anchor in README.md" ] ||
        fail "check-links.py: $(cat "$T/lo")"
fi

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

# get-data.sh without the network (a git that fails as git does offline, first on PATH): exit 1,
# one line saying what failed and what to do, and no folder left, however far it got; with the
# network (the same stand-in, succeeding) every file comes into DIR, none before the last
# source came. The stand-in fails the clone of any repository whose URL has $FAKE_GIT_FAIL.
mkdir -p "$T/bin" "$T/tmp"
cat >"$T/bin/git" <<'SH'
#!/bin/bash
case "$1" in
clone)
    repo=${*: -2:1} dest=${*: -1}
    if [[ $repo == *"$FAKE_GIT_FAIL"* ]]; then
        echo "fatal: unable to access '$repo/': Could not resolve host: github.com" >&2
        exit 128
    fi
    mkdir -p "$dest" ;;
-C)
    dir=$2
    shift 2
    case "$1" in
    sparse-checkout) shift 3; printf '%s\n' "$@" >"$dir/.paths" ;;
    checkout)
        while read -r p; do
            case $p in
            */) mkdir -p "$dir/$p" && echo x >"$dir/$p/f.csv" ;;
            *) mkdir -p "$(dirname "$dir/$p")" && echo x >"$dir/$p" ;;
            esac
        done <"$dir/.paths" ;;
    esac ;;
esac
SH
chmod +x "$T/bin/git"
# offline NAME FAIL DIR_ARGS...: get-data.sh with clones of URLs containing FAIL failing
offline() {
    local name=$1
    FAKE_GIT_FAIL=$2 PATH="$T/bin:$PATH" TMPDIR="$T/tmp" bash tools/get-data.sh "${@:3}" \
        >"$T/$name.out" 2>"$T/$name.err"
    [ $? -eq 1 ] || fail "get-data.sh offline ($name): want exit 1"
    [ "$(wc -l <"$T/$name.err")" -eq 1 ] || fail "get-data.sh offline ($name): $(cat "$T/$name.err")"
    [ -z "$(ls -A "$T/tmp")" ] || fail "get-data.sh offline ($name) left $(ls "$T/tmp")"
}
offline first github.com "$T/data"
[ ! -e "$T/data" ] || fail "get-data.sh offline left $T/data"
grep -Eq "^get-data: cannot fetch azure-llm-2023 from https://github.com/Azure/AzurePublicDataset \(unable to access '[^']*': Could not resolve host: github.com\); nothing was written to $T/data\. .*SLICESIM_DATA" \
    "$T/first.err" || fail "get-data.sh offline: $(cat "$T/first.err")"
offline last microsoft/vidur "$T/data" # the three sources before it came
[ ! -e "$T/data" ] || fail "get-data.sh left $T/data after fetching some of the sources"
grep -q "^get-data: cannot fetch vidur from " "$T/last.err" || fail "vidur: $(cat "$T/last.err")"
mkdir "$T/had" && echo keep >"$T/had/SOURCES.txt"
SLICESIM_DATA="$T/had" offline had github.com # the default DIR, one that exists
[ "$(ls -A "$T/had")" = SOURCES.txt ] && [ "$(cat "$T/had/SOURCES.txt")" = keep ] ||
    fail "get-data.sh offline changed a DIR that was there"
FAKE_GIT_FAIL=nothing-fails PATH="$T/bin:$PATH" TMPDIR="$T/tmp" bash tools/get-data.sh "$T/had" \
    >"$T/ok.out" 2>&1 || fail "get-data.sh with the stand-in: $(cat "$T/ok.out")"
for f in traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv traces/mooncake/synthetic_trace.jsonl \
         traces/servegen/f.csv profiles/vidur/network/f.csv \
         traces/vidur/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv; do
    [ -f "$T/had/$f" ] || fail "get-data.sh did not put $f in place"
done
[ "$(head -1 "$T/had/SOURCES.txt")" = keep ] && [ "$(grep -c '^Fetched by' "$T/had/SOURCES.txt")" = 8 ] ||
    fail "get-data.sh's SOURCES.txt: $(cat "$T/had/SOURCES.txt")"

if command -v python3 >/dev/null; then
    mkdir -p "$T/b/meson-logs"
    printf '%s\n' '{"name": "x / data_test", "result": "SKIP", "stdout": "working\nskip: data absent\n"}' \
        '{"name": "x / ok_test", "result": "OK", "stdout": ""}' >"$T/b/meson-logs/testlog.json"
    out=$(python3 tools/skipped.py "$T/b")
    [ "$out" = "  skipped in $T/b: x / data_test: skip: data absent" ] ||
        fail "skipped.py: '$out'"
fi
echo "docs_cli: ok"
