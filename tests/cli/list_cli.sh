#!/usr/bin/env bash
# CLI test of `slicesim list`: both catalog listings show every shipped profile, tier-mixes
# shows the workload module's mixes, --json is valid JSON with the same entries, usage errors
# exit 2 with one "slicesim: " line, a missing profiles directory exits 1, --help exits 0.
# Needs $SLICESIM and $SS_SOURCE_ROOT (set by meson).
set -u

: "${SLICESIM:?set SLICESIM to the slicesim binary}"
: "${SS_SOURCE_ROOT:?set SS_SOURCE_ROOT to the source tree}"
[ -x "$SLICESIM" ] || { echo "skip: $SLICESIM is not executable"; exit 77; }

PROFILES="$SS_SOURCE_ROOT/profiles"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/list_cli.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# run NAME WANT_STATUS ARGS...: run slicesim, keep stdout/stderr in $tmp/NAME.{out,err}.
run() {
    local name=$1 want=$2
    shift 2
    "$SLICESIM" "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    local got=$?
    [ "$got" -eq "$want" ] || fail "$name: exit $got, want $want: $(head -c 300 "$tmp/$name.err")"
}

# one_error_line NAME PATTERN: stderr is exactly one line, starts "slicesim: ", matches PATTERN.
one_error_line() {
    local name=$1 pat=$2 err="$tmp/$1.err"
    [ "$(wc -l <"$err")" -eq 1 ] || fail "$name: stderr is not one line: $(cat "$err")"
    grep -q '^slicesim: ' "$err" || fail "$name: stderr lacks the 'slicesim: ' prefix"
    grep -q -- "$pat" "$err" || fail "$name: stderr does not match '$pat': $(cat "$err")"
}

run models 0 list models --profiles "$PROFILES"
for m in llama-2-7b llama-2-13b llama-2-70b llama-3-8b llama-3-70b mistral-7b qwen2.5-7b \
         qwen2.5-72b mixtral-8x7b; do
    grep -q "^$m " "$tmp/models.out" || fail "list models lacks $m"
done
[ "$(wc -l <"$tmp/models.out")" -eq 10 ] || fail "list models: want a header and 9 rows"
grep -q '^llama-2-7b  *6\.74 ' "$tmp/models.out" || fail "llama-2-7b should show 6.74 B params"
grep -q '^mixtral-8x7b .* 8/2 ' "$tmp/models.out" || fail "mixtral-8x7b should show experts 8/2"
[ -s "$tmp/models.err" ] && fail "list models wrote to stderr: $(cat "$tmp/models.err")"

run gpus 0 list gpus --profiles "$PROFILES"
for g in a100-80g h100-sxm h200 l40s; do
    grep -q "^$g " "$tmp/gpus.out" || fail "list gpus lacks $g"
done
[ "$(wc -l <"$tmp/gpus.out")" -eq 5 ] || fail "list gpus: want a header and 4 rows"
grep -q '^h100-sxm .* 989 .* 3\.35 ' "$tmp/gpus.out" ||
    fail "h100-sxm row: $(grep h100 "$tmp/gpus.out")"
# Columns line up: the last column is right-aligned, so every row is as long as the header.
awk 'NR == 1 { n = length($0) } length($0) != n { bad = 1 } END { exit bad }' "$tmp/gpus.out" ||
    fail "list gpus rows are not aligned"

# The default directory (no --profiles) is found from anywhere via the compiled-in source root.
(cd "$tmp" && "$SLICESIM" list gpus >"$tmp/default.out" 2>&1) || fail "list gpus without --profiles"
cmp -s "$tmp/default.out" "$tmp/gpus.out" || fail "default profiles differ from --profiles"

if command -v python3 >/dev/null; then
    run json 0 list --json models --profiles "$PROFILES"
    python3 - "$tmp/json.out" <<'PY' || fail "list --json models is not the expected JSON"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 9, len(rows)
m = {r["name"]: r for r in rows}
assert m["llama-2-7b"]["kv_bytes_per_token"] == 524288
assert abs(m["mixtral-8x7b"]["params"] / 46.7e9 - 1) < 0.01
PY
    run gjson 0 list gpus --json --profiles "$PROFILES"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert len(r)==4' \
        "$tmp/gjson.out" || fail "list --json gpus is not a 4-entry JSON array"
fi

# Engines: a table that fits 100 columns (the description wrapped under itself), every term of
# one engine with `list engines NAME`, of all with --long; none of them wider than 100 columns,
# even with a description of the longest length a profile allows (127 characters).
within_100() { # NAME: no line of $tmp/NAME.out is wider than 100 columns
    awk -v f="$1" 'length($0) > 100 { print "FAIL: " f ": line " NR " has " length($0) " columns"; bad = 1 }
                   END { exit bad }' "$tmp/$1.out" || fails=$((fails + 1))
}
run engines 0 list engines --profiles "$PROFILES"
within_100 engines
head -1 "$tmp/engines.out" | grep -q '^ENGINE  *OVERLAP  *ASYNC  *ITER_US  *FRONTEND_MS  *DESCRIPTION$' ||
    fail "list engines header: $(head -1 "$tmp/engines.out")"
for e in vllm-0.15 vllm-0.2 vllm-eager; do
    grep -q "^$e " "$tmp/engines.out" || fail "list engines lacks $e"
done
grep -q '^vllm-eager  *serial  *no  *3000  ' "$tmp/engines.out" ||
    fail "vllm-eager row: $(grep '^vllm-eager' "$tmp/engines.out")"
run engine_one 0 list engines vllm-eager --profiles "$PROFILES"
within_100 engine_one
head -1 "$tmp/engine_one.out" | grep -q '^vllm-eager: eager vLLM-class engine' ||
    fail "list engines vllm-eager: $(head -1 "$tmp/engine_one.out")"
grep -q '^  on h100-sxm  *iteration 2500 us, ' "$tmp/engine_one.out" ||
    fail "list engines vllm-eager lacks its h100-sxm host times"
grep -q '^  all-reduce  *ring, 0.7 of the link, 0 us per step$' "$tmp/engine_one.out" ||
    fail "list engines vllm-eager lacks its all-reduce"
run engines_long 0 list --long engines --profiles "$PROFILES"
within_100 engines_long
[ "$(grep -c '^vllm' "$tmp/engines_long.out")" -eq 3 ] || fail "list --long engines: want 3 engines"
# every line of vllm-eager's own view is a line of --long's
[ -z "$(grep -vxFf "$tmp/engines_long.out" "$tmp/engine_one.out")" ] ||
    fail "list --long engines lacks lines of vllm-eager's view"
mkdir -p "$tmp/long/hardware" "$tmp/long/models" "$tmp/long/engines"
cp "$PROFILES/hardware/"*.ini "$tmp/long/hardware/"
cp "$PROFILES/models/llama-2-7b.ini" "$tmp/long/models/"
desc=$(printf 'word%.0s ' $(seq 25) | cut -c1-127)
sed "s/^description = .*/description = $desc/" "$PROFILES/engines/vllm-eager.ini" \
    >"$tmp/long/engines/vllm-eager.ini"
cp "$PROFILES/engines/vllm-0.15.ini" "$tmp/long/engines/"
run engines_wide 0 list engines --profiles "$tmp/long"
within_100 engines_wide
grep -q "word word" "$tmp/engines_wide.out" || fail "the long description is not shown"
run engine_wide 0 list engines vllm-eager --profiles "$tmp/long"
within_100 engine_wide
run engine_none 2 list engines vllm-9 --profiles "$PROFILES"
one_error_line engine_none "no engine 'vllm-9' in the catalog (its engines: vllm-0.15, vllm-0.2, vllm-eager)"
run long_models 2 list --long models --profiles "$PROFILES"
one_error_line long_models "--long lists engines only"
if command -v python3 >/dev/null; then
    run ejson 0 list --json engines vllm-eager --profiles "$PROFILES"
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert len(r)==1 and r[0]["name"]=="vllm-eager" and r[0]["per_gpu"]["h200"]["iter_fixed_s"]==0.0025, r' \
        "$tmp/ejson.out" || fail "list --json engines vllm-eager: $(cat "$tmp/ejson.out")"
fi

# Tier mixes need no catalog: 4 mixes x K = 1..10, the K = 5 shapes as specified.
run mixes 0 list tier-mixes --profiles "$tmp/none"
[ "$(wc -l <"$tmp/mixes.out")" -eq 41 ] || fail "list tier-mixes: want a header and 40 rows"
grep -q '^enterprise  5  0\.100 0\.300 0\.500 0\.080 0\.020$' "$tmp/mixes.out" ||
    fail "enterprise K=5: $(grep '^enterprise  5' "$tmp/mixes.out")"
grep -q '^gaussian    5  0\.050 0\.200 0\.500 0\.200 0\.050$' "$tmp/mixes.out" ||
    fail "gaussian K=5: $(grep '^gaussian    5' "$tmp/mixes.out")"
if command -v python3 >/dev/null; then
    run mjson 0 list tier-mixes --json
    python3 - "$tmp/mjson.out" <<'PY' || fail "list --json tier-mixes is not the expected JSON"
import json, sys
rows = json.load(open(sys.argv[1]))
assert len(rows) == 40, len(rows)
for r in rows:
    assert len(r["p"]) == r["tiers"], r
    assert abs(sum(r["p"]) - 1) < 1e-5, r
    if r["mix"] == "powerlaw":  # p_k ~ 1/(k+1): tier 0 twice as likely as tier 1
        assert r["tiers"] == 1 or abs(r["p"][0] / r["p"][1] - 2) < 1e-4, r
PY
fi

run bad_kind 2 list tenants --profiles "$PROFILES"
one_error_line bad_kind "unknown kind 'tenants' (valid: models, gpus, engines, tier-mixes, keys)"
run no_kind 2 list
one_error_line no_kind "models, gpus, engines, tier-mixes"
run two_kinds 2 list models gpus
one_error_line two_kinds "models, gpus, engines, tier-mixes"
run bad_opt 2 list --frobnicate models
one_error_line bad_opt "unknown option '--frobnicate'"
run no_arg 2 list models --profiles
one_error_line no_arg "'--profiles' needs an argument"
run no_dir 1 list models --profiles "$tmp/none"
one_error_line no_dir "$tmp/none/hardware: cannot open directory"

# A malformed profile is the user's input: exit 2, FILE:LINE: key in the message.
mkdir -p "$tmp/p/hardware" "$tmp/p/models"
cp "$PROFILES/hardware/h200.ini" "$tmp/p/hardware/"
sed 's/^hidden = /hiden = /' "$PROFILES/models/llama-3-8b.ini" >"$tmp/p/models/llama-3-8b.ini"
run typo 2 list models --profiles "$tmp/p"
one_error_line typo "$tmp/p/models/llama-3-8b.ini:[0-9]*: model.hiden: unknown key"

run help 0 list --help
grep -q '^usage: slicesim list' "$tmp/help.out" || fail "--help does not print the usage"
[ -s "$tmp/help.err" ] && fail "--help wrote to stderr"

# list keys: the scenario's key table (every section) and the policies' parameters, in 100
# columns, and as JSON with the same keys; each default is one --set takes back
run keys 0 list keys
run keys_json 0 list keys --json
for k in cluster.gpu run.seed engine.block_size kvpool.cpu_gib tenant.NAME.sla_ttft_ms \
         policy.max_num_seqs policy.slice_period_ms; do
    grep -q "^$k " "$tmp/keys.out" || fail "list keys lacks $k"
done
grep -q '^cluster.gpu  *a100-80g  *a name' "$tmp/keys.out" || fail "cluster.gpu's row"
grep -q '^policy.max_num_seqs .*read by batching vllm, batching sarathi' "$tmp/keys.out" ||
    fail "policy.max_num_seqs's readers"
awk 'length($0) > 100 { bad = 1 } END { exit bad }' "$tmp/keys.out" || fail "list keys: a line over 100 columns"
python3 - "$tmp/keys_json.out" "$tmp/keys.out" <<'PY' || fail "list keys --json differs from the table"
import json, sys
keys = json.load(open(sys.argv[1]))
rows = [l.split()[0] for l in open(sys.argv[2]).read().splitlines()[1:] if l and not l.startswith(" ")]
assert [k["section"] + "." + k["key"] for k in keys] == rows, "the keys differ"
assert {k["section"] for k in keys} >= {"cluster", "policy", "run", "engine", "kvpool", "tenant.NAME"}
PY
# the defaults it shows are the defaults: a replay with every cluster, run, engine and kvpool
# key --set to its listed default gives the results of one without
python3 - "$SLICESIM" "$tmp/keys_json.out" <<'PY' || fail "a default list keys shows is not the default"
import json, subprocess, sys
exe, keys = sys.argv[1], json.load(open(sys.argv[2]))
sets = []
for k in keys:
    if k["section"] in ("cluster", "run", "engine", "kvpool") and k["key"] != "db":
        sets += ["--set", f'{k["section"]}.{k["key"]}={k["default"]}']
base = [exe, "replay", "--db", "none", "--limit", "50", "--json", "--no-progress"]
a, b = (json.loads(subprocess.run(c, check=True, capture_output=True, text=True).stdout)
        for c in (base, base + sets))
for d in (a, b):
    d.pop("wall_s")
assert len(sets) > 30 and a == b, [k for k in a if a[k] != b.get(k)]
PY

if [ "$fails" -gt 0 ]; then
    echo "$fails check(s) failed"
    exit 1
fi
echo "list_cli: all checks passed"
