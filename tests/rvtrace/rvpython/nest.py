# SPDX-License-Identifier: Apache-2.0
# nest.py — a script with a known call tree, traced by test_rvpython under
# `python3 -m rvpython`: the test checks every name, parent and count below
# against the capture.  Prints the counts it made, so a change here and a
# stale expectation in the test cannot agree by accident.


def leaf(x):
    return x + 1


def middle(x):
    return leaf(x) + leaf(x + 1)


def outer(n):
    t = 0
    for i in range(n):
        t += middle(i)
    return t


def rec(n):
    return 0 if n == 0 else 1 + rec(n - 1)


class Box:
    def __init__(self, v):
        self.v = v

    def get(self):
        return self.v


def gen(n):
    for i in range(n):
        yield leaf(i)


def thrower(i):
    raise ValueError(i)


def catcher(n):
    caught = 0
    for i in range(n):
        try:
            thrower(i)
        except ValueError:
            caught += 1
        leaf(i)
    return caught


def main():
    outer(10)
    depth = rec(5)
    b = Box(3)
    got = [b.get() for _ in range(4)]
    total = sum(gen(3))
    caught = catcher(3)
    print("rec=%d get=%d gen=%d caught=%d" % (depth, len(got), total, caught))


main()
