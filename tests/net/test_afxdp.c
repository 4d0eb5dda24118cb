// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Registers tests/net/afxdp_ns.sh: the AF_XDP backend (user/io/afxdp.c)
 * between two private namespaces on a veth pair, at MTU 1500 and at MTU
 * 9000 with multi-buffer AF_XDP; and tests/net/afxdp_fabric.sh: MetaRoCE
 * over AF_XDP (libmroce's endpoint registering connection ids with the XDP
 * program) across the 4-path namespace fabric, with spraying and the XDP
 * counters checked. The scripts' --probe turns "not root / no netns / no
 * AF_XDP / not built" into a skip.
 */
#include "../harness.h"

MROCE_SUITE(afxdp_ns_suite)
Suite *afxdp_ns_suite(void)
{
	Suite *s = suite_create("afxdp_ns");

	mroce_add_script_test(s, "afxdp_ns", "tests/net/afxdp_ns.sh", "", 90);
	mroce_add_script_test(s, "afxdp_fabric", "tests/net/afxdp_fabric.sh",
			      "", 300);
	return s;
}
