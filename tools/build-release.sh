#!/bin/bash
# Configure (once) and build the release binary in build-release/; used by the main job, the
# benchmarks and the experiments. Says on stderr what it does and, on a long build, how far it
# has come (a line at each quarter of ninja's steps); the compiler's messages pass through.
set -eu -o pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-release/build.ninja ]; then
    echo "slicesim: configuring build-release/ (the CUDA executor too where nvcc is found)" >&2
    bash tools/quiet.sh meson setup build-release --buildtype=release
fi
echo "slicesim: building build-release/ (a first build compiles everything, later ones what changed)" >&2
ninja -C build-release | awk '
    /^\[[0-9]+\/[0-9]+\] / {
        split(substr($1, 2, length($1) - 2), a, "/")
        q = int(4 * a[1] / a[2])
        if (a[2] >= 40 && q > shown && a[1] < a[2]) {
            printf "slicesim: built %d of %d steps\n", a[1], a[2]
            shown = q
        }
        next
    }
    /^ninja: (Entering directory|no work to do)/ { next }
    { print }' >&2
