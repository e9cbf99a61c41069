# SPDX-License-Identifier: Apache-2.0
# proto/common/ — librvcommon: the helpers every component shares (whole
# reads and writes, the atomic file write, sqlite rc → errno, the JSON
# string escaper, the services' one log line, whole-file reads, the
# configuration drop-in directories;
# rearview/common.h).  One static, PIC, hidden-visibility
# library, never installed.  Every program and test links it (the top
# Makefile makes it a prerequisite of each); librvtrace.a carries the
# objects librvtrace needs, so the installed archive links on its own.

RVC_SRC := proto/common/src/io.c proto/common/src/atomic.c proto/common/src/json.c \
           proto/common/src/sqlite.c proto/common/src/log.c proto/common/src/file.c \
           proto/common/src/version.c proto/common/src/confd.c
RVC_OBJ := $(RVC_SRC:%.c=$(OBJ)/%.o)
# What librvtrace uses (no sqlite, no stdio escaper).
RVC_TRACE_OBJ := $(OBJ)/proto/common/src/io.o $(OBJ)/proto/common/src/atomic.o

RV_CPPFLAGS += -Iproto/common/include
$(OBJ)/proto/common/%.o: CFLAGS += -fvisibility=hidden
$(OBJ)/proto/common/src/sqlite.o: CPPFLAGS += $(call pc,--cflags,sqlite3)

LIBRVCOMMON := $(LIB)/librvcommon.a
$(LIBRVCOMMON): $(RVC_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

$(eval $(call rv_test,common,io,$(LIBRVCOMMON),,unit))
$(eval $(call rv_test,common,atomic,$(LIBRVCOMMON),,unit))
$(eval $(call rv_test,common,json,$(LIBRVCOMMON),,unit))
$(eval $(call rv_test,common,sqlite,$(LIBRVCOMMON),,unit))
$(eval $(call rv_test,common,log,$(LIBRVCOMMON),,unit))
