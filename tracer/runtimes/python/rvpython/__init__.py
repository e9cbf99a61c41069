# SPDX-License-Identifier: Apache-2.0
"""rvpython: Rearview tracing of CPython 3.11's Python frames.

Importing this package installs the frame-evaluation hook (_rvpython, a C
extension linked with librvtrace): from then on every Python function frame
of a traced thread is recorded.  `python3 -m rvpython SCRIPT [ARGS]` runs a
script that way.  See tracer/runtimes/python/README.md.
"""
from ._rvpython import capture, tracing

__all__ = ["capture", "tracing"]
