"""docs/guide/python.md runs as a notebook and prints what it shows: each ```python block is a
cell run in order in one namespace (its last line, an expression, shown as a notebook shows it:
its repr), compared with the ```text block after it, line for line with trailing blanks
ignored. Needs pandas (the guide's tables are DataFrames) and the checkout's experiments/."""
import ast
import contextlib
import io
import os
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide" / "python.md"


def cells():
    """(line, code, shown) of each python block and the text block after it."""
    text = GUIDE.read_text()
    pat = re.compile(r"```python\n(.*?)```\n```text\n(.*?)```", re.S)
    return [(text[:m.start()].count("\n") + 1, m.group(1), m.group(2)) for m in pat.finditer(text)]


def run_cell(code, ns):
    """What the cell prints, and the repr of its last expression, as a notebook shows them."""
    tree = ast.parse(code)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(tree, "cell", "exec"), ns)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "cell", "eval"), ns)
            if value is not None:
                print(repr(value))
    return out.getvalue()


def lines(s):
    return [line.rstrip() for line in s.strip("\n").splitlines()]


def test_guide_cells(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    if not (ROOT / "experiments" / "example-two-tenants.ini").exists():
        pytest.skip("no checkout's experiments/ beside the tests")
    monkeypatch.chdir(tmp_path)
    for d in ("experiments", "traces"):
        os.symlink(ROOT / d, tmp_path / d)
    found = cells()
    assert len(found) >= 6, "the guide's cells are not where this test looks"
    ns = {}
    for line, code, shown in found:
        got = run_cell(code, ns)
        assert lines(got) == lines(shown), f"{GUIDE}:{line}: the cell printed\n{got}"
