# SPDX-License-Identifier: Apache-2.0
# deploy/ — the demo: rearview-demo-app (an instrumented UI-like program),
# rearview-demo-thermal (a fake sysfs thermal tree that heats up), the
# `make demo` goal (deploy/demo.sh) and the demo integration test.

DEMO_DIR := deploy/demo

include deploy/man.mk
include deploy/cross.mk

# demo_ui.c is the traced UI work; demo_app.c (loop, pacing, reporting) is
# left uninstrumented so idle time is nobody's self time.
$(OBJ)/$(DEMO_DIR)/%.o: CPPFLAGS += -Itracer/include -Itracer/analysis/include \
  -Idevice/events/include $(PROTOBUF_CFLAGS)
$(OBJ)/$(DEMO_DIR)/demo_ui.o: CFLAGS += -finstrument-functions

# librvtrace.so carries (and exports) part of librvproto — the frame helpers
# and the common/control descriptors.  librvproto.a comes after it on the
# link line, so only what the .so lacks (event.pb-c.o) is taken from the
# archive: linking the whole archive first would put two copies of those
# descriptors in the process (an ODR violation that ASan reports).
# librvevents.a (events.sock reports) is one object; its librvproto needs come
# from the same archive after it.
$(BIN)/rearview-demo-app: $(OBJ)/$(DEMO_DIR)/demo_app.o $(OBJ)/$(DEMO_DIR)/demo_ui.o \
                          $(LIBRVTRACE_SO) $(LIBRVEVENTS_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(LIB) -lrvtrace $(LIBRVEVENTS_A) $(LIBRVPROTO) \
	  -Wl,-rpath,'$$ORIGIN/../lib' $(PROTOBUF_LIBS) -lpthread

$(BIN)/rearview-demo-thermal: $(OBJ)/$(DEMO_DIR)/demo_thermal.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

# Demo tools live in build/bin but are not installed.
DEMO_BINS := $(BIN)/rearview-demo-app $(BIN)/rearview-demo-thermal
all: $(DEMO_BINS)

# DEMO_FLEET=1: the same story on two nodes, PostgreSQL and an S3 server
# (deploy/demo-fleet.sh; s3rver comes from npm like the S3 tests').
demo: $(DEMO_BINS) $(BINS) $(if $(DEMO_FLEET),$(S3RVER_ASSETS))
	@DEMO_ONESHOT='$(DEMO_ONESHOT)' sh deploy/$(if $(DEMO_FLEET),demo-fleet.sh,demo.sh)

$(OBJ)/tests/integration/test_demo_%.o: CPPFLAGS += -Itests/device -Itracer/include -Itracer/analysis/include \
  $(PROTOBUF_CFLAGS) -DRV_BIN_DIR='"$(BIN)"' -DRV_TBIN_DIR='"$(TBIN)"'
$(eval $(call rv_test,integration,demo_app,$(LIBRVANALYSIS) $(LIBRVPROTO),$(RVA_LIBS) $(PROTOBUF_LIBS),integration e2e))
$(TBIN)/integration/test_demo_app: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rearview-demo-app
$(eval $(call rv_test,integration,demo_thermal,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration))
$(TBIN)/integration/test_demo_thermal: | $(BIN)/rearviewd $(BIN)/rvctl $(DEMO_BINS)

.PHONY: demo

# `make install` into build/prefix with PREFIX = that absolute path and
# every install directory at its default under it (whatever the command
# line says), so the installed units and pkg-config files name paths that
# exist here; then tests/deploy/test_install.sh checks them
# (systemd-analyze verify, a program traced through pkg-config alone,
# hardening-check on every ELF, …).
RV_TEST_PREFIX := $(abspath $(BUILD))/prefix
RV_TEST_LIBDIR := $(RV_TEST_PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
$(BUILD)/prefix/.installed: $(BINS) $(LIBS) $(SHLIBS) $(LIBS_REARVIEW) $(MANS) $(INSTALL_HDR) \
		$(PROTO_H) Makefile deploy/deploy.mk \
		deploy/rearviewd.service.in deploy/rearview-server.service.in \
		deploy/rearview-trace.pc.in deploy/rearview-events.pc.in deploy/rearview.sysusers \
		deploy/rearview.tmpfiles deploy/rearview-server.sysusers deploy/rearview-server.tmpfiles \
		deploy/rearviewd.conf.example deploy/rearview-server.conf.example \
		deploy/dbus/org.rearview.Daemon1.conf deploy/dbus/org.rearview.Daemon1.xml \
		deploy/dbus/org.rearview.policy deploy/dbus/org.rearview.Daemon1.service \
		deploy/rearviewd.socket deploy/rearviewd-events.socket deploy/rearviewd-admin.socket \
		$(SETTINGS_MOS) device/settings/org.rearview.Settings.desktop \
		device/settings/org.rearview.Settings.metainfo.xml.in
	rm -rf $(RV_TEST_PREFIX)
	$(call rv_install,)
	touch $@
$(BUILD)/prefix/.installed: private override PREFIX = $(RV_TEST_PREFIX)
$(foreach d,$(RV_INSTALL_DIRS),$(eval \
  $(BUILD)/prefix/.installed: private override $(d) = $$(RV_DEFAULT_$(d))))
# The runner passes no arguments: a two-line wrapper names this flavour's
# prefix, library directory and sanitizer flags (a sanitized librvtrace
# needs its runtime in the program that loads it).
$(TBIN)/deploy/test_install: tests/deploy/test_install.sh $(BUILD)/prefix/.installed
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh %s %s %s "%s"\n' '$(CURDIR)/$<' '$(RV_TEST_PREFIX)' \
	  '$(RV_TEST_LIBDIR)' '$(SANFLAGS)' > $@
	chmod +x $@
$(eval $(call rv_register,$(TBIN)/deploy/test_install,system ci))

# `make demo DEMO_FLEET=1 DEMO_ONESHOT=1` from a fresh clone of this tree in
# a mode-0700 directory (tests/deploy/test_demo_fleet.sh): the clone builds
# for itself, so one flavour runs it.
ifeq ($(SANFLAGS),)
$(TBIN)/deploy/test_demo_fleet: tests/deploy/test_demo_fleet.sh
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh %s %s\n' '$(CURDIR)/$<' '$(CURDIR)' > $@
	chmod +x $@
$(eval $(call rv_register,$(TBIN)/deploy/test_demo_fleet,system))
endif

# End to end: deploy/demo.sh in oneshot end-to-end mode, then the server's
# JSON API (tests/integration/test_demo_e2e.c).
$(OBJ)/tests/integration/test_demo_e2e.o: CPPFLAGS += $(call pc,--cflags,libcurl jansson) \
  -DRV_SRC_DIR='"$(CURDIR)"'
$(eval $(call rv_test,integration,demo_e2e,,$(call pc,--libs,libcurl jansson),system ci))
$(TBIN)/integration/test_demo_e2e: | $(BINS) $(DEMO_BINS)

# The shared libraries' ABI: SONAMEs and exported symbols against the
# symbols files of debian/ (tests/deploy/test_symbols.sh).
$(TBIN)/deploy/test_symbols: tests/deploy/test_symbols.sh $(SHLIBS) $(filter %.a,$(LIBS)) \
		debian/librvtrace$(RV_SOVERSION).symbols debian/librvevents$(RV_SOVERSION).symbols
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh %s %s %s\n' '$(CURDIR)/$<' '$(abspath $(LIB))' '$(RV_SOVERSION)' > $@
	chmod +x $@
$(eval $(call rv_register,$(TBIN)/deploy/test_symbols,integration))

# `make lint`: the version in debian/ agrees with RV_VERSION.
lint: lint-version
lint-version:
	@sh tests/lint-version.sh
.PHONY: lint-version

# System tier: the Debian packages built from a clean clone, lintian, and
# each installed into a clean Debian 12 root (tests/deploy/test_package.sh).
$(TBIN)/deploy/test_package: tests/deploy/test_package.sh
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh %s %s\n' '$(CURDIR)/$<' '$(RV_VERSION)' > $@
	chmod +x $@
SYSTEM_TESTS += $(TBIN)/deploy/test_package

# `make check-system`: the slow tests of the whole system (SYSTEM_TESTS:
# the Debian packages built, checked and installed into a clean root; the
# cross build under qemu-user), one closing line like `make check`'s.
# After every SYSTEM_TESTS += of this file and cross.mk: a rule's
# prerequisites are expanded where the rule is read.
# Each may take longer than run-tests.sh's default guard on a loaded machine
# (test_package builds every package, then installs each into its own root).
check-system: $(SYSTEM_TESTS)
	@RV_TEST_TIMEOUT=$${RV_TEST_TIMEOUT:-5400} sh tests/run-tests.sh $(SYSTEM_TESTS)
.PHONY: check-system
