#!/bin/bash
# CLI tests of the error messages of issue 13: numbers out of range say "out of range [lo,
# hi]" rather than "not a number"; a message names the option or the FILE:LINE the value came
# from; long options are matched exactly; bytes that are not text are escaped. Each case is
# one line on stderr and exit status 2 (lib.sh's expect_error).
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
echo "messages_cli: ok"
