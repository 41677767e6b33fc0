#!/bin/bash
# CLI tests of `slicesim calibrate` and `slicesim validate` without a GPU, through the `sim`
# executor (the roofline plays the GPU): a calibrated table has one row per grid point, loads
# as a profile table, and reproduces the roofline at its points; an interrupted calibration
# (--limit-points, or a torn last line) resumes to the same table; a partial table from other
# settings is refused until --restart; validate against the roofline itself shows no error and
# stores the validation; against the calibrated table it shows the interpolation's small error.
# Then the no-GPU contract of --backend cuda and the usage errors.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
mkdir cat && cp -r "$ROOT/profiles/hardware" "$ROOT/profiles/models" "$ROOT/profiles/engines" cat/ || fail "catalog copy"

"$S" calibrate --help >help || fail "calibrate --help exited non-zero"
for o in --gpu-index --model --tp --grid -o --backend --limit-points --restart --selftest; do
    grep -q -- "$o" help || fail "calibrate --help does not mention $o"
done
"$S" validate --help >vhelp || fail "validate --help exited non-zero"
for o in --trace --model --limit --iters --cost --backend --db --json; do
    grep -q -- "$o" vhelp || fail "validate --help does not mention $o"
done
"$S" --help | grep -q '^  calibrate ' || fail "slicesim --help does not list calibrate"
"$S" --help | grep -q '^  validate ' || fail "slicesim --help does not list validate"

CAL=("$S" calibrate --backend sim --gpu h200 --model llama-3-8b --tp 2 --profiles cat -q)

# ---- a whole quick grid in one go -----------------------------------------------------------
"${CAL[@]}" -o full >report || fail "calibrate (sim) failed"
TAB=full/llama-3-8b-tp2.csv
[ -f "$TAB" ] || fail "no table $TAB"
[ ! -e "$TAB.partial" ] || fail "the partial table was left behind"
grep -q '^# gpu: h200$' "$TAB" || fail "table metadata lacks the GPU"
grep -q '^# settings: model=llama-3-8b tp=2 ' "$TAB" || fail "table metadata lacks the settings"
grep -q '^# throttled: no$' "$TAB" || fail "table metadata lacks the throttle flag"
grep -q '^# sensors_during: unavailable' "$TAB" || fail "table metadata lacks the sensors read during the sweep"
rows() { grep -v '^#' "$1" | tail -n +2; }
# quick grid: 13 token counts for each of 10 dense operators, 9 for lm_head, 21 prefill and
# 20 decode attention points (the decode grid stops at 2 M KV tokens)
for op in embed norm qkv rope o_proj residual mlp_up act mlp_down; do
    n=$(rows "$TAB" | grep -c "^$op,")
    [ "$n" -eq 13 ] || fail "$op: $n rows, want 13"
done
[ "$(rows "$TAB" | grep -c '^lm_head,')" -eq 9 ] || fail "lm_head rows"
[ "$(rows "$TAB" | grep -c '^attn_prefill,')" -eq 21 ] || fail "attn_prefill rows"
[ "$(rows "$TAB" | grep -c '^attn_decode,')" -eq 20 ] || fail "attn_decode rows"
rows "$TAB" | grep -q '^all_reduce,' && fail "all_reduce cannot be measured on one GPU"
rows "$TAB" | grep -q '^pp_send,' && fail "pp_send without a second GPU"
# keys: per-GPU shape of TP 2 is measured, the model's shape keys are written
rows "$TAB" | grep -q '^qkv,4096,32,8,128,-,-,-,-,-,2,512,-,-,-,' || fail "qkv row keys"
rows "$TAB" | grep -q '^attn_decode,-,32,8,128,-,-,-,-,-,2,16,8192,-,-,' || fail "decode keys"
# the report compares every operator with the roofline: the sim executor IS the roofline
grep -q 'ROOFLINE_MAPE' report || fail "no fidelity report"
awk '$1 ~ /^(qkv|attn_decode|mlp_up)$/ && $4 != "0.0" {bad=1} END {exit bad}' report ||
    fail "the sim executor's table differs from the roofline: $(cat report)"

# ---- the table works as a profile table --------------------------------------------------------
mkdir -p cat/h200 && cp "$TAB" cat/h200/ || fail "install table"
"$S" replay --gpu h200 --model llama-3-8b --tp 2 --replicas 1 --limit 40 --cost profile \
    --profiles cat --db none --json >prof.json 2>prof.err || fail "replay --cost profile: $(cat prof.err)"
grep -q 'from tables in cat/h200; roofline for all_reduce$' prof.err ||
    fail "operators other than all_reduce fell back to the roofline: $(cat prof.err)"

# ---- resume: --limit-points, a torn line, then the rest ------------------------------------------
"${CAL[@]}" -o part --limit-points 25 >/dev/null 2>err && fail "--limit-points run exited 0"
grep -q 'stopped after 25 new points' err || fail "no resume note: $(cat err)"
P=part/llama-3-8b-tp2.csv.partial
[ -f "$P" ] || fail "no partial table"
[ "$(rows "$P" | wc -l)" -eq 25 ] || fail "partial table has $(rows "$P" | wc -l) rows"
[ ! -e part/llama-3-8b-tp2.csv ] || fail "a final table after an interrupted run"
printf 'qkv,4096,32,8,128,-,-,-,-,-,2,99' >>"$P" # killed in the middle of a row
"${CAL[@]}" -o part --limit-points 30 >/dev/null 2>&1
[ "$(rows "$P" | wc -l)" -eq 55 ] || fail "resumed partial has $(rows "$P" | wc -l) rows, want 55"
"${CAL[@]}" -o part >/dev/null || fail "resumed calibration failed"
diff <(rows part/llama-3-8b-tp2.csv) <(rows "$TAB") >/dev/null ||
    fail "a resumed table differs from a run in one go"
[ ! -e "$P" ] || fail "the partial table outlived the finished one"

# ---- a planted partial table (a link, a FIFO) is refused, not written through nor waited on --
mkdir planted && echo victim >victim.txt && ln -s ../victim.txt planted/llama-3-8b-tp2.csv.partial
expect_error 2 'planted/llama-3-8b-tp2.csv.partial: not a regular file \(a symbolic link\)' \
    timeout 20 "${CAL[@]}" -o planted
[ "$(cat victim.txt)" = victim ] || fail "calibrate wrote through a planted link"
ln -s ../nowhere.txt planted/llama-3-8b-tp2.csv.partial -f
expect_error 2 'not a regular file \(a symbolic link\)' timeout 20 "${CAL[@]}" -o planted
[ ! -e nowhere.txt ] || fail "calibrate created a dangling link's target"
rm planted/llama-3-8b-tp2.csv.partial && mkfifo planted/llama-3-8b-tp2.csv.partial
expect_error 2 'not a regular file \(a FIFO, device or folder\)' timeout 20 "${CAL[@]}" -o planted

# ---- other settings: refused, then --restart ----------------------------------------------------
"${CAL[@]}" -o other --limit-points 3 >/dev/null 2>&1
expect_error 2 'partial table measured with other settings.*--restart' \
    "${CAL[@]}" -o other --reps 5
"${CAL[@]}" -o other --reps 5 --restart >/dev/null || fail "--restart failed"
grep -q 'reps=5' other/llama-3-8b-tp2.csv || fail "--restart kept the old settings"
"${CAL[@]}" -o ops --ops qkv,attn_decode >/dev/null || fail "--ops failed"
[ "$(rows ops/llama-3-8b-tp2.csv | cut -d, -f1 | sort -u | tr '\n' ' ')" = "attn_decode qkv " ] ||
    fail "--ops measured other operators"

# ---- validate ---------------------------------------------------------------------------------------
VAL=("$S" validate --backend sim --gpu h200 --model llama-3-8b --tp 2 --limit 24 --iters 40
     --profiles cat -q)
"${VAL[@]}" --db v.db >val.txt || fail "validate (sim) failed"
grep -q '^  iteration .* 0.0 \+ *+0.0' val.txt || fail "roofline vs itself is not exact: $(cat val.txt)"
[ "$(sql v.db 'SELECT count(*) FROM validations')" = 1 ] || fail "validation not stored"
[ "$(sql v.db 'SELECT iterations FROM validations')" = 40 ] || fail "iterations stored"
[ "$(sql v.db 'SELECT count(*) FROM validation_iters')" = 40 ] || fail "iteration rows"
[ "$(sql v.db 'SELECT max(abs(error_pct)) FROM validation_iters')" = 0.0 ] ||
    fail "iteration errors against the roofline itself"
[ "$(sql v.db "SELECT executions FROM validation_ops WHERE op = 'qkv'")" = \
  "$(sql v.db 'SELECT 32 * iterations FROM validations')" ] || fail "qkv runs once per layer"
sql v.db "SELECT count(*) FROM validation_ops WHERE op = 'all_reduce'" | grep -qx 0 ||
    fail "all_reduce is not executed on one GPU"
"${VAL[@]}" --cost profile --db v.db --json >val.json || fail "validate --cost profile failed"
python3 - val.json <<'EOF' || fail "validate --cost profile: unexpected errors"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["cost_model"] == "profile" and d["iterations"] == 40, d
# interpolating the quick grid is close to the roofline it sampled, but not exact
assert 0 < d["iteration_mape_pct"] < 5, d["iteration_mape_pct"]
ops = {o["op"]: o for o in d["ops"]}
assert ops["embed"]["mape_pct"] < 0.01, ops["embed"]   # 1 token: a grid point
assert len(d["worst_iterations"]) == 5
EOF
[ "$(sql v.db 'SELECT count(*) FROM validations')" = 2 ] || fail "second validation not stored"
# db merge copies validations with their rows (it used to drop them), and only once
"$S" db merge m.db v.db >merge.out 2>&1 || fail "db merge: $(cat merge.out)"
grep -q '2 validations added, 0 skipped' merge.out || fail "db merge: $(cat merge.out)"
"$S" db merge m.db v.db >merge2.out 2>&1 || fail "second db merge: $(cat merge2.out)"
grep -q '0 validations added, 2 skipped' merge2.out || fail "second db merge: $(cat merge2.out)"
for q in "SELECT count(*) FROM validations" "SELECT count(*) FROM validation_ops" \
         "SELECT count(*) FROM validation_iters" "SELECT sum(measured_ms) FROM validation_iters" \
         "SELECT group_concat(mape_pct) FROM validations"; do
    [ "$(sql m.db "$q")" = "$(sql v.db "$q")" ] || fail "db merge: $q: $(sql m.db "$q") vs $(sql v.db "$q")"
done
[ "$(sql m.db 'SELECT count(*) FROM validation_ops o JOIN validations v USING (validation_id)')" = \
  "$(sql v.db 'SELECT count(*) FROM validation_ops')" ] || fail "db merge: operator rows lost their validation"
# a busier schedule batches several prompts into one prefill: the tables hold one sequence per
# point, and a batch is not priced as one sequence of all its tokens (that was +38 %, worst
# +177 %, on this run)
"${VAL[@]}" --cost profile --rate-scale 8 --db v.db --json >val8.json ||
    fail "validate --cost profile --rate-scale 8 failed"
[ "$(sql v.db 'SELECT count(*) FROM validation_iters WHERE validation_id = 3 AND prefills > 1')" \
    -gt 0 ] || fail "rate x8: no iteration batched several prefills"
python3 - val8.json <<'EOF' || fail "validate --cost profile --rate-scale 8: prefill attention"
import json, sys
ops = {o["op"]: o for o in json.load(open(sys.argv[1]))["ops"]}
assert ops["attn_prefill"]["mape_pct"] < 6, ops["attn_prefill"]
assert ops["attn_prefill"]["worst_pct"] < 15, ops["attn_prefill"]
EOF

# ---- no GPU, bad usage --------------------------------------------------------------------------
if "$S" calibrate --model llama-2-7b --selftest -q >gpu.out 2>gpu.err; then
    echo "calibrate: a GPU is present here; the no-GPU contract is not checked" >&2
else
    [ "$(wc -l <gpu.err)" -eq 1 ] || fail "no-GPU: want one stderr line: $(cat gpu.err)"
    grep -Eq '^slicesim: calibrate: nothing measured: (no CUDA GPU found|no GPU executor in this build)' \
        gpu.err || fail "no-GPU message: $(cat gpu.err)"
    expect_error 1 'nothing measured' "$S" calibrate --model llama-2-7b --profiles cat -o x
    [ ! -e x ] || fail "calibrate without a GPU created its output directory"
    expect_error 1 'nothing measured' "$S" validate --model llama-2-7b --profiles cat --db none
fi
expect_error 2 "unknown model 'llama-9b'" "${CAL[@]}" --model llama-9b -o bad
expect_error 2 '^slicesim: --tp: 3 does not divide' "${CAL[@]}" --tp 3 -o bad
expect_error 2 '^slicesim: --grid: expected quick or full' "${CAL[@]}" --grid huge -o bad
expect_error 2 "^slicesim: --ops: unknown or unmeasurable operator 'all_reduce'" \
    "${CAL[@]}" --ops qkv,all_reduce -o bad
expect_error 2 '^slicesim: --backend: expected cuda or sim' "${CAL[@]}" --backend tpu -o bad
expect_error 2 '^slicesim: --gpu: required with --backend sim' "$S" calibrate --backend sim \
    --model llama-2-7b --profiles cat -o bad
expect_error 2 '^slicesim: --reps: expected an integer' "${CAL[@]}" --reps 0 -o bad
[ ! -e bad ] || fail "a refused calibration created its output directory"
expect_error 2 '^slicesim: --model: required' "$S" validate --backend sim --gpu h200
expect_error 2 "unknown model 'llama-9b'" "$S" validate --backend sim --gpu h200 \
    --model llama-9b --profiles cat --db none
expect_error 2 'nosuch.csv' "$S" validate --backend sim --gpu h200 --model llama-2-7b \
    --profiles cat --db none --trace nosuch.csv
expect_error 2 'one tenant of one container without pipeline stages' "$S" validate \
    --backend sim --gpu h200 --model llama-2-7b --profiles cat --db none \
    --set tenant.validate.pp=2
echo "calibrate_cli: ok"
