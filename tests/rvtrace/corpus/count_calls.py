#!/usr/bin/env python3
"""count_calls.py FILE... — per-name call counts of trace files, read
independently of rvtrace's C code, for test_corpus's comparison: writes
FILE.calls beside each FILE, lines "count<TAB>name" sorted by name.
count_calls.py --to CALLS FILE writes one FILE's counts to CALLS instead
(for files outside the repository, such as ../shared/testdata's).

Chrome Trace Event JSON (plain or gzip'd; array or object form): one call
per X or B event with a timestamp, named by "name" ("(anonymous)" when
absent).  Perfetto protobuf: a minimal protobuf wire walk (no rvtrace
code): one call per TrackEvent SLICE_BEGIN (type 1), named by its literal
name (field 23) or its interned name (name_iid 10 → InternedData
event_names 2, keyed by sequence 10 and a generation bumped by
SEQ_INCREMENTAL_STATE_CLEARED / incremental_state_cleared), "(unnamed)"
otherwise; compressed_packets (50) inflated and walked.  A slice without a
usable timestamp is not counted (rvtrace drops it as damage).  Android's
atrace sections: one call per ftrace print event (packet 1 ftrace_events →
2 event → 3 print → 2 buf) whose line is "B|pid|name" (named by what
follows the second "|" up to a newline, "(unnamed)" when empty or absent)
and whose event has a timestamp (1) and a thread (2).
"""
import collections
import gzip
import json
import sys
import zlib


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        tag, i = varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        else:
            raise ValueError("wire type %d" % wt)
        yield f, v


def perfetto(data, counts, state, nested=False):
    for f, pkt in fields(data):
        if f != 1:
            continue
        p = collections.defaultdict(list)
        for pf, pv in fields(pkt):
            p[pf].append(pv)
        if 50 in p and not nested:
            perfetto(zlib.decompress(p[50][0]), counts, state, True)
            continue
        for bundle in p.get(1, []):
            atrace(bundle, counts)
        seq = p[10][0] if 10 in p else 0
        if (13 in p and p[13][0] & 1) or (41 in p and p[41][0]):
            state["gen"][seq] = state["gen"].get(seq, 0) + 1
        gen = state["gen"].get(seq, 0)
        for idata in p.get(12, []):
            for itf, iv in fields(idata):
                if itf == 2:
                    e = dict(fields(iv))
                    if 1 in e and 2 in e:
                        state["names"][(seq, gen, e[1])] = e[2].decode("utf-8", "replace")
        for te in p.get(11, []):
            t = collections.defaultdict(list)
            for tf, tv in fields(te):
                t[tf].append(tv)
            if t.get(9, [0])[0] != 1 or 8 not in p:
                continue
            if 23 in t:
                name = t[23][-1].decode("utf-8", "replace")
            else:
                name = state["names"].get((seq, gen, t[10][-1]) if 10 in t else None, "(unnamed)")
            counts[name] += 1


def atrace(bundle, counts):
    for f, ev in fields(bundle):
        if f != 2:
            continue
        e = dict(fields(ev))
        if 3 not in e or 1 not in e or 2 not in e:
            continue
        line = dict(fields(e[3])).get(2, b"").decode("utf-8", "replace")
        if line == "B" or line.startswith(("B|", "B\n")):
            parts = line.split("\n")[0].split("|", 2)
            counts[parts[2] if len(parts) == 3 and parts[2] else "(unnamed)"] += 1


def chrome(data, counts):
    d = json.loads(data)
    events = d["traceEvents"] if isinstance(d, dict) else d
    for e in events:
        if isinstance(e, dict) and e.get("ph") in ("X", "B") and isinstance(e.get("ts"), (int, float)):
            counts[e.get("name", "(anonymous)")] += 1


def main():
    args = sys.argv[1:]
    to = None
    if args[:1] == ["--to"]:
        to, args = args[1], args[2:]
        if len(args) != 1:
            sys.exit("count_calls.py: --to CALLS takes one FILE")
    for path in args:
        data = open(path, "rb").read()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        counts = collections.Counter()
        if data.lstrip()[:1] in (b"{", b"["):
            chrome(data, counts)
        else:
            perfetto(data, counts, {"gen": {}, "names": {}})
        with open(to or path + ".calls", "w") as out:
            for name in sorted(counts):
                out.write("%d\t%s\n" % (counts[name], name))


main()
