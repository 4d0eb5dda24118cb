// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Registers tests/net/perf_udp.sh: mroce_perf server and client over the
 * UDP backend in a private network namespace, every test with --verify,
 * both transports, output columns checked by position; and
 * tests/net/perf_loss.sh: the same with --verify over a loopback that
 * drops 2% of the packets (nftables), where every byte must still be right;
 * and tests/net/perf_afxdp.sh: both transports over the AF_XDP backend
 * between two namespaces at MTU 1500 and 9000, with the XDP counters
 * checked (skipped where XDP/AF_XDP is not available).
 */
#include "../harness.h"

MROCE_SUITE(perf_suite)
Suite *perf_suite(void)
{
	Suite *s = suite_create("perf");

	mroce_add_script_test(s, "perf_udp", "tests/net/perf_udp.sh", "", 120);
	mroce_add_script_test(s, "perf_loss", "tests/net/perf_loss.sh", "",
			      120);
	mroce_add_script_test(s, "perf_afxdp", "tests/net/perf_afxdp.sh", "",
			      120);
	return s;
}
