#!/bin/bash
# CLI tests of automatic prefix caching: a native trace with session_id turns it on (auto), the
# table's prefix-cache line and the JSON's prefix_cache object carry the exact hit counts of a
# hand-built trace, --prefix-cache off gives the run without it (and a trace without identity
# is unchanged by --prefix-cache on apart from the line), the database's prefix_* columns, the
# scenario key, and a bad value exits 2 with one line.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# Unloaded requests 100 s apart; session 7 three times, session 9 once (see test_prefix.c).
cat >p.csv <<'CSV'
request_id,arrival_s,tenant,prompt_tokens,output_tokens,tier,session_id
0,0,default,100,4,0,7
1,100,default,100,4,0,7
2,200,default,64,4,0,7
3,300,default,50,4,0,9
CSV
"$S" replay --trace p.csv --replicas 1 --db r.db --check >on 2>err || fail "replay: $(cat err)"
grep -q "prefix cache: hit rate 45.9 % of prompt tokens (144 of 314), 47.4 % of blocks; 144 prefill tokens saved; 0 blocks evicted" on ||
    fail "prefix line: $(cat on)"
"$S" replay --trace p.csv --replicas 1 --db none --json >on.json || fail "json"
# overall, with the ceiling (one instance that never evicts: the real hit) and the instance
grep -q '"prefix_cache": {"hit_rate": 0.458599, "block_hit_rate": 0.473684, "lookups": 4, "query_tokens": 314, "hit_tokens": 144, "query_blocks": 19, "hit_blocks": 9, "saved_tokens": 144, "evictions": 0, "ceiling_hit_rate": 0.458599, "ceiling_hit_tokens": 144, "ceiling_hit_blocks": 9, "instances": \[{"container": 0, "tenant": "default", "hit_rate": 0.458599, "block_hit_rate": 0.473684, "lookups": 4, "query_tokens": 314, "hit_tokens": 144, "query_blocks": 19, "hit_blocks": 9, "saved_tokens": 144, "evictions": 0}\]}' on.json ||
    fail "JSON: $(cat on.json)"
# the tenant's, with the spread over its instances
grep -q '"evictions": 0, "ceiling_hit_rate": 0.458599, "ceiling_hit_tokens": 144, "ceiling_hit_blocks": 9, "instance_hit_rate": {"instances": 1, "min": 0.458599, "mean": 0.458599, "max": 0.458599}}}\]' on.json ||
    fail "tenant JSON: $(cat on.json)"
[ "$(sql r.db 'SELECT prefix_hit_tokens || "/" || prefix_query_tokens || "/" || prefix_hit_blocks FROM summary')" = 144/314/9 ] ||
    fail "summary prefix columns"
[ "$(sql r.db 'SELECT prefix_saved_tokens FROM tenants')" = 144 ] || fail "tenants prefix columns"

"$S" replay --trace p.csv --replicas 1 --db none --prefix-cache off >off || fail "off"
grep -q "prefix cache" off && fail "a prefix line with the cache off"
"$S" replay --trace p.csv --replicas 1 --db none --json --prefix-cache off >off.json || fail "off json"
grep -q prefix_cache off.json && fail "prefix_cache in the JSON with the cache off"
# the TTFT of the hits is shorter: the two tables' TTFT rows differ
[ "$(grep TTFT on)" != "$(grep TTFT off)" ] || fail "caching changed no TTFT"
"$S" replay --trace p.csv --replicas 1 --db none --set engine.prefix_cache=off >off2 || fail "--set"
cmp -s <(grep -v simulated off) <(grep -v simulated off2) || fail "--set engine.prefix_cache=off differs from --prefix-cache off"

# A trace without identity: the same numbers with the cache on (nothing can hit).
TRACE=$ROOT/traces/azure-conv-synth.csv
"$S" replay --trace "$TRACE" --limit 500 --db none --json >a.json || fail "azure auto"
"$S" replay --trace "$TRACE" --limit 500 --db none --json --prefix-cache on >b.json || fail "azure on"
grep -q prefix_cache a.json && fail "auto turned the cache on without identity"
strip() {
    sed -e 's/"wall_s": [0-9.]*//' -e 's/, "prefix_cache": {[^]]*\]}//' \
        -e 's/, "prefix_cache": {[^}]*"instance_hit_rate": {[^}]*}}//g' "$1"
}
[ "$(strip a.json)" = "$(strip b.json)" ] || fail "an identity-less trace changed with the cache on"

# Native hash_ids (Mooncake's 512-token block ids): the second prompt shares the first block.
cat >h.csv <<'CSV'
request_id,arrival_s,tenant,prompt_tokens,output_tokens,hash_ids
0,0,default,1100,4,1 2 3
1,100,default,1100,4,1 5 6
CSV
"$S" replay --trace h.csv --replicas 1 --db none >h.out 2>err || fail "hash_ids: $(cat err)"
grep -q "prefix cache: hit rate 23.3 % of prompt tokens (512 of 2200)" h.out || fail "hash_ids: $(cat h.out)"

# --prefix-ceiling off: the same run and cache, the ceiling neither kept nor reported
"$S" replay --trace p.csv --replicas 2 --db none --json >c1.json || fail "ceiling on"
"$S" replay --trace p.csv --replicas 2 --db none --json --prefix-ceiling off >c0.json ||
    fail "ceiling off"
python3 - c1.json c0.json <<'PY' || fail "--prefix-ceiling off"
import json, sys
on, off = (json.load(open(f)) for f in sys.argv[1:3])
assert on["prefix_cache"]["ceiling_hit_rate"] > 0 and "ceiling_kept" not in on["prefix_cache"]
p = off["prefix_cache"]
assert p["ceiling_kept"] is False and p["ceiling_hit_rate"] == 0 and p["ceiling_hit_tokens"] == 0
for k in ("hit_rate", "hit_tokens", "query_tokens", "evictions"):
    assert p[k] == on["prefix_cache"][k], k
assert off["ttft_ms"] == on["ttft_ms"] and off["events"] == on["events"]
PY
"$S" replay --trace p.csv --replicas 2 --db none --set engine.prefix_ceiling=off >c0.txt ||
    fail "engine.prefix_ceiling=off"
grep -q "ceiling not kept (prefix_ceiling = off)" c0.txt || fail "the table: $(grep instance c0.txt)"
expect_error 2 "replay: --prefix-ceiling: expected one of on, off, got .maybe." "$S" replay --trace p.csv --db none --prefix-ceiling maybe

expect_error 2 "replay: --prefix-cache: expected one of auto, on, off, got .maybe." "$S" replay --trace p.csv --db none --prefix-cache maybe
echo "prefix_cli: all checks passed"
