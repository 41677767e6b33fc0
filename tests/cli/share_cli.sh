#!/bin/bash
# CLI tests of GPU sharing (docs/guide/gpu-sharing.md): two tenants' MIG instances on one A100
# are one GPU in the header, named on a shares line, in the JSON (share, share_gpus) and in the
# database (tenants.share, a gpus row per share with its physical GPU); MPS and time-sliced
# shares run under --check and repeat bit for bit; layouts the GPU does not allow and bad share
# keys exit 2 with one line naming the file, line, tenant and key; the bundles mig-best,
# mps-best, muxserve and slice-mig search a layout of shares on the scenario's GPUs; validate
# --colocate rehearses the GPU check's co-location measurement on the sim executor.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

cat >m.ini <<'EOF2'
[cluster]
gpu = a100-80g
[run]
seed = 2
[tenant.a]
model = llama-2-7b
share = mig:3g.40gb
synthetic = "rate=2 duration=60 prompt=lognormal:800:0.5 output=fixed:64"
[tenant.b]
model = llama-3-8b
share = mig:4g.40gb
synthetic = "rate=2 duration=60 prompt=lognormal:800:0.5 output=fixed:64"
EOF2
"$S" replay -c m.ini --db r.db >table || fail "replay: $(cat table)"
grep -q "2 tenants on 1 x a100-80g;" table || fail "header: $(head -1 table)"
grep -q "^  GPU 0 (node 0) shares: a mig:3g.40gb, b mig:4g.40gb$" table || fail "shares: $(cat table)"
"$S" replay -c m.ini --db none --json >m.json || fail "json"
grep -q '"share": "mig:3g.40gb", "share_gpus": \[0\]' m.json || fail "JSON share: $(head -c 600 m.json)"
[ "$(sql r.db "SELECT group_concat(share, ' ') FROM (SELECT share FROM tenants ORDER BY tenant)")" = "mig:3g.40gb mig:4g.40gb" ] ||
    fail "tenants.share"
[ "$(sql r.db "SELECT count(*) || ' ' || count(DISTINCT phys) || ' ' || sum(kv_pool_gib < 30) FROM gpus")" = "2 1 2" ] ||
    fail "gpus rows: $(sql r.db 'SELECT count(*) FROM gpus')"
# whole GPUs: the same scenario takes two
"$S" replay -c m.ini --db none --set tenant.a.share=whole --set tenant.b.share=whole >w ||
    fail "whole"
grep -q "2 tenants on 2 x a100-80g;" w || fail "whole header: $(head -1 w)"
grep -q "shares:" w && fail "a shares line for whole GPUs"

# MPS and time slicing: checked after every event, the same bytes twice
strip() { sed -E 's/"(wall_s|decision_wall_s|decisions_per_s)": [0-9.e+-]+//g' "$1"; }
for sh in mps:0.5 time mux; do
    set -- --set tenant.a.share=$sh --set tenant.b.share=$sh
    "$S" replay -c m.ini --db none --check --json "$@" >a.json || fail "$sh --check"
    "$S" replay -c m.ini --db none --json "$@" >b.json || fail "$sh"
    cmp -s <(strip a.json) <(strip b.json) || fail "$sh: two runs differ"
    SLICESIM_NO_STEADY=1 "$S" replay -c m.ini --db none --json "$@" >c.json || fail "$sh long way"
    cmp -s <(strip a.json) <(strip c.json) || fail "$sh: the steady path changes the results"
    grep -q "\"share\": \"$sh\", \"share_gpus\": \[0\]" a.json || fail "$sh JSON"
done

# the timeline: a shared GPU's tracks are named as its shares, each step says how long it would
# have taken alone, its slow-down and how many others it ran beside
"$S" replay -c m.ini --db none --set tenant.a.share=mps:0.5 --set tenant.b.share=mps:0.5 \
    --timeline tl.json --timeline-window 10:20 >/dev/null || fail "timeline"
python3 - tl.json <<'PY' || fail "timeline of MPS steps"
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
names = [e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"]
assert names == ["GPU 0 (MPS client of GPU 0, a100-80g, node 0, container 0)",
                 "GPU 1 (MPS client of GPU 0, a100-80g, node 0, container 1)"], names
it = [e for e in ev if e.get("cat") == "iteration"]
assert len(it) > 100, len(it)
for e in it:
    a = e["args"]
    assert abs(e["dur"] / 1e3 - a["alone_ms"] * a["slowdown"]) < 1e-3, a
    assert a["slowdown"] >= 1 - 1e-9 and (a["slowdown"] <= 1 + 1e-9 or a["shared_with"] == 1), a
assert max(e["args"]["slowdown"] for e in it) > 1.5
PY

# the sharing bundles: the best layout of MIG instances or MPS clients on the scenario's two
# GPUs, searched as static-best is; each tenant's share the smallest that holds its model
cat >c.ini <<'EOF2'
[cluster]
gpu = a100-80g
[run]
duration_s = 30
warmup_s = 5
[tenant.chat]
model = llama-2-7b
synthetic = "rate=2 duration=30 prompt=lognormal:800:0.5 output=lognormal:100:0.5"
sla_ttft_ms = 1000
[tenant.code]
model = llama-3-8b
synthetic = "rate=1 duration=30 prompt=lognormal:1500:0.5 output=lognormal:150:0.5"
sla_ttft_ms = 1000
EOF2
"$S" compare -c c.ini --policies static-best,mig-best,mps-best,muxserve,slice-mig --rates 1 --db c.db \
    >cmp 2>cmp.err || fail "compare: $(cat cmp.err)"
grep -Eq "^  mig-best at load 1: chat=[1-9] x mig:3g.40gb code=[1-9] x mig:3g.40gb containers" cmp ||
    fail "mig-best: $(cat cmp)"
grep -Eq "^  mps-best at load 1: chat=[1-9] x mps:0.4 code=[1-9] x mps:0.5 containers" cmp ||
    fail "mps-best: $(cat cmp)"
grep -Eq "^  muxserve at load 1: chat=[1-9] x mux code=[1-9] x mux containers" cmp ||
    fail "muxserve: $(cat cmp)"
grep -Eq "^  slice-mig at load 1: chat=[1-9] x mig:3g.40gb code=[1-9] x mig:3g.40gb" cmp ||
    fail "slice-mig: $(cat cmp)"
grep -Eq "slicesim: mig-best: .*\(2 of 2 GPUs; start " cmp.err || fail "mig-best GPUs: $(cat cmp.err)"
[ "$(sql c.db "SELECT count(*) FROM runs WHERE bundle = 'mig-best'")" = 1 ] || fail "mig-best run"
# chunked prefill on a share: each container's token budget times its compute share, in 256s
# (2048 on a whole GPU, 768 on a 3g.40gb instance: 3/7 of the SMs), seen in the timeline
"$S" replay -c m.ini --db none --set policy.batching=sarathi --set policy.token_budget=2048 \
    --set tenant.b.share=whole --set "tenant.a.synthetic=rate=8 duration=60 prompt=fixed:3000 output=fixed:8" \
    --set "tenant.b.synthetic=rate=8 duration=60 prompt=fixed:3000 output=fixed:8" \
    --timeline tlb.json >/dev/null || fail "replay sarathi"
python3 - tlb.json <<'PY' || fail "token budgets on a share and a whole GPU"
import json, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
most = {}
for e in ev:
    if e.get("cat") == "iteration":
        a = e["args"]
        c = a["container"]
        most[c] = max(most.get(c, 0), a["prefill_tokens"] + a["decode_seqs"])
assert most == {0: 768, 1: 2048}, most
PY
[ "$(sql c.db "SELECT count(DISTINCT g.phys) FROM gpus g JOIN runs r USING (run_id)
               WHERE r.bundle = 'mps-best'")" = 2 ] || fail "mps-best: not on 2 GPUs"

# the GPU check's co-location measurement, rehearsed on the sim executor (its processes do not
# contend): two worker processes, each GEMM alone and together, beside the model's prediction
"$S" validate --colocate time --backend sim --model llama-2-7b --gpu h100-sxm --seconds 0.05 \
    >co 2>co.err || fail "colocate time: $(cat co.err)"
grep -Eq "^  prefill +2048 .* 1\.000 +2\.040 " co || fail "colocate time: $(cat co)"
grep -Eq "^  decode +32 .* 1\.000 +2\.040 " co || fail "colocate time decode: $(cat co)"
"$S" validate --colocate mps --sm-share 0.5 --backend sim --model llama-2-7b --gpu h100-sxm \
    --seconds 0.05 --json >co.json || fail "colocate mps"
python3 - co.json <<'PY' || fail "colocate mps JSON: $(cat co.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["mode"] == "mps" and d["sm_share"] == 0.5, d
pre, dec = d["ops"]
assert pre["op"] == "prefill" and dec["op"] == "decode", d
# a compute-bound prefill beside a memory-bound decode: their memory parts sum past 1, and the
# decode, nearly all memory, is slowed more than the prefill
assert pre["memory_part"] < 0.5 < dec["memory_part"] < 1, d
assert 1 < pre["predicted"] < dec["predicted"], d
assert pre["slowdown"] == 1 and dec["slowdown"] == 1 and pre["samples_alone"] > 0, d
PY
expect_error 2 "colocate: expected mps or time, got 'mig'" \
    "$S" validate --colocate mig --backend sim --model llama-2-7b --gpu h100-sxm
expect_error 2 "validate: --colocate: --gpu is required" \
    "$S" validate --colocate time --backend sim --model llama-2-7b

# layouts a GPU does not allow, and bad keys
sed 's/^share = mig:3g.40gb/share = mig:4g.40gb/' m.ini >bad1.ini
printf 'share_gpus = 0\n' >>bad1.ini
expect_error 2 "bad1.ini:11: tenant.b.share: mig:4g.40gb does not fit on shared GPU 0 beside tenant a's: no MIG placement on a100-80g holds 4g.40gb \+ 4g.40gb" \
    "$S" replay -c bad1.ini --db none
sed 's/^share = mig:3g.40gb/share = mps:0.6/; s/^share = mig:4g.40gb/share = mps:0.5\nshare_gpus = 0/' m.ini >bad2.ini
expect_error 2 "bad2.ini:11: tenant.b.share: mps:0.5 does not fit on shared GPU 0 beside tenant a's: its MPS SM shares would sum to 1.1, over 1" \
    "$S" replay -c bad2.ini --db none
expect_error 2 "set: tenant.b.share_gpus: shared GPU 3 before GPU 1 has a share" \
    "$S" replay -c bad2.ini --db none --set tenant.b.share_gpus=3
expect_error 2 "tenant.a.share: 'mig:9g.1gb': a100-80g has no MIG profile '9g.1gb' \(known: 1g.10gb, " \
    "$S" replay -c m.ini --db none --set tenant.a.share=mig:9g.1gb
expect_error 2 "tenant.a.share: 'mps:2': an MPS share is mps:F" \
    "$S" replay -c m.ini --db none --set tenant.a.share=mps:2
expect_error 2 "tenant.a.share: 'mig:1g.10gb': l40s has no MIG profiles" \
    "$S" replay -c m.ini --db none --set cluster.gpu=l40s --set tenant.a.share=mig:1g.10gb
expect_error 2 "tenant.a.mem_gib: set, but the tenant has whole GPUs" \
    "$S" replay -c m.ini --db none --set tenant.a.share=whole --set tenant.a.mem_gib=10
expect_error 2 "tenant.a.mem_gib: 100.0 GiB is more than the GPU's 80.0 GiB" \
    "$S" replay -c m.ini --db none --set tenant.a.share=mps:0.4 --set tenant.a.mem_gib=100
expect_error 2 "m.ini:7: tenant.a.share: a shared GPU runs a container of one GPU \(tp = pp = 1\), got tp 2, pp 1" \
    "$S" replay -c m.ini --db none --set tenant.a.tp=2
expect_error 2 "tenant.a.share: 'mux:2': a share is mig:PROFILE, mps:F, time, mux or whole" \
    "$S" replay -c m.ini --db none --set tenant.a.share=mux:2
expect_error 2 "tenant.a.share: operator placement 'slice' runs beside MIG instances and whole GPUs, not beside multiplexed containers" \
    "$S" replay -c m.ini --db none --set tenant.a.share=mux --set policy.ops=slice
expect_error 2 "tenant.a.share: a GPU runs one kind of sharing|tenant.b.share: .*a GPU runs one kind of sharing" \
    "$S" replay -c m.ini --db none --set tenant.b.share=time --set tenant.b.share_gpus=0
exit 0
