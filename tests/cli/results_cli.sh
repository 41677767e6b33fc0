#!/bin/bash
# Results a notebook can use: --store summary|requests|iterations (what a run keeps), runs.bundle
# (the bundle compare, capacity and sweep ran a run under), capacity's answers in the
# capacities and capacity_seeds tables, `db merge` that adds a plain replay once however often
# it is merged, and `db export --csv`. Before, every run kept its requests and no iterations,
# capacity stored only its probes, merging a database of replays twice doubled its runs, and
# there was no export.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

"$S" trace gen --rate 4 --duration 30 -o t.csv 2>/dev/null || fail "trace gen"
R=("$S" replay --trace t.csv --replicas 2 --no-progress)

# ---- --store: what a replay keeps ----
for k in summary requests iterations; do
    "${R[@]}" --db $k.db --store $k --json >$k.json || fail "replay --store $k"
done
"${R[@]}" --db default.db --json >default.json || fail "replay without --store"
n=$(sql default.db "SELECT count(*) FROM requests")
[ "$n" -gt 100 ] || fail "the default keeps each request: $n rows"
[ "$(sql default.db "SELECT stored FROM runs")" = requests ] || fail "runs.stored of the default"
[ "$(sql requests.db "SELECT count(*) FROM requests")" = "$n" ] || fail "--store requests"
[ "$(sql summary.db "SELECT count(*) FROM requests")" = 0 ] || fail "--store summary kept requests"
[ "$(sql summary.db "SELECT stored FROM runs")" = summary ] || fail "runs.stored: summary"
for db in summary requests default; do
    [ "$(sql $db.db "SELECT count(*) FROM iterations")" = 0 ] || fail "$db kept iterations"
done
[ "$(sql iterations.db "SELECT count(*) FROM requests")" = "$n" ] || fail "--store iterations: requests"
# every iteration of every container, as many as the summary counts, each within the run
its=$(sql iterations.db "SELECT iterations FROM summary")
[ "$its" -gt 100 ] || fail "summary.iterations: $its"
[ "$(sql iterations.db "SELECT count(*) FROM iterations")" = "$its" ] ||
    fail "iterations rows $(sql iterations.db "SELECT count(*) FROM iterations") != $its"
[ "$(sql iterations.db "SELECT count(*) FROM iterations WHERE end_s <= start_s OR start_s < 0
     OR (prefill_seqs + decode_seqs) = 0 OR kind NOT IN ('prefill', 'decode', 'mixed')
     OR (kind = 'mixed') != (prefill_seqs > 0 AND decode_seqs > 0)
     OR tenant IS NOT 'default'")" = 0 ] || fail "an iteration row out of shape"
[ "$(sql iterations.db "SELECT count(DISTINCT container) FROM iterations")" = 2 ] ||
    fail "iterations of both containers"
[ "$(sql iterations.db "SELECT sum(prefill_tokens) FROM iterations")" = \
  "$(sql iterations.db "SELECT prompt_tokens FROM summary")" ] || fail "prefilled tokens"
# what is kept changes no figure
for k in summary requests iterations; do
    python3 - default.json $k.json <<'PY' || fail "--store $k changed the results"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b):
    for key in ("wall_s", "events_per_s", "db", "sim_speed"):
        d.pop(key, None)
assert a == b, [k for k in a if a[k] != b.get(k)]
PY
done
expect_error 2 "replay: --store: 'all': expected summary, requests or iterations" \
    "${R[@]}" --db x.db --store all
[ ! -e x.db ] || fail "a bad --store stored a run"

# ---- bundles and capacities ----
printf '[tenant.chat]\nmodel = llama-2-7b\nreplicas = 1\ntrace = t.csv\nsla_ttft_ms = 2000\n' >e.ini
printf '[run]\nwarmup_s = 2\n' >>e.ini
"$S" compare -c e.ini --policies container,llumnix --rates 1 --db c.db --no-progress \
    --store summary >/dev/null || fail "compare --store summary"
[ "$(sql c.db "SELECT group_concat(bundle || ':' || stored, ' ') FROM runs")" = \
  "container:summary llumnix:summary" ] || fail "compare's bundles: $(sql c.db "SELECT group_concat(bundle) FROM runs")"
[ "$(sql default.db "SELECT count(*) FROM runs WHERE bundle IS NULL")" = 1 ] ||
    fail "a plain replay has no bundle"
"$S" capacity -c e.ini --policies container,tuned:policy.max_num_seqs=64 --seeds 2 \
    --db cap.db --name cap --json --no-progress >cap.json || fail "capacity"
python3 - cap.json cap.db <<'PY' || fail "the capacities tables differ from capacity's JSON"
import json, sqlite3, sys
j = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
rows = db.execute("SELECT capacity_id, bundle, reference, criterion, seeds, status, capacity,"
                  " capacity_ci95_lo, capacity_ci95_hi, ratio, verdict, sweep, probes"
                  " FROM capacities ORDER BY capacity_id").fetchall()
assert len(rows) == len(j["policies"]) == 2, rows
for r, p in zip(rows, j["policies"]):
    cid, bundle, ref, crit, seeds, status, cap, lo, hi, ratio, verdict, sweep, probes = r
    assert (bundle, ref, crit, seeds, sweep) == (p["policy"], j["reference"], j["criterion"],
                                                 2, "cap"), r
    assert (status, verdict, probes) == (p["status"], p["verdict"], p["n_probes"]), r
    assert abs(cap - p["capacity"]) <= 1e-12 * cap and abs(lo - p["ci95_lo"]) <= 1e-9, r
    assert abs(hi - p["ci95_hi"]) <= 1e-9 and abs(ratio - p["ratio"]) <= 1e-9, r
    seeds = db.execute("SELECT seed, capacity, bracket_lo, bracket_hi, point FROM capacity_seeds"
                       " WHERE capacity_id = ? ORDER BY seed", (cid,)).fetchall()
    assert [s[0] for s in seeds] == [q["seed"] for q in p["runs"]], seeds
    for s, q in zip(seeds, p["runs"]):
        assert s[1] == q["capacity"] and s[2] == q["lo"] and s[3] == (q["hi"] or None), (s, q)
        # the probe at capacity is a stored run of the sweep, found by its point
        run = db.execute("SELECT r.load, r.bundle FROM sweep_points p JOIN runs r USING (run_id)"
                         " WHERE p.sweep = 'cap' AND p.point = ?", (s[4],)).fetchone()
        assert run == (q["capacity"], bundle), (s, run)
PY

# ---- db merge: a plain replay is added once ----
"$S" db merge m.db default.db summary.db cap.db >merge1.out || fail "merge"
"$S" db merge m.db default.db summary.db cap.db >merge2.out || fail "merge again"
grep -q "default.db: 0 runs copied, 0 sweep points already there, 1 runs already there" merge2.out ||
    fail "the second merge of a replay: $(cat merge2.out)"
grep -q "2 capacities copied, 0 already there" merge1.out || fail "capacities merged: $(cat merge1.out)"
grep -q "0 capacities copied, 2 already there" merge2.out || fail "capacities merged twice"
[ "$(sql m.db "SELECT count(*) FROM runs")" = \
  "$(( 2 + $(sql cap.db "SELECT count(*) FROM runs") ))" ] || fail "runs after two merges"
[ "$(sql m.db "SELECT count(*) FROM requests")" = \
  "$(( n + $(sql cap.db "SELECT count(*) FROM requests") ))" ] || fail "requests after two merges"
[ "$(sql m.db "SELECT count(*) FROM capacity_seeds")" = 4 ] || fail "capacity_seeds after merges"
# two replays of the same command are two runs, not one
"$S" db merge m2.db default.db requests.db >/dev/null || fail "merge two replays"
[ "$(sql m2.db "SELECT count(*) FROM runs")" = 2 ] || fail "two equal-figure replays kept apart"
"$S" db merge m3.db iterations.db >/dev/null || fail "merge iterations"
[ "$(sql m3.db "SELECT count(*) FROM iterations")" = "$its" ] || fail "merged iterations"

# ---- db export --csv ----
"$S" db export m.db --csv exp/csv >export.out || fail "export"
tail -1 export.out | grep -Eq "^slicesim db export: m.db: [0-9]+ tables to exp/csv$" ||
    fail "export's last line: $(tail -1 export.out)"
for t in runs summary requests capacities capacity_seeds iterations sweep_points tenants; do
    [ -f exp/csv/$t.csv ] || fail "no $t.csv"
done
python3 - m.db exp/csv <<'PY' || fail "the CSV files differ from the database"
import csv, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
for t in tables:
    with open(f"{sys.argv[2]}/{t}.csv", newline="") as f:
        rows = list(csv.reader(f))
    cur = db.execute(f'SELECT * FROM "{t}"')
    assert rows[0] == [d[0] for d in cur.description], t
    want = cur.fetchall()
    assert len(rows) - 1 == len(want), (t, len(rows), len(want))
    for got, w in zip(rows[1:], want):
        for g, v in zip(got, w):
            if v is None:
                assert g == "", (t, g)
            elif isinstance(v, float):
                assert float(g) == v, (t, g, v)  # every digit that tells the value
            else:
                assert g == str(v), (t, g, v)
# the command line, with its commas and spaces, is one quoted field
with open(f"{sys.argv[2]}/capacities.csv", newline="") as f:
    assert "--policies container,tuned" in next(csv.DictReader(f))["command"]
PY
"$S" db export m.db --csv sel --tables capacities,runs >/dev/null || fail "export --tables"
[ "$(ls sel)" = "$(printf 'capacities.csv\nruns.csv')" ] || fail "--tables wrote: $(ls sel)"
expect_error 2 "db export: --tables: m.db has no table 'nope'" \
    "$S" db export m.db --csv bad --tables runs,nope
[ ! -e bad ] || fail "export wrote before refusing a table"
expect_error 2 "db export: expected DB and --csv DIR" "$S" db export m.db
expect_error 2 "db export: .*none.db" "$S" db export none.db --csv bad
[ ! -e bad ] || fail "export of a missing database made its folder"
# an older database is read as the current schema
cp default.db old.db
sqlite3 old.db "ALTER TABLE gpus DROP COLUMN phys; ALTER TABLE gpus DROP COLUMN share;
    ALTER TABLE tenants DROP COLUMN share; DROP INDEX runs_by_created; DROP TABLE capacity_seeds; DROP TABLE capacities;
    DROP TABLE iterations; ALTER TABLE runs DROP COLUMN stored; ALTER TABLE runs DROP COLUMN bundle;
    PRAGMA user_version = 16;" 2>/dev/null || fail "making a version-16 database"
"$S" db export old.db --csv old >/dev/null || fail "export of a version-16 database"
python3 -c 'import csv, sys; r = list(csv.DictReader(open(sys.argv[1], newline="")))
assert len(r) == 1 and r[0]["stored"] == "requests" and r[0]["bundle"] == "", r' old/runs.csv ||
    fail "an old run reads stored = requests, no bundle"
[ "$(sql old.db "PRAGMA user_version")" = 16 ] || fail "export upgraded its input"
echo "results_cli: ok"
