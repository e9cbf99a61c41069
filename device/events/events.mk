# SPDX-License-Identifier: Apache-2.0
# device/events/ — librvevents, the installed client library of events.sock
# (rearview/events.h): toolkits, compositors, input and thermal services link
# it to report frames, input latency, focus and anomalies to rearviewd.
#
# librvevents.a holds only its own object (link librvproto.a and
# protobuf-c after it: rearview-events.pc's Libs.private);
# librvevents.so carries the librvproto parts it uses, hidden
# (--exclude-libs), like librvtrace.so.

RVE_OBJ := $(OBJ)/device/events/src/events.o
$(OBJ)/device/events/%.o: CPPFLAGS += -Idevice/events/include $(PROTOBUF_CFLAGS)

LIBRVEVENTS_A  := $(LIB)/librvevents.a
# librvevents.so.VERSION, its SONAME link librvevents.so.MAJOR and the
# link-time name librvevents.so; librvevents.map exports the rv_ API only.
LIBRVEVENTS_SO := $(LIB)/librvevents.so
RVE_SONAME     := librvevents.so.$(RV_SOVERSION)
RVE_MAP        := device/events/librvevents.map
$(LIBRVEVENTS_A): $(RVE_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^
$(LIBRVEVENTS_SO) $(LIB)/$(RVE_SONAME) $(LIB)/librvevents.so.$(RV_VERSION) &: $(RVE_OBJ) \
		$(LIBRVPROTO) $(RVE_MAP)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,$(RVE_SONAME) -Wl,--version-script=$(RVE_MAP) \
	  -Wl,--exclude-libs,librvproto.a -o $(LIB)/librvevents.so.$(RV_VERSION) $(RVE_OBJ) \
	  $(LIBRVPROTO) $(PROTOBUF_LIBS) -lpthread
	ln -sf librvevents.so.$(RV_VERSION) $(LIB)/$(RVE_SONAME)
	ln -sf $(RVE_SONAME) $(LIBRVEVENTS_SO)

LIBS += $(LIBRVEVENTS_A) $(LIBRVEVENTS_SO)
SHLIBS += $(LIBRVEVENTS_SO)
INSTALL_HDR += device/events/include/rearview/events.h

# Unit test: the library against a socketpair-free fake daemon (a listening
# unix socket in a mkdtemp directory, read with rv_frame_recv).
$(OBJ)/tests/device/test_events.o: CPPFLAGS += -Idevice/events/include
$(eval $(call rv_test,device,events,$(LIBRVEVENTS_A) $(LIBRVPROTO),$(PROTOBUF_LIBS),integration tsan))
