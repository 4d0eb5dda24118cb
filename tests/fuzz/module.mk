# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Fuzz targets: tests/fuzz/fuzz_<name>.c, corpus in tests/fuzz/corpus/<name>/.
FUZZ_TARGET_SRCS := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZERS += $(patsubst tests/fuzz/%.c,%,$(FUZZ_TARGET_SRCS))
$(foreach f,$(FUZZ_TARGET_SRCS),$(eval $(patsubst tests/fuzz/%.c,%,$(f))_SRC := $(f)))
TEST_SRCS += tests/fuzz/replay.c $(FUZZ_TARGET_SRCS)
