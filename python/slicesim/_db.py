"""Reading a slicesim results database (docs/reference/database.md) from Python, read-only.

slicesim.open(PATH) gives a Reader whose tables come back as pandas DataFrames when pandas is
installed, lists of dicts (one per row, columns in the table's order) otherwise. Tables and
columns a database does not have (one written by an older slicesim: before schema 17 there are
no capacities, capacity_seeds or iterations tables, nor runs.bundle and runs.stored) read as
empty tables and absent columns, never as errors.
"""
import os
import sqlite3
import urllib.parse


def _pandas():
    """The pandas module, or None when it is not installed (tests replace this to check the
    lists of dicts)."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def rows_or_frame(rows, columns=None):
    """rows (dicts) as a DataFrame when pandas is installed, else as they are."""
    pd = _pandas()
    if pd is None:
        return rows
    return pd.DataFrame(rows, columns=columns) if columns is not None else pd.DataFrame(rows)


class Reader:
    """A results database opened read-only (SQLite URI mode=ro): its tables as tables.

    Use it as a context manager, or close() it."""

    def __init__(self, path):
        path = os.fspath(path)
        if not os.path.exists(path):
            raise FileNotFoundError(f"slicesim: {path}: no such results database")
        uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
        self.path = path
        self._con = sqlite3.connect(uri, uri=True)

    def close(self):
        self._con.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def tables(self):
        """The names of the database's tables, sorted."""
        cur = self._con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                "ORDER BY name")
        return [r[0] for r in cur]

    def columns(self, table):
        """The columns of table, in order ([] when it has no such table)."""
        return [r[1] for r in self._con.execute(f'PRAGMA table_info("{table}")')]

    def schema_version(self):
        """The schema version (PRAGMA user_version)."""
        return self._con.execute("PRAGMA user_version").fetchone()[0]

    def query(self, sql, params=()):
        """Any read-only SQL: its rows as a table."""
        cur = self._con.execute(sql, params)
        names = [d[0] for d in cur.description] if cur.description else []
        return rows_or_frame([dict(zip(names, r)) for r in cur], names)

    def _table(self, table, where="", params=(), order="", columns=None):
        have = self.columns(table)
        cols = [c for c in (columns or have) if c in have]
        if not have:
            return rows_or_frame([], columns or [])
        sel = ", ".join(f'"{c}"' for c in cols)
        return self.query(f'SELECT {sel} FROM "{table}" {where} {order}', params)

    def runs(self, run_ids=None):
        """Table runs (one row per run: its command, settings, seed, bundle ...), by run_id;
        only run_ids (a list) when given."""
        where, params = _in("run_id", run_ids)
        return self._table("runs", where, params, "ORDER BY run_id")

    def summary(self, run_ids=None):
        """Table summary, one row per run, after the run's scenario, bundle, load and seed
        (those of them the database has)."""
        if "summary" not in self.tables():
            return rows_or_frame([])
        have = self.columns("runs")
        front = [c for c in ("scenario", "bundle", "load", "seed", "batching", "routing",
                             "cluster_policy", "ops") if c in have]
        sel = ", ".join([f'r."{c}"' for c in front] + ["s.*"])
        where, params = _in("s.run_id", run_ids)
        return self.query(f"SELECT {sel} FROM summary s JOIN runs r ON r.run_id = s.run_id "
                          f"{where} ORDER BY s.run_id", params)

    def tenants(self, run_ids=None):
        """Table tenants: one row per run and tenant."""
        where, params = _in("run_id", run_ids)
        return self._table("tenants", where, params, "ORDER BY run_id, rowid")

    def requests(self, run_ids=None):
        """Table requests (one row per request) of run_ids (one id or a list; every run's when
        None), by run and request."""
        where, params = _in("run_id", run_ids)
        return self._table("requests", where, params, "ORDER BY run_id, req_id")

    def sweep_points(self):
        """Table sweep_points: which run is which point of which sweep or comparison."""
        return self._table("sweep_points", order="ORDER BY rowid")

    def capacities(self):
        """Table capacities (slicesim capacity's answers, one row per bundle of a search);
        empty for a database from before schema 17."""
        return self._table("capacities", order="ORDER BY capacity_id")

    def capacity_seeds(self):
        """Table capacity_seeds (each seed's search); empty before schema 17."""
        return self._table("capacity_seeds", order="ORDER BY capacity_id, seed")

    def iterations(self, run_ids=None):
        """Table iterations (stored with store="iterations"); empty before schema 17."""
        where, params = _in("run_id", run_ids)
        return self._table("iterations", where, params, "ORDER BY run_id, container, iteration")

    def last_run_id(self):
        """The highest run_id (0 when there are no runs)."""
        if "runs" not in self.tables():
            return 0
        return self._con.execute("SELECT coalesce(max(run_id), 0) FROM runs").fetchone()[0]

    def run_ids_after(self, run_id):
        """The run_ids above run_id, in order: the runs added since last_run_id() gave it."""
        if "runs" not in self.tables():
            return []
        cur = self._con.execute("SELECT run_id FROM runs WHERE run_id > ? ORDER BY run_id",
                                (run_id,))
        return [r[0] for r in cur]


def _in(column, ids):
    """A WHERE clause keeping column in ids (one id or a list; everything for None)."""
    if ids is None:
        return "", ()
    if isinstance(ids, int):
        ids = [ids]
    ids = list(ids)
    if not ids:
        return "WHERE 0", ()
    return f"WHERE {column} IN ({', '.join('?' * len(ids))})", tuple(ids)


def open(path):  # noqa: A001 (slicesim.open, as the issue names it)
    """Open the results database at path read-only: a Reader."""
    return Reader(path)

