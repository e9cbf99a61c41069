# SPDX-License-Identifier: Apache-2.0
# tracer/analysis.mk — librvanalysis (decode, analyse, import, export) and
# the rvtrace CLI.  Included by tracer/tracer.mk.

RVA_SRC := tracer/analysis/model.c tracer/analysis/analysis.c tracer/analysis/offcpu.c \
           tracer/analysis/capture.c tracer/analysis/textio.c \
           tracer/analysis/svg.c tracer/analysis/android.c \
           tracer/analysis/chrome.c tracer/analysis/perfetto.c \
           tracer/analysis/exports.c tracer/analysis/summary.c \
           tracer/analysis/shuffle.c tracer/analysis/inflate.c tracer/analysis/pprof.c \
           tracer/analysis/error.c tracer/analysis/locks.c tracer/analysis/filter.c \
           tracer/analysis/views.c
RVA_OBJ := $(RVA_SRC:%.c=$(OBJ)/%.o) $(OBJ)/gen/rvanalysis/rvperfetto.pb-c.o \
           $(OBJ)/gen/rvanalysis/rvpprof.pb-c.o
RVA_PROTO := tracer/analysis/proto/rvperfetto.proto
RVA_PB_H  := $(GEN)/rvanalysis/rvperfetto.pb-c.h

# Perfetto's field numbers in a small private schema (SOURCES.md §7.6).
$(GEN)/rvanalysis/rvperfetto.pb-c.c $(RVA_PB_H) &: $(RVA_PROTO)
	@mkdir -p $(GEN)/rvanalysis
	$(PROTOC_C) --proto_path=tracer/analysis/proto --c_out=$(GEN)/rvanalysis $(RVA_PROTO)
$(OBJ)/gen/rvanalysis/rvperfetto.pb-c.o: CPPFLAGS += -I$(GEN)/rvanalysis
$(OBJ)/tracer/analysis/perfetto.o: $(RVA_PB_H)
$(OBJ)/tracer/analysis/perfetto.o: CPPFLAGS += $(PROTOBUF_CFLAGS)
# pprof's profile.proto field numbers (pprof.c).
RVA_PPROF_H := $(GEN)/rvanalysis/rvpprof.pb-c.h
$(GEN)/rvanalysis/rvpprof.pb-c.c $(RVA_PPROF_H) &: tracer/analysis/proto/rvpprof.proto
	@mkdir -p $(GEN)/rvanalysis
	$(PROTOC_C) --proto_path=tracer/analysis/proto --c_out=$(GEN)/rvanalysis $<
$(OBJ)/gen/rvanalysis/rvpprof.pb-c.o: CPPFLAGS += -I$(GEN)/rvanalysis
$(OBJ)/tracer/analysis/pprof.o: $(RVA_PPROF_H)
$(OBJ)/tracer/analysis/pprof.o: CPPFLAGS += $(PROTOBUF_CFLAGS) -I$(GEN)/rvanalysis
LIBRVANALYSIS := $(LIB)/librvanalysis.a
# What a program linking librvanalysis.a adds to its link line.
RVA_LIBS := $(LIBRVCOMMON) $(call pc,--libs,jansson) $(call pc,--libs,yajl) $(PROTOBUF_LIBS) -lz -lzstd -lm

# The block transposes vectorize at -O3 (shuffle.c).
$(OBJ)/tracer/analysis/shuffle.o: CFLAGS += -O3
$(OBJ)/tracer/analysis/chrome.o: CPPFLAGS += $(call pc,--cflags,yajl)

$(OBJ)/tracer/analysis/%.o: CPPFLAGS += -Itracer/analysis/include
$(OBJ)/tests/rvtrace/%.o: CPPFLAGS += -Itracer/analysis/include -Itests/rvtrace

$(LIBRVANALYSIS): $(RVA_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN)/rvtrace: $(OBJ)/tracer/analysis/rvtrace.o $(OBJ)/tracer/analysis/hotlist.o $(LIBRVANALYSIS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVA_LIBS)

LIBS        += $(LIBRVANALYSIS)
BINS        += $(BIN)/rvtrace
INSTALL_HDR += tracer/analysis/include/rearview/analysis.h

$(eval $(call rv_test,rvtrace,model,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(eval $(call rv_test,rvtrace,capture,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(OBJ)/tests/rvtrace/test_capture.o: CPPFLAGS += -DRVT_GOLDEN_DIR='"$(CURDIR)/tests/tracer/golden"'
$(OBJ)/tests/rvtrace/test_integrity.o: CPPFLAGS += -DRVT_GOLDEN_DIR='"$(CURDIR)/tests/tracer/golden"'
$(eval $(call rv_test,rvtrace,integrity,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(eval $(call rv_test,rvtrace,textio,$(LIBRVANALYSIS),$(RVA_LIBS),integration plain))
$(eval $(call rv_test,rvtrace,views,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(eval $(call rv_test,rvtrace,shuffle,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(eval $(call rv_test,rvtrace,offcpu,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(OBJ)/tests/rvtrace/test_offcpu.o: $(RVA_PB_H)
$(OBJ)/tests/rvtrace/test_offcpu.o: CPPFLAGS += $(PROTOBUF_CFLAGS) $(call pc,--cflags,jansson)
$(OBJ)/tests/rvtrace/test_shuffle.o: CPPFLAGS += -DRVT_GOLDEN_DIR='"$(CURDIR)/tests/tracer/golden"'

$(OBJ)/tests/rvtrace/test_textio.o: CPPFLAGS += -DRV_TESTDATA='"$(abspath ../shared/testdata)"'
$(eval $(call rv_test,rvtrace,android,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(OBJ)/tests/rvtrace/test_android.o: CPPFLAGS += -DRV_TESTDATA='"$(abspath ../shared/testdata)"'
$(eval $(call rv_test,rvtrace,import,$(LIBRVANALYSIS),$(RVA_LIBS),integration plain))
$(OBJ)/tests/rvtrace/test_import.o: CPPFLAGS += -DRV_TESTDATA='"$(abspath ../shared/testdata)"'
$(eval $(call rv_test,rvtrace,chrome,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(OBJ)/tests/rvtrace/test_chrome.o: CPPFLAGS += -Itracer/analysis
$(eval $(call rv_test,rvtrace,exports,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(OBJ)/tests/rvtrace/test_exports.o: CPPFLAGS += $(call pc,--cflags,jansson)
$(eval $(call rv_test,rvtrace,perfetto,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(OBJ)/tests/rvtrace/test_perfetto.o: $(RVA_PB_H)
$(OBJ)/tests/rvtrace/test_perfetto.o: CPPFLAGS += $(PROTOBUF_CFLAGS)
$(eval $(call rv_test,rvtrace,pprof,$(LIBRVANALYSIS),$(RVA_LIBS),unit))
$(OBJ)/tests/rvtrace/test_pprof.o: CPPFLAGS += -DRV_CORPUS='"$(CURDIR)/tests/rvtrace/corpus"' \
  $(PROTOBUF_CFLAGS) -I$(GEN)/rvanalysis
$(OBJ)/tests/rvtrace/test_pprof.o: $(RVA_PPROF_H)
$(eval $(call rv_test,rvtrace,corpus,$(LIBRVANALYSIS),$(RVA_LIBS),integration plain))
$(OBJ)/tests/rvtrace/test_corpus.o: CPPFLAGS += -DRV_CORPUS='"$(CURDIR)/tests/rvtrace/corpus"' \
  -DRV_TESTDATA='"$(abspath ../shared/testdata)"'
$(eval $(call rv_test,rvtrace,cliviews,$(LIBRVANALYSIS),$(RVA_LIBS),integration plain))
$(TBIN)/rvtrace/test_cliviews: | $(BIN)/rvtrace
$(OBJ)/tests/rvtrace/test_cliviews.o: CPPFLAGS += -DRVTRACE_BIN='"$(abspath $(BIN))/rvtrace"'
$(eval $(call rv_test,rvtrace,cli,$(LIBRVANALYSIS),$(RVA_LIBS),integration plain))
$(TBIN)/rvtrace/test_cli: | $(BIN)/rvtrace
$(OBJ)/tests/rvtrace/test_cli.o: CPPFLAGS += -DRVTRACE_BIN='"$(abspath $(BIN))/rvtrace"' \
  -DRV_NODE_MODULES='"$(abspath build/web/node_modules)"' \
  -DRV_PPROF_TOP='"$(abspath tests/rvtrace/pprof_top.js)"' $(call pc,--cflags,jansson)

# Fuzzing.  The libFuzzer targets (clang -fsanitize=fuzzer,address) build
# the library sources into each binary so they carry coverage; they are
# listed in FUZZ for the top Makefile's `fuzz` goal.  make check replays
# the same targets deterministically (test_fuzzreplay, no libFuzzer).
RVA_FUZZ_NAMES := capture android chrome perfetto folded nanoscope shuffle pprof
RVA_FUZZ_OBJ   := $(RVA_FUZZ_NAMES:%=$(OBJ)/tests/fuzz/rvtrace_%.o)
FUZZ += $(RVA_FUZZ_NAMES:%=$(BUILD)/fuzz/rvtrace_%)

$(foreach n,$(RVA_FUZZ_NAMES),$(eval \
  $(OBJ)/tests/fuzz/rvtrace_$(n).o: CPPFLAGS += -Itracer/analysis/include -DLLVMFuzzerTestOneInput=rva_fuzz_$(n)))

# The importer targets give libFuzzer the importer's coverage only: the
# analyses and exporters they run on every trace stay sanitized but add no
# features (tests/fuzz/importers.ignorelist says why).
RVA_FUZZ_IMPORTERS := android chrome perfetto folded nanoscope pprof
$(RVA_FUZZ_IMPORTERS:%=$(BUILD)/fuzz/rvtrace_%): \
  RVA_FUZZ_COV := -fsanitize-coverage-ignorelist=tests/fuzz/importers.ignorelist
$(BUILD)/fuzz/rvtrace_%: tests/fuzz/rvtrace_%.c $(RVA_SRC) $(GEN)/rvanalysis/rvperfetto.pb-c.c \
  $(GEN)/rvanalysis/rvpprof.pb-c.c tests/fuzz/importers.ignorelist
	@mkdir -p $(@D)
	clang -std=c11 -O1 -g -fsanitize=fuzzer,address,undefined $(RVA_FUZZ_COV) $(CPPFLAGS) -Itracer/analysis/include \
	  -I$(GEN)/rvanalysis $(PROTOBUF_CFLAGS) $(call pc,--cflags,yajl) \
	  -o $@ $< $(RVA_SRC) $(GEN)/rvanalysis/rvperfetto.pb-c.c $(GEN)/rvanalysis/rvpprof.pb-c.c $(RVA_LIBS)

$(eval $(call rv_test,rvtrace,fuzzreplay,$(RVA_FUZZ_OBJ) $(LIBRVANALYSIS),$(RVA_LIBS),torture))
$(OBJ)/tests/rvtrace/test_fuzzreplay.o: CPPFLAGS += -DRV_TESTDATA='"$(abspath ../shared/testdata)"' \
  -DRV_FUZZ_SEEDS='"$(CURDIR)/tests/fuzz"'

$(TBIN)/rvtrace/bench_capture: $(OBJ)/tests/rvtrace/bench_capture.o $(LIBRVANALYSIS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVA_LIBS)
BENCHES += $(TBIN)/rvtrace/bench_capture
$(TBIN)/rvtrace/bench_shuffle: $(OBJ)/tests/rvtrace/bench_shuffle.o $(LIBRVANALYSIS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVA_LIBS) -lzstd
BENCHES += $(TBIN)/rvtrace/bench_shuffle
$(eval $(call rv_test,rvtrace,concurrent,$(LIBRVANALYSIS),$(RVA_LIBS),unit tsan))
