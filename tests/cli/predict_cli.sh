#!/bin/bash
# CLI tests of what SliceScheduler's what-ifs know (docs/guide/slicescheduler.md, "What a what-if knows"): the keys
# policy.slice_output_predictor and policy.slice_cost_error, from --set and from a scenario
# file; a bad value is one stderr line naming the key, exit status 2; the run's JSON names the
# predictor and the cost error in its "slice" object; a noisy predictor gives the same results
# for the same seed, and others than the oracle's.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
SV=$ROOT/experiments/slice-vs-container.ini
SHORT=(--set policy.ops=slice --set run.duration_s=90 --set run.warmup_s=10 --db none)

# ---- bad values ------------------------------------------------------------------------
for bad in median quantile:0 quantile:1 quantile:x noisy:-1 noisy:11 mean:2 Mean; do
    expect_error 2 "^slicesim: replay: slice: policy\.slice_output_predictor: expected oracle, mean, quantile:Q \(0 < Q < 1\) or noisy:CV \(0 <= CV <= 10\), got '$bad'$" \
        "$S" replay -c "$SV" "${SHORT[@]}" --set "policy.slice_output_predictor=$bad"
done
for bad in 1 -1 x; do
    expect_error 2 "^slicesim: replay: slice: slice_cost_error: " \
        "$S" replay -c "$SV" "${SHORT[@]}" --set "policy.slice_cost_error=$bad"
done
# from a scenario file (its trace path made absolute, the file being elsewhere)
sed -e 's/^ops = home/ops = slice\nslice_output_predictor = quantile:1.5/' \
    -e "s#\.\./traces#$ROOT/traces#" "$SV" >bad.ini
expect_error 2 "policy\.slice_output_predictor: .*got 'quantile:1\.5'$" "$S" replay -c bad.ini --db none

# ---- the report --------------------------------------------------------------------------
strip() { sed -e 's/"\([a-z_]*wall_s\)": [0-9.e+-]*/"\1": 0/g' -e 's/"decisions_per_s": [0-9.e+-]*/"decisions_per_s": 0/g'; }
run() { "$S" replay -c "$SV" "${SHORT[@]}" --json "$@" | strip; }
run >default.json || fail "replay under slice failed"
grep -q '"output_predictor": "mean", "cost_error": 0}' default.json ||
    fail "the slice object does not name the default predictor: $(grep -o '"slice": {[^}]*}[^}]*}' default.json)"
run --set policy.slice_output_predictor=noisy:0.5 --set policy.slice_cost_error=0.06 >noisy1.json ||
    fail "replay with the noisy predictor failed"
grep -q '"output_predictor": "noisy:0.5", "cost_error": 0.06}' noisy1.json ||
    fail "the slice object does not name noisy:0.5 and 0.06"
run --set policy.slice_output_predictor=noisy:0.5 --set policy.slice_cost_error=0.06 >noisy2.json ||
    fail "replay with the noisy predictor failed"
cmp -s noisy1.json noisy2.json || fail "noisy:0.5: two runs of the same seed differ"
run --set policy.slice_output_predictor=oracle >oracle.json || fail "replay with the oracle failed"
grep -q '"output_predictor": "oracle", "cost_error": 0}' oracle.json || fail "no oracle in the report"
# what the what-ifs know changes what SliceScheduler does, not the keys reported
norm() { sed -e 's/"slice": {.*//' "$1"; }
! cmp -s <(norm noisy1.json) <(norm oracle.json) || fail "noisy:0.5 decided exactly as the oracle did"
! cmp -s <(norm default.json) <(norm oracle.json) || fail "mean decided exactly as the oracle did"
run --set policy.slice_output_predictor=quantile:0.9 >q90.json || fail "replay with quantile:0.9 failed"
grep -q '"output_predictor": "quantile:0.9"' q90.json || fail "no quantile:0.9 in the report"
# ops = home never forks: the keys are read and reported by SliceScheduler only
"$S" replay -c "$SV" --set run.duration_s=30 --set run.warmup_s=10 --db none --json >home.json ||
    fail "replay under home failed"
! grep -q output_predictor home.json || fail "a run without SliceScheduler reports a predictor"
echo "predict_cli: ok"
