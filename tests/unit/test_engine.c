// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/engine/engine.c: configuration, create, the seeded RNG,
 * peers.
 */
#include "../harness.h"
#include "engine_fixture.h"

START_TEST(mroce_engine_cfg_default__fills_only_zero_fields)
{
	struct mroce_engine_cfg c = { .mtu = 1024, .retry_cnt = 3 };

	mroce_engine_cfg_default(&c);
	ck_assert_uint_eq(c.transport, MROCE_TRANSPORT_METAROCE);
	ck_assert_uint_eq(c.npaths, 8);
	ck_assert_uint_eq(c.mtu, 1024);
	ck_assert_uint_eq(c.retry_cnt, 3);
	ck_assert_uint_eq(c.rnr_retry, 7);
	ck_assert_uint_eq(c.max_qps, 4096);
	ck_assert_uint_eq(c.rto_min_us, 200);
}
END_TEST

START_TEST(mroce_engine_create__rejects_bad_config)
{
	struct mroce_engine *e;
	struct mroce_engine_cfg c = { .transport = 3 };

	ck_assert_int_eq(mroce_engine_create(&c, &e), -EINVAL);
	c = (struct mroce_engine_cfg){ .npaths = MROCE_MAX_PATHS + 1 };
	ck_assert_int_eq(mroce_engine_create(&c, &e), -EINVAL);
	c = (struct mroce_engine_cfg){ .mtu = 100 };
	ck_assert_int_eq(mroce_engine_create(&c, &e), -EINVAL);
	c = (struct mroce_engine_cfg){ .mtu = MROCE_MAX_PAYLOAD + 4 };
	ck_assert_int_eq(mroce_engine_create(&c, &e), -EINVAL);
	ck_assert_int_eq(mroce_engine_create(NULL, &e), -EINVAL);
	mroce_engine_destroy(NULL);
}
END_TEST

START_TEST(mroce_rng__same_seed_same_sequence)
{
	struct mroce_engine *a = mk(5), *b = mk(5), *c = mk(6);
	int same = 0;

	for (int i = 0; i < 100; i++) {
		uint64_t x = mroce_rng_u64(a);

		ck_assert_uint_eq(x, mroce_rng_u64(b));
		same += x == mroce_rng_u64(c);
	}
	ck_assert_int_lt(same, 2);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_lt(mroce_rng_below(a, 7), 7);
	mroce_engine_destroy(a);
	mroce_engine_destroy(b);
	mroce_engine_destroy(c);
}
END_TEST

START_TEST(mroce_peer_add__same_address_same_id)
{
	struct mroce_engine *e = mk(1);
	struct mroce_peer_addr bad = { .family = 99 };

	ck_assert_int_eq(mk_peer(e, 1), 0);
	ck_assert_int_eq(mk_peer(e, 2), 1);
	ck_assert_int_eq(mk_peer(e, 1), 0);
	ck_assert_int_eq(mroce_peer_add(e, &bad), -EINVAL);
	for (int i = 3; i < 40; i++)	/* grows */
		ck_assert_int_eq(mk_peer(e, (uint8_t)i), i - 1);
	mroce_engine_destroy(e);
}
END_TEST

MROCE_SUITE(engine_suite)
Suite *engine_suite(void)
{
	Suite *s = suite_create("engine");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, mroce_engine_cfg_default__fills_only_zero_fields);
	tcase_add_test(tc, mroce_engine_create__rejects_bad_config);
	tcase_add_test(tc, mroce_rng__same_seed_same_sequence);
	tcase_add_test(tc, mroce_peer_add__same_address_same_id);
	suite_add_tcase(s, tc);
	return s;
}
