#!/usr/bin/env python3
"""Check the links of the project's Markdown files: every relative link names a file that
exists, and every #anchor a heading of its target (GitHub's anchors: the heading in lower
case, punctuation dropped, spaces as hyphens). Prints FILE:LINE: what is wrong, one line
each, and exits 1 when anything is; 0 otherwise.

Usage: tools/check-links.py [ROOT]   (default: the checkout this script is in)"""
import os
import re
import sys

LINK = re.compile(r'\[[^\]]*\]\(([^)\s]+)\)')
HEADING = re.compile(r'^#{1,6} (.*)$')
FENCE = re.compile(r'^\s*(```|~~~)')


def markdown_files(root):
    out = []
    for top in ('README.md', 'traces/README.md', 'experiments/README.md',
                'tests/golden/README.md', 'fuzz/README.md'):
        if os.path.isfile(os.path.join(root, top)):
            out.append(top)
    for d in ('docs', 'profiles'):
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if n.endswith('.md'):
                    out.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(set(out))


def slug(text):
    t = re.sub(r'[`*_]', '', text.strip().lower())
    t = re.sub(r'[^\w\- ]', '', t)
    return t.replace(' ', '-')


def lines_outside_code(path):
    """(line number, text) of each line outside fenced code blocks."""
    inside = False
    with open(path, encoding='utf-8') as f:
        for i, line in enumerate(f, 1):
            if FENCE.match(line):
                inside = not inside
                continue
            if not inside:
                yield i, line.rstrip('\n')


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        for _, line in lines_outside_code(path):
            m = HEADING.match(line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                seen.setdefault(s if n == 0 else '%s-%d' % (s, n), 1)
        cache[path] = set(seen)
    return cache[path]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), '..'))
    bad = 0
    for rel in markdown_files(root):
        path = os.path.join(root, rel)
        for n, line in lines_outside_code(path):
            for target in LINK.findall(line):
                if re.match(r'^[a-z]+:', target):  # http:, https:, mailto:
                    continue
                file_part, _, anchor = target.partition('#')
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                if not os.path.abspath(dest).startswith(root + os.sep):
                    print('%s:%d: %s points outside the project' % (rel, n, target))
                    bad += 1
                elif not os.path.exists(dest):
                    print('%s:%d: %s: no such file' % (rel, n, target))
                    bad += 1
                elif anchor and dest.endswith('.md') and anchor not in anchors(dest):
                    print('%s:%d: %s: no heading with that anchor in %s' %
                          (rel, n, target, os.path.relpath(dest, root)))
                    bad += 1
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
