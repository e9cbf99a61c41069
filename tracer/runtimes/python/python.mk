# SPDX-License-Identifier: Apache-2.0
# rvpython — CPython 3.11 traced at its own level through librvtrace's
# runtime API (tracer/runtimes/python/README.md): a C extension, built
# against Debian's python3.11 headers (python3-dev) and linked with
# librvtrace.a, plus the package's Python files, as the importable package
# $(RVPY_DIR)/rvpython (PYTHONPATH=$(RVPY_DIR)).  Built by `make` when the
# headers are there (deploy/install-deps.sh installs them); not in
# sanitizer flavours (the interpreter is not built with their runtime).
# tests/rvtrace/test_rvpython traces real scripts under /usr/bin/python3.11.

RVPY_OK := $(shell $(PKG_CONFIG) --exists python-3.11 && echo yes)
RVPY_DIR := $(LIB)/python
RVPY_PKG := $(RVPY_DIR)/rvpython
# The interpreter the headers belong to (Debian's, never a pyenv shim's).
RVPY_PYTHON := $(shell $(PKG_CONFIG) --variable=exec_prefix python-3.11 2>/dev/null)/bin/python3.11
RVPY_FILES := $(RVPY_PKG)/__init__.py $(RVPY_PKG)/__main__.py

ifeq ($(SANFLAGS)$(RVPY_OK),yes)
# The file name that interpreter, and only it, loads (.cpython-311-<triplet>.so).
RVPY_SO := $(RVPY_PKG)/_rvpython$(shell $(RVPY_PYTHON) -c \
  'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
# CPython's headers as system headers: their internal ones (the frame
# layout) do not pass clang's -Wcast-align.
$(OBJ)/tracer/runtimes/python/rvpython.o: CPPFLAGS += -Itracer/include \
  $(patsubst -I%,-isystem %,$(call pc,--cflags,python-3.11))
$(RVPY_SO): $(OBJ)/tracer/runtimes/python/rvpython.o $(LIBRVTRACE_A) $(LIBRVPROTO)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -shared -o $@ $^ $(RVT_LDLIBS)
$(RVPY_PKG)/%.py: tracer/runtimes/python/rvpython/%.py
	@mkdir -p $(@D)
	cp $< $@

rvpython: $(RVPY_SO) $(RVPY_FILES)

all: rvpython

$(eval $(call rv_test,rvtrace,rvpython,$(LIBRVANALYSIS),$(RVA_LIBS),integration plain))
$(TBIN)/rvtrace/test_rvpython: | rvpython
$(OBJ)/tests/rvtrace/test_rvpython.o: CPPFLAGS += -DRVPY_PYTHON='"$(RVPY_PYTHON)"' \
  -DRVPY_PATH='"$(abspath $(RVPY_DIR))"' -DRVPY_SCRIPTS='"$(CURDIR)/tests/rvtrace/rvpython"'
endif

.PHONY: rvpython
