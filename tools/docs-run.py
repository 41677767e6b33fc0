#!/usr/bin/env python3
"""Run the shell blocks of the project's Markdown that are marked runnable, and compare the
output they show with what the commands print.

A block is runnable when its info string has the word `runnable` after the language:
```sh runnable
or ```console runnable. In a `sh` block every line is a command (a line ending in a
backslash continues on the next). In a `console` block a command line starts with "$ " and
the lines after it, up to the next command, are the output it shows: what the command prints
(stdout and stderr together, trailing blanks ignored) from its first line on, line for line,
but that a line "..." (indented or not) stands for any number of lines; what it prints after
the last line shown is not checked. A command that exits non-zero fails the block. Each
command runs in a shell of its own (bash -c): a variable one line sets is not seen by the
next, so a runnable block spells its commands out.

The blocks of one file run in order in one scratch directory, in which the checkout's
experiments/, traces/, profiles/ and examples/ are linked, so that what one block writes (a database)
the next may read; `build-release/src/slicesim` and `slicesim` at the start of a command mean
the binary under test (--slicesim). Prints FILE:LINE: what failed, and exits 1 when anything
did; 0 otherwise.

Usage: tools/docs-run.py --slicesim BIN [--root DIR] [FILE.md ...]
       (default files: README.md and every docs/**/*.md)"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r'^```(\w+)?(.*)$')


def blocks(path):
    """(first line number, language, lines) of each runnable block of path."""
    out, cur = [], None
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            m = FENCE.match(line)
            if cur is None and m:
                lang, rest = m.group(1) or '', m.group(2)
                cur = (n + 1, lang, [], 'runnable' in rest.split())
            elif cur is not None and line.startswith('```'):
                if cur[3] and cur[1] in ('sh', 'console'):
                    out.append(cur[:3])
                cur = None
            elif cur is not None:
                cur[2].append(line)
    return out


def commands(lang, lines, first):
    """(line number, command, shown output lines or None) of a block."""
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if lang == 'console' and not line.startswith('$ '):
            if out and out[-1][2] is not None:
                out[-1][2].append(line)
            i += 1
            continue
        n = first + i
        cmd = line[2:] if lang == 'console' else line
        while cmd.endswith('\\') and i + 1 < len(lines):
            i += 1
            cmd = cmd[:-1] + ' ' + lines[i].strip()
        i += 1
        if cmd.strip() and not cmd.lstrip().startswith('#'):
            out.append((n, cmd, [] if lang == 'console' else None))
    return out


def shown_in(shown, printed):
    """None when every shown line is a printed line in order ("..." skips any), else the first
    shown line that is not."""
    got = [l.rstrip() for l in printed.split('\n')]
    j, skip = 0, False
    for want in shown:
        want = want.rstrip()
        if want.strip() == '...':
            skip = True
            continue
        while j < len(got) and got[j] != want and skip:
            j += 1
        if j >= len(got) or got[j] != want:
            return want
        j += 1
        skip = False
    return None


def run_file(root, rel, slicesim, log):
    bad = 0
    todo = blocks(os.path.join(root, rel))
    if not todo:
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for d in ('experiments', 'traces', 'profiles', 'examples'):
            if not os.path.exists(os.path.join(root, d)):
                continue
            os.symlink(os.path.join(root, d), os.path.join(tmp, d))
        for first, lang, lines in todo:
            for n, cmd, shown in commands(lang, lines, first):
                real = re.sub(r'^(build-release/src/slicesim|slicesim)\b',
                              lambda m: shlex_quote(slicesim), cmd.strip())
                log.write('%s:%d: $ %s\n' % (rel, n, cmd))
                log.flush()
                p = subprocess.run(['bash', '-c', real], cwd=tmp, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
                if p.returncode != 0:
                    print('%s:%d: exit %d: %s\n%s' % (rel, n, p.returncode, cmd,
                                                      p.stdout[-2000:]))
                    bad += 1
                    continue
                miss = shown_in(shown, p.stdout) if shown else None
                if miss is not None:
                    print('%s:%d: the output shown is not what `%s` prints: no line "%s" '
                          'where the block shows it; it printed:\n%s' %
                          (rel, n, cmd, miss, p.stdout[-3000:]))
                    bad += 1
    return bad


def shlex_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--slicesim', required=True)
    ap.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'))
    ap.add_argument('--log', default=None, help='where to write each command as it runs')
    ap.add_argument('files', nargs='*')
    a = ap.parse_args()
    root = os.path.abspath(a.root)
    files = a.files
    if not files:
        files = ['README.md'] + sorted(
            os.path.relpath(os.path.join(dp, n), root)
            for dp, _, ns in os.walk(os.path.join(root, 'docs')) for n in ns if n.endswith('.md'))
    log = open(a.log, 'w') if a.log else open(os.devnull, 'w')
    bad = sum(run_file(root, f, os.path.abspath(a.slicesim), log) for f in files)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
