# SPDX-License-Identifier: Apache-2.0
# tracer/ — three parts, each with its own fragment:
#   tracer/lib.mk       librvtrace: trace points, ring buffers, lock-free
#                       control, capture writer and reader, symbols
#   tracer/analysis.mk  rvtrace: decode, analyse, import, export, the CLI
#   tracer/runtimes/lua/lua.mk  rvlua: Lua 5.4 traced at its own level
#   tracer/runtimes/python/python.mk  rvpython: CPython 3.11 traced at its own level
include tracer/lib.mk
include tracer/analysis.mk
include tracer/runtimes/lua/lua.mk
include tracer/runtimes/python/python.mk
include tracer/rvcc.mk
