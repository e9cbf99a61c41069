# tests/ — cmocka unit tests per component (tests/<component>/test_<unit>.c),
# integration tests (tests/integration/) that start real processes.
# Test binaries are declared with $(call rv_test,…) in the component fragments
# or here; `make check` runs all of $(TESTS) through tests/run-tests.sh.

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

$(eval $(call rv_test,proto,frame,$(LIBRVPROTO),$(PROTOBUF_LIBS)))
$(eval $(call rv_test,proto,messages,$(LIBRVPROTO),$(PROTOBUF_LIBS)))
