// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Registers the test-fabric scripts (tests/net/fabric_*.sh): scripts/
 * fabric.sh builds namespaces, veth paths, ECMP, tbf, nftables loss and
 * blackholes, and the ECN marker; mroce_blast blasts through it; and the
 * benchmark scripts' arguments and seed summary (bench_scripts.sh). Each
 * script's --probe turns "not root / no netns / not built" into a skip.
 */
#include "../harness.h"

MROCE_SUITE(fabric_suite)
Suite *fabric_suite(void)
{
	Suite *s = suite_create("fabric");

	mroce_add_script_test(s, "fabric_updown", "tests/net/fabric_updown.sh",
			      "", 60);
	mroce_add_script_test(s, "fabric_ping", "tests/net/fabric_ping.sh", "",
			      60);
	mroce_add_script_test(s, "fabric_ecmp", "tests/net/fabric_ecmp.sh", "",
			      60);
	mroce_add_script_test(s, "fabric_loss", "tests/net/fabric_loss.sh", "",
			      60);
	mroce_add_script_test(s, "fabric_ecn", "tests/net/fabric_ecn.sh", "",
			      60);
	mroce_add_script_test(s, "fabric_blast", "tests/net/fabric_blast.sh",
			      "", 60);
	mroce_add_script_test(s, "bench_scripts",
			      "tests/net/bench_scripts.sh", "", 240);
	return s;
}
