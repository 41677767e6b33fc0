#!/bin/bash
# CLI tests of prefix identity in generated traffic: trace gen's options and their off values
# (the default trace regenerates byte for byte with --groups 0 --turns fixed:1), the hit counts
# of a replay computed by hand (one group: every request after the first reuses the system
# prompt's full 512-token blocks, in whole engine blocks; conversations: every later turn
# reuses its previous turn's full engine blocks), the scenario's synthetic keys giving the same
# run as replaying the CSV trace gen writes, the shipped example, trace stats on such a trace,
# and the errors of bad values (exit 2, one line naming the key or option).
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

# the prefix_cache object's hit_tokens (the first: the run's, before the tenants')
hit_tokens() { grep -o '"hit_tokens": [0-9]*' "$1" | head -1 | grep -o '[0-9]*$'; }

"$S" trace gen --help >help || fail "trace gen --help"
for o in --groups --system --group-zipf --turns --think --max-context; do
    grep -q -- "$o" help || fail "trace gen --help does not mention $o"
done
grep -q "previous turn's" help || fail "trace gen --help does not say where think time starts"

# ---- off values: the default trace, byte for byte ------------------------------------------
"$S" trace gen --rate 5.5 --duration 3600 --arrival poisson --seed 1 --groups 0 --turns fixed:1 \
    --prompt "quantiles:0=2,0.5=1020,0.9=1871.4,0.99=4142,1=5921" \
    --output "quantiles:0=7,0.5=129,0.9=478.3,0.99=601,1=819" -o off.csv || fail "gen off"
cmp off.csv "$ROOT/traces/azure-conv-synth.csv" || fail "explicit off values changed the trace"

# ---- one group: (n - 1) x the system prompt's full blocks ------------------------------------
# 20 requests about 1 s apart (gamma, cv 0.01) on one container: each prefill is done long
# before the next arrival. The system prompt has 2,100 tokens: 4 full 512-token blocks (2,048
# tokens); its partial fifth block is never shared, so no request reuses more than 2,048.
N=20
"$S" trace gen --requests $N --rate 1 --arrival gamma --cv 0.01 --groups 1 --system fixed:2100 \
    --prompt uniform:50:400 --output fixed:8 --seed 3 -o g.csv || fail "gen one group"
head -1 g.csv | grep -qx 'request_id,arrival_s,tenant,prompt_tokens,output_tokens,session_id,hash_ids' ||
    fail "header: $(head -1 g.csv)"
for bs in 16 48; do
    "$S" replay --trace g.csv --replicas 1 --block-size $bs --db none --json >g$bs.json ||
        fail "replay one group, block size $bs"
    # engine blocks wholly inside the shared 2,048 tokens: 128 of 16 tokens, 42 of 48
    want=$(( (N - 1) * (2048 / bs) * bs ))
    [ "$(hit_tokens g$bs.json)" = "$want" ] ||
        fail "one group, block size $bs: hit tokens $(hit_tokens g$bs.json), want $want"
done

# ---- conversations: each later turn reuses its previous turn's full blocks ------------------
"$S" trace gen --duration 200 --rate 0.5 --arrival gamma --cv 0.01 --turns fixed:3 --think 20 \
    --prompt uniform:100:1500 --output uniform:10:300 --seed 5 -o t.csv || fail "gen turns"
want=$(awk -F, 'NR > 1 { if ($6 in last) h += int(last[$6] / 16) * 16; last[$6] = $4 }
                END { print h + 0 }' t.csv)
[ "$want" -gt 10000 ] || fail "too few later turns to test ($want tokens)"
"$S" replay --trace t.csv --replicas 1 --gpu h200 --db none --json >t.json || fail "replay turns"
[ "$(hit_tokens t.json)" = "$want" ] || fail "turns: hit tokens $(hit_tokens t.json), want $want"

# ---- the scenario's synthetic keys = replaying the CSV ------------------------------------------
SPEC="rate=4 duration=120 seed=11 groups=3 system=uniform:300:3000 group_zipf=1.1 turns=uniform:1:6 think=8 max_context=8192"
"$S" trace gen --rate 4 --duration 120 --seed 11 --groups 3 --system uniform:300:3000 \
    --group-zipf 1.1 --turns uniform:1:6 --think 8 --max-context 8192 -o c.csv || fail "gen c"
printf '[cluster]\ngpu = h100-sxm\n[run]\nseed = 1\n[tenant.default]\nmodel = llama-3-8b\nsynthetic = "%s"\n' \
    "$SPEC" >a.ini
sed 's|^synthetic = .*|trace = c.csv|' a.ini >b.ini
"$S" replay -c a.ini --db none --json >a.json || fail "replay synthetic"
"$S" replay -c b.ini --db none --json >b.json || fail "replay CSV"
grep -q '"hit_tokens": [1-9]' a.json || fail "the synthetic run hit nothing"
[ "$(sed 's/"wall_s": [0-9.]*//' a.json)" = "$(sed 's/"wall_s": [0-9.]*//' b.json)" ] ||
    fail "synthetic and CSV runs differ: $(diff a.json b.json | head -5)"

# ---- the shipped example -------------------------------------------------------------------------
"$S" replay -c "$ROOT/experiments/chat-sessions.ini" --db none >ex.out || fail "chat-sessions.ini"
grep -q "prefix cache: hit rate 62.8 % of prompt tokens" ex.out ||
    fail "chat-sessions.ini no longer gives the hit rate docs/guide/prefix-caching.md shows: $(grep prefix ex.out)"
"$S" trace stats c.csv >st.out || fail "trace stats of a generated trace with hash_ids"
grep -q "format *native" st.out || fail "trace stats: $(cat st.out)"

# ---- bad input ----------------------------------------------------------------------------------
bad() { printf '[tenant.x]\nmodel = llama-2-7b\nsynthetic = "rate=1 duration=10 %s"\n' "$1" >bad.ini; }
bad "groups=x"
expect_error 2 "^slicesim: replay: bad.ini:3: tenant.x.synthetic: groups: expected an integer in \[0, 100000\], got 'x'" "$S" replay -c bad.ini --db none
bad "groups=2 system=fixed:0"
expect_error 2 "bad.ini:3: tenant.x.synthetic: system: 'fixed:0': N: must be in" "$S" replay -c bad.ini --db none
bad "turns=fixed:3"
expect_error 2 "bad.ini:3: tenant.x.synthetic: think: turns can exceed 1" "$S" replay -c bad.ini --db none
bad "think=-1"
expect_error 2 "bad.ini:3: tenant.x.synthetic: think: expected seconds in \(0, 1e6\], got '-1'" "$S" replay -c bad.ini --db none
expect_error 2 "^slicesim: replay: --set: tenant.x.synthetic: group_zipf: expected a number in \[0, 100\], got 'x'" \
    "$S" replay -c bad.ini --db none --set "tenant.x.synthetic=rate=1 requests=9 group_zipf=x"
bad "cv=0"    # a key the spec had before: the file, line and key too
expect_error 2 "^slicesim: replay: bad.ini:3: tenant.x.synthetic: cv: expected a positive number, got '0'" "$S" replay -c bad.ini --db none
bad "rate=2 prompt=fixed:100"  # a key given twice: an error, as a key given twice in an INI file
expect_error 2 "^slicesim: replay: bad.ini:3: tenant.x.synthetic: rate: given twice \(each key once\)$" \
    "$S" replay -c bad.ini --db none
bad "prompt=fixed:100 prompt=fixed:200"
expect_error 2 "bad.ini:3: tenant.x.synthetic: prompt: given twice" "$S" replay -c bad.ini --db none
bad "tunrs=3"
expect_error 2 "bad.ini:3: tenant.x.synthetic: unknown key 'tunrs' \(known: .*turns, think, max_context\)" "$S" replay -c bad.ini --db none
expect_error 2 "^slicesim: trace gen: --groups: expected an integer" \
    "$S" trace gen --requests 5 --groups -3 -o x.csv
expect_error 2 "^slicesim: trace gen: --think: turns can exceed 1" \
    "$S" trace gen --requests 5 --turns uniform:1:3 -o x.csv
expect_error 2 "^slicesim: trace gen: --system: a system-prompt length needs groups > 0" \
    "$S" trace gen --requests 5 --system fixed:100 -o x.csv
expect_error 2 "^slicesim: trace gen: --max-context: expected an integer in \[1, 10000000\], got '0'" \
    "$S" trace gen --requests 5 --groups 1 --system fixed:9 --max-context 0 -o x.csv
expect_error 2 "^slicesim: trace gen: --turns: the largest value must be <= 1000" \
    "$S" trace gen --requests 5 --turns zipf:1:1:5000 --think 1 -o x.csv
[ ! -e x.csv ] && [ -z "$(tmp_of x.csv)" ] || fail "a refused gen left a file"
echo "prefixgen_cli: all checks passed"
