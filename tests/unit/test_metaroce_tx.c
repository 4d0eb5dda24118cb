// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: transmit (tx.c, txctl.c): ACKs sprayed over our
 * own ports and the port checks, pacing bursts and ACK coalescing of a software
 * endpoint. Two (or more) engines through the in-test pump (metaroce_pair.h).
 */
#include "metaroce_pair.h"
#include "tx_first_ops.h"

/* ACKs leave on the receiver's own ports in rotation (ack_sport), never
 * pinned to the data's port: a dead reverse plane then costs every path
 * a share of its ACKs instead of silencing the paths whose ACKs crossed
 * it. A PROBE that says our ACKs went missing (no CHECK flag, and we
 * acknowledged all it names a while ago) is answered twice, from two
 * ports; the port checks of idle ports carry CHECK. */
struct ackports {
	uint16_t sport[64];
	int n, acks, data_sport_acks;
	uint16_t data_sport[MROCE_MAX_PATHS];
	int probe_answers, probe_pairs;
	int drop;		/* drop this many plain ACKs of engine 1 */
	int checks;		/* PROBEs with CHECK seen */
	uint8_t last_path;
	uint32_t last_tsecr;
	uint16_t last_sport;
};

static enum pump_verdict record_ack_ports(struct pump *p, int src, int dst,
					  const struct mroce_tx_pkt *t,
					  const struct mroce_meta_pkt *pk)
{
	struct ackports *a = p->ctx;
	int i;

	(void)dst;
	if (!pk)
		return PUMP_PASS;
	if (src == 0 && pk->opcode != MROCE_OP_ACK && pk->path < MROCE_MAX_PATHS)
		a->data_sport[pk->path] = t->sport;
	if (pk->opcode == MROCE_OP_PROBE && (pk->flags & MROCE_F_CHECK))
		a->checks++;
	if (src != 1 || pk->opcode != MROCE_OP_ACK)
		return PUMP_PASS;
	if (a->drop > 0 && !(pk->ack.flags & MROCE_ACKF_PROBE)) {
		a->drop--;
		return PUMP_DROP;
	}
	a->acks++;
	for (i = 0; i < a->n && a->sport[i] != t->sport; i++)
		;
	if (i == a->n && a->n < 64)
		a->sport[a->n++] = t->sport;
	if (pk->ack.flags & MROCE_ACKF_PROBE) {
		if (a->probe_answers && pk->path == a->last_path &&
		    pk->ack.tsecr == a->last_tsecr && t->sport != a->last_sport)
			a->probe_pairs++;
		a->probe_answers++;
		a->last_path = pk->path;
		a->last_tsecr = pk->ack.tsecr;
		a->last_sport = t->sport;
	}
	return PUMP_PASS;
}

START_TEST(ack__sprayed_over_the_receivers_own_ports)
{
	struct pair s;
	struct ackports a;
	struct mroce_path_info pi;
	int own = 0;

	memset(&a, 0, sizeof(a));
	a.drop = 40;	/* the sender's paths fall quiet: PTO probes */
	pair_setup(&s, 1 << 21);
	set_filter(&s, record_ack_ports, &a);
	write_ok(&s, 1, 1 << 20, 1 << 20, 1);
	ck_assert_int_gt(a.acks, 8);
	/* every ACK port is one of the receiver's own path ports ... */
	for (int i = 0; i < a.n; i++) {
		bool found = false;

		for (int k = 0;
		     !mroce_engine_path_info(s.p.e[1], s.p.peer[1][0], k, &pi);
		     k++)
			found |= pi.sport == a.sport[i];
		own += found;
	}
	/* (the one after the ACCEPT leaves on path 0's port, also ours) */
	ck_assert_int_eq(own, a.n);
	/* ... and they rotate over several of them */
	ck_assert_int_ge(a.n, 4);
	/* the sender's PROBEs after the lost ACKs were answered on two
	 * ports; the receiver's idle ports were checked (CHECK) */
	ck_assert_int_gt(a.probe_answers, 0);
	ck_assert_int_gt(a.probe_pairs, 0);
	ck_assert_int_gt(a.checks, 0);
	pair_fini(&s);
}
END_TEST

/* One of the receiver's ports lands on a dead plane in its direction
 * (every packet it sends from that port is lost). It carries only ACKs,
 * so nothing else would notice: it is probed every MR_ACK_PROBE_EVERY
 * ACKs, retired after two unanswered probes and replaced, and the
 * transfer completes byte-exact without an error. */
START_TEST(ack_port__dead_reverse_port_retired_and_replaced)
{
	struct pair s;
	struct bh r = { .src = 1 };
	struct mroce_path_info pi;
	size_t len = 4u << 20;

	pair_setup(&s, 2 * len);
	establish(&s);
	pi = path_of(&s, 1, 2);
	r.sport = pi.sport;
	set_filter(&s, blackhole_port, &r);
	write_half(&s, len, 4000000000ull);
	ck_assert_int_gt(r.dropped, 0);
	pi = path_of(&s, 1, 2);
	ck_assert_uint_ne(pi.sport, r.sport);
	ck_assert_uint_ge(pi.gen, 1);
	ck_assert_uint_ge(stats(&s, 1).path_rerolls, 1);
	ck_assert_uint_gt(stats(&s, 1).probes_sent, 0);
	pair_fini(&s);
}
END_TEST

/* Pacing bursts: a software endpoint (jitter_us) that was idle sends up
 * to MR_PACE_BURST data packets in one tx() call at one instant (its
 * driver hands them to the kernel in one system call); a hardware-like
 * one (jitter_us 0) paces them out one per packet time. */
static int data_in_one_tx(uint32_t jitter_us)
{
	struct mroce_engine_cfg cfg = base_cfg();
	struct mroce_tx_pkt pk[64];
	static uint8_t bufs[64][PUMP_CAP];
	struct pair s;
	int n, data = 0;

	cfg.jitter_us = jitter_us;
	pair_setup_cfg(&s, &cfg, 1 << 20, true);
	/* a first message: established, the receiver's rate hint known */
	write_ok(&s, 1, 8192, 0, 1);
	s.p.now += 1000000;	/* idle */
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 1 << 19, 0),
			 0);
	for (int i = 0; i < 64; i++) {
		memset(&pk[i], 0, sizeof(pk[i]));
		pk[i].buf = bufs[i];
	}
	n = mroce_engine_tx(s.p.e[0], pk, 64, PUMP_CAP, s.p.now);
	for (int i = 0; i < n; i++) {
		struct mroce_meta_pkt m;

		if (!mroce_meta_parse(pk[i].buf, pk[i].len, &m) &&
		    m.opcode == MROCE_OP_WRITE)
			data++;
	}
	pair_fini(&s);
	return data;
}

START_TEST(pace__software_endpoint_sends_a_burst)
{
	int sw = data_in_one_tx(10000), hw = data_in_one_tx(0);

	ck_assert_int_eq(hw, 1);
	ck_assert_int_gt(sw, 8);
	ck_assert_int_le(sw, MR_PACE_BURST);
}
END_TEST

/* ACK coalescing on software endpoints (jitter_us): 64 WRITEs posted at
 * once, each 8 packets over the 8 paths. A hardware-like receiver flushes
 * every path's ACK at each message end (ACK_REQ|LAST); a software sender
 * asks for that only on the last message posted, and a software receiver
 * coalesces the rest by count and MR_ACK_DELAY_SW_NS: far fewer ACKs for
 * the same data, and the stream still completes. A lone message (nothing
 * posted behind it) still asks at once: it completes in a few round trips,
 * not after the coalescing delay. */
static uint64_t acks_for_stream(uint32_t jitter_us, uint64_t *lone_ns)
{
	struct mroce_engine_cfg cfg = base_cfg();
	struct mroce_engine_stats a, b;
	struct pair s;
	uint64_t t0;
	const int nmsg = 64;

	cfg.jitter_us = jitter_us;
	pair_setup_cfg(&s, &cfg, 1 << 20, true);
	write_ok(&s, 1, 8192, 0, 1);	/* established */
	s.p.now += 1000000;
	t0 = s.p.now;
	write_ok(&s, 2, 8192, 8192, 2);
	*lone_ns = s.p.now - t0;
	mroce_engine_get_stats(s.p.e[1], &a);
	for (int i = 0; i < nmsg; i++)
		ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE,
				      (uint64_t)(10 + i), 0, 8192,
				      (uint32_t)(i % 64) * 8192),
				 0);
	ck_assert(run_until_wcs(&s, 2 + nmsg, 0, 1000000000ull));
	for (int i = 0; i < 2 + nmsg; i++)
		ck_assert_int_eq(s.s[0].wc[i].status, MROCE_WC_SUCCESS);
	mroce_engine_get_stats(s.p.e[1], &b);
	ck_assert_uint_eq(b.rx_data_pkts - a.rx_data_pkts, (uint64_t)nmsg * 8);
	pair_fini(&s);
	return b.tx_acks - a.tx_acks;
}

START_TEST(ack__software_receiver_coalesces_a_stream_of_messages)
{
	uint64_t lone_sw, lone_hw;
	uint64_t sw = acks_for_stream(10000, &lone_sw),
		 hw = acks_for_stream(0, &lone_hw);

	/* hardware-like: at least one ACK per message end */
	ck_assert_uint_ge(hw, 64);
	/* software: by count (8 per path), at most a quarter of that */
	ck_assert_uint_le(sw * 4, hw);
	ck_assert_uint_gt(sw, 0);
	/* the lone message did not wait for the coalescing delay */
	ck_assert_uint_lt(lone_sw, MR_ACK_DELAY_SW_NS / 4);
}
END_TEST

/* The idle PROBE behind a lone message. A hardware-like endpoint
 * (jitter_us 0) sends it at once: its PTO is about 2 srtt, so a later
 * probe would find nothing sooner. A software endpoint sends it only
 * once the message's ACK is late: when the ACK comes in time, a lone
 * message costs its data packet and the ACK, no PROBE and no answer.
 * When the lone packet is lost, that late PROBE still finds the loss in
 * a few round trips, far below the software PTO (it holds jitter_us). */
static uint64_t probes_behind_lone_messages(uint32_t jitter_us, int n,
					    uint64_t *lost_ns)
{
	struct mroce_engine_cfg cfg = base_cfg();
	struct nth_drop d = { .drop_writes = 1 };
	struct pair s;
	uint64_t before, t0;

	cfg.jitter_us = jitter_us;
	pair_setup_cfg(&s, &cfg, 1 << 20, true);
	write_ok(&s, 1, 8, 0, 1);	/* established, RTT sampled */
	before = stats(&s, 0).probes_sent;
	for (int i = 0; i < n; i++) {
		s.p.now += 100000;
		write_ok(&s, (uint64_t)(2 + i), 8, 0, 2 + i);
	}
	before = stats(&s, 0).probes_sent - before;
	set_filter(&s, nth_drop_filter, &d);
	s.p.now += 100000;
	t0 = s.p.now;
	write_ok(&s, 99, 8, 64, 2 + n);
	*lost_ns = s.p.now - t0;
	ck_assert_int_eq(d.writes, 2);	/* the lost one and its resend */
	pair_fini(&s);
	return before;
}

START_TEST(probe__software_endpoint_probes_only_when_the_ack_is_late)
{
	uint64_t lost_sw, lost_hw;
	uint64_t sw = probes_behind_lone_messages(10000, 32, &lost_sw),
		 hw = probes_behind_lone_messages(0, 32, &lost_hw);

	ck_assert_uint_ge(hw, 32);
	ck_assert_uint_eq(sw, 0);
	/* the loss: a few 4 us round trips, not the 10 ms PTO */
	ck_assert_uint_lt(lost_hw, 100000);
	ck_assert_uint_lt(lost_sw, 100000);
}
END_TEST

/* A request-reply, driven by hand: side 0's lone WRITE reaches side 1,
 * which owes it an ACK at once (ACK_REQ), and side 1 posts its reply.
 * One tx() call with room for `room` packets: what leaves, in order. */
static int reply_and_ack(int room, uint8_t op[2])
{
	struct mroce_engine_cfg cfg = base_cfg();
	struct pair s;
	int n;

	cfg.jitter_us = 10000;
	pair_setup_cfg(&s, &cfg, 1 << 16, true);
	write_ok(&s, 1, 8, 0, 1);	/* established */
	s.p.now += 1000000;
	pump_step(&s.p);		/* nothing left in flight */
	ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 8, 64), 0);
	pump_step(&s.p);		/* the request leaves ... */
	s.p.now += s.p.delay;
	pump_step(&s.p);		/* ... and arrives */
	ck_assert_uint_eq(stats(&s, 1).rx_data_pkts, 2);
	ck_assert_int_eq(post(&s, 1, MROCE_WR_RDMA_WRITE, 3, 0, 8, 64), 0);
	n = tx_first_ops(s.p.e[1], room, s.p.now, op);
	pair_fini(&s);
	return n;
}

/* The reply leaves before the ACK of its request, which follows right
 * behind in the same call: on a software sender each packet of a batch
 * crosses the kernel before the next, so an ACK in front would delay
 * the reply by a packet. With room for one packet, the ACK goes first
 * (a driver that asks for one packet at a time must not starve it). */
START_TEST(tx__a_reply_leaves_before_the_ack_of_its_request)
{
	reply_before_ack(reply_and_ack, MROCE_OP_WRITE, MROCE_OP_ACK);
}
END_TEST

/* A ping-pong of lone messages, both ways, on software endpoints: every
 * port carries data of its side as well as ACKs, and that data is
 * acknowledged, which shows the port's plane alive in its direction (its
 * ACKs take the same plane). So no port is checked, and no idle PROBE
 * leaves (every ACK comes in time): each message costs its data packet
 * and one ACK. (Before, a port between two messages counted as idle and
 * was probed every MR_ACK_PROBE_EVERY ACKs: a PROBE and its answer in 3%
 * of a write_lat's round trips, whose batches then carried a third
 * packet.) */
START_TEST(ack_port__ports_whose_data_is_acknowledged_are_not_checked)
{
	struct mroce_engine_cfg cfg = base_cfg();
	struct pair s;
	const int n = 256;

	cfg.jitter_us = 10000;
	pair_setup_cfg(&s, &cfg, 1 << 16, true);
	write_ok(&s, 1, 8, 0, 1);	/* established */
	for (int i = 0; i < n; i++) {
		write_ok(&s, (uint64_t)(2 + i), 8, 64, 2 + i);
		ck_assert_int_eq(post(&s, 1, MROCE_WR_RDMA_WRITE,
				      (uint64_t)(2 + i), 0, 8, 128),
				 0);
		ck_assert(run_until_wcs(&s, 2 + i, 1 + i, 1000000000ull));
		ck_assert_int_eq(s.s[1].wc[i].status, MROCE_WC_SUCCESS);
	}
	ck_assert_uint_eq(stats(&s, 0).probes_sent, 0);
	ck_assert_uint_eq(stats(&s, 1).probes_sent, 0);
	ck_assert_uint_le(stats(&s, 1).tx_acks, (uint64_t)n + 2);
	pair_fini(&s);
}
END_TEST

MROCE_SUITE(metaroce_tx_suite)
Suite *metaroce_tx_suite(void)
{
	Suite *s = suite_create("metaroce_tx");
	TCase *tc = tcase_create("tx");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, pace__software_endpoint_sends_a_burst);
	tcase_add_test(tc, ack__software_receiver_coalesces_a_stream_of_messages);
	tcase_add_test(tc, ack__sprayed_over_the_receivers_own_ports);
	tcase_add_test(tc, probe__software_endpoint_probes_only_when_the_ack_is_late);
	tcase_add_test(tc, ack_port__dead_reverse_port_retired_and_replaced);
	tcase_add_test(tc, tx__a_reply_leaves_before_the_ack_of_its_request);
	tcase_add_test(tc, ack_port__ports_whose_data_is_acknowledged_are_not_checked);
	suite_add_tcase(s, tc);
	return s;
}
