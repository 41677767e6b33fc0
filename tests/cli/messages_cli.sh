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

echo "messages_cli: ok"
