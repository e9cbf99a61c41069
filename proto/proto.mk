# SPDX-License-Identifier: Apache-2.0
# proto/ — schemas compiled by protoc-c into $(GEN)/rearview/, plus the
# framing library.  Everything lands in one static, PIC library that the
# tracer, policy, daemon and server link: build/lib/librvproto.a.

PROTO_SRC := $(wildcard proto/rearview/*.proto)
PROTO_C   := $(patsubst proto/%.proto,$(GEN)/%.pb-c.c,$(PROTO_SRC))
PROTO_H   := $(PROTO_C:.c=.h)
PROTO_OBJ := $(patsubst $(GEN)/%.c,$(OBJ)/gen/%.o,$(PROTO_C)) $(OBJ)/proto/src/frame.o

# protoc-c writes every .pb-c.c/.h of a run at once; a grouped target keeps
# `make -j` from running it once per file.
$(PROTO_C) $(PROTO_H) &: $(PROTO_SRC)
	@mkdir -p $(GEN)
	$(PROTOC_C) --proto_path=proto --c_out=$(GEN) $(PROTO_SRC)

$(OBJ)/gen/%.o: $(GEN)/%.c $(PROTO_H) $(FLAGS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PROTOBUF_CFLAGS) $(CFLAGS) -Wno-missing-prototypes -c -o $@ $<

$(OBJ)/proto/%.o: CPPFLAGS += $(PROTOBUF_CFLAGS)

LIBRVPROTO := $(LIB)/librvproto.a
$(LIBRVPROTO): $(PROTO_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && $(AR) rcs $@ $^

LIBS += $(LIBRVPROTO)
INSTALL_HDR += proto/include/rearview/frame.h
