#!/bin/bash
# The whole test suite: install what is missing, then build and test twice: an optimised build
# with assertions, and a debug build under AddressSanitizer + UndefinedBehaviorSanitizer; then
# check that the release build compiles. Compiler warnings are errors in all three.
# Tests that need ../shared/data or gnuplot skip cleanly (exit 77) without them.
set -eu
cd "$(dirname "$0")/.."
bash tools/deps.sh
run_suite() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        meson setup "$dir" -Dtests=enabled "$@" >/dev/null
    fi
    ninja -C "$dir"
    meson test -C "$dir" --print-errorlogs
}
echo "== optimised build (debugoptimized, assertions on) =="
run_suite build-test --buildtype=debugoptimized -Dwerror=true
echo "== AddressSanitizer + UndefinedBehaviorSanitizer build =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    run_suite build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false \
        -Dwerror=true
echo "== release build compiles warning-free =="
[ -f build-release-check/build.ninja ] ||
    meson setup build-release-check --buildtype=release -Dwerror=true >/dev/null
ninja -C build-release-check
echo "slicesim: all tests passed in both builds; the release build is warning-free"
