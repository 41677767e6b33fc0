#!/bin/bash
# CLI tests of the input files that must be regular files (core/ss_input.h): a FIFO named as a
# profile of the catalog (found by scanning profiles/*), a trace, a scenario, an experiment
# file, a profile table, fit's runs.csv or a trace it names, or an imported table is refused at
# once with one line "PATH: not a regular file", exit 2, instead of hanging the command (each
# command runs under timeout, so a hang fails the test instead of CI); a folder is refused the
# same way. Standard input stays readable as a pipe where a command accepts "-" (and as
# /dev/stdin), and so does a pipe the shell hands over as /dev/fd/N (<(command)).
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
TRACE=$ROOT/traces/azure-conv-synth.csv
W="timeout 20" # a FIFO that hangs the command ends as exit 124, not as a hung test

# ---- the catalog: a FIFO found while scanning a profiles directory ---------------------------
mkdir cat && cp -r "$ROOT/profiles/hardware" "$ROOT/profiles/models" "$ROOT/profiles/engines" \
    cat/ || fail "catalog copy"
mkfifo cat/engines/pipe.ini || fail "mkfifo"
NOT="not a regular file$"
expect_error 2 "^slicesim: cat/engines/pipe\.ini: $NOT" $W "$S" list engines --profiles cat
expect_error 2 "^slicesim: cat/engines/pipe\.ini: $NOT" $W "$S" list gpus --profiles cat
expect_error 2 ": cat/engines/pipe\.ini: $NOT" \
    $W "$S" replay --profiles cat --trace "$TRACE" --limit 5 --db none
expect_error 2 "^slicesim: $T/cat/engines/pipe\.ini: $NOT" \
    env SLICESIM_PROFILES="$T/cat" $W "$S" list models
rm cat/engines/pipe.ini
mkfifo cat/hardware/pipe.ini || fail "mkfifo"
expect_error 2 "^slicesim: cat/hardware/pipe\.ini: $NOT" $W "$S" list models --profiles cat
rm cat/hardware/pipe.ini
mkdir cat/models/dir.ini || fail "mkdir"
expect_error 2 "^slicesim: cat/models/dir\.ini: $NOT" $W "$S" list models --profiles cat
rmdir cat/models/dir.ini
"$S" list engines --profiles cat >/dev/null || fail "the catalog without the FIFO"

# ---- traces ----------------------------------------------------------------------------------
mkfifo fifo.csv || fail "mkfifo"
expect_error 2 "^slicesim: fifo\.csv: not a regular file$" $W "$S" trace stats fifo.csv
expect_error 2 ": fifo\.csv: $NOT" $W "$S" replay --trace fifo.csv --limit 5 --db none
expect_error 2 ": fifo\.csv: not a regular file$" \
    $W "$S" replay --trace fifo.csv --limit 5 --db none --rate-scale 0.5
# standard input on a pipe is still a trace: "-" and /dev/stdin
head -n 200 "$TRACE" >t.csv
"$S" trace stats t.csv >file.txt || fail "trace stats t.csv"
cat t.csv | $W "$S" trace stats - >dash.txt || fail "trace stats - on a pipe"
cat t.csv | $W "$S" trace stats /dev/stdin >devstdin.txt || fail "trace stats /dev/stdin on a pipe"
diff <(grep -v '^file ' file.txt) <(grep -v '^file ' dash.txt) >/dev/null ||
    fail "stdin through a pipe differs from the file"
diff <(grep -v '^file ' file.txt) <(grep -v '^file ' devstdin.txt) >/dev/null ||
    fail "/dev/stdin through a pipe differs from the file"
cat t.csv | $W "$S" replay --trace - --limit 20 --db none >/dev/null 2>err ||
    fail "replay --trace - on a pipe: $(cat err)"
# a pipe the shell hands over as /dev/fd/N (process substitution) is held open too
$W "$S" trace stats <(cat t.csv) >procsub.txt || fail "trace stats <(cat t.csv)"
diff <(grep -v '^file ' file.txt) <(grep -v '^file ' procsub.txt) >/dev/null ||
    fail "<(cat t.csv) differs from the file"
cat t.csv | $W "$S" replay --trace /dev/stdin --limit 20 --db none >/dev/null 2>err ||
    fail "replay --trace /dev/stdin on a pipe: $(cat err)"

# ---- scenarios and experiment files ----------------------------------------------------------
mkfifo s.ini x.ini || fail "mkfifo"
expect_error 2 ": s\.ini: not a regular file$" $W "$S" replay -c s.ini --db none
expect_error 2 ": s\.ini: not a regular file$" $W "$S" compare -c s.ini --db none --no-progress
expect_error 2 ": x\.ini: not a regular file$" $W "$S" sweep x.ini
expect_error 2 ": $T: not a regular file$" $W "$S" replay -c "$T" --db none

# ---- profile tables: a FIFO among a GPU's tables, or imported -----------------------------------
mkdir cat/a100-80g && mkfifo cat/a100-80g/ops.csv || fail "mkfifo"
expect_error 2 ": cat/a100-80g/ops\.csv: not a regular file$" $W "$S" replay --profiles cat \
    --cost profile --gpu a100-80g --trace "$TRACE" --limit 5 --db none
rm -r cat/a100-80g
expect_error 2 "^slicesim: fifo\.csv: not a regular file$" \
    $W "$S" profile import --from vidur --gpu a100-80g -o imported fifo.csv

# ---- fit: its runs.csv, and a trace runs.csv names ---------------------------------------------
mkdir -p data/traces && cp t.csv data/traces/t.csv && mkfifo data/traces/fifo.csv || fail "fit data"
{
    echo "run,catalog_model,gpu,tp,max_num_seqs,max_num_batched_tokens,max_model_len,\
gpu_memory_utilization,output_len,trace,trace_stage_starts,notes"
    echo "r1,llama-2-7b,h100-sxm,1,128,2048,4096,0.9,48,traces/fifo.csv,0,"
} >data/runs.csv
printf 'run,stage,rate,ttft_mean_ms,ttft_p90_ms,e2e_mean_ms,e2e_p90_ms\nr1,0,1,10,20,30,40\n' \
    >data/stages.csv
expect_error 2 "^slicesim: fit: data/runs\.csv:2: trace: \
cannot read 'data/traces/fifo\.csv': $NOT" \
    $W "$S" fit data --evaluate --no-progress
mv data/runs.csv runs.csv && mkfifo data/runs.csv || fail "mkfifo"
expect_error 2 ": data/runs\.csv: $NOT" $W "$S" fit data --evaluate --no-progress
echo "inputs_cli: all checks passed"
