#!/bin/bash
# Configuring the CUDA executor finds the toolkit when the nvcc on PATH is a wrapper script
# outside the toolkit (as /usr/local/bin/nvcc is on some machines) and neither CUDA_PATH nor
# CUDA_HOME is set: the build must not look for cuBLASLt and CUPTI next to the wrapper.
# Skips (exit 77) without a CUDA toolkit.
set -u
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
T=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
trap 'rm -rf "$T"' EXIT

if [ -x /usr/local/cuda/bin/nvcc ]; then
    real=$(readlink -f /usr/local/cuda/bin/nvcc)
else
    real=$(command -v nvcc 2>/dev/null)
fi
if [ -z "$real" ]; then
    echo "SKIP: no CUDA toolkit (nvcc) on this machine"
    exit 77
fi
command -v meson >/dev/null || { echo "SKIP: meson not on PATH"; exit 77; }
meson=$(command -v meson)
mkdir -p "$T/bin"
printf '#!/bin/sh\nexec %s "$@"\n' "$real" >"$T/bin/nvcc"
chmod +x "$T/bin/nvcc"
env -u CUDA_PATH -u CUDA_HOME PATH="$T/bin:/usr/local/bin:/usr/bin:/bin" \
    "$meson" setup "$T/build" "$ROOT" -Dcuda=enabled -Dtests=disabled -Dmpi=disabled \
    -Dgnuplot=disabled -Dfuzzing=false >"$T/setup.log" 2>&1 ||
    fail "meson setup -Dcuda=enabled with a wrapper nvcc failed: $(grep -m1 ERROR "$T/setup.log")"
grep -q '^#define HAVE_CUDA_EXEC 1$' "$T/build/config.h" ||
    fail "the CUDA executor is not configured: $(grep HAVE_CUDA_EXEC "$T/build/config.h")"
echo "ok: the toolkit was found behind a wrapper nvcc ($real)"
