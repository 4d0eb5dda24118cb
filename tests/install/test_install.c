// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Registers tests/install/install.sh: `make install` into a temporary
 * DESTDIR, the installed ABI (only the API exported), pkg-config, man
 * pages and systemd unit, user/examples/example.c built against the
 * installed tree with pkg-config alone (shared and static) and run as a
 * loopback pair, then `make uninstall` leaving nothing behind.
 */
#include "../harness.h"

MROCE_SUITE(install_suite)
Suite *install_suite(void)
{
	Suite *s = suite_create("install");

	mroce_add_script_test(s, "install", "tests/install/install.sh", "",
			      300);
	return s;
}
