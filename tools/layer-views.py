#!/usr/bin/env python3
"""Include views for the layered build (run by src/meson.build at configure time).

Reads the layer table (the ```layers block of docs/ARCHITECTURE.md): each module and the modules
its files may include. For every module M it makes OUT/M/, a directory of symbolic links to the
src/ directories of M and of every module M may reach (what its allowed modules' headers include
in turn). M's files are compiled with -I OUT/M instead of -I src, so an include of any other
module does not compile. Prints the modules, one per line.

Usage: layer-views.py ARCHITECTURE.md SRC_DIR OUT_DIR
"""
import os
import re
import sys


def table(doc):
    m = re.search(r"```layers\n(.*?)```", open(doc).read(), re.S)
    if not m:
        sys.exit(f"{doc}: no ```layers block")
    deps = {}
    for line in m.group(1).splitlines():
        if line.strip():
            mod, _, rest = line.partition(":")
            deps[mod.strip()] = rest.split()
    return deps


def reach(deps, mod):
    seen, todo = {mod}, [mod]
    while todo:
        for d in deps.get(todo.pop(), []):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def main():
    doc, src, out = sys.argv[1:4]
    deps = table(doc)
    for mod in sorted(deps):
        view = os.path.join(out, mod)
        os.makedirs(view, exist_ok=True)
        want = reach(deps, mod)
        for name in os.listdir(view):  # a dependency dropped from the table goes too
            if name not in want:
                os.remove(os.path.join(view, name))
        for d in sorted(want):
            link = os.path.join(view, d)
            target = os.path.abspath(os.path.join(src, d))
            if os.path.islink(link) and os.readlink(link) == target:
                continue
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(target, link)
        print(mod)


if __name__ == "__main__":
    main()
