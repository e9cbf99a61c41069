# SPDX-License-Identifier: Apache-2.0
# Rearview — the one entry point.
#
#   make            build everything into build/ (bin/, lib/, gen/)
#   make check      what CI runs (.ci/run): install missing dependencies, then
#                   lint; build with DEVELOPER=1 and run the unit, integration
#                   and torture tests and a chosen few system tests (build/);
#                   the server tests flagged `pg` again on PostgreSQL; build
#                   with ASan+UBSan and run the unit, integration and torture
#                   tests again (build/san; LeakSanitizer on, so the torture
#                   tests also prove no leak).  One PostgreSQL cluster serves
#                   the whole run.  Test tiers: see rv_register below.
#   make check-full every tier on every stage (before an issue is resolved)
#   make check-pg   only the server tests flagged `pg`, on PostgreSQL (build/)
#   make test       the quick developer loop: build, run the unit and
#                   integration tests (build/); TIERS="system" (or any
#                   tiers) for others; RV_TEST_JOBS=N binaries at once
#   make asan|ubsan run the suite under AddressSanitizer / UBSan (build/asan, build/ubsan)
#   make tsan       run the concurrency tests under ThreadSanitizer (build/tsan)
#   make bench      benchmarks (results go in each component's BENCHMARKS.md)
#   make bench-real the real programs (zstd, sqlite3, lua, gzip, bc, cmark) plain and through rvcc
#   make lint       clang-format check and banned-call check
#   make install    PREFIX=/usr/local DESTDIR= (and LIBDIR=, UNITDIR=, …: see
#                   "Install directories" below); make programs builds only
#                   what it installs
#   DEVELOPER=1     strict warnings as errors
#
# Non-recursive: each component contributes a fragment (proto/proto.mk, …)
# that appends to the lists below.  The only recursion is the outer make,
# which makes sure the Debian dependencies are present and then runs the
# real goals with RV_INNER=1, so pkg-config sees the installed libraries.

PUBLIC_GOALS := all check check-full check-pg test bench bench-real asan ubsan tsan lint install demo fuzz device

ifeq ($(RV_INNER),)

# With CROSS=TRIPLET only the device side is built (deploy/cross.mk), after
# its sysroot exists (the inner make reads it with pkg-config as it starts).
.DEFAULT_GOAL := $(if $(CROSS),device,all)
$(PUBLIC_GOALS):
	@sh deploy/install-deps.sh
	$(if $(CROSS),@$(MAKE) --no-print-directory RV_INNER=1 sysroot)
	@$(MAKE) --no-print-directory RV_INNER=1 $@

clean:
	rm -rf build

.DEFAULT:
	@$(MAKE) --no-print-directory RV_INNER=1 $@

.PHONY: $(PUBLIC_GOALS) clean

else # RV_INNER: the real build

.DEFAULT_GOAL := $(if $(CROSS),device,all)
.SUFFIXES:
.DELETE_ON_ERROR:

# CROSS=TRIPLET (e.g. aarch64-linux-gnu): the device side built for another
# machine with Debian's cross compiler against a Debian sysroot of that
# architecture, SYSROOT (default build/sysroot-ARCH, made by `make sysroot
# CROSS=…`: deploy/cross-sysroot.sh); deploy/cross.mk has the goals.
ifneq ($(CROSS),)
CROSS_ARCH := $(shell dpkg-architecture -t $(CROSS) -qDEB_HOST_ARCH 2>/dev/null)
SYSROOT    ?= $(CURDIR)/build/sysroot-$(CROSS_ARCH)
ifeq ($(origin CC),default)
CC := $(CROSS)-gcc
endif
ifeq ($(origin AR),default)
AR := $(CROSS)-ar
endif
PKG_CONFIG := PKG_CONFIG_SYSROOT_DIR=$(SYSROOT) PKG_CONFIG_PATH= \
  PKG_CONFIG_LIBDIR=$(SYSROOT)/usr/lib/$(CROSS)/pkgconfig:$(SYSROOT)/usr/share/pkgconfig pkg-config
RV_CROSS_FLAGS := --sysroot=$(SYSROOT)
endif
ifeq ($(origin CC),default)
CC := gcc
endif
PKG_CONFIG ?= pkg-config
PROTOC_C   ?= protoc-c
DESTDIR    ?=

# The one version: programs' --version ($(GEN)/rv_version.h), the
# pkg-config files, the shared libraries' SONAMEs (librvtrace.so.MAJOR) and
# symbol versions, and the Debian package (debian/changelog must agree:
# `make lint` runs tests/lint-version.sh).  MAJOR changes when the ABI of
# librvtrace or librvevents breaks.
RV_VERSION   := 0.1.0
RV_SOVERSION := $(firstword $(subst ., ,$(RV_VERSION)))

# A flavour gets its own tree so sanitized and plain objects never mix.
# CROSS=TRIPLET (e.g. aarch64-linux-gnu) builds the device side for that
# machine against a Debian sysroot (deploy/cross.mk).
BUILD ?= $(if $(CROSS),build/$(CROSS),build)
BIN   := $(BUILD)/bin
LIB   := $(BUILD)/lib
GEN   := $(BUILD)/gen
OBJ   := $(BUILD)/obj
TBIN  := $(BUILD)/tests

OPT      ?= -O2
# Debug information: full by default; `make check`'s sanitizer build asks
# for line tables only (-g1: its reports still name file and line, its
# compiles cost ~12 % less CPU).
RV_DEBUG ?= -g
SANFLAGS ?=
WARN := -Wall -Wextra -Wformat=2 -Wno-unused-parameter -Wshadow \
        -Wstrict-prototypes -Wmissing-prototypes -Wvla
ifeq ($(DEVELOPER),1)
WARN += -Werror -Wcast-align -Wpointer-arith -Wwrite-strings -Wundef
endif

# Flags, the GNU way: CPPFLAGS, CFLAGS and LDFLAGS belong to whoever runs
# make (a packager's dpkg-buildflags, a developer's -O0 -g3), from the
# command line or the environment.  The project's own flags are RV_CPPFLAGS,
# RV_CFLAGS and RV_LDFLAGS, and the user's come after them, so they add to
# ours and win where the two conflict (-O0 after -O2).  CPPFLAGS, CFLAGS and
# LDFLAGS are then redefined as that sum (override: a command-line value
# would otherwise make make ignore the redefinition), so every rule and
# every target-specific `CFLAGS += …` of the fragments sees both; a global
# addition goes to RV_CPPFLAGS / RV_CFLAGS / RV_LDFLAGS.
RV_USER_CPPFLAGS := $(CPPFLAGS)
RV_USER_CFLAGS   := $(CFLAGS)
RV_USER_LDFLAGS  := $(LDFLAGS)

# Hardening, on by default (HARDEN=0 turns it off): stack protector, stack
# clash probes, control-flow protection (x86 CET marks; aarch64 BTI and
# pointer authentication), full RELRO with immediate binding, PIE (the
# compiler's default on Debian: every object is built -fPIC and Debian's gcc
# and clang link executables -pie; `-pie` cannot go in LDFLAGS, which also
# link the shared libraries).  _FORTIFY_SOURCE=2 needs optimisation; it is
# left out when the user's CPPFLAGS set a level of their own, and under the
# sanitizers, which check every access themselves: with it, a read() past a
# stack buffer ends in glibc's "buffer overflow detected" abort (__read_chk)
# instead of ASan's report naming the variable (tried, gcc 12: memcpy is
# reported by ASan either way).  The trace point's cost with these flags is
# in tracer/BENCHMARKS.md ("Hardening flags").
HARDEN ?= 1
RV_ARCH := $(shell $(CC) -dumpmachine 2>/dev/null)
ifeq ($(HARDEN),1)
RV_HARDEN_CFLAGS := -fstack-protector-strong -fstack-clash-protection
ifneq ($(filter x86_64% i686% i386%,$(RV_ARCH)),)
RV_HARDEN_CFLAGS += -fcf-protection
endif
ifneq ($(filter aarch64%,$(RV_ARCH)),)
RV_HARDEN_CFLAGS += -mbranch-protection=standard
endif
RV_HARDEN_CPPFLAGS := $(if $(SANFLAGS)$(findstring _FORTIFY_SOURCE,$(RV_USER_CPPFLAGS)),,\
                        -D_FORTIFY_SOURCE=2)
RV_HARDEN_LDFLAGS := -Wl,-z,relro -Wl,-z,now
endif

RV_CPPFLAGS := -D_GNU_SOURCE -Iproto/include -I$(GEN) $(RV_HARDEN_CPPFLAGS)
RV_CFLAGS   := $(RV_CROSS_FLAGS) -std=c11 $(OPT) $(RV_DEBUG) -fPIC $(WARN) $(RV_HARDEN_CFLAGS) $(SANFLAGS) \
               -MMD -MP
RV_LDFLAGS  := $(RV_CROSS_FLAGS) $(RV_HARDEN_LDFLAGS) $(SANFLAGS)
override CPPFLAGS = $(RV_CPPFLAGS) $(RV_USER_CPPFLAGS)
override CFLAGS   = $(RV_CFLAGS) $(RV_USER_CFLAGS)
override LDFLAGS  = $(RV_LDFLAGS) $(RV_USER_LDFLAGS)

# Programs print RV_VERSION from this header (`--version`); rewritten only
# when the version changes, so objects that include it rebuild then.
RV_VERSION_H    := $(GEN)/rv_version.h
RV_VERSION_LINE := \#define RV_VERSION "$(RV_VERSION)"
ifneq ($(shell cat $(RV_VERSION_H) 2>/dev/null),$(RV_VERSION_LINE))
$(shell mkdir -p $(GEN) && echo '$(RV_VERSION_LINE)' > $(RV_VERSION_H))
endif

# Install directories (GNU names in capitals), each settable on the command
# line; DESTDIR is prepended to all of them.  The defaults follow PREFIX
# (RV_DEFAULT_x: the test prefix of deploy/deploy.mk reuses them), with the
# libraries in the multiarch directory (Debian's DEB_HOST_MULTIARCH, else
# what the compiler reports).  With PREFIX=/usr/local, systemd reads the
# units, sysusers.d and tmpfiles.d files there, but D-Bus and polkit read
# only /usr/share and /etc: `make install` says so (RV_INSTALL_NOTES) and
# names DBUSDIR= and POLKITDIR= values they do read.  rvcc looks for its
# plugins in LIBDIR/rearview (PKGLIBDIR's default).
PREFIX    ?= /usr/local
ifeq ($(origin MULTIARCH),undefined)
MULTIARCH := $(or $(DEB_HOST_MULTIARCH),$(shell $(CC) -print-multiarch 2>/dev/null))
endif
RV_DEFAULT_BINDIR       = $(PREFIX)/bin
RV_DEFAULT_SBINDIR      = $(PREFIX)/sbin
RV_DEFAULT_LIBDIR       = $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
RV_DEFAULT_PKGLIBDIR    = $(LIBDIR)/rearview
RV_DEFAULT_PKGCONFIGDIR = $(LIBDIR)/pkgconfig
RV_DEFAULT_INCLUDEDIR   = $(PREFIX)/include
RV_DEFAULT_DATADIR      = $(PREFIX)/share
RV_DEFAULT_DOCDIR       = $(DATADIR)/doc/rearview
RV_DEFAULT_MANDIR       = $(DATADIR)/man
RV_DEFAULT_LOCALEDIR    = $(DATADIR)/locale
RV_DEFAULT_APPSDIR      = $(DATADIR)/applications
RV_DEFAULT_SYSCONFDIR   = $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
RV_DEFAULT_UNITDIR      = $(PREFIX)/lib/systemd/system
RV_DEFAULT_SYSUSERSDIR  = $(PREFIX)/lib/sysusers.d
RV_DEFAULT_TMPFILESDIR  = $(PREFIX)/lib/tmpfiles.d
RV_DEFAULT_DBUSDIR      = $(DATADIR)/dbus-1
RV_DEFAULT_POLKITDIR    = $(DATADIR)/polkit-1/actions
RV_INSTALL_DIRS := BINDIR SBINDIR LIBDIR PKGLIBDIR PKGCONFIGDIR INCLUDEDIR DATADIR DOCDIR \
                   MANDIR LOCALEDIR APPSDIR SYSCONFDIR UNITDIR SYSUSERSDIR TMPFILESDIR DBUSDIR \
                   POLKITDIR
$(foreach d,$(RV_INSTALL_DIRS),$(eval $(d) ?= $$(RV_DEFAULT_$(d))))
# Objects with install directories compiled in (rvcc's) depend on this
# stamp, so `make install PREFIX=/usr` after a plain build rebuilds them
# rather than installing a program that looks in /usr/local.
RV_DIRS_STAMP := $(BUILD)/.install-dirs
ifneq ($(PREFIX) $(LIBDIR) $(INCLUDEDIR),$(shell cat $(RV_DIRS_STAMP) 2>/dev/null))
$(shell mkdir -p $(BUILD) && echo '$(PREFIX) $(LIBDIR) $(INCLUDEDIR)' > $(RV_DIRS_STAMP))
endif

# (Cross builds look up every package, the sysroot holds the device side's.)
# Each answer is asked once per make: the fragments' target-specific flags
# call pc for every object they compile (about 450 pkg-config runs a build).
rv_space := $(subst ,, )
pc_key = rv_pc$(subst $(rv_space),_,$(strip $(1))_$(strip $(2)))
pc = $(if $(filter undefined,$(origin $(pc_key))),$(eval $(pc_key) := $(shell $(PKG_CONFIG) $(1) \
  $(2) $(if $(CROSS),2>/dev/null))))$($(pc_key))
PROTOBUF_CFLAGS := $(call pc,--cflags,libprotobuf-c)
PROTOBUF_LIBS   := $(call pc,--libs,libprotobuf-c)
CMOCKA_CFLAGS   := $(call pc,--cflags,cmocka)
CMOCKA_LIBS     := $(call pc,--libs,cmocka)

# Filled in by the fragments.
BINS        :=   # installed executables
LIBS        :=   # installed libraries (static archives and SHLIBS) and modules
SHLIBS      :=   # versioned shared libraries, by their link name (lib/libx.so)
LIBS_REARVIEW :=  # installed into PKGLIBDIR (rvcc's compiler plugins, the Weston module)
MANS        :=   # man pages, built from scdoc sources (deploy/man.mk)
SYSTEM_TESTS :=  # slow tests of the whole system (packages, cross build): `make check-system`
TESTS       :=   # every test binary (each also in TESTS_<tier>, below)
BENCHES     :=   # benchmark binaries run by `make bench`
FUZZ        :=   # libFuzzer targets, built by `make fuzz` (clang, build/fuzz)
INSTALL_HDR :=   # public headers, installed under include/rearview/

# Test tiers (README.md, "Tests"): every test binary is registered with
# exactly one tier and any of the flags, where it is built.
#   unit         its own process only (it may fork itself to play a
#                crash), no network, under a second
#   integration  real daemon, real server, real sqlite and PostgreSQL, on
#                loopback and in temporary directories
#   system       a browser, Weston, GTK, real-program builds, install, the demo
#   torture      allocation failure and hostile input (fuzz corpora replayed)
# Flags:
#   tsan   also run by `make tsan` (it exercises concurrency)
#   pg     the server suite on PostgreSQL runs it again with RVS_TEST_STORE=pg
#   alone  cannot share the machine: the runner runs it by itself
#   ci     a system test `make check` runs (the others: `make check-full`)
#   san    a system test the sanitizer stage of `make check` runs too
#   e2e    an integration test that only drives the daemons end to end: the
#          sanitizer stage of `make check` leaves it to `make check-full`
#          (README.md "Tests" says which and why)
#   long   runs for many minutes by design (it builds real programs): its
#          hang guard is four times RV_TEST_TIMEOUT (tests/run-tests.sh)
#   plain  an integration or torture test whose verdict needs the plain
#          build: it judges code the optimiser shapes (the tracer's hot
#          path, unwinding, rvcc) or a memory bound sanitizers inflate, or
#          it skips cases under them; `make check` runs it in the
#          DEVELOPER=1 build as well as under the sanitizers
RV_TIERS := unit integration system torture
RV_FLAGS := tsan pg alone ci san e2e plain long
TESTS_unit :=
TESTS_integration :=
TESTS_system :=
TESTS_torture :=
TESTS_pg :=
TESTS_alone :=
TESTS_ci :=
TESTS_san :=
TESTS_e2e :=
TESTS_plain :=
TESTS_long :=

# rv_register(test binary, tier and flags): adds a test to the lists.
define rv_register
$(if $(filter-out $(RV_TIERS) $(RV_FLAGS),$(2)),$(error $(1): unknown tier or flag "$(filter-out $(RV_TIERS) $(RV_FLAGS),$(2))"))
$(if $(filter 1,$(words $(filter $(RV_TIERS),$(2)))),,$(error $(1): give exactly one tier of $(RV_TIERS)))
TESTS += $(1)
TESTS_$(filter $(RV_TIERS),$(2)) += $(1)
$(foreach f,$(filter $(RV_FLAGS),$(2)),TESTS_$(f) += $(1)
)
endef

# rv_test(component, unit, extra objects/libraries, extra ldlibs, tier [flags])
# Builds tests/<component>/test_<unit>.c into $(TBIN)/<component>/test_<unit>.
define rv_test
$(TBIN)/$(1)/test_$(2): $(OBJ)/tests/$(1)/test_$(2).o $(3)
	@mkdir -p $$(@D)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $(4) $$(CMOCKA_LIBS) -lpthread
$(OBJ)/tests/$(1)/test_$(2).o: CPPFLAGS += $$(CMOCKA_CFLAGS)
$(call rv_register,$(TBIN)/$(1)/test_$(2),$(5))
endef

# Objects depend on the compiler and flags they were built with, so
# `make DEVELOPER=1` or `CC=clang make` after a plain build rebuilds everything.
# `make check` and `make lint` compile nothing themselves (check's stages are
# sub-makes with their own flags), so they leave the stamp alone: otherwise
# check's plain parse would make its DEVELOPER=1 stage rebuild every time.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW   := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)
ifneq ($(if $(MAKECMDGOALS),$(filter-out check check-full check-stages check-lint check-assets check-build-dev check-build-san \
  check-run-dev check-run-pg check-run-san check-pg check-pg-stage lint,$(MAKECMDGOALS)),all),)
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
	@$(if $(wildcard $(@D)/.),,mkdir -p $(@D))
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Every program links librvcommon (proto/common/common.mk): a prerequisite
# here puts it on each link line after the component libraries that use it.
$(BINS) $(TESTS) $(BENCHES) $(FUZZ): $(LIBRVCOMMON)

all: $(BINS) $(LIBS) $(TESTS)

# The runner (tests/run-tests.sh) runs the binaries RV_TEST_JOBS at a time
# (default: one per core; RV_TEST_JOBS=1 for one after another), those
# flagged `alone` by themselves after the others, every one even when an
# earlier one fails, and prints the one closing line
# `N passed, N failed[, N skipped]` (non-zero exit on failure).  With
# RV_TALLY=FILE it adds its counts to FILE and prints a stage line instead
# (`make check` sums the stages).  It keeps each binary's time in
# $(BUILD)/.test-times and starts the slowest first next time.
RV_RUN = sh tests/run-tests.sh $(if $(RV_TEST_JOBS),-j $(RV_TEST_JOBS)) \
  --times $(BUILD)/.test-times $(if $(RV_TALLY),--tally $(RV_TALLY))
rv_run_args = $(foreach t,$(1),$(if $(filter $(t),$(TESTS_long)),--long $(t)) \
  $(if $(filter $(t),$(TESTS_alone)),--alone $(t),$(t)))

# What each goal runs (tiers: see rv_register above).
#   make test                the quick loop: unit and integration
#   make test TIERS="…"      the tiers named (e.g. TIERS=system)
#   make check               lint; in the DEVELOPER=1 build the unit tests,
#                            those flagged `plain` or `e2e` and the system
#                            tests flagged `ci`; the `pg` tests of the
#                            unit and integration tiers on PostgreSQL
#                            (DEVELOPER=1 build); unit, integration (but
#                            those flagged `e2e`), torture and the system
#                            tests flagged `san` under ASan+UBSan — so every unit,
#                            integration and torture test runs at least
#                            once, and each store in one build
#   make check-full          lint; every test on every stage
TIERS        ?= unit integration
RV_SET_test   = $(foreach t,$(TIERS),$(TESTS_$(t)))
RV_SET_check  = $(TESTS_unit) $(TESTS_plain) $(TESTS_e2e) $(TESTS_ci)
RV_SET_check_san = $(TESTS_unit) $(filter-out $(TESTS_e2e),$(TESTS_integration)) $(TESTS_torture) \
  $(TESTS_san)
RV_SET_full   = $(TESTS)
RV_SET_full_san = $(TESTS)
# The `pg` tests the PostgreSQL stage runs again: in `make check` those of the
# quick tiers (the chosen system tests run once, on sqlite: test_web on
# PostgreSQL too would cost the run a second browser story, 64 s of wall
# time), in `make check-full` all.
RV_SET_check_pg = $(TESTS_unit) $(TESTS_integration)
RV_SET_full_pg  = $(TESTS)
RV_SET_test_pg  = $(RV_SET_test)
# RV_SET names one of the sets above for run-set.
RV_SET ?= test
RV_RUN_SET = $(filter $(RV_SET_$(RV_SET)),$(TESTS))

test: all
	@sh tests/with-pg.sh $(RV_RUN) $(call rv_run_args,$(RV_SET_test))
# What the tests of a set need built: their binaries and what they run or
# load — everything `all` builds but the other test binaries (and the
# install tree only test_install uses).  A fragment that adds to `all` a
# file tests need adds it here too.
RV_RUNTIME = $(BINS) $(LIBS) $(LIBS_REARVIEW) $(DEMO_BINS) $(SETTINGS_MOS) $(RVCC_LINKS)
build-set: $(RV_RUNTIME) $(RV_RUN_SET)
run-set: build-set
	@$(RV_RUN) $(call rv_run_args,$(RV_RUN_SET))

# `make check` / `make check-full`: lint, then the DEVELOPER=1 tests, the
# `pg` tests on PostgreSQL and the sanitizer tests (tests/check-stages.sh
# runs the stages, overlapping what two cores allow).  Every stage runs even
# when an earlier one fails; each adds its counts to one tally (lint and a
# failed build count as one failure) and the last line sums them all, so
# CI's judge reads one closing line.  One PostgreSQL cluster serves the
# whole run (tests/with-pg.sh): each test program gets databases of its own
# on it.  Builds run -j$(RV_JOBS) unless make was given -j.  Tests a
# sanitizer cannot run are left out by their fragments (ifeq ($(SANFLAGS),):
# the aarch64 cross test under qemu, rvlua, the fleet demo from a clone).
# The sanitizer build makes only what its tests need (build-set: not the
# system tests it does not run), with line tables for debug information
# (RV_DEBUG=-g1: its reports still name file and line).
RV_JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
RV_SUBMAKE  = $(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(RV_JOBS))
CHECK_TALLY := build/.check-tally
# The DEVELOPER=1 stages build with line tables only, as the sanitizer
# stage does: full debug information (-g) costs a third more compile time
# (six of the largest files: 4.9 CPU seconds with -O2 -g, 3.3 with -O2
# -g1), and a failing test's backtrace still names functions and lines.
CHECK_DEV   := DEVELOPER=1 RV_DEBUG=-g1
SAN_BUILD   := BUILD=build/san OPT=-O1 RV_DEBUG=-g1 \
  SANFLAGS='-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer'
check check-full:
	@mkdir -p build && rm -f $(CHECK_TALLY)
	@sh tests/with-pg.sh $(MAKE) --no-print-directory \
	  RV_CHECK=$(if $(filter check-full,$@),full,check) check-stages
	@sh tests/run-tests.sh --total $(CHECK_TALLY)

# The stages (tests/check-stages.sh calls them; RV_CHECK: check or full).
RV_CHECK ?= check
check-stages:
	@sh tests/check-stages.sh $(RV_CHECK) $(MAKE) --no-print-directory
check-lint:
	@$(MAKE) --no-print-directory lint && echo '1 0 0' >> $(CHECK_TALLY) \
	  || { echo '0 1 0' >> $(CHECK_TALLY); exit 1; }
# The npm trees every build flavour shares (build/web, build/s3rver,
# build/openapi-tools), installed once before the two builds run side by
# side: two `npm ci` into one directory at once would break it.
check-assets: $(WEB_ASSETS) $(S3RVER_ASSETS) $(OPENAPI_ASSETS)
check-build-dev:
	@$(RV_SUBMAKE) $(CHECK_DEV) all \
	  || { echo 'check: the DEVELOPER=1 build failed'; echo '0 1 0' >> $(CHECK_TALLY); exit 1; }
check-build-san:
	@$(RV_SUBMAKE) $(SAN_BUILD) RV_SET=$(RV_CHECK)_san build-set \
	  || { echo 'check: the sanitizer build failed'; echo '0 1 0' >> $(CHECK_TALLY); exit 1; }
check-run-dev:
	@$(MAKE) --no-print-directory $(CHECK_DEV) RV_TALLY=$(CHECK_TALLY) RV_SET=$(RV_CHECK) run-set
check-run-pg:
	@$(MAKE) --no-print-directory RV_DEBUG=-g1 RV_SET=$(RV_CHECK) check-pg-stage
# `make check`'s sanitizer tests keep freed memory in ASan's quarantine up to
# 16 MiB per process instead of 256: a use after free is still caught while
# the block is among the last 16 MiB freed, and a process that allocates a
# lot no longer touches fresh pages for each allocation (the stage's page
# faults 8.4 M → 6.0 M, its system CPU 23 → 17 s: 2026-11-30, the stage run
# alone both ways).  `make check-full` keeps ASan's default.
RV_SAN_ENV_check := ASAN_OPTIONS=quarantine_size_mb=16
RV_SAN_ENV_full  :=
check-run-san:
	@$(RV_SAN_ENV_$(RV_CHECK)) $(MAKE) --no-print-directory $(SAN_BUILD) RV_TALLY=$(CHECK_TALLY) \
	  RV_SET=$(RV_CHECK)_san run-set

# The server tests flagged `pg` a second time, on PostgreSQL
# (RVS_TEST_STORE=pg, tests/server/store_env.h), in the DEVELOPER=1 build;
# in `make check` those of RV_SET_check_pg, in `make check-full` and `make
# check-pg` all of them.  The tests that compare the two backends
# themselves (test_store, test_search, …) are not flagged: they run on both
# in every stage.  Without PostgreSQL
# 15 installed it says so and counts one skip.  `make check-pg` runs only
# this stage, on a cluster of its own, and its closing line.
PG_INITDB    := /usr/lib/postgresql/15/bin/initdb
test-pg: all
	@RVS_TEST_STORE=pg $(RV_RUN) $(call rv_run_args,$(filter $(RV_SET_$(RV_SET)_pg),$(TESTS_pg)))
check-pg-stage:
	@mkdir -p build
	@if [ ! -x $(PG_INITDB) ]; then \
	  echo 'check: no PostgreSQL 15 ($(PG_INITDB)): the server suite on PostgreSQL skipped'; \
	  echo '0 0 1' >> $(CHECK_TALLY); \
	elif $(RV_SUBMAKE) DEVELOPER=1 RV_DEBUG='$(RV_DEBUG)' all; then \
	  $(MAKE) --no-print-directory DEVELOPER=1 RV_DEBUG='$(RV_DEBUG)' RV_TALLY=$(CHECK_TALLY) test-pg || true; \
	else echo 'check: the DEVELOPER=1 build failed'; echo '0 1 0' >> $(CHECK_TALLY); fi
check-pg:
	@mkdir -p build && rm -f $(CHECK_TALLY)
	@sh tests/with-pg.sh $(MAKE) --no-print-directory RV_SET=full check-pg-stage
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
tsan-run: $(TESTS_tsan)
	@TSAN_OPTIONS=halt_on_error=1 sh tests/run-tests.sh $(TESTS_tsan)

# Fuzz targets run FUZZ_SECONDS each, seeded from tests/fuzz/<name>_corpus/ (real
# inputs, committed) into a working corpus under build/fuzz/corpus/<name>/.
# `make check` replays the corpora deterministically instead.
FUZZ_SECONDS ?= 60
fuzz:
	@$(MAKE) --no-print-directory BUILD=build/fuzz CC=clang OPT=-O1 \
	  SANFLAGS='-fsanitize=address,undefined -fno-omit-frame-pointer' RV_FUZZ=1 fuzz-run
# Every target runs even when an earlier one found something; a finding's
# input is kept in build/fuzz/artifacts/<name>/ and fails the goal at the end.
fuzz-run: $(FUZZ)
	@fail=; for f in $(FUZZ); do n=$$(basename $$f); c=tests/fuzz/$${n}_corpus; \
	  mkdir -p $(BUILD)/corpus/$$n $(BUILD)/artifacts/$$n; echo "== $$n"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=1024 -print_final_stats=1 \
	    -artifact_prefix=$(BUILD)/artifacts/$$n/ $(BUILD)/corpus/$$n \
	    $$( [ -d $$c ] && echo $$c ) || fail="$$fail $$n"; done; \
	  if [ -n "$$fail" ]; then echo "make fuzz: findings in:$$fail ($(BUILD)/artifacts/)"; \
	    exit 1; fi; echo "make fuzz: $(words $(FUZZ)) targets, no finding"

bench: $(BENCHES)
	@set -e; for b in $(BENCHES); do echo "== $$b"; $$b; done

LINT_SRC = $(shell git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null)
lint:
	@sh tests/lint.sh $(LINT_SRC)
	@sh tests/lint-spdx.sh
	@sh tests/lint-deps.sh
	@sh device/settings/po/update-pot.sh --check

# `make install`: what goes where (the directories are set above).
# rearviewd and rearview-server are system daemons (SBINDIR, section 8);
# the server finds its web assets in ../share/rearview/web beside its
# directory, i.e. DATADIR/rearview/web with the default DATADIR.
RV_SBIN_NAMES := rearviewd rearview-server
RV_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(RV_VERSION)|g' \
	-e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	-e 's|@DOCDIR@|$(DOCDIR)|g' -e 's|@PKGLIBDIR@|$(PKGLIBDIR)|g'
RV_DOCS := README.md tracer/FORMAT.md tracer/RVTRACE.md device/README.md server/OPERATIONS.md \
	   server/README.md server/API.md server/SCHEMA.md policy/README.md \
	   proto/README.md

# What the running system will not find where it was installed (printed
# after `make install`; nothing when every file is where its reader looks).
RV_INSTALL_NOTES = \
  $(if $(filter /usr/share/dbus-1 /etc/dbus-1,$(DBUSDIR)),,\
    "D-Bus reads policies from /usr/share/dbus-1/system.d and /etc/dbus-1/system.d only:"\
    "  $(DBUSDIR)/system.d/org.rearview.Daemon1.conf is not read; install with DBUSDIR=/usr/share/dbus-1"\
    "  (or copy it to /etc/dbus-1/system.d/), or rearviewd cannot own org.rearview.Daemon1.") \
  $(if $(filter /usr/share/polkit-1/actions,$(POLKITDIR)),,\
    "polkit reads actions from /usr/share/polkit-1/actions only: $(POLKITDIR)/org.rearview.policy"\
    "  is not read; install with POLKITDIR=/usr/share/polkit-1/actions, or every D-Bus call is refused.")

# $(call rv_install,DESTDIR): binaries, versioned shared libraries with
# their SONAME and development links, static libraries, headers, pkg-config
# files, man pages, systemd units (services and rearviewd's sockets),
# sysusers.d/tmpfiles.d snippets, the D-Bus policy, interface file and
# activation file and the polkit actions (deploy/dbus/), the
# desktop entry, the example configs (also as the default
# SYSCONFDIR/rearview/rearviewd.conf: every line in it is a commented
# default), the components' docs and the server's web assets.
define rv_install
	install -d $(1)$(BINDIR) $(1)$(SBINDIR) $(1)$(LIBDIR) $(1)$(INCLUDEDIR)/rearview \
	  $(1)$(PKGCONFIGDIR) $(1)$(SYSUSERSDIR) $(1)$(TMPFILESDIR) $(1)$(UNITDIR) \
	  $(1)$(SYSCONFDIR)/rearview $(1)$(DOCDIR)/examples \
	  $(1)$(DBUSDIR)/system.d $(1)$(DBUSDIR)/interfaces $(1)$(DBUSDIR)/system-services \
	  $(1)$(POLKITDIR) \
	  $(1)$(APPSDIR) $(1)$(DATADIR)/rearview/po $(1)$(DATADIR)/metainfo
	install -m 0644 device/settings/org.rearview.Settings.desktop $(1)$(APPSDIR)/
	$(RV_SUBST) device/settings/org.rearview.Settings.metainfo.xml.in \
	  > $(1)$(DATADIR)/metainfo/org.rearview.Settings.metainfo.xml
	install -m 0644 device/settings/po/rearview-settings.pot $(1)$(DATADIR)/rearview/po/
	for l in $(SETTINGS_LINGUAS); do \
	  install -d $(1)$(LOCALEDIR)/$$l/LC_MESSAGES && \
	  install -m 0644 $(BUILD)/locale/$$l/LC_MESSAGES/rearview-settings.mo \
	    $(1)$(LOCALEDIR)/$$l/LC_MESSAGES/ || exit 1; \
	done
	install -m 0644 deploy/dbus/org.rearview.Daemon1.conf $(1)$(DBUSDIR)/system.d/
	install -m 0644 deploy/dbus/org.rearview.Daemon1.xml $(1)$(DBUSDIR)/interfaces/
	install -m 0644 deploy/dbus/org.rearview.Daemon1.service $(1)$(DBUSDIR)/system-services/
	install -m 0644 deploy/rearviewd.socket deploy/rearviewd-events.socket \
	  deploy/rearviewd-admin.socket $(1)$(UNITDIR)/
	install -m 0644 deploy/dbus/org.rearview.policy $(1)$(POLKITDIR)/
	$(RV_SUBST) deploy/rearview-trace.pc.in > $(1)$(PKGCONFIGDIR)/rearview-trace.pc
	$(RV_SUBST) deploy/rearview-events.pc.in > $(1)$(PKGCONFIGDIR)/rearview-events.pc
	for u in rearviewd rearview-server; do \
	  $(RV_SUBST) deploy/$$u.service.in > $(1)$(UNITDIR)/$$u.service || exit 1; \
	done
	install -m 0644 deploy/rearview.sysusers $(1)$(SYSUSERSDIR)/rearview.conf
	install -m 0644 deploy/rearview-server.sysusers $(1)$(SYSUSERSDIR)/rearview-server.conf
	install -m 0644 deploy/rearview.tmpfiles $(1)$(TMPFILESDIR)/rearview.conf
	install -m 0644 deploy/rearview-server.tmpfiles $(1)$(TMPFILESDIR)/rearview-server.conf
	install -m 0644 deploy/rearviewd.conf.example deploy/rearview-server.conf.example \
	  $(1)$(DOCDIR)/examples/
	test -e $(1)$(SYSCONFDIR)/rearview/rearviewd.conf || \
	  install -m 0644 deploy/rearviewd.conf.example $(1)$(SYSCONFDIR)/rearview/rearviewd.conf
	for d in $(RV_DOCS); do \
	  install -D -m 0644 $$d $(1)$(DOCDIR)/$$d || exit 1; \
	done
	$(if $(filter-out $(addprefix %/,$(RV_SBIN_NAMES)),$(BINS)),\
	  install -m 0755 $(filter-out $(addprefix %/,$(RV_SBIN_NAMES)),$(BINS)) $(1)$(BINDIR))
	$(if $(filter $(addprefix %/,$(RV_SBIN_NAMES)),$(BINS)),\
	  install -m 0755 $(filter $(addprefix %/,$(RV_SBIN_NAMES)),$(BINS)) $(1)$(SBINDIR))
	$(if $(filter %.a,$(LIBS)),install -m 0644 $(filter %.a,$(LIBS)) $(1)$(LIBDIR))
	for l in $(notdir $(SHLIBS)); do \
	  install -m 0644 $(LIB)/$$l.$(RV_VERSION) $(1)$(LIBDIR)/ && \
	  ln -sf $$l.$(RV_VERSION) $(1)$(LIBDIR)/$$l.$(RV_SOVERSION) && \
	  ln -sf $$l.$(RV_SOVERSION) $(1)$(LIBDIR)/$$l || exit 1; \
	done
	$(if $(LIBS_REARVIEW),install -D -m 0644 -t $(1)$(PKGLIBDIR) $(LIBS_REARVIEW))
	$(if $(INSTALL_HDR),install -m 0644 $(INSTALL_HDR) $(1)$(INCLUDEDIR)/rearview)
	install -m 0644 $(PROTO_H) $(1)$(INCLUDEDIR)/rearview
	for m in $(MANS); do \
	  s=$${m##*.}; install -D -m 0644 $$m $(1)$(MANDIR)/man$$s/$${m##*/} || exit 1; \
	done
	if [ -e build/web/speedscope/index.html ]; then \
	  install -d $(1)$(DATADIR)/rearview/web/speedscope && \
	  cp -RL build/web/speedscope/. $(1)$(DATADIR)/rearview/web/speedscope/; fi
endef

# `make programs`: everything `make install` installs, and no test.
all: $(LIBS_REARVIEW)
programs: $(BINS) $(LIBS) $(LIBS_REARVIEW) $(PROTO_H) $(MANS)
install: programs
	$(call rv_install,$(DESTDIR))
	@for l in $(RV_INSTALL_NOTES); do echo "install: $$l"; done >&2

.PHONY: all check check-full check-stages check-lint check-assets check-build-dev check-build-san check-run-dev \
  check-run-pg check-run-san check-pg check-pg-stage test-pg test build-set run-set asan ubsan tsan tsan-run bench lint install demo fuzz fuzz-run \
  programs

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

endif
