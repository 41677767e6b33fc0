#!/bin/bash
# Configure (once) and build the release binary in build-release/; used by the main job, the
# benchmarks and the experiments. Prints nothing on success.
set -eu
cd "$(dirname "$0")/.."
if [ ! -f build-release/build.ninja ]; then
    bash tools/quiet.sh meson setup build-release --buildtype=release
fi
ninja -C build-release >/dev/null
