# SPDX-License-Identifier: Apache-2.0
# calls.py — rvpython's worst case (bench.sh with PYTHON_BENCH_SCRIPT): nothing
# but small Python calls, fib(28) (~0.8 M calls) and a method called in a loop
# (0.3 M calls), and a small planted_slow (fib is on top of self time).
#   python3 calls.py [SCALE]
import sys

SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Counter:
    def __init__(self):
        self.n = 0

    def bump(self, k):
        self.n += k
        return self.n


def planted_slow(n):
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1000003
    return acc


def main():
    c = Counter()
    for i in range(int(300000 * SCALE)):
        c.bump(i & 7)
    print("fib=%d bump=%d slow=%d" % (fib(28 if SCALE >= 0.5 else 18), c.n,
                                       planted_slow(int(1000000 * SCALE))))


main()
