#!/bin/bash
# quiet.sh COMMAND [ARGS...]: run COMMAND with its output held back; print the output only when
# it fails, and exit with its status. For steps like `meson setup`, whose errors go to stdout.
log=$(mktemp) || exit 1
"$@" >"$log" 2>&1
rc=$?
[ "$rc" -eq 0 ] || cat "$log"
rm -f "$log"
exit "$rc"
