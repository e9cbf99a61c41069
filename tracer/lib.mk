# SPDX-License-Identifier: Apache-2.0
# librvtrace — the in-process tracer (issue 3).  Its own sources are built
# WITHOUT -finstrument-functions and with hidden visibility: only the rvt_
# API, the __cyg_profile hooks and the inline-mode ABI (rvt__*) are exported.
# Test fixtures are instrumented, in call mode and in inline mode.

comma := ,
LIBELF_CFLAGS := $(call pc,--cflags,libelf)
LIBELF_LIBS   := $(call pc,--libs,libelf)

RVT_SRC := tracer/src/tracer.c tracer/src/tp-slow.c tracer/src/encode.c \
           tracer/src/symbols.c tracer/src/control.c \
           tracer/src/devmode.c tracer/src/unwind.c tracer/src/runtime.c \
           tracer/src/mute.c tracer/src/locks.c tracer/src/exec.c \
           tracer/src/bare.c
RVT_OBJ := $(RVT_SRC:%.c=$(OBJ)/%.o)
# Call-mode hooks: hand-written on x86-64 and aarch64, portable C elsewhere
# and under ThreadSanitizer (which must see the hooks' memory accesses).
RVT_ARCH := $(shell $(CC) -dumpmachine)
RVT_HOOKS := hooks
ifeq ($(findstring thread,$(SANFLAGS)),)
ifneq ($(findstring x86_64,$(RVT_ARCH)),)
RVT_HOOKS := hooks-x86_64
# Muting patches calls to these hooks (mute.c).
$(OBJ)/tracer/src/mute.o: CPPFLAGS += -DRVT_MUTE_X86
# The inline-mode stubs save only general-purpose registers around these.
$(OBJ)/tracer/src/tp-slow.o: CFLAGS += -mgeneral-regs-only
endif
ifneq ($(findstring aarch64,$(RVT_ARCH)),)
RVT_HOOKS := hooks-aarch64
endif
endif
RVT_OBJ += $(OBJ)/tracer/src/$(RVT_HOOKS).o

$(OBJ)/tracer/src/%.o: CPPFLAGS += -Itracer/include -DRVT_BUILDING_LIBRARY \
                                   $(LIBELF_CFLAGS) $(PROTOBUF_CFLAGS)
$(OBJ)/tracer/src/%.o: CFLAGS += -fvisibility=hidden
$(OBJ)/tracer/src/%.o: tracer/src/%.S
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

RVT_LDLIBS := $(LIBRVPROTO) $(PROTOBUF_LIBS) $(LIBELF_LIBS) -lpthread

LIBRVTRACE_A  := $(LIB)/librvtrace.a
# The shared library is librvtrace.so.VERSION with its SONAME link
# librvtrace.so.MAJOR and the link-time name librvtrace.so (what
# LIBRVTRACE_SO names); only what librvtrace.map lists is exported.
LIBRVTRACE_SO := $(LIB)/librvtrace.so
RVT_SONAME    := librvtrace.so.$(RV_SOVERSION)
RVT_MAP       := tracer/src/librvtrace.map
# The archive carries the librvcommon objects it uses, so the installed
# librvtrace.a links with only what rearview-trace.pc lists.
$(LIBRVTRACE_A): $(RVT_OBJ) $(RVC_TRACE_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^
# The shared library opens libelf on first use (elf-lazy.c): a process that
# never symbolises a capture does not load libelf and libz at start.
RVT_SO_OBJ := $(RVT_OBJ) $(OBJ)/tracer/src/elf-lazy.o
$(LIBRVTRACE_SO) $(LIB)/$(RVT_SONAME) $(LIB)/librvtrace.so.$(RV_VERSION) &: $(RVT_SO_OBJ) \
		$(LIBRVCOMMON) $(LIBRVPROTO) $(RVT_MAP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,$(RVT_SONAME) -Wl,--version-script=$(RVT_MAP) \
	  -Wl,--exclude-libs,librvproto.a -Wl,--exclude-libs,librvcommon.a \
	  -o $(LIB)/librvtrace.so.$(RV_VERSION) $(RVT_SO_OBJ) $(LIBRVCOMMON) \
	  $(LIBRVPROTO) $(PROTOBUF_LIBS) -lpthread
	ln -sf librvtrace.so.$(RV_VERSION) $(LIB)/$(RVT_SONAME)
	ln -sf $(RVT_SONAME) $(LIBRVTRACE_SO)

LIBS += $(LIBRVTRACE_A) $(LIBRVTRACE_SO)
SHLIBS += $(LIBRVTRACE_SO)
INSTALL_HDR += tracer/include/rearview/trace.h tracer/include/rearview/trace-inline.h \
               tracer/include/rearview/trace-runtime.h

# librvproto and librvcommon are linked in but not re-exported
# (--exclude-libs): a program that also links librvproto must not see two
# copies of its descriptors.

# Tests: the library statically, plus instrumented fixtures.
RVT_TEST_CPPFLAGS := -Itracer/include -Itracer/src -Itests/tracer
$(OBJ)/tests/tracer/%.o: CPPFLAGS += $(RVT_TEST_CPPFLAGS) $(PROTOBUF_CFLAGS)
$(OBJ)/tests/tracer/fixture_call.o: CFLAGS += -finstrument-functions
$(OBJ)/tests/tracer/fixture_inline.o: CFLAGS += -finstrument-functions \
	-include tracer/include/rearview/trace-inline.h
$(OBJ)/tests/tracer/test_signal.o: CFLAGS += -finstrument-functions
$(OBJ)/tests/tracer/fixture_call.o $(OBJ)/tests/tracer/fixture_inline.o: tests/tracer/fixture_body.h

RVT_TEST_OBJ := $(OBJ)/tests/tracer/capture_util.o $(OBJ)/tests/tracer/wrap_check.o \
                $(OBJ)/tests/tracer/fixture_call.o \
                $(OBJ)/tests/tracer/fixture_inline.o $(LIBRVTRACE_A) $(LIBRVPROTO)

$(eval $(call rv_test,tracer,format,$(RVT_TEST_OBJ),$(RVT_LDLIBS),unit))
# A second instrumented module for the multi-module capture test.
RVT_MODFIX := $(TBIN)/tracer/libmodfix.so
$(OBJ)/tests/tracer/modfix.o: CFLAGS += -finstrument-functions
$(RVT_MODFIX): $(OBJ)/tests/tracer/modfix.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libmodfix.so -o $@ $<
# The same library in inline mode, renamed: the trace points' PIC form (GOT
# TLS offset, stub called through the PLT) from a shared object.
RVT_MODINL := $(TBIN)/tracer/libmodinl.so
$(OBJ)/tests/tracer/modinl.o: tests/tracer/modfix.c tracer/include/rearview/trace-inline.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions \
	  -include tracer/include/rearview/trace-inline.h \
	  -Dmodfix_outer=modinl_outer -Dmodfix_inner=modinl_inner -c -o $@ $<
$(RVT_MODINL): $(OBJ)/tests/tracer/modinl.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libmodinl.so -o $@ $<
# A library the test opens, calls and closes (dlopen/dlclose) before it
# captures; not linked.
RVT_DLFIX := $(TBIN)/tracer/libdlfix.so
$(OBJ)/tests/tracer/dlfix.o: CFLAGS += -finstrument-functions
$(RVT_DLFIX): $(OBJ)/tests/tracer/dlfix.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libdlfix.so -o $@ $<
# The same in inline mode, renamed: its gate (trace-inline.h) registers at
# dlopen and unregisters at dlclose.
RVT_DLINL := $(TBIN)/tracer/libdlinl.so
$(OBJ)/tests/tracer/dlinl.o: tests/tracer/dlfix.c tracer/include/rearview/trace-inline.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions \
	  -include tracer/include/rearview/trace-inline.h \
	  -Ddlfix_outer=dlinl_outer -Ddlfix_inner=dlinl_inner -c -o $@ $<
$(RVT_DLINL): $(OBJ)/tests/tracer/dlinl.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libdlinl.so -o $@ $<
$(OBJ)/tests/tracer/test_ring.o: CPPFLAGS += -DRVT_DLFIX='"$(abspath $(RVT_DLFIX))"' \
	-DRVT_DLINL='"$(abspath $(RVT_DLINL))"'
# A C++ method, for demangling (librvtrace finds __cxa_demangle weakly, so
# libstdc++ is linked even though, librvtrace defining the personality
# routine it interposes, nothing else of it is needed: --no-as-needed).
$(OBJ)/tests/tracer/cxxfix.o: tests/tracer/cxxfix.cc
	@mkdir -p $(@D)
	$(CXX) $(OPT) -g -fPIC $(SANFLAGS) -finstrument-functions -c -o $@ $<
$(eval $(call rv_test,tracer,ring,$(RVT_TEST_OBJ) $(RVT_MODFIX) $(RVT_MODINL) $(OBJ)/tests/tracer/cxxfix.o,\
	$(RVT_LDLIBS) -Wl$(comma)--no-as-needed -lstdc++ -Wl$(comma)--as-needed \
	-Wl$(comma)-rpath$(comma)$(abspath $(TBIN)/tracer),unit))
$(TBIN)/tracer/test_ring: | $(RVT_DLFIX) $(RVT_DLINL)
$(eval $(call rv_test,tracer,protocol,$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration tsan plain))
$(eval $(call rv_test,tracer,signal,$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration plain))
$(OBJ)/tests/tracer/test_signal_inline.o: CFLAGS += -finstrument-functions \
	-include tracer/include/rearview/trace-inline.h
$(OBJ)/tests/tracer/test_signal_inline.o: tests/tracer/test_signal.c
$(eval $(call rv_test,tracer,signal_inline,$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration plain))
$(eval $(call rv_test,tracer,fork,$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration plain))
$(eval $(call rv_test,tracer,devmode,$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration plain))
# x86-64 inline mode's register-preserving stubs, called from hand-written asm.
ifneq ($(findstring x86_64,$(RVT_ARCH)),)
RVT_STUB_OBJ := $(OBJ)/tests/tracer/stub_regs-x86_64.o
$(OBJ)/tests/tracer/%.o: tests/tracer/%.S
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
endif
$(eval $(call rv_test,tracer,stubs,$(RVT_STUB_OBJ) $(RVT_TEST_OBJ),$(RVT_LDLIBS),unit))
$(OBJ)/tests/tracer/test_format.o: CPPFLAGS += -DRVT_GOLDEN_DIR='"$(CURDIR)/tests/tracer/golden"'
$(eval $(call rv_test,tracer,control,$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration plain))
$(eval $(call rv_test,tracer,runtime,$(RVT_TEST_OBJ),$(RVT_LDLIBS),unit))
# Issue 21 items 1-3: blocking calls undisturbed, no lost call, exact time.
$(eval $(call rv_test,tracer,blocking,$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration plain))
$(eval $(call rv_test,tracer,stream,$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration tsan plain))
# (librvanalysis is defined later, in analysis.mk: named here by its path.)
$(OBJ)/tests/tracer/test_gap.o: CPPFLAGS += -Itracer/analysis/include
$(eval $(call rv_test,tracer,gap,$(RVT_TEST_OBJ) $(LIB)/librvanalysis.a,$(RVT_LDLIBS) $$(RVA_LIBS),integration plain))
# Issue 17, lock waits: the fixture's own methods are traced; decoded by librvanalysis.
$(OBJ)/tests/tracer/test_locks.o: CFLAGS += -finstrument-functions
$(OBJ)/tests/tracer/test_locks.o: CPPFLAGS += -Itracer/analysis/include
$(eval $(call rv_test,tracer,locks,$(RVT_TEST_OBJ) $(LIB)/librvanalysis.a,$(RVT_LDLIBS) $$(RVA_LIBS),unit))

# Lock interposers' uncontended cost (BENCHMARKS.md): plain and with librvtrace.
$(TBIN)/bench/tracer_locks_plain: $(OBJ)/tests/bench/tracer_locks.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lpthread
$(OBJ)/tests/bench/tracer_locks_rvt.o: tests/bench/tracer_locks.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itracer/include -DRVT_LINKED $(CFLAGS) -c -o $@ $<
$(TBIN)/bench/tracer_locks_rvt: $(OBJ)/tests/bench/tracer_locks_rvt.o $(LIBRVTRACE_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVT_LDLIBS)
BENCHES += $(TBIN)/bench/tracer_locks_plain $(TBIN)/bench/tracer_locks_rvt

# What a capture costs the traced process (BENCHMARKS.md, "Capture build").
$(OBJ)/tests/bench/tracer_capture.o: CPPFLAGS += -Itracer/include
$(TBIN)/bench/tracer_capture: $(OBJ)/tests/bench/tracer_capture.o $(LIBRVTRACE_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVT_LDLIBS)
BENCHES += $(TBIN)/bench/tracer_capture

# test_mute: one fixture source in call mode and in inline mode.
$(OBJ)/tests/tracer/mute_call.o: tests/tracer/mute_fix.c tests/tracer/mute_fix.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions -DMF_PREFIX=mc_ \
	  -c -o $@ $<
$(OBJ)/tests/tracer/mute_inl.o: tests/tracer/mute_fix.c tests/tracer/mute_fix.h \
		tracer/include/rearview/trace-inline.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions -DMF_PREFIX=mi_ \
	  -include tracer/include/rearview/trace-inline.h -c -o $@ $<
# And in rvcc's late mode (the GCC plugin's trace points after inlining),
# where the plugin is built and the x86-64 stubs are (not under TSan):
# RVT_LATE_FIX is 1 then (test_unwind's fixtures too).
RVT_LATE_FIX := $(if $(RVCC_PLUGIN),$(if \
	$(findstring thread,$(SANFLAGS))$(filter-out x86_64,$(shell uname -m)),,1))
MUTE_FIX_OBJ := $(OBJ)/tests/tracer/mute_call.o $(OBJ)/tests/tracer/mute_inl.o
ifneq ($(RVT_LATE_FIX),)
$(OBJ)/tests/tracer/mute_late.o: tests/tracer/mute_fix.c tests/tracer/mute_fix.h $(RVCC_PLUGIN)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -DMF_PREFIX=ml_ -fplugin=$(RVCC_PLUGIN) \
	  -fplugin-arg-rvcc_gcc_plugin-late -c -o $@ $<
MUTE_FIX_OBJ += $(OBJ)/tests/tracer/mute_late.o
$(OBJ)/tests/tracer/test_mute.o $(OBJ)/tests/tracer/test_mute_race.o: CPPFLAGS += -DMUTE_LATE=1
endif
$(eval $(call rv_test,tracer,mute,$(MUTE_FIX_OBJ) $(RVT_TEST_OBJ),$(RVT_LDLIBS),integration plain))
# Integration tier: muting races captures for a few seconds on four threads.
$(eval $(call rv_test,tracer,mute_race,$(MUTE_FIX_OBJ) $(RVT_TEST_OBJ),$(RVT_LDLIBS),\
	integration plain))

# test_bare: the budget thread glibc does not know (bare.c), in a program
# that makes no thread of its own until its last cases.
$(eval $(call rv_test,tracer,bare,$(OBJ)/tests/tracer/mute_call.o $(OBJ)/tests/tracer/mute_inl.o \
	$(RVT_TEST_OBJ),$(RVT_LDLIBS),integration plain))

# test_untraced: carries a .rearview_untraced section of its own (as rvcc
# adds one), which librvtrace must find in its module's file.
$(OBJ)/tests/tracer/test_untraced.o: CPPFLAGS += -Itracer/analysis/include \
	-DRVT_GOLDEN_DIR='"$(CURDIR)/tests/tracer/golden"'
$(TBIN)/tracer/test_untraced: $(OBJ)/tests/tracer/test_untraced.o $(RVT_TEST_OBJ) \
		$(LIB)/librvanalysis.a tests/tracer/golden/untraced.txt
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(RVT_LDLIBS) $(RVA_LIBS) $(CMOCKA_LIBS) \
	  -lpthread
	objcopy --add-section .rearview_untraced=tests/tracer/golden/untraced.txt \
	  --set-section-flags .rearview_untraced=contents,readonly $@
$(OBJ)/tests/tracer/test_untraced.o: CPPFLAGS += $(CMOCKA_CFLAGS)
$(eval $(call rv_register,$(TBIN)/tracer/test_untraced,unit))

# `make bench`: Listing 1 built several ways into one driver.
RVT_BENCH_OBJ := $(addprefix $(OBJ)/tests/bench/,tracer_listing1.o tracer_work_plain.o \
	tracer_work_call.o tracer_work_inline.o tracer_work_inline_c.o tracer_work_clang_plain.o \
	tracer_work_clang_call.o tracer_work_empty.o)
$(OBJ)/tests/bench/tracer_%.o: CPPFLAGS += -Itracer/include
$(OBJ)/tests/bench/tracer_work_%.o: CFLAGS += -fno-optimize-sibling-calls
$(OBJ)/tests/bench/tracer_work_call.o: CFLAGS += -finstrument-functions
$(OBJ)/tests/bench/tracer_work_empty_src.o: CFLAGS += -finstrument-functions
$(OBJ)/tests/bench/tracer_work_inline.o: CFLAGS += -finstrument-functions \
	-include tracer/include/rearview/trace-inline.h
$(OBJ)/tests/bench/tracer_work_inline_c.o: CFLAGS += -finstrument-functions \
	-DRVT_INLINE_PORTABLE -include tracer/include/rearview/trace-inline.h
$(OBJ)/tests/bench/tracer_work_clang_%.o: tests/bench/tracer_work_clang_%.c
	@mkdir -p $(@D)
	clang $(CPPFLAGS) -std=c11 $(OPT) -fPIC -fno-optimize-sibling-calls \
	  $(if $(findstring call,$*),-finstrument-functions-after-inlining) -c -o $@ $<
$(OBJ)/tests/bench/tracer_work_empty.o: $(OBJ)/tests/bench/tracer_work_empty_src.o
	objcopy --redefine-sym __cyg_profile_func_enter=bench_empty_enter \
	  --redefine-sym __cyg_profile_func_exit=bench_empty_exit $< $@
$(TBIN)/bench/tracer_listing1: $(RVT_BENCH_OBJ) $(LIBRVTRACE_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVT_LDLIBS)
BENCHES += $(TBIN)/bench/tracer_listing1

# aarch64: the hand-written hooks, rings, protocol and writer cross-built statically and
# run under qemu-user (symbols and the control thread are stubbed: no arm64
# libelf or protobuf-c on the build machine).  Skipped under sanitizers and
# when the cross compiler or qemu is missing.
RVT_A64_CC := aarch64-linux-gnu-gcc
ifeq ($(SANFLAGS),)
ifneq ($(shell command -v $(RVT_A64_CC) 2>/dev/null),)
ifneq ($(shell command -v qemu-aarch64 2>/dev/null),)
RVT_A64_CFLAGS := -std=c11 -O2 -g -D_GNU_SOURCE -Itracer/include -Itracer/src -Itests/tracer \
                  -Iproto/common/include \
                  -DRVT_BUILDING_LIBRARY $(WARN)
RVT_A64_OBJ := $(addprefix $(OBJ)/a64/,tracer/src/tracer.o tracer/src/tp-slow.o tracer/src/encode.o \
	tracer/src/devmode.o tracer/src/unwind.o tracer/src/locks.o tracer/src/bare.o \
	tracer/src/hooks-aarch64.o proto/common/src/io.o proto/common/src/atomic.o \
	tests/tracer/aarch64_stubs.o tests/tracer/capture_util.o \
	tests/tracer/wrap_check.o \
	tests/tracer/aarch64_smoke.o tests/tracer/fixture_call.o tests/tracer/fixture_inline.o \
	tests/tracer/unwind_uc.o tests/tracer/unwind_ui.o)
$(OBJ)/a64/tests/tracer/fixture_call.o: RVT_A64_EXTRA := -finstrument-functions
$(OBJ)/a64/tests/tracer/fixture_inline.o: RVT_A64_EXTRA := -finstrument-functions \
	-include tracer/include/rearview/trace-inline.h
$(OBJ)/a64/tests/tracer/unwind_u%.o: tests/tracer/unwind_fix.c tests/tracer/unwind_fix.h \
		tracer/include/rearview/trace-inline.h
	@mkdir -p $(@D)
	$(RVT_A64_CC) $(RVT_A64_CFLAGS) -finstrument-functions -DUF_PREFIX=u$*_ \
	  $(if $(findstring i,$*),-include tracer/include/rearview/trace-inline.h) -c -o $@ $<
$(OBJ)/a64/%.o: %.c tracer/include/rearview/trace-inline.h tracer/src/tracer-int.h \
		tests/tracer/fixture_body.h tests/tracer/wrap_check.h tests/tracer/capture_util.h
	@mkdir -p $(@D)
	$(RVT_A64_CC) $(RVT_A64_CFLAGS) $(RVT_A64_EXTRA) -c -o $@ $<
$(OBJ)/a64/%.o: %.S
	@mkdir -p $(@D)
	$(RVT_A64_CC) $(RVT_A64_CFLAGS) -c -o $@ $<
$(TBIN)/tracer/aarch64_smoke.elf: $(RVT_A64_OBJ)
	@mkdir -p $(@D)
	$(RVT_A64_CC) -static -pthread -Wl,-u,__pthread_create,-u,__pthread_setname_np \
	  -Wl,--undefined=__libc_siglongjmp \
	  -Wl,-u,__pthread_mutex_lock,-u,__pthread_rwlock_rdlock,-u,__pthread_rwlock_wrlock \
	  -Wl,-u,__pthread_mutex_timedlock,-u,__pthread_mutex_clocklock \
	  -Wl,-u,___pthread_rwlock_timedrdlock,-u,___pthread_rwlock_timedwrlock \
	  -Wl,-u,___pthread_rwlock_clockrdlock,-u,___pthread_rwlock_clockwrlock \
	  -Wl,-u,__pthread_cond_wait,-u,__pthread_cond_timedwait,-u,__pthread_cond_clockwait \
	  -Wl,-u,__pthread_cond_signal,-u,__pthread_cond_broadcast -o $@ $^
$(TBIN)/tracer/test_aarch64: $(TBIN)/tracer/aarch64_smoke.elf
	printf '#!/bin/sh\nexec qemu-aarch64 "%s" "$$@"\n' "$(abspath $<)" > $@
	chmod +x $@
$(eval $(call rv_register,$(TBIN)/tracer/test_aarch64,integration plain))
endif
endif
endif
# The Lua macro-benchmark (fetches lua5.4's Debian source once; see the script).
BENCHES += tests/bench/tracer_lua.sh
tests/bench/tracer_lua.sh: $(LIBRVTRACE_A) $(LIBRVPROTO)

# test_unwind (unwind.c): one fixture in call mode, inline mode, late mode and
# fortified call mode (longjmp -> __longjmp_chk), a C++ one with g++ (call and
# late mode) and clang++ (when clang++ is installed; the test skips
# otherwise), and Lua 5.4 built on demand
# by tests/tracer/unwind_lua.sh.
RVT_UNWIND_OBJ := $(addprefix $(OBJ)/tests/tracer/,unwind_uc.o unwind_ui.o unwind_uf.o unwind_gx.o)
$(OBJ)/tests/tracer/unwind_uc.o: tests/tracer/unwind_fix.c tests/tracer/unwind_fix.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions -DUF_PREFIX=uc_ -c -o $@ $<
$(OBJ)/tests/tracer/unwind_ui.o: tests/tracer/unwind_fix.c tests/tracer/unwind_fix.h \
		tracer/include/rearview/trace-inline.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions \
	  -include tracer/include/rearview/trace-inline.h -DUF_PREFIX=ui_ -c -o $@ $<
$(OBJ)/tests/tracer/unwind_uf.o: tests/tracer/unwind_fix.c tests/tracer/unwind_fix.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -O2 -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 \
	  -finstrument-functions -DUF_PREFIX=uf_ -c -o $@ $<
$(OBJ)/tests/tracer/unwind_gx.o: tests/tracer/unwind_cxx.cc tests/tracer/unwind_fix.h
	@mkdir -p $(@D)
	$(CXX) $(OPT) -g -fPIC $(SANFLAGS) -Itests/tracer -finstrument-functions -DUF_PREFIX=gx_ -c -o $@ $<
# And both in rvcc's late mode (RVT_LATE_FIX, above): ul_ and gl_.
ifneq ($(RVT_LATE_FIX),)
RVT_UNWIND_OBJ += $(OBJ)/tests/tracer/unwind_ul.o $(OBJ)/tests/tracer/unwind_gl.o
$(OBJ)/tests/tracer/test_unwind.o: CPPFLAGS += -DUNWIND_HAVE_LATE
$(OBJ)/tests/tracer/unwind_ul.o: tests/tracer/unwind_fix.c tests/tracer/unwind_fix.h $(RVCC_PLUGIN)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -fplugin=$(RVCC_PLUGIN) \
	  -fplugin-arg-rvcc_gcc_plugin-late -DUF_PREFIX=ul_ -c -o $@ $<
$(OBJ)/tests/tracer/unwind_gl.o: tests/tracer/unwind_cxx.cc tests/tracer/unwind_fix.h $(RVCC_PLUGIN)
	@mkdir -p $(@D)
	$(CXX) $(OPT) -g -fPIC $(SANFLAGS) -Itests/tracer -fplugin=$(RVCC_PLUGIN) \
	  -fplugin-arg-rvcc_gcc_plugin-late -DUF_PREFIX=gl_ -c -o $@ $<
endif
ifneq ($(shell command -v clang++ 2>/dev/null),)
RVT_UNWIND_OBJ += $(OBJ)/tests/tracer/unwind_cl.o
$(OBJ)/tests/tracer/test_unwind.o: CPPFLAGS += -DUNWIND_HAVE_CLANG
$(OBJ)/tests/tracer/unwind_cl.o: tests/tracer/unwind_cxx.cc tests/tracer/unwind_fix.h
	@mkdir -p $(@D)
	clang++ $(OPT) -g -fPIC $(SANFLAGS) -Itests/tracer -finstrument-functions-after-inlining \
	  -DUF_PREFIX=cl_ -c -o $@ $<
endif
$(OBJ)/tests/tracer/test_unwind.o: CPPFLAGS += -DRVT_SRC_DIR='"$(CURDIR)"' -DRVT_BUILD_DIR='"$(BUILD)"' \
	-DRVT_SANFLAGS='"$(SANFLAGS)"'
$(eval $(call rv_test,tracer,unwind,$(RVT_UNWIND_OBJ) $(RVT_TEST_OBJ),$(RVT_LDLIBS) -lstdc++,system tsan ci))

# test_frames (integration): real programs as child processes.  frames_fix
# four ways — gcc call mode (gc: the hand-written hooks), inline mode (gi:
# the x86-64 stubs) and inline mode with the C trace point (gp, as aarch64
# and ThreadSanitizer builds have it), and clang, whose only mode rvcc uses
# is call mode after inlining (cc; when clang is installed, the test skips
# it otherwise); exec_fix and malloc_fix in gcc call mode.
RVT_FRAMES_FIX := $(addprefix $(TBIN)/tracer/,frames_gc frames_gi frames_gp exec_fix malloc_fix)
RVT_FIX_LINK = $(CC) $(LDFLAGS) -o $@ $< $(LIBRVTRACE_A) $(RVT_LDLIBS)
$(OBJ)/tests/tracer/frames_gc.o: tests/tracer/frames_fix.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions -c -o $@ $<
$(OBJ)/tests/tracer/frames_gi.o: tests/tracer/frames_fix.c tracer/include/rearview/trace-inline.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions \
	  -include tracer/include/rearview/trace-inline.h -c -o $@ $<
$(OBJ)/tests/tracer/frames_gp.o: tests/tracer/frames_fix.c tracer/include/rearview/trace-inline.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) $(CFLAGS) -finstrument-functions -DRVT_INLINE_PORTABLE \
	  -include tracer/include/rearview/trace-inline.h -c -o $@ $<
ifneq ($(shell command -v clang 2>/dev/null),)
RVT_FRAMES_FIX += $(TBIN)/tracer/frames_cc
$(OBJ)/tests/tracer/frames_cc.o: tests/tracer/frames_fix.c
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(RVT_TEST_CPPFLAGS) -std=c11 $(OPT) -g -fPIC $(SANFLAGS) \
	  -finstrument-functions-after-inlining -c -o $@ $<
endif
$(OBJ)/tests/tracer/exec_fix.o $(OBJ)/tests/tracer/malloc_fix.o: CFLAGS += -finstrument-functions
$(RVT_FRAMES_FIX): $(TBIN)/tracer/%: $(OBJ)/tests/tracer/%.o $(LIBRVTRACE_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(RVT_FIX_LINK)
$(OBJ)/tests/tracer/test_frames.o: CPPFLAGS += -Itracer/analysis/include \
	-DRVT_FIX_DIR='"$(abspath $(TBIN))/tracer"'
$(eval $(call rv_test,tracer,frames,$(LIB)/librvanalysis.a,$$(RVA_LIBS),integration plain))
$(TBIN)/tracer/test_frames: | $(RVT_FRAMES_FIX)
