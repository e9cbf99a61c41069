# SPDX-License-Identifier: Apache-2.0
# rvlua — Lua 5.4 from Debian's lua5.4 source with Rearview's trace points in
# its call and return paths (tracer/runtimes/lua/README.md).  Lua's sources are
# never in the repository: tracer/runtimes/lua/fetch.sh unpacks them once into
# build/real/src/lua.  `make` builds $(BIN)/rvlua (and `make install` installs
# it) only when that source is already there; `make rvlua` fetches it first.
# Not in sanitizer flavours (the interpreter is built by build.sh, without
# their flags).  `make check` runs tests/tracer/test_rvlua.sh, which fetches
# and builds through tests/bench/real/lua.sh, or skips visibly.

RVLUA      := $(BIN)/rvlua
RVLUA_TOP  := $(firstword $(wildcard build/real/src/lua/lua5.4-*/src/lua.c))
RVLUA_DEPS := $(LIBRVTRACE_A) $(LIBRVPROTO) $(wildcard tracer/runtimes/lua/*) \
              tracer/include/rearview/trace.h tracer/include/rearview/trace-inline.h \
              tracer/include/rearview/trace-runtime.h $(RV_VERSION_H)

# The installed interpreter is built with the project's compiler, hardening
# and the user's flags, in its own directory: build/real/lua/rv stays the
# benchmark's, built with the same flags as its uninstrumented twin.
RVLUA_CFLAGS = $(OPT) -g $(RV_HARDEN_CPPFLAGS) $(RV_USER_CPPFLAGS) $(RV_HARDEN_CFLAGS) \
               $(RV_USER_CFLAGS)
$(RVLUA): $(RVLUA_DEPS) $(FLAGS_STAMP)
	@rm -f $(BUILD)/real/lua/installed/rvlua
	@top=$$(ls -d build/real/src/lua/lua5.4-*/ | head -n 1) && \
	  LUA_CC='$(CC)' LUA_LDFLAGS='$(LDFLAGS)' LUA_CFLAGS='$(RVLUA_CFLAGS)' \
	  sh tracer/runtimes/lua/build.sh rv "$${top%/}" $(BUILD)/real/lua/installed $(BUILD)
	@mkdir -p $(@D)
	cp $(BUILD)/real/lua/installed/rvlua $@

rvlua: $(LIBRVTRACE_A) $(LIBRVPROTO)
	sh tracer/runtimes/lua/fetch.sh build/real/src/lua >/dev/null
	@$(MAKE) --no-print-directory $(RVLUA)

ifeq ($(SANFLAGS),)
ifneq ($(RVLUA_TOP),)
BINS += $(RVLUA)
endif

$(TBIN)/tracer/test_rvlua: tests/tracer/test_rvlua.sh
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh "%s" "%s"\n' "$(abspath $<)" "$(CURDIR)" > $@
	chmod +x $@
$(eval $(call rv_register,$(TBIN)/tracer/test_rvlua,system))
endif

.PHONY: rvlua
