"""slicesim from Python: the simulator's commands run in this process on the C library.

    import slicesim
    r = slicesim.replay("experiments/two-tenants.ini", set=["run.duration_s=60"])
    r["goodput_tokens_per_s"], r.tenants            # the JSON as a dict; tenants as a table
    c = slicesim.compare("experiments/two-tenants.ini", policies=["container", "slice"])
    with slicesim.open("results/slicesim.db") as db:
        db.summary()                                 # a results database, read-only

replay, compare, capacity, sweep and fit take what the command line of the same name takes:
a keyword argument is the option of the same name with '-' for '_' (rate_scale=2 is
--rate-scale 2; True gives a flag, a list repeats the option), so a call means and answers what
`slicesim COMMAND ... --json` does, byte for byte in its results. Each releases the interpreter's
lock while it simulates (other threads go on; slicesim's own calls run one at a time), prints
no progress line, runs its searches in this process (jobs=1 unless told otherwise) and raises
slicesim.Error with the command's one-line message when it fails. Tables are pandas DataFrames
when pandas is installed, lists of dicts otherwise. docs/guide/python.md walks through it.
"""
import os

from . import _core
from ._db import Reader, open, rows_or_frame

__all__ = ["Error", "Result", "Reader", "replay", "compare", "capacity", "sweep", "fit", "open",
           "command"]

__version__ = "0.1.0"


class Error(Exception):
    """A command failed. str(e) is the line the command line prints on stderr, for example
    "slicesim: replay: x.ini:3: tenant.chat.replicas: expected an integer ...";
    e.status is its exit status (1 a failed run: I/O, database; 2 bad input or usage)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"slicesim: cannot pass {type(value).__name__} {value!r} as an option value")


def _options(options):
    """Keyword arguments as command-line options: None and False give nothing, True a flag, a
    list or tuple the option once per item, a dict (param=) KEY=VALUE once per item."""
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, dict):
            args += [a for k, v in value.items() for a in (flag, f"{k}={_text(v)}")]
        elif isinstance(value, (list, tuple)):
            args += [a for v in value for a in (flag, _text(v))]
        else:
            args += [flag, _text(value)]
    return args


def _sets(assignments):
    """set= as --set arguments: "SECTION.KEY=VALUE" strings, or a dict of them."""
    if isinstance(assignments, str):
        assignments = [assignments]
    if isinstance(assignments, dict):
        assignments = [f"{k}={_text(v)}" for k, v in assignments.items()]
    return [a for s in assignments for a in ("--set", _text(s))]


def _list(value):
    """policies=["a", "b"] or "a,b" as the one comma-separated value the options take."""
    if value is None or isinstance(value, str):
        return value
    return ",".join(_text(v) for v in value)


def _bundled_profiles():
    """The catalog installed with the package, when the command's own default would find none
    (no $SLICESIM_PROFILES, no ./profiles, no source tree): None otherwise."""
    if os.environ.get("SLICESIM_PROFILES") or os.path.isdir("profiles/hardware"):
        return None
    if os.path.isdir(os.path.join(_core.source_root, "profiles", "hardware")):
        return None
    here = os.path.join(os.path.dirname(__file__), "profiles")
    return here if os.path.isdir(os.path.join(here, "hardware")) else None


def command(*argv):
    """Run `slicesim ARGV...` (replay, compare, capacity, sweep or fit) in this process and
    return what it printed on standard output, as text; raise Error when it fails. The
    functions below build argv from their arguments and add --json."""
    status, out, err = _core.run([_text(a) for a in argv])
    if status != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise Error(lines[-1] if lines else f"slicesim: {argv[0]}: failed", status)
    return out.decode("utf-8")


def _db_run_ids(db):
    """The highest run_id in db now (0 when it has none yet or no runs table)."""
    if db is None or db == "none" or not os.path.exists(db):
        return 0
    with open(db) as r:
        return r.last_run_id()


class Result:
    """What one call printed as --json, parsed (data), and the runs it stored.

    data is a dict (replay, capacity, fit; compare with seeds) or a list (compare, sweep);
    result[KEY] and len/iteration reach it. db is the results database the call wrote (None
    for db="none") and run_ids the runs added there while it ran, in order (the call's own,
    unless another process wrote runs into the same database at the same time)."""

    def __init__(self, data, db=None, run_ids=()):
        self.data = data
        self.db = db
        self.run_ids = list(run_ids)

    def __getitem__(self, key):
        return self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)

    def __contains__(self, key):
        return key in self.data

    def __eq__(self, other):
        return self.data == (other.data if isinstance(other, Result) else other)

    def keys(self):
        return self.data.keys()

    def get(self, key, default=None):
        return self.data.get(key, default)

    def __repr__(self):
        kind = "runs" if isinstance(self.data, list) else "keys"
        return f"<slicesim.Result: {len(self.data)} {kind}, db={self.db!r}, runs {self.run_ids}>"

    def runs(self):
        """[(labels, run)]: each run's JSON object (what replay --json prints) with the labels
        that place it (policy, rate, seed; a sweep's point)."""
        d = self.data
        if isinstance(d, dict) and "runs" in d:
            d = d["runs"]
        if isinstance(d, dict):
            return [({}, d)] if "tenants" in d else []
        out = []
        for item in d:
            if "run" in item:
                labels = {k: v for k, v in item.items() if k != "run"}
                out.append((labels, item["run"]))
            else:
                point = item.get("point", {})
                labels = dict(point) if isinstance(point, dict) else {"point": point}
                if "run_id" in item:
                    labels["run_id"] = item["run_id"]
                out.append((labels, {k: v for k, v in item.items()
                                     if k not in ("point", "run_id")}))
        return out

    @property
    def summary(self):
        """One row per run: its labels and every scalar of its JSON (nested objects flattened
        to "a.b" columns, per-tenant and per-tier lists left to .tenants). For capacity, one
        row per bundle: its answer (capacity, ratio, status, verdict ...), probes aside."""
        d = self.data
        if isinstance(d, dict) and "policies" in d:
            return rows_or_frame([_flat(p) for p in d["policies"]])
        rows = [{**labels, **_flat(run)} for labels, run in self.runs()]
        return rows_or_frame(rows)

    @property
    def tenants(self):
        """One row per run and tenant: the run's labels, then the tenant's JSON flattened."""
        rows = [{**labels, **_flat(t)} for labels, run in self.runs()
                for t in run.get("tenants", [])]
        return rows_or_frame(rows)

    @property
    def requests(self):
        """Every request of the runs this call stored (table requests of the results
        database); needs a database (db=PATH) and the default store="requests"."""
        if self.db is None:
            raise Error("slicesim: requests: this call stored nothing (db='none'): "
                        "give db=PATH to keep each request", 2)
        with open(self.db) as r:
            return r.requests(self.run_ids)


def _flat(obj, prefix=""):
    """The scalars of a JSON object, nested objects as "a.b" keys; lists are left out."""
    out = {}
    for k, v in obj.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        elif not isinstance(v, list):
            out[prefix + k] = v
    return out


def _run_json(argv, db):
    """Run argv (a command and its options, --json among them) and wrap its JSON."""
    import json

    before = _db_run_ids(db)
    data = json.loads(command(*argv))
    if db is None or db == "none":
        return Result(data)
    with open(db) as r:
        return Result(data, db, r.run_ids_after(before))


def _common(argv, scenario, set, db, options):
    if scenario is not None:
        argv += ["-c", _text(scenario)]
    argv += _sets(set)
    if options.get("profiles") is None:
        options["profiles"] = _bundled_profiles()
    argv += _options(options)
    if db is not None:
        argv += ["--db", _text(db)]
    return argv


def replay(scenario=None, *, set=(), db="none", **options):
    """Replay a scenario (or, without one, the options' one tenant) and return its Result:
    the dict `slicesim replay --json` prints (.tenants, .summary; .requests with a db).

    scenario: a scenario file (INI). set: "SECTION.KEY=VALUE" assignments (a list, or a dict
    {"tenant.chat.rate_scale": 2}), applied after the options as --set is. db: the results
    database to store the run in ("none", the default here, stores nothing). options: replay's
    options by name (seed=2, rate_scale=1.5, trace="t.csv", batching="sarathi",
    param={"token_budget": 256}, check=True ...; slicesim replay --help)."""
    argv = _common(["replay", "--json", "--no-progress"], scenario, set, db, options)
    return _run_json(argv, None if db == "none" else _text(db))


def compare(scenario, *, policies=None, rates=None, seeds=None, set=(), db="none", **options):
    """One scenario under several policy bundles (and loads, and seeds): the Result of
    `slicesim compare --json` (a list of {policy, rate, run}; with seeds, a dict of runs and
    summary). policies and rates: lists or comma-separated text."""
    options.update(policies=_list(policies), rates=_list(rates), seeds=seeds)
    argv = _common(["compare", "--json", "--no-progress"], scenario, set, db, options)
    return _run_json(argv, None if db == "none" else _text(db))


def capacity(scenario, *, policies, seeds=None, set=(), db="none", jobs=1, **options):
    """Each bundle's highest load within an SLA-miss bound (sla_miss=0.09, criterion=,
    tenant=, tol=, max_probes= ...): the Result of `slicesim capacity --json`. jobs=N runs the
    searches in N worker processes (forked from this one); the default runs them here."""
    options.update(policies=_list(policies), seeds=seeds, jobs=jobs)
    options.setdefault("progress", "none")
    argv = _common(["capacity", "--json"], scenario, set, db, options)
    return _run_json(argv, None if db == "none" else _text(db))


def sweep(experiment, *, db=None, **options):
    """An experiment file's grid (slicesim sweep EXPERIMENT.ini): the Result of its --json,
    one item per point. db: the database (default: the experiment's). jobs= as capacity's."""
    options.setdefault("profiles", _bundled_profiles())
    argv = ["sweep", _text(experiment), "--json", "--no-progress"] + _options(options)
    if db is not None:
        argv += ["--db", _text(db)]
    return _run_json(argv, None if db in (None, "none") else _text(db))


def fit(directory, *, evaluate=False, jobs=1, **options):
    """Fit an engine profile to measured serving runs in directory (slicesim fit DIR), or with
    evaluate=True compare an engine (engine=) with them: the Result of `slicesim fit --json`.
    out= names the fitted profile to write (default NAME.ini in the working directory)."""
    options.update(evaluate=evaluate, jobs=jobs)
    options.setdefault("profiles", _bundled_profiles())
    db = options.get("db")
    argv = ["fit", _text(directory), "--json", "--no-progress"] + _options(options)
    return _run_json(argv, None if db in (None, "none") else _text(db))
