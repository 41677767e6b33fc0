#!/usr/bin/env python3
"""Make examples/fit-import/: small benchmark logs of a known engine, for `slicesim fit import`.

A two-stage workload (30 requests at about 1 req/s, then 40 at about 4 req/s; prompts of
100-900 tokens, 32-160 output tokens, from a fixed seed) is replayed by slicesim itself as
`slicesim fit` replays a run (one llama-2-7b replica on an h100-sxm, TP 1, Sarathi batching
with a 2048-token budget, 128 sequences, seed 1, engine vllm-0.15), and each request's send
time, tokens, TTFT and E2E are written as
  requests.csv          the requests-csv format (one file, a stage column)
  stage0.json, stage1.json  the vllm-bench format (`vllm bench serve --save-result
                        --save-detailed` fields, times in seconds, one file per stage)
So the logs are simulated, not measured: `slicesim fit import` of either, then `slicesim fit
DIR --evaluate`, shows errors near 0 for vllm-0.15. The same input gives the same files.

usage: python3 tools/make-fit-example.py [SLICESIM] (default: $SLICESIM, else
build-test/src/slicesim); needs the sqlite3 module.
"""
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "examples", "fit-import")
STAGE1_AT = 40.0  # s: stage 1 starts here
RATES = (1, 4)


def workload():
    """(arrival_s, prompt, output, stage) of every request, from seed 2026."""
    rng = random.Random(2026)
    reqs, t = [], 0.0
    for stage, (n, rate) in enumerate(((30, RATES[0]), (40, RATES[1]))):
        t = 0.0 if stage == 0 else STAGE1_AT
        for _ in range(n):
            t += rng.expovariate(rate)
            reqs.append((round(t, 6), rng.randint(100, 900), rng.randint(32, 160), stage))
    return reqs


def replay(slicesim, reqs, tmp):
    trace = os.path.join(tmp, "trace.csv")
    with open(trace, "w") as f:
        f.write("request_id,arrival_s,tenant,prompt_tokens,output_tokens\n")
        for i, (t, p, o, _) in enumerate(reqs):
            f.write(f"{i},{t:.6f},default,{p},{o}\n")
    db = os.path.join(tmp, "replay.db")
    subprocess.run([slicesim, "replay", "--trace", trace, "--trace-format", "native",
                    "--model", "llama-2-7b", "--gpu", "h100-sxm", "--replicas", "1", "--tp", "1",
                    "--batching", "sarathi", "--token-budget", "2048", "--max-num-seqs", "128",
                    "--max-model-len", "4096", "--gpu-mem-util", "0.9", "--seed", "1",
                    "--engine", "vllm-0.15", "--db", db, "--no-progress"],
                   check=True, stdout=subprocess.DEVNULL)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT req_id, status, ttft_ms, e2e_ms FROM requests "
                       "ORDER BY req_id").fetchall()
    con.close()
    return {r[0]: r[1:] for r in rows}


def main():
    slicesim = sys.argv[1] if len(sys.argv) > 1 else os.environ.get(
        "SLICESIM", os.path.join(ROOT, "build-test", "src", "slicesim"))
    reqs = workload()
    with tempfile.TemporaryDirectory() as tmp:
        done = replay(slicesim, reqs, tmp)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "requests.csv"), "w") as f:
        f.write("arrival_s,prompt_tokens,output_tokens,ttft_ms,e2e_ms,stage,ok\n")
        for i, (t, p, o, k) in enumerate(reqs):
            status, ttft, e2e = done[i]
            ok = status == "completed"
            f.write(f"{t:.6f},{p},{o},{ttft:.3f},{e2e:.3f},{k},1\n" if ok
                    else f"{t:.6f},{p},{o},,,{k},0\n")
    for k in (0, 1):
        idx = [i for i, r in enumerate(reqs) if r[3] == k]
        t0 = reqs[idx[0]][0] if k else 0.0
        ok = [done[i][0] == "completed" for i in idx]
        start = [round(reqs[i][0] - t0, 6) for i in idx]
        lat = [round(done[i][2] / 1000, 6) if good else 0.0 for i, good in zip(idx, ok)]
        doc = {
            "date": "20260101-000000", "backend": "vllm", "label": None,
            "model_id": "meta-llama/Llama-2-7b-hf", "num_prompts": len(idx),
            "request_rate": RATES[k], "burstiness": 1.0, "max_concurrency": None,
            "duration": round(max(s + l for s, l in zip(start, lat)), 6),
            "completed": sum(ok), "failed": len(ok) - sum(ok),
            "input_lens": [reqs[i][1] for i in idx],
            "output_lens": [reqs[i][2] if good else 0 for i, good in zip(idx, ok)],
            "ttfts": [round(done[i][1] / 1000, 6) if good else 0.0 for i, good in zip(idx, ok)],
            "latencies": lat,
            "start_times": start,
            "errors": ["" if good else "rejected" for good in ok],
        }
        with open(os.path.join(OUT, f"stage{k}.json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
