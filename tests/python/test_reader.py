"""slicesim.open(db) and a Result's tables: the database's rows, read-only, as DataFrames or
lists of dicts; a database from an older slicesim (no capacities, no runs.bundle) reads too."""
import sqlite3

import pytest

import slicesim


def test_replay_requests_and_tenants(work, tables):
    r = slicesim.replay("tiny.ini", db="r.db")
    assert r.db == "r.db" and r.run_ids == [1]
    reqs = tables(r.requests)
    assert len(reqs) == r["requests"]
    assert sum(q["status"] == "completed" and q["measured"] == 1 for q in reqs) == r["completed"]
    ten = tables(r.tenants)
    assert [t["name"] for t in ten] == ["chat", "code"]
    assert ten[0]["ttft_ms.p99"] == r["tenants"][0]["ttft_ms"]["p99"]
    summ = tables(r.summary)
    assert len(summ) == 1 and summ[0]["completed"] == r["completed"]
    r2 = slicesim.replay("tiny.ini", db="r.db", seed=5)
    assert r2.run_ids == [2] and len(tables(r2.requests)) == r2["requests"]


def test_requests_need_a_database(work):
    r = slicesim.replay("tiny.ini")
    with pytest.raises(slicesim.Error, match="db='none'"):
        r.requests


def test_reader_tables(work, tables):
    c = slicesim.compare("tiny.ini", policies=["container", "llumnix"], db="c.db")
    assert c.run_ids == [1, 2]
    k = slicesim.capacity("tiny.ini", policies=["container"], max_probes=3, sla_miss=0.5,
                          db="c.db")
    assert k["policies"][0]["n_probes"] == 3 and k["policies"][0]["capacity"] > 0
    answers = tables(k.summary)
    assert [(a["policy"], a["capacity"]) for a in answers] == [
        ("container", k["policies"][0]["capacity"])]
    assert answers[0]["tenant_sla_miss.chat"] == k["policies"][0]["tenant_sla_miss"]["chat"]
    with slicesim.open("c.db") as db:
        runs = tables(db.runs())
        assert [x["run_id"] for x in runs][:2] == [1, 2]
        assert len(runs) > 2 and k.run_ids == [x["run_id"] for x in runs[2:]]
        summ = tables(db.summary([1, 2]))
        assert [s["completed"] for s in summ] == [x["run"]["completed"] for x in c]
        assert len(tables(db.tenants(1))) == 2
        assert len(tables(db.requests(2))) == c[1]["run"]["requests"]
        caps = tables(db.capacities())
        assert len(caps) == 1 and caps[0]["bundle"] == "container"
        assert len(tables(db.sweep_points())) >= 2
        assert db.schema_version() >= 17
    with pytest.raises(sqlite3.OperationalError):  # read-only
        with slicesim.open("c.db") as db:
            db._con.execute("DELETE FROM runs")


def test_old_database(work, tables):
    con = sqlite3.connect("old.db")
    con.executescript("CREATE TABLE runs (run_id INTEGER PRIMARY KEY, seed INTEGER);"
                      "INSERT INTO runs VALUES (1, 7);"
                      "CREATE TABLE summary (run_id INTEGER PRIMARY KEY, completed INTEGER);"
                      "INSERT INTO summary VALUES (1, 42);")
    con.commit()
    con.close()
    with slicesim.open("old.db") as db:
        assert tables(db.runs()) == [{"run_id": 1, "seed": 7}]
        assert tables(db.summary()) == [{"seed": 7, "run_id": 1, "completed": 42}]
        assert tables(db.capacities()) == []
        assert tables(db.capacity_seeds()) == []
        assert tables(db.iterations()) == []
        assert tables(db.requests(1)) == []


def test_missing_database(work):
    with pytest.raises(FileNotFoundError):
        slicesim.open("nope.db")
