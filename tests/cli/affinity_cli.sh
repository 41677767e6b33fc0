#!/bin/bash
# CLI tests of prefix caching per instance, its ceiling and prefix-affinity routing: on three
# interleaved sessions over two instances, --route rr and --route affinity print the hit rates
# a model of the construction gives (computed here), the per-instance JSON and database rows add
# up to the tenant, the ceiling is the model's, two runs of affinity routing are identical and
# pass --check, the scenario key and the weights are taken, and bad weights exit 2 with one line.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# Session s's turn k (request a = 3k + s): prompt base[s] + 64 k, session id 10 + s; the first
# turns arrive 1 ms apart, the others 100 s apart (everything before has finished).
awk 'BEGIN {
    split("2000 200 300", base, " ")
    print "request_id,arrival_s,tenant,prompt_tokens,output_tokens,tier,session_id"
    for (a = 0; a < 15; a++) {
        s = a % 3; k = int(a / 3)
        printf "%d,%s,default,%d,4,0,%d\n", a, k ? 100 * a : a / 1000, base[s + 1] + 64 * k, 10 + s
    }
}' >s.csv

# The model: request a on instance inst(a); a hit is the longest prefix of its session cached on
# that instance, at most (prompt - 1) / 16 blocks; the ceiling the same over both instances.
# MODE rr: a % 2. MODE affinity: the first turns by load (session 0 to instance 0, the idle
# lowest id; sessions 1 and 2 to instance 1, away from session 0's 2,000 tokens), then where
# the session's prefix is. Prints: hit tokens, query tokens, ceiling tokens, instance 0's and
# instance 1's hit tokens.
model() {
    awk -v mode="$1" 'BEGIN {
        split("2000 200 300", base, " "); split("0 1 1", first, " ")
        for (a = 0; a < 15; a++) {
            s = a % 3; k = int(a / 3); p = base[s + 1] + 64 * k
            i = mode == "rr" ? a % 2 : first[s + 1]
            cap = int((p - 1) / 16); full = int(p / 16)
            h = reg[i, s] < cap ? reg[i, s] : cap; c = all[s] < cap ? all[s] : cap
            hit += 16 * h; q += p; ceil += 16 * c; inst[i] += 16 * h
            if (full > reg[i, s]) reg[i, s] = full
            if (full > all[s]) all[s] = full
        }
        printf "%d %d %d %d %d\n", hit, q, ceil, inst[0], inst[1]
    }'
}

for mode in rr affinity; do
    read -r hit q ceil i0 i1 <<<"$(model $mode)"
    "$S" replay --trace s.csv --replicas 2 --route $mode --check --db $mode.db --json >$mode.json 2>err ||
        fail "$mode: $(cat err)"
    grep -q "\"hit_tokens\": $hit, \"query_blocks\"" $mode.json || fail "$mode: want $hit hit tokens: $(cat $mode.json)"
    grep -q "\"query_tokens\": $q, " $mode.json || fail "$mode: want $q query tokens"
    grep -q "\"ceiling_hit_tokens\": $ceil, " $mode.json || fail "$mode: want a ceiling of $ceil tokens"
    grep -q "\"instances\": \[{\"container\": 0, \"tenant\": \"default\", \"hit_rate\": [0-9.]*, \"block_hit_rate\": [0-9.]*, \"lookups\": [0-9]*, \"query_tokens\": [0-9]*, \"hit_tokens\": $i0, .*{\"container\": 1, \"tenant\": \"default\", \"hit_rate\": [0-9.]*, \"block_hit_rate\": [0-9.]*, \"lookups\": [0-9]*, \"query_tokens\": [0-9]*, \"hit_tokens\": $i1, " $mode.json ||
        fail "$mode: want instances with $i0 and $i1 hit tokens: $(cat $mode.json)"
    # the database: instances add up to the tenant, the ceiling as in the JSON
    [ "$(sql $mode.db 'SELECT sum(prefix_hit_tokens) || "/" || sum(prefix_query_tokens) || "/" || sum(prefix_lookups) FROM instances')" = "$hit/$q/15" ] ||
        fail "$mode: instances rows"
    [ "$(sql $mode.db 'SELECT prefix_hit_tokens || "/" || prefix_ceiling_hit_tokens FROM tenants')" = "$hit/$ceil" ] ||
        fail "$mode: tenants row"
    [ "$(sql $mode.db "SELECT prefix_ceiling_hit_rate = $ceil.0 / $q FROM summary")" = 1 ] ||
        fail "$mode: summary ceiling rate"
    # the table: the instance spread and the ceiling
    "$S" replay --trace s.csv --replicas 2 --route $mode --db none >$mode.txt || fail "$mode table"
    grep -Eq "prefix cache by instance min [0-9.]+ %, mean [0-9.]+ %, max [0-9.]+ % \(2 instances\); ceiling [0-9.]+ %" $mode.txt ||
        fail "$mode: table line: $(cat $mode.txt)"
done
read -r rr_hit _ <<<"$(model rr)"
read -r aff_hit _ aff_ceil _ <<<"$(model affinity)"
[ "$aff_hit" -gt "$rr_hit" ] && [ "$aff_hit" = "$aff_ceil" ] || fail "the model: affinity $aff_hit, rr $rr_hit, ceiling $aff_ceil"

# Determinism: the same run twice, byte for byte but the wall clock.
"$S" replay --trace s.csv --replicas 2 --routing affinity --check --db none --json >again.json || fail "again"
strip() { sed -e 's/"\([a-z_]*wall_s\)": [0-9.e+-]*//g' "$1"; }
[ "$(strip affinity.json)" = "$(strip again.json)" ] || fail "two affinity runs differ"

# The scenario key and the weights (as policy keys), resolved and stored with the run.
"$S" replay --trace s.csv --replicas 2 --set policy.routing=affinity --set policy.affinity_cache_weight=0 \
    --db w.db --json >w.json || fail "weights"
[ "$(sql w.db "SELECT json_extract(params, '\$.\"routing.affinity_cache_weight\"') || '/' || json_extract(params, '\$.\"routing.affinity_load_weight\"') FROM runs")" = 0/1 ] ||
    fail "stored weights: $(sql w.db 'SELECT params FROM runs')"
grep -q '"routing": "affinity"' w.json || fail "routing name"

expect_error 2 "affinity_cache_weight" "$S" replay --trace s.csv --db none --route affinity --param affinity_cache_weight=-1
expect_error 2 "affinity_load_weight" "$S" replay --trace s.csv --db none --route affinity --param affinity_load_weight=lots
# a weight with another router: a warning that names the router it belongs to
"$S" replay --trace s.csv --db none --route rr --param affinity_cache_weight=1 >/dev/null 2>err ||
    fail "weight with rr: $(cat err)"
grep -q "parameter 'affinity_cache_weight' is not used by .* routing 'rr' .*(it belongs to affinity)" err ||
    fail "weight with rr: $(cat err)"
echo "affinity_cli: all checks passed"
