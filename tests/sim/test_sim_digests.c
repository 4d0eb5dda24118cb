// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The simulator's behaviour fingerprint (tests/sim/digests.sh): every
 * scenario of the matrix must reproduce the digest recorded in
 * tests/sim/digests.txt, so that a refactoring provably changes nothing and
 * a change of behaviour re-records the digests on purpose.
 */
#include "../harness.h"

MROCE_SUITE(sim_digests_suite)
Suite *sim_digests_suite(void)
{
	Suite *s = suite_create("sim_digests");

	mroce_add_script_test(s, "sim_digests", "tests/sim/digests.sh", "",
			      300);
	return s;
}
