#!/bin/bash
# Install, with apt, whatever slicesim needs to build and test that this Debian/Ubuntu machine
# lacks. Runs apt only when something is missing; uses sudo when not root. Sourced or run.
set -eu
pkgs=(meson ninja-build pkg-config gcc g++ libc6-dev libcmocka-dev libsqlite3-dev libinih-dev zlib1g-dev
      libopenmpi-dev openmpi-bin
      sqlite3 gnuplot-nox valgrind
      clang libclang-rt-14-dev
      python3-dev python3-venv python3-mesonpy python3-pytest python3-pandas)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "slicesim: installing ${missing[*]}" >&2
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
