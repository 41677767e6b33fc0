#!/bin/bash
# Configure (once) and build the release binary in build-release/; used by the main job, the
# benchmarks and the experiments. Prints one line on success.
set -eu
cd "$(dirname "$0")/.."
if [ ! -f build-release/build.ninja ]; then
    echo "slicesim: configuring build-release/ (the CUDA executor too where nvcc is found)" >&2
    bash tools/quiet.sh meson setup build-release --buildtype=release
fi
echo "slicesim: building build-release/ (a first build compiles everything, later ones what changed)" >&2
ninja -C build-release >/dev/null
