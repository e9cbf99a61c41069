# SPDX-License-Identifier: Apache-2.0
# device/ — rearviewd (the on-device service) and rvctl (its admin client).
# Daemon objects are also linked into the unit tests, so everything except
# main.c lives in one list.

DEVICE_CFLAGS := $(call pc,--cflags,libuv inih sqlite3 libcurl libzstd libsystemd libseccomp) \
                 $(PROTOBUF_CFLAGS)
DEVICE_LIBS   := $(call pc,--libs,libuv inih sqlite3 libcurl libzstd libsystemd libseccomp) \
                 $(RVPOLICY_LDLIBS) \
                 $(PROTOBUF_LIBS)

DEVICE_CORE_SRC := device/src/log.c device/src/config.c device/src/detect.c \
                   device/src/registry.c device/src/spool.c device/src/spool_summary.c \
                   device/src/conn.c device/src/capcheck.c \
                   device/src/enforce.c device/src/daemon.c device/src/capture.c \
                   device/src/admin.c device/src/dbus.c device/src/anomaly.c device/src/tracectl.c device/src/upload.c \
                   device/src/enroll.c device/src/upload_req.c device/src/upload_jank.c device/src/curl_uv.c device/src/compress.c \
                   device/src/offcpu.c device/src/identity.c device/src/activate.c device/src/sandbox.c \
                   device/src/sandbox_worker.c device/src/caprec.c device/src/frames.c \
                   device/src/jankcount.c
DEVICE_CORE_OBJ := $(patsubst %.c,$(OBJ)/%.o,$(DEVICE_CORE_SRC))

# Local summaries (src/summary.c) with librvanalysis: the archive rides with
# the objects so every link of them gets it, before librvpolicy/librvproto.
DEVICE_CORE_OBJ += $(OBJ)/device/src/summary.o $(LIBRVANALYSIS)
DEVICE_LIBS     += $(RVA_LIBS)
$(OBJ)/device/%.o: CPPFLAGS += -Idevice/src -Ipolicy/include -Itracer/analysis/include $(DEVICE_CFLAGS)

include device/events/events.mk
include device/weston/weston.mk

$(BIN)/rearviewd: $(OBJ)/device/src/main.o $(DEVICE_CORE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEVICE_LIBS)

# rvctl exports captures locally with librvanalysis.
$(BIN)/rvctl: $(OBJ)/device/src/rvctl.o $(LIBRVANALYSIS) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVA_LIBS) $(PROTOBUF_LIBS)

BINS += $(BIN)/rearviewd $(BIN)/rvctl

# Local summaries: unit test on captures built with tests/rvtrace/capbuild.h,
# the benchmark of a 32 MiB capture, and the show/export integration test on
# the real instrumented demo app.
$(OBJ)/tests/device/test_summary.o $(OBJ)/tests/device/bench_summary.o: CPPFLAGS += \
  -Itests/rvtrace -Ipolicy/include -Itracer/analysis/include
$(eval $(call rv_test,device,summary,$(DEVICE_CORE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO),$(DEVICE_LIBS),integration))
$(TBIN)/device/bench_summary: $(OBJ)/tests/device/bench_summary.o $(DEVICE_CORE_OBJ) $(LIBRVPOLICY) \
                              $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEVICE_LIBS) -lpthread
BENCHES += $(TBIN)/device/bench_summary
$(OBJ)/tests/integration/test_daemon_show.o: CPPFLAGS += -Itracer/analysis/include
$(eval $(call rv_test,integration,daemon_show,$(LIBRVPROTO),$(PROTOBUF_LIBS) $(call pc,--libs,sqlite3),integration e2e))
$(TBIN)/integration/test_daemon_show: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rvtrace \
                                        $(BIN)/rearview-demo-app
# The policy's thermal trip over a fake sysfs tree; signs with librvpolicy.
$(OBJ)/tests/integration/test_daemon_trip.o: CPPFLAGS += -Ipolicy/include
$(eval $(call rv_test,integration,daemon_trip,$(LIBRVPOLICY) $(LIBRVPROTO),$(RVPOLICY_LDLIBS),integration))
$(TBIN)/integration/test_daemon_trip: | $(BIN)/rearviewd $(BIN)/rvctl

# The stand-in traced process for the integration tests.
$(TBIN)/device/rv_helper_app: $(OBJ)/tests/device/helper_app.o $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS)

# rearviewd under its unit's credentials and system-call filter, where no
# systemd manager runs (tests/device/unit_sandbox.c).
$(TBIN)/device/rv_unit_sandbox: $(OBJ)/tests/device/unit_sandbox.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc,--libs,libseccomp)

$(OBJ)/tests/device/%.o: CPPFLAGS += -Idevice/src $(DEVICE_CFLAGS)
$(OBJ)/tests/device/helper_app.o: CPPFLAGS += -Itests/rvtrace
$(OBJ)/tests/integration/test_daemon_%.o: CPPFLAGS += -Idevice/src $(DEVICE_CFLAGS)

# logfmt lines and the journald priority prefix (src/log.c).
$(eval $(call rv_test,device,log,$(OBJ)/device/src/log.o,$(call pc,--libs,libsystemd),unit))

# Per-thread perf events and the OFFCPU / THREAD_COUNTERS records (issue 17).
$(OBJ)/tests/device/test_offcpu.o: CPPFLAGS += -Itests/rvtrace
$(eval $(call rv_test,device,offcpu,$(DEVICE_CORE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO),$(DEVICE_LIBS),integration))

# The frame ring and the FRAMES record, read back by librvanalysis.
$(OBJ)/tests/device/test_frames.o: CPPFLAGS += -Itests/rvtrace -Itracer/analysis/include
$(eval $(call rv_test,device,frames,$(DEVICE_CORE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO),$(DEVICE_LIBS),unit))
# Frames and late frames per app and day, traced or not (src/jankcount.c).
$(eval $(call rv_test,device,jankcount,$(OBJ)/device/src/jankcount.o,,unit))
$(TBIN)/device/bench_jankcount: $(OBJ)/tests/device/bench_jankcount.o $(OBJ)/device/src/jankcount.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
BENCHES += $(TBIN)/device/bench_jankcount

# `make bench`: the off-CPU records' cost per capture (device/BENCHMARKS.md).
$(OBJ)/tests/device/bench_offcpu.o: CPPFLAGS += -Itests/rvtrace -Ipolicy/include \
  -Itracer/analysis/include
$(TBIN)/device/bench_offcpu: $(OBJ)/tests/device/bench_offcpu.o $(DEVICE_CORE_OBJ) $(LIBRVPOLICY) \
                             $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEVICE_LIBS)
BENCHES += $(TBIN)/device/bench_offcpu

# The daemon's OFFCPU records in a real capture of the demo app, read by rvtrace why.
$(eval $(call rv_test,integration,daemon_offcpu,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration))
$(TBIN)/integration/test_daemon_offcpu: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rvtrace \
                                          $(BIN)/rearview-demo-app

# Issue 17's "done when": rv_why_app slow for each reason in turn, captured
# through the real rearviewd and read back by rvtrace why.
$(OBJ)/tests/integration/why_app.o: CPPFLAGS += -Itracer/include
$(OBJ)/tests/integration/why_app.o: CFLAGS += -finstrument-functions
$(TBIN)/integration/rv_why_app: $(OBJ)/tests/integration/why_app.o $(LIBRVTRACE_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(LIB) -lrvtrace -Wl,-rpath,'$(abspath $(LIB))' \
	  $(PROTOBUF_LIBS) -lpthread
$(eval $(call rv_test,integration,daemon_why,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration))
$(TBIN)/integration/test_daemon_why: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rvtrace \
                                       $(TBIN)/integration/rv_why_app

$(eval $(call rv_test,device,detect,$(DEVICE_CORE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO),$(DEVICE_LIBS),integration))
# events.sock payloads (rvd_event_decode and the detectors): the libFuzzer
# target for `make fuzz` and its corpus replayed in `make check`.
FUZZ += $(BUILD)/fuzz/device_events
$(BUILD)/fuzz/device_events: tests/fuzz/device_events.c device/src/anomaly.c device/src/detect.c \
		$(PROTO_C) | $(PROTO_H)
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(PROTOBUF_CFLAGS) -Idevice/src -g -O1 \
		-fsanitize=fuzzer,address,undefined -o $@ $(filter %.c,$^) $(PROTOBUF_LIBS) -luv
$(OBJ)/tests/device/test_fuzz_events.o: CPPFLAGS += -Idevice/src -DRV_SRC_DIR='"$(CURDIR)"'
$(eval $(call rv_test,device,fuzz_events,$(OBJ)/device/src/anomaly.o $(OBJ)/device/src/detect.o \
  $(LIBRVPROTO),$(PROTOBUF_LIBS) -luv,torture))

# org.rearview.Daemon1's handlers (dbus.c, and admin.c, the spool and the
# ledger behind them) over a private sd-bus pair: the libFuzzer target, and
# its corpus replayed in `make check`.
$(OBJ)/tests/fuzz/device_dbus.o $(OBJ)/tests/device/test_fuzz_dbus.o: CPPFLAGS += -Idevice/src \
  -Ipolicy/include $(DEVICE_CFLAGS) -DRV_SRC_DIR='"$(CURDIR)"'
$(eval $(call rv_test,device,fuzz_dbus,$(DEVICE_CORE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO), \
  $(DEVICE_LIBS),torture))
ifeq ($(RV_FUZZ),1)
$(DEVICE_CORE_OBJ): CFLAGS += -fsanitize=fuzzer-no-link
$(BUILD)/fuzz/device_dbus: $(OBJ)/tests/fuzz/device_dbus.o $(DEVICE_CORE_OBJ) $(LIBRVPOLICY) \
		$(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(DEVICE_LIBS)
FUZZ += $(BUILD)/fuzz/device_dbus
endif

# Integration tests: real rearviewd, rvctl and helper processes.
$(OBJ)/tests/integration/test_daemon_%.o: CPPFLAGS += -Itests/device \
  -DRV_BIN_DIR='"$(BIN)"' -DRV_TBIN_DIR='"$(TBIN)"'
$(eval $(call rv_test,integration,daemon_basic,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration))
$(TBIN)/integration/test_daemon_basic: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/device/rv_helper_app
# rearviewd as systemd runs it: sd_notify, socket activation, the unit's
# sandbox, conf.d drop-ins.
$(eval $(call rv_test,integration,daemon_service,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration e2e))
$(TBIN)/integration/test_daemon_service: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rvtrace \
  $(BIN)/rearview-demo-app $(TBIN)/device/rv_helper_app $(TBIN)/device/rv_unit_sandbox
$(OBJ)/tests/integration/test_daemon_service.o: CPPFLAGS += -DRV_SRC_DIR='"$(CURDIR)"'
# Issue 18 hardening: peer limits, registration deadline, spool bounds.
$(OBJ)/tests/integration/test_daemon_harden.o: CPPFLAGS += -Ipolicy/include
$(eval $(call rv_test,integration,daemon_harden,$(LIBRVPOLICY) $(LIBRVPROTO),$(RVPOLICY_LDLIBS),integration))
$(TBIN)/integration/test_daemon_harden: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/device/rv_helper_app
# Who may speak for an app: the kernel's identity against the app map.
$(eval $(call rv_test,integration,daemon_identity,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration))
$(TBIN)/integration/test_daemon_identity: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/device/rv_helper_app
# The sandboxed capture parser: a crashing capture, a file open, the worker's confinement.
$(eval $(call rv_test,integration,daemon_sandbox,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration))
$(TBIN)/integration/test_daemon_sandbox: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/device/rv_helper_app
# Spool history retention: 300 anomalies leave bounded rows (spool.db read with sqlite3).
$(eval $(call rv_test,integration,daemon_retention,$(LIBRVPROTO),$(PROTOBUF_LIBS) $(call pc,--libs,sqlite3),integration e2e))
$(TBIN)/integration/test_daemon_retention: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/device/rv_helper_app
$(eval $(call rv_test,integration,daemon_crash,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration e2e))
$(TBIN)/integration/test_daemon_crash: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/device/rv_helper_app
# A real traced program (the demo app) across a daemon SIGKILL and restart.
$(eval $(call rv_test,integration,daemon_restart,$(LIBRVPROTO),$(PROTOBUF_LIBS),integration e2e))
$(TBIN)/integration/test_daemon_restart: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rearview-demo-app
$(eval $(call rv_test,device,spool,$(DEVICE_CORE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO),$(DEVICE_LIBS),integration tsan))
# Policy enforcement end to end; signs documents with librvpolicy at test time.
$(OBJ)/tests/integration/test_daemon_policy.o: CPPFLAGS += -Ipolicy/include
$(eval $(call rv_test,integration,daemon_policy,$(LIBRVPOLICY) $(LIBRVPROTO),$(RVPOLICY_LDLIBS),integration e2e))
$(TBIN)/integration/test_daemon_policy: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/device/rv_helper_app
# The uploader against a real rearview-server (init, HTTPS on a free port).
$(OBJ)/tests/integration/test_daemon_upload.o: CPPFLAGS += -Ipolicy/include
$(eval $(call rv_test,integration,daemon_upload,$(LIBRVPOLICY) $(LIBRVPROTO),$(call pc,--libs,libcurl sqlite3) $(RVPOLICY_LDLIBS),integration e2e))
$(TBIN)/integration/test_daemon_upload: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rearview-server \
  $(TBIN)/server/rearview-server-v1 $(TBIN)/device/rv_helper_app $(BIN)/rearview-demo-app

# The jank rate of an app that is never traced, from its librvevents frames
# to the fleet's GET /api/v1/fleet/jank on a real server, by app version;
# the version a registered process declares (rv_helper_app).
$(OBJ)/tests/integration/test_daemon_jank.o: CPPFLAGS += $(call pc,--cflags,jansson)
$(eval $(call rv_test,integration,daemon_jank,$(LIBRVPROTO),$(call pc,--libs,libcurl sqlite3 jansson) $(PROTOBUF_LIBS),integration e2e))
$(TBIN)/integration/test_daemon_jank: | $(BIN)/rearviewd $(BIN)/rvctl $(BIN)/rearview-server \
  $(TBIN)/integration/rv_jank_app $(TBIN)/device/rv_helper_app
$(OBJ)/tests/integration/jank_app.o: CPPFLAGS += -Idevice/events/include $(PROTOBUF_CFLAGS)
$(TBIN)/integration/rv_jank_app: $(OBJ)/tests/integration/jank_app.o $(LIBRVEVENTS_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(PROTOBUF_LIBS) -lpthread

# `make bench`: upload latency, rate and daemon memory against a local server.
$(OBJ)/tests/device/bench_upload.o: CPPFLAGS += -DRV_BIN_DIR='"$(BIN)"' -DRV_TBIN_DIR='"$(TBIN)"'
$(TBIN)/device/bench_upload: $(OBJ)/tests/device/bench_upload.o $(LIBRVPROTO) | $(BIN)/rearviewd \
  $(BIN)/rvctl $(BIN)/rearview-server $(TBIN)/device/rv_helper_app
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc,--libs,libcurl sqlite3) $(PROTOBUF_LIBS)
BENCHES += $(TBIN)/device/bench_upload
$(eval $(call rv_test,device,upload_spool,$(DEVICE_CORE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO),$(DEVICE_LIBS),integration))

# org.rearview.Daemon1 on a private system bus with a real polkitd (issue 19).
$(OBJ)/tests/device/test_dbus.o: CPPFLAGS += -DRV_BIN_DIR='"$(BIN)"' -DRV_TBIN_DIR='"$(TBIN)"' \
  -DRV_SRC_DIR='"$(CURDIR)"'
$(eval $(call rv_test,device,dbus,$(LIBRVPROTO),$(PROTOBUF_LIBS) $(call pc,--libs,libsystemd),system ci san))
$(TBIN)/device/test_dbus: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/device/rv_helper_app

# rearview-settings, the consent panel (GTK 4; talks only D-Bus).  GTK's
# headers are included as system headers so DEVELOPER=1's warnings stay ours.
SETTINGS_CFLAGS := $(patsubst -I%,-isystem %,$(call pc,--cflags,gtk4))
# The panel's catalogues are found under the LOCALEDIR it is installed
# with: the object depends on a stamp holding that directory, so `make
# install PREFIX=/usr` after a plain build recompiles it rather than
# installing a binary that looks in /usr/local/share/locale.
SETTINGS_LOCALEDIR := $(LOCALEDIR)
SETTINGS_STAMP     := $(BUILD)/.settings-localedir
ifneq ($(SETTINGS_LOCALEDIR),$(shell cat $(SETTINGS_STAMP) 2>/dev/null))
$(shell mkdir -p $(BUILD) && echo '$(SETTINGS_LOCALEDIR)' > $(SETTINGS_STAMP))
endif
$(OBJ)/device/settings/%.o: CPPFLAGS += $(SETTINGS_CFLAGS) \
  -DGETTEXT_PACKAGE='"rearview-settings"' -DLOCALEDIR='"$(SETTINGS_LOCALEDIR)"'
$(OBJ)/device/settings/settings.o: $(SETTINGS_STAMP)
$(BIN)/rearview-settings: $(OBJ)/device/settings/settings.o $(OBJ)/device/settings/errors.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(call pc,--libs,gtk4)
# The panel's sentences for failed calls (settings/errors.c), with GIO alone.
$(OBJ)/tests/device/test_settings_errors.o: CPPFLAGS += -Idevice/settings $(SETTINGS_CFLAGS)
$(eval $(call rv_test,device,settings_errors,$(OBJ)/device/settings/errors.o,$(call pc,--libs,gio-2.0),unit))
BINS += $(BIN)/rearview-settings
# Its translations: device/settings/po/LANG.po, compiled (msgfmt --check:
# formats and plural forms checked) into $(BUILD)/locale, installed under
# LOCALEDIR.
SETTINGS_LINGUAS := $(basename $(notdir $(wildcard device/settings/po/*.po)))
SETTINGS_MOS := $(foreach l,$(SETTINGS_LINGUAS),$(BUILD)/locale/$(l)/LC_MESSAGES/rearview-settings.mo)
$(BUILD)/locale/%/LC_MESSAGES/rearview-settings.mo: device/settings/po/%.po
	@mkdir -p $(@D)
	msgfmt --check -o $@ $<
all: $(SETTINGS_MOS)
programs: $(SETTINGS_MOS)
$(TBIN)/device/test_dbus: | $(BIN)/rearview-settings

# `make bench`: the sandboxed capture parser's added latency per capture
# (device/BENCHMARKS.md); the worker is the built rearviewd.
$(OBJ)/tests/device/bench_sandbox.o: CPPFLAGS += -Itests/rvtrace -Ipolicy/include \
  -Itracer/analysis/include -DRV_BIN_DIR='"$(BIN)"'
$(TBIN)/device/bench_sandbox: $(OBJ)/tests/device/bench_sandbox.o $(DEVICE_CORE_OBJ) $(LIBRVPOLICY) \
                              $(LIBRVPROTO) | $(BIN)/rearviewd
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(DEVICE_LIBS)
BENCHES += $(TBIN)/device/bench_sandbox
