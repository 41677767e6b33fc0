#!/bin/bash
# CLI tests of disaggregated prefill and decode: a scenario with prefill and decode pools runs
# under --check, reports its KV transfers in the table, the JSON and the database (the same
# counts in each), repeats bit for bit, draws its transfers on the timeline, and bad pool keys
# exit 2 with one line naming the file, line and key (pools with replicas, a pool of 0, one pool
# alone, pools larger than the cluster, an unknown kv_transfer, an unsupported combination).
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

cat >d.ini <<EOF2
[cluster]
gpu = a100-80g

[run]
seed = 3

[tenant.chat]
model = llama-2-7b
prefill_replicas = 2
decode_replicas = 1
kv_transfer = end
trace = $ROOT/traces/azure-conv-synth.csv
limit = 400
sla_ttft_ms = 1000
sla_tbt_ms = 100
EOF2

"$S" replay -c d.ini --check --db r.db >table 2>err || fail "replay: $(cat err)"
grep -q "disaggregated; vllm batching, prefill-affinity and decode-load routing" table ||
    fail "header: $(head -1 table)"
line=$(grep "prefill 2 x TP 1, decode 1 x TP 1, KV after the prefill:" table) || fail "KV line: $(cat table)"
n=$(echo "$line" | sed -E 's/.*: ([0-9]+) KV transfers.*/\1/')
[ "$n" -gt 300 ] || fail "KV transfers: $line"
"$S" replay -c d.ini --check --db none --json >a.json || fail "json"
"$S" replay -c d.ini --check --db none --json >b.json || fail "json again"
strip() { sed -E 's/"(wall_s|decision_wall_s|decisions_per_s)": [0-9.e+-]+//g' "$1"; }
cmp -s <(strip a.json) <(strip b.json) || fail "two runs differ"
grep -q '"prefill_replicas": 2, "decode_replicas": 1, "prefill_tp": 1, "decode_tp": 1, "kv_transfer": "end", "kv_transfers": {"count": '"$n"',' a.json ||
    fail "JSON kv_transfers: $(grep -o '"prefill_replicas.*' a.json | head -c 300)"
[ "$(sql r.db 'PRAGMA user_version')" = 18 ] || fail "schema version"
[ "$(sql r.db 'SELECT prefill_replicas || "/" || decode_replicas || "/" || kv_transfers FROM tenants')" = "2/1/$n" ] ||
    fail "tenants kv columns: $(sql r.db 'SELECT * FROM tenants')"
[ "$(sql r.db 'SELECT kv_exposed_s > 0 AND kv_gib > 0 FROM tenants')" = 1 ] || fail "kv sizes"
# both pools' GPUs worked: three GPU rows with iterations
[ "$(sql r.db 'SELECT count(*) FROM gpus WHERE iterations > 0')" = 3 ] || fail "GPU rows"

# the timeline: a send on the prefill side and a receive on the decode side per transfer
"$S" replay -c d.ini --db none --timeline tl.json >/dev/null || fail "timeline"
[ "$(grep -o '"name":"kv send"' tl.json | wc -l)" = "$n" ] || fail "kv send slices"
[ "$(grep -o '"name":"kv receive"' tl.json | wc -l)" = "$n" ] || fail "kv receive slices"
grep -q '"KV transfers"' tl.json || fail "KV transfers track"
# the co-located form of the same tenant has none of it
sed -e 's/^prefill_replicas = 2/replicas = 3/' -e '/^decode_replicas/d' -e '/^kv_transfer/d' d.ini >c.ini
"$S" replay -c c.ini --db none --json --timeline ctl.json >c.json || fail "co-located"
grep -q kv_transfers c.json && fail "kv_transfers in a co-located run's JSON"
grep -q 'KV transfers' ctl.json && fail "a KV track in a co-located timeline"
# --set makes the same pools; the stored scenario reads back
"$S" replay -c c.ini --set tenant.chat.replicas=1 --db none >/dev/null || fail "c.ini"

# bad input: one line, exit 2, FILE:LINE: key
cp d.ini bad1.ini && sed -i 's/^decode_replicas = 1/decode_replicas = 1\nreplicas = 3/' bad1.ini
expect_error 2 "bad1.ini:11: tenant.chat.replicas: must not be set with prefill_replicas and decode_replicas" \
    "$S" replay -c bad1.ini --db none
sed 's/^decode_replicas = 1/decode_replicas = 0/' d.ini >bad2.ini
expect_error 2 "bad2.ini:10: tenant.chat.decode_replicas: out of range \[1, 4096\], got '0'" \
    "$S" replay -c bad2.ini --db none
sed '/^decode_replicas/d' d.ini >bad3.ini
expect_error 2 "bad3.ini:9: tenant.chat.prefill_replicas: a disaggregated tenant needs both prefill_replicas and decode_replicas" \
    "$S" replay -c bad3.ini --db none
sed 's/^kv_transfer = end/kv_transfer = bulk/' d.ini >bad4.ini
expect_error 2 "bad4.ini:11: tenant.chat.kv_transfer: expected one of layer, end, got 'bulk'" \
    "$S" replay -c bad4.ini --db none
expect_error 2 "the tenants' replicas need 3 GPUs, nodes x gpus_per_node = 2" \
    "$S" replay -c d.ini --set cluster.nodes=1 --set cluster.gpus_per_node=2 --db none
expect_error 2 "replay: --set: tenant.chat.replicas: must not be set with prefill_replicas" \
    "$S" replay -c d.ini --set tenant.chat.replicas=2 --db none
expect_error 2 "tenant.chat.decode_tp: 3 does not divide the 32 attention heads of llama-2-7b" \
    "$S" replay -c d.ini --set tenant.chat.decode_tp=3 --db none
expect_error 2 "does not support cluster policy 'llumnix'" \
    "$S" replay -c d.ini --set policy.cluster=llumnix --db none
expect_error 2 "does not support operator placement 'slice'" \
    "$S" replay -c d.ini --set policy.ops=slice --db none
expect_error 2 "does not support pipeline parallelism" \
    "$S" replay -c d.ini --set tenant.chat.pp=2 --db none
expect_error 2 "does not support re-allocation" \
    "$S" replay -c d.ini --set policy.realloc_period_s=10 --db none
echo ok
