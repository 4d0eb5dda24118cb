// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Registers the end-to-end scripts (tests/net/e2e_*.sh, shared code in
 * tests/net/e2e_lib.sh): mroce_perf --verify between two hosts of a 4-path
 * scripts/fabric.sh fabric, both transports, both I/O backends, every
 * operation, under a clean fabric, 1% and 5% random loss, paths of unequal
 * rates (reordering) and one path blackholed mid-run; and IPv6 through the
 * library and the daemon on a fabric with IPv6 addresses; and a MetaRoCE
 * sender slowing down for the CE marks of the fabric's ECN marker. The
 * matrix is in
 * docs/fabric.md ("End-to-end tests"). Each script's --probe turns "not
 * root / no netns / no AF_XDP / not built" into a skip.
 */
#include "../harness.h"

MROCE_SUITE(e2e_suite)
Suite *e2e_suite(void)
{
	Suite *s = suite_create("e2e");

	mroce_add_script_test(s, "e2e_clean", "tests/net/e2e_clean.sh", "",
			      180);
	mroce_add_script_test(s, "e2e_loss", "tests/net/e2e_loss.sh", "", 300);
	mroce_add_script_test(s, "e2e_reorder", "tests/net/e2e_reorder.sh", "",
			      300);
	mroce_add_script_test(s, "e2e_blackhole", "tests/net/e2e_blackhole.sh",
			      "", 300);
	mroce_add_script_test(s, "e2e_ipv6", "tests/net/e2e_ipv6.sh", "", 180);
	mroce_add_script_test(s, "e2e_ecn", "tests/net/e2e_ecn.sh", "", 120);
	return s;
}
