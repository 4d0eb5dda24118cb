// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of user/io/afxdp.c that need no privileges: configuration checks
 * and the refusals of open(). Traffic is tested in tests/net/afxdp_ns.sh.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "../harness.h"
#include "../../user/io/io_int.h"
#include "mroce/io_afxdp.h"

static struct mroce_io_cfg good_cfg(const char *ifname)
{
	struct mroce_io_cfg c = {
		.kind = MROCE_IO_AFXDP,
		.family = AF_INET,
		.local_addr = {10, 0, 0, 1},
		.mroce_port = 4792,
		.rocev2_port = 4791,
		.ifname = ifname,
		.frame_size = 4096,
		.nframes = 4096,
	};
	return c;
}

static int try_open(const struct mroce_io_cfg *c)
{
	struct mroce_io *io = (struct mroce_io *)1;
	int err = mroce_io_open(c, &io);

	if (!err)
		mroce_io_close(io);
	else
		ck_assert_ptr_null(io);
	return err;
}

START_TEST(afxdp_open__rejects_bad_config)
{
	struct mroce_io_cfg c;

	c = good_cfg(NULL);
	ck_assert_int_eq(try_open(&c), -EINVAL);
	c = good_cfg("a_name_longer_than_ifnamsiz");
	ck_assert_int_eq(try_open(&c), -EINVAL);
	c = good_cfg("lo");
	c.family = 0;
	ck_assert_int_eq(try_open(&c), -EINVAL);
	c = good_cfg("lo");
	c.queue = MROCE_MAX_QUEUES;
	ck_assert_int_eq(try_open(&c), -EINVAL);
	c = good_cfg("lo");
	c.frame_size = 3000; /* aligned UMEM: a power of two */
	ck_assert_int_eq(try_open(&c), -EINVAL);
	c = good_cfg("lo");
	c.frame_size = 8192; /* more than a page */
	ck_assert_int_eq(try_open(&c), -EINVAL);
	c = good_cfg("lo");
	c.nframes = 16;
	ck_assert_int_eq(try_open(&c), -EINVAL);
	c = good_cfg("lo");
	c.tx_slots = 4097; /* more zero-copy buffers than the budget */
	ck_assert_int_eq(try_open(&c), -EINVAL);
}
END_TEST

START_TEST(afxdp_open__no_such_interface)
{
	struct mroce_io_cfg c = good_cfg("mroce_nonexist");

	ck_assert_int_eq(try_open(&c), -ENODEV);
}
END_TEST

START_TEST(afxdp_open__refuses_interface_without_mroce)
{
	/* loopback never has mroce attached in the tests: -ENOENT (no pins)
	 * for root, -EPERM without the privilege to open pinned maps */
	struct mroce_io_cfg c = good_cfg("lo");
	int err = try_open(&c);

	ck_assert_msg(err == -ENOENT || err == -EPERM, "err %d", err);
}
END_TEST

START_TEST(afxdp_extras__refuse_other_backends)
{
	struct mroce_io fake = {.ops = &mroce_io_udp_ops};
	struct mroce_conn_val v = {.slot = 1};
	struct mroce_io_afxdp_stats st;

	ck_assert_int_eq(
		mroce_io_afxdp_conn_add(NULL, MROCE_CONN_METAROCE, 1, &v),
		-EINVAL);
	ck_assert_int_eq(
		mroce_io_afxdp_conn_add(&fake, MROCE_CONN_METAROCE, 1, &v),
		-EINVAL);
	ck_assert_int_eq(mroce_io_afxdp_conn_del(&fake, MROCE_CONN_METAROCE, 1),
			 -EINVAL);
	ck_assert_ptr_null(mroce_io_afxdp_maps(&fake));
	ck_assert_ptr_null(mroce_io_afxdp_maps(NULL));
	ck_assert_int_eq(mroce_io_afxdp_get_stats(&fake, &st), -EINVAL);
}
END_TEST

START_TEST(tx_bufs__only_where_the_backend_has_them)
{
	struct mroce_io fake = {.ops = &mroce_io_udp_ops};
	uint8_t *b[2] = {NULL, NULL};
	uint32_t cap = 7;

	ck_assert_int_eq(mroce_io_tx_bufs(NULL, b, 1, &cap), -EINVAL);
	ck_assert_int_eq(mroce_io_tx_bufs(&fake, NULL, 1, &cap), -EINVAL);
	ck_assert_int_eq(mroce_io_tx_bufs(&fake, b, -1, &cap), -EINVAL);
	ck_assert_int_eq(mroce_io_tx_bufs(&fake, b, 1, NULL), -EINVAL);
	/* UDP has no buffers of its own: the caller keeps its scratch */
	ck_assert_int_eq(mroce_io_tx_bufs(&fake, b, 2, &cap), -EOPNOTSUPP);
	ck_assert_int_eq(mroce_io_tx_bufs(&fake, NULL, 0, &cap), -EOPNOTSUPP);
	ck_assert_ptr_null(b[0]);
	ck_assert_uint_eq(cap, 7);
	/* put of what was never handed out: ignored */
	mroce_io_tx_bufs_put(&fake, b, 2);
	mroce_io_tx_bufs_put(NULL, b, 2);
}
END_TEST

MROCE_SUITE(io_afxdp_suite)
Suite *io_afxdp_suite(void)
{
	Suite *s = suite_create("io_afxdp");
	TCase *tc = tcase_create("open");

	tcase_add_test(tc, afxdp_open__rejects_bad_config);
	tcase_add_test(tc, afxdp_open__no_such_interface);
	tcase_add_test(tc, afxdp_open__refuses_interface_without_mroce);
	tcase_add_test(tc, afxdp_extras__refuse_other_backends);
	tcase_add_test(tc, tx_bufs__only_where_the_backend_has_them);
	suite_add_tcase(s, tc);
	return s;
}
