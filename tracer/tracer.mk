# tracer/ — two parts, each with its own fragment:
#   tracer/lib.mk       librvtrace: trace points, ring buffers, lock-free
#                       control, capture writer and reader, symbols
#   tracer/analysis.mk  rvtrace: decode, analyse, import, export, the CLI
-include tracer/lib.mk
-include tracer/analysis.mk
include tracer/rvcc.mk
