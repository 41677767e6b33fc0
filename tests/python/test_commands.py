"""replay, compare, capacity, sweep and fit from Python answer what the command line's --json
does for the same inputs, and fail with its one-line message and exit status."""
import pytest

import slicesim
from conftest import no_wall


def test_replay_matches_cli(work, cli):
    r = slicesim.replay(trace="t.csv", replicas=1, seed=2, batching="sarathi",
                        param={"token_budget": 256})
    want = cli.json("replay", "--trace", "t.csv", "--replicas", "1", "--seed", "2",
                    "--batching", "sarathi", "--param", "token_budget=256", "--db", "none",
                    "--json")
    assert no_wall(r.data) == no_wall(want)
    assert r["requests"] == 60 and r["completed"] == 60
    assert r.db is None and r.run_ids == []


def test_replay_scenario_and_set_match_cli(work, cli):
    r = slicesim.replay("tiny.ini", set={"tenant.chat.rate_scale": 1.5}, routing="lor")
    want = cli.json("replay", "-c", "tiny.ini", "--set", "tenant.chat.rate_scale=1.5",
                    "--routing", "lor", "--db", "none", "--json")
    assert no_wall(r.data) == no_wall(want)
    assert [t["name"] for t in r["tenants"]] == ["chat", "code"]


def test_compare_matches_cli(work, cli):
    c = slicesim.compare("tiny.ini", policies=["container", "llumnix"], rates=[1, 1.5])
    want = cli.json("compare", "-c", "tiny.ini", "--policies", "container,llumnix",
                    "--rates", "1,1.5", "--db", "none", "--json")
    assert no_wall(c.data) == no_wall(want)
    assert [(x["policy"], x["rate"]) for x in c] == [
        ("container", 1), ("llumnix", 1), ("container", 1.5), ("llumnix", 1.5)]


def test_compare_seeds_matches_cli(work, cli):
    c = slicesim.compare("tiny.ini", policies="container,llumnix", seeds=2)
    want = cli.json("compare", "-c", "tiny.ini", "--policies", "container,llumnix",
                    "--seeds", "2", "--db", "none", "--json")
    assert no_wall(c.data) == no_wall(want)
    assert len(c.runs()) == 4


def test_capacity_matches_cli(work, cli):
    k = slicesim.capacity("tiny.ini", policies=["container"], max_probes=4)
    want = cli.json("capacity", "-c", "tiny.ini", "--policies", "container", "--max-probes",
                    "4", "--jobs", "1", "--db", "none", "--json")
    assert no_wall(k.data) == no_wall(want)


def test_sweep_matches_cli(work, cli):
    (work / "exp.ini").write_text(
        "[sweep]\nname = demo\nscenario = tiny.ini\n[set]\nrun.duration_s = 20\n"
        "[grid]\npolicy = container, llumnix\nrate = 1, 2\n")
    s = slicesim.sweep("exp.ini", db="py.db")
    want = cli.json("sweep", "exp.ini", "--db", "cli.db", "--json")
    assert no_wall(s.data) == no_wall(want)
    assert len(s) == 4 and s.run_ids == [1, 2, 3, 4]


def write_fit_dir(d):
    """A directory of one measured serving run (fit's input): a trace of 30 requests of 48
    output tokens in two stages, and made-up stage latencies."""
    (d / "traces").mkdir(parents=True)
    with open(d / "traces" / "a.csv", "w") as f:
        f.write("request_id,arrival_s,tenant,prompt_tokens,output_tokens\n")
        for i in range(30):
            at = 0.4 * i if i < 15 else 6 + 0.15 * (i - 15)
            f.write(f"{i},{at:.6f},s,{300 + (i * 211) % 900},48\n")
    (d / "runs.csv").write_text(
        "run,catalog_model,gpu,tp,max_num_seqs,max_num_batched_tokens,max_model_len,"
        "gpu_memory_utilization,output_len,trace,trace_stage_starts\n"
        "r1,llama-2-7b,h100-sxm,1,128,2048,4096,0.9,48,traces/a.csv,0;6\n")
    (d / "stages.csv").write_text(
        "run,stage,rate,ttft_mean_ms,ttft_p90_ms,e2e_mean_ms,e2e_p90_ms\n"
        "r1,0,2.5,40,60,700,800\nr1,1,6.7,50,80,900,1100\n")


def test_fit_evaluate_matches_cli(work, cli):
    write_fit_dir(work / "data")
    f = slicesim.fit("data", evaluate=True)
    want = cli.json("fit", "data", "--evaluate", "--jobs", "1", "--json")
    assert no_wall(f.data) == no_wall(want)


def test_fit_matches_cli(work, cli):
    write_fit_dir(work / "data")
    f = slicesim.fit("data", iterations=3, fit="iter_fixed_us", out="py.ini")
    want = cli.json("fit", "data", "--iterations", "3", "--fit", "iter_fixed_us", "-o",
                    "cli.ini", "--jobs", "1", "--json")
    assert f["profile"] == "py.ini"
    assert no_wall(f.data) == {**no_wall(want), "profile": "py.ini"}
    def body(p):  # the profile without its comments (they quote the command line)
        return [line for line in p.read_text().splitlines() if not line.startswith(";")]
    assert body(work / "py.ini") == body(work / "cli.ini")


# ---- errors: the command line's line and status ------------------------------------------------

def check_error(cli, call, args):
    status, out, err = cli.run(*args)
    assert status != 0
    with pytest.raises(slicesim.Error) as e:
        call()
    assert str(e.value) == err.strip().splitlines()[-1]
    assert e.value.status == status
    return str(e.value)


def test_replay_bad_key_names_file_and_line(work, cli):
    (work / "bad.ini").write_text(TINY_BAD)
    msg = check_error(cli, lambda: slicesim.replay("bad.ini"),
                      ["replay", "-c", "bad.ini", "--db", "none", "--json"])
    assert msg.startswith("slicesim: replay: bad.ini:4: "), msg


TINY_BAD = "[cluster]\ngpu = a100-80g\n[tenant.a]\nreplicas = many\nmodel = llama-2-7b\n"


def test_replay_bad_option(work, cli):
    msg = check_error(cli, lambda: slicesim.replay(trace="t.csv", rate_scale=-1),
                      ["replay", "--trace", "t.csv", "--rate-scale", "-1", "--db", "none"])
    assert "--rate-scale" in msg
    with pytest.raises(slicesim.Error) as e:
        slicesim.replay(trace="t.csv", no_such_option=1)
    assert "unknown or incomplete option '--no-such-option'" in str(e.value)
    assert e.value.status == 2


def test_replay_bad_trace_row(work, cli):
    (work / "bad.csv").write_text("request_id,arrival_s,tenant,prompt_tokens,output_tokens\n"
                                  "0,0.5,default,100,10\n1,0.7,default,x,10\n")
    msg = check_error(cli, lambda: slicesim.replay(trace="bad.csv"),
                      ["replay", "--trace", "bad.csv", "--db", "none"])
    assert msg.startswith("slicesim: replay: bad.csv:3"), msg


def test_compare_and_capacity_errors(work, cli):
    check_error(cli, lambda: slicesim.compare("tiny.ini", policies=["nope"]),
                ["compare", "-c", "tiny.ini", "--policies", "nope", "--db", "none"])
    check_error(cli, lambda: slicesim.capacity("tiny.ini", policies=["container"],
                                               sla_miss=2),
                ["capacity", "-c", "tiny.ini", "--policies", "container", "--sla-miss", "2"])
    check_error(cli, lambda: slicesim.sweep("missing.ini"), ["sweep", "missing.ini"])


def test_fit_error_names_file_line_field(work, cli):
    write_fit_dir(work / "data")
    (work / "data" / "stages.csv").write_text(
        "run,stage,rate,ttft_mean_ms,ttft_p90_ms,e2e_mean_ms,e2e_p90_ms\nr1,0,2.5,forty,60,1,2\n")
    msg = check_error(cli, lambda: slicesim.fit("data", evaluate=True),
                      ["fit", "data", "--evaluate", "--jobs", "1"])
    assert "stages.csv:2: ttft_mean_ms" in msg, msg


def test_command_names():
    with pytest.raises(ValueError):
        slicesim._core.run(["trace", "gen"])
    with pytest.raises(TypeError):
        slicesim._core.run(["replay", 3])


def test_worker_processes_give_the_same_results(work):
    """jobs=2 forks workers from this (threaded) interpreter: the same answers as in process."""
    one = slicesim.capacity("tiny.ini", policies=["container", "llumnix"], max_probes=3)
    two = slicesim.capacity("tiny.ini", policies=["container", "llumnix"], max_probes=3, jobs=2)
    assert no_wall(one.data) == no_wall(two.data)
    (work / "exp.ini").write_text(
        "[sweep]\nname = demo\nscenario = tiny.ini\n[set]\nrun.duration_s = 20\n"
        "[grid]\npolicy = container, llumnix\nrate = 1, 2\n")
    a = slicesim.sweep("exp.ini", db="a.db")
    b = slicesim.sweep("exp.ini", db="b.db", jobs=2)
    def points(s):  # the workers' runs are numbered as they end: run_id aside
        return [{k: v for k, v in p.items() if k != "run_id"} for p in no_wall(s.data)]
    assert points(a) == points(b)
