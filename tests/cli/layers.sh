#!/bin/bash
# The architecture holds: docs/ARCHITECTURE.md's layer table (its ```layers block) names every
# module under src/ and what each may include; this test fails on an include the table does not
# allow, a module the table lacks, an include not written from src/ ("core/x.h"), or an outside
# library used beyond its module (SQLite only in store/, the CUDA headers only in exec/cuda/, the
# plot process only in plot/), or a request's or container's state set outside gmg/.
set -u
ROOT=${SS_SOURCE_ROOT:?SS_SOURCE_ROOT not set}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
command -v python3 >/dev/null || { echo "skip: no python3"; exit 77; }
cd "$ROOT" || exit 1
python3 - <<'PY' || fail "layering violated (above)"
import importlib.util, os, re, sys
# the table as the build reads it (tools/layer-views.py)
spec = importlib.util.spec_from_file_location("layer_views", "tools/layer-views.py")
views = importlib.util.module_from_spec(spec)
spec.loader.exec_module(views)
allowed = {mod: set(deps) for mod, deps in views.table("docs/ARCHITECTURE.md").items()}
bad = []
mods = sorted(d for d in os.listdir("src") if os.path.isdir(os.path.join("src", d)))
for d in mods:
    if d not in allowed:
        bad.append(f"src/{d}/ is not in the layer table")
for d in allowed:
    if d not in mods:
        bad.append(f"the layer table names {d}, which src/ lacks")
    for dep in allowed[d]:
        if dep not in allowed:
            bad.append(f"{d} may include {dep}, which is not a module")
# the outside libraries, each in its own module
own = {"sqlite3.h": "src/store/", "cuda_runtime.h": "src/exec/cuda/",
       "cublasLt.h": "src/exec/cuda/", "cupti.h": "src/exec/cuda/"}
inc = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
for d in mods:
    for base, _, files in os.walk(os.path.join("src", d)):
        for f in files:
            if not f.endswith((".c", ".h", ".cc", ".cu")):
                continue
            p = os.path.join(base, f)
            text = open(p, errors="replace").read()
            for kind, name in inc.findall(text):
                if kind == "<":
                    if name in own and not p.startswith(own[name]):
                        bad.append(f"{p}: <{name}> belongs to {own[name]}")
                    continue
                if "/" not in name:
                    if name not in ("config.h", "version.h"):
                        bad.append(f'{p}: "{name}": write includes from src/ ("{d}/{name}")')
                    continue
                top = name.split("/")[0]
                if ".." in name or not os.path.exists(os.path.join("src", name)):
                    bad.append(f'{p}: "{name}" is not a path under src/')
                elif top != d and top not in allowed.get(d, ()):
                    bad.append(f'{p}: {d}/ may not include "{name}" (allowed: '
                               f'{", ".join(sorted(allowed.get(d, ()))) or "nothing"})')
            if re.search(r"\bpopen\s*\(", text) and d != "plot":
                bad.append(f"{p}: popen outside plot/")
            if d != "gmg":
                for m in re.finditer(r"\b(state|status)\s*=\s*GMG_(REQ|CTR)_\w+", text):
                    bad.append(f"{p}: {m.group(0)}: a request's or container's state changes "
                               f"only in gmg/ (its transitions)")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
echo "layers: ok"
