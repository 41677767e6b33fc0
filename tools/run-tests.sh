#!/bin/bash
# The whole test suite: install what is missing, then build and test twice: an optimised build
# with assertions, and a debug build under AddressSanitizer + UndefinedBehaviorSanitizer; then
# check that the release build compiles. Compiler warnings are errors in all three.
# Tests that need ../shared/data, gnuplot or a GPU skip cleanly (exit 77) without them.
# A cold run (first build of all three, the CUDA executor included) takes about the time the
# README gives on 2 cores; `meson test -C build-test` alone re-runs the quick suite.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
stage() { echo "== [$(( $(date +%s) - start )) s] $* =="; }
stage "checking the build dependencies (apt installs what is missing)"
bash tools/deps.sh
run_suite() {
    local dir=$1
    shift
    if [ ! -f "$dir/build.ninja" ]; then
        bash tools/quiet.sh meson setup "$dir" -Dtests=enabled "$@"
    else
        bash tools/quiet.sh meson configure "$dir" -Dtests=enabled "$@"
    fi
    stage "building $dir"
    ninja -C "$dir"
    stage "testing $dir"
    meson test -C "$dir" --print-errorlogs
}
# The CUDA executor is built (and its GPU tests run, or skip without a GPU) wherever the CUDA
# toolkit is installed; the sanitizer build is the CPU-only build (-Dcuda=disabled). Both
# build cuemu, the executor on a CPU stand-in for the GPU, where CUDA's headers are
# (tests/cli/gpu_emu.sh): under the sanitizers it checks every access the kernels make.
# The toolkit's own bin/ goes first: an nvcc elsewhere on PATH may be a wrapper script.
[ -x /usr/local/cuda/bin/nvcc ] && export PATH="/usr/local/cuda/bin:$PATH"
cuda=disabled
command -v nvcc >/dev/null && cuda=enabled
stage "optimised build (debugoptimized, assertions on; CUDA executor: $cuda)"
run_suite build-test --buildtype=debugoptimized -Dwerror=true -Dcuda=$cuda
stage "the Python package: pip install . into a fresh virtual environment, pytest against it"
bash tools/python-pkg.sh build-test/src/slicesim
stage "AddressSanitizer + UndefinedBehaviorSanitizer build (CPU only, -O1)"
# -O1, as AddressSanitizer's documentation advises for reasonable speed: the suite under the
# sanitizers takes about three quarters of its time at -O0, with the same checks
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    run_suite build-asan --buildtype=debug -Doptimization=1 -Db_sanitize=address,undefined \
        -Db_lundef=false \
        -Dwerror=true -Dcuda=disabled
stage "release build compiles warning-free"
[ -f build-release-check/build.ninja ] ||
    bash tools/quiet.sh meson setup build-release-check --buildtype=release -Dwerror=true
ninja -C build-release-check
stage "fuzzing: each parser's libFuzzer target, ASan + UBSan, ${SS_FUZZ_SECONDS:-10} s each"
# Replays fuzz/corpus, then fuzzes; any crash, leak, UBSan report or hang fails the run (inputs
# in build-fuzz/artifacts). SS_FUZZ_SECONDS=0 replays only.
bash tools/fuzz.sh --jobs "$(nproc)" all "${SS_FUZZ_SECONDS:-10}"
stage "determinism across the three builds; a full replay under valgrind"
# The same scenarios and seeds give the same result rows from the debug (ASan, every invariant
# checked), optimised and release builds; the release build's replay is memcheck-clean.
bash tests/cli/cross_build.sh build-test/src/slicesim build-asan/src/slicesim \
    build-release-check/src/slicesim
bash tests/cli/valgrind_replay.sh build-release-check/src/slicesim
stage "done"
python3 tools/skipped.py build-test build-asan
echo "  (cross_build and valgrind_replay skip inside meson; the stage before this ran them)"
echo "slicesim: all tests passed in both builds; the release build is warning-free" \
    "($(( $(date +%s) - start )) s)"
