# tracer/rvcc.mk — rvcc, the compiler wrapper (CC="rvcc gcc"): adds the
# instrumentation and links librvtrace.  It finds the library in the lib/
# beside its own bin/ (build tree or installed prefix), else in PREFIX.
$(OBJ)/tracer/rvcc/rvcc.o: CPPFLAGS += -DRVCC_PREFIX='"$(PREFIX)"'
$(BIN)/rvcc: $(OBJ)/tracer/rvcc/rvcc.o | $(LIBRVTRACE_A) $(LIBRVTRACE_SO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
BINS += $(BIN)/rvcc
