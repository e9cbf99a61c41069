#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/bench/real/ab.py — side-by-side CPU-time comparison of commands.

    python3 tests/bench/real/ab.py ROUNDS 'LABEL|ENV=V,ENV2=V|COMMAND' ...

Runs every COMMAND (through sh, with the ENV settings added) once per round,
the order rotated from round to round so that load falls on all alike, and
prints per label the median CPU seconds (user + system of the command and
its children, from wait4) and, against the first label, the mean of the
paired per-round differences with its 95 % paired-t interval (the statistics
of run.sh).  Used to compare two librvtrace builds on one binary
(LD_LIBRARY_PATH=DIR in ENV) and the start-up of an empty program.
"""
import os, sys, math, statistics, subprocess
rounds = int(sys.argv[1])
specs = []
for s in sys.argv[2:]:
    label, env, cmd = s.split('|', 2)
    e = dict(os.environ)
    for kv in filter(None, env.split(',')):
        k, v = kv.split('=', 1); e[k] = v
    specs.append((label, e, cmd))
tq = [12.706,4.303,3.182,2.776,2.571,2.447,2.365,2.306,2.262,2.228,2.201,2.179,2.160,2.145,2.131,2.120,2.110,2.101,2.093,2.086,2.080,2.074,2.069,2.064,2.060,2.056,2.052,2.048,2.045,2.042]
res = {s[0]: [] for s in specs}
for r in range(rounds):
    order = specs[r % len(specs):] + specs[:r % len(specs)]
    for label, e, cmd in order:
        p = subprocess.Popen(cmd, shell=True, env=e, stdout=subprocess.DEVNULL)
        _, st, ru = os.wait4(p.pid, 0)
        if st != 0: print("FAILED", label, st, file=sys.stderr)
        res[label].append(ru.ru_utime + ru.ru_stime)
base = specs[0][0]
print("%-14s %9s %28s" % ("variant", "cpu s med", "vs %s: mean diff (95%% CI)" % base))
for label, _, _ in specs:
    v = res[label]; med = statistics.median(v)
    if label == base: print("%-14s %9.4f" % (label, med)); continue
    b = res[base]; d = [x - y for x, y in zip(v, b)]; n = len(d); m = sum(d) / n
    sd = statistics.stdev(d) if n > 1 else 0; t = tq[n - 2] if n - 1 <= 30 else 1.96
    hw = t * sd / math.sqrt(n); bm = sum(b) / n
    print("%-14s %9.4f %+8.1f%% [%+.1f, %+.1f]" % (label, med, 100*m/bm, 100*(m-hw)/bm, 100*(m+hw)/bm))
