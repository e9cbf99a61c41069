# SPDX-License-Identifier: Apache-2.0
# deploy/cross.mk — the device side for another machine (README.md, "Cross
# build"):
#
#   make CROSS=aarch64-linux-gnu      librvtrace, librvevents, rearviewd, rvctl
#                                     and rvtrace into build/aarch64-linux-gnu/
#
# CROSS is a GNU triplet with a Debian cross compiler (gcc-aarch64-linux-gnu);
# the libraries come from a Debian 12 sysroot of that architecture, SYSROOT
# (default build/sysroot-ARCH), which the first `make CROSS=…` makes with
# mmdebstrap from Debian's archive (deploy/cross-sysroot.sh, about 90 MB;
# `make sysroot CROSS=…` alone does that).  The same goal natively, `make
# device`, builds the same five parts for this machine.
RV_DEVICE := $(LIBRVTRACE_A) $(LIBRVTRACE_SO) $(LIBRVEVENTS_A) $(LIBRVEVENTS_SO) \
             $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rvtrace
device: $(RV_DEVICE)
.PHONY: device sysroot

ifneq ($(CROSS),)
# The stamp is a header of the package cross-sysroot.sh added last, so a
# sysroot made before it was added is made again.
RV_SYSROOT_STAMP := $(SYSROOT)/usr/include/seccomp.h
sysroot: $(RV_SYSROOT_STAMP)
$(RV_SYSROOT_STAMP):
	sh deploy/cross-sysroot.sh $(CROSS_ARCH) $(SYSROOT)
# pkg-config reads the sysroot as make starts: without it nothing builds.
ifeq ($(wildcard $(RV_SYSROOT_STAMP)),)
ifneq ($(filter-out sysroot,$(or $(MAKECMDGOALS),device)),)
$(error no $(CROSS_ARCH) sysroot in $(SYSROOT): run `make sysroot CROSS=$(CROSS)` (or `make CROSS=$(CROSS)`, which makes it first))
endif
endif
ifneq ($(filter all,$(MAKECMDGOALS)),)
$(error CROSS=$(CROSS) builds the device side only: `make CROSS=$(CROSS)` (goal device))
endif
else
sysroot:
	@echo 'sysroot: only for a cross build (make sysroot CROSS=aarch64-linux-gnu)'
endif

# System tier (`make check-system`): the cross build end to end, its
# programs and a traced aarch64 program under qemu-user, decoded here.
$(TBIN)/deploy/test_cross: tests/deploy/test_cross.sh tests/deploy/cross_app.c | $(BIN)/rvtrace
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh %s %s\n' '$(CURDIR)/$<' '$(abspath $(BUILD))' > $@
	chmod +x $@
SYSTEM_TESTS += $(TBIN)/deploy/test_cross
