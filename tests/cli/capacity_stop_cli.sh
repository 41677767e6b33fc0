#!/bin/bash
# `slicesim capacity`'s probes that stop once their verdict is certain: on a tiny two-tenant
# scenario, the answer (table, JSON but for the stopped probes' own figures, the searches'
# choices) with stopped probes and candidates is the one of --full-probes, under every
# criterion, over several seeds, with an allocation search and a knob search among the bundles; a stopped probe is never stored, so a later command never
# reuses it as a complete run, and a probe whose point the database holds from other inputs
# runs to its end to replace it; --jobs 2 gives the table, JSON, stderr and database of
# --jobs 1 (but for wall-clock columns), also when a worker meets a point to replace. Under the
# sanitizers every capacity makes at most 4 probes, not 6, and the first part checks one of the
# four criteria (worst, the default; the --jobs part below judges by it and by pooled).
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
capacity_tiny_ini >tiny.ini
POLICIES="container,static-best,knob:policy.batching=sarathi|vllm"
PROBES=6
sanitized && PROBES=4
cap() { "$S" capacity -c tiny.ini --policies "$POLICIES" --max-probes $PROBES --seeds 2 --jobs 1 "$@"; }
STOPPED=', stopped at [0-9.]* s simulated, certain to fail: fail'

# ---- the same answer as --full-probes ---------------------------------------------------------
# A stopped probe's misses are lower bounds above the bound (its JSON says "stopped": true,
# its goodput is null); everything else, and each probe's load and verdict, is as in full.
CRITERIA="worst pooled tenant:chat tenant:code"
sanitized && CRITERIA="worst"
for crit in $CRITERIA; do
    c=${crit#*:}
    cap --criterion "$crit" --db none --json >"j-$c" 2>"e-$c" || fail "$crit: $(cat "e-$c")"
    cap --criterion "$crit" --db none --json --full-probes >"jf-$c" 2>"ef-$c" ||
        fail "$crit --full-probes: $(cat "ef-$c")"
    grep -q "$STOPPED" "ef-$c" && fail "$crit --full-probes stopped a probe: $(cat "ef-$c")"
    # the searches' choices and candidate counts: what each search chose, at every probe
    for f in "e-$c" "ef-$c"; do
        grep -E '^slicesim: (static-best|knob search): ' "$f" |
            sed 's/, [0-9]* stopped early$//' >"$f.chose"
    done
    [ -s "e-$c.chose" ] && cmp -s "e-$c.chose" "ef-$c.chose" ||
        fail "$crit: the searches chose otherwise: $(diff "e-$c.chose" "ef-$c.chose")"
    python3 - "j-$c" "jf-$c" <<'PY' || fail "$crit: the JSON differs from --full-probes"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
n = 0
for pa, pb in zip(a["policies"], b["policies"]):
    for ra, rb in zip(pa["runs"], pb["runs"]):
        for qa, qb in zip(ra["probes"], rb["probes"]):
            assert "stopped" not in qb, qb
            if qa.get("stopped"):  # certain to fail: lower bounds above the bound
                n += 1
                assert qa["stopped"] is True and qa["goodput_tok_per_s"] is None, qa
                assert not qa["pass"] and not qb["pass"] and qa["load"] == qb["load"], (qa, qb)
                assert a["sla_miss_bound"] < qa["sla_miss"] <= qb["sla_miss"], (qa, qb)
                assert qa["pooled_sla_miss"] <= qb["pooled_sla_miss"], (qa, qb)
                for t, m in qa["tenant_sla_miss"].items():
                    assert m <= qb["tenant_sla_miss"][t], (qa, qb)
                for k in ("sla_miss", "goodput_tok_per_s", "pooled_sla_miss", "tenant_sla_miss",
                          "stopped", "stopped_at_s"):
                    qa.pop(k, None)
                    qb.pop(k, None)
assert a == b
print(n)
PY
done
[ "$(cat e-* | grep -c "$STOPPED")" -ge 10 ] || fail "too few probes stopped: $(cat e-*)"
# the table (every figure in it is a probe's that ran in full)
cap --db none >t 2>/dev/null && cap --db none --full-probes >tf 2>/dev/null || fail "table"
cmp -s t tf || fail "the table differs with --full-probes: $(diff t tf)"
# candidates stopped too, the allocation search's and the knob search's
for who in static-best "knob search"; do
    cat e-* | grep "^slicesim: $who: .* candidate replays, [1-9][0-9]* stopped early" >/dev/null ||
        fail "no $who candidate stopped: $(cat e-*)"
done

# ---- stopped probes are never stored, nor reused -----------------------------------------------
runs() { sql "$1" 'SELECT count(*) FROM runs'; }
cap --db s.db >s1 2>s1.err || fail "capacity into s.db: $(cat s1.err)"
n_stopped=$(grep -c "$STOPPED" s1.err)
[ "$n_stopped" -ge 1 ] || fail "no probe stopped: $(cat s1.err)"
# the stopped probes' points are not in the database; every other probe's is
sed -n "s/^slicesim: capacity: \([^ ]*\) seed \([0-9]*\) ([0-9/]*) probe [0-9]*: load \([0-9.e+-]*\): .*$STOPPED\$/policy=\1;rate=\3;run.seed=\2/p" \
    s1.err >stopped.points
[ "$(wc -l <stopped.points)" = "$n_stopped" ] || fail "stopped points: $(cat stopped.points)"
while read -r pt; do
    [ "$(sql s.db "SELECT count(*) FROM sweep_points WHERE point = '$pt'")" = 0 ] ||
        fail "stopped probe $pt was stored"
done <stopped.points
n=$(runs s.db)
n_probes=$(grep -c '^slicesim: capacity: .* probe [0-9]*: load ' s1.err)
[ "$n" = $((n_probes - n_stopped)) ] || fail "$n runs for $n_probes probes, $n_stopped stopped"
# again: the complete probes are reused (but a searching bundle's, which always run), the
# stopped ones run and stop again, and the answer is the same
cap --db s.db >s2 2>s2.err || fail "capacity again into s.db: $(cat s2.err)"
cmp -s s1 s2 || fail "the rerun's table differs: $(diff s1 s2)"
[ "$(grep -c "$STOPPED" s2.err)" = "$n_stopped" ] || fail "the rerun stopped otherwise: $(cat s2.err)"
reused=$(grep -c '(stored run [0-9]*, same inputs)$' s2.err)
[ "$reused" -ge 1 ] || fail "nothing reused: $(cat s2.err)"
grep "(stored run" s2.err | grep -q "$STOPPED" && fail "a stopped probe reused"
grep -q "^slicesim: capacity: reused $reused probes stored in s.db" s2.err ||
    fail "reuse line: $(cat s2.err)"
# after --full-probes every probe is stored, and a command that would stop them reuses them all
cap --db f.db --full-probes >/dev/null 2>f1.err || fail "--full-probes into f.db"
cap --db f.db >f2 2>f2.err || fail "capacity after --full-probes: $(cat f2.err)"
grep -q "$STOPPED" f2.err && fail "a probe stored in full stopped: $(cat f2.err)"
diff <(grep -v '^  results: ' s1) <(grep -v '^  results: ' f2) >/dev/null ||
    fail "the table from probes stored in full differs: $(diff s1 f2)"
# a probe whose point the database holds from other inputs (another code seed) runs to its
# end, so that the point names its new run
cap --db s.db --set tenant.code.synthetic="rate=2 duration=40 arrival=gamma cv=3 prompt=lognormal:1500:0.5 output=fixed:100" \
    >/dev/null 2>s3.err || fail "capacity, other inputs: $(cat s3.err)"
grep -q "^slicesim: note: capacity: [1-9][0-9]* of these probes were in s.db" s3.err ||
    fail "no probe was run again: $(cat s3.err)"
sed -n "s/^slicesim: capacity: \([^ ]*\) seed \([0-9]*\) ([0-9/]*) probe [0-9]*: load \([0-9.e+-]*\): .*/policy=\1;rate=\3;run.seed=\2/p" \
    s3.err >probed.points
[ -s probed.points ] || fail "the probes of other inputs: $(cat s3.err)"
while read -r pt; do
    [ "$(sql s.db "SELECT count(*) FROM sweep_points JOIN runs USING (run_id)
        WHERE point = '$pt' AND scenario NOT LIKE '%cv=3 %'")" = 0 ] ||
        fail "point $pt still names a run of the old inputs"
done <probed.points

# ---- --jobs 2 is --jobs 1 --------------------------------------------------------------------
mkdir j1 j2 tmp
export TMPDIR=$T/tmp # where the workers' databases go
for j in 1 2; do
    cp tiny.ini "j$j/"
    (cd "j$j" && for r in 1 2; do
        "$S" capacity -c tiny.ini --policies "$POLICIES" --max-probes $PROBES --seeds 2 --db c.db \
            --jobs "$j" >"t$r" 2>"e$r" || exit 1
    done && "$S" capacity -c tiny.ini --policies "$POLICIES" --max-probes $PROBES --seeds 2 \
        --criterion pooled --db none --json --jobs "$j" >json 2>jerr) ||
        fail "--jobs $j: $(cat "j$j"/e* "j$j/jerr")"
done
for f in t1 e1 t2 e2 json jerr; do
    cmp -s "j1/$f" "j2/$f" || fail "--jobs 2's $f differs: $(diff "j1/$f" "j2/$f" | head -20)"
done
grep -q "of these probes were in c.db" j2/e2 || fail "no probe run again (the redo): $(cat j2/e2)"
python3 - j1/c.db j2/c.db <<'PY' || fail "--jobs 2's database differs from --jobs 1's"
import json, sqlite3, sys
WALL = {"created_utc", "wall_s", "command", "slice_wall_s"}  # clocks, and the --jobs given
def rows(path):
    db, out = sqlite3.connect(path), {}
    for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
        cols = [c[1] for c in db.execute(f"PRAGMA table_info({t})") if c[1] not in WALL]
        out[t] = []
        for r in db.execute(f"SELECT {', '.join(cols)} FROM {t} ORDER BY rowid"):
            r = dict(zip(cols, r))
            if r.get("result_json"):
                j = json.loads(r["result_json"])
                j.pop("wall_s", None)
                for k in ("decision_wall_s", "decisions_per_s"):
                    j.get("slice", {}).pop(k, None)
                r["result_json"] = j
            out[t].append(r)
    return out
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert a["runs"] and a == b, [t for t in a if a[t] != b[t]]
PY
[ -z "$(ls tmp)" ] || fail "the workers' databases were left: $(ls -R tmp)"

# ---- options ---------------------------------------------------------------------------------
expect_error 2 "capacity: unknown option '--full-probe'" \
    "$S" capacity -c tiny.ini --policies container --full-probe
expect_error 2 "capacity: --jobs: expected an integer in \[1, 256\], got '0'" \
    "$S" capacity -c tiny.ini --policies container --jobs 0
expect_error 2 "capacity: --jobs: expected an integer in \[1, 256\], got 'x'" \
    "$S" capacity -c tiny.ini --policies container --jobs x
"$S" capacity --help | grep -q -- "--full-probes  " && "$S" capacity --help | grep -q -- "--jobs N  " ||
    fail "--help names --full-probes and --jobs"
exit 0
