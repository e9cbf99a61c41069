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
# libweston's headers use GNU extensions (typeof in wl_container_of).
$(OBJ)/device/weston/%.o: CFLAGS += -std=gnu11 -fvisibility=hidden
$(RV_WESTON_SO): $(OBJ)/device/weston/rearview-weston.o $(LIBRVEVENTS_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -Wl,--exclude-libs,ALL -o $@ $(filter %.o %.a,$^) \
	  $(PROTOBUF_LIBS) $(WESTON_LIBS) -lpthread
all: $(RV_WESTON_SO)
endif
