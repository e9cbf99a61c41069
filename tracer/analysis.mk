# tracer/analysis.mk — librvanalysis (decode, analyse, import, export) and
# the rvtrace CLI.  Included by tracer/tracer.mk.

RVA_SRC := tracer/analysis/model.c tracer/analysis/analysis.c \
           tracer/analysis/capture.c tracer/analysis/textio.c \
           tracer/analysis/svg.c tracer/analysis/android.c
RVA_OBJ := $(RVA_SRC:%.c=$(OBJ)/%.o)
LIBRVANALYSIS := $(LIB)/librvanalysis.a

$(OBJ)/tracer/analysis/%.o: CPPFLAGS += -Itracer/include
$(OBJ)/tests/rvtrace/%.o: CPPFLAGS += -Itracer/include -Itests/rvtrace

$(LIBRVANALYSIS): $(RVA_OBJ)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN)/rvtrace: $(OBJ)/tracer/analysis/rvtrace.o $(LIBRVANALYSIS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

LIBS        += $(LIBRVANALYSIS)
BINS        += $(BIN)/rvtrace
INSTALL_HDR += tracer/include/rearview/analysis.h

$(eval $(call rv_test,rvtrace,model,$(LIBRVANALYSIS),))
$(eval $(call rv_test,rvtrace,capture,$(LIBRVANALYSIS),))
$(eval $(call rv_test,rvtrace,textio,$(LIBRVANALYSIS),))
$(OBJ)/tests/rvtrace/test_textio.o: CPPFLAGS += -DRV_TESTDATA='"$(abspath ../shared/testdata)"'
$(eval $(call rv_test,rvtrace,android,$(LIBRVANALYSIS),))
$(OBJ)/tests/rvtrace/test_android.o: CPPFLAGS += -DRV_TESTDATA='"$(abspath ../shared/testdata)"'
