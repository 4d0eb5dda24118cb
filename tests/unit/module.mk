# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# tests/unit: the unit suites (tests/unit/test_*.c, picked up by
# tests/module.mk) and the code they share: lib_fixture.c, the libmroce
# tests' connection fixture (test_lib.c, test_daemon.c).
TEST_SRCS += tests/unit/lib_fixture.c
