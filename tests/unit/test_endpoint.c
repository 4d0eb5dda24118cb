// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the endpoint pump (user/endpoint/endpoint.c) over the UDP
 * backend on loopback: two endpoints (127.0.0.1 and 127.0.0.2) each running both
 * transports on one backend, RDMA WRITEs of both transports between them
 * at the same time (so the pump must dispatch by destination port), the
 * named errors of bad configurations and address strings.
 */
#include "../harness.h"
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../../user/endpoint/endpoint.h"
#include "../../user/engine/engine_int.h"

#define ACC_ALL                                                                \
	(MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |                \
	 MROCE_ACCESS_REMOTE_READ)

static struct mroce_ep_cfg cfg_for(const char *addr, uint16_t port,
				   bool mr, bool rv2)
{
	struct mroce_ep_cfg c = {0};

	c.io.kind = MROCE_IO_UDP;
	c.io.family = AF_INET;
	ck_assert_int_eq(inet_pton(AF_INET, addr, c.io.local_addr), 1);
	c.io.mroce_port = port;
	c.io.rocev2_port = (uint16_t)(port + 1);
	if (mr) {
		c.eng[0].transport = MROCE_TRANSPORT_METAROCE;
		c.eng[0].mtu = 1024;
		c.eng[0].seed = 5;
		c.eng[0].rto_min_us = 5000; /* a busy shared machine */
	}
	if (rv2) {
		c.eng[1].transport = MROCE_TRANSPORT_ROCEV2;
		c.eng[1].mtu = 1024;
		c.eng[1].seed = 6;
		c.eng[1].rto_min_us = 5000;
	}
	return c;
}

/* Two endpoints on free ports (retrying when a port pair is taken). */
static void open_pair(struct mroce_ep **a, struct mroce_ep **b, bool mr,
		      bool rv2)
{
	for (int tries = 0; tries < 50; tries++) {
		uint16_t port = (uint16_t)(20000 + ((getpid() * 7 + tries * 131) %
						    20000) * 2);
		struct mroce_ep_cfg ca = cfg_for("127.0.0.1", port, mr, rv2);
		struct mroce_ep_cfg cb = cfg_for("127.0.0.2", port, mr, rv2);
		int err = mroce_ep_open(&ca, a);

		if (err == -EADDRINUSE)
			continue;
		ck_assert_int_eq(err, 0);
		err = mroce_ep_open(&cb, b);
		if (err == -EADDRINUSE) {
			mroce_ep_close(*a);
			continue;
		}
		ck_assert_int_eq(err, 0);
		return;
	}
	ck_abort_msg("no free UDP port pair");
}

struct side {
	struct mroce_engine *e;
	int cq;
	uint32_t qpn;
	struct mroce_mr mr;
	uint8_t *buf;
};

static void side_init(struct side *s, struct mroce_ep *ep,
		      enum mroce_transport t, size_t len, int seed)
{
	struct mroce_qp_init_attr ia = {.max_send_wr = 64, .max_recv_wr = 64};
	int r;

	s->e = mroce_ep_engine(ep, t);
	ck_assert_ptr_nonnull(s->e);
	s->cq = mroce_create_cq(s->e, 256);
	ck_assert_int_ge(s->cq, 0);
	ia.send_cq = ia.recv_cq = s->cq;
	r = mroce_create_qp(s->e, &ia);
	ck_assert_int_gt(r, 0);
	s->qpn = (uint32_t)r;
	s->buf = malloc(len);
	for (size_t k = 0; k < len; k++)
		s->buf[k] = (uint8_t)(k * 13 + (size_t)seed * 71 + (k >> 10));
	ck_assert_int_eq(mroce_reg_mr(s->e, s->buf, len, ACC_ALL, &s->mr), 0);
}

static void side_connect(struct side *s, struct mroce_ep *ep,
			 enum mroce_transport t, const char *peer,
			 uint32_t dest)
{
	struct mroce_qp_attr a = {.state = MROCE_QPS_INIT, .access = ACC_ALL};
	uint64_t now = mroce_ep_now();

	ck_assert_int_eq(mroce_modify_qp(s->e, s->qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS,
					 now),
			 0);
	a.state = MROCE_QPS_RTR;
	a.peer = mroce_ep_peer_by_name(ep, t, peer);
	ck_assert_int_ge(a.peer, 0);
	a.dest_qpn = dest;
	ck_assert_int_eq(mroce_modify_qp(s->e, s->qpn, &a,
					 MROCE_QP_STATE | MROCE_QP_DEST, now),
			 0);
	a.state = MROCE_QPS_RTS;
	ck_assert_int_eq(mroce_modify_qp(s->e, s->qpn, &a, MROCE_QP_STATE, now),
			 0);
	ck_assert_int_eq(mroce_ep_sync(ep), 0);
}

static void post_write(struct side *s, const struct side *d, size_t off,
		       size_t len, uint64_t id)
{
	struct mroce_send_wr wr = {
		.wr_id = id,
		.opcode = MROCE_WR_RDMA_WRITE,
		.send_flags = MROCE_SEND_SIGNALED,
		.sge = {.addr = s->mr.addr + off,
			.length = (uint32_t)len,
			.lkey = s->mr.lkey},
		.remote_addr = d->mr.addr + off,
		.rkey = d->mr.rkey,
	};

	ck_assert_int_eq(mroce_post_send(s->e, s->qpn, &wr, mroce_ep_now()),
			 0);
}

/* Pump both endpoints until `want` successful completions arrived on
 * each side in sv (or 20 s passed). */
static void pump_until(struct mroce_ep *a, struct mroce_ep *b,
		       struct side **sv, int nsides, int want)
{
	int got[4] = {0};
	uint64_t end = mroce_ep_now() + 20000000000ull;

	for (;;) {
		bool done = true;

		ck_assert_int_ge(mroce_ep_progress(a, mroce_ep_now()), 0);
		ck_assert_int_ge(mroce_ep_progress(b, mroce_ep_now()), 0);
		for (int i = 0; i < nsides; i++) {
			struct mroce_wc wc[16];
			int n = mroce_poll_cq(sv[i]->e, sv[i]->cq, wc, 16);

			for (int k = 0; k < n; k++)
				ck_assert_int_eq(wc[k].status,
						 MROCE_WC_SUCCESS);
			got[i] += n > 0 ? n : 0;
			if (got[i] < want)
				done = false;
		}
		if (done)
			return;
		ck_assert_msg(mroce_ep_now() < end, "timed out: %d %d %d %d",
			      got[0], got[1], got[2], got[3]);
	}
}

START_TEST(mroce_ep__two_endpoints_both_transports)
{
	enum { LEN = 256 * 1024, MSG = 32 * 1024 };
	struct mroce_ep *a, *b;
	struct side m[2], r[2]; /* MetaRoCE, RoCEv2: [0] on a, [1] on b */
	struct mroce_engine_stats st;
	struct side *senders[2] = {&m[0], &r[0]};

	open_pair(&a, &b, true, true);
	ck_assert_uint_eq(mroce_ep_mtu(a), 1024);
	ck_assert_int_ge(mroce_ep_fd(a), 0);
	ck_assert_ptr_nonnull(mroce_ep_io(a));
	side_init(&m[0], a, MROCE_TRANSPORT_METAROCE, LEN, 1);
	side_init(&m[1], b, MROCE_TRANSPORT_METAROCE, LEN, 2);
	side_init(&r[0], a, MROCE_TRANSPORT_ROCEV2, LEN, 3);
	side_init(&r[1], b, MROCE_TRANSPORT_ROCEV2, LEN, 4);
	ck_assert_ptr_ne(m[0].e, r[0].e);
	side_connect(&m[0], a, MROCE_TRANSPORT_METAROCE, "127.0.0.2", m[1].qpn);
	side_connect(&m[1], b, MROCE_TRANSPORT_METAROCE, "127.0.0.1", m[0].qpn);
	side_connect(&r[0], a, MROCE_TRANSPORT_ROCEV2, "127.0.0.2", r[1].qpn);
	side_connect(&r[1], b, MROCE_TRANSPORT_ROCEV2, "127.0.0.1", r[0].qpn);
	/* UDP: events are drained and nothing is left behind */
	{
		struct mroce_engine_event v;

		ck_assert_int_eq(mroce_engine_poll_event(m[0].e, &v), 0);
		ck_assert_int_eq(mroce_engine_poll_event(r[0].e, &v), 0);
	}
	for (int k = 0; k < LEN / MSG; k++) {
		post_write(&m[0], &m[1], (size_t)k * MSG, MSG, (uint64_t)k);
		post_write(&r[0], &r[1], (size_t)k * MSG, MSG, (uint64_t)k);
	}
	ck_assert_int_ge(mroce_ep_flush(a, mroce_ep_now()), 0);
	pump_until(a, b, senders, 2, LEN / MSG);
	ck_assert_mem_eq(m[0].buf, m[1].buf, LEN);
	ck_assert_mem_eq(r[0].buf, r[1].buf, LEN);
	/* Dispatch by port: each engine saw only its own protocol. */
	for (int i = 0; i < 2; i++) {
		mroce_engine_get_stats(i ? r[1].e : m[1].e, &st);
		ck_assert_uint_gt(st.rx_data_pkts, LEN / 1024 - 1);
		ck_assert_uint_eq(st.rx_malformed, 0);
		ck_assert_uint_eq(st.rx_no_conn, 0);
	}
	/* The address book answers query-style lookups. */
	{
		const struct mroce_peer_addr *pa = mroce_ep_peer_addr(
			a, MROCE_TRANSPORT_ROCEV2,
			mroce_ep_peer_by_name(a, MROCE_TRANSPORT_ROCEV2,
					      "127.0.0.2"));

		ck_assert_ptr_nonnull(pa);
		ck_assert_uint_eq(pa->family, AF_INET);
		ck_assert_uint_eq(pa->addr[3], 2);
		ck_assert_ptr_null(
			mroce_ep_peer_addr(a, MROCE_TRANSPORT_ROCEV2, 77));
	}
	mroce_ep_close(a);
	mroce_ep_close(b);
	for (int i = 0; i < 2; i++) {
		free(m[i].buf);
		free(r[i].buf);
	}
}
END_TEST

START_TEST(mroce_ep__one_transport_ignores_the_other_port)
{
	struct mroce_ep *a, *b;
	struct side m[2];
	struct side *sv[1] = {&m[0]};

	open_pair(&a, &b, true, false);
	ck_assert_ptr_null(mroce_ep_engine(a, MROCE_TRANSPORT_ROCEV2));
	side_init(&m[0], a, MROCE_TRANSPORT_METAROCE, 65536, 1);
	side_init(&m[1], b, MROCE_TRANSPORT_METAROCE, 65536, 2);
	side_connect(&m[0], a, MROCE_TRANSPORT_METAROCE, "127.0.0.2", m[1].qpn);
	side_connect(&m[1], b, MROCE_TRANSPORT_METAROCE, "127.0.0.1", m[0].qpn);
	post_write(&m[0], &m[1], 0, 65536, 1);
	pump_until(a, b, sv, 1, 1);
	ck_assert_mem_eq(m[0].buf, m[1].buf, 65536);
	ck_assert_int_eq(mroce_ep_peer_by_name(a, MROCE_TRANSPORT_ROCEV2,
					       "127.0.0.2"),
			 -ENOENT);
	mroce_ep_close(a);
	mroce_ep_close(b);
	free(m[0].buf);
	free(m[1].buf);
}
END_TEST

START_TEST(mroce_ep_peer_by_name__bad_strings_are_named_errors)
{
	struct mroce_ep *a, *b;

	open_pair(&a, &b, true, true);
	ck_assert_int_eq(mroce_ep_peer_by_name(a, MROCE_TRANSPORT_METAROCE,
					       "not-an-address"),
			 -EINVAL);
	ck_assert_int_eq(mroce_ep_peer_by_name(a, MROCE_TRANSPORT_METAROCE,
					       "10.0.0.256"),
			 -EINVAL);
	ck_assert_int_eq(mroce_ep_peer_by_name(a, MROCE_TRANSPORT_METAROCE,
					       "127.0.0.2:4792"),
			 -EINVAL);
	ck_assert_int_eq(mroce_ep_peer_by_name(a, MROCE_TRANSPORT_METAROCE,
					       ""),
			 -EINVAL);
	ck_assert_int_eq(mroce_ep_peer_by_name(a, MROCE_TRANSPORT_METAROCE,
					       NULL),
			 -EINVAL);
	ck_assert_int_eq(mroce_ep_peer_by_name(a, MROCE_TRANSPORT_ROCEV2,
					       "fd00::2"),
			 -EAFNOSUPPORT);
	ck_assert_int_eq(mroce_ep_peer_by_name(a, 9, "127.0.0.2"), -ENOENT);
	ck_assert_int_eq(mroce_ep_peer_by_name(NULL, MROCE_TRANSPORT_ROCEV2,
					       "127.0.0.2"),
			 -EINVAL);
	/* the same address twice: the same peer id */
	ck_assert_int_eq(mroce_ep_peer_by_name(a, MROCE_TRANSPORT_METAROCE,
					       "127.0.0.9"),
			 mroce_ep_peer_by_name(a, MROCE_TRANSPORT_METAROCE,
					       "127.0.0.9"));
	mroce_ep_close(a);
	mroce_ep_close(b);
}
END_TEST

START_TEST(mroce_ep_open__bad_configs_are_einval)
{
	struct mroce_ep_cfg c = cfg_for("127.0.0.1", 4000, true, true);
	struct mroce_ep *ep = (void *)1;

	ck_assert_int_eq(mroce_ep_open(NULL, &ep), -EINVAL);
	ck_assert_int_eq(mroce_ep_open(&c, NULL), -EINVAL);
	c.eng[0].transport = 0;
	c.eng[1].transport = 0;
	ck_assert_int_eq(mroce_ep_open(&c, &ep), -EINVAL); /* no engine */
	ck_assert_ptr_null(ep);
	c = cfg_for("127.0.0.1", 4000, true, true);
	c.eng[0].transport = MROCE_TRANSPORT_ROCEV2; /* wrong slot */
	ck_assert_int_eq(mroce_ep_open(&c, &ep), -EINVAL);
	c = cfg_for("127.0.0.1", 4000, true, true);
	c.io.rocev2_port = c.io.mroce_port; /* cannot dispatch */
	ck_assert_int_eq(mroce_ep_open(&c, &ep), -EINVAL);
	c = cfg_for("127.0.0.1", 4000, true, true);
	c.io.kind = 9;
	ck_assert_int_eq(mroce_ep_open(&c, &ep), -EINVAL);
	c = cfg_for("127.0.0.1", 4000, true, true);
	c.io.family = 0;
	ck_assert_int_eq(mroce_ep_open(&c, &ep), -EINVAL);
	c = cfg_for("127.0.0.1", 4000, true, true);
	c.io.kind = MROCE_IO_AFXDP; /* needs an interface name */
	ck_assert_int_eq(mroce_ep_open(&c, &ep), -EINVAL);
	c = cfg_for("127.0.0.1", 4000, true, true);
	c.eng[0].mtu = 100; /* the engine refuses it */
	ck_assert_int_eq(mroce_ep_open(&c, &ep), -EINVAL);
	ck_assert_ptr_null(ep);
	ck_assert_int_eq(mroce_ep_sync(NULL), -EINVAL);
	ck_assert_int_eq(mroce_ep_progress(NULL, 0), -EINVAL);
	ck_assert_int_eq(mroce_ep_fd(NULL), -1);
	ck_assert_uint_eq(mroce_ep_next_timer(NULL, 0), UINT64_MAX);
	mroce_ep_close(NULL);
}
END_TEST

/* The line rate the engines pace at and share out: a configured one (10
 * and 25 Gbit/s here) reaches both engines; without one, an interface
 * that reports no speed (loopback) gives the engines' default. */
START_TEST(mroce_ep_link_bps__configured_or_default)
{
	static const uint64_t rates[] = { 10000000000ull, 25000000000ull, 0 };

	for (int k = 0; k < 3; k++) {
		for (int tries = 0;; tries++) {
			uint16_t port = (uint16_t)(30000 +
						   ((getpid() * 11 + tries * 97 +
						     k * 3) % 15000) * 2);
			struct mroce_ep_cfg c =
				cfg_for("127.0.0.1", port, true, true);
			uint64_t want =
				rates[k] ? rates[k] : MROCE_DEFAULT_LINK_BPS;
			struct mroce_ep *ep;
			const char *src;
			int err;

			c.eng[0].link_bps = c.eng[1].link_bps = rates[k];
			err = mroce_ep_open(&c, &ep);
			if (err == -EADDRINUSE && tries < 50)
				continue;
			ck_assert_int_eq(err, 0);
			ck_assert_uint_eq(mroce_ep_link_bps(ep, &src), want);
			ck_assert_str_eq(src, rates[k] ? "configured" : "default");
			ck_assert_uint_eq(
				mroce_ep_engine(ep, MROCE_TRANSPORT_METAROCE)
					->cfg.link_bps,
				want);
			ck_assert_uint_eq(
				mroce_ep_engine(ep, MROCE_TRANSPORT_ROCEV2)
					->cfg.link_bps,
				want);
			mroce_ep_close(ep);
			break;
		}
	}
}
END_TEST

MROCE_SUITE(endpoint_suite)
Suite *endpoint_suite(void)
{
	Suite *s = suite_create("endpoint");
	TCase *tc = tcase_create("udp");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mroce_ep__two_endpoints_both_transports);
	tcase_add_test(tc, mroce_ep__one_transport_ignores_the_other_port);
	tcase_add_test(tc, mroce_ep_peer_by_name__bad_strings_are_named_errors);
	tcase_add_test(tc, mroce_ep_open__bad_configs_are_einval);
	tcase_add_test(tc, mroce_ep_link_bps__configured_or_default);
	suite_add_tcase(s, tc);
	return s;
}
