"""Fixtures of the Python package's tests (tests/python; tests/python/run.sh runs them).

They import slicesim from wherever PYTHONPATH or the environment puts it (the build tree, or a
virtual environment pip installed it into), and compare it with the command line's --json:
$SLICESIM names the slicesim executable (the tests that need it skip without it).
"""
import json
import os
import subprocess

import pytest

import slicesim

# A scenario of two tenants with synthetic workloads (tests/cli/lib.sh's capacity_tiny_ini): no
# file to read but itself.
TINY_INI = """\
[cluster]
gpu = a100-80g
nodes = 1

[run]
seed = 3
duration_s = 40
warmup_s = 5

[tenant.chat]
model = llama-2-7b
replicas = 1
synthetic = "rate=6 duration=40 prompt=lognormal:800:0.5 output=lognormal:120:0.5"
sla_ttft_ms = 1000
sla_tbt_ms = 100

[tenant.code]
model = llama-2-7b
replicas = 1
synthetic = "rate=2 duration=40 arrival=gamma cv=2 prompt=lognormal:1500:0.5 output=fixed:100"
sla_ttft_ms = 1000
sla_tbt_ms = 100
"""


def write_trace(path, n=60, gap_s=0.5):
    """A native trace of n requests, one every gap_s seconds, sizes from a fixed formula."""
    with open(path, "w") as f:
        f.write("request_id,arrival_s,tenant,prompt_tokens,output_tokens\n")
        for i in range(n):
            f.write(f"{i},{i * gap_s:.6f},default,{200 + (i * 397) % 1500},{20 + (i * 53) % 180}\n")
    return path


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A fresh working directory holding t.csv (a trace) and tiny.ini (a scenario)."""
    monkeypatch.chdir(tmp_path)
    write_trace(tmp_path / "t.csv")
    (tmp_path / "tiny.ini").write_text(TINY_INI)
    return tmp_path


@pytest.fixture(params=["pandas", "lists"])
def tables(request, monkeypatch):
    """Each test that reads tables runs twice: with pandas (skipped where it is not installed)
    and as if it were not (lists of dicts). Gives a function turning a table into rows."""
    if request.param == "pandas":
        pd = pytest.importorskip("pandas")

        def rows(t):
            assert isinstance(t, pd.DataFrame), type(t)
            return t.to_dict("records")
    else:
        monkeypatch.setattr(slicesim._db, "_pandas", lambda: None)

        def rows(t):
            assert isinstance(t, list), type(t)
            return t
    return rows


def no_wall(obj):
    """obj without its wall-clock measurements (any key holding "wall"): what differs between
    two runs of the same inputs."""
    if isinstance(obj, dict):
        return {k: no_wall(v) for k, v in obj.items() if "wall" not in k}
    if isinstance(obj, list):
        return [no_wall(v) for v in obj]
    return obj


class Cli:
    """The slicesim executable, for what the package must agree with."""

    def __init__(self, path):
        self.path = path

    def run(self, *args):
        """(exit status, stdout, stderr) of `slicesim ARGS...`."""
        p = subprocess.run([self.path, *map(str, args)], capture_output=True, text=True)
        return p.returncode, p.stdout, p.stderr

    def json(self, *args):
        status, out, err = self.run(*args)
        assert status == 0, err
        return json.loads(out)


@pytest.fixture
def cli():
    path = os.environ.get("SLICESIM")
    if not path or not os.access(path, os.X_OK):
        pytest.skip("no slicesim executable ($SLICESIM) to compare with")
    return Cli(path)
