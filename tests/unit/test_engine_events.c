// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the engine's events for the I/O layer (mroce_engine_poll_event,
 * include/mroce/engine.h): MetaRoCE CONN_UP (and its peer_id update),
 * RoCEv2 QP_UP / QP_DOWN, their order, that none is lost when thousands
 * queue up, and that a connection id is announced before any packet that
 * a peer could answer with it leaves.
 */
#include "../harness.h"
#include <errno.h>

#include "engine_pump.h"

struct evlog {
	struct mroce_engine_event ev[64];
	int n;
};

static void drain(struct mroce_engine *e, struct evlog *l)
{
	struct mroce_engine_event v;

	while (mroce_engine_poll_event(e, &v) == 1) {
		ck_assert_int_lt(l->n, 64);
		l->ev[l->n++] = v;
	}
}

static int to_init(struct mroce_engine *e, uint32_t qpn, uint64_t now)
{
	struct mroce_qp_attr a = {.state = MROCE_QPS_INIT,
				  .access = MROCE_ACCESS_REMOTE_WRITE |
					    MROCE_ACCESS_REMOTE_READ};

	return mroce_modify_qp(e, qpn, &a,
			       MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS, now);
}

static int to_rtr(struct mroce_engine *e, uint32_t qpn, int peer,
		  uint32_t dest, uint64_t now)
{
	struct mroce_qp_attr a = {.state = MROCE_QPS_RTR,
				  .peer = peer,
				  .dest_qpn = dest};

	return mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE | MROCE_QP_DEST,
			       now);
}

static int to_state(struct mroce_engine *e, uint32_t qpn,
		    enum mroce_qp_state s, uint64_t now)
{
	struct mroce_qp_attr a = {.state = s};

	return mroce_modify_qp(e, qpn, &a, MROCE_QP_STATE, now);
}

static uint32_t new_qp(struct mroce_engine *e, int cq)
{
	struct mroce_qp_init_attr ia = {.send_cq = cq,
					.recv_cq = cq,
					.max_send_wr = 16,
					.max_recv_wr = 16};
	int r = mroce_create_qp(e, &ia);

	ck_assert_int_gt(r, 0);
	return (uint32_t)r;
}

static struct mroce_engine_cfg cfg_of(enum mroce_transport t)
{
	struct mroce_engine_cfg c = {.transport = (uint8_t)t, .seed = 11};

	c.mtu = 1024;
	mroce_engine_cfg_default(&c);
	return c;
}

/* Transmit everything engine `src` has now into bufs; returns the count. */
static int tx_all(struct pump *p, int src, struct mroce_tx_pkt *tx, int n)
{
	static uint8_t bufs[16][PUMP_CAP];

	for (int i = 0; i < n && i < 16; i++)
		tx[i].buf = bufs[i];
	return mroce_engine_tx(p->e[src], tx, n < 16 ? n : 16, PUMP_CAP,
			       p->now);
}

static void deliver(struct pump *p, int src, int dst,
		    const struct mroce_tx_pkt *t)
{
	struct mroce_rx_meta m = {.peer = p->peer[dst][src],
				  .sport = t->sport};

	ck_assert_int_eq(mroce_engine_rx(p->e[dst], &m, t->buf, t->len,
					 p->now),
			 0);
}

/* What src sends now: first a handshake packet of opcode op (parsed into
 * *pk), maybe followed by others (an ACK after the ACCEPT); all are
 * delivered to dst in order. */
static void hs_step(struct pump *p, int src, int dst, uint8_t op,
		    struct mroce_meta_pkt *pk)
{
	struct mroce_tx_pkt tx[16];
	int n = tx_all(p, src, tx, 16);

	ck_assert_int_ge(n, 1);
	ck_assert_int_eq(mroce_meta_parse(tx[0].buf, tx[0].len, pk), 0);
	ck_assert_uint_eq(pk->opcode, op);
	for (int i = 0; i < n; i++)
		deliver(p, src, dst, &tx[i]);
}

START_TEST(mroce_engine_poll_event__metaroce_handshake_order)
{
	struct mroce_engine_cfg c = cfg_of(MROCE_TRANSPORT_METAROCE);
	struct evlog la = {0}, lb = {0};
	struct mroce_meta_pkt pk;
	struct pump p;
	uint32_t qa, qb, ida, idb;
	int cqa, cqb;

	ck_assert_int_eq(pump_init(&p, 2, &c), 0);
	cqa = mroce_create_cq(p.e[0], 64);
	cqb = mroce_create_cq(p.e[1], 64);
	qa = new_qp(p.e[0], cqa);
	qb = new_qp(p.e[1], cqb);
	ck_assert_int_eq(to_init(p.e[0], qa, p.now), 0);
	ck_assert_int_eq(to_init(p.e[1], qb, p.now), 0);
	drain(p.e[0], &la);
	ck_assert_int_eq(la.n, 0); /* nothing before RTR */

	/* Initiator: RTR creates the connection; CONN_UP comes before the
	 * CONNECT_REQ that carries its id. */
	ck_assert_int_eq(to_rtr(p.e[0], qa, p.peer[0][1], qb, p.now), 0);
	drain(p.e[0], &la);
	ck_assert_int_eq(la.n, 1);
	ck_assert_uint_eq(la.ev[0].type, MROCE_EV_CONN_UP);
	ck_assert_int_eq(la.ev[0].peer, p.peer[0][1]);
	ck_assert_uint_eq(la.ev[0].peer_id, 0);
	ck_assert_uint_lt(la.ev[0].slot, c.max_conns);
	ida = la.ev[0].id;
	ck_assert_uint_ne(ida, 0);
	hs_step(&p, 0, 1, MROCE_OP_CONNECT_REQ, &pk);
	ck_assert_uint_eq(pk.conn.src_conn_id, ida);

	/* Responder: stateless until CONFIRM. */
	drain(p.e[1], &lb);
	ck_assert_int_eq(lb.n, 0);
	hs_step(&p, 1, 0, MROCE_OP_CONNECT_CHALLENGE, &pk);
	drain(p.e[0], &la);
	ck_assert_int_eq(la.n, 1);
	hs_step(&p, 0, 1, MROCE_OP_CONNECT_CONFIRM, &pk);

	/* CONFIRM created and established the responder's connection: both
	 * events are queued before its ACCEPT is produced. */
	drain(p.e[1], &lb);
	ck_assert_int_eq(lb.n, 2);
	ck_assert_uint_eq(lb.ev[0].type, MROCE_EV_CONN_UP);
	ck_assert_uint_eq(lb.ev[0].peer_id, 0);
	idb = lb.ev[0].id;
	ck_assert_uint_ne(idb, 0);
	ck_assert_uint_eq(lb.ev[1].type, MROCE_EV_CONN_UP);
	ck_assert_uint_eq(lb.ev[1].id, idb);
	ck_assert_uint_eq(lb.ev[1].peer_id, ida);
	ck_assert_uint_eq(lb.ev[1].slot, lb.ev[0].slot);
	ck_assert_int_eq(lb.ev[1].peer, p.peer[1][0]);
	hs_step(&p, 1, 0, MROCE_OP_CONNECT_ACCEPT, &pk);
	ck_assert_uint_eq(pk.conn.src_conn_id, idb);

	/* The initiator learns the peer's id: an update of the same id. */
	drain(p.e[0], &la);
	ck_assert_int_eq(la.n, 2);
	ck_assert_uint_eq(la.ev[1].type, MROCE_EV_CONN_UP);
	ck_assert_uint_eq(la.ev[1].id, ida);
	ck_assert_uint_eq(la.ev[1].peer_id, idb);
	ck_assert_uint_eq(la.ev[1].slot, la.ev[0].slot);

	/* The responder's QP joins the existing connection: no new event;
	 * MetaRoCE QPs never produce QP events. */
	ck_assert_int_eq(to_rtr(p.e[1], qb, p.peer[1][0], qa, p.now), 0);
	ck_assert_int_eq(to_state(p.e[1], qb, MROCE_QPS_RTS, p.now), 0);
	ck_assert_int_eq(to_state(p.e[1], qb, MROCE_QPS_RESET, p.now), 0);
	ck_assert_int_eq(mroce_destroy_qp(p.e[1], qb), 0);
	drain(p.e[1], &lb);
	ck_assert_int_eq(lb.n, 2);
	pump_fini(&p);
}
END_TEST

/* Packets carry the receiver's conn_id: every such packet must find that
 * id already announced by the receiver (the XDP program would drop it
 * otherwise). Checked on every packet of a data exchange. */
struct announced {
	uint32_t id[2][4];
	int n[2];
	uint64_t checked;
	bool bad;
};

static enum pump_verdict check_announced(struct pump *p, int src, int dst,
					 const struct mroce_tx_pkt *tx,
					 const struct mroce_meta_pkt *pk)
{
	struct announced *a = p->ctx;
	struct mroce_engine_event v;
	bool found = false;

	(void)src;
	(void)tx;
	for (int i = 0; i < 2; i++)
		while (mroce_engine_poll_event(p->e[i], &v) == 1)
			if (v.type == MROCE_EV_CONN_UP && a->n[i] < 4)
				a->id[i][a->n[i]++] = v.id;
	if (!pk || !pk->conn_id)
		return PUMP_PASS; /* handshake to a stateless responder */
	for (int k = 0; k < a->n[dst]; k++)
		found |= a->id[dst][k] == pk->conn_id;
	a->checked++;
	if (!found)
		a->bad = true;
	return PUMP_PASS;
}

static bool both_done(struct pump *p, void *arg)
{
	int *cq = arg;
	struct mroce_wc wc[8];

	for (int i = 0; i < 2; i++) {
		int n = mroce_poll_cq(p->e[i], cq[i], wc, 8);

		if (n > 0)
			cq[2 + i] += n;
	}
	return cq[2] >= 4 && cq[3] >= 2;
}

START_TEST(mroce_engine_poll_event__ids_announced_before_use)
{
	struct mroce_engine_cfg c = cfg_of(MROCE_TRANSPORT_METAROCE);
	struct announced an = {0};
	struct mroce_mr mr[2];
	static uint8_t buf[2][65536];
	uint32_t q[2];
	int cq[4] = {0};
	struct pump p;

	ck_assert_int_eq(pump_init(&p, 2, &c), 0);
	p.filter = check_announced;
	p.ctx = &an;
	for (int i = 0; i < 2; i++) {
		cq[i] = mroce_create_cq(p.e[i], 64);
		q[i] = new_qp(p.e[i], cq[i]);
		ck_assert_int_eq(mroce_reg_mr(p.e[i], buf[i], sizeof(buf[i]),
					      MROCE_ACCESS_LOCAL_WRITE |
						      MROCE_ACCESS_REMOTE_WRITE |
						      MROCE_ACCESS_REMOTE_READ,
					      &mr[i]),
				 0);
	}
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(to_init(p.e[i], q[i], p.now), 0);
		ck_assert_int_eq(to_rtr(p.e[i], q[i], p.peer[i][1 - i],
					q[1 - i], p.now),
				 0);
		ck_assert_int_eq(to_state(p.e[i], q[i], MROCE_QPS_RTS, p.now),
				 0);
	}
	/* Simultaneous open, then WRITEs and a READ each way. */
	for (int i = 0; i < 2; i++) {
		for (int k = 0; k < (i ? 2 : 4); k++) {
			struct mroce_send_wr wr = {
				.wr_id = (uint64_t)k,
				.opcode = k == 3 ? MROCE_WR_RDMA_READ
						 : MROCE_WR_RDMA_WRITE,
				.send_flags = MROCE_SEND_SIGNALED,
				.sge = {.addr = mr[i].addr + (uint64_t)k * 8192,
					.length = 8192,
					.lkey = mr[i].lkey},
				.remote_addr = mr[1 - i].addr +
					       (uint64_t)k * 8192 + 32768,
				.rkey = mr[1 - i].rkey,
			};

			ck_assert_int_eq(mroce_post_send(p.e[i], q[i], &wr,
							 p.now),
					 0);
		}
	}
	ck_assert(pump_run(&p, both_done, cq, 2000000000ull));
	ck_assert(!an.bad);
	ck_assert_uint_gt(an.checked, 20);
	ck_assert_int_ge(an.n[0], 1);
	ck_assert_int_ge(an.n[1], 1);
	pump_fini(&p);
}
END_TEST

START_TEST(mroce_engine_poll_event__rocev2_qp_up_down)
{
	struct mroce_engine_cfg c = cfg_of(MROCE_TRANSPORT_ROCEV2);
	struct mroce_engine_event v;
	struct evlog l = {0};
	struct pump p;
	uint32_t qa, qb;
	int cq;

	ck_assert_int_eq(pump_init(&p, 2, &c), 0);
	ck_assert_int_eq(mroce_engine_poll_event(p.e[0], NULL), -EINVAL);
	ck_assert_int_eq(mroce_engine_poll_event(NULL, &v), -EINVAL);
	cq = mroce_create_cq(p.e[0], 64);
	qa = new_qp(p.e[0], cq);
	qb = new_qp(p.e[0], cq);
	ck_assert_int_eq(to_init(p.e[0], qa, p.now), 0);
	ck_assert_int_eq(to_init(p.e[0], qb, p.now), 0);
	drain(p.e[0], &l);
	ck_assert_int_eq(l.n, 0);
	/* a refused RTR (no peer) announces nothing */
	ck_assert_int_eq(to_rtr(p.e[0], qa, 99, 5, p.now), -EINVAL);
	drain(p.e[0], &l);
	ck_assert_int_eq(l.n, 0);

	ck_assert_int_eq(to_rtr(p.e[0], qa, p.peer[0][1], 5, p.now), 0);
	ck_assert_int_eq(to_state(p.e[0], qa, MROCE_QPS_RTS, p.now), 0);
	ck_assert_int_eq(to_state(p.e[0], qa, MROCE_QPS_ERR, p.now), 0);
	ck_assert_int_eq(to_state(p.e[0], qa, MROCE_QPS_RESET, p.now), 0);
	ck_assert_int_eq(to_state(p.e[0], qa, MROCE_QPS_RESET, p.now), 0);
	ck_assert_int_eq(to_init(p.e[0], qa, p.now), 0);
	ck_assert_int_eq(to_rtr(p.e[0], qa, p.peer[0][1], 6, p.now), 0);
	ck_assert_int_eq(to_rtr(p.e[0], qb, p.peer[0][1], 7, p.now), 0);
	ck_assert_int_eq(mroce_destroy_qp(p.e[0], qa), 0);
	ck_assert_int_eq(mroce_destroy_qp(p.e[0], qb), 0);
	drain(p.e[0], &l);
	ck_assert_int_eq(l.n, 6);
	ck_assert_uint_eq(l.ev[0].type, MROCE_EV_QP_UP);
	ck_assert_uint_eq(l.ev[0].id, qa);
	ck_assert_int_eq(l.ev[0].peer, p.peer[0][1]);
	ck_assert_uint_eq(l.ev[1].type, MROCE_EV_QP_DOWN); /* RESET */
	ck_assert_uint_eq(l.ev[1].id, qa);
	ck_assert_int_eq(l.ev[1].peer, p.peer[0][1]);
	ck_assert_uint_eq(l.ev[2].type, MROCE_EV_QP_UP);
	ck_assert_uint_eq(l.ev[2].id, qa);
	ck_assert_uint_eq(l.ev[3].type, MROCE_EV_QP_UP);
	ck_assert_uint_eq(l.ev[3].id, qb);
	ck_assert_uint_eq(l.ev[4].type, MROCE_EV_QP_DOWN);
	ck_assert_uint_eq(l.ev[4].id, qa);
	ck_assert_uint_eq(l.ev[5].type, MROCE_EV_QP_DOWN);
	ck_assert_uint_eq(l.ev[5].id, qb);
	pump_fini(&p);
}
END_TEST

/* Thousands of objects change state without the I/O layer polling:
 * every event is kept, in order. */
START_TEST(mroce_engine_poll_event__thousands_none_lost)
{
	enum { NQ = 5000, NC = 3000 };
	struct mroce_engine_cfg c = cfg_of(MROCE_TRANSPORT_ROCEV2);
	struct mroce_engine_event v;
	static uint32_t qpn[NQ];
	static uint8_t seen[4096];
	struct mroce_peer_addr pa = {.family = AF_INET};
	struct mroce_engine *e;
	int cq, peer, got = 0;

	c.max_qps = NQ;
	ck_assert_int_eq(mroce_engine_create(&c, &e), 0);
	pa.addr[0] = 10;
	peer = mroce_peer_add(e, &pa);
	cq = mroce_create_cq(e, 64);
	for (int i = 0; i < NQ; i++) {
		qpn[i] = new_qp(e, cq);
		ck_assert_int_eq(to_init(e, qpn[i], 0), 0);
		ck_assert_int_eq(to_rtr(e, qpn[i], peer, 9, 0), 0);
		/* poll a few in between: the ring wraps while growing */
		if (i % 997 == 0) {
			ck_assert_int_eq(mroce_engine_poll_event(e, &v), 1);
			ck_assert_uint_eq(v.type, MROCE_EV_QP_UP);
			ck_assert_uint_eq(v.id, qpn[got++]);
		}
	}
	for (int i = 0; i < NQ; i++)
		ck_assert_int_eq(mroce_destroy_qp(e, qpn[i]), 0);
	for (int i = got; i < NQ; i++) {
		ck_assert_int_eq(mroce_engine_poll_event(e, &v), 1);
		ck_assert_uint_eq(v.type, MROCE_EV_QP_UP);
		ck_assert_uint_eq(v.id, qpn[i]);
	}
	for (int i = 0; i < NQ; i++) {
		ck_assert_int_eq(mroce_engine_poll_event(e, &v), 1);
		ck_assert_uint_eq(v.type, MROCE_EV_QP_DOWN);
		ck_assert_uint_eq(v.id, qpn[i]);
	}
	ck_assert_int_eq(mroce_engine_poll_event(e, &v), 0);
	mroce_engine_destroy(e);

	/* MetaRoCE: NC connections (one per peer), each with its own slot. */
	c = cfg_of(MROCE_TRANSPORT_METAROCE);
	c.max_qps = NC;
	ck_assert_int_eq(mroce_engine_create(&c, &e), 0);
	cq = mroce_create_cq(e, 64);
	for (int i = 0; i < NC; i++) {
		uint32_t q = new_qp(e, cq);

		pa.addr[2] = (uint8_t)(i >> 8);
		pa.addr[3] = (uint8_t)i;
		peer = mroce_peer_add(e, &pa);
		ck_assert_int_ge(peer, 0);
		ck_assert_int_eq(to_init(e, q, 0), 0);
		ck_assert_int_eq(to_rtr(e, q, peer, 9, 0), 0);
	}
	for (int i = 0; i < NC; i++) {
		ck_assert_int_eq(mroce_engine_poll_event(e, &v), 1);
		ck_assert_uint_eq(v.type, MROCE_EV_CONN_UP);
		ck_assert_uint_lt(v.slot, c.max_conns);
		ck_assert_int_eq(seen[v.slot], 0);
		seen[v.slot] = 1;
		ck_assert_uint_ne(v.id, 0);
	}
	ck_assert_int_eq(mroce_engine_poll_event(e, &v), 0);
	mroce_engine_destroy(e);
}
END_TEST

MROCE_SUITE(engine_events_suite)
Suite *engine_events_suite(void)
{
	Suite *s = suite_create("engine_events");
	TCase *tc = tcase_create("events");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mroce_engine_poll_event__metaroce_handshake_order);
	tcase_add_test(tc, mroce_engine_poll_event__ids_announced_before_use);
	tcase_add_test(tc, mroce_engine_poll_event__rocev2_qp_up_down);
	tcase_add_test(tc, mroce_engine_poll_event__thousands_none_lost);
	suite_add_tcase(s, tc);
	return s;
}
