#!/bin/bash
# `slicesim replay --timeline`: the file is valid Chrome trace-event JSON with one named track
# per GPU, iteration events on every GPU of each TP group, instant events for preemptions, a
# window that keeps only overlapping events, operator events with --timeline-ops, and errors.
set -u
S=${SLICESIM:?SLICESIM not set}
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
command -v python3 >/dev/null || { echo "skip: python3 is needed to parse the JSON"; exit 77; }
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
TRACE=$ROOT/traces/azure-conv-synth.csv

# check FILE NGPU [WINDOW_START_US WINDOW_END_US]: structure of a timeline, via python3.
check() {
    python3 - "$@" <<'PY' || fail "timeline $1 is not as expected"
import json, sys
path, ngpu = sys.argv[1], int(sys.argv[2])
win = (float(sys.argv[3]), float(sys.argv[4])) if len(sys.argv) > 4 else None
ev = json.load(open(path))["traceEvents"]
names = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert names == set(range(ngpu)), f"process_name tracks {sorted(names)} != {ngpu} GPUs"
iters = [e for e in ev if e["ph"] == "X" and e["cat"] == "iteration"]
assert iters, "no iteration events"
assert {e["pid"] for e in iters} == set(range(ngpu)), "a GPU has no iterations"
for e in iters:
    assert e["dur"] > 0 and e["ts"] >= 0
    a = e["args"]
    assert a["prefill_seqs"] + a["decode_seqs"] >= 1
    if win:
        assert e["ts"] <= win[1] and e["ts"] + e["dur"] >= win[0], e
print(len(ev), "events;", len(iters), "iterations;",
      sum(e["ph"] == "i" for e in ev), "instants;",
      sum(e.get("cat") == "operator" for e in ev), "operators")
PY
}

"$S" replay --trace "$TRACE" --limit 300 --replicas 2 --tp 2 --db none --timeline a.json >out \
    2>a.err || fail "replay with --timeline: $(cat out)"
[ -s a.err ] && fail "a small timeline (under the default 100 MB) warned: $(cat a.err)"
grep -q "timeline: a.json (" out || fail "the table does not mention the timeline"
[ -z "$(tmp_of a.json)" ] || fail "$(tmp_of a.json) left behind"
check a.json 4

# pipeline parallelism: every stage's GPUs have their own iteration track
"$S" replay --trace "$TRACE" --limit 200 --model llama-2-13b --replicas 1 --tp 2 --pp 2 \
    --db none --timeline pp.json >/dev/null || fail "replay with --pp 2"
check pp.json 4
grep -q '"stage":1' pp.json || fail "no stage-1 iteration events"

# preemptions show as instant events
"$S" replay --trace "$TRACE" --limit 600 --replicas 1 --rate-scale 20 --gpu-mem-util 0.22 \
    --db none --timeline p.json >/dev/null || fail "replay under memory pressure"
check p.json 1 >p.out
grep -Eq "[1-9][0-9]* instants" p.out || fail "no preemption instants: $(cat p.out)"
grep -q '"name":"preempt"' p.json || fail "no preempt event"

# a window keeps only overlapping events; operators on the second track
"$S" replay --trace "$TRACE" --limit 300 --replicas 2 --db none --timeline w.json \
    --timeline-window 10:12 --timeline-ops >/dev/null || fail "window + ops"
check w.json 2 10000000 12000000 >w.out
grep -Eq "[1-9][0-9]* operators" w.out || fail "no operator events: $(cat w.out)"
grep -q '"name":"qkv"' w.json || fail "no qkv operator"

# A timeline past --timeline-warn MB (default 100) gets one warning line on stderr as the replay
# writes it, with its size and what makes it smaller; the file and the table are as without
"$S" replay --trace "$TRACE" --limit 300 --replicas 2 --tp 2 --db none --timeline a.json \
    --timeline-warn 0.05 >big.out 2>big.err || fail "replay with --timeline-warn: $(cat big.err)"
[ "$(wc -l <big.err)" -eq 1 ] || fail "--timeline-warn: want one line on stderr: $(cat big.err)"
grep -Eq "^slicesim: replay: warning: the timeline a\.json has passed [0-9]+\.[0-9] MB and grows as \
the replay goes on; for a smaller one, --timeline-window S:E keeps only those seconds of simulated \
time \(--timeline-warn 0: no warning\)\$" big.err || fail "--timeline-warn: $(cat big.err)"
check a.json 4
[ "$(grep '^  timeline: ' big.out)" = "$(grep '^  timeline: ' out)" ] ||
    fail "the warned timeline differs: $(grep '^  timeline: ' big.out)"
"$S" replay --trace "$TRACE" --limit 300 --replicas 2 --db none --timeline o.json --timeline-ops \
    --timeline-window 10:20 --timeline-warn 0.05 >/dev/null 2>ops.err || fail "ops: $(cat ops.err)"
grep -q "simulated time and leaving out --timeline-ops drops the operators (" ops.err ||
    fail "--timeline-ops: the warning does not say so: $(cat ops.err)"
"$S" replay --trace "$TRACE" --limit 300 --replicas 2 --tp 2 --db none --timeline a.json \
    --timeline-warn 0 >/dev/null 2>none.err || fail "--timeline-warn 0: $(cat none.err)"
[ -s none.err ] && fail "--timeline-warn 0 warned: $(cat none.err)"
expect_error 2 "^slicesim: replay: --timeline-warn: expected megabytes, 0 to 1e12, got 'lots'\$" \
    "$S" replay --trace "$TRACE" --timeline x.json --timeline-warn lots
expect_error 2 "timeline-window" "$S" replay --trace "$TRACE" --timeline x.json --timeline-window 5
expect_error 2 "timeline-window" "$S" replay --trace "$TRACE" --timeline x.json --timeline-window 9:3
expect_error 1 "cannot create" "$S" replay --trace "$TRACE" --limit 5 --db none --timeline no/dir/x.json
echo "timeline_cli: all checks passed"
