# SPDX-License-Identifier: Apache-2.0
# deploy/man.mk — the man pages: scdoc sources beside each component
# (<component>/man/NAME.SECTION.scd) made into roff in $(BUILD)/man/, and
# installed under MANDIR/manSECTION by `make install`.  A program's page is
# installed only with the program (rvlua needs Lua's source); the pages of
# configuration files (section 5) always.  tests/deploy/test_man.sh holds
# each program's page and its --help to the same options.
RV_MAN_DIRS := device/man tracer/man policy/man server/man
RV_MAN_SRC  := $(wildcard $(addsuffix /*.scd,$(RV_MAN_DIRS)))
RV_MAN_ALL  := $(patsubst %.scd,$(BUILD)/man/%,$(notdir $(RV_MAN_SRC)))
RV_BIN_NAMES := $(notdir $(BINS))
MANS += $(foreach m,$(RV_MAN_ALL),$(if $(or $(filter 5,$(subst ., ,$(suffix $(m)))),\
          $(filter $(basename $(notdir $(m))),$(RV_BIN_NAMES))),$(m)))
vpath %.scd $(RV_MAN_DIRS)
$(BUILD)/man/%: %.scd
	@mkdir -p $(@D)
	scdoc < $< > $@.tmp && mv $@.tmp $@
all: $(MANS)

# The pages against the programs' --help (every option in one is in the
# other) and the configuration pages against the example configs.
$(TBIN)/deploy/test_man: tests/deploy/test_man.sh $(MANS) $(BINS)
	@mkdir -p $(@D)
	printf '#!/bin/sh\nexec sh %s %s %s %s %s\n' '$(CURDIR)/$<' '$(abspath $(BIN))' \
	  '$(abspath $(BUILD)/man)' '$(RV_VERSION)' '$(RV_BIN_NAMES)' > $@
	chmod +x $@
$(eval $(call rv_register,$(TBIN)/deploy/test_man,integration))
