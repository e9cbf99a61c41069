#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`make lint` (through tests/lint.sh): the server's folder rule (HACKING.md).

server/src is in folders by role, declared below from the top layer down.
A file may include a header of its own folder or of a folder below it,
never one above: an include that goes up fails.  Two subfolders of one
folder (store/sqlite and store/pg) are siblings: neither includes the other.
In the endpoint folders (web/, api/) a handler never includes another
handler's header.  No folder (a directory, by its own files) holds more
than MAX_SHARE per cent of the server's lines.
And no circle between files (the server's, and the daemon's in device/src):
a .c file that uses a function or variable
another .c file defines depends on it, and those dependencies have no
cycle (two files never lean on each other, directly or around a ring); nor
do headers include each other in a ring.  What a file uses is read from
its text (comments and strings left out); what it defines is its
file-scope definitions that are not static.  Includes are written with
their folder ("store/store.h", resolved against server/src) or, within a
folder, bare.

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
# The endpoint folders, where a handler never includes another handler
# (HACKING.md rule 2): a file there includes, of those folders, only its own
# family's headers.  A family is a file's name up to its first '_' (web_*.c
# are "web"), or as FAMILY says; only app/ (the route table) sees them all.
ENDPOINTS = ["web", "api"]
FAMILY = {"api/gate": "api/api", "api/device": "api/api",
          "api/search": "api/query"}  # GET /api/v1/traces?sort= is search's
MAX_SHARE = 30  # per cent of the server's lines one folder may hold
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


def family(path):
    name = os.path.splitext(rel(path))[0]
    folder, base = os.path.dirname(name), os.path.basename(name).split("_")[0]
    return FAMILY.get(f"{folder}/{base}", f"{folder}/{base}")


def rel(path):
    return os.path.relpath(path, SRC)


COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
IDENT = re.compile(r'[A-Za-z_]\w*')
# A file-scope definition: a function (its body opens on a later line) or
# an initialised or plain variable, at column 0, not static, extern or a
# typedef.
FUNC = re.compile(r'^(?!static\b|extern\b|typedef\b|struct\s+\w+\s*\{|enum\b|union\b|#)'
                  r'[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*(?:__attribute__\s*'
                  r'\(\(.*?\)\)\s*)*\{', re.M | re.S)
VAR = re.compile(r'^(?!static\b|extern\b|typedef\b|#|return\b)(?:const\s+|_Atomic\s+|volatile\s+)*'
                 r'(?:struct\s+\w+|enum\s+\w+|unsigned\s+\w+|\w+)[\s\*]+(?:const\s+)?'
                 r'([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:=|;)', re.M)


def code_of(text):
    """text without comments, strings and preprocessor lines."""
    text = COMMENT.sub(" ", text)
    text = STRING.sub('""', text)
    return re.sub(r'^\s*#.*$', "", text, flags=re.M)


def definitions(code):
    names = set(m.group(1) for m in FUNC.finditer(code))
    names |= set(m.group(1) for m in VAR.finditer(code))
    return names - {"if", "for", "while", "switch", "return", "sizeof", "main"}


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


def file_cycles(files):
    """Rings of .c files among files, each using what the next defines."""
    code, owner = {}, {}
    for f in files:
        if not f.endswith(".c"):
            continue
        with open(f, encoding="utf-8", errors="replace") as fh:
            code[f] = code_of(fh.read())
        for name in definitions(code[f]):
            owner.setdefault(name, set()).add(f)
    uses = {}
    for f, text in code.items():
        for name in set(IDENT.findall(text)):
            for g in owner.get(name, ()):
                if g != f:
                    uses.setdefault(f, set()).add(g)
    return cycles(uses)


def device_files():
    """The daemon's sources (device/src): no folders, but no circle either."""
    d = "device/src"
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".c")) \
        if os.path.isdir(d) else []


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
            if top in ENDPOINTS and htop in ENDPOINTS and family(h) != family(f):
                bad.append(f"lint: {f} includes {name}: another endpoint family's header"
                           " (a handler never includes another handler, HACKING.md)")
            if f.endswith(".h") and h != f:
                edges.setdefault(rel(f), set()).add(rel(h))
    for comp in cycles(edges):
        bad.append("lint: headers include each other in a ring: " + " <-> ".join(comp))
    # No folder (each directory, by its own files) holds more than 30 % of
    # the server's lines.
    lines = {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            lines[os.path.dirname(rel(f))] = lines.get(os.path.dirname(rel(f)), 0) + \
                sum(1 for _ in fh)
    total = sum(lines.values())
    for d, n in sorted(lines.items()):
        if total and n * 100 > total * MAX_SHARE:
            bad.append(f"lint: server/src/{d}/ holds {n} of the server's {total} lines,"
                       f" more than {MAX_SHARE} %: split it by role")
    for comp in file_cycles(files) + file_cycles(device_files()):
        bad.append("lint: a circle between files (each uses what the next defines): "
                   + " <-> ".join(comp))
    for line in bad:
        print(line)
    if not bad:
        print(f"lint: server folders run one way ({' > '.join(ORDER)}); no circle in"
              f" {len(files)} server and {len(device_files())} daemon files")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
