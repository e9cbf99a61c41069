# SPDX-License-Identifier: Apache-2.0
"""python3 -m rvpython SCRIPT [ARGS...] | -m MODULE [ARGS...]

Runs SCRIPT (or MODULE) as __main__ with every Python frame traced by
Rearview, as `python3 SCRIPT` would run it otherwise: the frame-evaluation
hook is installed when this package is imported, before SCRIPT starts.
Tracing itself follows librvtrace's environment (RV_TRACE=1 traces the main
thread, RV_TRACE_FILE=PATH writes a capture at exit) or rearviewd.
"""
import os
import runpy
import sys

USAGE = "usage: python3 -m rvpython SCRIPT [ARGS...] | -m MODULE [ARGS...]"


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, file=sys.stdout if args else sys.stderr)
        sys.exit(0 if args else 2)
    if args[0] == "-m":
        if len(args) < 2:
            print(USAGE, file=sys.stderr)
            sys.exit(2)
        sys.argv = args[1:]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = args
        sys.path[0] = os.path.dirname(os.path.abspath(args[0]))
        runpy.run_path(args[0], run_name="__main__")


main()
