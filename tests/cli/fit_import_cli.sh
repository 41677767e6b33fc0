#!/bin/bash
# CLI tests of `slicesim fit import`: (a) each --from format (requests-csv and vllm-bench from
# examples/fit-import, inference-perf from reports written here) gives a directory that
# `slicesim fit DIR --evaluate` accepts, with the stage figures and settings expected, byte for
# byte the same on a second import; the round trip of the example (simulated under vllm-0.15)
# evaluates to an objective near 0; a vLLM file without start_times gets generated send times
# and says so; (b) bad input: one line with the exact message, exit 2, and nothing left in or
# beside -o; a FIFO as input or a link as -o neither hangs nor redirects; (c) fit's
# identifiability warnings on the example's single-stage import; (d) with the BLIS runs of
# $SLICESIM_DATA (skipped when absent): a requests CSV joined from a run's trace and requests
# reproduces that run's stages.csv.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
DATA=${SLICESIM_DATA:-${SS_SHARED_DATA:-$ROOT/../shared/data}}
EX=$ROOT/examples/fit-import
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
SET=(--gpu h100-sxm --max-num-seqs 128 --max-num-batched-tokens 2048 --max-model-len 4096)

# nothing_left DIR: DIR does not exist and no temporary folder is left beside it
nothing_left() {
    [ ! -e "$1" ] && [ ! -L "$1" ] || fail "$1 exists after a failed import"
    ls -a "$(dirname "$1")" | grep -q "^\.$(basename "$1")\.import-" &&
        fail "a temporary folder is left beside $1"
    return 0
}

# ---- (a) requests-csv: the example, its figures, the round trip, determinism ---------------
"$S" fit import --from requests-csv "$EX/requests.csv" -o rc --model llama-2-7b "${SET[@]}" \
    >out 2>err || fail "import requests-csv: $(cat err)"
[ ! -s out ] || fail "import wrote to stdout: $(cat out)"
grep -q "^slicesim: fit import: wrote rc: run requests (llama-2-7b on h100-sxm, TP 1, max_num_seqs 128, max_num_batched_tokens 2048, max_model_len 4096), 2 stages, 70 requests$" err ||
    fail "import summary: $(cat err)"
[ "$(sed -n 2p rc/runs.csv)" = "requests,llama-2-7b,h100-sxm,1,128,2048,4096,0.9,108,traces/requests.csv,0.126834000;40.636195000" ] ||
    fail "runs.csv: $(cat rc/runs.csv)"
# stage figures recomputed here from the example's ok rows (numpy's linear percentile)
want=$(awk -F, 'NR > 1 && $7 == 1 { n[$6]++; t[$6, n[$6]] = $4; e[$6, n[$6]] = $5; st[$6] += $4; se[$6] += $5 }
    function p90(a, k, m,   i, j, x, v, h) { for (i = 1; i <= m; i++) v[i] = a[k, i]
        for (i = 2; i <= m; i++) { x = v[i]; for (j = i - 1; j >= 1 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
        h = (m - 1) * 0.9; i = int(h); return v[i + 1] + (v[i + 2] - v[i + 1]) * (h - i) }
    END { for (k = 0; k <= 1; k++) printf "%.6f %.6f %.6f %.6f\n", st[k] / n[k], p90(t, k, n[k]), se[k] / n[k], p90(e, k, n[k]) }' "$EX/requests.csv")
got=$(awk -F, 'NR > 1 { print $4, $5, $6, $7 }' rc/stages.csv)
paste -d' ' <(echo "$want") <(echo "$got") | awk 'NF != 8 { exit 1 }
    { for (i = 1; i <= 4; i++) { d = $i - $(i + 4); if (d < 0) d = -d; if (d > 1e-6 * $i) exit 1 } }' ||
    fail "stage figures: got '$got', want '$want'"
[ "$(wc -l <rc/traces/requests.csv)" -eq 71 ] || fail "trace rows: $(wc -l <rc/traces/requests.csv)"
"$S" fit import --from requests-csv "$EX/requests.csv" -o rc2 --model llama-2-7b "${SET[@]}" 2>/dev/null &&
    diff -r rc rc2 >/dev/null || fail "a second import differs"
"$S" fit rc --evaluate --no-progress --json >ev.json 2>ev.err || fail "fit --evaluate: $(cat ev.err)"
python3 -c 'import json,sys; o=json.load(open("ev.json"))["objective"]; sys.exit(0 if o < 0.001 else 1)' ||
    fail "round trip objective not near 0: $(head -c 300 ev.json)"

# ---- vllm-bench: two stages, the model from model_id ----------------------------------------
"$S" fit import --from vllm-bench "$EX/stage0.json" "$EX/stage1.json" -o vb "${SET[@]}" 2>err ||
    fail "import vllm-bench: $(cat err)"
grep -q "run stage0 (llama-2-7b on h100-sxm" err || fail "vllm-bench model from model_id: $(cat err)"
grep -q "assumption" err && fail "vllm-bench with start_times: an assumption was reported"
# the same stage figures as the CSV of the same requests (the vllm file's times are in s)
[ "$(cut -d, -f2- rc/stages.csv | cut -d, -f3-)" = "$(cut -d, -f2- vb/stages.csv | cut -d, -f3-)" ] ||
    fail "vllm-bench stages differ from the CSV's: $(cat vb/stages.csv)"
[ "$(cut -d, -f3 vb/stages.csv | tail -n +2 | tr '\n' ' ')" = "1 4 " ] || fail "rates: $(cat vb/stages.csv)"
"$S" fit vb --evaluate --no-progress >/dev/null 2>&1 || fail "fit --evaluate of the vllm-bench import"

# without start_times: generated send times (Poisson at request_rate, seed 1), said on stderr
python3 - "$EX/stage1.json" <<'PY' >nostart.json
import json, sys
d = json.load(open(sys.argv[1])); del d["start_times"]; del d["latencies"]
d["itls"] = [[0.01] * 3 if o else [] for o in d["output_lens"]]
json.dump(d, sys.stdout)
PY
"$S" fit import --from vllm-bench nostart.json -o gen --model llama-2-7b "${SET[@]}" 2>err ||
    fail "import without start_times: $(cat err)"
grep -q "^slicesim: fit import: assumption: nostart.json has no start_times: the send times of its 40 requests are generated as vLLM's client draws them (Poisson at request_rate, seed 1), not measured$" err ||
    fail "no assumption line: $(cat err)"
last=$(tail -n 1 gen/traces/nostart.csv | cut -d, -f2)
[ "$last" = "10.000000000" ] || fail "generated arrivals do not end at n / rate = 10 s: $last"
"$S" fit import --from vllm-bench nostart.json -o gen2 --model llama-2-7b "${SET[@]}" 2>/dev/null &&
    diff -r gen gen2 >/dev/null || fail "generated arrivals differ between two imports"
# E2E from the ITLs: TTFT + 0.03 s
awk -F, 'NR == 2 && $5 < 30 { exit 1 }' gen/stages.csv || fail "E2E from itls: $(cat gen/stages.csv)"

# ---- inference-perf: two stage summaries and the per-request records -------------------------
cat >stage_0_lifecycle_metrics.json <<'JSON'
{"load_summary": {"count": 3, "requested_rate": 2.0, "send_duration": 1.0},
 "successes": {"count": 3, "latency": {
   "time_to_first_token": {"mean": 0.05, "median": 0.05, "p90": 0.07},
   "request_latency": {"mean": 1.5, "median": 1.5, "p90": 1.8}}},
 "failures": {"count": 0}}
JSON
cat >stage_1_lifecycle_metrics.json <<'JSON'
{"load_summary": {"count": 2, "requested_rate": 4.0},
 "successes": {"count": 1, "latency": {
   "time_to_first_token": {"mean": 0.08, "p90": 0.09},
   "request_latency": {"mean": 2.0, "p90": 2.2}}}}
JSON
cat >per_request_lifecycle_metrics.json <<'JSON'
[{"start_time": 100.5, "end_time": 102.0, "request": "x", "response": "y",
  "info": {"input_tokens": 300, "output_tokens": 40, "output_token_times": [100.55]}, "error": null},
 {"start_time": 100.0, "end_time": 101.5, "request": "x", "response": "y",
  "info": {"input_tokens": 200, "output_tokens": 50}, "error": null},
 {"start_time": 101.0, "end_time": 102.5, "info": {"input_tokens": 250, "output_tokens": 30}, "error": null},
 {"start_time": 105.0, "end_time": 107.0,
  "info": {"request_metrics": {"text": {"input_tokens": 400}}, "response_metrics": {"output_tokens": 60}}, "error": null},
 {"start_time": 105.25, "end_time": 105.3, "info": {"input_tokens": 500}, "error": {"error_type": "timeout"}}]
JSON
"$S" fit import --from inference-perf stage_0_lifecycle_metrics.json stage_1_lifecycle_metrics.json \
    per_request_lifecycle_metrics.json -o ip --model llama-2-7b "${SET[@]}" --run ip1 2>err ||
    fail "import inference-perf: $(cat err)"
[ "$(tail -n +2 ip/stages.csv)" = "$(printf 'ip1,0,2,50.000000,70.000000,1500.000000,1800.000000,,3,3\nip1,1,4,80.000000,90.000000,2000.000000,2200.000000,,2,1')" ] ||
    fail "inference-perf stages: $(cat ip/stages.csv)"
[ "$(sed -n 2p ip/runs.csv | cut -d, -f9-)" = "45,traces/ip1.csv,0.000000000;5.000000000" ] ||
    fail "inference-perf runs.csv: $(cat ip/runs.csv)"
[ "$(tail -n +2 ip/traces/ip1.csv | tr '\n' ' ')" = "0,0.000000000,default,200,50 1,0.500000000,default,300,40 2,1.000000000,default,250,30 3,5.000000000,default,400,60 4,5.250000000,default,500,45 " ] ||
    fail "inference-perf trace: $(cat ip/traces/ip1.csv)"
"$S" fit ip --evaluate --no-progress >/dev/null 2>&1 || fail "fit --evaluate of the inference-perf import"

# ---- (b) bad input: exact messages, exit 2, nothing left -------------------------------------
bad() { # bad REGEX ARGS...: fit import ARGS -o $T/bad fails with REGEX and leaves nothing
    local re=$1
    shift
    expect_error 2 "$re" "$S" fit import "$@" -o "$T/bad"
    nothing_left "$T/bad"
}
printf 'arrival_s,prompt_tokens,output_tokens,e2e_ms\n0,10,10,5\n' >nottft.csv
bad "^slicesim: fit import: nottft.csv:1: ttft_ms: missing column$" --from requests-csv nottft.csv "${SET[@]}" --model llama-2-7b
printf 'prompt_tokens,output_tokens,ttft_ms,e2e_ms\n10,10,1,5\n' >noarr.csv
bad "^slicesim: fit import: noarr.csv:1: arrival_s: missing column \(or send_s\)$" --from requests-csv noarr.csv "${SET[@]}" --model llama-2-7b
printf 'send_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms\n0,10,10,1,5\n0.5,x,10,1,5\n' >badnum.csv
bad "^slicesim: fit import: badnum.csv:3: prompt_tokens: 'x' is not an integer in \[1, 10000000\]$" --from requests-csv badnum.csv "${SET[@]}" --model llama-2-7b
printf 'arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms\n0,10,10,9,5\n' >e2e.csv
bad "^slicesim: fit import: e2e.csv:2: e2e_ms: '5' is below ttft_ms \(9\)$" --from requests-csv e2e.csv "${SET[@]}" --model llama-2-7b
printf 'arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms\n0,10,10,0,5\n' >zero.csv
bad "^slicesim: fit import: zero.csv:2: ttft_ms: '0' is not a decimal number > 0 \(ms\)$" --from requests-csv zero.csv "${SET[@]}" --model llama-2-7b
printf 'arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,stage\n0,10,10,1,5,0\n9,10,10,1,5,2\n' >gap.csv
bad "^slicesim: fit import: gap.csv: stage: stage 1 has no request$" --from requests-csv gap.csv "${SET[@]}" --model llama-2-7b
printf 'arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,stage\n0,10,10,1,5,0\n9,10,10,1,5,1\n10,10,10,1,5,0\n' >overlap.csv
bad "^slicesim: fit import: overlap.csv: stage: stage 0's requests are sent until 10.000000 s, after stage 1 begins \(9.000000 s\): stages must not overlap$" --from requests-csv overlap.csv "${SET[@]}" --model llama-2-7b
printf 'arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms\n0,10,1,1,5\n' >short.csv
bad "^slicesim: fit import: short.csv: output_tokens: the requests that succeeded generated 1 token\(s\) on average; fit needs at least 2" --from requests-csv short.csv "${SET[@]}" --model llama-2-7b
bad "^slicesim: fit import: --model: required: the log names no model \(known: llama-2-13b, " --from requests-csv "$EX/requests.csv" "${SET[@]}"
bad "^slicesim: fit import: --model: unknown model 'gpt-5' \(known: " --from requests-csv "$EX/requests.csv" "${SET[@]}" --model gpt-5
bad "^slicesim: fit import: --gpu: required: the logs do not say which GPU served them$" --from requests-csv "$EX/requests.csv" --model llama-2-7b
bad "^slicesim: fit import: --from: unknown format 'guidellm' \(known: vllm-bench, inference-perf, requests-csv\)" --from guidellm x.json "${SET[@]}"
expect_error 2 "^slicesim: fit import: --from: required \(vllm-bench, inference-perf or requests-csv\)$" \
    "$S" fit import "$EX/requests.csv" -o "$T/bad" "${SET[@]}"
nothing_left "$T/bad"
expect_error 2 "^slicesim: fit import: -o: required: the fit directory to create$" \
    "$S" fit import --from requests-csv "$EX/requests.csv" "${SET[@]}"
printf '{"input_lens": [1, 2],\n "ttfts": [0.1, 0.2,]}\n' >syntax.json
bad "^slicesim: fit import: syntax.json: json: expected a value \(line 2, column 21\)$" --from vllm-bench syntax.json "${SET[@]}"
printf '{"request_rate": 2, "duration": 5}\n' >summary.json
bad "^slicesim: fit import: summary.json: input_lens: missing \(the file has no per-request figures: save it with --save-result --save-detailed\)$" --from vllm-bench summary.json "${SET[@]}"
printf '{"input_lens": [1, 2], "output_lens": [5, 5], "ttfts": [0.1], "latencies": [1, 1]}\n' >len.json
bad "^slicesim: fit import: len.json: ttfts: 1 entries, input_lens has 2$" --from vllm-bench len.json "${SET[@]}"
printf '{"input_lens": [1, 2], "output_lens": [5, 5], "ttfts": [0.1, "a"], "latencies": [1, 1], "start_times": [0, 1]}\n' >elem.json
bad "^slicesim: fit import: elem.json: ttfts\[1\]: expected a number in \[1e-09, 1e\+09\]$" --from vllm-bench elem.json "${SET[@]}"
printf '{"input_lens": [1], "output_lens": [5], "ttfts": [0.1], "latencies": [1]}\n' >norate.json
bad "^slicesim: fit import: norate.json: request_rate: missing \(needed for the send times: the file has no start_times\)$" --from vllm-bench norate.json "${SET[@]}"
# generated send times beyond the trace's clock: one line, the assumption not said
printf '{"input_lens": [1, 2], "output_lens": [5, 5], "ttfts": [0.1, 0.1], "latencies": [1, 1], "request_rate": 1e-300}\n' >lowrate.json
bad "^slicesim: fit import: lowrate.json: arrival: a request is sent at [0-9.e+]+ s, outside \[0, 1e9\] s of the run$" --from vllm-bench lowrate.json "${SET[@]}" --model llama-2-7b
bad "^slicesim: fit import: stage_0_lifecycle_metrics.json: start_time: no per-request records among the files: the stage summaries hold no send times or token counts for the trace \(give per_request_lifecycle_metrics.json: inference-perf's report.request_lifecycle.per_request: true\)$" \
    --from inference-perf stage_0_lifecycle_metrics.json stage_1_lifecycle_metrics.json "${SET[@]}" --model llama-2-7b
bad "^slicesim: fit import: per_request_lifecycle_metrics.json: load_summary.count: the stage files count 3 requests, the per-request file has 5$" \
    --from inference-perf stage_0_lifecycle_metrics.json per_request_lifecycle_metrics.json "${SET[@]}" --model llama-2-7b
# -o that exists and is not empty, or is a link: refused, left as it was
mkdir full && echo keep >full/x
expect_error 2 "^slicesim: fit import: -o: 'full' exists and is not an empty folder \(fit import writes a new one\)$" \
    "$S" fit import --from requests-csv "$EX/requests.csv" -o full --model llama-2-7b "${SET[@]}"
[ "$(ls full)" = x ] && [ "$(cat full/x)" = keep ] || fail "a non-empty -o was changed"
mkdir empty && ln -s empty link
expect_error 2 "^slicesim: fit import: -o: 'link' exists and is not an empty folder" \
    "$S" fit import --from requests-csv "$EX/requests.csv" -o link --model llama-2-7b "${SET[@]}"
[ -L link ] && [ -z "$(ls empty)" ] || fail "a link as -o was written through"
"$S" fit import --from requests-csv "$EX/requests.csv" -o empty --model llama-2-7b "${SET[@]}" 2>/dev/null &&
    [ -f empty/runs.csv ] || fail "an empty folder as -o was not filled"
# a FIFO as input is refused at once, not waited on
mkfifo fifo.csv
expect_error 2 "^slicesim: fit import: fifo.csv: not a regular file$" \
    timeout 10 "$S" fit import --from requests-csv fifo.csv -o "$T/bad" --model llama-2-7b "${SET[@]}"
nothing_left "$T/bad"

# ---- (c) identifiability: one stage, and a term a TP 1 run cannot see -------------------------
"$S" fit import --from vllm-bench "$EX/stage0.json" -o one "${SET[@]}" 2>/dev/null || fail "import stage0"
"$S" fit one --fit iter_fixed_us,hop_latency_us,frontend_ms,attn_speed,op_floor_us,iter_per_seq_us \
    --iterations 3 --jobs 1 --no-progress -o one.ini >fit.out 2>fit.err || fail "fit one: $(cat fit.err)"
grep -Eq "^slicesim: fit: hop_latency_us not identifiable from these stages \(±20 % moves the objective < 0.1 %\): kept at [0-9.e+-]+$" fit.err ||
    fail "no hop_latency_us warning: $(cat fit.err)"
grep -Eq "^slicesim: fit: 4 independent figures \(the fitted stages' measured TTFT and E2E means and p90s\) cannot determine 5 terms: fitting the 4 the objective is most sensitive to; kept at the start: [a-z_]+ = [0-9.e+-]+$" fit.err ||
    fail "no count warning: $(cat fit.err)"
hop0=$(grep -E "^hop_latency_us" "$ROOT/profiles/engines/vllm-0.15.ini" | head -1 | sed 's/.*= *//; s/ .*//')
grep -Eq "^hop_latency_us = $hop0( |$)" one.ini || fail "hop_latency_us moved: $(grep hop_latency one.ini), start $hop0"
cp fit.err fit1.err && cp one.ini one1.ini
"$S" fit one --fit iter_fixed_us,hop_latency_us,frontend_ms,attn_speed,op_floor_us,iter_per_seq_us \
    --iterations 3 --jobs 1 --no-progress -o one.ini >/dev/null 2>fit.err || fail "fit one again"
cmp -s fit.err fit1.err && cmp -s one.ini one1.ini || fail "the identifiability step is not deterministic"
# two stages, three terms the data see: no warning
"$S" fit vb --fit iter_fixed_us,frontend_ms --iterations 2 --jobs 1 --no-progress -o two.ini >/dev/null 2>fit.err ||
    fail "fit vb: $(cat fit.err)"
grep -q "identifiable\|cannot determine" fit.err && fail "a warning on identifiable data: $(cat fit.err)"

# ---- (d) the BLIS runs: a joined requests CSV reproduces the run's stages.csv -----------------
B=$DATA/serving/vllm-0.15-h100-blis
if [ -f "$B/requests/l2-7b-tp1-general.csv" ] && [ -f "$B/traces/l2-7b-tp1-general.csv" ]; then
    starts=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["run"] == "l2-7b-tp1-general" { print $c["trace_stage_starts"] }' "$B/runs.csv")
    paste -d, "$B/traces/l2-7b-tp1-general.csv" "$B/requests/l2-7b-tp1-general.csv" |
        awk -F, -v starts="$starts" 'BEGIN { n = split(starts, st, ";") }
            NR == 1 { print "arrival_s,prompt_tokens,output_tokens,ok,ttft_ms,e2e_ms,stage"; next }
            $1 != $7 { print "request ids differ" > "/dev/stderr"; exit 1 }
            { k = 0; for (i = 2; i <= n; i++) if ($2 + 0 >= st[i] + 0) k = i - 1
              print $2 "," $4 "," $5 "," $8 "," $9 "," $10 "," k }' >blis.csv || fail "join"
    "$S" fit import --from requests-csv blis.csv -o blis --model llama-2-7b "${SET[@]}" 2>/dev/null ||
        fail "import of the BLIS run"
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["run"] == "l2-7b-tp1-general" { print $c["stage"], $c["ttft_mean_ms"], $c["ttft_p90_ms"], $c["e2e_mean_ms"], $c["e2e_p90_ms"] }' \
        "$B/stages.csv" >want.txt
    awk -F, 'NR > 1 { print $2, $4, $5, $6, $7 }' blis/stages.csv >got.txt
    [ "$(wc -l <want.txt)" -eq 2 ] && [ "$(wc -l <got.txt)" -eq 2 ] || fail "BLIS stages: $(cat got.txt)"
    paste -d' ' want.txt got.txt | awk '{ for (i = 2; i <= 5; i++) { d = $i - $(i + 5); if (d < 0) d = -d
        if (d > 1e-4 * $i + 1e-3) { print "stage " $1 ": column " i ": " $i " vs " $(i + 5); bad = 1 } } }
        END { exit bad }' || fail "BLIS stage figures differ"
else
    echo "fit_import_cli: $B absent: the BLIS comparison is skipped"
fi
echo "fit_import_cli: ok"
