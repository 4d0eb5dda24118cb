# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# tests/: the Check runner and every suite. Suites register themselves with
# MROCE_SUITE(); add the file here and it runs in `make check`.
TEST_SRCS += tests/harness.c $(sort $(wildcard tests/unit/test_*.c)) \
	$(sort $(wildcard tests/bpf/test_*.c)) $(sort $(wildcard tests/net/test_*.c)) \
	$(sort $(wildcard tests/sim/test_*.c)) \
	$(sort $(wildcard tests/install/test_*.c)) \
	$(sort $(wildcard tests/house/test_*.c))
