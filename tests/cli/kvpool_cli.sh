#!/bin/bash
# CLI tests of the KV pool below the prefix caches: a scenario's [kvpool] section and --set
# kvpool.KEY=VALUE turn it on, the table's "KV pool:" line and the JSON's kvpool objects (the
# run's and each tenant's) and the database's kvpool_* columns carry its counters, a pool off leaves the output as it was, and bad
# values exit 2 with one line naming the file, line and key: a CPU tier larger than the node's
# host memory, a zero or negative bandwidth, an unknown scope, an SSD tier without a CPU tier.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# Ten sessions of long prompts, again and again, on a small KV cache: evictions, then loads.
{
    echo "request_id,arrival_s,tenant,prompt_tokens,output_tokens,tier,session_id"
    for i in $(seq 0 199); do echo "$i,$((i / 4)).$((i % 4 * 25)),default,$((3000 + i % 10 * 100)),8,0,$((i % 10 + 1))"; done
} >s.csv
cat >exp.ini <<'INI'
[cluster]
gpu = a100-80g

[engine]
gpu_mem_util = 0.25

[kvpool]
cpu_gib = 4096

[tenant.chat]
model = llama-2-7b
trace = s.csv
INI
expect_error 2 "^slicesim: replay: [^ ]*exp.ini:8: kvpool.cpu_gib: 4096 GiB is more than the node's 2048 GiB of host memory \(.*a100-80g.ini\)$" \
    "$S" replay -c exp.ini --db none
expect_error 2 "^slicesim: replay: --set: kvpool.ssd_gbps: out of range \(0, inf\), got '0'$" \
    "$S" replay -c exp.ini --db none --set kvpool.cpu_gib=8 --set kvpool.ssd_gbps=0
expect_error 2 "^slicesim: replay: --set: kvpool.cpu_gbps: out of range \[0, inf\), got '-1'$" \
    "$S" replay -c exp.ini --db none --set kvpool.cpu_gib=8 --set kvpool.cpu_gbps=-1
expect_error 2 "^slicesim: replay: --set: kvpool.scope: expected one of node, cluster, got 'rack'$" \
    "$S" replay -c exp.ini --db none --set kvpool.cpu_gib=8 --set kvpool.scope=rack
expect_error 2 "^slicesim: replay: --set: kvpool.ssd_gib: an SSD tier needs kvpool.cpu_gib > 0" \
    "$S" replay -c exp.ini --db none --set kvpool.cpu_gib=0 --set kvpool.ssd_gib=100
sed -i 's/^cpu_gib = 4096/cpu_gib = 0/' exp.ini

"$S" replay -c exp.ini --db none --json >off.json 2>err || fail "off: $(cat err)"
grep -q kvpool off.json && fail "a kvpool object with the pool off"
"$S" replay -c exp.ini --db none >off.txt || fail "off table"
grep -q "KV pool" off.txt && fail "a KV pool line with the pool off"
"$S" replay -c exp.ini --db none --check --set kvpool.cpu_gib=16 >on.txt 2>err || fail "on: $(cat err)"
grep -Eq "^  KV pool: loaded [1-9][0-9]* blocks \(CPU [1-9][0-9]*, SSD 0, remote 0; .* GiB in .* s\) for [1-9][0-9]* requests, 0 recomputed instead; offloaded [1-9][0-9]* blocks" on.txt ||
    fail "KV pool line: $(cat on.txt)"
"$S" replay -c exp.ini --db none --json --set kvpool.cpu_gib=16 >on.json || fail "on json"
grep -Eq '"kvpool": \{"lookups": [1-9][0-9]*, "gpu_blocks": [0-9]+, "cpu_blocks": [1-9][0-9]*, .*"cpu_peak_bytes": [1-9][0-9]*, "ssd_peak_bytes": 0\}' on.json ||
    fail "run's kvpool JSON: $(cat on.json)"
grep -Eq '"tenants": \[\{"name": "chat".*"kvpool": \{"lookups": [1-9]' on.json || fail "tenant's kvpool JSON"
# the database: summary and tenant columns, the peak, 0 with the pool off
"$S" replay -c exp.ini --db r.db --set kvpool.cpu_gib=16 >/dev/null || fail "db"
"$S" replay -c exp.ini --db r.db >/dev/null || fail "db off"
[ "$(sql r.db 'SELECT kvpool_loads > 0 AND kvpool_cpu_blocks > 0 AND kvpool_cpu_peak_bytes > 0 AND kvpool_ssd_peak_bytes = 0 FROM summary WHERE run_id = 1')" = 1 ] ||
    fail "summary kvpool columns"
[ "$(sql r.db 'SELECT s.kvpool_cpu_blocks = t.kvpool_cpu_blocks FROM summary s JOIN tenants t USING (run_id) WHERE run_id = 1')" = 1 ] ||
    fail "tenants kvpool columns"
[ "$(sql r.db 'SELECT kvpool_lookups + kvpool_offload_blocks + kvpool_cpu_peak_bytes FROM summary WHERE run_id = 2')" = 0 ] ||
    fail "kvpool columns with the pool off"
# more prompt tokens hit with the pool than without
hit() { sed -n 's/.*"prefix_cache": {"hit_rate": \([0-9.]*\).*/\1/p' "$1" | head -1; }
awk -v a="$(hit off.json)" -v b="$(hit on.json)" 'BEGIN { exit !(b > a) }' ||
    fail "hit rate with the pool $(hit on.json) not above $(hit off.json)"
# The tiers' sizes are bounded so that their bytes cannot wrap (issue 23: at ssd_gib >= ~1.7e10
# the SSD tier's bytes wrapped to 0 and the tier was silently off, ssd_blocks 0): at its bound
# the SSD tier serves loads, past it the key is refused with its range; so is the CPU tier's.
ssd() { "$S" replay -c exp.ini --db none --json --set kvpool.cpu_gib=0.05 --set kvpool.ssd_gbps=100 "$@"; }
ssd --set kvpool.ssd_gib=1e6 >ssd.json 2>err || fail "ssd_gib at its bound: $(cat err)"
grep -Eq '"kvpool": \{[^}]*"ssd_blocks": [1-9][0-9]*, .*"ssd_peak_bytes": [1-9][0-9]*\}' ssd.json ||
    fail "no SSD tier at ssd_gib = 1e6: $(grep -o '"kvpool": {[^}]*}' ssd.json | head -1)"
expect_error 2 "^slicesim: replay: --set: kvpool\.ssd_gib: out of range \[0, 1e\+06\], got '1\.7e10'$" \
    ssd --set kvpool.ssd_gib=1.7e10
expect_error 2 "^slicesim: replay: --set: kvpool\.ssd_gib: out of range \[0, 1e\+06\], got '1e300'$" \
    ssd --set kvpool.ssd_gib=1e300
expect_error 2 "^slicesim: replay: --set: kvpool\.cpu_gib: out of range \[0, 65536\], got '65537'$" \
    "$S" replay -c exp.ini --db none --set kvpool.cpu_gib=65537
sed 's/^cpu_gib = 0$/cpu_gib = 1e19/' exp.ini >big.ini
expect_error 2 "^slicesim: replay: big\.ini:8: kvpool\.cpu_gib: out of range \[0, 65536\], got '1e19'$" \
    "$S" replay -c big.ini --db none
echo "kvpool_cli: all checks passed"
