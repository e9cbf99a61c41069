# SPDX-License-Identifier: Apache-2.0
# tracer/rvcc.mk — rvcc, the compiler wrapper (CC="rvcc gcc"): adds the
# instrumentation and links librvtrace.  It finds the library in the lib/
# beside its own bin/ (the build tree), else in LIBDIR (installed).
$(OBJ)/tracer/rvcc/rvcc.o: CPPFLAGS += -DRVCC_PREFIX='"$(PREFIX)"' -DRVCC_LIBDIR='"$(LIBDIR)"'
$(OBJ)/tracer/rvcc/rvcc.o: $(RV_DIRS_STAMP)
$(BIN)/rvcc: $(OBJ)/tracer/rvcc/rvcc.o | $(LIBRVTRACE_A) $(LIBRVTRACE_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
BINS += $(BIN)/rvcc
# rvcc under the names that choose the compiler (rvcc-gcc runs gcc): for
# build systems that take the compiler as one word (CC=rvcc-gcc CXX=rvcc-g++).
RVCC_LINKS := $(addprefix $(BIN)/rvcc-,gcc g++ clang clang++)
$(RVCC_LINKS): | $(BIN)/rvcc
	ln -sf rvcc $@
all: $(RVCC_LINKS)
install: install-rvcc-links
install-rvcc-links: $(RVCC_LINKS)
	install -d $(DESTDIR)$(PREFIX)/bin
	for c in gcc g++ clang clang++; do ln -sf rvcc $(DESTDIR)$(PREFIX)/bin/rvcc-$$c; done
.PHONY: install-rvcc-links

# The real-program benchmark: zstd, sqlite3, Lua and three programs nobody
# tuned for Rearview (gzip, bc, cmark) from Debian's sources, plain and
# through rvcc (tests/bench/real/).  `make check` runs the correctness check
# of zstd and sqlite3 (builds cached under build/real); `make bench-real` the
# timed rounds (ROUNDS=10 by default), in CPU time measured by cpurun.
$(TBIN)/bench/cpurun: $(OBJ)/tests/bench/real/cpurun.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
RV_REAL_DEPS := $(BIN)/rvcc $(BIN)/rvtrace $(LIBRVTRACE_SO) $(LIBRVTRACE_A) $(TBIN)/bench/cpurun
$(TBIN)/bench/test_real: tests/bench/real/test_real.sh | $(RV_REAL_DEPS)
	@mkdir -p $(@D)
	printf '#!/bin/sh\ncd %s && exec sh tests/bench/real/test_real.sh %s "%s"\n' \
	  '$(CURDIR)' '$(BUILD)' '$(SANFLAGS)' > $@
	chmod +x $@
$(eval $(call rv_register,$(TBIN)/bench/test_real,system long))
bench-real: $(RV_REAL_DEPS)
	BUILD=$(BUILD) ROUNDS=$(or $(ROUNDS),10) sh tests/bench/real/run.sh
.PHONY: bench-real
# rvcc's own test (probes, response files, threshold, never-list, shared objects).
$(TBIN)/rvcc/test_rvcc: tests/rvcc/test_rvcc.sh | $(BIN)/rvcc $(RVCC_LINKS) $(BIN)/rvtrace \
                                                 $(LIBRVTRACE_SO)
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh %s %s "%s"\n' '$(CURDIR)/$<' '$(abspath $(BIN))' '$(SANFLAGS)' > $@
	chmod +x $@
$(eval $(call rv_register,$(TBIN)/rvcc/test_rvcc,integration plain))
# The GCC plugin rvcc loads to exclude functions by exact name (gcc 12's
# plugin headers: Debian's gcc-12-plugin-dev).  It runs inside cc1, so it is
# built without the sanitizer flags, with the g++ matching gcc 12; without
# the headers it is not built and rvcc falls back to substring-safe names.
# Both plugins get the hardening flags (top Makefile), not the sanitizers'.
# (RVCC_PLUGIN_INC and RVCC_PLUGIN: tracer.mk.)
ifneq ($(RVCC_PLUGIN),)
$(RVCC_PLUGIN): tracer/rvcc/rvcc_gcc_plugin.cc $(FLAGS_STAMP)
	@mkdir -p $(@D)
	g++ -std=c++17 $(OPT) $(RV_DEBUG) -fPIC -shared -fno-rtti -Wall -Wextra $(RV_HARDEN_CPPFLAGS) \
	  $(RV_HARDEN_CFLAGS) $(RV_HARDEN_LDFLAGS) \
	  $(if $(filter 1,$(DEVELOPER)),-Werror) -I$(RVCC_PLUGIN_INC) -o $@ $<
LIBS_REARVIEW += $(RVCC_PLUGIN)
$(BIN)/rvcc: | $(RVCC_PLUGIN)
endif
# The LLVM pass plugin rvcc loads into clang for the threshold and the
# never-list (clang has no per-function exclusion of its own): built against
# the LLVM of the clang on the PATH (Debian's llvm-14-dev); without the
# headers it is not built and rvcc clang instruments every function.
RVCC_LLVM_INC := $(shell llvm-config --includedir 2>/dev/null)
ifneq ($(wildcard $(RVCC_LLVM_INC)/llvm/Passes/PassPlugin.h),)
RVCC_CLANG_PLUGIN := $(LIB)/rearview/rvcc_clang_plugin.so
$(RVCC_CLANG_PLUGIN): tracer/rvcc/rvcc_clang_plugin.cc $(FLAGS_STAMP)
	@mkdir -p $(@D)
	clang++ -std=c++14 -fno-exceptions -fno-rtti $(OPT) $(RV_DEBUG) -fPIC -shared -Wall -Wextra \
	  $(RV_HARDEN_CPPFLAGS) $(RV_HARDEN_CFLAGS) $(RV_HARDEN_LDFLAGS) \
	  $(if $(filter 1,$(DEVELOPER)),-Werror) -isystem $(RVCC_LLVM_INC) -o $@ $<
LIBS_REARVIEW += $(RVCC_CLANG_PLUGIN)
$(BIN)/rvcc: | $(RVCC_CLANG_PLUGIN)
endif
# An ordinary program built through rvcc joins a real rearviewd by itself
# (RV_SOCKET; librvtrace's control thread starts at load).  Threshold 0: its
# tiny tick function stays traced, so the capture shows it.
$(TBIN)/integration/rv_rvcc_join_app: tests/integration/rvcc_join_app.c $(FLAGS_STAMP) | $(BIN)/rvcc \
                                      $(LIBRVTRACE_SO)
	@mkdir -p $(@D)
	$(BIN)/rvcc --rv-rpath --rv-threshold=0 gcc -O1 -g $(SANFLAGS) -o $@ $<
$(eval $(call rv_test,integration,daemon_rvcc_join,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration plain))
$(TBIN)/integration/test_daemon_rvcc_join: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rvtrace \
                                             $(TBIN)/integration/rv_rvcc_join_app
# `make check-rvcc-packages` (system tier; not in `make check`: it builds six
# Debian source packages under dh, plain and through rvcc, and runs their
# own test suites, traced and not; about an hour on a busy two-core machine):
# tests/rvcc/packages.sh.  RV_PACKAGES="jq serd" picks some.
$(TBIN)/rvcc/test_rvcc_packages: tests/rvcc/packages.sh
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh %s %s $$RV_PACKAGES\n' '$(CURDIR)/$<' '$(abspath $(BUILD))' > $@
	chmod +x $@
check-rvcc-packages: $(TBIN)/rvcc/test_rvcc_packages $(BIN)/rvcc $(RVCC_LINKS) $(LIBRVTRACE_SO)
	RV_TEST_TIMEOUT=$(or $(RV_TEST_TIMEOUT),10800) sh tests/run-tests.sh $<
.PHONY: check-rvcc-packages
