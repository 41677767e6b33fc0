#!/bin/bash
# CLI tests of the messages and inputs of issue 13: numbers out of range say "out of range [lo,
# hi]" rather than "not a number"; a message names the option or the FILE:LINE the value came
# from, never an option the user did not type; one "sweep:" prefix; help that tells the true
# exit status; bytes that are not text are escaped; gzip traces are read directly; unsorted
# traces are refused with a hint, or read with --sort; db merge names the locked input; a
# typo in a tenant's name is "no such tenant"; long options are matched exactly, in every
# command. Errors are one stderr line with exit status 2 (1 for the locked database), checked
# by lib.sh's expect_error.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
TRACE=$ROOT/traces/azure-conv-synth.csv

# ---- numbers out of range ---------------------------------------------------------------
expect_error 2 "^slicesim: replay: --seed: out of range \[0, 9223372036854775807\], got '18446744073709551615'$" \
    "$S" replay --seed 18446744073709551615 --db none
expect_error 2 "^slicesim: replay: --limit: out of range \[1, 9223372036854775807\], got '1e20'$" \
    "$S" replay --limit 1e20 --db none
expect_error 2 "^slicesim: replay: --limit: expected an integer of at least 1, got '12x'$" \
    "$S" replay --limit 12x --db none
expect_error 2 "^slicesim: replay: --swap-space: out of range \[0, 1.8e308\], got '1e999'$" \
    "$S" replay --swap-space 1e999 --db none
expect_error 2 "^slicesim: replay: --swap-space: out of range \[0, 65536\], got '1e300'$" \
    "$S" replay --swap-space 1e300 --db none
printf 'request_id,arrival_s,tenant,prompt_tokens,output_tokens\n0,1e10,a,1,1\n' >far.csv
expect_error 2 "far.csv:2: arrival_s: out of range \[0, 9.2e9\] seconds: '1e10'$" \
    "$S" trace stats far.csv
SV=$ROOT/experiments/slice-vs-container.ini
expect_error 2 "^slicesim: compare: --rates: out of range \(0, 1e6\], got '1e7'$" \
    "$S" compare -c "$SV" --rates 1,1e7 --db none
expect_error 2 "^slicesim: compare: --rates: expected numbers > 0, got 'x'$" \
    "$S" compare -c "$SV" --rates x --db none

# ---- help that tells the truth; one prefix per message -----------------------------------
# trace stats: a file that cannot be opened is bad input (2), as its --help says.
"$S" trace stats --help >help || fail "trace stats --help"
grep -q "2 bad usage, a file$" help && grep -q "^that cannot be opened" help ||
    fail "trace stats --help: $(grep -A2 'Exit status' help)"
expect_error 2 "^slicesim: nope.csv: cannot open: " "$S" trace stats nope.csv

# sweep: a worker's failure is reported once, under one "sweep:" prefix.
printf 'request_id,arrival_s,tenant,prompt_tokens,output_tokens\n0,0,a,10,10\n1,1,a,x,10\n' >bad.csv
cat >bad.ini <<INI
[tenant.a]
model = llama-2-7b
trace = $T/bad.csv
INI
printf '[sweep]\nname = w\nscenario = %s/bad.ini\n[grid]\nrun.seed = 1, 2\n' "$T" >w.ini
"$S" sweep w.ini --jobs 2 --db w.db >/dev/null 2>err && fail "sweep of a bad trace succeeded"
grep -q "a worker failed" err || fail "sweep: $(cat err)"
grep -q "sweep: sweep:" err && fail "doubled prefix: $(cat err)"

# ---- messages name where the value came from, never an option the user did not type ------
expect_error 2 "^slicesim: replay: --replicas: out of range \[1, 4096\], got '1000000'$" \
    "$S" replay --replicas 1000000 --db none
ini() { # ini FILE [SECTION] KEY = VALUE lines..., then a tenant that would run
    local f=$1
    shift
    { printf '%s\n' "$@"; printf '[tenant.a]\nmodel = llama-2-7b\nsynthetic = rate=1 duration=10\n'; } >"$f"
}
ini b.ini '[policy]' 'batching = nope'
expect_error 2 "^slicesim: replay: b.ini:2: policy.batching: unknown policy 'nope' \(known: vllm, orca, sarathi, static\)$" \
    "$S" replay -c b.ini --db none
ini r.ini '[policy]' 'routing = nope'
expect_error 2 "^slicesim: replay: r.ini:2: policy.routing: unknown policy 'nope' \(known: " \
    "$S" replay -c r.ini --db none
ini c.ini '[policy]' 'cost = nope'
expect_error 2 "^slicesim: replay: c.ini:2: policy.cost: unknown cost model 'nope' \(known: " \
    "$S" replay -c c.ini --db none
ini m.ini '[engine]' 'max_model_len = 1'
expect_error 2 "^slicesim: replay: m.ini:2: engine.max_model_len: out of range \[2, 1073741824\], got '1'$" \
    "$S" replay -c m.ini --db none
printf '[tenant.a]\nmodel = llama-2-7b\ntp = 3\nsynthetic = rate=1 duration=10\n' >tp.ini
expect_error 2 "^slicesim: replay: tp.ini:3: tenant.a.tp: 3 does not divide the 32 attention heads of llama-2-7b$" \
    "$S" replay -c tp.ini --db none
expect_error 2 "^slicesim: replay: --set: tenant.a.tp: 6 does not divide the 32 attention heads of llama-2-7b$" \
    "$S" replay -c tp.ini --set tenant.a.tp=6 --db none
# an option still names itself
expect_error 2 "^slicesim: replay: --tp: 3 does not divide the 32 attention heads of llama-2-7b$" \
    "$S" replay --tp 3 --db none
expect_error 2 "^slicesim: replay: --batching: unknown policy 'x' " "$S" replay --batching x --db none
# compare's bundles and sweep's [set] and [grid] name themselves, not --set or --batching
expect_error 2 "^slicesim: compare: policy=a;rate=1: --policies: policy.batching: unknown policy 'nope' " \
    "$S" compare -c "$SV" --policies a:policy.batching=nope --db none
printf '[sweep]\nname = s\nscenario = %s\n[set]\npolicy.routing = nope\n[grid]\nrun.seed = 1\n' "$SV" >set.ini
"$S" sweep set.ini --db set.db >/dev/null 2>err && fail "sweep with routing = nope succeeded"
grep -q "^slicesim: sweep: run.seed=1: set.ini:5: set: policy.routing: unknown policy 'nope' " err ||
    fail "sweep [set]: $(cat err)"
printf '[sweep]\nname = s\nscenario = %s\n[grid]\npolicy.cost = roofline, nope\n' "$SV" >grid.ini
"$S" sweep grid.ini --db grid.db >/dev/null 2>err && fail "sweep with cost = nope succeeded"
grep -q "grid.ini:5: grid: policy.cost: unknown cost model 'nope' " err || fail "sweep [grid]: $(cat err)"

# ---- bytes that are not text are escaped, never written raw --------------------------------
printf '[tenant.a]\nmod\xff\xfe = 1\n' >bin.ini
expect_error 2 "^slicesim: replay: bin.ini:2: tenant.a.mod\\\\xff\\\\xfe: unknown key \\(did you mean model\\?\\)$" \
    "$S" replay -c bin.ini --db none
LC_ALL=C grep -q $'[\x80-\xff]' "$T/err" && fail "raw bytes on stderr: $(od -c "$T/err" | head -3)"

# ---- gzip-compressed traces are read directly ----------------------------------------------
head -500 "$TRACE" | gzip -c >t.csv.gz
head -500 "$TRACE" >t.csv
"$S" trace stats --json t.csv.gz | sed 's/"file":"[^"]*",//' >gz.json || fail "stats of t.csv.gz"
"$S" trace stats --json t.csv | sed 's/"file":"[^"]*",//' >plain.json || fail "stats of t.csv"
cmp -s gz.json plain.json || fail "gzip stats differ: $(diff gz.json plain.json)"
gzip -dc t.csv.gz | "$S" trace stats - >/dev/null || fail "plain trace on stdin"
"$S" trace stats - <t.csv.gz >/dev/null || fail "gzip trace on stdin"
"$S" replay --trace t.csv.gz --db none >/dev/null || fail "replay --trace t.csv.gz"
head -c 300 t.csv.gz >cut.csv.gz
expect_error 2 "cut.csv.gz:[0-9]+: gzip: truncated file" "$S" trace stats cut.csv.gz

# ---- db merge and a database another process holds ----------------------------------------
# The input is only read: a writer holding a WAL-mode input does not stop the merge, which
# copies what was committed. An input in rollback-journal mode that a writer holds exclusively
# cannot be read; the error names the input, not the output (it used to name the output).
if command -v sqlite3 >/dev/null; then
    "$S" replay --limit 50 --db in.db >/dev/null 2>err || fail "replay into in.db: $(cat err)"
    { echo "BEGIN EXCLUSIVE;"; sleep 3; } | sqlite3 in.db &
    holder=$!
    sleep 0.7
    SLICESIM_BUSY_TIMEOUT_MS=100 "$S" db merge out.db in.db >/dev/null 2>err ||
        fail "merge of an input a writer holds: $(cat err)"
    [ "$(sql out.db 'SELECT count(*) FROM runs')" = 1 ] || fail "merge of a held input: runs"
    wait "$holder"
    cp in.db journal.db
    sqlite3 journal.db 'PRAGMA journal_mode = DELETE' >/dev/null
    { echo "BEGIN EXCLUSIVE; DELETE FROM requests;"; sleep 3; } | sqlite3 journal.db &
    holder=$!
    sleep 0.7
    SLICESIM_BUSY_TIMEOUT_MS=100 expect_error 1 "^slicesim: db merge: journal.db: .*database is locked" \
        "$S" db merge out2.db journal.db
    [ ! -e out2.db ] || fail "a merge refused for a locked input left out2.db"
    wait "$holder"
    "$S" db merge out2.db journal.db >/dev/null 2>err || fail "merge once unlocked: $(cat err)"
fi

# ---- unsorted traces: an error that offers --sort, and --sort --------------------------------
printf 'request_id,arrival_s,tenant,prompt_tokens,output_tokens\n0,5,a,10,5\n1,1,a,20,7\n2,3,a,30,8\n' >uns.csv
expect_error 2 "uns.csv:3: arrival_s: goes backwards \(1 < 5\); the trace is not sorted by time \(sort it, or read it whole with --sort, or trace_sort = true in a scenario\)$" \
    "$S" replay --trace uns.csv --db none
"$S" replay --trace uns.csv --sort --db none >out 2>err || fail "replay --sort: $(cat err)"
grep -q "completed 3," out || fail "replay --sort: $(cat out)"
"$S" trace stats --sort uns.csv >out 2>err || fail "trace stats --sort: $(cat err)"
grep -Eq "^span_s +4.000" out || fail "trace stats --sort: $(cat out)"
printf '[tenant.a]\nmodel = llama-2-7b\ntrace = uns.csv\ntrace_sort = true\n' >sorted.ini
"$S" replay -c sorted.ini --db none >out 2>err || fail "trace_sort = true: $(cat err)"
"$S" replay --help | grep -q "about 90 bytes per request" || fail "replay --help: --sort's memory"
"$S" trace stats --help | grep -q "about 90 bytes per request" || fail "stats --help: --sort's memory"

# ---- a typo in a tenant's name ---------------------------------------------------------------
expect_error 2 "^slicesim: replay: --set: tenant.chatt: no such tenant \(tenants: chat, batch\); a new tenant needs at least tenant.chatt.model and a workload$" \
    "$S" replay -c "$ROOT/experiments/example-two-tenants.ini" --set tenant.chatt.rate_scale=2 --db none

# ---- long options are matched exactly, by every command ----------------------------------
# replay --rate 3 ran at 3x the load (getopt_long took it for --rate-scale), while trace gen's
# --rate is requests per second.
expect_error 2 "^slicesim: replay: unknown option '--rate' \(did you mean --rate-scale\?\)$" \
    "$S" replay --rate 3 --db none
expect_error 2 "^slicesim: replay: unknown option '--trace-f' \(did you mean --trace-format\?\)$" \
    "$S" replay --trace-f=native --db none
expect_error 2 "^slicesim: replay: unknown option '--t' \(did you mean --timeline, --timeline-window, --timeline-ops, --timeline-warn, --tp, --trace, --trace-format, --trace-spread, --token-budget\?\)$" \
    "$S" replay --t 1 --db none
expect_error 2 "^slicesim: trace gen: unknown option '--dur' \(did you mean --duration\?\)$" \
    "$S" trace gen --rate 1 --dur 5 -o g.csv
expect_error 2 "^slicesim: trace stats: unknown option '--form' \(did you mean --format\?\)$" \
    "$S" trace stats --form native "$TRACE"
expect_error 2 "^slicesim: compare: unknown option '--polic' \(did you mean --policies\?\)$" \
    "$S" compare -c "$SV" --polic container
expect_error 2 "^slicesim: sweep: unknown option '--job' \(did you mean --jobs\?\)$" \
    "$S" sweep w.ini --job 2
expect_error 2 "^slicesim: plot: unknown option '--kin' \(did you mean --kind\?\)$" \
    "$S" plot w.db --kin cdf -o out
expect_error 2 "^slicesim: list: unknown option '--js' \(did you mean --json\?\)$" \
    "$S" list models --js
expect_error 2 "^slicesim: profile import: unknown option '--fro' \(did you mean --from\?\)$" \
    "$S" profile import --fro vidur --gpu a100-80g x.csv
expect_error 2 "^slicesim: calibrate: unknown option '--mod' \(did you mean --model\?\)$" \
    "$S" calibrate --mod llama-2-7b --backend sim -o cal
expect_error 2 "^slicesim: validate: unknown option '--rate' \(did you mean --rate-scale\?\)$" \
    "$S" validate --rate 2 --model llama-2-7b --backend sim
# Exact names, values that look like options, and "--" still work.
"$S" trace gen --rate 2 --duration 5 --out --rat >/dev/null 2>err || fail "gen --out --rat: $(cat err)"
[ -s ./--rat ] || fail "gen --out --rat wrote no file '--rat'"
"$S" trace gen --rate 2 --duration 5 -o --dur >/dev/null 2>err || fail "gen -o --dur: $(cat err)"
"$S" trace stats -- --rat >stats 2>err || fail "stats -- --rat: $(cat err)"
grep -q "requests" stats || fail "stats -- --rat: $(cat stats)"
"$S" trace stats --format=native ./--dur >/dev/null 2>err || fail "--format=native: $(cat err)"

# ---- an unknown model or GPU is named where it came from; a sweep's rate out of range says so
"$S" trace gen --rate 1 --duration 30 -o u.csv >/dev/null || fail "trace gen u.csv"
printf '[tenant.a]\nmodel = nope\nreplicas = 1\ntrace = u.csv\n' >model.ini
expect_error 2 "^slicesim: replay: model.ini:2: tenant.a.model: unknown model 'nope' \(known: " \
    "$S" replay -c model.ini --db none
printf '[cluster]\ngpu = nope\n[tenant.a]\nmodel = llama-2-7b\ntrace = u.csv\n' >gpu.ini
expect_error 2 "^slicesim: replay: gpu.ini:2: cluster.gpu: unknown GPU 'nope' \(known: " \
    "$S" replay -c gpu.ini --db none
expect_error 2 "^slicesim: replay: --model: unknown model 'nope'" "$S" replay --model nope --db none
expect_error 2 "^slicesim: replay: --gpu: unknown GPU 'nope'" "$S" replay --gpu nope --db none
printf '[tenant.a]\nmodel = llama-2-7b\ntrace = u.csv\n' >ok.ini
printf '[sweep]\nscenario = ok.ini\ndb = r.db\n[grid]\nrate = 1, 1e7\n' >rate.ini
expect_error 2 "^slicesim: sweep: rate.ini:5: grid.rate: out of range \(0, 1e6\], got '1e7'$" \
    "$S" sweep rate.ini --dry-run


# ---- names shown on one line refuse control characters (a new line, an escape sequence) ---
printf '[sweep]\nname = a\033[31mred\nscenario = %s\n[grid]\nrun.seed = 1\n' "$SV" >esc.ini
expect_error 2 "^slicesim: sweep: esc.ini:2: sweep.name: 'a\\\\x1b\[31mred' holds a control character" \
    "$S" sweep esc.ini --dry-run
expect_error 2 "^slicesim: capacity: --name: a name may hold no control character .*, got 'x\\\\x1b\[2Jy'$" \
    "$S" capacity -c "$SV" --policies container --name "$(printf 'x\033[2Jy')" --db none
expect_error 2 "^slicesim: validate: --name: a name may hold no control character .*, got 'v\\\\x0a1'$" \
    "$S" validate --backend sim --gpu a100-80g --model llama-2-7b --trace "$TRACE" \
        --name "$(printf 'v\n1')" --db none
expect_error 2 "^slicesim: compare: --name: expected a name, got ''$" \
    "$S" compare -c "$SV" --policies container --name "" --db none
# and a refused value is shown on the one line of its message, not printed raw
expect_error 2 "^slicesim: fit: --name: 'a\\\\x0ab' is not an engine name" "$S" fit . --name "$(printf 'a\nb')"
expect_error 2 "^slicesim: fit: --description: 'a\\\\x1b\[31mb' is not one line" \
    "$S" fit . --description "$(printf 'a\033[31mb')"
expect_error 2 "^slicesim: replay: --batching: .*, got 'x\\\\x0ay'$" \
    "$S" replay --batching "$(printf 'x\ny')" --db none
expect_error 2 "^slicesim: plot: --format: expected png, svg, pdf or both, got 'p\\\\x0ang'$" \
    "$S" plot x.db --format "$(printf 'p\nng')"

echo "messages_cli: ok"
