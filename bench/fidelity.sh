#!/bin/bash
# Fidelity against real serving: replay every run of a directory of measured vLLM serving runs
# (the format of $SLICESIM_DATA/serving/vllm-0.15-h100-blis: runs.csv, stages.csv, traces/)
# whose model is in slicesim's catalog, as the server was configured (one replica, its TP,
# chunked prefill with max-num-batched-tokens as the token budget, max-num-seqs, max-model-len,
# gpu-memory-utilization), and print per stage the real and simulated TTFT (mean, p90), ITL and
# E2E (mean, p90), then the mean absolute percentage error of each over the stages the real
# server served (TTFT mean < 1 s) and over all stages. ITL is (E2E mean - TTFT mean) /
# (output tokens - 1) on both sides, as the data's README defines it.
#
#   bash bench/fidelity.sh [--data DIR] [--csv FILE] [-- REPLAY-OPTIONS...]
#
# REPLAY-OPTIONS go to every `slicesim replay` (e.g. -- --cost profile). Uses $SLICESIM, else
# the release build (built if needed). Needs python3. A benchmark, not a test: it reports the
# error, it asserts nothing.
set -eu
cd "$(dirname "$0")/.."
data=${SLICESIM_DATA:-../shared/data}/serving/vllm-0.15-h100-blis
csv=""
while [ $# -gt 0 ]; do
    case "$1" in
    --data) data=$2; shift 2 ;;
    --csv) csv=$2; shift 2 ;;
    --) shift; break ;;
    -h | --help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fidelity: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -r "$data/runs.csv" ] && [ -r "$data/stages.csv" ] || {
    echo "fidelity: no serving runs in $data (runs.csv, stages.csv); see its README" >&2
    exit 2
}
command -v python3 >/dev/null || { echo "fidelity: python3 is needed" >&2; exit 1; }
if [ -z "${SLICESIM:-}" ]; then
    bash tools/build-release.sh
    SLICESIM=./build-release/src/slicesim
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
SLICESIM=$SLICESIM DATA=$data WORK=$work CSV=$csv python3 - "$@" <<'PY'
import csv, json, math, os, sqlite3, subprocess, sys

S, DATA, WORK, OUT = os.environ["SLICESIM"], os.environ["DATA"], os.environ["WORK"], os.environ["CSV"]
extra = sys.argv[1:]

def pct(xs, q):
    """numpy's default (linear) percentile, as the client computed its own."""
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)

def num(s):
    return float(s) if s not in ("", None) else float("nan")

runs = list(csv.DictReader(open(os.path.join(DATA, "runs.csv"))))
stages = {}
for r in csv.DictReader(open(os.path.join(DATA, "stages.csv"))):
    stages.setdefault(r["run"], []).append(r)

rows, skipped = [], []
for run in runs:
    name, model, trace = run["run"], run["catalog_model"], run["trace"]
    if not model or not trace or not os.path.exists(os.path.join(DATA, trace)):
        skipped.append(f"{name} ({'model not in the catalog' if not model else 'no trace'})")
        continue
    db = os.path.join(WORK, name + ".db")
    cmd = [S, "replay", "--trace", os.path.join(DATA, trace), "--trace-format", "native",
           "--model", model, "--gpu", run["gpu"], "--replicas", "1", "--tp", run["tp"],
           "--batching", "sarathi", "--token-budget", run["max_num_batched_tokens"],
           "--max-num-seqs", run["max_num_seqs"], "--max-model-len", run["max_model_len"],
           "--gpu-mem-util", run["gpu_memory_utilization"], "--seed", "1", "--db", db,
           "--no-progress", "--json"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        print(f"fidelity: {name}: slicesim replay failed: {p.stderr.strip()}", file=sys.stderr)
        sys.exit(1)
    starts = [float(x) for x in run["trace_stage_starts"].split(";")]
    out_len = int(run["output_len"])
    reqs = sqlite3.connect(db).execute(
        "SELECT arrival_s, ttft_ms, e2e_ms FROM requests WHERE status = 'completed'").fetchall()
    for st in sorted(stages.get(name, []), key=lambda r: int(r["stage"])):
        k = int(st["stage"])
        lo = starts[k] if k < len(starts) else float("inf")
        hi = starts[k + 1] if k + 1 < len(starts) else float("inf")
        sel = [(t, e) for a, t, e in reqs if lo <= a < hi]
        if not sel:
            continue
        t = [x[0] for x in sel]
        e = [x[1] for x in sel]
        sim = {"ttft": sum(t) / len(t), "ttft90": pct(t, 90), "e2e": sum(e) / len(e),
               "e2e90": pct(e, 90)}
        sim["itl"] = (sim["e2e"] - sim["ttft"]) / (out_len - 1)
        real = {"ttft": num(st["ttft_mean_ms"]), "ttft90": num(st["ttft_p90_ms"]),
                "e2e": num(st["e2e_mean_ms"]), "e2e90": num(st["e2e_p90_ms"]),
                "itl": num(st["itl_ms"])}
        rows.append((name, k, st["rate"], real, sim))

keys = [("ttft", "TTFT mean"), ("ttft90", "TTFT p90"), ("itl", "ITL"), ("e2e", "E2E mean"),
        ("e2e90", "E2E p90")]
print(f"slicesim fidelity: {len(rows)} stages of {len(rows) and len({r[0] for r in rows})} runs in {DATA}"
      + (f"; replay options: {' '.join(extra)}" if extra else ""))
print("  %-38s %2s %5s  %17s %17s %15s %19s %19s" % ("run", "st", "rate", "TTFT mean ms", "TTFT p90 ms",
      "ITL ms", "E2E mean ms", "E2E p90 ms"))
print("  %-38s %2s %5s  %17s %17s %15s %19s %19s" % ("", "", "", "real / sim", "real / sim",
      "real / sim", "real / sim", "real / sim"))
for name, k, rate, real, sim in rows:
    cells = []
    for key, w in (("ttft", 17), ("ttft90", 17), ("itl", 15), ("e2e", 19), ("e2e90", 19)):
        cells.append(f"{real[key]:.1f} / {sim[key]:.1f}".rjust(w))
    print(f"  {name:<38} {k:>2} {rate or '-':>5}  " + " ".join(cells))
def report(sel, what):
    print(f"  error over {what}, (simulated - real) / real; + = the simulation is slower:")
    for key, label in keys:
        errs = [(r[4][key] - r[3][key]) / r[3][key] for r in sel
                if r[3][key] == r[3][key] and r[3][key] > 0]
        if errs:
            mape = 100 * sum(abs(x) for x in errs) / len(errs)
            bias = 100 * sum(errs) / len(errs)
            median = 100 * pct(errs, 50)
            print(f"    {label:<9} MAPE {mape:9.1f} %   bias {bias:+9.1f} %   median error "
                  f"{median:+8.1f} %   ({len(errs)} stages)")
served = [r for r in rows if r[3]["ttft"] < 1000]
report(served, f"the {len(served)} stages real vLLM served (TTFT mean < 1 s)")
if len(served) < len(rows):
    report(rows, f"all {len(rows)} stages, the overloaded ones too (clients gave up after 300 s)")
runaway = [f"{r[0]} stage {r[1]}" for r in rows if r[3]["ttft"] < 1000 and r[4]["ttft"] > 1000]
print(f"  stages real vLLM served (TTFT mean < 1 s) that run away here (simulated TTFT mean > 1 s): "
      f"{len(runaway)}" + (f": {', '.join(runaway)}" if runaway else ""))
if skipped:
    print(f"  not replayed: {', '.join(skipped)}")
if OUT:
    with open(OUT, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "stage", "rate"] + [f"real_{k}" for k, _ in keys] + [f"sim_{k}" for k, _ in keys])
        for name, k, rate, real, sim in rows:
            w.writerow([name, k, rate] + [real[x] for x, _ in keys] + [sim[x] for x, _ in keys])
PY
