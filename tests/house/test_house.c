// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The house rules (tests/house/house.sh): no source file under user/ above
 * 1,200 lines, no function above 120 lines, and no two directories whose
 * files include each other. They keep the rooms small enough to live in.
 */
#include "../harness.h"

MROCE_SUITE(house_suite)
Suite *house_suite(void)
{
	Suite *s = suite_create("house");

	mroce_add_script_test(s, "house", "tests/house/house.sh", "", 120);
	return s;
}
