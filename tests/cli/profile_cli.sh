#!/bin/bash
# CLI tests of `slicesim profile import` and the profile-table cost models: --help, the error
# contract (exit 2, one "slicesim: FILE:LINE: column: ..." line) on hand-made bad inputs; then,
# with Vidur's public profiles from $SLICESIM_DATA (skipped, exit 77, when absent), an import
# into a temporary catalog whose fidelity report lists every operator with its MAPE, and
# replays with --cost profile and --cost auto that run and differ from --cost roofline.
# The shared data is read in place; nothing is imported into the source tree.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
TRACE=$ROOT/traces/azure-conv-synth.csv
VIDUR=${SLICESIM_DATA:-${SS_SHARED_DATA:-$ROOT/../shared/data}}/profiles/vidur

"$S" profile import --help >help || fail "profile import --help exited non-zero"
for o in --from --gpu --profiles -o --json; do
    grep -q -- "$o" help || fail "--help does not mention $o"
done
"$S" profile --help >/dev/null || fail "profile --help exited non-zero"
"$S" --help | grep -q '^  profile ' || fail "slicesim --help does not list profile"

# Errors that need no shared data.
H='time_stats.emb.min,time_stats.emb.median,n_head,num_tokens'
printf '%s\n1,2,32,8\n' "$H" >nomed.csv
expect_error 2 '^slicesim: --from: unknown source format .x' "$S" profile import --from x \
    --gpu a100-80g nomed.csv
expect_error 2 "^slicesim: --gpu: unknown GPU 'b200'" "$S" profile import --from vidur \
    --gpu b200 nomed.csv
expect_error 2 '^slicesim: nomed.csv:1: time_stats.input_layernorm.median: missing column' \
    "$S" profile import --from vidur --gpu a100-80g -o imported nomed.csv
expect_error 2 '^slicesim: missing.csv: cannot open' "$S" profile import --from vidur \
    --gpu a100-80g -o imported missing.csv
expect_error 2 '^slicesim: profile import: no input FILE' "$S" profile import --from vidur \
    --gpu a100-80g
expect_error 2 '^slicesim: .*unknown option|^slicesim: .*bad option' "$S" profile import --frob
[ ! -e imported ] || [ -z "$(ls imported)" ] || fail "a failed import wrote $(ls imported)"

# A catalog of our own (hardware and models copied) to put tables next to.
mkdir -p cat/a100-80g && cp -r "$ROOT/profiles/hardware" "$ROOT/profiles/models" "$ROOT/profiles/engines" cat/ ||
    fail "copying the catalog"
printf 'op,tp,tokens,median_us\nqkv,1,12,fast\n' >cat/a100-80g/bad.csv
expect_error 2 'cat/a100-80g/bad.csv:2: median_us: ' "$S" replay --profiles cat --cost profile \
    --trace "$TRACE" --limit 10 --db none
expect_error 2 "unknown cost model 'magic' \\(known: roofline, profile, auto\\)" "$S" replay \
    --profiles cat --cost magic --trace "$TRACE" --limit 10 --db none
rm cat/a100-80g/bad.csv

[ -d "$VIDUR" ] || { echo "skip: no Vidur profiles in $VIDUR"; exit 77; }
MLP=$VIDUR/compute/a100/meta-llama/Llama-2-7b-hf/mlp.csv

# Non-numeric cell in a copy of a real row.
head -2 "$MLP" | sed '2s/^[^,]*,/abc,/' >nonnum.csv
expect_error 2 '^slicesim: nonnum.csv:2: time_stats.emb.min: not a non-negative number' \
    "$S" profile import --from vidur --gpu a100-80g -o imported nonnum.csv

# The import and its fidelity report.
"$S" profile import --from vidur --gpu a100-80g --profiles cat "$MLP" \
    "$VIDUR/network/a100_dgx/all_reduce.csv" >report 2>err || fail "import: $(cat err)"
[ -s err ] && fail "import wrote to stderr: $(cat err)"
[ -f cat/a100-80g/llama-2-7b.csv ] || fail "no cat/a100-80g/llama-2-7b.csv: $(ls cat/a100-80g)"
[ -f cat/a100-80g/all_reduce-a100_dgx.csv ] || fail "no all_reduce table: $(ls cat/a100-80g)"
ls cat/a100-80g | grep -q '\.tmp$' && fail "a .tmp file was left behind"
grep -q 'roofline: llama-2-7b' report || fail "report lacks the matched model: $(head -3 report)"
for op in embed norm qkv rope o_proj residual mlp_up act mlp_down; do
    for tp in 1 2 4 8; do
        re="^  $op +$tp +259 +1\.\.4096 +[0-9.]+\.\.[0-9.]+ +[0-9]+\.[0-9] +[-+][0-9]+\.[0-9]$"
        grep -Eq "$re" report || fail "no $op row at TP $tp with a MAPE: $(grep "^  $op " report)"
    done
done
grep -Eq '^  all_reduce +8 +993 +2048\.\.67108864 .* [0-9]+\.[0-9] ' report ||
    fail "report lacks all_reduce over 8 GPUs"
"$S" profile import --from vidur --gpu a100-80g -o json --json "$MLP" >report.json ||
    fail "import --json"
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); o=d["imports"][0]["ops"]; \
assert len(o)==36 and all(x["roofline_mape_pct"]>0 for x in o), o' report.json ||
        fail "bad JSON report"
fi
grep -q '"op": "norm", "tp": 4, "rows": 259' report.json || fail "JSON lacks norm at TP 4"

# Replays with the tables differ from the roofline; auto and profile both run.
for c in roofline profile auto; do
    "$S" replay --profiles cat --cost "$c" --trace "$TRACE" --limit 200 --db none --json \
        >"$c.json" 2>"$c.err" || fail "replay --cost $c: $(cat "$c.err")"
    sed 's/"wall_s": [0-9.e-]*,//' "$c.json" >"$c.cmp"
done
grep -q '"completed": 200' profile.json || fail "profile replay: $(cat profile.json)"
cmp -s roofline.cmp profile.cmp && fail "--cost profile gives the roofline's results"
cmp -s roofline.cmp auto.cmp && fail "--cost auto gives the roofline's results"
[ "$(grep -c 'roofline for attn_prefill, attn_decode, lm_head' profile.err)" = 1 ] ||
    fail "want one note on the operators that fall back: $(cat profile.err)"
"$S" replay --profiles cat --cost profile --trace "$TRACE" --limit 200 --db none --json \
    --tp 2 >tp2.json 2>/dev/null || fail "replay --cost profile --tp 2"
"$S" replay --profiles cat --cost profile --trace "$TRACE" --limit 200 --db none --json \
    >again.json 2>/dev/null || fail "second profile replay"
sed 's/"wall_s": [0-9.e-]*,//' again.json | cmp -s - profile.cmp || fail "not deterministic"
echo "ok"
