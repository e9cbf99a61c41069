# SPDX-License-Identifier: Apache-2.0
# Rearview — the one entry point.
#
#   make            build everything into build/ (bin/, lib/, gen/)
#   make check      what CI runs (.ci/run): install missing dependencies, then
#                   lint, build with DEVELOPER=1 and run every test (build/),
#                   build with ASan+UBSan and run every test again (build/san;
#                   LeakSanitizer on, so the torture tests also prove no leak);
#                   the server suite runs a second time on PostgreSQL
#   make check-pg   only that: the server suite with RVS_TEST_STORE=pg (build/)
#   make test       the quick developer loop: build, run every test (build/)
#   make asan|ubsan run the suite under AddressSanitizer / UBSan (build/asan, build/ubsan)
#   make tsan       run the concurrency tests under ThreadSanitizer (build/tsan)
#   make bench      benchmarks (results go in each component's BENCHMARKS.md)
#   make bench-real the real programs (zstd, sqlite3, lua, gzip, bc, cmark) plain and through rvcc
#   make lint       clang-format check and banned-call check
#   make install    PREFIX=/usr/local DESTDIR=
#   DEVELOPER=1     strict warnings as errors
#
# Non-recursive: each component contributes a fragment (proto/proto.mk, …)
# that appends to the lists below.  The only recursion is the outer make,
# which makes sure the Debian dependencies are present and then runs the
# real goals with RV_INNER=1, so pkg-config sees the installed libraries.

PUBLIC_GOALS := all check check-pg test bench bench-real asan ubsan tsan lint install demo fuzz

ifeq ($(RV_INNER),)

.DEFAULT_GOAL := all
$(PUBLIC_GOALS):
	@sh deploy/install-deps.sh
	@$(MAKE) --no-print-directory RV_INNER=1 $@

clean:
	rm -rf build

.DEFAULT:
	@$(MAKE) --no-print-directory RV_INNER=1 $@

.PHONY: $(PUBLIC_GOALS) clean

else # RV_INNER: the real build

.DEFAULT_GOAL := all
.SUFFIXES:
.DELETE_ON_ERROR:

ifeq ($(origin CC),default)
CC := gcc
endif
PKG_CONFIG ?= pkg-config
PROTOC_C   ?= protoc-c
PREFIX     ?= /usr/local
DESTDIR    ?=

# A flavour gets its own tree so sanitized and plain objects never mix.
BUILD ?= build
BIN   := $(BUILD)/bin
LIB   := $(BUILD)/lib
GEN   := $(BUILD)/gen
OBJ   := $(BUILD)/obj
TBIN  := $(BUILD)/tests

OPT      ?= -O2
SANFLAGS ?=
WARN := -Wall -Wextra -Wformat=2 -Wno-unused-parameter -Wshadow \
        -Wstrict-prototypes -Wmissing-prototypes -Wvla
ifeq ($(DEVELOPER),1)
WARN += -Werror -Wcast-align -Wpointer-arith -Wwrite-strings -Wundef
endif

CPPFLAGS := -D_GNU_SOURCE -Iproto/include -I$(GEN)
CFLAGS   := -std=c11 $(OPT) -g -fPIC $(WARN) $(SANFLAGS) -MMD -MP
LDFLAGS  := $(SANFLAGS)

pc = $(shell $(PKG_CONFIG) $(1) $(2))
PROTOBUF_CFLAGS := $(call pc,--cflags,libprotobuf-c)
PROTOBUF_LIBS   := $(call pc,--libs,libprotobuf-c)
CMOCKA_CFLAGS   := $(call pc,--cflags,cmocka)
CMOCKA_LIBS     := $(call pc,--libs,cmocka)

# Filled in by the fragments.
BINS        :=   # installed executables
LIBS        :=   # installed libraries
LIBS_REARVIEW :=  # installed into lib/rearview/ (rvcc's compiler plugins)
TESTS       :=   # test binaries run by `make check`
TSAN_TESTS  :=   # the subset that exercises concurrency
BENCHES     :=   # benchmark binaries run by `make bench`
FUZZ        :=   # libFuzzer targets, built by `make fuzz` (clang, build/fuzz)
INSTALL_HDR :=   # public headers, installed under include/rearview/

# rv_test(component, unit, extra objects/libraries, extra ldlibs, [tsan])
# Builds tests/<component>/test_<unit>.c into $(TBIN)/<component>/test_<unit>.
define rv_test
$(TBIN)/$(1)/test_$(2): $(OBJ)/tests/$(1)/test_$(2).o $(3)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $(4) $$(CMOCKA_LIBS) -lpthread
$(OBJ)/tests/$(1)/test_$(2).o: CPPFLAGS += $$(CMOCKA_CFLAGS)
TESTS += $(TBIN)/$(1)/test_$(2)
ifneq ($(5),)
TSAN_TESTS += $(TBIN)/$(1)/test_$(2)
endif
endef

# Objects depend on the compiler and flags they were built with, so
# `make DEVELOPER=1` or `CC=clang make` after a plain build rebuilds everything.
# `make check` and `make lint` compile nothing themselves (check's stages are
# sub-makes with their own flags), so they leave the stamp alone: otherwise
# check's plain parse would make its DEVELOPER=1 stage rebuild every time.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW   := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)
ifneq ($(if $(MAKECMDGOALS),$(filter-out check check-pg check-pg-stage lint,$(MAKECMDGOALS)),all),)
ifneq ($(FLAGS_NOW),$(shell cat $(FLAGS_STAMP) 2>/dev/null))
$(shell mkdir -p $(BUILD) && echo '$(FLAGS_NOW)' > $(FLAGS_STAMP))
endif
endif

include proto/proto.mk
include proto/common/common.mk
include tracer/tracer.mk
include policy/policy.mk
include device/device.mk
include server/server.mk
include deploy/deploy.mk
include tests/tests.mk

$(OBJ)/%.o: %.c $(FLAGS_STAMP) | $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Every program links librvcommon (proto/common/common.mk): a prerequisite
# here puts it on each link line after the component libraries that use it.
$(BINS) $(TESTS) $(BENCHES) $(FUZZ): $(LIBRVCOMMON)

all: $(BINS) $(LIBS) $(TESTS)

# Every test binary runs even when an earlier one fails; the runner prints
# the one closing line `N passed, N failed[, N skipped]` and exits non-zero
# on failure.  With RV_TALLY=FILE it adds its counts to FILE and prints a
# stage line instead (`make check` sums the stages).
test: all
	@sh tests/run-tests.sh $(if $(RV_TALLY),--tally $(RV_TALLY)) $(TESTS)

# `make check`: every stage runs even when an earlier one fails; each adds
# its counts to one tally (lint and a failed build count as one failure)
# and the last line sums them all, so CI's judge reads one closing line.
# Stages build with -j$(RV_JOBS) unless make was given -j.
# Tests a sanitizer cannot run are left out by their fragments
# (ifeq ($(SANFLAGS),): the aarch64 cross test under qemu).
RV_JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
RV_SUBMAKE  = $(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(RV_JOBS))
CHECK_TALLY := build/.check-tally
SAN_BUILD   := BUILD=build/san OPT=-O1 \
  SANFLAGS='-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer'
check:
	@mkdir -p build && rm -f $(CHECK_TALLY)
	@echo '== check 1/4: lint'
	@$(MAKE) --no-print-directory lint && echo '1 0 0' >> $(CHECK_TALLY) \
	  || echo '0 1 0' >> $(CHECK_TALLY)
	@echo '== check 2/4: DEVELOPER=1 build and tests (build/)'
	@if $(RV_SUBMAKE) DEVELOPER=1 all; then \
	  $(MAKE) --no-print-directory DEVELOPER=1 RV_TALLY=$(CHECK_TALLY) test || true; \
	else echo 'check: the DEVELOPER=1 build failed'; echo '0 1 0' >> $(CHECK_TALLY); fi
	@echo '== check 3/4: the server suite on PostgreSQL (build/, RVS_TEST_STORE=pg)'
	@$(MAKE) --no-print-directory check-pg-stage
	@echo '== check 4/4: ASan+UBSan build and tests (build/san)'
	@if $(RV_SUBMAKE) $(SAN_BUILD) all; then \
	  $(MAKE) --no-print-directory $(SAN_BUILD) RV_TALLY=$(CHECK_TALLY) test || true; \
	else echo 'check: the sanitizer build failed'; echo '0 1 0' >> $(CHECK_TALLY); fi
	@sh tests/run-tests.sh --total $(CHECK_TALLY)

# The server suite (every tests/server test binary) a second time, on a
# private PostgreSQL 15 per test program (RVS_TEST_STORE=pg,
# tests/server/store_env.h), in the DEVELOPER=1 build; not in the sanitizer
# stage (time).  Without PostgreSQL 15 installed it says so and counts one
# skip.  `make check-pg` runs only this stage and its closing line.
PG_INITDB    := /usr/lib/postgresql/15/bin/initdb
SERVER_TESTS  = $(filter $(TBIN)/server/%,$(TESTS))
test-pg: all
	@RVS_TEST_STORE=pg sh tests/run-tests.sh $(if $(RV_TALLY),--tally $(RV_TALLY)) \
	  $(SERVER_TESTS)
check-pg-stage:
	@mkdir -p build
	@if [ ! -x $(PG_INITDB) ]; then \
	  echo 'check: no PostgreSQL 15 ($(PG_INITDB)): the server suite on PostgreSQL skipped'; \
	  echo '0 0 1' >> $(CHECK_TALLY); \
	elif $(RV_SUBMAKE) DEVELOPER=1 all; then \
	  $(MAKE) --no-print-directory DEVELOPER=1 RV_TALLY=$(CHECK_TALLY) test-pg || true; \
	else echo 'check: the DEVELOPER=1 build failed'; echo '0 1 0' >> $(CHECK_TALLY); fi
check-pg:
	@mkdir -p build && rm -f $(CHECK_TALLY)
	@$(MAKE) --no-print-directory check-pg-stage
	@sh tests/run-tests.sh --total $(CHECK_TALLY)

asan:
	@$(MAKE) --no-print-directory BUILD=build/asan OPT=-O1 \
	  SANFLAGS='-fsanitize=address -fno-omit-frame-pointer' test
ubsan:
	@$(MAKE) --no-print-directory BUILD=build/ubsan OPT=-O1 \
	  SANFLAGS='-fsanitize=undefined -fno-sanitize-recover=undefined' test
tsan:
	@$(MAKE) --no-print-directory BUILD=build/tsan OPT=-O1 \
	  SANFLAGS='-fsanitize=thread' tsan-run
tsan-run: $(TSAN_TESTS)
	@TSAN_OPTIONS=halt_on_error=1 sh tests/run-tests.sh $(TSAN_TESTS)

# Fuzz targets run FUZZ_SECONDS each, seeded from tests/fuzz/<name>_corpus/ (real
# inputs, committed) into a working corpus under build/fuzz/corpus/<name>/.
# `make check` replays the corpora deterministically instead.
FUZZ_SECONDS ?= 60
fuzz:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang OPT=-O1 \
	  SANFLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer' RV_FUZZ=1 fuzz-run
fuzz-run: $(FUZZ)
	@set -e; for f in $(FUZZ); do n=$$(basename $$f); c=tests/fuzz/$${n}_corpus; \
	  mkdir -p $(BUILD)/corpus/$$n; echo "== $$n"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=1024 $(BUILD)/corpus/$$n \
	    $$( [ -d $$c ] && echo $$c ); done

bench: $(BENCHES)
	@set -e; for b in $(BENCHES); do echo "== $$b"; $$b; done

LINT_SRC = $(shell git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null)
lint:
	@sh tests/lint.sh $(LINT_SRC)
	@sh tests/lint-spdx.sh
	@sh device/settings/po/update-pot.sh --check

RV_VERSION := 0.1.0
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
DOCDIR     ?= $(PREFIX)/share/doc/rearview
UNITDIR    ?= $(PREFIX)/lib/systemd/system
RV_SUBST    = sed -e 's|@PREFIX@|$(2)|g' -e 's|@VERSION@|$(RV_VERSION)|g' \
	        -e 's|@BINDIR@|$(2)/bin|g' -e 's|@SYSCONFDIR@|$(3)|g' \
	        -e 's|@DOCDIR@|$(2)/share/doc/rearview|g'
RV_DOCS    := README.md tracer/FORMAT.md tracer/RVTRACE.md device/README.md server/OPERATIONS.md \
	      server/README.md server/API.md server/SCHEMA.md policy/README.md \
	      proto/README.md

# $(call rv_install,DESTDIR,PREFIX,SYSCONFDIR): binaries, libraries, headers,
# pkg-config file, systemd units, sysusers/tmpfiles snippets, the D-Bus
# policy and interface file and the polkit actions (deploy/dbus/), the example
# configs (also as the default /etc/rearview/rearviewd.conf: every line in it
# is a commented default) and the components' docs.
define rv_install
	install -d $(1)$(2)/bin $(1)$(2)/lib $(1)$(2)/include/rearview $(1)$(2)/lib/pkgconfig \
	  $(1)$(2)/lib/sysusers.d $(1)$(2)/lib/tmpfiles.d $(1)$(2)/lib/systemd/system \
	  $(1)$(3)/rearview $(1)$(2)/share/doc/rearview/examples \
	  $(1)$(2)/share/dbus-1/system.d $(1)$(2)/share/dbus-1/interfaces $(1)$(2)/share/polkit-1/actions \
	  $(1)$(2)/share/applications $(1)$(2)/share/rearview/po
	install -m 0644 device/settings/rearview-settings.desktop $(1)$(2)/share/applications/
	install -m 0644 device/settings/po/rearview-settings.pot $(1)$(2)/share/rearview/po/
	install -m 0644 deploy/dbus/org.rearview.Daemon1.conf $(1)$(2)/share/dbus-1/system.d/
	install -m 0644 deploy/dbus/org.rearview.Daemon1.xml $(1)$(2)/share/dbus-1/interfaces/
	install -m 0644 deploy/dbus/org.rearview.policy $(1)$(2)/share/polkit-1/actions/
	$(call RV_SUBST,,$(2),$(3)) deploy/rearview-trace.pc.in > $(1)$(2)/lib/pkgconfig/rearview-trace.pc
	$(call RV_SUBST,,$(2),$(3)) deploy/rearview-events.pc.in > $(1)$(2)/lib/pkgconfig/rearview-events.pc
	for u in rearviewd rearview-server; do \
	  $(call RV_SUBST,,$(2),$(3)) deploy/$$u.service.in > $(1)$(2)/lib/systemd/system/$$u.service; \
	done
	install -m 0644 deploy/rearview.sysusers $(1)$(2)/lib/sysusers.d/rearview.conf
	install -m 0644 deploy/rearview.tmpfiles $(1)$(2)/lib/tmpfiles.d/rearview.conf
	install -m 0644 deploy/rearviewd.conf.example deploy/rearview-server.conf.example \
	  $(1)$(2)/share/doc/rearview/examples/
	test -e $(1)$(3)/rearview/rearviewd.conf || \
	  install -m 0644 deploy/rearviewd.conf.example $(1)$(3)/rearview/rearviewd.conf
	for d in $(RV_DOCS); do \
	  install -D -m 0644 $$d $(1)$(2)/share/doc/rearview/$$d || exit 1; \
	done
	$(if $(BINS),install -m 0755 $(BINS) $(1)$(2)/bin)
	$(if $(LIBS),install -m 0644 $(LIBS) $(1)$(2)/lib)
	$(if $(LIBS_REARVIEW),install -D -m 0644 -t $(1)$(2)/lib/rearview $(LIBS_REARVIEW))
	$(if $(INSTALL_HDR),install -m 0644 $(INSTALL_HDR) $(1)$(2)/include/rearview)
	install -m 0644 $(PROTO_H) $(1)$(2)/include/rearview
	if [ -e build/web/speedscope/index.html ]; then \
	  install -d $(1)$(2)/share/rearview/web/speedscope && \
	  cp -RL build/web/speedscope/. $(1)$(2)/share/rearview/web/speedscope/; fi
endef

install: $(BINS) $(LIBS) $(PROTO_H)
	$(call rv_install,$(DESTDIR),$(PREFIX),$(SYSCONFDIR))

.PHONY: all check check-pg check-pg-stage test-pg test asan ubsan tsan tsan-run bench lint install demo fuzz fuzz-run

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

endif
