#!/bin/bash
# `slicesim compare`: one scenario under several bundles and loads, one table with ratios
# against the first bundle, the runs stored as points of a sweep, --json as an array of
# replay objects, and one clear error for bad bundles, loads and options.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
SV=$ROOT/experiments/slice-vs-container.ini
SHORT=(--set run.duration_s=60 --set run.warmup_s=10)

"$S" compare -c "$SV" "${SHORT[@]}" --policies container,slice --rates 1,1.5 --db c.db \
    >table 2>err || fail "compare: $(cat err)"
grep -q "^slicesim compare: .*2 bundle(s) x 2 load(s); ratios against container" table ||
    fail "header: $(head -1 table)"
[ "$(grep -cE '^  (1|1.5) +(container|slice) ' table)" = 4 ] || fail "want 4 rows: $(cat table)"
grep -Eq '^  1 +container +[0-9.]+  1.00 +[0-9.]+  1.00 ' table || fail "container row is 1.00"
[ "$(sql c.db "SELECT count(*) FROM sweep_points WHERE sweep = 'compare:slice-vs-container.ini'")" = 4 ] ||
    fail "4 sweep points"
[ "$(sql c.db "SELECT count(*) FROM sweep_points JOIN runs USING (run_id) WHERE ops = 'slice'
    AND point LIKE 'policy=slice;%'")" = 2 ] || fail "slice points are slice runs"
# runs.load is the point's load (chat's rate_scale is 1.5 x 1.5 at load 1.5), runs.command the
# command line
[ "$(sql c.db "SELECT group_concat(load, ' ') FROM (SELECT load FROM sweep_points
    JOIN runs USING (run_id) WHERE point LIKE 'policy=slice;%' ORDER BY point)")" = "1.0 1.5" ] ||
    fail "runs.load: $(sql c.db "SELECT group_concat(point || ':' || load, ' ') FROM sweep_points JOIN runs USING (run_id)")"
[ "$(sql c.db "SELECT count(*) FROM runs WHERE typeof(load) = 'real'")" = 4 ] ||
    fail "runs.load is a number on every compare run"
[ "$(sql c.db "SELECT count(DISTINCT command) FROM runs WHERE command LIKE
    'slicesim compare -c $SV % --policies container,slice --rates 1,1.5 --db c.db'")" = 1 ] ||
    fail "runs.command: $(sql c.db "SELECT command FROM runs LIMIT 1")"
# the ratio column is the bundle's throughput over the first bundle's, at the same load
python3 - table <<'PY' || fail "ratios do not match the throughputs"
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("  1")]
by = {(r[0], r[1]): r for r in rows}
for load in ("1", "1.5"):
    base, s = float(by[(load, "container")][2]), by[(load, "slice")]
    assert abs(float(s[2]) / base - float(s[3])) < 0.006, (s, base)
PY

# a custom bundle and JSON
"$S" compare -c "$SV" "${SHORT[@]}" --db none --json \
    --policies 'container,fast:policy.batching=vllm+policy.ops=slice' >a.json 2>err ||
    fail "compare --json: $(cat err)"
python3 - a.json <<'PY' || fail "JSON: $(head -c 300 a.json)"
import json, sys
runs = json.load(open(sys.argv[1]))
assert [r["policy"] for r in runs] == ["container", "fast"], runs
assert runs[1]["run"]["batching"] == "vllm" and runs[1]["run"]["ops"] == "slice"
assert runs[0]["run"]["ops"] == "home" and runs[0]["rate"] == 1
PY

# --seeds 3: every point at seeds 1, 2, 3 (run.seed 1 and on), each run the one-seed run at
# that seed; the summary's means and 95 % t intervals (t(0.975, 2) = 4.3027) are the runs',
# the goodput ratio is paired by seed, and the verdict follows its interval
"$S" compare -c "$SV" "${SHORT[@]}" --policies container,slice --seeds 3 --db s.db --json \
    >seeds.json 2>err || fail "compare --seeds 3: $(cat err)"
for seed in 1 2 3; do
    "$S" compare -c "$SV" "${SHORT[@]}" --policies container,slice --set run.seed=$seed \
        --db none --json >"seed$seed.json" 2>err || fail "compare at seed $seed: $(cat err)"
done
python3 - seeds.json seed1.json seed2.json seed3.json <<'PY' || fail "--seeds JSON: $(head -c 600 seeds.json)"
import json, math, sys
o = json.load(open(sys.argv[1]))
one = [json.load(open(f)) for f in sys.argv[2:]]
assert o["seeds"] == [1, 2, 3] and "Student t" in o["interval"], o
runs = o["runs"]
assert [(r["policy"], r["seed"]) for r in runs] == [(p, s) for p in ("container", "slice")
                                                     for s in (1, 2, 3)], runs
def simulated(v):  # a run's figures without the wall-clock ones (wall_s, decisions_per_s)
    if isinstance(v, dict):
        return {k: simulated(x) for k, x in v.items() if "wall" not in k and k != "decisions_per_s"}
    return [simulated(x) for x in v] if isinstance(v, list) else v
for r in runs:  # each run is the one-seed run at its seed
    ref = one[r["seed"] - 1][["container", "slice"].index(r["policy"])]
    assert simulated(r["run"]) == simulated(ref["run"]), (r["policy"], r["seed"])
def ci(x):
    m = sum(x) / len(x)
    sd = math.sqrt(sum((v - m) ** 2 for v in x) / (len(x) - 1))
    h = 4.3027 * sd / math.sqrt(len(x))
    return m, m - h, m + h
close = lambda a, b: abs(a - b) <= 1e-9 * max(1, abs(b))
good = lambda p: [r["run"]["window_goodput_tokens_per_s"] for r in runs if r["policy"] == p]
for s in o["summary"]:
    assert s["n_seeds"] == 3 and s["rate"] == 1, s
    m, lo, hi = ci(good(s["policy"]))
    assert close(s["goodput_tok_per_s"], m) and close(s["goodput_tok_per_s_ci95_lo"], lo), s
    assert close(s["goodput_tok_per_s_ci95_hi"], hi), s
slice_ = o["summary"][1]
m, lo, hi = ci([a / b for a, b in zip(good("slice"), good("container"))])
assert close(slice_["goodput_ratio"], m) and close(slice_["goodput_ratio_ci95_lo"], lo), slice_
want = "higher" if lo > 1 else "lower" if hi < 1 else "no difference"
assert slice_["verdict"] == want and o["summary"][0]["verdict"] == "reference", slice_
PY
[ "$(sql s.db "SELECT count(*) FROM sweep_points WHERE point LIKE 'policy=slice;rate=1;run.seed=_'")" = 3 ] ||
    fail "a point per seed: $(sql s.db "SELECT group_concat(point, ' ') FROM sweep_points")"
"$S" compare -c "$SV" "${SHORT[@]}" --policies container,slice --seeds 2 --db none >stable \
    2>err || fail "compare --seeds 2: $(cat err)"
grep -q "^slicesim compare: .*2 bundle(s) x 1 load(s) x 2 seeds (1 to 2); mean over seeds \[95 % Student-t interval\]; goodput ratios against container, paired by seed" stable ||
    fail "--seeds header: $(head -1 stable)"
grep -Eq '^  1 +slice +[0-9.]+ \[[0-9.-]+, [0-9.]+\] +[0-9.]+ \[[0-9.-]+, [0-9.]+\] +[0-9.]+ \[[0-9.-]+, [0-9.]+\] +(higher|lower|no difference) ' stable ||
    fail "--seeds row: $(cat stable)"
expect_error 2 "compare: --seeds: expected an integer in \[1, 32\], got '0'" \
    "$S" compare -c "$SV" --seeds 0

# errors: nothing runs, one line, exit 2
expect_error 2 "compare: -c SCENARIO.ini is required" "$S" compare --policies container
expect_error 2 "policy 'magic': not a built-in bundle" "$S" compare -c "$SV" --policies magic
expect_error 2 "the same label twice" "$S" compare -c "$SV" --policies slice,slice
expect_error 2 "rates: out of range \(0, 1e6\], got '0'" "$S" compare -c "$SV" --rates 1,0
expect_error 2 "policy 'x': .*run.sed: unknown key" "$S" compare -c "$SV" \
    --policies 'container,x:run.sed=2' --db none
expect_error 2 "unknown option '--frob'" "$S" compare -c "$SV" --frob
[ ! -e results ] || fail "a failed compare wrote results"

# On a terminal (script(1) gives it one), a line per run on stderr: its number of the total, the
# share done, the wall time elapsed and the time left; --no-progress: no line at all
if command -v script >/dev/null; then
    script -qec "$S compare -c $SV ${SHORT[*]} --policies container,slice --rates 1,1.5 \
        --db none >/dev/null" tty.txt >/dev/null 2>&1 || fail "compare on a terminal"
    tr '\r' '\n' <tty.txt | grep '^slicesim: compare: ' >tty.lines
    [ "$(wc -l <tty.lines)" = 4 ] || fail "compare on a terminal: want 4 lines: $(cat tty.lines)"
    [ "$(head -1 tty.lines)" = "slicesim: compare: run 1 of 4 (0 % done): policy=container;rate=1" ] ||
        fail "compare's first progress line: $(head -1 tty.lines)"
    grep -Eq '^slicesim: compare: run 3 of 4 \(50 % done, [0-9]+:[0-9]{2} elapsed, ~[0-9]+:[0-9]{2} left\): policy=container;rate=1\.5$' \
        tty.lines || fail "compare's third progress line: $(sed -n 3p tty.lines)"
    script -qec "$S compare -c $SV ${SHORT[*]} --policies container,slice --rates 1,1.5 \
        --db none --no-progress >/dev/null" quiet.txt >/dev/null 2>&1 || fail "--no-progress"
    ! grep -q 'slicesim:' quiet.txt || fail "compare --no-progress wrote: $(cat quiet.txt)"
fi
echo "compare_cli: all checks passed"
