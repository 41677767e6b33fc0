#!/bin/bash
# CLI tests of `slicesim trace`: --help, stats of the shipped default trace against the published
# Azure conversation figures (within 2 %), byte-identical regeneration of that file, error
# reporting (exit 2, one "slicesim: FILE:LINE: field: ..." line on stderr, nothing on stdout),
# the FILE.tmp-and-rename rule of gen, Mooncake JSONL and BurstGPT fixtures (--spread, the
# skipped count), and the real traces when ../shared/data is present.
# Needs $SLICESIM and $SS_SOURCE_ROOT; $SLICESIM_DATA (else $SS_SHARED_DATA) is optional.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
DATA=${SLICESIM_DATA:-${SS_SHARED_DATA:-$ROOT/../shared/data}}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT

# within GOT WANT WHAT: |GOT - WANT| <= 2 % of WANT
within() {
    awk -v g="$1" -v w="$2" 'BEGIN { d = (g - w) / w; if (d < 0) d = -d; exit !(d <= 0.02) }' ||
        fail "$3: got $1, want $2 within 2 %"
}

# json_num FILE KEY [OBJECT]: a number from the one-line JSON of `trace stats --json`.
json_num() {
    local src
    if [ $# -eq 3 ]; then
        src=$(grep -o "\"$3\":{[^}]*}" "$1")
    else
        src=$(cat "$1")
    fi
    echo "$src" | grep -o "\"$2\":[-0-9.e+]*" | head -1 | cut -d: -f2
}

# ---- help ------------------------------------------------------------------------------
"$S" trace --help >"$T/out" || fail "trace --help exit $?"
grep -q "slicesim trace stats" "$T/out" || fail "trace --help: no usage"
"$S" trace stats --help >"$T/out" || fail "trace stats --help exit $?"
grep -q -- "--json" "$T/out" || fail "trace stats --help does not mention --json"
grep -q -- "--spread" "$T/out" || fail "trace stats --help does not mention --spread"
grep -q "mooncake" "$T/out" || fail "trace stats --help does not mention mooncake"
"$S" trace gen --help >"$T/out" || fail "trace gen --help exit $?"
grep -q -- "--prompt" "$T/out" || fail "trace gen --help does not mention --prompt"
expect_error 2 '^slicesim: trace: unknown subcommand' "$S" trace frobnicate

# ---- the default trace matches the published figures -----------------------------------
DEF=$ROOT/traces/azure-conv-synth.csv
[ -f "$DEF" ] || fail "missing $DEF"
"$S" trace stats --json "$DEF" >"$T/s.json" || fail "stats --json $DEF exit $?"
within "$(json_num "$T/s.json" rate)" 5.5 "rate"
within "$(json_num "$T/s.json" requests)" 19800 "requests"
within "$(json_num "$T/s.json" span_s)" 3600 "span"
within "$(json_num "$T/s.json" interarrival_cv)" 1 "inter-arrival cv (Poisson)"
within "$(json_num "$T/s.json" mean prompt)" 1155 "prompt mean"
within "$(json_num "$T/s.json" p50 prompt)" 1020 "prompt p50"
within "$(json_num "$T/s.json" p99 prompt)" 4142 "prompt p99"
within "$(json_num "$T/s.json" mean output)" 211 "output mean"
within "$(json_num "$T/s.json" p50 output)" 129 "output p50"
within "$(json_num "$T/s.json" p99 output)" 601 "output p99"
[ "$(json_num "$T/s.json" tenants)" = 1 ] || fail "tenants: want 1"
# The table carries the same numbers; stdin gives the same answer as the file.
"$S" trace stats "$DEF" >"$T/table" || fail "stats table exit $?"
grep -Eq '^requests +[0-9]+$' "$T/table" || fail "table: no requests row"
grep -Eq '^prompt +[0-9.]+ +[0-9]+ +1031 ' "$T/table" || fail "table: prompt row: $(cat "$T/table")"
"$S" trace stats --json - <"$DEF" >"$T/s2.json" || fail "stats - exit $?"
sed 's/"file":"[^"]*"//' "$T/s.json" >"$T/a"
sed 's/"file":"[^"]*"//' "$T/s2.json" >"$T/b"
cmp -s "$T/a" "$T/b" || fail "stats of stdin differs from stats of the file"

# ---- regeneration is byte-identical ----------------------------------------------------
gen_default() {
    "$S" trace gen --rate 5.5 --duration 3600 --arrival poisson --seed 1 \
        --prompt "quantiles:0=2,0.5=1020,0.9=1871.4,0.99=4142,1=5921" \
        --output "quantiles:0=7,0.5=129,0.9=478.3,0.99=601,1=819" -o "$1"
}
gen_default "$T/g1.csv" || fail "gen exit $?"
gen_default "$T/g2.csv" || fail "gen exit $?"
cmp "$T/g1.csv" "$T/g2.csv" || fail "gen twice: files differ"
cmp "$T/g1.csv" "$DEF" || fail "the command traces/README.md gives no longer reproduces $DEF"
[ -z "$(tmp_of "$T/g1.csv")" ] || fail "gen left $(tmp_of "$T/g1.csv") behind"
"$S" trace gen --requests 100 --seed 9 -o - >"$T/g3.csv" 2>"$T/g3.err" || fail "gen -o - exit $?"
[ ! -s "$T/g3.err" ] || fail "gen -o - wrote to stderr: $(cat "$T/g3.err")"
# into a file, a line says what it wrote (before, nothing did)
"$S" trace gen --requests 100 --seed 9 -o "$T/g4.csv" 2>"$T/g4.err" || fail "gen -o FILE exit $?"
cmp -s "$T/g3.csv" "$T/g4.csv" || fail "gen -o FILE and -o - differ"
last=$(tail -n 1 "$T/g4.csv" | cut -d, -f2)
[ "$(cat "$T/g4.err")" = "slicesim: trace gen: wrote 100 requests, arrivals over $(printf '%.1f' "$last") s, to $T/g4.csv" ] ||
    fail "gen -o FILE: $(cat "$T/g4.err") (last arrival $last)"
[ "$(wc -l <"$T/g3.csv")" -eq 101 ] || fail "gen --requests 100: want 101 lines"
"$S" trace gen --requests 100 --seed 9 -o "$T/g4.csv" || fail "gen exit $?"
cmp "$T/g3.csv" "$T/g4.csv" || fail "gen to stdout and to a file differ"
"$S" trace gen --requests 100 --seed 9 --output fixed:5 -o "$T/g5.csv" || fail "gen exit $?"
cut -d, -f1-4 "$T/g3.csv" >"$T/a"
cut -d, -f1-4 "$T/g5.csv" >"$T/b"
cmp -s "$T/a" "$T/b" || fail "changing --output changed arrivals or prompts"
"$S" trace gen --requests 5000 --rate 20 --arrival gamma --cv 3 -o "$T/g6.csv" || fail "gamma"
"$S" trace stats --json "$T/g6.csv" >"$T/s6.json" || fail "stats of gamma trace"
awk -v c="$(json_num "$T/s6.json" interarrival_cv)" 'BEGIN { exit !(c > 2.5 && c < 3.5) }' ||
    fail "gamma --cv 3: measured cv $(json_num "$T/s6.json" interarrival_cv)"

# ---- bad traces: exit 2, FILE:LINE: field: message, nothing on stdout -------------------
H=request_id,arrival_s,tenant,prompt_tokens,output_tokens
printf '%s\n0,0,a,1,1\n1,1,a,abc,1\n' $H >"$T/bad1.csv"
expect_error 2 "^slicesim: $T/bad1.csv:3: prompt_tokens: not an integer: 'abc'\$" \
    "$S" trace stats "$T/bad1.csv"
printf '%s\r\n0,4.25,a,1,1\r\n1,3.5,a,1,1\r\n' $H >"$T/bad2.csv"
expect_error 2 "^slicesim: $T/bad2.csv:3: arrival_s: goes backwards \\(3.5 < 4.25\\); the trace is not sorted by time \\(sort it, or read it whole with --sort, or trace_sort = true in a scenario\\)\$" \
    "$S" trace stats --json "$T/bad2.csv"
: >"$T/empty.csv"
expect_error 2 "^slicesim: $T/empty.csv:1: header: file is empty\$" "$S" trace stats "$T/empty.csv"
printf '%s\n' $H >"$T/hdr.csv"
expect_error 2 "^slicesim: $T/hdr.csv:2: trace: no requests after the header\$" \
    "$S" trace stats "$T/hdr.csv"
printf 'request_id,arrival_s,tenant,prompt_tokens\n0,0,a,1\n' >"$T/bad3.csv"
expect_error 2 "^slicesim: $T/bad3.csv:1: header: missing column output_tokens\$" \
    "$S" trace stats "$T/bad3.csv"
printf '%s\n0,0,a,1,1\n\n\n1,0,a,1,-3\n' $H >"$T/bad4.csv"
expect_error 2 "^slicesim: $T/bad4.csv:5: output_tokens: must be >= 1, got -3\$" \
    "$S" trace stats "$T/bad4.csv"
{ printf '%s\n0,0,a,1,1\n' $H; head -c 270000 /dev/zero | tr '\0' x; echo; } >"$T/bad5.csv"
expect_error 2 "^slicesim: $T/bad5.csv:3: line: longer than 262144 bytes\$" \
    "$S" trace stats "$T/bad5.csv"
KNOWN='\(known: auto, native, azure, vidur, burstgpt, mooncake\)'
expect_error 2 "^slicesim: $T/bad1.csv: format: unknown format 'csv' $KNOWN\$" \
    "$S" trace stats --format csv "$T/bad1.csv"
expect_error 2 "^slicesim: $T/bad1.csv:1: header: missing column TIMESTAMP\$" \
    "$S" trace stats --format azure "$T/bad1.csv"
expect_error 2 "^slicesim: $T/nope.csv: cannot open" "$S" trace stats "$T/nope.csv"
expect_error 2 '^slicesim: trace stats: ' "$S" trace stats
expect_error 2 '^slicesim: trace stats: bad option' "$S" trace stats --bogus "$T/bad1.csv"

# ---- Mooncake JSONL and BurstGPT ---------------------------------------------------------
mc() { printf '{"timestamp": %s, "input_length": %s, "output_length": %s, "hash_ids": [%s]}\n' "$@"; }
{ mc 1000 600 5 '0, 1'; mc 1000 700 6 '0, 2'; mc 1000 800 7 '3, 4'; mc 1003 900 8 '5'; } >"$T/mc.jsonl"
"$S" trace stats --json "$T/mc.jsonl" >"$T/mc.json" || fail "stats mooncake exit $?"
grep -q '"format":"mooncake"' "$T/mc.json" || fail "mooncake: not detected: $(cat "$T/mc.json")"
[ "$(json_num "$T/mc.json" requests)" = 4 ] || fail "mooncake: want 4 requests"
[ "$(json_num "$T/mc.json" max prompt)" = 900 ] || fail "mooncake: prompt max"
[ "$(json_num "$T/mc.json" span_s)" = 0.003000 ] || fail "mooncake: span"
# Without --spread the gaps are 0, 0 and 3 ms (cv sqrt(2)); spread, all are 1 ms (cv 0).
awk -v c="$(json_num "$T/mc.json" interarrival_cv)" 'BEGIN { exit !(c > 1.414 && c < 1.415) }' ||
    fail "mooncake: cv $(json_num "$T/mc.json" interarrival_cv), want 1.414"
"$S" trace stats --spread --json "$T/mc.jsonl" >"$T/mcs.json" || fail "stats --spread exit $?"
[ "$(json_num "$T/mcs.json" interarrival_cv)" = 0.000000 ] || fail "--spread: cv not 0"
[ "$(json_num "$T/mcs.json" span_s)" = 0.003000 ] || fail "--spread: span changed"
"$S" trace stats -s --format mooncake - <"$T/mc.jsonl" >"$T/table" || fail "stats -s - exit $?"
grep -Eq '^format +mooncake$' "$T/table" || fail "mooncake table: $(cat "$T/table")"
{ mc 5 1 1 ''; printf '{"timestamp": 6, "input_length": 1, "output_length": 1, "hash_ids": [-1]}\n'; } \
    >"$T/mcbad1.jsonl"
expect_error 2 "^slicesim: $T/mcbad1.jsonl:2: hash_ids: must be >= 0, got -1\$" \
    "$S" trace stats "$T/mcbad1.jsonl"
{ mc 5 1 1 ''; printf '{"timestamp": 6, "input_length": 1, "output_length": 1\n'; } >"$T/mcbad2.jsonl"
expect_error 2 "^slicesim: $T/mcbad2.jsonl:2: json: expected ',' or '}' \\(column 55\\)\$" \
    "$S" trace stats --spread "$T/mcbad2.jsonl"
# at most the blocks the prompt fills, and traces/README.md quotes the message word for word
mkdir -p "$T/doc" # six blank lines, then the bad one: line 7, as in traces/README.md's example
{ printf '\n\n\n\n\n\n'; mc 5 1024 1 '1, 2, 3'; } >"$T/doc/t.jsonl"
(cd "$T/doc" && "$S" trace stats t.jsonl) 2>"$T/doc/err" && fail "3 ids for 1024 tokens accepted"
msg=$(sed 's/^slicesim: //' "$T/doc/err")
[ "$msg" = "t.jsonl:7: hash_ids: 3 ids of 512-token blocks, more than input_length 1024 fills (2)" ] ||
    fail "hash_ids past the prompt: $msg"
tr '\n' ' ' <"$ROOT/traces/README.md" | sed 's/  */ /g' | grep -qF "\`$msg\`" ||
    fail "traces/README.md does not quote '$msg'"
printf '{"input_length": 1, "output_length": 1}\n' >"$T/mcbad3.jsonl"
expect_error 2 "^slicesim: $T/mcbad3.jsonl:1: timestamp: missing\$" "$S" trace stats "$T/mcbad3.jsonl"
expect_error 2 "^slicesim: $T/bad1.csv:1: json: expected '\\{' \\(column 1\\)\$" \
    "$S" trace stats --format mooncake "$T/bad1.csv"
BH='Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type'
printf '%s\n5,ChatGPT,472,18,490,Conversation log\n45,ChatGPT,1087,0,1087,Conversation log\n%s\n' \
    "$BH" '118,GPT-4,417,276,693,API log' >"$T/burst.csv"
"$S" trace stats --json "$T/burst.csv" >"$T/b.json" || fail "stats burstgpt exit $?"
grep -q '"format":"burstgpt"' "$T/b.json" || fail "burstgpt: not detected: $(cat "$T/b.json")"
[ "$(json_num "$T/b.json" requests)" = 2 ] || fail "burstgpt: want 2 requests"
[ "$(json_num "$T/b.json" skipped)" = 1 ] || fail "burstgpt: want 1 skipped"
[ "$(json_num "$T/b.json" tenants)" = 2 ] || fail "burstgpt: want 2 tenants"
"$S" trace stats "$T/burst.csv" >"$T/table" || fail "stats burstgpt table exit $?"
grep -Eq '^skipped +1$' "$T/table" || fail "burstgpt table: no skipped row: $(cat "$T/table")"
printf '%s\n5,ChatGPT,472,18,490,x\n4,ChatGPT,472,18,490,x\n' "$BH" >"$T/bbad.csv"
expect_error 2 "^slicesim: $T/bbad.csv:3: Timestamp: goes backwards \\(4 < 5\\); the trace is not sorted by time \\(sort it, or read it whole with --sort, or trace_sort = true in a scenario\\)\$" \
    "$S" trace stats "$T/bbad.csv"
printf 'Timestamp,Model,Response tokens\n5,ChatGPT,18\n' >"$T/bbad2.csv"
expect_error 2 "^slicesim: $T/bbad2.csv:1: header: missing column Request tokens\$" \
    "$S" trace stats "$T/bbad2.csv"

# ---- bad gen options: exit 2 (1 for I/O), no output file, no leftover .tmp --------------
expect_error 2 '^slicesim: trace gen: --rate: must be > 0' \
    "$S" trace gen --rate 0 --requests 5 -o "$T/x.csv"
expect_error 2 '^slicesim: trace gen: --rate: must be > 0' \
    "$S" trace gen --rate -2 --requests 5 -o "$T/x.csv"
expect_error 2 "^slicesim: trace gen: --prompt: 'lognormal:abc:1': MEDIAN: not a number" \
    "$S" trace gen --prompt lognormal:abc:1 --requests 5 -o "$T/x.csv"
expect_error 2 '^slicesim: trace gen: need exactly one of --duration and --requests' \
    "$S" trace gen --requests 5 --duration 3 -o "$T/x.csv"
expect_error 2 '^slicesim: trace gen: need exactly one of --duration and --requests' \
    "$S" trace gen -o "$T/x.csv"
expect_error 2 '^slicesim: trace gen: need -o FILE' "$S" trace gen --requests 5
expect_error 2 '^slicesim: trace gen: --cv needs --arrival gamma' \
    "$S" trace gen --cv 2 --requests 5 -o "$T/x.csv"
expect_error 2 '^slicesim: trace gen: --arrival' \
    "$S" trace gen --arrival weibull --requests 5 -o "$T/x.csv"
[ ! -e "$T/x.csv" ] && [ -z "$(tmp_of "$T/x.csv")" ] || fail "a refused gen left a file"
expect_error 1 "^slicesim: trace gen: $T/no/dir/x.csv: cannot create: No such file" \
    "$S" trace gen --requests 5 -o "$T/no/dir/x.csv"
if [ -w /dev/full ]; then
    "$S" trace gen --requests 100000 -o - >/dev/full 2>"$T/err"
    rc=$?
    [ $rc -eq 1 ] && grep -q '^slicesim: trace gen: write failed' "$T/err" ||
        fail "gen to a full disk: exit $rc, stderr $(cat "$T/err")"
fi
# An existing file is replaced only when the new one is complete.
echo keep >"$T/keep.csv"
"$S" trace gen --rate 0 --requests 5 -o "$T/keep.csv" 2>/dev/null
[ "$(cat "$T/keep.csv")" = keep ] || fail "a refused gen touched the existing output"

# ---- real public traces, when present ---------------------------------------------------
CONV=$DATA/traces/azure-llm-2023/AzureLLMInferenceTrace_conv.csv
if [ -r "$CONV" ]; then
    "$S" trace stats --json "$CONV" >"$T/conv.json" || fail "stats $CONV exit $?"
    [ "$(json_num "$T/conv.json" requests)" = 19366 ] || fail "conv: want 19366 requests"
    [ "$(json_num "$T/conv.json" p99 prompt)" = 4142 ] || fail "conv: prompt p99"
    grep -q '"format":"azure"' "$T/conv.json" || fail "conv: not detected as azure"
else
    echo "note: $CONV absent, real-trace checks skipped"
fi
MOON=$DATA/traces/mooncake/synthetic_trace.jsonl
if [ -r "$MOON" ]; then
    "$S" trace stats --json "$MOON" >"$T/moon.json" || fail "stats $MOON exit $?"
    grep -q '"format":"mooncake"' "$T/moon.json" || fail "moon: not detected as mooncake"
    [ "$(json_num "$T/moon.json" requests)" = "$(wc -l <"$MOON")" ] ||
        fail "moon: requests $(json_num "$T/moon.json" requests), want $(wc -l <"$MOON") lines"
    "$S" trace stats --spread --json "$MOON" >"$T/moons.json" || fail "stats --spread $MOON"
    [ "$(json_num "$T/moons.json" requests)" = "$(json_num "$T/moon.json" requests)" ] ||
        fail "moon: --spread changed the request count"
    [ "$(json_num "$T/moons.json" span_s)" = "$(json_num "$T/moon.json" span_s)" ] ||
        fail "moon: --spread changed the span"
else
    echo "note: $MOON absent, Mooncake checks skipped"
fi
VID=$DATA/traces/vidur/arxiv_summarization_stats_llama2_tokenizer_filtered_v2.csv
if [ -r "$VID" ]; then
    expect_error 2 ":1: header: missing column arrived_at\$" "$S" trace stats "$VID"
fi
echo "trace_cli: all checks passed"
exit 0
