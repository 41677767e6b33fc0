#!/bin/bash
# `slicesim plot` without a real gnuplot: a stand-in on PATH records what slicesim pipes to it.
# The gpu-time data are each GPU's compute, host phases and idle time over the measurement
# window, as the gpus table defines them; plain replays that differ (a 7B and a 70B model) are
# separate series, and too many to name are refused with what differs; a missing gnuplot is one
# line, and a gnuplot that hangs is killed after SLICESIM_GNUPLOT_TIMEOUT_S.
set -u
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
mkdir fake hang empty cut
# a stand-in that keeps its input and draws the smallest whole PNG (signature, IEND chunk)
printf '#!/bin/sh\ncat >>"$CAPTURE"\nprintf "\\211PNG\\r\\n\\032\\n"\nprintf "\\0\\0\\0\\0IEND\\256B\\140\\202"\n' \
    >fake/gnuplot
# one whose PNG stops short (a full disk, a crash), exiting 0
printf '#!/bin/sh\ncat >/dev/null\nprintf "\\211PNG\\r\\n\\032\\n\\0\\0\\0\\rIHDR"\n' >cut/gnuplot
# a child of its own, too, with a duration no other test run uses (pgrep sees every process)
printf '#!/bin/sh\nsleep 3141.%s\n' "$$" >hang/gnuplot
chmod +x fake/gnuplot cut/gnuplot hang/gnuplot
export CAPTURE=$T/captured
# plot_input ARGS...: what `slicesim plot ARGS` pipes to gnuplot
plot_input() {
    rm -f "$CAPTURE"
    PATH="$T/fake:$PATH" "$S" plot "$@" --format png -o figs >/dev/null 2>"$T/perr" ||
        fail "plot $*: $(cat "$T/perr")"
}
# block NAME: the rows of datablock $NAME in the captured input
block() { awk -v b="\$$1 << EOD" '$0 == b {on = 1; next} $0 == "EOD" {on = 0} on' "$CAPTURE"; }
# near A B: |A - B| < 0.01
near() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a - b < 0.01 && b - a < 0.01) }'; }

# --- the gpus table: compute_s and the idle slices tile the window; host_s is part of idle_s
"$S" replay --limit 2000 --db g.db >/dev/null 2>err || fail "replay: $(cat err)"
"$S" replay --limit 2000 --set run.warmup_s=60 --db w.db >/dev/null 2>err || fail "replay: $(cat err)"
for db in g.db w.db; do
    [ "$(sql $db "SELECT count(*) FROM gpus g JOIN summary s USING (run_id)
        WHERE abs(g.window_s - s.window_s) < 1e-9 AND abs(g.compute_s + g.idle_s - g.window_s) < 1e-6
        AND g.host_s > 0 AND g.host_s <= g.idle_s AND g.tenant = 'default'
        AND abs(g.utilization - g.compute_s / g.window_s) < 1e-12")" = 4 ] ||
        fail "$db: gpus rows: $(sql $db "SELECT group_concat(window_s || ' ' || compute_s || ' ' ||
            host_s || ' ' || idle_s || ' ' || utilization, '; ') FROM gpus")"
    # the mean utilization is 1 less the share of GPU time the replay calls idle
    near "$(sql $db "SELECT 100 * avg(utilization) FROM gpus")" \
        "$(sql $db "SELECT 100 - 100 * idle_gpu_s / (4 * window_s) FROM summary")" ||
        fail "$db: utilization is not 1 - idle share"
done
# without a warm-up the window is the whole run: host_s is busy_s - device_busy_s
[ "$(sql g.db "SELECT count(*) FROM gpus WHERE abs(host_s - (busy_s - device_busy_s)) < 1e-6")" = 4 ] ||
    fail "host_s over the whole run"

# --- the gpu-time figure draws those, per tenant: "tenant (N GPUs)" and the mean over its GPUs
# of compute_% host_% idle_% of the window
for db in g.db w.db; do
    plot_input $db --kind gpu-time
    block DATA | grep -v '^$' >rows
    [ "$(wc -l <rows)" = 1 ] || fail "$db: one row per tenant: $(cat rows)"
    set -- $(grep '^"default (4 GPUs)" ' rows | cut -d' ' -f4-)
    [ $# = 3 ] || fail "$db: no bar labelled 'default (4 GPUs)': $(cat rows)"
    near "$(awk -v a="$1" -v b="$2" -v c="$3" 'BEGIN { print a + b + c }')" 100 ||
        fail "$db: compute + host + idle = $1 + $2 + $3, not 100"
    # compute is the window less the idle slices (columns older databases have too)
    near "$1" "$(sql $db "SELECT avg(100 - 100 * g.idle_s / s.window_s) FROM gpus g
        JOIN summary s USING (run_id)")" || fail "$db: compute $1 %"
    near "$2" "$(sql $db "SELECT avg(100 * host_s / window_s) FROM gpus")" || fail "$db: host $2 %"
done
# and, with no warm-up, the host share is the whole run's busy_s - device_busy_s
set -- $(grep '^"default (4 GPUs)" ' <(plot_input g.db --kind gpu-time; block DATA) | cut -d' ' -f4-)
near "$2" "$(sql g.db "SELECT avg(100 * (busy_s - device_busy_s) / window_s) FROM gpus")" ||
    fail "host share: $2"
# gpu-timeline, its old name, still names it
rm -f figs/gpu-time.png
plot_input g.db --kind gpu-timeline
[ -s figs/gpu-time.png ] || fail "--kind gpu-timeline did not draw gpu-time"

# --- idle-slices is the cumulative share of idle GPU time by slice length, from the
# idle_slices table: bucket k (up to 10^k x 10 us) at its upper edge, the last at 100 s
plot_input g.db --kind idle-slices
python3 - g.db <(block DATA) <<'PY' || fail "the idle-time CDF differs from the idle_slices table: $(block DATA)"
import sqlite3, sys
rows = [tuple(map(float, l.split())) for l in open(sys.argv[2]) if l.strip()]
gpu_s = dict(sqlite3.connect(sys.argv[1]).execute("SELECT bucket, gpu_s FROM idle_slices"))
total, acc = sum(gpu_s.values()), 0.0
assert total > 0 and len(rows) == max(gpu_s) + 1, (rows, gpu_s)
for k, (x, share) in enumerate(rows):
    acc += gpu_s.get(k, 0.0)
    assert abs(x - 0.01 * 10 ** k) < 1e-9 * x and abs(share - acc / total) < 1e-4, (k, x, share)
assert rows[-1][1] == 1.0
PY

# --- plain replays that differ are separate series, named by what differs
"$S" replay --limit 300 --db m.db >/dev/null 2>&1 || fail "replay 7b"
"$S" replay --limit 300 --model llama-2-70b --gpu h100-sxm --tp 4 --replicas 2 --db m.db \
    >/dev/null 2>&1 || fail "replay 70b"
"$S" replay --limit 300 --rate-scale 2 --db m.db >/dev/null 2>&1 || fail "replay x2"
plot_input m.db --kind throughput-vs-load
grep -qx 'nseries = 2' "$CAPTURE" || fail "want 2 series: $(grep -E '^(nseries|names)' "$CAPTURE")"
grep -q "^names\[1\] = '.*model=llama-2-7b" "$CAPTURE" && grep -q "^names\[2\] = '.*model=llama-2-70b" \
    "$CAPTURE" || fail "series names: $(grep '^names' "$CAPTURE")"
# no path reaches gnuplot: the script comes inline and the figure back on its standard output
! grep -q "^set output '\|^load '" "$CAPTURE" || fail "a path was spliced into gnuplot's input"
grep -q "^plot for \[i=0:nseries-1\] \$DATA" "$CAPTURE" || fail "the script is not inline"
# the 7B series has loads 1 and 2, the 70B one load 1
[ "$(block DATA | awk 'BEGIN {i = 0} /^$/ {if (!blank) i++; blank = 1; next} {blank = 0;
    printf "%d:%s ", i, $1}')" = "0:1 0:2 1:1 " ] || fail "series data: $(block DATA)"
# more settings than series fit: refused, naming what differs
for n in $(seq 1 25); do
    "$S" replay --limit 20 --set tenant.default.sla_ttft_ms=$n --db many.db >/dev/null 2>&1 ||
        fail "replay $n"
done
expect_error 2 "more than 24 series.*differ in tenant.default.sla_ttft_ms" \
    env PATH="$T/fake:$PATH" "$S" plot many.db --kind throughput-vs-load -o figs

# --- a figure that stops short is not written, and the one before it stays
plot_input g.db --kind gpu-time
cp figs/gpu-time.png before.png
expect_error 1 "^slicesim: plot: figs/gpu-time.png: gnuplot gave an incomplete png figure \(16 bytes\); the file is left as it was$" \
    env PATH="$T/cut:$PATH" "$S" plot g.db --kind gpu-time --format png -o figs
cmp -s figs/gpu-time.png before.png || fail "an incomplete figure replaced the old one"
[ -z "$(ls figs/*.tmp 2>/dev/null)" ] || fail "an incomplete figure left $(ls figs/*.tmp)"

# --- no gnuplot: one line; a gnuplot that hangs is stopped after the timeout
expect_error 1 "^slicesim: plot: gnuplot not found; install gnuplot-nox$" \
    env PATH="$T/empty" "$S" plot g.db --kind gpu-time -o figs
start=$(date +%s)
expect_error 1 "gnuplot did not finish drawing figs/gpu-time.png within 1 s" \
    env SLICESIM_GNUPLOT_TIMEOUT_S=1 PATH="$T/hang:$PATH" "$S" plot g.db --kind gpu-time --format png -o figs
[ $(($(date +%s) - start)) -lt 30 ] || fail "the hanging gnuplot held slicesim"
sleep 0.2
! pgrep -x -f "sleep 3141.$$" >/dev/null || fail "the hanging gnuplot's child was left running"
expect_error 2 "SLICESIM_GNUPLOT_TIMEOUT_S: expected a positive" \
    env SLICESIM_GNUPLOT_TIMEOUT_S=soon "$S" plot g.db -o figs
# --- lines against load carry the 95 % interval over seeds: a half-width per figure, 0 with one
# seed; the style and the SLA bound reach the scripts
"$S" compare -c "$SS_SOURCE_ROOT/experiments/slice-vs-container.ini" --set run.duration_s=30 \
    --set run.warmup_s=5 --policies container --rates 0.5,1 --seeds 3 --db seeds.db \
    --no-progress >/dev/null 2>err || fail "compare --seeds 3: $(cat err)"
plot_input seeds.db --kind throughput-vs-load --style paper --sla-bound 5
python3 - "$CAPTURE" seeds.db <<'PY' || fail "the error bars are not the seeds' intervals"
import re, sqlite3, statistics, sys
text = open(sys.argv[1]).read()
rows = [l.split() for l in re.search(r"\$DATA << EOD\n(.*?)EOD", text, re.S).group(1).splitlines() if l]
assert len(rows) == 2 and all(len(r) == 5 for r in rows), rows
db = sqlite3.connect(sys.argv[2])
for load, mean, _, hw, _ in ([float(x) for x in r] for r in rows):
    x = [v for (v,) in db.execute("SELECT s.window_output_tokens_per_s FROM runs r JOIN summary s"
                                  " USING (run_id) WHERE r.load = ?", (load,))]
    assert len(x) == 3 and abs(mean - statistics.mean(x)) < 1e-3 * mean, (load, mean, x)
    want = 4.302653 * statistics.stdev(x) / 3 ** 0.5  # t(0.975, 2)
    assert hw > 0 and abs(hw - want) < 1e-3 * want, (hw, want)
assert "set terminal svg size 330,240" not in text and "pngcairo size 990,720" in text, "style"
assert "paper = 1" in text and "sla_bound = 5" in text, "style variables"
PY
"$S" compare -c "$SS_SOURCE_ROOT/experiments/slice-vs-container.ini" --set run.duration_s=30 \
    --set run.warmup_s=5 --policies container --rates 0.5,1 --db seed1.db \
    --no-progress >/dev/null 2>err || fail "compare: $(cat err)"
plot_input seed1.db --kind sla-vs-load
[ "$(block DATA | awk 'NF == 5 && $4 == 0 && $5 == 0' | wc -l)" = 2 ] ||
    fail "one seed: half-widths 0: $(block DATA)"

# --- capacity: a row per bundle of the newest capacity command of the sweep, its capacity and
# interval as the capacities table holds them, its label with its ratio to the reference
"$S" capacity -c "$SS_SOURCE_ROOT/experiments/slice-vs-container.ini" --set run.duration_s=30 \
    --set run.warmup_s=5 --policies container,slice --seeds 2 --max-probes 3 --db cap.db \
    --name cap --no-progress >/dev/null 2>err || fail "capacity: $(cat err)"
plot_input cap.db --sweep cap --kind capacity
python3 - cap.db <(block DATA) <<'PY' || fail "the capacity figure's data: $(block DATA)"
import shlex, sqlite3, sys
rows = [shlex.split(l) for l in open(sys.argv[2]) if l.strip()]
want = sqlite3.connect(sys.argv[1]).execute(
    "SELECT bundle, ratio, capacity, capacity_ci95_lo, capacity_ci95_hi FROM capacities"
    " ORDER BY capacity_id").fetchall()
assert len(rows) == len(want) == 2, (rows, want)
for r, (bundle, ratio, cap, lo, hi) in zip(rows, want):
    assert r[0] == f"{bundle} ({ratio:.2f}x)", (r, bundle, ratio)
    for got, w in zip(r[1:], (cap, lo, hi)):
        assert abs(float(got) - w) <= 1e-5 * abs(w), (got, w)
PY

# --- what gnuplot prints is kept: its warnings never reach the terminal, and its last line is
# in the message when it fails
mkdir -p warn bad
sed 's|^cat >>"$CAPTURE"$|cat >/dev/null; echo "warning: empty x range" >\&2|' fake/gnuplot >warn/gnuplot
grep -q "warning: empty x range" warn/gnuplot || fail "making the warning gnuplot"
cat >bad/gnuplot <<'SH'
#!/bin/sh
cat >/dev/null
printf '   plot foo\n        ^\n"-" line 12: undefined variable: foo\n\n' >&2
exit 1
SH
chmod +x warn/gnuplot bad/gnuplot
PATH="$T/warn:$PATH" "$S" plot g.db --kind gpu-time --format png -o figs >out 2>err ||
    fail "plot with a warning: $(cat err)"
[ ! -s err ] || fail "gnuplot's warning reached the terminal: $(cat err)"
expect_error 1 '^slicesim: plot: gnuplot failed drawing figs/gpu-time.png \(exit status 1\): "-" line 12: undefined variable: foo$' \
    env PATH="$T/bad:$PATH" "$S" plot g.db --kind gpu-time --format png -o figs
echo "plot_data: all checks passed"
