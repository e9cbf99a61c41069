# SPDX-License-Identifier: Apache-2.0
# tracer/ — three parts, each with its own fragment:
#   tracer/lib.mk       librvtrace: trace points, ring buffers, lock-free
#                       control, capture writer and reader, symbols
#   tracer/analysis.mk  rvtrace: decode, analyse, import, export, the CLI
#   tracer/runtimes/lua/lua.mk  rvlua: Lua 5.4 traced at its own level
#   tracer/runtimes/python/python.mk  rvpython: CPython 3.11 traced at its own level
# rvcc's GCC plugin (rvcc.mk builds it), where gcc 12's plugin headers are:
# lib.mk's mute and unwind tests run fixtures in its late mode too.
RVCC_PLUGIN_INC := $(shell gcc -print-file-name=plugin 2>/dev/null)/include
RVCC_PLUGIN := $(if $(wildcard $(RVCC_PLUGIN_INC)/gcc-plugin.h),$(LIB)/rearview/rvcc_gcc_plugin.so)
include tracer/lib.mk
include tracer/analysis.mk
include tracer/runtimes/lua/lua.mk
include tracer/runtimes/python/python.mk
include tracer/rvcc.mk
