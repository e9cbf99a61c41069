# SPDX-License-Identifier: Apache-2.0
# bench.py — the workload of rvpython's cost measurement (bench.sh): pure
# Python of several shapes, written for this repository — recursive calls
# (fib), small methods on objects (a scheduler of tasks), a float loop
# (n-body step), string and dict work in the standard library's C (word
# counts, json), generators, and a planted slow function with no calls in
# its loop (planted_slow), which a capture must put at the top of self time.
# `count_me` is called a number of times the script prints, so a capture's
# count can be checked exactly.
#
#   python3 bench.py [SCALE]      (SCALE 1: ~0.7 s of CPU here, ~0.9 M Python calls)
import json
import sys

SCALE = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
count = 0


def count_me(x):
    global count
    count += 1
    return x + 1


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


class Task:
    def __init__(self, ident, work):
        self.ident = ident
        self.work = work
        self.done = 0

    def runnable(self):
        return self.done < self.work

    def step(self):
        self.done += 1
        return count_me(self.ident) if self.done % 16 == 0 else self.ident


class Scheduler:
    def __init__(self, ntasks, work):
        self.tasks = [Task(i, work + i % 7) for i in range(ntasks)]

    def run(self):
        total = 0
        live = list(self.tasks)
        while live:
            nxt = []
            for t in live:
                total += t.step()
                if t.runnable():
                    nxt.append(t)
            live = nxt
        return total


def nbody_step(bodies, dt):
    n = len(bodies)
    for i in range(n):
        xi, yi, zi, vxi, vyi, vzi, mi = bodies[i]
        for j in range(i + 1, n):
            xj, yj, zj, vxj, vyj, vzj, mj = bodies[j]
            dx, dy, dz = xi - xj, yi - yj, zi - zj
            d2 = dx * dx + dy * dy + dz * dz + 0.01
            mag = dt / (d2 * d2 ** 0.5)
            vxi -= dx * mj * mag
            vyi -= dy * mj * mag
            vzi -= dz * mj * mag
            bodies[j][3] += dx * mi * mag
            bodies[j][4] += dy * mi * mag
            bodies[j][5] += dz * mi * mag
        bodies[i][3:6] = [vxi, vyi, vzi]
    for b in bodies:
        b[0] += dt * b[3]
        b[1] += dt * b[4]
        b[2] += dt * b[5]


def nbody(steps):
    bodies = [[float(i), float(i * 2 % 5), float(i * 3 % 7), 0.0, 0.0, 0.0, 1.0 + i / 10]
              for i in range(8)]
    for _ in range(steps):
        nbody_step(bodies, 0.001)
    return bodies[0][0]


def words(n):
    text = " ".join("w%d" % (i * 7919 % 1000) for i in range(n))
    counts = {}
    for w in text.split():
        counts[w] = counts.get(w, 0) + 1
    doc = json.dumps(sorted(counts.items()))
    return len(json.loads(doc))


def squares(n):
    for i in range(n):
        yield count_me(i) * i


def planted_slow(n):
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 1000003
    return acc


def main():
    r = 0
    r += fib(24 if SCALE >= 0.5 else 16)
    r += Scheduler(50, int(1500 * SCALE)).run()
    r += int(nbody(int(5000 * SCALE)))
    for _ in range(int(3 * SCALE) + 1):
        r += words(int(50000 * SCALE) + 100)
    r += sum(squares(int(120000 * SCALE)))
    r += planted_slow(int(8000000 * SCALE))
    print("result=%d" % r)
    print("count_me=%d" % count)


main()
