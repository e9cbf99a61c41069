# SPDX-License-Identifier: Apache-2.0
# policy/ — librvpolicy: consent, quota ledger, campaigns, signed policies.
# One static, PIC library (the daemon and the server link it) plus its tests.

POLICY_SRC := policy/src/rules.c policy/src/ledger.c policy/src/sign.c \
              policy/src/store.c
POLICY_OBJ := $(patsubst %.c,$(OBJ)/%.o,$(POLICY_SRC))

# Debian 12's mbedTLS 2.28 ships no pkg-config file.
SQLITE_CFLAGS := $(call pc,--cflags,sqlite3)
SQLITE_LIBS   := $(call pc,--libs,sqlite3)
MBEDTLS_LIBS  := -lmbedcrypto

# What a program linking librvpolicy.a must add.
RVPOLICY_LDLIBS := $(LIBRVCOMMON) $(SQLITE_LIBS) $(MBEDTLS_LIBS) $(PROTOBUF_LIBS) -lm

$(OBJ)/policy/%.o: CPPFLAGS += -Ipolicy/include $(SQLITE_CFLAGS) $(PROTOBUF_CFLAGS)
$(OBJ)/tests/policy/%.o: CPPFLAGS += -Ipolicy/include -Ipolicy/src $(PROTOBUF_CFLAGS)

LIBRVPOLICY := $(LIB)/librvpolicy.a
$(LIBRVPOLICY): $(POLICY_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

LIBS += $(LIBRVPOLICY)
INSTALL_HDR += policy/include/rearview/policy.h

$(eval $(call rv_test,policy,rules,$(LIBRVPOLICY) $(LIBRVPROTO),$(RVPOLICY_LDLIBS),unit))
$(eval $(call rv_test,policy,ledger,$(LIBRVPOLICY) $(LIBRVPROTO),$(RVPOLICY_LDLIBS),integration))
$(eval $(call rv_test,policy,sign,$(LIBRVPOLICY) $(LIBRVPROTO),$(RVPOLICY_LDLIBS),integration))

# rvpolicy: keygen / sign / verify on the command line.
RVPOLICY_BIN := $(BIN)/rvpolicy
$(RVPOLICY_BIN): $(OBJ)/policy/src/rvpolicy.o $(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVPOLICY_LDLIBS)
BINS += $(RVPOLICY_BIN)

$(eval $(call rv_test,policy,cli,$(LIBRVPOLICY) $(LIBRVPROTO),$(RVPOLICY_LDLIBS),integration))
$(TBIN)/policy/test_cli: | $(RVPOLICY_BIN)
$(OBJ)/tests/policy/test_cli.o: CPPFLAGS += -DRVPOLICY_BIN='"$(RVPOLICY_BIN)"'

# make bench: the cost of policy calls on the daemon's worker thread.
$(TBIN)/policy/bench_policy: $(OBJ)/tests/policy/bench_policy.o $(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(RVPOLICY_LDLIBS)
BENCHES += $(TBIN)/policy/bench_policy

# make fuzz (top Makefile: clang, RV_FUZZ=1): the policy input decoders.
ifeq ($(RV_FUZZ),1)
$(OBJ)/policy/%.o $(OBJ)/tests/policy/%.o: CFLAGS += -fsanitize=fuzzer-no-link
$(TBIN)/policy/fuzz_policy: $(OBJ)/tests/policy/fuzz_policy.o $(LIBRVPOLICY) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(RVPOLICY_LDLIBS)
FUZZ += $(TBIN)/policy/fuzz_policy
endif
