#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gen_chrome_json.py — writes a synthetic Chrome Trace Event JSON file of
about SIZE bytes to stdout, for the streaming-import benchmark
(tracer/BENCHMARKS-rvtrace.md).  Not committed output: run it.

  tests/bench/gen_chrome_json.py 1000000000 > /tmp/big.json

Object form; 8 threads named by M events; per thread, nested X frames
(depth 3) and B/E pairs from 500 names, plus counter (C), instant (i) and
flow (s/f) events that the importer skips and counts.  Deterministic.
"""
import sys

size = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000_000
out = sys.stdout
names = ["fn_%03d::work" % i for i in range(500)]
w = out.write
w('{"displayTimeUnit":"ns","traceEvents":[\n')
written = 40
for tid in range(1, 9):
    line = '{"ph":"M","name":"thread_name","pid":1,"tid":%d,"args":{"name":"worker-%d"}},\n' % (tid, tid)
    w(line)
    written += len(line)
ts = 0
k = 0
buf = []
while written < size:
    tid = 1 + k % 8
    a, b, c = names[k % 500], names[(k * 7) % 500], names[(k * 13) % 500]
    chunk = (
        '{"ph":"X","cat":"bench","name":"%s","pid":1,"tid":%d,"ts":%d.5,"dur":90,"args":{}},\n'
        '{"ph":"B","cat":"bench","name":"%s","pid":1,"tid":%d,"ts":%d},\n'
        '{"ph":"X","cat":"bench","name":"%s","pid":1,"tid":%d,"ts":%d,"dur":20},\n'
        '{"ph":"E","pid":1,"tid":%d,"ts":%d},\n'
        '{"ph":"C","name":"ctr","pid":1,"tid":%d,"ts":%d,"args":{"v":%d}},\n'
        '{"ph":"i","name":"mark","s":"t","pid":1,"tid":%d,"ts":%d},\n'
        '{"ph":"s","name":"flow","id":"0x%x","pid":1,"tid":%d,"ts":%d},\n'
        '{"ph":"f","bp":"e","name":"flow","id":"0x%x","pid":1,"tid":%d,"ts":%d},\n'
        % (a, tid, ts, b, tid, ts + 10, c, tid, ts + 20, tid, ts + 60,
           tid, ts + 61, k, tid, ts + 62, k, tid, ts + 63, k, tid, ts + 64))
    buf.append(chunk)
    written += len(chunk)
    k += 1
    ts += 100
    if len(buf) >= 4096:
        w("".join(buf))
        buf = []
w("".join(buf))
w('{"ph":"i","name":"end","s":"g","pid":1,"tid":1,"ts":%d}\n]}\n' % ts)
