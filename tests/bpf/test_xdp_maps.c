// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of user/xdp/xdp_maps.c and xdp_state.c (include/mroce/xdp.h): the
 * userspace side of the shared maps. The BPF-facing behaviour is in
 * test_xdp.c. */
#include "../harness.h"

#include <string.h>

#include "mroce/xdp.h"

START_TEST(mroce_xdp_err_name__every_error_named)
{
	for (int e = 1; e < MROCE_XDP_E__COUNT; e++) {
		ck_assert_str_ne(mroce_xdp_err_name(-e), "UNKNOWN");
		ck_assert_str_ne(mroce_xdp_err_text(-e), "unknown error");
	}
	ck_assert_str_eq(mroce_xdp_err_name(0), "OK");
	ck_assert_str_eq(mroce_xdp_err_name(-MROCE_XDP_E_NO_IFACE), "NO_IFACE");
	ck_assert_str_eq(mroce_xdp_err_name(MROCE_XDP_E__COUNT), "UNKNOWN");
}
END_TEST

START_TEST(mroce_xdp_counter_find__names_match_struct)
{
	struct mroce_xdp_counters c;

	memset(&c, 0, sizeof(c));
	c.drop_no_xsk = 7;
	c.rx_packets = 3;
	ck_assert_int_eq(mroce_xdp_counter_find("rx_packets"), 0);
	ck_assert_uint_eq(mroce_xdp_counter_get(
				  &c, mroce_xdp_counter_find("drop_no_xsk")),
			  7);
	ck_assert_uint_eq(mroce_xdp_counter_get(&c, 0), 3);
	ck_assert_int_eq(mroce_xdp_counter_find("nope"), -1);
	ck_assert_ptr_null(mroce_xdp_counter_name(MROCE_XC__COUNT));
	for (unsigned int i = 0; i < MROCE_XC__COUNT; i++) {
		ck_assert_int_eq(
			mroce_xdp_counter_find(mroce_xdp_counter_name(i)),
			(int)i);
		ck_assert_ptr_nonnull(mroce_xdp_counter_desc(i));
	}
}
END_TEST

START_TEST(mroce_rx_publish__seq_even_and_fields_set)
{
	struct mroce_rx_path rp;
	uint8_t sack[MROCE_SACK_BYTES] = {1, 2, 3};

	memset(&rp, 0, sizeof(rp));
	rp.ce_total = 5;
	mroce_rx_publish(&rp, 4, MROCE_RXP_F_VALID, 77, 80, 100, sack);
	ck_assert_uint_eq(rp.seq, 2);
	ck_assert_uint_eq(rp.gen, 4);
	ck_assert_uint_eq(rp.cum_psn, 77);
	ck_assert_uint_eq(rp.rx_high, 80);
	ck_assert_uint_eq(rp.rate_mbps, 100);
	ck_assert_mem_eq(rp.sack, sack, sizeof(sack));
	/* the BPF-owned fields are left alone */
	ck_assert_uint_eq(rp.ce_total, 5);
	mroce_rx_publish(&rp, 4, 0, 78, 78, 0, NULL);
	ck_assert_uint_eq(rp.seq, 4);
	ck_assert_uint_eq(rp.sack[0], 0);
	ck_assert_uint_eq(rp.flags, 0);
}
END_TEST

START_TEST(mroce_xdp_rx_path__bounds)
{
	static struct mroce_rx_path arr[2];
	struct mroce_xdp_maps m;

	memset(&m, 0, sizeof(m));
	ck_assert_ptr_null(mroce_xdp_rx_path(&m, 0, 0)); /* not mapped */
	m.rx_state = arr;
	ck_assert_ptr_eq(mroce_xdp_rx_path(&m, 0, 1), &arr[1]);
	ck_assert_ptr_null(mroce_xdp_rx_path(&m, MROCE_MAX_CONNS, 0));
	ck_assert_ptr_null(mroce_xdp_rx_path(&m, 0, MROCE_MAX_PATHS));
}
END_TEST

START_TEST(mroce_xdp_conn_add__rejects_bad_arguments)
{
	struct mroce_xdp_maps m;
	struct mroce_conn_val v = {.slot = MROCE_MAX_CONNS};

	memset(&m, 0, sizeof(m));
	m.conns_fd = -1;
	ck_assert_int_eq(mroce_xdp_conn_add(&m, MROCE_CONN_METAROCE, 1, &v),
			 -MROCE_XDP_E_INVAL);
	v.slot = 0;
	ck_assert_int_eq(mroce_xdp_conn_add(&m, 9, 1, &v), -MROCE_XDP_E_INVAL);
	ck_assert_int_eq(
		mroce_xdp_conn_add(&m, MROCE_CONN_ROCEV2, 1u << 24, &v),
		-MROCE_XDP_E_INVAL);
	ck_assert_int_eq(mroce_xdp_xsk_set(&m, MROCE_MAX_QUEUES, 3),
			 -MROCE_XDP_E_INVAL);
}
END_TEST

START_TEST(mroce_xdp_maps_open__not_attached)
{
	struct mroce_xdp_maps m;

	ck_assert_int_eq(mroce_xdp_maps_open("mroce-no-such-if", &m),
			 -MROCE_XDP_E_NOT_ATTACHED);
	ck_assert_int_eq(m.conns_fd, -1);
	ck_assert_int_eq(mroce_xdp_maps_open("a/b", &m), -MROCE_XDP_E_INVAL);
}
END_TEST

MROCE_SUITE(xdp_maps_suite)
Suite *xdp_maps_suite(void)
{
	Suite *s = suite_create("xdp_maps");
	TCase *tc = tcase_create("lib");
	TCase *root;
	const char *why = mroce_need_bpf();

	tcase_add_test(tc, mroce_xdp_err_name__every_error_named);
	tcase_add_test(tc, mroce_xdp_counter_find__names_match_struct);
	tcase_add_test(tc, mroce_rx_publish__seq_even_and_fields_set);
	tcase_add_test(tc, mroce_xdp_rx_path__bounds);
	tcase_add_test(tc, mroce_xdp_conn_add__rejects_bad_arguments);
	suite_add_tcase(s, tc);
	if (why) {
		mroce_skip("xdp_maps/pins", why);
	} else {
		root = tcase_create("pins");
		tcase_add_test(root, mroce_xdp_maps_open__not_attached);
		suite_add_tcase(s, root);
	}
	return s;
}
