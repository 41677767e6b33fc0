#!/bin/bash
# CLI tests of `slicesim fit DIR`: (a) the error contract (a runs.csv missing a column, an
# unknown model or GPU, a bad number in stages.csv, a missing trace, a stage of an unknown run,
# a latency no server has, a hex number, a stage the replay cannot serve, bad options: one line
# "FILE:LINE: field: ..." or naming the option, exit 2, no output file left); (b) recovery:
# stages simulated under a known engine ("truth") are fitted from another start, and the fitted
# terms come back within a stated tolerance, deterministically, into a profile that loads, and
# a database row; (c) a fit --jobs 2 ended by a signal leaves no replay process running; (d)
# with the real serving runs of $SLICESIM_DATA (skipped when absent): `fit --evaluate` gives
# bench/fidelity.sh's per-stage numbers.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
DATA=${SLICESIM_DATA:-${SS_SHARED_DATA:-$ROOT/../shared/data}}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
pid=0 kids=
trap 'kill -9 $kids 2>/dev/null; [ "$pid" -gt 0 ] && kill -9 $pid 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1

# ---- a tiny directory of serving runs --------------------------------------------------------
# Two runs of llama-2-7b on h100-sxm, TP 1 and TP 2 (so the all-reduce hop latency matters),
# each of two stages at 3 and 9 req/s (30 and 45 requests), 48 output tokens per request.
mkdir -p data/traces
"$S" trace gen -r 3 -n 30 -p lognormal:500:0.4:32:1500 -O fixed:48 -s 1 -t s0 -o s0.csv &&
    "$S" trace gen -r 9 -n 45 -p lognormal:500:0.4:32:1500 -O fixed:48 -s 2 -t s1 -o s1.csv ||
    fail "trace gen"
# stage 1 starts 5 s after stage 0's last arrival; ids continue
start1=$(tail -n 1 s0.csv | awk -F, '{printf "%.6f", $2 + 5}')
{ cat s0.csv; tail -n +2 s1.csv | awk -F, -v off="$start1" -v OFS=, '{$1 = $1 + 30; $2 = sprintf("%.6f", $2 + off); print}'; } \
    >data/traces/two.csv
cat >data/runs.csv <<CSV
run,catalog_model,gpu,tp,max_num_seqs,max_num_batched_tokens,max_model_len,gpu_memory_utilization,output_len,trace,trace_stage_starts,notes
r-tp1,llama-2-7b,h100-sxm,1,128,2048,4096,0.9,48,traces/two.csv,0;$start1,
r-tp2,llama-2-7b,h100-sxm,2,128,2048,4096,0.9,48,traces/two.csv,0;$start1,
r-skip,,h100-sxm,1,128,2048,4096,0.9,48,,,not in the catalog
CSV
# placeholder stages: which stages exist, nothing measured (empty = not measured)
cat >data/stages.csv <<CSV
run,stage,rate,ttft_mean_ms,ttft_p90_ms,e2e_mean_ms,e2e_p90_ms
r-tp1,0,3,,,,
r-tp1,1,9,,,,
r-tp2,0,3,,,,
r-tp2,1,9,,,,
r-skip,0,1,5,6,7,8
CSV

# A catalog with the truth and a start engine (no [gpu.NAME] sections: the terms hold as set).
mkdir cat && cp -r "$ROOT/profiles/hardware" "$ROOT/profiles/models" "$ROOT/profiles/engines" cat/ ||
    fail "catalog copy"
engine() { # NAME ITER_FIXED_US HOP_LATENCY_US FRONTEND_MS: the shipped eager engine with these
    # terms and without its [gpu.NAME] sections (whatever other keys the format has)
    sed -e "s/^name = .*/name = $1/" -e "s/^iter_fixed_us = .*/iter_fixed_us = $2/" \
        -e "s/^hop_latency_us = .*/hop_latency_us = $3/" -e "s/^frontend_ms = .*/frontend_ms = $4/" \
        -e '/^\[gpu\./,$d' "$ROOT/profiles/engines/vllm-eager.ini"
}
engine truth 1500 8 12 >cat/engines/truth.ini
engine start 600 0 0 >cat/engines/start.ini

# The stages of the truth, simulated (a different file: fit refuses to overwrite its input).
"$S" fit data --profiles cat --evaluate --engine truth --write-stages sim.csv >ev.txt 2>err ||
    fail "evaluate truth: $(cat err)"
grep -q "note: data/runs.csv:4: run 'r-skip' skipped: no catalog model" err ||
    fail "no note of the skipped run: $(cat err)"
[ "$(wc -l <sim.csv)" -eq 5 ] || fail "--write-stages: $(cat sim.csv)"
head -n 1 sim.csv | grep -qx 'run,stage,rate,completed,ttft_mean_ms,ttft_p90_ms,itl_ms,e2e_mean_ms,e2e_p90_ms' ||
    fail "--write-stages header: $(head -n 1 sim.csv)"
grep -q '^r-tp2,1,9,45,' sim.csv || fail "--write-stages rows: $(cat sim.csv)"
mv sim.csv data/stages.csv
echo "r-skip,0,1,,5,6,7,8,9" >>data/stages.csv # a stage of a skipped run is left alone
"$S" fit data --profiles cat --evaluate --engine truth --json >truth.json 2>err ||
    fail "evaluate truth on its own stages: $(cat err)"
python3 - truth.json <<'PY' || fail "truth against its own stages: $(cat truth.json)"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["objective"] == 0 and j["n_fitted"] == 4 and j["mode"] == "evaluate", j
assert all(m["mape_pct"] == 0 for m in j["metrics"].values()), j["metrics"]
PY
# The engine by its file's path (what an earlier fit wrote) evaluates as the catalog's does.
engine truth 1500 8 12 >truth-file.ini
"$S" fit data --profiles "$ROOT/profiles" --evaluate --engine ./truth-file.ini --json \
    >truth-file.json 2>err || fail "evaluate --engine FILE: $(cat err)"
[ "$(sed 's/"wall_s": [0-9.]*//' truth.json)" = "$(sed 's/"wall_s": [0-9.]*//' truth-file.json)" ] ||
    fail "--engine FILE: $(diff truth.json truth-file.json | head -5)"
expect_error 2 "^slicesim: fit: --engine: \./none\.ini: " \
    "$S" fit data --profiles cat --evaluate --engine ./none.ini

# ---- (a) the error contract ------------------------------------------------------------------
# bad DIR EDIT...: a copy of data with one file edited by sed; the fit must exit 2 with one
# line and leave no output.
bad() {
    rm -rf bad && cp -r data bad || fail "copy"
    local file=$1
    shift
    sed -i "$@" "bad/$file" || fail "sed $*"
}
fit_bad() { # REGEX [OPTION]: one error line, exit 2, no profile, stages or database written
    expect_error 2 "$1" "$S" fit bad --profiles cat --engine start -o o.ini --write-stages w.csv \
        --db f.db --no-progress ${2:-}
    [ ! -e o.ini ] && [ ! -e w.csv ] && [ ! -e f.db ] || fail "an output was written: $(ls)"
    ls | grep -q '\.tmp$' && fail "a temporary file was left: $(ls)"
}
bad runs.csv '1s/,catalog_model,/,model,/'
fit_bad '^slicesim: fit: bad/runs\.csv:1: catalog_model: missing column$'
bad runs.csv '2s/,llama-2-7b,/,llama-9,/'
fit_bad "^slicesim: fit: bad/runs\.csv:2: catalog_model: unknown model 'llama-9' \(known: .*llama-2-7b"
bad runs.csv '3s/,h100-sxm,/,h900,/'
fit_bad "^slicesim: fit: bad/runs\.csv:3: gpu: unknown GPU 'h900' \(known: .*h100-sxm"
bad stages.csv '3s/^\(r-tp1,1,9,[0-9]*,\)[^,]*,/\1abc,/'
fit_bad "^slicesim: fit: bad/stages\.csv:3: ttft_mean_ms: 'abc' is not a decimal number > 0 \(ms\)$"
bad runs.csv '3s|traces/two.csv|traces/missing.csv|'
fit_bad "^slicesim: fit: bad/runs\.csv:3: trace: cannot read 'bad/traces/missing\.csv': No such file or directory$"
bad stages.csv '$a r-tp3,0,,1,1,1,1,1,1'
fit_bad "^slicesim: fit: bad/stages\.csv:7: run: no run 'r-tp3' in bad/runs\.csv$"
bad stages.csv '$a r-tp1,2,,1,1,1,1,1,1'
fit_bad "^slicesim: fit: bad/stages\.csv:7: stage: run 'r-tp1' has 2 stages"
bad runs.csv '2s/,128,2048,/,0,2048,/'
fit_bad "^slicesim: fit: bad/runs\.csv:2: max_num_seqs: '0' is not an integer >= 1$"
bad runs.csv '2s/,0;[0-9.]*,$/,0;x,/'
fit_bad "^slicesim: fit: bad/runs\.csv:2: trace_stage_starts: '0;x' is not a ';' list"
bad stages.csv '1s/,e2e_p90_ms/,e2e_p99_ms/'
fit_bad '^slicesim: fit: bad/stages\.csv:1: e2e_p90_ms: missing column$'
bad traces/two.csv '5s/,s0,[0-9]*,/,s0,x,/'
for jobs in 1 4; do # in this process, and from a replay's own process
    fit_bad "^slicesim: fit: bad/runs\.csv:2: trace: replaying run 'r-tp1': bad/traces/two\.csv:5" \
        "--jobs $jobs"
done
# bad_field FILE LINE COLUMN VALUE: a copy of data with one field of FILE (by its header) set
bad_field() {
    rm -rf bad && cp -r data bad || fail "copy"
    awk -F, -v OFS=, -v line="$2" -v col="$3" -v val="$4" '
        NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; if (!c) exit 1 }
        NR == line { $c = val } { print }' "data/$1" >"bad/$1" || fail "no column $3 in $1"
}
# stages no server can have: a latency of 0, an E2E (mean or p90) not above its TTFT (an ITL
# of 0 or below, which the objective would drop)
bad_field stages.csv 2 ttft_mean_ms 0
fit_bad "^slicesim: fit: bad/stages\.csv:2: ttft_mean_ms: '0' is not a decimal number > 0 \(ms\)$"
bad_field stages.csv 3 e2e_mean_ms 1 # below any TTFT of the truth (12 ms of front end)
fit_bad "^slicesim: fit: bad/stages\.csv:3: e2e_mean_ms: '1' is not above ttft_mean_ms '[0-9.]+': a request's last token comes after its first$"
p90=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ttft_p90_ms") c = i } NR == 4 { print $c }' data/stages.csv)
bad_field stages.csv 4 e2e_p90_ms "$p90" # equal: not above either
fit_bad "^slicesim: fit: bad/stages\.csv:4: e2e_p90_ms: '$p90' is not above ttft_p90_ms '$p90': a request's last token comes after its first$"
# numbers are decimal, as in traces: no hex
bad_field stages.csv 2 ttft_p90_ms 0x26
fit_bad "^slicesim: fit: bad/stages\.csv:2: ttft_p90_ms: '0x26' is not a decimal number > 0 \(ms\)$"
bad_field runs.csv 3 gpu_memory_utilization 0x1p-1
fit_bad "^slicesim: fit: bad/runs\.csv:3: gpu_memory_utilization: '0x1p-1' is not a decimal number in \(0, 1\]$"
bad_field runs.csv 2 trace_stage_starts "0x0;$start1"
fit_bad "^slicesim: fit: bad/runs\.csv:2: trace_stage_starts: '0x0;[0-9.]*' is not a ';' list of increasing decimal times >= 0 \(s\)$"
# a stage of no time (it starts where the next does) cannot be replayed
bad_field runs.csv 2 trace_stage_starts "0;0"
fit_bad "^slicesim: fit: bad/runs\.csv:2: trace_stage_starts: '0;0' is not a ';' list of increasing times: stage 1 starts where stage 0 does or before, so it has no time of its own$"
# nor can a stage after the trace's end, or one whose every request the run's settings reject
bad_field runs.csv 2 trace_stage_starts "0;$start1;99999"
echo "r-tp1,2,,,1,2,,3,4" >>bad/stages.csv
fit_bad "^slicesim: fit: bad/stages\.csv:7: stage: run 'r-tp1' has no request in stage 2: bad/traces/two\.csv has none from 99999 s on$"
for jobs in 1 4; do
    bad_field runs.csv 3 max_model_len 16
    fit_bad "^slicesim: fit: bad/runs\.csv:3: max_model_len: all 30 requests of stage 0 of run 'r-tp2' are rejected in the replay \(most for: prompt longer than max_model_len 16\)$" \
        "--jobs $jobs"
done
# a UTF-8 byte-order mark, as editors save CSV, is no part of the first column's name
rm -rf bom && cp -r data bom && for f in runs.csv stages.csv; do
    printf '\xef\xbb\xbf' | cat - "data/$f" >"bom/$f" || fail "bom/$f"
done
"$S" fit bom --profiles cat --evaluate --engine truth --json >bom.json 2>err ||
    fail "runs.csv and stages.csv with a BOM: $(cat err)"
cmp -s <(sed 's/"wall_s": [0-9.e+-]*//; s/"dir": "bom"//' bom.json) \
    <(sed 's/"wall_s": [0-9.e+-]*//; s/"dir": "data"//' truth.json) ||
    fail "with a BOM the evaluation differs: $(diff bom.json truth.json)"
expect_error 2 "^slicesim: fit: --fit: unknown engine term 'iter_slow_us' \(fittable: iter_fixed_us," \
    "$S" fit data --profiles cat --fit iter_fixed_us,iter_slow_us
# every term the table has, launch_us (not fitted by default) included
expect_error 2 "^slicesim: fit: --fit: unknown engine term 'nope' \(fittable: iter_fixed_us,iter_per_seq_us,iter_per_token_us,op_floor_us,hop_latency_us,frontend_ms,attn_speed,launch_us\)$" \
    "$S" fit data --profiles cat --fit nope
expect_error 2 "^slicesim: fit: --engine: unknown engine 'nope' \(known: " \
    "$S" fit data --profiles cat --engine nope
expect_error 2 "^slicesim: fit: --runs: no run 'r-9' in data/runs\.csv$" \
    "$S" fit data --profiles cat --runs r-tp1,r-9
expect_error 2 "^slicesim: fit: --overlap: expected serial or max, got 'some'$" \
    "$S" fit data --profiles cat --overlap some
expect_error 2 "^slicesim: fit: data/stages\.csv: no stage to fit: none has a real TTFT mean below 0\.001 ms" \
    "$S" fit data --profiles cat --served-ms 0.001
expect_error 2 "^slicesim: fit: --write-stages data/stages\.csv is the same file as stages\.csv" \
    "$S" fit data --profiles cat --evaluate --write-stages data/stages.csv
# an output that cannot be written fails before the replays, not after the fit
expect_error 1 "^slicesim: fit: nodir/x\.ini: cannot create" "$S" fit data --profiles cat -o nodir/x.ini

# ---- (b) recovery ----------------------------------------------------------------------------
# From the start engine (iter_fixed 600 us, no hop latency, no front end) back to the truth
# (1500 us, 8 us, 12 ms): within 2 % (iter_fixed, frontend) and 10 % (hop latency, which
# moves only the TP-2 run), with an objective under 0.002 (0.2 % mean error).
"$S" fit data --profiles cat --engine start --fit iter_fixed_us,hop_latency_us,frontend_ms \
    --name rec -o rec.ini --json --db f.db --no-progress >rec.json 2>err ||
    fail "fit: $(cat err)"
python3 - rec.json <<'PY' || fail "recovery: $(cat rec.json)"
import json, sys
j = json.load(open(sys.argv[1]))
t = j["terms"]
def near(key, want, tol):
    got = t[key]["final"]
    assert abs(got - want) <= tol * want, f"{key}: {got}, want {want} within {tol:.0%}"
near("iter_fixed_us", 1500, 0.02)
near("hop_latency_us", 8, 0.10)
near("frontend_ms", 12, 0.02)
assert t["iter_fixed_us"]["start"] == 600 and t["iter_fixed_us"]["fitted"], t
assert not t["iter_per_seq_us"]["fitted"] and t["iter_per_seq_us"]["final"] == 20, t
assert j["objective"] < 0.002, j["objective"]
assert j["engine"] == "rec" and j["profile"] == "rec.ini" and j["evaluations"] > 10, j
PY
# the profile: its header, no [gpu.NAME] section, and it loads
grep -q "^; Engine profile fitted by \`slicesim fit\`" rec.ini || fail "profile header: $(cat rec.ini)"
grep -q "^; Command: slicesim fit data " rec.ini || fail "profile command: $(cat rec.ini)"
grep -q '^\[gpu\.' rec.ini && fail "the fitted profile has [gpu.NAME] sections"
awk 'length($0) > 100 { exit 1 }' rec.ini || fail "a line of the profile is over 100 characters"
cp rec.ini cat/engines/ && "$S" list engines --profiles cat >list 2>err || fail "list: $(cat err)"
grep -Eq '^rec +' list || fail "the fitted profile is not listed: $(cat list)"
# the fitted engine replays as written: its objective is the fit's
"$S" fit data --profiles cat --evaluate --engine rec --json >again.json 2>err || fail "evaluate rec"
python3 -c 'import json,sys; a,b=(json.load(open(f)) for f in sys.argv[1:]); assert a["objective"]==b["objective"], (a["objective"], b["objective"])' \
    rec.json again.json || fail "the profile does not reproduce the fit's objective"
# deterministic: the same command writes the same bytes (under the sanitizers a fit of 15
# iterations only adds the second fit that db merge counts below: the two 15-iteration fits
# after it, whose profiles must agree byte for byte, check the same there)
rm cat/engines/rec.ini && mv rec.ini rec1.ini
again=()
sanitized && again=(--iterations 15)
"$S" fit data --profiles cat --engine start --fit iter_fixed_us,hop_latency_us,frontend_ms \
    --name rec -o rec.ini --json --db f.db --no-progress ${again[@]+"${again[@]}"} >rec2.json 2>err ||
    fail "fit again: $(cat err)"
sanitized || cmp -s rec.ini rec1.ini || fail "two fits differ: $(diff rec.ini rec1.ini)"
# evaluations stopped between runs (once the runs replayed make the objective at least what
# Nelder-Mead compares it with) leave the fit as it is: the same profile, byte for byte, and
# the same JSON as replaying every run, one run at a time or two at once (one at a time only
# under the sanitizers, where replays in parallel are checked by --evaluate --jobs 3 below)
JOBS="1 2"
sanitized && JOBS=1
for j in $JOBS; do
    for full in "" --full-replays; do
        # shellcheck disable=SC2086
        "$S" fit data --profiles cat --engine start --fit iter_fixed_us,hop_latency_us,frontend_ms \
            --iterations 15 --name st -o "st$j$full.ini" --json --no-progress --jobs $j $full \
            >"st$j$full.json" 2>"st$j$full.err" || fail "fit --jobs $j $full: $(cat "st$j$full.err")"
    done
    nocmd() { awk '/^; Command:/ { skip = 1 } skip && /^;/ { next } { skip = 0; print }' "$1"; }
    cmp -s <(nocmd "st$j.ini") <(nocmd "st$j--full-replays.ini") ||
        fail "--jobs $j: stopped evaluations changed the profile: $(diff "st$j.ini" "st$j--full-replays.ini")"
    cmp -s <(sed 's/"wall_s": [0-9.e+-]*//; s/"profile": "[^"]*"//' "st$j.json") \
        <(sed 's/"wall_s": [0-9.e+-]*//; s/"profile": "[^"]*"//' "st$j--full-replays.json") ||
        fail "--jobs $j: stopped evaluations changed the JSON: $(diff "st$j.json" "st$j--full-replays.json")"
    grep -q "evaluations stopped" "st$j--full-replays.err" && fail "--full-replays stopped one"
done
# one run at a time, an evaluation stops after the first run when that decides it
grep -Eq '^slicesim: fit: [1-9][0-9]* of [0-9]+ evaluations stopped before their last runs' st1.err ||
    fail "no evaluation stopped: $(cat st1.err)"
# the database
[ "$(sql f.db "SELECT engine || ' ' || start_engine || ' ' || mode || ' ' || fitted_stages FROM fits WHERE fit_id = 1")" = \
    "rec start fit 4" ] || fail "fits row"
[ "$(sql f.db 'SELECT count(*) FROM fit_stages WHERE fitted = 1 AND real_ttft_mean_ms > 0')" = 8 ] ||
    fail "fit_stages rows"
# db merge carries fits with their stages, once
"$S" db merge m.db f.db >merge.txt 2>err && "$S" db merge m.db f.db >>merge.txt 2>>err ||
    fail "db merge: $(cat err)"
grep -q '2 fits copied, 0 already there' merge.txt && grep -q '0 fits copied, 2 already there' merge.txt ||
    fail "db merge counts: $(cat merge.txt)"
[ "$(sql m.db 'SELECT count(*) FROM fits')/$(sql m.db 'SELECT count(*) FROM fit_stages')" = 2/8 ] ||
    fail "db merge: fits and their stages"
# every default term, a few iterations (the table of terms and the defaults work)
"$S" fit data --profiles cat --engine start --iterations 3 --overlap max --allreduce twoshot \
    -o all.ini --no-progress >all.txt 2>err || fail "default terms: $(cat err)"
grep -q '^overlap = max$' all.ini && grep -q '^algorithm = twoshot$' all.ini ||
    fail "--overlap/--allreduce: $(cat all.ini)"
grep -q '^  Nelder-Mead: 3 iterations' all.txt || fail "table: $(cat all.txt)"
for k in iter_fixed_us iter_per_seq_us iter_per_token_us op_floor_us hop_latency_us frontend_ms; do
    grep -q "^    $k " all.txt || fail "term $k not in the table: $(cat all.txt)"
done
# under the start's own name: the fit reads the catalog once and puts each candidate into it,
# in the start's place; the start stays what the file said (the header, the JSON's start)
"$S" fit data --profiles cat --engine start --name start --fit iter_fixed_us --iterations 4 \
    --description "Start, refitted" -o self.ini --json --no-progress >self.json 2>err ||
    fail "fit in place: $(cat err)"
grep -q "^description = Start, refitted$" self.ini || fail "--description: $(cat self.ini)"
expect_error 2 "^slicesim: fit: --description: '' is not one line of 1-127 characters$" \
    "$S" fit data --profiles cat --description ""
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["terms"]; assert t["iter_fixed_us"]["start"]==600 and t["iter_fixed_us"]["final"]!=600, t' \
    self.json || fail "fit in place: the start changed: $(cat self.json)"
grep -q "^name = start$" self.ini || fail "fit in place: $(cat self.ini)"
# --jobs: the runs replayed in processes of their own give the same figures as one at a time
"$S" fit data --profiles cat --evaluate --engine truth --json --jobs 1 >j1.json 2>err &&
    "$S" fit data --profiles cat --evaluate --engine truth --json --jobs 3 >j3.json 2>>err ||
    fail "--jobs: $(cat err)"
cmp -s <(sed 's/"wall_s": [0-9.e+-]*//' j1.json) <(sed 's/"wall_s": [0-9.e+-]*//' j3.json) ||
    fail "--jobs 3 differs from --jobs 1: $(diff j1.json j3.json)"
expect_error 2 "^slicesim: --jobs: expected an integer in \\[1, 1024\\], got .0.$" "$S" fit data --profiles cat --jobs 0
# a metric no fitted stage measured is said so, not printed as "nan %" (table, profile header)
rm -rf nop90 && cp -r data nop90 || fail "copy"
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ttft_p90_ms") c = i }
    NR > 1 { $c = "" } { print }' data/stages.csv >nop90/stages.csv || fail "nop90"
"$S" fit nop90 --profiles cat --engine start --fit iter_fixed_us --iterations 2 -o nop90.ini \
    --no-progress >nop90.txt 2>err || fail "fit without TTFT p90: $(cat err)"
grep -qx '    TTFT p90  not measured in any fitted stage' nop90.txt &&
    grep -q '^; MAPE over the fitted stages: TTFT mean [0-9.]* %, TTFT p90 not measured, ITL ' nop90.ini ||
    fail "a metric not measured: $(cat nop90.txt nop90.ini)"
grep -qi nan nop90.txt nop90.ini && fail "nan printed: $(grep -i nan nop90.txt nop90.ini)"

# a fit stays inside the terms' documented ranges, so its profile loads: stages 1000 s slower
# than the truth's would pull frontend_ms to 1e6, past its bound of 600000 (10 minutes)
rm -rf late && cp -r data late || fail "copy"
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^(ttft|e2e)_/) c[i] = 1 }
    NR > 1 && $1 != "r-skip" { for (i in c) $i += 1e6 } { print }' data/stages.csv >late/stages.csv ||
    fail "late stages"
"$S" fit late --profiles cat --engine start --fit frontend_ms --served-ms 1e7 --iterations 40 \
    --name late -o late.ini --no-progress >late.txt 2>err || fail "fit of late stages: $(cat err)"
grep -qx 'frontend_ms = 600000' late.ini || fail "frontend_ms past its range: $(grep frontend late.ini)"
cp late.ini cat/engines/ && "$S" list engines --profiles cat >/dev/null 2>err ||
    fail "the fitted profile does not load: $(cat err)"
rm cat/engines/late.ini

# --cost reaches every replay: 'profile' without tables says which operators use the roofline
"$S" fit data --profiles cat --evaluate --engine truth --cost profile --no-progress >/dev/null \
    2>err || fail "--cost profile: $(cat err)"
grep -q "warning: cost model 'profile' (.*): 0 operators from tables" err || fail "--cost: $(cat err)"
expect_error 2 "^slicesim: fit: --cost: unknown cost model 'nope' \(known: roofline, profile, auto\)$" \
    "$S" fit data --profiles cat --cost nope

# ---- (c) a fit ended by a signal --------------------------------------------------------------
# SIGINT, SIGTERM or SIGHUP ending `fit --jobs 2` while two replays run in child processes ends
# them too (none goes on replaying after the fit), leaves no output or temporary file, and the
# fit dies of the signal. Each replay takes seconds: multi-turn conversations (the prefix cache
# grows) with --check.
command -v pgrep >/dev/null || fail "pgrep (procps) is needed"
mkdir slow || fail "slow"
"$S" trace gen -r 40 -n 20000 -p lognormal:500:0.4:32:1500 -O fixed:48 --turns fixed:50 --think 1 \
    -s 1 -o slow/t.csv || fail "trace gen slow"
cat >slow/runs.csv <<CSV
run,catalog_model,gpu,tp,max_num_seqs,max_num_batched_tokens,max_model_len,gpu_memory_utilization,output_len,trace,trace_stage_starts
a,llama-2-7b,h100-sxm,1,128,2048,4096,0.9,48,t.csv,0
b,llama-2-7b,h100-sxm,1,128,2048,4096,0.9,48,t.csv,0
CSV
printf 'run,stage,ttft_mean_ms,ttft_p90_ms,e2e_mean_ms,e2e_p90_ms\na,0,30,40,600,700\nb,0,30,40,600,700\n' \
    >slow/stages.csv
set -m # background jobs keep SIGINT's default (bash ignores it otherwise)
hup_ignored() { (( 16#$(awk '/^SigIgn:/ { print $2 }' /proc/$$/status) & 1 )); }
# start_fit WHAT: fit --jobs 2 in the background ($pid) until its two replay processes run ($kids)
start_fit() {
    "$S" fit slow --profiles cat --engine start --jobs 2 --check --no-progress -o sig.ini \
        --write-stages sig.csv >sig.out 2>&1 &
    pid=$!
    kids=
    for _ in $(seq 200); do
        kids=$(pgrep -P $pid)
        [ "$(wc -w <<<"$kids")" -eq 2 ] && break
        sleep 0.05
    done
    [ "$(wc -w <<<"$kids")" -eq 2 ] || fail "$1: no two replay processes: $kids $(cat sig.out)"
}
for sig in TERM INT HUP; do
    if [ $sig = HUP ] && hup_ignored; then
        echo "fit_cli: SIGHUP is ignored in this environment (nohup): its case is skipped" >&2
        continue
    fi
    start_fit SIG$sig
    kill -$sig $pid
    wait $pid
    rc=$?
    pid=0
    [ $rc -eq $((128 + $(kill -l $sig))) ] || fail "fit after SIG$sig: exit $rc: $(cat sig.out)"
    for k in $kids; do # reaped by the fit: not even a zombie is left
        kill -0 "$k" 2>/dev/null &&
            fail "SIG$sig: replay process $k still runs after the fit: $(ps -o pid,ppid,stat,etime,args -p "$k")"
    done
    ls | grep -E '^sig\.(ini|csv)' && fail "SIG$sig left an output: $(ls)"
done
# SIGKILL cannot be sent on: the replays die with the fit all the same (PR_SET_PDEATHSIG)
start_fit SIGKILL
kill -KILL $pid
wait $pid
pid=0
# running: the process exists and is not a zombie (an orphan's reaping is init's business)
running() { local st; st=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$st" ] && [ "${st#Z}" = "$st" ]; }
for k in $kids; do
    for _ in $(seq 100); do running "$k" || break; sleep 0.05; done
    running "$k" && fail "SIGKILL: replay process $k outlived the fit"
done
set +m
kids=

# ---- (d) against bench/fidelity.sh on a real run -----------------------------------------------
REAL=$DATA/serving/vllm-0.15-h100-blis
if [ ! -r "$REAL/runs.csv" ] || ! command -v python3 >/dev/null; then
    echo "fit_cli: no serving runs in $REAL; the comparison with fidelity.sh is skipped"
    exit 0
fi
mkdir one && ln -s "$REAL/traces" one/traces || fail "one-run directory"
grep -E '^(run,|l2-7b-tp1-codegen,)' "$REAL/runs.csv" >one/runs.csv
grep -E '^(run,|l2-7b-tp1-codegen,)' "$REAL/stages.csv" >one/stages.csv
SLICESIM=$S bash "$ROOT/bench/fidelity.sh" --data "$T/one" --csv "$T/fid.csv" >fid.txt 2>err ||
    fail "fidelity.sh: $(cat err)"
"$S" fit one --evaluate --json >one.json 2>err || fail "fit --evaluate one: $(cat err)"
python3 - fid.csv one.json <<'PY' || fail "fit --evaluate differs from fidelity.sh"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
sim = {(s["run"], s["stage"]): s for s in json.load(open(sys.argv[2]))["stages"]}
assert len(rows) == 2 and len(sim) == 2, (rows, sim)
for r in rows:
    s = sim[(r["run"], int(r["stage"]))]
    for a, b in (("ttft", "ttft_mean_ms"), ("ttft90", "ttft_p90_ms"), ("itl", "itl_ms"),
                 ("e2e", "e2e_mean_ms"), ("e2e90", "e2e_p90_ms")):
        for side in ("real", "sim"):
            want, got = float(r[f"{side}_{a}"]), s[side][b]
            assert abs(got - want) <= 1e-6 * abs(want), (r["run"], r["stage"], side, b, got, want)
PY
echo "fit_cli: ok"
