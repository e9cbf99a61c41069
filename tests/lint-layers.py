#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`make lint` (through tests/lint.sh): the server's folder rule (HACKING.md).

server/src is in folders by role, declared below from the top layer down.
A file may include a header of its own folder or of a folder below it,
never one above: an include that goes up fails.  Two subfolders of one
folder (store/sqlite and store/pg) are siblings: neither includes the other.
And no circle between files: X.c and X.h are one node, an include of Y.h
from X.c or X.h is an edge X -> Y, and the graph must have no cycle (so a
header never pulls in a file that includes it back, and two .c files never
lean on each other's headers).  Includes are written with their folder
("store/store.h", resolved against server/src) or, within a folder, bare.

  tests/lint-layers.py [FILE...]   (default: the server's files git lists)
Exit 0 when clean, 1 with one line per breach.
"""
import os
import re
import subprocess
import sys

SRC = "server/src"
# Top to bottom.  A folder may include the folders after it.
ORDER = ["app", "web", "api", "http", "pipeline", "model", "blob", "store", "base"]
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def folder_of(path):
    """'server/src/store/pg/x.c' -> ('store', 'store/pg')."""
    rel = os.path.relpath(path, SRC).split(os.sep)
    return rel[0], "/".join(rel[:-1])


def resolve(src, name):
    """The server file an include names, or None (a library's header)."""
    for cand in (os.path.join(os.path.dirname(src), name), os.path.join(SRC, name)):
        cand = os.path.normpath(cand)
        if os.path.isfile(cand) and cand.startswith(SRC + os.sep):
            return cand
    return None


def node(path):
    return os.path.splitext(os.path.relpath(path, SRC))[0]


def cycles(edges):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main(argv):
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = argv or subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", SRC],
        capture_output=True, text=True, check=False).stdout.split()
    files = sorted(f for f in files
                   if f.startswith(SRC + "/") and f.endswith((".c", ".h")) and os.path.isfile(f))
    bad = []
    edges = {}
    for f in files:
        top, sub = folder_of(f)
        if top not in ORDER:
            bad.append(f"lint: {f}: folder {top}/ is not in the declared order ({' '.join(ORDER)})")
            continue
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE.findall(text):
            h = resolve(f, name)
            if not h:
                continue
            htop, hsub = folder_of(h)
            if htop not in ORDER:
                continue
            if ORDER.index(htop) < ORDER.index(top):
                bad.append(f"lint: {f} includes {name}: {htop}/ is above {top}/ (server folders"
                           f" run {' > '.join(ORDER)})")
            elif htop == top and hsub != sub and hsub != top and sub != top:
                bad.append(f"lint: {f} includes {name}: {hsub}/ and {sub}/ are siblings")
            a, b = node(f), node(h)
            if a != b:
                edges.setdefault(a, set()).add(b)
    for comp in cycles(edges):
        bad.append("lint: a circle between server files: " + " <-> ".join(comp))
    for line in bad:
        print(line)
    if not bad:
        print(f"lint: server folders run one way ({' > '.join(ORDER)}), no circle in"
              f" {len(files)} files")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
