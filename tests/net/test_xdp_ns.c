// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Registers tests/net/xdp_ns.sh: mrocectl attach/stats/detach and the XDP
 * program on a veth pair between two private namespaces, with real frames.
 * The script's --probe turns "not root / no netns / not built" into a skip.
 */
#include "../harness.h"

MROCE_SUITE(xdp_ns_suite)
Suite *xdp_ns_suite(void)
{
	Suite *s = suite_create("xdp_ns");

	mroce_add_script_test(s, "xdp_ns", "tests/net/xdp_ns.sh", "", 120);
	return s;
}
