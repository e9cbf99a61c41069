# SPDX-License-Identifier: Apache-2.0
# tests/ — cmocka unit tests per component (tests/<component>/test_<unit>.c),
# integration tests (tests/integration/) that start real processes.
# Test binaries are declared with $(call rv_test,…) in the component fragments
# or here, each with its tier (Makefile, rv_register); tests/run-tests.sh
# runs them.

# A header listing every generated message descriptor, so the round-trip test
# covers messages added to the schemas later without being edited.
$(GEN)/rearview/all-messages.h: $(PROTO_H)
	@mkdir -p $(@D)
	{ for h in $(notdir $(PROTO_H)); do echo "#include \"rearview/$$h\""; done; \
	  echo "static const ProtobufCMessageDescriptor *const rv_all_messages[] = {"; \
	  sed -n 's/^extern const ProtobufCMessageDescriptor \([a-z0-9_]*__descriptor\);/  \&\1,/p' $(PROTO_H); \
	  echo "};"; } > $@

$(OBJ)/tests/proto/test_messages.o: $(GEN)/rearview/all-messages.h
$(OBJ)/tests/proto/%.o: CPPFLAGS += $(PROTOBUF_CFLAGS)

$(eval $(call rv_test,proto,frame,$(LIBRVPROTO),$(PROTOBUF_LIBS),unit))
$(eval $(call rv_test,proto,messages,$(LIBRVPROTO),$(PROTOBUF_LIBS),unit))

# Integration: librvtrace + librvanalysis on a real two-module process.
# chain_app is instrumented in call mode and in inline mode; its second
# module libchainmod.so is instrumented in call mode.
ITEST := $(TBIN)/integration
CHAIN_call_FLAGS   :=
CHAIN_inline_FLAGS := -include tracer/include/rearview/trace-inline.h
.SECONDARY: $(OBJ)/tests/integration/chain_app_call.o $(OBJ)/tests/integration/chain_app_inline.o
$(OBJ)/tests/integration/chain_%.o: CFLAGS += -O1 -finstrument-functions
$(OBJ)/tests/integration/chain_app_%.o: tests/integration/chain_app.c $(FLAGS_STAMP) | $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(CHAIN_$*_FLAGS) -c -o $@ $<
$(ITEST)/libchainmod.so: $(OBJ)/tests/integration/chain_mod.o $(LIBRVTRACE_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -o $@ $< -L$(LIB) -lrvtrace
$(ITEST)/chain_app_%: $(OBJ)/tests/integration/chain_app_%.o $(ITEST)/libchainmod.so $(LIBRVTRACE_SO)
	$(CC) $(LDFLAGS) -o $@ $< -L$(ITEST) -lchainmod -L$(LIB) -lrvtrace

$(OBJ)/tests/integration/test_capture_chain.o: CPPFLAGS += -Itracer/include -Itracer/analysis/include \
	-DRV_APP_DIR='"$(CURDIR)/$(ITEST)"' -DRV_LIB_DIR='"$(CURDIR)/$(LIB):$(CURDIR)/$(ITEST)"'
$(eval $(call rv_test,integration,capture_chain,$(LIBRVANALYSIS),$(RVA_LIBS),integration))
$(ITEST)/test_capture_chain: | $(ITEST)/chain_app_call $(ITEST)/chain_app_inline

# Allocation-failure ("torture") tests: tests/torture/torture.c defines the
# process's malloc family, so it is linked into these binaries only.  It is
# not instrumented: ASan calls malloc while it initializes, before its shadow
# memory exists.
TORTURE_OBJ := $(OBJ)/tests/torture/torture.o
$(OBJ)/tests/torture/%.o: CPPFLAGS += $(CMOCKA_CFLAGS) -Itests/torture
$(OBJ)/tests/torture/torture.o: CFLAGS += -fno-builtin -fno-sanitize=all
$(OBJ)/tests/torture/test_analysis.o: CPPFLAGS += -Itracer/analysis/include -Itests/rvtrace
$(eval $(call rv_test,torture,analysis,$(TORTURE_OBJ) $(LIBRVANALYSIS),$(RVA_LIBS),torture))
$(OBJ)/tests/torture/test_frame.o: CPPFLAGS += $(PROTOBUF_CFLAGS)
$(eval $(call rv_test,torture,frame,$(TORTURE_OBJ) $(LIBRVPROTO),$(PROTOBUF_LIBS),torture))
$(OBJ)/tests/torture/test_policy.o: CPPFLAGS += -Ipolicy/include $(PROTOBUF_CFLAGS)
$(eval $(call rv_test,torture,policy,$(TORTURE_OBJ) $(LIBRVPOLICY) $(LIBRVPROTO),$(RVPOLICY_LDLIBS),torture))
$(OBJ)/tests/torture/test_daemon_config.o: CPPFLAGS += -Idevice/src $(PROTOBUF_CFLAGS)
$(eval $(call rv_test,torture,daemon_config,$(TORTURE_OBJ) $(addprefix $(OBJ)/device/src/,config.o log.o),-linih $(call pc,--libs,libsystemd),torture))
# Parsers of untrusted text in the server core (S3 listings, campaign JSON,
# timeline parameters, search patterns), and rearviewd's events.sock decoder.
$(OBJ)/tests/torture/test_server_parsers.o: CPPFLAGS += -Iserver/src -Itests/rvtrace \
  -Itracer/analysis/include $(call pc,--cflags,jansson) $(PROTOBUF_CFLAGS) -DRVS_SRCDIR='"$(CURDIR)"'
$(eval $(call rv_test,torture,server_parsers,$(TORTURE_OBJ) $(SERVER_CORE) $(LIBRVANALYSIS) \
  $(LIBRVPOLICY) $(LIBRVPROTO),$(SERVER_LIBS) $(RVA_LIBS) $(RVPOLICY_LDLIBS) -lzstd,torture))
$(OBJ)/tests/torture/test_device_events.o: CPPFLAGS += -Idevice/src $(PROTOBUF_CFLAGS) \
  -DRV_SRC_DIR='"$(CURDIR)"'
$(eval $(call rv_test,torture,device_events,$(TORTURE_OBJ) $(OBJ)/device/src/anomaly.o \
  $(OBJ)/device/src/detect.o $(LIBRVPROTO),$(PROTOBUF_LIBS) -luv,torture))
# org.rearview.Daemon1 over a private sd-bus pair (the device_dbus fuzz harness).
$(OBJ)/tests/torture/test_device_dbus.o: CPPFLAGS += -Idevice/src -Ipolicy/include $(DEVICE_CFLAGS)
$(eval $(call rv_test,torture,device_dbus,$(TORTURE_OBJ) $(DEVICE_CORE_OBJ) $(LIBRVPOLICY) \
  $(LIBRVPROTO),$(DEVICE_LIBS),torture))
# The symbol store's ELF reader (symstore.c) needs no handler (issue 15).
$(OBJ)/tests/torture/test_server.o: CPPFLAGS += -Iserver/src $(PROTOBUF_CFLAGS)
$(eval $(call rv_test,torture,server,$(TORTURE_OBJ) $(SRV_CONFIG) $(SRV_HTTP) $(SRV_UPLOAD) \
  $(SRV_SKIPS) $(SRV_SYMSTORE) $(SRV_UTIL) $(LIBRVPROTO),-linih -lhttp_parser $(LIBELF_LIBS) \
  -lsqlite3 -lmbedcrypto $(PROTOBUF_LIBS),torture))
