#!/bin/bash
# meson test `python`: pytest on tests/python against the package as this build tree built it
# (PYTHONPATH=BUILD/python: the extension module next to the package's .py files), with the
# interpreter it was built for ($SS_PYTHON). Skips (exit 77) when the package is not built
# (-Dpython=disabled, or no Python headers: python3-dev) or pytest is not installed
# (python3-pytest). Under AddressSanitizer the interpreter, which is not instrumented, gets the
# sanitizer's runtime preloaded, so that the C library's code runs checked as in the CLI tests.
set -u
PY=${SS_PYTHON:-}
[ -n "$PY" ] || { echo "skip: the Python package is not built (-Dpython; needs python3-dev)"; exit 77; }
"$PY" -c "import pytest" 2>/dev/null || { echo "skip: no pytest for $PY (python3-pytest)"; exit 77; }
export PYTHONPATH=$SS_BUILD_ROOT/python PYTHONDONTWRITEBYTECODE=1
case ${SS_SANITIZE:-none} in
*address*)
    asan=$(${CC:-cc} -print-file-name=libasan.so)
    [ -f "$asan" ] || { echo "skip: no libasan.so to preload into $PY"; exit 77; }
    # the interpreter's own allocations are not ours to check for leaks
    export LD_PRELOAD=$asan ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 PYTHONMALLOC=malloc
    ;;
esac
exec "$PY" -m pytest -q -p no:cacheprovider "$SS_SOURCE_ROOT/tests/python"
