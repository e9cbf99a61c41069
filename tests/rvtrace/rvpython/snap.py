# SPDX-License-Identifier: Apache-2.0
# snap.py — takes a capture from inside three nested Python frames with
# rvpython.capture(PATH): the frames still open then must be in it, in order.
import sys

import rvpython


def snap(path):
    rvpython.capture(path)


def inner(path):
    snap(path)


def outer(path):
    inner(path)


print("tracing=%s" % rvpython.tracing())
outer(sys.argv[1])
