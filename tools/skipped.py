#!/usr/bin/env python3
"""skipped.py BUILD_DIR...: list the tests meson skipped in each build's last run, with the
reason each printed (its last line of output), from BUILD_DIR/meson-logs/testlog.json."""
import json
import os
import sys

n = 0
for build in sys.argv[1:]:
    path = os.path.join(build, "meson-logs", "testlog.json")
    if not os.path.exists(path):
        continue
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                t = json.loads(line)
            except ValueError:
                continue
            if t.get("result") != "SKIP":
                continue
            out = (t.get("stdout") or "") + (t.get("stderr") or "")
            lines = [x.strip() for x in out.splitlines() if x.strip()]
            why = lines[-1] if lines else "no reason given"
            print(f"  skipped in {build}: {t.get('name')}: {why}")
            n += 1
if n == 0:
    print("  no test was skipped")
