// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The house rules (tests/house/house.sh): no source file under user/ above
 * 1,200 lines, no function above 120 lines, and no two directories whose
 * files include each other. They keep the rooms small enough to live in.
 * And the runner's own strict mode (tests/house/strict.sh): the skips
 * MROCE_MUST_RUN names are failures.
 */
#include "../harness.h"

MROCE_SUITE(house_suite)
Suite *house_suite(void)
{
	Suite *s = suite_create("house");

	mroce_add_script_test(s, "house", "tests/house/house.sh", "", 120);
	mroce_add_script_test(s, "strict", "tests/house/strict.sh", "", 300);
	return s;
}
