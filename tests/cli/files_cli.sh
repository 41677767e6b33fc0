#!/bin/bash
# Nothing a command writes may destroy a file it should not: an output that names an input,
# the results database or another output is refused (compared as files, not as strings);
# devices, FIFOs and symbolic links are written through, not replaced; a write error (a full
# disk, /dev/full) fails the command, standard output included; readers never write to their
# inputs, a bad merge input is bad input (exit 2), and a failed merge leaves no new file; an
# interrupted writer leaves no FILE.tmp.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

"$S" trace gen --rate 2 --duration 60 -o t.csv >/dev/null || fail "trace gen"
"$S" replay --trace t.csv --db r.db --no-progress >/dev/null || fail "first replay"
cp t.csv t.orig
cp r.db r.orig
printf '[tenant.a]\nmodel = llama-2-7b\nreplicas = 1\ntrace = t.csv\n' >e.ini
cp e.ini e.orig
runs() { sql r.db 'SELECT count(*) FROM runs'; }
unchanged() {
    cmp -s t.csv t.orig || fail "$*: the trace changed"
    cmp -s e.ini e.orig || fail "$*: the scenario changed"
    [ "$(runs)" = 1 ] || fail "$*: the results database changed ($(runs) runs)"
    [ -z "$(ls ./*.tmp 2>/dev/null)" ] || fail "$*: left $(ls ./*.tmp)"
}

# ---- an output that is an input, the database or another output is refused -----------------
mkdir sub
ln r.db hard.db
expect_error 2 "timeline r.db is the same file as the results database r.db" \
    "$S" replay --db r.db --trace t.csv --timeline r.db
expect_error 2 "same file as the results database" \
    "$S" replay --db r.db --trace t.csv --timeline sub/../r.db
expect_error 2 "same file as the results database" \
    "$S" replay --db r.db --trace t.csv --timeline hard.db
expect_error 2 "timeline t.csv is the same file as tenant default's trace t.csv: refusing to overwrite" \
    "$S" replay --db none --trace t.csv --timeline t.csv
expect_error 2 "the results database t.csv is the same file as tenant default's trace" \
    "$S" replay --db t.csv --trace t.csv
expect_error 2 "timeline e.ini is the same file as the scenario file" \
    "$S" replay -c e.ini --db none --timeline e.ini
expect_error 2 "the results database .*e.ini is the same file as the scenario file" \
    "$S" replay -c e.ini --set run.db=e.ini
expect_error 2 "same file as tenant a's trace" \
    "$S" compare -c e.ini --policies container --db t.csv
expect_error 2 "the output r.db is the same file as input ./r.db" \
    "$S" db merge r.db ./r.db
expect_error 2 "the results database \(--db\) t.csv is the same file as --trace t.csv" \
    "$S" validate --backend sim --gpu a100-80g --model llama-2-7b --trace t.csv --db t.csv
unchanged "refused outputs"
# a new output named twice, through two spellings, is refused before either is written
expect_error 2 "timeline sub/../new.db is the same file as the results database new.db" \
    "$S" replay --trace t.csv --db new.db --timeline sub/../new.db
[ ! -e new.db ] || fail "a refused replay created its database"

# ---- devices, FIFOs and symbolic links are written through, not replaced ---------------------
ln -s real.csv link.csv
"$S" trace gen --rate 1 --duration 30 -o link.csv >/dev/null || fail "trace gen through a link"
[ -L link.csv ] || fail "the symbolic link was replaced by a file"
cmp -s real.csv <("$S" trace gen --rate 1 --duration 30 -o -) || fail "the link's target"
ln -s sub/made.csv dangling.csv
"$S" trace gen --rate 1 --duration 30 -o dangling.csv >/dev/null || fail "trace gen, dangling link"
[ -L dangling.csv ] && [ -s sub/made.csv ] || fail "a dangling link's target was not created"
mkfifo fifo
cat fifo >from-fifo &
reader=$!
"$S" trace gen --rate 1 --duration 30 -o fifo >/dev/null || fail "trace gen into a FIFO"
wait $reader
[ -p fifo ] || fail "the FIFO was replaced"
cmp -s real.csv from-fifo || fail "what came through the FIFO"
# A stale or planted FILE.tmp (a link to a victim, a FIFO) is neither written through nor
# waited on: the temporary file is created under a new name, exclusively.
echo victim >victim.txt
ln -s victim.txt planted.csv.tmp
timeout 20 "$S" trace gen --rate 1 --duration 30 -o planted.csv >/dev/null ||
    fail "trace gen beside a planted link: exit $?"
[ "$(cat victim.txt)" = victim ] || fail "trace gen wrote through planted.csv.tmp"
[ -f planted.csv ] && [ ! -L planted.csv ] || fail "planted.csv is not a regular file"
cmp -s real.csv planted.csv || fail "planted.csv's content"
[ -L planted.csv.tmp ] || fail "the planted link was removed or replaced"
ln -s victim.txt tl2.json.tmp
mkfifo fifo2.csv.tmp
timeout 20 "$S" replay --trace t.csv --db none --no-progress --timeline tl2.json >/dev/null ||
    fail "replay --timeline beside a planted link: exit $?"
[ "$(cat victim.txt)" = victim ] && [ -f tl2.json ] && [ ! -L tl2.json ] ||
    fail "--timeline wrote through tl2.json.tmp"
timeout 20 "$S" trace gen --rate 1 --duration 30 -o fifo2.csv >/dev/null ||
    fail "trace gen beside a planted FIFO: exit $? (124: it hung)"
[ -p fifo2.csv.tmp ] && cmp -s real.csv fifo2.csv || fail "trace gen beside a planted FIFO"
rm -f planted.csv.tmp tl2.json.tmp fifo2.csv.tmp
# The temporary file gets the mode a new file gets (0666 less the umask).
(umask 027 && "$S" trace gen --rate 1 --duration 30 -o mode.csv >/dev/null) || fail "umask 027"
[ "$(stat -c %a mode.csv)" = 640 ] || fail "mode.csv: mode $(stat -c %a mode.csv), want 640"
# /dev/stdout is the open file itself: a pipe, or a file opened by '>>' (appended to, not
# replaced).
n=$("$S" trace gen --rate 1 --duration 30 -o /dev/stdout | wc -l)
[ "$n" = "$(wc -l <real.csv)" ] || fail "-o /dev/stdout into a pipe: $n lines"
echo first >app.csv
"$S" trace gen --rate 1 --duration 30 -o /dev/stdout >>app.csv || fail "-o /dev/stdout >>"
[ "$(head -1 app.csv)" = first ] && cmp -s <(tail -n +2 app.csv) real.csv ||
    fail "-o /dev/stdout >> app.csv did not append"
# Device nodes of our own (as root), so that a regression replaces these, not /dev's.
if mknod null c 1 3 2>/dev/null && mknod full c 1 7 2>/dev/null; then
    "$S" replay --trace t.csv --db none --timeline null >/dev/null || fail "--timeline to null"
    [ -c null ] || fail "the null device was replaced"
    expect_error 1 "full: .*No space left on device" \
        "$S" trace gen --rate 1 --duration 30 -o full
    [ -c full ] || fail "the full device was replaced"
    expect_error 1 "No space left on device" \
        "$S" replay --trace t.csv --db none --timeline full
    [ -c full ] || fail "the full device was replaced by --timeline"
    [ -z "$(ls ./*.tmp 2>/dev/null)" ] || fail "a device write left $(ls ./*.tmp)"
else
    echo "note: mknod not permitted; device nodes not checked"
fi

# ---- standard output that cannot be written fails the command --------------------------------
if [ -w /dev/full ]; then
    for cmd in "replay --trace t.csv --db none --json" "replay --trace t.csv --db none" \
               "compare -c e.ini --policies container --db none" "list models" \
               "trace gen --rate 1 --duration 30 -o -" "trace stats t.csv" "--version"; do
        # shellcheck disable=SC2086
        "$S" $cmd >/dev/full 2>err
        rc=$?
        [ $rc -eq 1 ] || fail "$cmd >/dev/full: exit $rc, want 1"
        grep -q "No space left on device\|cannot write" err || fail "$cmd >/dev/full: $(cat err)"
    done
fi

# ---- readers only read; a failed command leaves no new file -----------------------------------
: >empty.db
expect_error 2 "empty.db: empty: not a slicesim results database" "$S" db merge out.db empty.db
[ ! -s empty.db ] || fail "db merge wrote into its empty input"
[ ! -e out.db ] || fail "a failed db merge left out.db"
expect_error 2 "empty.db: empty: not a slicesim results database" "$S" plot empty.db -o plots
[ ! -s empty.db ] || fail "plot wrote into its empty input"
expect_error 2 "nonexistent.db: cannot open" "$S" db merge out2.db "$T/nonexistent.db"
[ ! -e out2.db ] || fail "a failed db merge left out2.db"
expect_error 2 "empty.db: empty" "$S" db merge out3.db r.db empty.db
[ ! -e out3.db ] || fail "db merge wrote out3.db before checking every input"
cp r.db ro.db
chmod 444 ro.db
"$S" db merge out4.db ro.db >/dev/null || fail "db merge of a read-only input"
[ "$(sql out4.db 'SELECT count(*) FROM runs')" = 1 ] || fail "merged runs"
ls ro.db-* 2>/dev/null && fail "db merge left SQLite files beside its input"
unchanged "readers"

# ---- a bad db merge input is bad input: exit 2, one line naming it, nothing written ---------
# Not SQLite, cut short, a damaged page, an index out of step with its table (found only while
# copying), a newer schema: a damaged or newer input used to exit 1 (a non-database 2), and
# damage found while copying named the output.
sqlx() { # sqlx DB SQL: run SQL on DB in a connection of its own
    if command -v sqlite3 >/dev/null; then
        sqlite3 "$1" "$2" >/dev/null
    else
        python3 -c 'import sqlite3,sys; sqlite3.connect(sys.argv[1]).executescript(sys.argv[2])' \
            "$1" "$2"
    fi
}
echo 'not a database' >text.db
head -c 5000 r.db >cut.db
cp r.db page.db
pg=$(sql r.db "SELECT rootpage FROM sqlite_master WHERE name = 'requests'")
psz=$(sql r.db 'PRAGMA page_size')
head -c "$psz" /dev/zero | tr '\0' '\245' |
    dd of=page.db bs="$psz" seek=$((pg - 1)) conv=notrunc 2>/dev/null
cp r.db index.db
idx_on() { sqlx index.db "PRAGMA writable_schema = ON; UPDATE sqlite_master SET tbl_name = '$1',
    sql = 'CREATE INDEX requests_by_run ON $1(run_id)' WHERE name = 'requests_by_run'"; }
idx_on runs            # the index now names another table, so a delete leaves it as it was
sqlx index.db 'DELETE FROM requests WHERE req_id < 5'
idx_on requests
cp r.db newer.db
sqlx newer.db 'PRAGMA user_version = 99'
# have.db holds another run (a run it holds already is skipped, not read: db merge --help)
"$S" replay --trace t.csv --db have.db --seed 2 --no-progress >/dev/null || fail "have.db"
for bad in "text.db: not a readable SQLite database: file is not a database" \
           "cut.db: not a readable SQLite database: database disk image is malformed" \
           "page.db: damaged: .*" "index.db: damaged: wrong # of entries in index requests_by_run" \
           "newer.db: results schema 99 is newer than this slicesim's"; do
    in=${bad%%:*}
    expect_error 2 "^slicesim: db merge: $bad" "$S" db merge bad-out.db "$in"
    [ ! -e bad-out.db ] || fail "a db merge refused for $in left bad-out.db"
    expect_error 2 "^slicesim: db merge: $bad" "$S" db merge have.db "$in"
    [ "$(sql have.db 'SELECT count(*) FROM runs')" = 1 ] || fail "db merge of $in changed have.db"
done

# ---- an interrupted writer leaves no FILE.tmp ------------------------------------------------
# With job control on, background jobs keep SIGINT's default (bash ignores it otherwise).
set -m
# Under nohup SIGHUP is ignored from the start, and slicesim rightly keeps ignoring it (as the
# shell does: an ignored signal cannot be trapped again), so its case cannot be tested there.
hup_ignored() { (( 16#$(awk '/^SigIgn:/ { print $2 }' /proc/$$/status) & 1 )); }
for sig in INT TERM HUP; do
    if [ $sig = HUP ] && hup_ignored; then
        echo "files_cli: SIGHUP is ignored in this environment (nohup): its case is skipped" >&2
        continue
    fi
    "$S" trace gen --rate 5000 --duration 100000 -o big.csv >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do [ -n "$(tmp_of big.csv)" ] && break; sleep 0.05; done
    [ -n "$(tmp_of big.csv)" ] || fail "trace gen did not start writing a temporary big.csv.*.tmp"
    kill -$sig $pid
    wait $pid
    rc=$?
    [ $rc -gt 128 ] || fail "trace gen after SIG$sig: exit $rc, want death by the signal"
    [ -z "$(tmp_of big.csv)" ] || fail "SIG$sig left $(tmp_of big.csv)"
    [ ! -e big.csv ] || fail "SIG$sig left a partial big.csv"
done
"$S" trace gen --rate 20 --duration 3600 -o long.csv >/dev/null || fail "trace gen long"
"$S" replay --trace long.csv --db none --timeline tl.json --timeline-ops --no-progress \
    >/dev/null 2>&1 &
pid=$!
for _ in $(seq 100); do [ -n "$(tmp_of tl.json)" ] && break; sleep 0.05; done
[ -n "$(tmp_of tl.json)" ] || fail "replay did not start writing a temporary tl.json.*.tmp"
kill -TERM $pid
wait $pid
[ -z "$(tmp_of tl.json)" ] || fail "SIGTERM left $(tmp_of tl.json)"
[ ! -e tl.json ] || fail "SIGTERM left a partial tl.json"
set +m
echo "files_cli: ok"
