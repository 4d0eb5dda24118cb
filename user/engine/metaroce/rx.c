// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Receive side: the per-path receive state (generation, cumulative PSN, 256-bit
 * SACK), ACK coalescing and NAK queueing, the handling of data, PROBE and
 * PATH_REROLL packets, and the dispatch of every packet received (mr_rx).
 */
#include "metaroce_int.h"

void mr_rx_path_reset(struct mr_conn *c, struct mr_path *p, int slot,
		      uint8_t gen)
{
	p->rx_gen = gen;
	p->rx_valid = 1;
	p->rx_cum = mroce_path_isn(c->rx_isn, (uint8_t)slot, gen);
	p->rx_high = p->rx_cum;
	memset(p->sack, 0, sizeof(p->sack));
}

/* Resolve the path generation of an arriving packet. false = stale. */
static bool rx_path_gen(struct mroce_engine *e, struct mr_conn *c,
			struct mr_path *p, int slot, uint8_t gen)
{
	if (!p->rx_valid || gen_newer(gen, p->rx_gen)) {
		mr_rx_path_reset(c, p, slot, gen);
		mr_pub_rx(e, c, slot);	/* nothing received in it yet */
	} else if (gen != p->rx_gen) {
		MROCE_STAT_INC(e, rx_stale_path);
		return false;
	}
	return true;
}

static bool sack_test(const struct mr_path *p, uint32_t i)
{
	return p->sack[i / 64] & (1ull << (i % 64));
}

static void sack_shr(struct mr_path *p, uint32_t k)
{
	const int n = MROCE_SACK_BITS / 64;

	while (k >= 64) {
		for (int i = 0; i < n - 1; i++)
			p->sack[i] = p->sack[i + 1];
		p->sack[n - 1] = 0;
		k -= 64;
	}
	if (!k)
		return;
	for (int i = 0; i < n - 1; i++)
		p->sack[i] = (p->sack[i] >> k) | (p->sack[i + 1] << (64 - k));
	p->sack[n - 1] >>= k;
}

void mr_sack_bytes(const struct mr_path *p, uint8_t out[MROCE_SACK_BYTES])
{
	for (int i = 0; i < MROCE_SACK_BYTES; i++)
		out[i] = (uint8_t)(p->sack[i / 8] >> (8 * (i % 8)));
}

/* Record PSN cum + d as received (d in [0, 256]). */
void mr_rx_mark(struct mr_path *p, uint32_t d)
{
	if (d) {
		p->sack[(d - 1) / 64] |= 1ull << ((d - 1) % 64);
		return;
	}
	/* cum arrives: advance over it and every contiguous SACKed PSN
	 * (bit i is cum + 1 + i), possibly across words. */
	uint32_t ones = 0;

	for (int w = 0; w < MROCE_SACK_BITS / 64; w++) {
		if (p->sack[w] != ~0ull) {
			ones += (uint32_t)__builtin_ctzll(~p->sack[w]);
			break;
		}
		ones += 64;
	}
	p->rx_cum += 1 + ones;
	sack_shr(p, 1 + ones);
}

/* How long an ACK of ours may wait for company. A software endpoint
 * (cfg.jitter_us) waits longer: spread over 8 paths, a software sender's
 * packets arrive on each path tens of µs apart, so 8 µs coalesced
 * nothing and every data packet cost an ACK, whose receive is part of
 * the sender's time per packet; its peer's timers allow for
 * milliseconds of scheduling jitter anyway. Whatever needs an answer at
 * once still gets one (the urgent cases of mr_ack_want). */
static uint64_t ack_delay_ns(const struct mroce_engine *e)
{
	return e->cfg.jitter_us ? MR_ACK_DELAY_SW_NS : MR_ACK_DELAY_NS;
}

uint64_t mr_ack_late_ns(const struct mroce_engine *e)
{
	return ack_delay_ns(e) + (uint64_t)e->cfg.jitter_us * 1000;
}

void mr_ack_want(const struct mroce_engine *e, struct mr_path *p,
		 bool urgent, uint64_t now)
{
	p->ack_pending++;
	if (!p->ack_due)
		p->ack_due = now + ack_delay_ns(e);
	if (urgent || p->ack_pending >= MR_ACK_EVERY)
		p->ack_urgent = 1;
}

void mr_nak_queue(struct mr_conn *c, uint8_t code, int slot, uint8_t gen,
		  uint32_t psn, uint32_t stream, uint32_t msn,
		  uint16_t sport)
{
	struct mr_nak *n;

	if (c->naks.count >= MR_NAKQ)
		return;	/* the sender's retransmission asks again */
	n = &c->naks.q[(c->naks.head + c->naks.count++) % MR_NAKQ];
	n->code = code;
	n->path = (uint8_t)slot;
	n->gen = gen;
	n->rnr_timer = code == MROCE_NAK_RNR ? MR_RNR_TIMER : 0;
	n->psn = psn;
	n->stream = stream;
	n->msn = msn;
	n->sport = sport;
}

static int rx_data(struct mroce_engine *e, struct mr_conn *c,
		   const struct mroce_rx_meta *m,
		   const struct mroce_meta_pkt *pk, uint64_t now)
{
	int slot = pk->path;
	struct mr_path *p;
	enum place_res r;
	bool filled, urgent;
	int32_t d;

	MROCE_STAT_INC(e, rx_data_pkts);
	if (slot >= c->npaths) {
		MROCE_STAT_INC(e, rx_malformed);
		return -EINVAL;
	}
	p = &c->path[slot];
	if (!rx_path_gen(e, c, p, slot, pk->path_gen))
		return -ESTALE;
	p->rx_sport = m->sport;
	mr_cc_fair_share(e, c, now);	/* counts us as an active sender */
	if (m->ce) {
		if (p->rx_ce < 0xffff)
			p->rx_ce++;
		p->ack_flags |= MROCE_ACKF_ECE;
		MROCE_STAT_INC(e, ce_marks);
	}
	/* A pending answer to a PROBE must echo the probe's tsval: that is
	 * how the sender recognises it. */
	if (!(p->ack_flags & MROCE_ACKF_PROBE))
		p->rx_tsecr = pk->tsval;
	if (mroce_psn_diff(pk->psn + 1, p->rx_high) > 0)
		p->rx_high = pk->psn + 1;
	d = (int32_t)(pk->psn - p->rx_cum);
	if (d < 0 || (d > 0 && d <= MROCE_SACK_BITS &&
		      sack_test(p, (uint32_t)d - 1))) {
		MROCE_STAT_INC(e, rx_dup);
		p->ack_flags |= MROCE_ACKF_DUP;
		mr_ack_want(e, p, true, now);
		mr_pub_rx(e, c, slot);	/* taken in (rx_high) */
		return 0;
	}
	if (d > MROCE_SACK_BITS) {
		MROCE_STAT_INC(e, rx_out_of_window);
		mr_ack_want(e, p, true, now);
		mr_pub_rx(e, c, slot);	/* taken in (rx_high) */
		return -ERANGE;
	}
	if (d > 0)
		MROCE_STAT_INC(e, rx_ooo);
	filled = d == 0 && (p->sack[0] | p->sack[1] | p->sack[2] |
			    p->sack[3]);
	r = mr_place(e, c, slot, pk);
	if (r != PL_REFUSE)
		mr_rx_mark(p, (uint32_t)d);
	/* placed (or refused): the fast path may know */
	mr_pub_rx(e, c, slot);
	/* ACK at once on a gap, a refusal, a request (the end of a message
	 * that nothing follows at once), and when a hole is filled (a
	 * retransmission: the sender is waiting for exactly this, and
	 * coalescing would add its delay to every loss recovery). */
	urgent = d > 0 || r == PL_REFUSE ||
		 (pk->flags & (MROCE_F_ACK_REQ | MROCE_F_RETX)) || filled;
	mr_ack_want(e, p, urgent, now);
	if ((pk->flags & (MROCE_F_LAST | MROCE_F_ACK_REQ)) ==
	    (MROCE_F_LAST | MROCE_F_ACK_REQ)) {
		/* The message's other segments went over the other paths
		 * and may sit in their ACK coalescing: the sender completes
		 * it only when all are acknowledged, so flush them now
		 * rather than a coalescing delay later. (A sender with
		 * more messages right behind leaves ACK_REQ off: they keep
		 * the ACKs coming, and flushing every path at every
		 * message end made one ACK per data packet.) */
		for (int i = 0; i < c->npaths; i++)
			if (c->path[i].ack_pending)
				c->path[i].ack_urgent = 1;
	}
	return 0;
}

static int rx_probe(struct mroce_engine *e, struct mr_conn *c,
		    const struct mroce_rx_meta *m,
		    const struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_path *p;
	uint64_t late;
	bool lost;

	if (pk->path >= c->npaths)
		return -EINVAL;
	p = &c->path[pk->path];
	if (!rx_path_gen(e, c, p, pk->path, pk->path_gen))
		return -ESTALE;
	p->rx_sport = m->sport;
	p->rx_tsecr = pk->tsval;
	p->ack_flags |= MROCE_ACKF_PROBE;
	/* Did our ACKs go missing? Only if we already sent one that covers
	 * everything the PROBE says was sent, a while ago (a PROBE that
	 * follows its data at once, asking for the ACK we are about to
	 * send, proves nothing; nor does one of a path whose data was
	 * lost, as in an incast's downlink drops, nor a port check: CHECK,
	 * its sender has nothing outstanding there). */
	late = mr_ack_late_ns(e);
	lost = !(pk->flags & MROCE_F_CHECK) && p->ack_at &&
	       now - p->ack_at >= late &&
	       !mroce_psn_before(p->ack_cum, pk->next_psn);
	/* Then the answer leaves twice, on two ports, and every idle port
	 * of ours that carried ACKs since its last check is probed now
	 * rather than after MR_ACK_PROBE_EVERY (some may have died in our
	 * direction; at most once per MR_ACK_CHECK_NS). */
	p->ack_twice = lost && c->npaths > 1;
	if (lost && now - c->ack_checked >= MR_ACK_CHECK_NS) {
		c->ack_checked = now;
		for (int i = 0; i < c->npaths; i++)
			mr_ack_port_check(e, c, &c->path[i], now, true);
	}
	mr_ack_want(e, p, true, now);
	return 0;
}

static int rx_reroll(struct mroce_engine *e, struct mr_conn *c,
		     const struct mroce_meta_pkt *pk)
{
	struct mr_path *p;

	if (pk->path >= c->npaths)
		return -EINVAL;
	p = &c->path[pk->path];
	if (!p->rx_valid || gen_newer(pk->reroll.new_gen, p->rx_gen)) {
		mr_rx_path_reset(c, p, pk->path, pk->reroll.new_gen);
		mr_pub_rx(e, c, pk->path);
	}
	return 0;
}

static int mr_rx_one(struct mroce_engine *e, const struct mroce_rx_meta *m,
		     const void *buf, size_t len, uint64_t now)
{
	struct mroce_meta_pkt pk;
	struct mr_conn *c;
	int err;

	err = mroce_meta_parse(buf, len, &pk);
	if (err < 0) {
		MROCE_STAT_INC(e, rx_malformed);
		return err;
	}
	MROCE_STAT_INC(e, rx_pkts);
	MROCE_STAT_ADD(e, rx_bytes, len);
	if (pk.opcode >= MROCE_OP_CONNECT_REQ)
		return mr_rx_handshake(e, m, &pk, now);
	if (pk.opcode == MROCE_OP_NAK && pk.nak.code == MROCE_NAK_NO_CONN)
		return mr_rx_no_conn(e, m, &pk, now);
	c = mr_conn_by_id(e, pk.conn_id);
	if (c && c->peer == m->peer && c->state == MR_CONN_CONFIRM_SENT &&
	    !c->hs.fast) {
		/* The peer sends on the connection, so it adopted our
		 * CONFIRM (only that told it our id and ISN) and its ACCEPT
		 * was lost. A duplicate CONFIRM makes it resend the ACCEPT:
		 * ask now, once per attempt, instead of a handshake timeout
		 * (1 ms) later, during which everything it sends is lost. */
		c->hs.fast = 1;
		c->hs.want = 1;
		mr_conn_kick(c);
	}
	if (!c || c->peer != m->peer || c->state != MR_CONN_ESTABLISHED) {
		MROCE_STAT_INC(e, rx_no_conn);
		if (!c)
			mr_no_conn_reply(e, m, &pk, now);
		return -ENOENT;
	}
	mr_conn_kick(c);
	c->last_rx = now;
	switch (pk.opcode) {
	case MROCE_OP_ACK:
		mr_rx_ack(e, c, &pk, now);
		return 0;
	case MROCE_OP_NAK:
		mr_rx_nak(e, c, &pk, now);
		return 0;
	case MROCE_OP_PROBE:
		return rx_probe(e, c, m, &pk, now);
	case MROCE_OP_PATH_REROLL:
		return rx_reroll(e, c, &pk);
	default:
		return rx_data(e, c, m, &pk, now);
	}
}

int mr_rx(struct mroce_engine *e, const struct mroce_rx_meta *m,
	  const void *buf, size_t len, uint64_t now)
{
	struct mr_engine *t = T(e);
	int r = mr_rx_one(e, m, buf, len, now);

	/* The handshake may have changed the peer's connection too. */
	if (m->peer >= 0 && (uint32_t)m->peer < e->cfg.max_conns &&
	    t->by_peer[m->peer])
		mr_conn_kick(t->by_peer[m->peer]);
	return r;
}
