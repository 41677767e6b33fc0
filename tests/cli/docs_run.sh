#!/bin/bash
# The docs that run: every shell block of the README and docs/ marked runnable (```sh runnable,
# ```console runnable) runs as it is written, in a scratch directory, and prints the output the
# block shows (tools/docs-run.py says how a block is read). The optimised builds only: under the
# sanitizers the tour's capacities alone take minutes, and the same code runs in the other
# tests there. tools/docs-run.py itself is checked on a small tree: a command that fails and
# output that is not what a block shows each fail it, with the file and line.
set -u
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
S=${SLICESIM:?SLICESIM not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT
command -v python3 >/dev/null || { echo "docs_run: skipped: no python3"; exit 77; }

# the runner on a tree of its own (it links experiments/, traces/ and profiles/ of its root)
mkdir -p "$T/r/docs" "$T/r/experiments" "$T/r/traces" "$T/r/profiles"
cat >"$T/r/README.md" <<'MD'
# Doc

```console runnable
$ echo one; echo two; echo three
one
...
three
```

```sh
false # not runnable: not run
```
MD
cat >"$T/r/docs/bad.md" <<'MD'
# Bad

```sh runnable
printf 'a\nb\n' >f.txt
```

```console runnable
$ cat f.txt
b
$ slicesim --version | wc -l
1
$ exit 3
```
MD
python3 "$ROOT/tools/docs-run.py" --slicesim "$S" --root "$T/r" >"$T/out"
[ $? -eq 1 ] || fail "docs-run.py: want exit 1 on a broken block: $(cat "$T/out")"
grep -q '^docs/bad.md:8: the output shown is not what `cat f.txt` prints: no line "b"' \
    "$T/out" || fail "docs-run.py: shown output not checked: $(cat "$T/out")"
grep -q '^docs/bad.md:12: exit 3: exit 3' "$T/out" ||
    fail "docs-run.py: a failing command not reported: $(cat "$T/out")"
[ "$(grep -c '^[a-zA-Z./]*\.md:[0-9]*:' "$T/out")" -eq 2 ] ||
    fail "docs-run.py: want two failures (README.md passes, slicesim runs): $(cat "$T/out")"

if sanitized; then
    echo "docs_run: the project's runnable blocks skipped under -Db_sanitize=$SS_SANITIZE" \
         "(run in the optimised builds)"
    exit 77
fi
command -v gnuplot >/dev/null || { echo "docs_run: skipped: no gnuplot (the tour plots)"; exit 77; }
python3 "$ROOT/tools/docs-run.py" --slicesim "$S" --root "$ROOT" --log "$T/log" >"$T/out" ||
    fail "docs that do not run as written: $(cat "$T/out")"
n=$(grep -c ': \$ ' "$T/log")
[ "$n" -ge 4 ] || fail "only $n runnable commands found in the README and docs/"
echo "docs_run: ok ($n commands)"
