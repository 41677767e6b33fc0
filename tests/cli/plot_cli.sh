#!/bin/bash
# `slicesim plot`: every kind renders to valid PNG and SVG from a small database (a compare of
# two policies at two loads), for a sweep and for plain runs; bad input gives one clear error.
# Skips (exit 77) where gnuplot is not installed.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
command -v gnuplot >/dev/null || { echo "skip: gnuplot is not installed"; exit 77; }
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
KINDS="throughput-vs-load sla-vs-load latency-cdf gpu-time idle-slices tiers"
is_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; }

"$S" compare -c "$ROOT/experiments/slice-vs-container.ini" --set run.duration_s=60 \
    --set run.warmup_s=5 --set tenant.chat.tiers=2 --policies container,slice --rates 0.5,1 \
    --db p.db >/dev/null 2>err || fail "compare: $(cat err)"
"$S" plot p.db -o figs >out 2>err || fail "plot: $(cat err)"
for k in $KINDS; do
    is_png "figs/$k.png" || fail "$k.png is not a PNG"
    [ "$(stat -c %s "figs/$k.png")" -gt 5000 ] || fail "$k.png is nearly empty"
    grep -q "<svg" "figs/$k.svg" || fail "$k.svg is not SVG"
    grep -q "$k" out || fail "not listed: $k"
done
grep -q "container" figs/throughput-vs-load.svg || fail "the legend names the policies"
grep -q "slice" figs/tiers.svg || fail "the tiers legend names the policies"

# a database of plain replays, one kind, PNG only
"$S" replay --limit 300 --db r.db >/dev/null 2>&1 || fail "replay"
"$S" replay --limit 300 --rate-scale 2 --db r.db >/dev/null 2>&1 || fail "replay x2"
"$S" plot r.db --kind throughput-vs-load,gpu-time --format png -o plain >/dev/null 2>err ||
    fail "plot of plain runs: $(cat err)"
is_png plain/throughput-vs-load.png || fail "plain throughput-vs-load.png"
[ ! -e plain/gpu-time.svg ] || fail "--format png wrote SVG"

# ---- a database whose every stored string is hostile: drawn as text, nothing run ----------
# A sweep's name (--name, [sweep] name, or a database made elsewhere) with a quote that closes
# gnuplot's string ran the command after it.
"$S" compare -c "$ROOT/experiments/slice-vs-container.ini" --set run.duration_s=30 \
    --set run.warmup_s=5 --policies container --rates 0.5,1 --db n.db \
    --name '"; system("touch PWNED0"); print "' >/dev/null 2>err || fail "compare --name: $(cat err)"
"$S" plot n.db --kind throughput-vs-load -o named >/dev/null 2>err || fail "plot n.db: $(cat err)"
[ ! -e PWNED0 ] || fail "plot ran the command in a sweep's name"
# -o makes the folders above the output folder too (the README's tour writes plots/out/tour
# before any plots/out exists); a file where a folder should be is a one-line error
"$S" plot n.db --kind throughput-vs-load -o deep/er//out/ >/dev/null 2>err ||
    fail "plot -o deep/er//out/: $(cat err)"
[ -s deep/er/out/throughput-vs-load.svg ] || fail "plot -o deep/er//out/ drew nothing"
touch afile
expect_error 1 'afile/x: cannot create: Not a directory' "$S" plot n.db -o afile/x
! grep -qF 'system("touch PWNED0")' named/throughput-vs-load.svg ||
    fail "the sweep's internal name is in the figure's title"
# Each text value gains gnuplot code that runs a shell command if spliced into the program or
# a datablock (a quote that closes the string, a backquote, a macro, a line that ends the
# datablock); the sweep points' policy labels gain one without ';' or '=', which the point
# format splits on.
cp p.db h.db
python3 - h.db <<'PY' || fail "making the hostile database"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
bad = ('"; system("touch PWNED1"); print "\'; system(\'touch PWNED2\'); print \''
       '`touch PWNED3`@names\nEOD\nsystem("touch PWNED4")\n\\\x1b[31m')
bad2 = ('" . system("touch PWNED5") . "\' . system(\'touch PWNED6\') . \'`touch PWNED7`'
        '\nEOD\nprint system("touch PWNED8")\n\\\x1b[31m')
n = 0
for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
    for col in db.execute(f'PRAGMA table_info("{t}")').fetchall():
        c = col[1]
        if (t, c) == ("sweep_points", "point"):
            n += db.execute(f'UPDATE "{t}" SET "{c}" = replace("{c}", \'policy=\', '
                            f'\'policy=\' || ?)', (bad2,)).rowcount
        else:  # JSON columns stay JSON
            n += db.execute(f'UPDATE "{t}" SET "{c}" = "{c}" || ? WHERE typeof("{c}") = '
                            f'\'text\' AND "{c}" NOT LIKE \'{{%\'', (bad,)).rowcount
db.commit()
assert n > 100, n
PY
"$S" plot h.db -o hostile >out 2>err || fail "plot of the hostile database: $(cat err)"
ls PWNED* 2>/dev/null && fail "plot ran commands stored in the database: $(ls PWNED*)"
for k in $KINDS; do
    is_png "hostile/$k.png" && grep -q "</svg>" "hostile/$k.svg" || fail "hostile $k"
done
# the names are drawn as they are stored (a control character as '?')
grep -q 'touch PWNED5' hostile/throughput-vs-load.svg || fail "the series' names are not drawn"
grep -q 'container' hostile/throughput-vs-load.svg && grep -q 'slice' hostile/tiers.svg ||
    fail "the two series were merged"
grep -q 'touch PWNED2' hostile/gpu-time.svg || fail "the tenants' names are not the labels"
# a name holding a new line is refused where it is given, and stored ones print on one line
expect_error 2 "compare: --name: .*control character.*a\\\\x0ab" "$S" compare -c "$ROOT/experiments/slice-vs-container.ini" \
    --policies container --rates 1 --db none --name "$(printf 'a\nb')"

# ---- a full disk: exit 1, no partial figure, the old one kept ----------------------------
# (a) A file-size limit (ulimit -f, SIGXFSZ ignored) fails every write past 8 KiB; the database
# is read through a rollback journal, so that reading it writes no -shm file the limit would
# fail first.
cp p.db pd.db && sql pd.db "PRAGMA journal_mode = DELETE" >/dev/null || fail "pd.db"
cp figs/tiers.png old-tiers.png
( ulimit -f 8; trap '' XFSZ; exec "$S" plot pd.db --kind tiers,latency-cdf --format png -o figs ) \
    >out 2>err
rc=$?
[ $rc -eq 1 ] || fail "plot onto a full disk: exit $rc, want 1 ($(cat err))"
grep -q "^slicesim: plot: figs/.*: writing: File too large$" err || fail "full disk: $(cat err)"
cmp -s figs/tiers.png old-tiers.png || fail "a failed plot replaced tiers.png"
[ -z "$(ls figs/*.tmp 2>/dev/null)" ] || fail "a failed plot left $(ls figs/*.tmp)"
# (b) A real ENOSPC on a small tmpfs in a private mount namespace, where that is allowed.
if [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null &&
    unshare -m --propagation private true 2>/dev/null; then
    mkdir -p tiny
    unshare -m --propagation private bash -c '
        mount -t tmpfs -o size=16k tmpfs tiny || exit 99
        "$1" plot p.db --kind latency-cdf --format png -o tiny >out 2>err
        echo $? >rc
        ls tiny >left
    ' _ "$S"
    if [ -s rc ]; then
        [ "$(cat rc)" = 1 ] || fail "plot onto a full tmpfs: exit $(cat rc) ($(cat err))"
        grep -q "No space left on device" err || fail "full tmpfs: $(cat err)"
        [ ! -s left ] || fail "a full tmpfs was left $(cat left)"
    else
        echo "note: cannot mount a tmpfs here: the real ENOSPC case is skipped"
    fi
fi

expect_error 2 "no-such.db: cannot open" "$S" plot no-such.db
expect_error 2 "unknown kind .*'pie'" "$S" plot p.db --kind pie
expect_error 2 "load 7: no run at that load" "$S" plot p.db --load 7 -o x
expect_error 2 "expected png, svg, pdf or both" "$S" plot p.db --format gif
expect_error 2 "style: expected screen or paper" "$S" plot p.db --style poster
expect_error 2 "sla-bound: expected a percentage" "$S" plot p.db --sla-bound 120

# ---- a paper's figures: PDF and SVG, 3.3 in wide, no title; the SLA bound drawn ------------
"$S" plot p.db --style paper -o paper >out 2>err || fail "plot --style paper: $(cat err)"
for k in $KINDS; do
    [ "$(head -c 5 "paper/$k.pdf")" = "%PDF-" ] || fail "paper/$k.pdf is not a PDF"
    grep -q 'width="330" height="240"' "paper/$k.svg" || fail "paper/$k.svg is not 330 x 240"
    [ ! -e "paper/$k.png" ] || fail "--style paper drew a PNG"
done
grep -q "Throughput against load" figs/throughput-vs-load.svg || fail "a screen figure's title"
! grep -q "Throughput against load" paper/throughput-vs-load.svg || fail "a paper figure has a title"
grep -q "bound 9 %" figs/sla-vs-load.svg || fail "the SLA bound is not drawn"
"$S" plot p.db --kind sla-vs-load --sla-bound 0 --format svg -o nobound >/dev/null 2>&1 ||
    fail "--sla-bound 0"
! grep -q "bound 9 %" nobound/sla-vs-load.svg || fail "--sla-bound 0 drew a bound"

# ---- capacity: each bundle's capacity with its interval, from the capacities table ----------
"$S" capacity -c "$ROOT/experiments/slice-vs-container.ini" --set run.duration_s=30 \
    --set run.warmup_s=5 --policies container,slice --seeds 2 --max-probes 4 --db cap.db \
    --name cap --no-progress >/dev/null 2>err || fail "capacity: $(cat err)"
"$S" plot cap.db --sweep cap --kind capacity --style paper -o capfig >out 2>err ||
    fail "plot --kind capacity: $(cat err)"
[ "$(head -c 5 capfig/capacity.pdf)" = "%PDF-" ] && grep -q "</svg>" capfig/capacity.svg ||
    fail "the capacity figure"
grep -q "container (1.00x)" capfig/capacity.svg && grep -q "slice (" capfig/capacity.svg ||
    fail "the capacity figure's labels: $(grep -o 'container[^<]*' capfig/capacity.svg | head -2)"

# ---- a figure with nothing to compare is skipped, saying why --------------------------------
"$S" compare -c "$ROOT/experiments/slice-vs-container.ini" --set run.duration_s=30 \
    --set run.warmup_s=5 --policies container,slice --rates 1 --db one.db >/dev/null 2>err ||
    fail "compare at one load: $(cat err)"
"$S" plot one.db -o one >out 2>err || fail "plot of one load: $(cat err)"
grep -q "^slicesim: plot: skipped throughput-vs-load: one load (1): a line against load needs two" err ||
    fail "no skip line for one load: $(cat err)"
grep -q "^slicesim: plot: skipped sla-vs-load: one load (1)" err || fail "sla-vs-load not skipped"
grep -q "^slicesim: plot: skipped tiers: every run at load 1 has one tier" err || fail "tiers: $(cat err)"
grep -q "^slicesim: plot: skipped capacity: sweep '.*' holds no capacity results" err ||
    fail "capacity: $(cat err)"
[ "$(wc -l <err)" = 4 ] || fail "more than the skip lines on stderr: $(cat err)"
[ ! -e one/throughput-vs-load.svg ] && [ ! -e one/tiers.png ] || fail "a skipped figure was drawn"
[ -e one/latency-cdf.svg ] && [ -e one/gpu-time.png ] || fail "the other figures are drawn"
echo "plot_cli: all checks passed"
