// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of the MetaRoCE engine: the path state it publishes for a kernel
 * fast path (pub.c, mroce_engine_set_pub): the receive side as data is
 * placed, never a PSN that was not; our ports and
 * generations as they change; a slot reset before a connection uses it
 * and when the hooks change. Two engines through the in-test pump
 * (metaroce_pair.h), each with hooks that record what they are told.
 */
#include "metaroce_pair.h"

#define REC_SLOTS 8

struct rec {
	struct mroce_engine *e;
	struct mroce_pub_rx rx[REC_SLOTS][MROCE_MAX_PATHS];
	unsigned int nrx[REC_SLOTS][MROCE_MAX_PATHS];
	struct mroce_pub_tx tx[REC_SLOTS][MROCE_MAX_PATHS];
	unsigned int ntx[REC_SLOTS][MROCE_MAX_PATHS];
	unsigned int resets[REC_SLOTS];
	unsigned int calls;	/* every hook call, in order */
	unsigned int last_reset[REC_SLOTS], first_tx[REC_SLOTS];
	/* checked at every rx publication: path hole_path may not report
	 * hole_psn while hole_open */
	int hole_path;
	uint32_t hole_psn;
	bool hole_open;
	unsigned int hole_violations;
};

static void rec_reset(void *ctx, uint32_t slot)
{
	struct rec *r = ctx;

	ck_assert_uint_lt(slot, REC_SLOTS);
	r->resets[slot]++;
	r->last_reset[slot] = ++r->calls;
	memset(r->nrx[slot], 0, sizeof(r->nrx[slot]));
	memset(r->ntx[slot], 0, sizeof(r->ntx[slot]));
}

/* SACK bit of PSN psn in a published state (bit i: cum_psn + 1 + i). */
static bool pub_covers(const struct mroce_pub_rx *x, uint32_t psn)
{
	int32_t d = (int32_t)(psn - x->cum_psn);

	if (d < 0)
		return true;
	if (d == 0 || d > MROCE_SACK_BITS)
		return false;
	return x->sack[(d - 1) / 8] >> ((d - 1) % 8) & 1;
}

static void rec_rx(void *ctx, const struct mroce_pub_rx *x)
{
	struct rec *r = ctx;

	ck_assert_uint_lt(x->slot, REC_SLOTS);
	ck_assert_uint_lt(x->path, MROCE_MAX_PATHS);
	r->calls++;
	r->rx[x->slot][x->path] = *x;
	r->nrx[x->slot][x->path]++;
	if (r->hole_open && x->path == r->hole_path && x->gen == 0 &&
	    pub_covers(x, r->hole_psn))
		r->hole_violations++;
}

static void rec_tx(void *ctx, const struct mroce_pub_tx *x)
{
	struct rec *r = ctx;

	ck_assert_uint_lt(x->slot, REC_SLOTS);
	ck_assert_uint_lt(x->path, MROCE_MAX_PATHS);
	if (!r->first_tx[x->slot])
		r->first_tx[x->slot] = r->calls + 1;
	r->calls++;
	r->tx[x->slot][x->path] = *x;
	r->ntx[x->slot][x->path]++;
}

static void rec_attach(struct rec *r, struct mroce_engine *e)
{
	struct mroce_engine_pub pub = {
		.ctx = r, .reset = rec_reset, .rx = rec_rx, .tx = rec_tx,
	};

	memset(r, 0, sizeof(*r));
	r->e = e;
	r->hole_path = -1;
	mroce_engine_set_pub(e, &pub);
}

/* A connected pair (buffers of len bytes) whose engines publish into
 * r[0] and r[1]. */
static void pub_pair(struct pair *s, struct rec r[2], size_t len)
{
	pair_setup(s, len);
	rec_attach(&r[0], s->p.e[0]);
	rec_attach(&r[1], s->p.e[1]);
	establish(s);
}

/* Side i's connection to the other side. */
static struct mr_conn *conn_of(struct pair *s, int i)
{
	struct mr_conn *c = T(s->p.e[i])->by_peer[s->p.peer[i][1 - i]];

	ck_assert_ptr_nonnull(c);
	return c;
}

/* After a WRITE is acknowledged in full, the receiver has published, for
 * every path that carried it, every PSN the sender sent and nothing
 * beyond, on the path's generation. */
START_TEST(pub__receiver_publishes_what_it_placed)
{
	static struct rec r[2];
	struct pair s;
	struct mr_conn *tx, *rx;
	size_t len = 256 * 1024;
	int used = 0;

	pub_pair(&s, r, 2 * len);
	write_half(&s, len, 1000000000ull);
	tx = conn_of(&s, 0);
	rx = conn_of(&s, 1);
	for (int i = 0; i < tx->npaths; i++) {
		uint32_t slot = (uint32_t)rx->peer;
		const struct mroce_pub_rx *x = &r[1].rx[slot][i];

		if (tx->path[i].next_psn ==
		    mroce_path_isn(tx->tx_isn, (uint8_t)i, tx->path[i].gen))
			continue; /* carried nothing */
		used++;
		ck_assert_uint_gt(r[1].nrx[slot][i], 0);
		ck_assert_uint_eq(x->path, i);
		ck_assert_uint_eq(x->gen, rx->path[i].rx_gen);
		ck_assert_uint_eq(x->cum_psn, tx->path[i].next_psn);
		ck_assert_uint_eq(x->rx_high, tx->path[i].next_psn);
		for (int b = 0; b < MROCE_SACK_BYTES; b++)
			ck_assert_uint_eq(x->sack[b], 0);
	}
	ck_assert_int_ge(used, 4);
	pair_fini(&s);
}
END_TEST

struct hole {
	struct rec *r;
	int dropped;
};

/* Drops the first transmission of side 0's 5th data packet (and notes
 * its path and PSN); lets its retransmission through. */
static enum pump_verdict drop_one(struct pump *p, int src, int dst,
				  const struct mroce_tx_pkt *t,
				  const struct mroce_meta_pkt *pk)
{
	struct hole *h = p->ctx;

	(void)dst;
	(void)t;
	if (src != 0 || !pk || !(mroce_op_ext(pk->opcode) & MROCE_EXT_SEQ))
		return PUMP_PASS;
	if (h->r->hole_path < 0 && ++h->dropped == 5) {
		h->r->hole_path = pk->path;
		h->r->hole_psn = pk->psn;
		h->r->hole_open = true;
		return PUMP_DROP;
	}
	if (h->r->hole_open && pk->path == h->r->hole_path &&
	    pk->psn == h->r->hole_psn)
		h->r->hole_open = false; /* its retransmission: delivered */
	return PUMP_PASS;
}

/* A lost packet is never published as received while it is missing,
 * though the PSNs behind it are (SACK), and once its retransmission is
 * placed the published state moves past it. */
START_TEST(pub__a_missing_psn_is_never_published)
{
	static struct rec r[2];
	struct hole h = { .r = &r[1] };
	struct pair s;
	size_t len = 256 * 1024;
	uint32_t slot;

	pub_pair(&s, r, 2 * len);
	set_filter(&s, drop_one, &h);
	write_half(&s, len, 1000000000ull);
	ck_assert_int_ge(r[1].hole_path, 0);
	ck_assert(!r[1].hole_open);
	ck_assert_uint_eq(r[1].hole_violations, 0);
	slot = (uint32_t)conn_of(&s, 1)->peer;
	ck_assert(pub_covers(&r[1].rx[slot][r[1].hole_path], r[1].hole_psn));
	pair_fini(&s);
}
END_TEST

/* Data refused for want of a receive (RNR) is not placed: its PSN is not
 * published until the SEND is placed after the receive is posted. */
START_TEST(pub__data_refused_is_not_published)
{
	static struct rec r[2];
	struct pair s;
	struct mr_conn *tx, *rx;
	uint32_t isn, slot;

	pub_pair(&s, r, 64 * 1024);
	ck_assert_int_eq(post(&s, 0, MROCE_WR_SEND, 1, 0, 512, 0), 0);
	pump_run(&s.p, NULL, NULL, 2000000);	/* 2 ms: RNR NAKs, no recv */
	ck_assert_uint_gt(stats(&s, 1).tx_naks, 0);	/* RNR */
	tx = conn_of(&s, 0);
	rx = conn_of(&s, 1);
	slot = (uint32_t)rx->peer;
	for (int i = 0; i < tx->npaths; i++) {
		isn = mroce_path_isn(tx->tx_isn, (uint8_t)i, tx->path[i].gen);
		if (r[1].nrx[slot][i]) {
			ck_assert(!pub_covers(&r[1].rx[slot][i], isn));
			/* taken in, though: a PROBE need not wait for it */
			if (tx->path[i].next_psn != isn)
				ck_assert_uint_eq(r[1].rx[slot][i].rx_high,
						  isn + 1);
		}
	}
	ck_assert_int_eq(post_recv(&s, 1, 9, 0, 4096), 0);
	ck_assert(run_until_wcs(&s, 1, 1, 1000000000ull));
	for (int i = 0, moved = 0; i < tx->npaths; i++) {
		isn = mroce_path_isn(tx->tx_isn, (uint8_t)i, tx->path[i].gen);
		if (tx->path[i].next_psn != isn)
			ck_assert(pub_covers(&r[1].rx[slot][i], isn));
		moved += tx->path[i].next_psn != isn;
		if (i == tx->npaths - 1)
			ck_assert_int_eq(moved, 1);
	}
	pair_fini(&s);
}
END_TEST

/* The sender's ports and generations reach the hooks as they are, after
 * a reset of the slot; a retired path's new port and generation before
 * the call that retired it returns. */
START_TEST(pub__our_ports_and_generations_as_they_change)
{
	static struct rec r[2];
	struct bh b = { .src = 0 };
	struct pair s;
	struct mr_conn *c;
	size_t len = 256 * 1024;
	uint32_t slot;

	pub_pair(&s, r, 2 * len);
	c = conn_of(&s, 0);
	slot = (uint32_t)c->peer;
	ck_assert_uint_ge(r[0].resets[slot], 1);
	ck_assert_uint_lt(r[0].last_reset[slot], r[0].first_tx[slot]);
	for (int i = 0; i < c->npaths; i++) {
		const struct mroce_pub_tx *x = &r[0].tx[slot][i];

		ck_assert_uint_gt(r[0].ntx[slot][i], 0);
		ck_assert_uint_eq(x->sport, c->path[i].sport);
		ck_assert_uint_eq(x->gen, c->path[i].gen);
		ck_assert_uint_eq(x->npaths, c->npaths);
		ck_assert(x->active);
	}
	/* path 3 falls silent: it is retired and its new port published */
	b.sport = c->path[3].sport;
	set_filter(&s, blackhole_port, &b);
	write_half(&s, len, 2000000000ull);
	ck_assert_uint_ge(c->path[3].gen, 1);
	ck_assert_uint_eq(r[0].tx[slot][3].sport, c->path[3].sport);
	ck_assert_uint_eq(r[0].tx[slot][3].gen, c->path[3].gen);
	ck_assert_uint_eq(r[0].tx[slot][3].active,
			  c->path[3].life != MR_PATH_PROBATION);
	ck_assert_uint_ne(r[0].tx[slot][3].sport, b.sport);

	/* new hooks on both sides: each slot is reset and published in
	 * full again, the receiver's paths that carried data included
	 * (the next write uses one of them) */
	{
		struct mr_conn *rc = conn_of(&s, 1);
		uint32_t rslot = (uint32_t)rc->peer;
		unsigned int resets = r[0].resets[slot];
		int had = 0;

		for (int k = 0; k < 2; k++) {
			struct mroce_engine_pub pub = {
				.ctx = &r[k], .reset = rec_reset,
				.rx = rec_rx, .tx = rec_tx,
			};

			mroce_engine_set_pub(s.p.e[k], &pub);
		}
		set_filter(&s, NULL, NULL);
		ck_assert_int_eq(post(&s, 0, MROCE_WR_RDMA_WRITE, 2, 0, 64, 0),
				 0);
		ck_assert(run_until_wcs(&s, 2, 0, 1000000000ull));
		ck_assert_uint_eq(r[0].resets[slot], resets + 1);
		for (int i = 0; i < c->npaths; i++)
			ck_assert_uint_eq(r[0].tx[slot][i].sport,
					  c->path[i].sport);
		for (int i = 0; i < rc->npaths; i++) {
			if (!rc->path[i].rx_valid)
				continue;
			had++;
			ck_assert_uint_gt(r[1].nrx[rslot][i], 0);
			ck_assert_uint_eq(r[1].rx[rslot][i].cum_psn,
					  rc->path[i].rx_cum);
		}
		ck_assert_int_ge(had, 4);
	}
	pair_fini(&s);
}
END_TEST

MROCE_SUITE(metaroce_pub_suite)
Suite *metaroce_pub_suite(void)
{
	Suite *s = suite_create("metaroce_pub");
	TCase *tc = tcase_create("pub");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, pub__receiver_publishes_what_it_placed);
	tcase_add_test(tc, pub__a_missing_psn_is_never_published);
	tcase_add_test(tc, pub__data_refused_is_not_published);
	tcase_add_test(tc, pub__our_ports_and_generations_as_they_change);
	suite_add_tcase(s, tc);
	return s;
}
