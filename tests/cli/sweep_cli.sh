#!/bin/bash
# `slicesim sweep` and `slicesim db merge`: a 3 policies x 6 loads x 2 seeds grid run with
# --jobs 2 gives the same result rows as its two shards merged; a sweep killed midway finishes
# only the missing points when run again; --json is one object per point; bad experiment
# files give one clear error each.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'pkill -KILL -P $$ 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1

# the demo grid, shortened to 20 simulated seconds per point
cat >exp.ini <<INI
[sweep]
name = demo
scenario = $ROOT/experiments/slice-vs-container.ini
[set]
run.duration_s = 20
run.warmup_s = 2
[grid]
policy = container, llumnix, slice
rate = 0.5, 0.75, 1, 1.25, 1.5, 2
run.seed = 1, 2
INI
ROWS="SELECT p.point, s.requests, s.completed, s.output_tokens_per_s, s.goodput_tokens_per_s,
      s.sla_violation_rate, s.ttft_p99_ms, s.tbt_p99_ms, s.e2e_p99_ms, s.iterations, s.offloads
      FROM sweep_points p JOIN summary s USING (run_id) WHERE p.sweep = 'demo' ORDER BY p.point"
rows() { sqlite3 "$1" "$ROWS"; }

"$S" sweep exp.ini --jobs 2 --db all.db >table 2>err || fail "sweep --jobs 2: $(cat err)"
[ "$(sql all.db "SELECT count(*) FROM sweep_points")" = 36 ] || fail "36 points"
[ "$(sql all.db "SELECT count(*) FROM runs")" = 36 ] || fail "36 runs"
# runs.load is the point's rate as a number, runs.command the command line (not the point)
[ "$(sql all.db "SELECT count(*) FROM sweep_points JOIN runs USING (run_id)
    WHERE typeof(load) = 'real' AND load = CAST(substr(point, instr(point, ';rate=') + 6,
    instr(substr(point, instr(point, ';rate=') + 6), ';') - 1) AS REAL)")" = 36 ] ||
    fail "runs.load: $(sql all.db "SELECT group_concat(point || ':' || load, ' ') FROM sweep_points JOIN runs USING (run_id)")"
[ "$(sql all.db "SELECT count(*) FROM sweep_points JOIN runs USING (run_id)
    WHERE point LIKE '%;rate=1;%' AND load = 1")" = 6 ] || fail "runs.load of rate 1"
[ "$(sql all.db "SELECT count(*) FROM runs WHERE command = 'slicesim sweep exp.ini --jobs 2 --db all.db'")" = 36 ] ||
    fail "runs.command: $(sql all.db "SELECT command FROM runs LIMIT 1")"
ls all.db.job* >/dev/null 2>&1 && fail "worker databases left behind"
grep -q "36 points in this shard, 0 already in all.db, 36 to run" err || fail "plan: $(cat err)"
[ "$(grep -c '^  policy=' table)" = 36 ] || fail "table: $(head -3 table)"

"$S" sweep exp.ini --shard 1/2 --db s1.db >/dev/null 2>err || fail "shard 1: $(cat err)"
"$S" sweep exp.ini --shard 2/2 --db s2.db >/dev/null 2>err || fail "shard 2: $(cat err)"
[ "$(sql s1.db "SELECT count(*) FROM runs")" = 18 ] || fail "shard 1 has 18 runs"
"$S" db merge merged.db s1.db s2.db >out 2>err || fail "merge: $(cat err)"
grep -q "36 runs added, 0 skipped" out || fail "merge output: $(cat out)"
[ "$(rows all.db)" = "$(rows merged.db)" ] || fail "--jobs 2 and the merged shards differ"
"$S" db merge merged.db s1.db >out 2>err || fail "second merge"
grep -q "0 runs added, 18 skipped" out || fail "merging again must add nothing: $(cat out)"
# the merged database is a finished sweep: nothing left to run
"$S" sweep exp.ini --db merged.db --json >m.json 2>err || fail "sweep over merged db"
python3 - m.json <<'PY' || fail "JSON: $(head -c 300 m.json)"
import json, sys
pts = json.load(open(sys.argv[1]))
assert len(pts) == 36, len(pts)
assert pts[0]["point"] == {"policy": "container", "rate": "0.5", "run.seed": "1"}, pts[0]
assert all(p["output_tokens_per_s"] > 0 and p["run_id"] > 0 for p in pts)
assert pts[-1]["ops"] == "slice" and pts[0]["ops"] == "home"
PY
[ "$(sql merged.db "SELECT count(*) FROM runs")" = 36 ] || fail "nothing may run again"

# kill a parallel sweep midway, run it again: only the missing points run
"$S" sweep exp.ini --jobs 2 --db k.db >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do
    n=0
    for f in k.db.job1 k.db.job2; do
        [ -e "$f" ] && n=$((n + $(sqlite3 "$f" "SELECT count(*) FROM sweep_points" 2>/dev/null || echo 0)))
    done
    [ "$n" -ge 6 ] && break
    sleep 0.05
done
pkill -KILL -P "$pid" 2>/dev/null
kill -KILL "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
"$S" sweep exp.ini --jobs 2 --db k.db >/dev/null 2>err || fail "resumed sweep: $(cat err)"
done_before=$(grep -o '[0-9]* already in k.db' err | cut -d' ' -f1)
[ "${done_before:-0}" -ge 6 ] && [ "$done_before" -lt 36 ] ||
    fail "the rerun should find the finished points: $(cat err)"
[ "$(sql k.db "SELECT count(*) FROM runs")" = 36 ] || fail "resumed sweep: 36 runs, no repeats"
[ "$(rows k.db)" = "$(rows all.db)" ] || fail "the resumed sweep's results differ"

# MPI: rank r runs shard r+1/N into DB.rankR; merged, the ranks give the same rows. With MPI
# built in, a real mpirun; without, the launcher's environment is all the runner reads.
if "$S" sweep --help | grep -q "built with MPI" && command -v mpirun >/dev/null; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS=detect_leaks=0 \
        mpirun --oversubscribe -n 2 "$S" sweep exp.ini --db mpi.db >/dev/null 2>err ||
        fail "mpirun sweep: $(cat err)"
else
    for r in 0 1; do
        OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=$r "$S" sweep exp.ini --db mpi.db \
            >/dev/null 2>err || fail "rank $r: $(cat err)"
    done
fi
[ "$(sql mpi.db.rank1 "SELECT count(*) FROM runs")" = 18 ] || fail "rank 1 runs half the grid"
"$S" db merge mpi.db mpi.db.rank1 mpi.db.rank2 >/dev/null 2>err || fail "merge ranks: $(cat err)"
[ "$(rows mpi.db)" = "$(rows all.db)" ] || fail "the MPI ranks' results differ"

# errors: one line each, exit 2, nothing run
printf '[sweep]\nscenario = %s\n[grid]\n' "$ROOT/experiments/slice-vs-container.ini" >empty.ini
expect_error 2 "empty.ini: \\[grid\\]: empty" "$S" sweep empty.ini --db none.db
printf '[sweep]\nscenario = %s\n[grid]\npolicy = container, magic\n' \
    "$ROOT/experiments/slice-vs-container.ini" >pol.ini
expect_error 2 "pol.ini:4: grid.policy: policy 'magic': not a built-in bundle" "$S" sweep pol.ini
printf '[sweep]\nscenario = %s\n[grid]\nrun.sed = 1, 2\n' \
    "$ROOT/experiments/slice-vs-container.ini" >key.ini
expect_error 2 "key.ini:4: grid: run.sed: unknown key \\(did you mean seed\\?\\)$" "$S" sweep key.ini
printf '[sweep]\nscenrio = x.ini\n' >typo.ini
expect_error 2 "typo.ini:2: sweep.scenrio: unknown key" "$S" sweep typo.ini
printf '[swep]\n' >sect.ini
expect_error 2 "sect.ini:1: section \\[swep\\]: unknown section" "$S" sweep sect.ini
printf '[swe\r]\n' >cr.ini # a bare CR is shown escaped: the message stays one clean line
expect_error 2 'cr.ini:1: section \[swe\\x0d\]: unknown section' "$S" sweep cr.ini
printf '[sweep]\nscenario = nowhere.ini\n[grid]\nrate = 1\n' >miss.ini
expect_error 2 "nowhere.ini" "$S" sweep miss.ini
expect_error 2 "shard: expected K/N" "$S" sweep exp.ini --shard 3/2
expect_error 2 "expected OUT.db and at least one IN.db" "$S" db merge out.db
expect_error 2 "no-such.db: cannot open" "$S" db merge out2.db no-such.db
[ ! -e results ] || fail "a failed sweep wrote results"

# On a terminal (script(1) gives it one), a line per point on stderr: its number of the total,
# the share done, the wall time elapsed and the time left
if command -v script >/dev/null; then
    sed -e 's/^policy = .*/policy = container/' -e 's/^rate = .*/rate = 0.5, 1, 2/' \
        -e 's/^run.seed = .*/run.seed = 1/' -e 's/^name = demo/name = small/' exp.ini >small.ini
    script -qec "$S sweep small.ini --db tty.db >/dev/null" tty.txt >/dev/null 2>&1 ||
        fail "sweep on a terminal: $(cat tty.txt)"
    tr '\r' '\n' <tty.txt | grep '^slicesim: sweep: ' >tty.lines
    [ "$(wc -l <tty.lines)" = 3 ] || fail "sweep on a terminal: want 3 lines: $(cat tty.lines)"
    grep -Eq '^slicesim: sweep: point 1 of 3 \(0 % done\): policy=container;rate=0\.5(;|$)' tty.lines ||
        fail "sweep's first progress line: $(head -1 tty.lines)"
    grep -Eq '^slicesim: sweep: point 3 of 3 \(66 % done, [0-9]+:[0-9]{2} elapsed, ~[0-9]+:[0-9]{2} left\): ' \
        tty.lines || fail "sweep's last progress line: $(sed -n 3p tty.lines)"
fi
echo "sweep_cli: all checks passed"
