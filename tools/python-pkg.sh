#!/bin/bash
# The Python package as a user installs it: `pip install --no-build-isolation .` into a fresh
# virtual environment (--system-site-packages: Debian's meson-python, meson, ninja, pytest and
# pandas, so nothing is fetched), then tests/python on pytest against the installed package, from
# outside the checkout so that only the installed one can be imported. The tests compare it with
# the slicesim executable given as the first argument.
# Usage: tools/python-pkg.sh SLICESIM [PYTHON]   (PYTHON: default /usr/bin/python3, Debian's)
# The build directory stays (build-pip/meson): a rerun rebuilds only what changed.
set -eu
cd "$(dirname "$0")/.."
root=$PWD
slicesim=$(realpath "$1")
py=${2:-/usr/bin/python3}
rm -rf build-pip/venv
# meson-python 0.12 reconfigures the build directory it is given whenever its native file
# (.mesonpy-native-file.ini, which it leaves in the source tree) names the same interpreter,
# and fails on a directory that holds no build yet: then start without that file, so that it
# configures afresh.
[ -f build-pip/meson/meson-private/coredata.dat ] || rm -f .mesonpy-native-file.ini
mkdir -p build-pip
"$py" -m venv --system-site-packages build-pip/venv
build-pip/venv/bin/pip install --no-build-isolation --no-index --quiet \
    --config-settings=builddir="$root/build-pip/meson" .
cd build-pip
venv/bin/python -c 'import slicesim, sys
assert slicesim.__file__.startswith(sys.prefix), "not the installed package: " + slicesim.__file__'
SLICESIM=$slicesim PYTHONDONTWRITEBYTECODE=1 \
    venv/bin/python -m pytest -q -p no:cacheprovider "$root/tests/python"
