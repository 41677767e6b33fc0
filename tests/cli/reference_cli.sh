#!/bin/bash
# The generated reference pages (docs/reference/cli.md, scenario-keys.md, json-keys.md,
# schema.md) are what this binary prints: tools/gen-reference.py writes them again and any
# difference fails, with the command that brings them up to date. It also fails when
# docs/reference/database.md does not describe a column of the schema.
set -u
S=${SLICESIM:?SLICESIM not set}
SRC=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
python3 "$SRC/tools/gen-reference.py" "$S" "$T" 2>"$T/err" || fail "gen-reference: $(cat "$T/err")"
for page in cli.md scenario-keys.md json-keys.md schema.md; do
    diff -u "$SRC/docs/reference/$page" "$T/$page" >"$T/diff" ||
        fail "docs/reference/$page is not what this slicesim prints (run: python3 tools/gen-reference.py build-test/src/slicesim docs/reference):
$(head -40 "$T/diff")"
done
echo "reference_cli: ok"
