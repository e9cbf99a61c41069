# SPDX-License-Identifier: Apache-2.0
# device/weston/ — rearview-weston.so, a Weston 10 module reporting frames,
# input latency and focus of every Wayland client to rearviewd through
# librvevents (linked in statically, with the librvproto parts it needs,
# hidden).  Built when libweston-10 is installed (deploy/install-deps.sh
# installs it); installed into lib/rearview/.
WESTON_CFLAGS := $(call pc,--cflags,libweston-10 weston wayland-server)
WESTON_LIBS   := $(call pc,--libs,libweston-10 wayland-server)

ifneq ($(WESTON_CFLAGS),)
RV_WESTON_SO := $(LIB)/rearview-weston.so
$(OBJ)/device/weston/%.o: CPPFLAGS += -Idevice/events/include $(WESTON_CFLAGS)
# libweston's headers use GNU extensions (typeof in wl_container_of), and
# wl_container_of casts a char * to the container (clang's -Wcast-align).
$(OBJ)/device/weston/%.o: CFLAGS += -std=gnu11 -fvisibility=hidden -Wno-cast-align
$(RV_WESTON_SO): $(OBJ)/device/weston/rearview-weston.o $(LIBRVEVENTS_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,--exclude-libs,ALL -o $@ $(filter %.o %.a,$^) \
	  $(PROTOBUF_LIBS) $(WESTON_LIBS) -lpthread
LIBS_REARVIEW += $(RV_WESTON_SO)
endif

# The Weston test: rv_slow_client, a traced Wayland client (xdg-shell and
# presentation-time from wayland-protocols, wl_shm), slow on purpose in named functions; its UI
# file is instrumented, its loop is not.
WESTON_GEN := $(GEN)/weston
WL_PROTOCOLS := $(shell $(PKG_CONFIG) --variable=pkgdatadir wayland-protocols 2>/dev/null)
XDG_SHELL_XML := $(WL_PROTOCOLS)/stable/xdg-shell/xdg-shell.xml
$(WESTON_GEN)/xdg-shell-client-protocol.h: $(XDG_SHELL_XML)
	@mkdir -p $(@D)
	wayland-scanner client-header $< $@
$(WESTON_GEN)/xdg-shell-protocol.c: $(XDG_SHELL_XML)
	@mkdir -p $(@D)
	wayland-scanner private-code $< $@
PRESENTATION_XML := $(WL_PROTOCOLS)/stable/presentation-time/presentation-time.xml
$(WESTON_GEN)/presentation-time-client-protocol.h: $(PRESENTATION_XML)
	@mkdir -p $(@D)
	wayland-scanner client-header $< $@
$(WESTON_GEN)/presentation-time-protocol.c: $(PRESENTATION_XML)
	@mkdir -p $(@D)
	wayland-scanner private-code $< $@
$(OBJ)/gen/weston/%-protocol.o: $(WESTON_GEN)/%-protocol.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-prototypes -c -o $@ $<
$(OBJ)/tests/weston/%.o: CPPFLAGS += -Itracer/include -I$(WESTON_GEN) \
  $(call pc,--cflags,wayland-client)
$(OBJ)/tests/weston/slow_client.o: $(WESTON_GEN)/xdg-shell-client-protocol.h \
  $(WESTON_GEN)/presentation-time-client-protocol.h
$(OBJ)/tests/weston/slow_client_ui.o: CFLAGS += -O1 -finstrument-functions
$(TBIN)/weston/rv_slow_client: $(OBJ)/tests/weston/slow_client.o \
  $(OBJ)/tests/weston/slow_client_ui.o $(OBJ)/gen/weston/xdg-shell-protocol.o \
  $(OBJ)/gen/weston/presentation-time-protocol.o $(LIBRVTRACE_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) -L$(LIB) -lrvtrace -Wl,-rpath,$(CURDIR)/$(LIB) \
	  $(call pc,--libs,wayland-client)
all: $(TBIN)/weston/rv_slow_client

# Real weston (headless), the module, rearviewd, weston-simple-shm and
# rv_slow_client; skips visibly when weston is not installed.
# In a sanitizer build the module carries the sanitizer's references:
# Debian's (uninstrumented) weston runs with the runtime preloaded
# (RV_WESTON_PRELOAD; gcc's runtimes — with clang's the test skips).
RV_WESTON_PRELOAD := $(strip \
  $(if $(findstring address,$(SANFLAGS)),$(shell $(CC) -print-file-name=libasan.so)) \
  $(if $(findstring undefined,$(SANFLAGS)),$(shell $(CC) -print-file-name=libubsan.so)) \
  $(if $(findstring thread,$(SANFLAGS)),$(shell $(CC) -print-file-name=libtsan.so)))
$(OBJ)/tests/integration/test_weston.o: CPPFLAGS += -Itests/device -Idevice/src $(DEVICE_CFLAGS) \
  -Itracer/analysis/include \
  -DRV_LIB_DIR='"$(LIB)"' -DRV_BIN_DIR='"$(BIN)"' -DRV_TBIN_DIR='"$(TBIN)"' \
  -DRV_WESTON_PRELOAD='"$(RV_WESTON_PRELOAD)"'
$(eval $(call rv_test,integration,weston,$(LIBRVANALYSIS) $(LIBRVPROTO),$(RVA_LIBS) $(PROTOBUF_LIBS),system ci))
$(TBIN)/integration/test_weston: | $(BIN)/rearviewd $(BIN)/rvctl $(TBIN)/weston/rv_slow_client \
  $(RV_WESTON_SO)
