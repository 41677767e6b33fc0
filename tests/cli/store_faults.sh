#!/bin/bash
# The results database when the disk or another process gets in the way, through the CLI: a
# read-only database file, a database another process holds locked past the busy timeout, a
# full disk (a file-size limit, and a real ENOSPC on a tiny tmpfs when this may mount one),
# and two replays writing the same database at once, several times. Each failure is one
# clear line on stderr with exit status 1, nothing on stdout, and the database keeps every
# earlier run whole, gains no half-written run and passes PRAGMA integrity_check; a new
# database whose first run fails on a full disk is not left behind (nor its -wal), one that
# existed before is kept. (Every SQLite step failing in turn is tests/unit/test_store_faults.c.)
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
holder=0
trap '[ "$holder" -gt 0 ] && kill "$holder" 2>/dev/null; rm -rf "$T"' EXIT
cd "$T" || exit 1
chmod 755 "$T"
TR=$ROOT/traces/azure-conv-synth.csv
run() { "$S" replay --trace "$TR" --no-progress "$@"; }

# sound DB RUNS: integrity ok, RUNS runs, each with its summary, its request rows (as many as
# the summary counts), GPU rows and idle-slice rows.
sound() {
    [ "$(sql "$1" 'PRAGMA integrity_check')" = ok ] || fail "$1: integrity_check"
    [ "$(sql "$1" 'SELECT count(*) FROM runs')" = "$2" ] ||
        fail "$1: $(sql "$1" 'SELECT count(*) FROM runs') runs, want $2"
    [ "$(sql "$1" "SELECT count(*) FROM runs r WHERE
        (SELECT count(*) FROM summary WHERE run_id = r.run_id) != 1
        OR (SELECT count(*) FROM requests WHERE run_id = r.run_id)
           != (SELECT requests FROM summary WHERE run_id = r.run_id)
        OR NOT EXISTS (SELECT 1 FROM gpus WHERE run_id = r.run_id)
        OR NOT EXISTS (SELECT 1 FROM idle_slices WHERE run_id = r.run_id)")" = 0 ] ||
        fail "$1: a half-written run"
}

run --limit 400 --db base.db >/dev/null || fail "first run"
sound base.db 1
rows() { sql "$1" 'SELECT group_concat(req_id || ":" || ttft_ms, ",") FROM requests'; }
before=$(rows base.db)

# 1. A read-only database file. Root writes through file modes, so as root the replay runs as
#    nobody (setpriv); without setpriv that variant is skipped, and says so.
cp base.db ro.db
chmod 444 ro.db
if [ "$(id -u)" -ne 0 ]; then
    expect_error 1 '^slicesim: replay: ro\.db: .*(readonly|read-only)' run --limit 50 --db ro.db
elif command -v setpriv >/dev/null; then
    expect_error 1 '^slicesim: replay: ro\.db: .*(readonly|read-only)' \
        setpriv --reuid=65534 --regid=65534 --clear-groups "$S" replay --trace "$TR" \
        --no-progress --limit 50 --db ro.db
else
    echo "note: running as root without setpriv: the read-only database case is skipped"
fi
sound ro.db 1
[ "$(rows ro.db)" = "$before" ] || fail "the read-only database changed"

# 2. Locked: another process holds an exclusive transaction for 4 s; with a 200 ms busy
#    timeout the replay gives up at once, before simulating, and changes nothing.
cp base.db lk.db
{ echo "BEGIN EXCLUSIVE; INSERT INTO sweep_points VALUES ('x', 'y', 1);"
  echo ".system touch locked"; sleep 4; echo "ROLLBACK;"; } | sqlite3 lk.db >/dev/null &
holder=$!
for _ in $(seq 100); do
    [ -e locked ] && break
    sleep 0.1
done
[ -e locked ] || fail "the lock holder did not start"
SLICESIM_BUSY_TIMEOUT_MS=200 expect_error 1 \
    "^slicesim: replay: lk\.db: starting the run's transaction: database is locked$" \
    run --limit 50 --db lk.db
wait "$holder"
holder=0
sound lk.db 1
[ "$(rows lk.db)" = "$before" ] || fail "the locked database changed"
run --limit 50 --db lk.db >/dev/null || fail "a run once the lock is gone"
sound lk.db 2

# 3. Disk full. (a) A file-size limit (ulimit -f, SIGXFSZ ignored): writes past it fail as
#    an I/O error; the limits put the failure at a request row and at the commit.
for kib in 200 800; do
    cp base.db fs.db
    rm -f fs.db-wal fs.db-shm
    ( ulimit -f "$kib"; trap '' XFSZ; exec "$S" replay --trace "$TR" --no-progress \
        --db fs.db ) >"$T/out" 2>"$T/err"
    rc=$?
    [ "$rc" -eq 1 ] || fail "file-size limit $kib KiB: exit $rc ($(cat "$T/err"))"
    [ ! -s "$T/out" ] || fail "file-size limit: wrote to stdout"
    [ "$(wc -l <"$T/err")" -eq 1 ] || fail "file-size limit: $(cat "$T/err")"
    grep -Eq '^slicesim: replay: fs\.db: .*: (disk I/O error|database or disk is full)$' \
        "$T/err" || fail "file-size limit: '$(cat "$T/err")'"
    sound fs.db 1
    [ "$(rows fs.db)" = "$before" ] || fail "the full database changed"
done
# (b) A real ENOSPC on a 400 KiB tmpfs in a private mount namespace, where that is allowed.
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
    unshare -m --propagation private true 2>/dev/null; then
    mkdir -p full
    unshare -m --propagation private bash -c '
        mount -t tmpfs -o size=400k tmpfs full || exit 99
        cp base.db full/f.db
        "$1" replay --trace "$2" --no-progress --db full/f.db >out 2>err
        echo $? >rc
        sqlite3 full/f.db "PRAGMA integrity_check" >integrity
        sqlite3 full/f.db "SELECT count(*) FROM runs" >>integrity
        sqlite3 full/f.db "SELECT group_concat(req_id || \":\" || ttft_ms, \",\") FROM requests" >rows
    ' _ "$S" "$TR"
    if [ -s rc ]; then
        [ "$(cat rc)" = 1 ] || fail "full disk: exit $(cat rc) ($(cat err))"
        [ ! -s out ] || fail "full disk: wrote to stdout"
        grep -Eq '^slicesim: replay: full/f\.db: .*: database or disk is full$' err ||
            fail "full disk: '$(cat err)'"
        [ "$(wc -l <err)" -eq 1 ] || fail "full disk: $(cat err)"
        [ "$(tr '\n' ' ' <integrity)" = "ok 1 " ] || fail "full disk: $(cat integrity)"
        [ "$(cat rows)" = "$before" ] || fail "the database on the full disk changed"
    else
        echo "note: cannot mount a tmpfs here: the real ENOSPC case is skipped"
    fi
else
    echo "note: not root or no mount namespaces: the real ENOSPC case is skipped"
fi

# (c) A new database on a full disk leaves nothing behind, and an existing one is kept. On a
#     1 MiB tmpfs a replay's first run fills it: no new.db, and no -wal (it held the schema's
#     commit, which no room was left to checkpoint: 0.9 MiB of it used to stay). With the
#     tmpfs filled to the last block a sweep fails at "setting WAL" and leaves no 0-byte
#     database, while an empty file that was there before (touch) stays.
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
    unshare -m --propagation private true 2>/dev/null; then
    mkdir -p full2
    cat >fullexp.ini <<INI
[sweep]
name = full
scenario = $ROOT/experiments/slice-vs-container.ini
[set]
run.duration_s = 20
run.warmup_s = 2
[grid]
policy = container
rate = 1
INI
    unshare -m --propagation private bash -c '
        mount -t tmpfs -o size=1m tmpfs full2 || exit 99
        "$1" replay --trace "$2" --no-progress --db full2/new.db >out1 2>err1
        echo $? >rc1
        ls full2 >left1
        dd if=/dev/zero of=full2/fill bs=4k 2>/dev/null
        : >full2/kept.db
        "$1" sweep fullexp.ini --db full2/sw.db >out2 2>err2
        echo $? >rc2
        "$1" replay --trace "$2" --no-progress --db full2/kept.db >out3 2>err3
        echo $? >rc3
        ls full2 >left2
    ' _ "$S" "$TR"
    if [ -s rc1 ]; then
        [ "$(cat rc1)" = 1 ] || fail "new database on a full disk: exit $(cat rc1) ($(cat err1))"
        grep -Eq '^slicesim: replay: full2/new\.db: .*: database or disk is full$' err1 ||
            fail "new database on a full disk: '$(cat err1)'"
        [ ! -s left1 ] || fail "a failed replay onto a new database left: $(tr '\n' ' ' <left1)"
        [ "$(cat rc2)" = 1 ] || fail "sweep on a full disk: exit $(cat rc2) ($(cat err2))"
        grep -Eq 'full2/sw\.db: setting WAL: database or disk is full$' err2 ||
            fail "sweep on a full disk: '$(cat err2)'"
        [ "$(cat rc3)" = 1 ] || fail "replay onto an empty file on a full disk: exit $(cat rc3)"
        [ "$(tr '\n' ' ' <left2)" = "fill kept.db " ] ||
            fail "after the sweep and the replay on a full disk: $(tr '\n' ' ' <left2)"
    else
        echo "note: cannot mount a tmpfs here: the new database on a full disk is skipped"
    fi
fi
# 4. Two writers starting on a new database at once: the other one has just made the schema
#    (with sqlite3: slicesim's own, read from another database) and holds it uncommitted for
#    a second while the replay opens the file and finds it empty. Once the lock is free, the
#    replay must see the schema there (it used to create it a second time and fail with
#    "table runs already exists").
{ echo "PRAGMA journal_mode=WAL; BEGIN IMMEDIATE;"
  sqlite3 base.db .schema
  echo "PRAGMA user_version = $(sql base.db 'PRAGMA user_version');"
  echo ".system touch made"; sleep 1; echo "COMMIT;"; } | sqlite3 new.db >/dev/null &
holder=$!
for _ in $(seq 100); do
    [ -e made ] && break
    sleep 0.1
done
[ -e made ] || fail "the schema maker did not start"
run --limit 100 --db new.db >/dev/null 2>"$T/err" || fail "replay on a new database: $(cat "$T/err")"
wait "$holder"
holder=0
sound new.db 1
# 5. Two replays writing one database at once, three times over: every run arrives whole.
for round in 1 2 3; do
    run --limit 1500 --seed "$round" --db two.db >/dev/null 2>"$T/e1" &
    a=$!
    run --limit 1200 --rate-scale 2 --db two.db >/dev/null 2>"$T/e2" &
    b=$!
    wait "$a" || fail "round $round, first writer: $(cat "$T/e1")"
    wait "$b" || fail "round $round, second writer: $(cat "$T/e2")"
done
sound two.db 6
[ "$(sql two.db 'SELECT count(*) FROM requests')" = $((3 * 1500 + 3 * 1200)) ] ||
    fail "two writers: request rows"
echo "store_faults: all checks passed"
