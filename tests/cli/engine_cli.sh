#!/bin/bash
# CLI tests of engine profiles: `slicesim list engines` (table and JSON), selecting an engine
# (replay --engine, a scenario's [tenant.X] engine, --set, compare bundles and --set, a sweep
# grid, a profile file by its path), the engine stored with each run (runs.engine) and named in
# the banner and --json, that a different engine changes the results and the default one does
# not, and the error contract: an unknown engine exits 2 with one line naming FILE:LINE: field
# or the option, and an old hardware file with engine terms names the key.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
TRACE=$ROOT/traces/azure-conv-synth.csv

# list engines: the shipped engines in a table; every term of one, the eager one's per-GPU host
# time included, with list engines NAME
"$S" list engines >list 2>err || fail "list engines: $(cat err)"
grep -Eq '^vllm-eager +serial +no +3000 +0 +eager vLLM-class engine' list ||
    fail "list engines: $(cat list)"
grep -Eq '^vllm-0.15 +serial +yes +[0-9.]+ +[0-9.]+ +vLLM 0.15 ' list ||
    fail "list engines: the default engine: $(cat list)"
"$S" list engines vllm-eager >eager 2>err || fail "list engines vllm-eager: $(cat err)"
for want in '  async scheduling    no' '  host time           iteration 3000 us, sequence 20 us, token 0.5 us' \
    '  kernels             floor 5 us, launch 0 us' \
    '  on h100-sxm         iteration 2500 us, sequence 20 us, token 0.5 us, floor 5 us, launch 0 us' \
    '  on h200             iteration 2500 us, sequence 20 us, token 0.5 us, floor 5 us, launch 0 us' \
    '  fused kernels       silu-mul' '  MoE expert GEMMs    1 of the roofline' \
    "  attention speed     1 x the GEMMs' roofline efficiencies" \
    '  all-reduce          ring, 0.7 of the link, 0 us per step' \
    '  front end           0 ms added to TTFT and E2E'; do
    grep -qxF "$want" eager || fail "list engines vllm-eager lacks '$want': $(cat eager)"
done
"$S" list engines vllm-0.15 >default 2>err || fail "list engines vllm-0.15: $(cat err)"
grep -Eq '^  fused kernels +add-norm, silu-mul$' default && grep -Eq '^  async scheduling +yes$' default &&
    grep -Eq '^  all-reduce +twoshot, ' default && grep -Eq '^  kernels +floor [0-9.]+ us, launch 0 us$' default ||
    fail "list engines vllm-0.15: $(cat default)"
"$S" list engines --json >list.json || fail "list engines --json"
python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))[2]; assert e["name"]=="vllm-eager" and e["iter_fixed_s"]==0.003 and e["per_gpu"]["h200"]["iter_fixed_s"]==0.0025 and e["allreduce"]=="ring" and e["async_scheduling"] is False and e["attn_speed"]==1, e' list.json ||
    fail "list engines --json: $(cat list.json)"

# A catalog with a second engine: CUDA graphs + async scheduling (overlap = max), a front end.
mkdir cat && cp -r "$ROOT/profiles/hardware" "$ROOT/profiles/models" "$ROOT/profiles/engines" cat/ ||
    fail "catalog copy"
sed -e 's/^name = vllm-eager/name = test-graphs/' -e 's/^overlap = serial/overlap = max/' \
    -e 's/^frontend_ms = 0 /frontend_ms = 40 /' "$ROOT/profiles/engines/vllm-eager.ini" \
    >cat/engines/test-graphs.ini
"$S" list engines --profiles cat | grep -Eq '^test-graphs .* max ' || fail "second engine not listed"

# The default engine is the explicit one (vllm-0.15), byte for byte; another engine changes
# the results and is stored with its run.
"$S" replay --trace "$TRACE" --limit 300 --profiles cat --db none --json >default.json ||
    fail "default run"
"$S" replay --trace "$TRACE" --limit 300 --profiles cat --db none --json --engine vllm-0.15 \
    >modern.json || fail "--engine vllm-0.15"
diff <(sed 's/"wall_s": [0-9.e+-]*//' default.json) <(sed 's/"wall_s": [0-9.e+-]*//' modern.json) \
    >/dev/null || fail "--engine vllm-0.15 differs from the default"
"$S" replay --trace "$TRACE" --limit 300 --profiles cat --db none --json --engine vllm-eager \
    >eager.json || fail "--engine vllm-eager"
cmp -s <(sed 's/"wall_s": [0-9.e+-]*//' default.json) <(sed 's/"wall_s": [0-9.e+-]*//' eager.json) &&
    fail "the eager engine gave the default's results"
"$S" replay --trace "$TRACE" --limit 300 --profiles cat --db r.db --engine test-graphs --json \
    >graphs.json 2>err || fail "--engine test-graphs: $(cat err)"
cmp -s <(sed 's/"wall_s": [0-9.e+-]*//' default.json) <(sed 's/"wall_s": [0-9.e+-]*//' graphs.json) &&
    fail "another engine gave the same results"
[ "$(sql r.db 'SELECT engine FROM runs')" = test-graphs ] || fail "runs.engine"
grep -q '^engine = test-graphs' <(sql r.db 'SELECT scenario FROM runs') ||
    fail "the stored scenario lacks the engine"

# Per tenant, from a scenario file and --set
cat >s.ini <<INI
[tenant.a]
model = llama-2-7b
engine = test-graphs
trace = $TRACE
limit = 100
INI
"$S" replay -c s.ini --profiles cat --db s.db >/dev/null 2>err || fail "scenario engine: $(cat err)"
[ "$(sql s.db 'SELECT engine FROM runs')" = test-graphs ] || fail "scenario: runs.engine"
"$S" replay -c s.ini --profiles cat --db s.db --set tenant.a.engine=vllm-eager >/dev/null 2>err ||
    fail "--set engine: $(cat err)"
[ "$(sql s.db 'SELECT engine FROM runs WHERE run_id = 2')" = vllm-eager ] || fail "--set: runs.engine"
"$S" compare -c s.ini --profiles cat --db c.db --no-progress \
    --policies eager:tenant.a.engine=vllm-eager,graphs:tenant.a.engine=test-graphs \
    >/dev/null 2>err || fail "compare over engines: $(cat err)"
[ "$(sql c.db "SELECT group_concat(engine, ',') FROM (SELECT engine FROM runs ORDER BY run_id)")" = \
    vllm-eager,test-graphs ] || fail "compare: runs.engine"
"$S" compare -c s.ini --profiles cat --db none --no-progress --policies container \
    --set tenant.a.engine=test-graphs >/dev/null 2>err || fail "compare --set engine: $(cat err)"

# A sweep over engines: a grid on the tenant key
cat >x.ini <<INI
[sweep]
scenario = s.ini
name = engines
db = x.db
[grid]
tenant.a.engine = vllm-eager, test-graphs
INI
"$S" sweep x.ini --profiles cat >/dev/null 2>err || fail "sweep over engines: $(cat err)"
[ "$(sql x.db "SELECT count(DISTINCT engine) FROM runs")" = 2 ] || fail "sweep: runs.engine"

# Every engine term has a documented range, checked when the catalog loads: one line
# "FILE:LINE: section.key: out of range [lo, hi]", exit 2 (issue 23: a host time of 10^12 and
# of 10^300 us gave the same capped results, a front end of 9.3e12 ms overflowed to TTFT 0,
# speed and efficiency factors of 10^-300 were accepted). At its maximum a term is exact: a
# 10-minute front end adds exactly 600000 ms to the mean and maximum TTFT and E2E, and 1 s of
# host time per step is not capped (half of it gives other times).
mkdir rcat && cp -r "$ROOT/profiles/hardware" "$ROOT/profiles/models" rcat/ && mkdir rcat/engines ||
    fail "catalog copy"
bound() { # NAME KEY VALUE [SED...]: the eager engine named NAME with KEY = VALUE, no [gpu.NAME]
    local name=$1 key=$2 value=$3
    shift 3
    sed -e "s/^name = .*/name = $name/" -e "s/^$key = [^ ]*/$key = $value/" -e '/^\[gpu\./,$d' \
        "$@" "$ROOT/profiles/engines/vllm-eager.ini" >"rcat/engines/$name.ini"
}
line_of() { grep -n "^$2 = " "rcat/engines/$1.ini" | head -n 1 | cut -d: -f1; }
for case in "iter_fixed_us 1e12 host 0, 1e6" "iter_fixed_us 1e300 host 0, 1e6" \
    "frontend_ms 9.3e12 frontend 0, 600000" "attn_speed 1e-300 kernels 0.01, 10" \
    "eff 1e-300 allreduce 0.01, 1" "moe_eff 0.001 kernels 0.01, 1" "launch_us 1001 host 0, 1000"; do
    set -- $case
    bound bad "$1" "$2"
    where="rcat/engines/bad\.ini:$(line_of bad "$1"): $3\.$1"
    expect_error 2 "^slicesim: $where: out of range \[$4 $5\]$" "$S" list engines --profiles rcat
    expect_error 2 "$where: out of range" \
        "$S" replay --profiles rcat --engine bad --limit 5 --db none
done
bound bad iter_fixed_us 3000
printf '[gpu.h200]\niter_fixed_us = 1e300\n' >>rcat/engines/bad.ini
where="rcat/engines/bad\.ini:$(wc -l <rcat/engines/bad.ini): gpu\.h200\.iter_fixed_us"
expect_error 2 "^slicesim: $where: out of range \[0, 1e6\]$" "$S" list engines --profiles rcat
rm rcat/engines/bad.ini
# An unknown section lists the known ones once each; a [gpu.NAME] section for a GPU the
# catalog lacks (a typo) is warned about, naming the file, line and the known GPUs, and the
# engine still loads.
bound bad iter_fixed_us 3000
printf '[overhead]\niter_fixed_us = 1\n' >>rcat/engines/bad.ini
expect_error 2 "^slicesim: rcat/engines/bad\.ini:$(wc -l <rcat/engines/bad.ini): overhead\.iter_fixed_us: \
unknown section \[overhead\] \(expected \[engine\], \[host\], \[kernels\], \[allreduce\], \
\[frontend\], \[gpu\.NAME\]\)$" "$S" list engines --profiles rcat
bound bad iter_fixed_us 3000
printf '[gpu.h100]\niter_fixed_us = 2500\n' >>rcat/engines/bad.ini
"$S" list engines --profiles rcat >list 2>err || fail "an unknown GPU's section: $(cat err)"
[ "$(cat err)" = "slicesim: warning: rcat/engines/bad.ini:$(wc -l <rcat/engines/bad.ini): \
[gpu.h100]: unknown GPU 'h100' (known: a100-80g, h100-sxm, h200, l40s); its host terms apply \
to no GPU" ] || fail "the warning of an unknown GPU's section: $(cat err)"
grep -Eq '^bad +serial +no +3000 ' list || fail "the engine with the section: $(cat list)"
"$S" list engines bad --profiles rcat >one 2>/dev/null || fail "list engines bad"
grep -Eq '^  on h100 +iteration 2500 us, ' one || fail "the engine's section: $(cat one)"
sed -i 's/^\[gpu\.h100\]/[gpu.h100-sxm]/' rcat/engines/bad.ini
"$S" list engines --profiles rcat >/dev/null 2>err && [ ! -s err ] ||
    fail "a known GPU's section warned: $(cat err)"
rm rcat/engines/bad.ini
bound fe-0 frontend_ms 0
bound fe-max frontend_ms 600000
bound host-max iter_fixed_us 1000000 -e 's/^iter_per_seq_us = [^ ]*/iter_per_seq_us = 1000/' \
    -e 's/^iter_per_token_us = [^ ]*/iter_per_token_us = 100/'
bound host-half iter_fixed_us 500000 -e 's/^iter_per_seq_us = [^ ]*/iter_per_seq_us = 1000/' \
    -e 's/^iter_per_token_us = [^ ]*/iter_per_token_us = 100/'
for e in fe-0 fe-max host-max host-half; do
    "$S" replay --trace "$TRACE" --limit 40 --profiles rcat --engine $e --db none --json \
        >"$e.json" 2>err || fail "--engine $e: $(cat err)"
done
python3 - <<'PY' || fail "engine terms at their bounds"
import json
j = {e: json.load(open(e + ".json")) for e in ("fe-0", "fe-max", "host-max", "host-half")}
for m in ("ttft_ms", "e2e_ms"):
    for s in ("mean", "max"): # exact; percentiles come from a histogram's buckets
        d = j["fe-max"][m][s] - j["fe-0"][m][s]
        assert abs(d - 600000) < 1e-6, (m, s, d)
    assert j["fe-max"][m]["p50"] > 600000, j["fe-max"][m]
assert j["fe-max"]["completed"] == j["fe-0"]["completed"] == 40, j["fe-max"]["completed"]
a, b = j["host-max"]["ttft_ms"]["mean"], j["host-half"]["ttft_ms"]["mean"]
assert 1000 < a < 1e9 and 500 < b < a, (a, b)
assert j["host-max"]["completed"] == 40
PY

# An engine profile by its path (what fit writes; issue 26): from --engine, from a scenario
# (relative to the scenario's folder, run from elsewhere) and from --set; the engine runs as the
# same engine in the catalog does, under its own name, which the banner, --json (top level and
# per tenant) and runs.engine give; the shipped file by its path is the shipped engine.
mkdir mine sub elsewhere
sed 's/^name = test-graphs/name = my-graphs/' cat/engines/test-graphs.ini >mine/my-graphs.ini
"$S" replay --trace "$TRACE" --limit 300 --profiles cat --db none --json \
    --engine ./mine/my-graphs.ini >file.json 2>err || fail "--engine FILE: $(cat err)"
python3 - <<'PY' || fail "--engine FILE: not the same engine by another name"
import json, re
a, b = (open(f).read() for f in ("file.json", "graphs.json"))
j = json.loads(a)
assert j["engine"] == "my-graphs" and j["tenants"][0]["engine"] == "my-graphs", (j["engine"],)
assert json.loads(b)["engine"] == "test-graphs"
norm = lambda t: re.sub(r'"wall_s": [0-9.e+-]*', "", t).replace("my-graphs", "test-graphs")
assert norm(a) == norm(b), "results differ"
PY
"$S" replay --trace "$TRACE" --limit 20 --profiles cat --db none --engine mine/my-graphs.ini \
    >out 2>err || fail "--engine FILE (table): $(cat err)"
head -n 1 out | grep -q 'roofline costs, engine my-graphs$' || fail "banner: $(head -n 1 out)"
cp mine/my-graphs.ini sub/
cat >sub/s2.ini <<INI
[tenant.a]
model = llama-2-7b
engine = ../mine/my-graphs.ini
trace = $TRACE
limit = 50
[tenant.b]
model = llama-2-7b
engine = vllm-eager
trace = $TRACE
limit = 50
INI
(cd elsewhere && "$S" replay -c ../sub/s2.ini --profiles ../cat --db ../f.db >out 2>err) ||
    fail "scenario engine file: $(cat elsewhere/err)"
head -n 1 elsewhere/out | grep -q 'roofline costs, engines my-graphs + vllm-eager$' ||
    fail "banner of two engines: $(head -n 1 elsewhere/out)"
[ "$(sql f.db 'SELECT engine FROM runs')" = my-graphs ] || fail "runs.engine of a file"
grep -q "^engine = $T/mine/my-graphs.ini\$" <(sql f.db 'SELECT scenario FROM runs') ||
    fail "the stored scenario lacks the engine file's path: $(sql f.db 'SELECT scenario FROM runs')"
"$S" replay -c sub/s2.ini --profiles cat --db none --set tenant.b.engine=mine/my-graphs.ini \
    --json >two.json 2>err || fail "--set engine FILE: $(cat err)"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tenants"]; assert [x["engine"] for x in t]==["my-graphs","my-graphs"], t' \
    two.json || fail "--set tenant.b.engine=mine/my-graphs.ini: the same file by two names"
(cd mine && "$S" replay --trace "$TRACE" --limit 20 --profiles ../cat --db none \
    --engine my-graphs.ini >../out 2>../err) || fail "--engine FILE.ini (no slash): $(cat err)"
head -n 1 out | grep -q ', engine my-graphs$' || fail "--engine FILE.ini: $(head -n 1 out)"
"$S" replay --trace "$TRACE" --limit 300 --db none --json --engine "$ROOT/profiles/engines/vllm-0.15.ini" \
    >shipped.json 2>err || fail "the shipped profile by its path: $(cat err)"
diff <(sed 's/"wall_s": [0-9.e+-]*//' default.json) <(sed 's/"wall_s": [0-9.e+-]*//' shipped.json) \
    >/dev/null || fail "the shipped profile by its path differs from the default"
# its errors: one line naming the file (and line), and where the path came from
expect_error 2 "^slicesim: replay: --engine: mine/none\.ini: " \
    "$S" replay --limit 5 --profiles cat --engine mine/none.ini --db none
cp cat/engines/vllm-eager.ini mine/eager-copy.ini
expect_error 2 "^slicesim: replay: --engine: mine/eager-copy\.ini:[0-9]+: engine\.name: engine 'vllm-eager' is already defined in cat/engines/vllm-eager\.ini$" \
    "$S" replay --limit 5 --profiles cat --engine mine/eager-copy.ini --db none
printf '[engine]\nname = broken\n' >mine/broken.ini
sed 's|^engine = ../mine/my-graphs.ini|engine = ../mine/broken.ini|' sub/s2.ini >sub/s3.ini
expect_error 2 "^slicesim: replay: sub/s3\.ini:3: tenant\.a\.engine: .*mine/broken\.ini" \
    "$S" replay -c sub/s3.ini --profiles cat --db none
# Errors: one line naming where the engine came from
expect_error 2 "^slicesim: replay: --engine: unknown engine 'nope' \\(known: test-graphs, vllm-0.15, vllm-0.2, vllm-eager\\)$" \
    "$S" replay --limit 5 --profiles cat --engine nope --db none
sed -i 's/^engine = test-graphs/engine = nope/' s.ini
expect_error 2 "^slicesim: replay: s.ini:3: tenant.a.engine: unknown engine 'nope' \\(known: " \
    "$S" replay -c s.ini --profiles cat --db none
expect_error 2 "^slicesim: replay: --set: tenant.a.engine: unknown engine 'x' " \
    "$S" replay -c s.ini --profiles cat --db none --set tenant.a.engine=x
expect_error 2 "^slicesim: replay: --set: tenant.a.engine: expected a name of 1 to 47 characters" \
    "$S" replay -c s.ini --profiles cat --db none --set "tenant.a.engine=Bad Name"
# A hardware file from before engine profiles names the moved key.
printf '[overhead]\niter_fixed_us = 3000\n' >>cat/hardware/h200.ini
expect_error 2 "cat/hardware/h200.ini:[0-9]+: overhead.iter_fixed_us: an engine term since engine profiles" \
    "$S" list gpus --profiles cat
echo "engine_cli: all checks passed"
