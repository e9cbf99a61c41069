#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/bench/real/estimate.py — how far the self times rvtrace's views
show for a capture with functions muted by the budget (their time estimated
from MUTED_CALLERS: the `~` rows) are from where the program's time goes.

    python3 tests/bench/real/estimate.py RUNS PROG...     PROG: bc cmark gzip zstd
    RVTRACE_B=OTHER/rvtrace python3 tests/bench/real/estimate.py ...  (also read
                                 each capture with another rvtrace build)
    RV_VARIANT=NAME python3 tests/bench/real/estimate.py ...  (the builds of
                                 that variant, as common.sh names them; rv)

Run from the repository root.  Uses the instrumented builds `make
bench-real` left in build/real/ (a program whose build is missing is
skipped, said so).  Per program:

  reference  where the same binary spends its CPU with tracing off, by perf
             (`perf record -e cpu-clock --call-graph dwarf`): each sample
             goes to the innermost frame of its stack that a capture would
             show (a function the capture with nothing muted names), which
             is what a capture's self time means (untraced callees
             included).  Without perf, the capture with nothing muted stands
             in (said so): with every call traced, each call's self time
             carries some of its trace points' cost, so short functions
             weigh more in it than they do untraced.
  all traced one capture with muting off and a ring that holds the run.
  budget on  RUNS captures as a user gets them (the budget on).

For the reference's 8 largest, each one's share of the total (%), and for
each capture the L1 distance to the reference over those 8 (points), with
the budget-on median.  The first budget-on capture is kept as
/tmp/estimate-PROG.rvt (`rvtrace info` lists what was muted, when, and the
callers' shares the estimates come from).
"""
import json, os, shutil, statistics, subprocess, sys, tempfile

ROOT = os.getcwd()
REAL = os.path.join(ROOT, 'build', 'real')
RVTRACE = os.path.join(ROOT, 'build', 'bin', 'rvtrace')
# Another rvtrace (e.g. an older build) to read the same captures with:
# each budget-on run then has a second line, "budget on (B)".
RVTRACE_B = os.environ.get('RVTRACE_B')
V = os.environ.get('RV_VARIANT', 'rv')
TOP = 8


def commands(tmp):
    """PROG -> (binary, its arguments): the workloads of bc.sh, cmark.sh,
    gzip.sh (compression) and zstd.sh (compression) in tests/bench/real."""
    pi = os.path.join(tmp, 'pi.bc')
    with open(pi, 'w') as f:
        f.write('scale=1200\n4*a(1)\nquit\n')
    return {
        'bc': (f'{REAL}/bc/{V}/bc/bc/bc', ['-lq', pi]),
        'cmark': (f'{REAL}/cmark/{V}/build/src/cmark', [f'{REAL}/cmark/spec-40.md']),
        'gzip': (f'{REAL}/gzip/{V}/gzip/gzip', ['-6', '-c', f'{REAL}/gzip/corpus-20M']),
        'zstd': (f'{REAL}/zstd/{V}/zstd',
                 ['-q', '-f', '-3', '--single-thread', '--no-asyncio', '-c',
                  f'{REAL}/zstd/corpus-20M']),
    }


def self_shares(capture, rvtrace=RVTRACE):
    """Method -> share of the summed positive self time (estimates folded
    in, as `rvtrace summary` shows them)."""
    out = subprocess.run([rvtrace, 'summary', '--json', '--top', '100000', capture],
                         capture_output=True, text=True, check=True).stdout
    rows = {r['method']: r['self'] for r in json.loads(out)['top_self']
            if 'unknown caller' not in r['method']}
    total = sum(v for v in rows.values() if v > 0)
    return {k: v / total for k, v in rows.items()} if total > 0 else {}


def capture(cmd, out, extra):
    env = dict(os.environ, RV_TRACE='1', RV_TRACE_FILE=out, **extra)
    subprocess.run([cmd[0]] + cmd[1], env=env, stdout=subprocess.DEVNULL, check=True)


def perf_shares(cmd, shown, tmp):
    """Method -> share of the CPU samples of cmd (tracing off) whose stack
    has a frame in `shown`, each given to its innermost such frame; None
    without perf."""
    if not shutil.which('perf'):
        return None
    data = os.path.join(tmp, 'perf.data')
    rec = subprocess.run(['perf', 'record', '-q', '-e', 'cpu-clock', '-F', '2000',
                          '--call-graph', 'dwarf,16384', '-o', data, cmd[0]] + cmd[1],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if rec.returncode != 0:
        return None
    out = subprocess.run(['perf', 'script', '-i', data, '-F', 'ip,sym'],
                         capture_output=True, text=True).stdout
    counts, total = {}, 0
    for sample in out.split('\n\n'):
        for frame in sample.splitlines():
            t = frame.split()
            if len(t) >= 2 and t[1] in shown:
                counts[t[1]] = counts.get(t[1], 0) + 1
                total += 1
                break
    return {k: v / total for k, v in counts.items()} if total else None


def line(label, shares, top, ref):
    d = 100 * sum(abs(shares.get(k, 0) - ref[k]) for k in top)
    print(f'{label:<22}' + ' '.join(f'{k}={100 * shares.get(k, 0):.1f}' for k in top) +
          (f'  L1={d:.1f}' if shares is not ref else ''))
    return d


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = int(sys.argv[1])
    tmp = tempfile.mkdtemp()
    try:
        cmds = commands(tmp)
        for prog in sys.argv[2:]:
            cmd = cmds.get(prog)
            if not cmd:
                sys.exit(f'estimate.py: unknown program {prog} (bc cmark gzip zstd)')
            if not os.path.exists(cmd[0]) or not all(
                    os.path.exists(a) for a in cmd[1] if a.startswith(REAL)):
                print(f'{prog}: skipped: no build (make bench-real builds it)')
                continue
            every = os.path.join(tmp, 'every.rvt')
            capture(cmd, every, {'RV_TRACE_MUTE': 'off', 'RV_TRACE_BUFFER': '1g'})
            all_traced = self_shares(every)
            ref = perf_shares(cmd, set(all_traced), tmp)
            what = 'reference (perf)'
            if ref is None:
                print(f'{prog}: no perf: the capture with nothing muted is the reference')
                ref, what = all_traced, 'reference (all traced)'
            top = sorted(ref, key=ref.get, reverse=True)[:TOP]
            line(f'{prog} {what}', ref, top, ref)
            if ref is not all_traced:
                line(f'{prog} all traced', all_traced, top, ref)
            dist, dist_b = [], []
            for r in range(runs):
                c = os.path.join(tmp, 'c.rvt')
                capture(cmd, c, {})
                dist.append(line(f'{prog} budget on', self_shares(c), top, ref))
                if RVTRACE_B:
                    dist_b.append(line(f'{prog} budget on (B)', self_shares(c, RVTRACE_B),
                                       top, ref))
                if r == 0:
                    shutil.copy(c, f'/tmp/estimate-{prog}.rvt')
            print(f'{prog} budget on: median L1 {statistics.median(dist):.1f} points '
                  f'over {runs} runs')
            if dist_b:
                print(f'{prog} budget on (B, {RVTRACE_B}): median L1 '
                      f'{statistics.median(dist_b):.1f} points over the same runs')
    finally:
        shutil.rmtree(tmp)


if __name__ == '__main__':
    main()
