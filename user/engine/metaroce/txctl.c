// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Control packets of a connection: the handshake packet due, ACCEPT, queued
 * NAKs, ACKs (sprayed over our own ports), PATH_REROLL and PROBE; and emit(),
 * which every packet we send goes through.
 */
#include "metaroce_int.h"

int mr_emit(struct mroce_engine *e, const struct mr_conn *c,
	    const struct mroce_meta_pkt *pk, struct mroce_tx_pkt *out,
	    size_t cap, uint16_t sport, bool ect)
{
	int n = mroce_meta_build(pk, out->buf, cap);

	if (n < 0)
		return n;
	out->len = (uint32_t)n;
	out->peer = c->peer;
	out->sport = sport;
	out->dport = MROCE_UDP_PORT;
	out->ect = ect;
	MROCE_STAT_INC(e, tx_pkts);
	MROCE_STAT_ADD(e, tx_bytes, (uint64_t)n);
	return 0;
}

static void ack_fill(struct mroce_engine *e, struct mr_conn *c, int slot,
		     struct mroce_meta_pkt *pk, uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	uint64_t share = mr_cc_fair_share(e, NULL, now) / 1000000ull;

	memset(pk, 0, sizeof(*pk));
	pk->opcode = MROCE_OP_ACK;
	pk->conn_id = c->remote_id;
	pk->path = (uint8_t)slot;
	pk->path_gen = p->rx_gen;
	pk->ack.cum_psn = p->rx_cum;
	pk->ack.tsecr = p->rx_tsecr;
	pk->ack.rate_mbps = share > UINT32_MAX ? UINT32_MAX : (uint32_t)share;
	pk->ack.ce_count = p->rx_ce;
	pk->ack.flags = p->ack_flags;
	mr_sack_bytes(p, pk->ack.sack);
}

/* A port of ours that carries no data of ours has nothing to tell us
 * whether the plane it hashes onto in our direction is alive, yet it
 * carries our ACKs: every MR_ACK_PROBE_EVERY ACKs on it since its data
 * (or its last probe) was last acknowledged, it is probed.
 * Two unanswered probes retire it (idle_expired), and ack_sport skips it
 * while its new port is on probation. */
void mr_ack_port_check(struct mroce_engine *e, struct mr_conn *c,
		       struct mr_path *p, uint64_t now, bool now_due)
{
	if (!path_empty(p) || p->probed || p->want_probe ||
	    p->life != MR_PATH_ACTIVE)
		return;
	if (now_due ? !p->ack_tx : ++p->ack_tx < MR_ACK_PROBE_EVERY)
		return;
	p->ack_tx = 0;
	p->probed = 1;
	p->want_probe = 1;
	p->deadline = now + mr_path_pto(e, c, p);
	mr_conn_kick(c);
}

/* The source port of an ACK of path slot: ACKs are sprayed over our own
 * ports in rotation, not sent back on the data's port. The reverse
 * direction has planes of its own, and the reversed 5-tuple of a data port
 * hashes onto any of them: with ACKs pinned to it, a dead reverse plane
 * silenced every forward path whose ACKs crossed it, live forward plane or
 * not, and the sender retired those ports and had to find that plane
 * again. Sprayed, a dead reverse plane costs each path a share of its
 * ACKs, which cumulative ACKs and the SACK make up for; only a dead
 * forward plane silences a path. Our ports are the ones our own data
 * uses in that direction, so those on probation (suspected dead) are
 * skipped while others remain. The ACK that follows an ACCEPT leaves on
 * path 0's port, behind the ACCEPT. */
static uint16_t ack_sport(struct mroce_engine *e, struct mr_conn *c,
			  int slot, uint64_t now)
{
	if (c->ack_accept && slot == 0) {
		c->ack_accept = 0;
		return c->path[0].sport;
	}
	for (int k = 0; k < c->npaths; k++) {
		struct mr_path *p = &c->path[c->ack_rr++ % c->npaths];

		if (p->life == MR_PATH_PROBATION)
			continue;
		mr_ack_port_check(e, c, p, now, false);
		return p->sport;
	}
	return c->path[slot].rx_sport;
}

/* The NAK at the head of the queue. */
static int tx_nak(struct mroce_engine *e, struct mr_conn *c,
		  struct mroce_tx_pkt *out, size_t cap)
{
	struct mr_nak *n = &c->naks.q[c->naks.head];
	struct mroce_meta_pkt pk;

	memset(&pk, 0, sizeof(pk));
	pk.opcode = MROCE_OP_NAK;
	pk.conn_id = c->remote_id;
	pk.path = n->path;
	pk.path_gen = n->gen;
	pk.nak.code = n->code;
	pk.nak.rnr_timer = n->rnr_timer;
	pk.nak.stream = n->stream;
	pk.nak.msn = n->msn;
	pk.nak.psn = n->psn;
	if (mr_emit(e, c, &pk, out, cap, n->sport, false) < 0)
		return -1;
	c->naks.head = (c->naks.head + 1) % MR_NAKQ;
	c->naks.count--;
	MROCE_STAT_INC(e, tx_naks);
	return 1;
}

/* The pending ACK of path slot. */
static int tx_ack(struct mroce_engine *e, struct mr_conn *c, int slot,
		  struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	struct mroce_meta_pkt pk;

	ack_fill(e, c, slot, &pk, now);
	if (mr_emit(e, c, &pk, out, cap, ack_sport(e, c, slot, now), false) <
	    0)
		return -1;
	MROCE_STAT_INC(e, tx_acks);
	c->pub_rate_mbps = pk.ack.rate_mbps;
	/* A PROBE says our ACKs of this path went missing: its answer
	 * leaves on two of our ports, in case the plane of one is dead. */
	if (p->ack_twice) {
		p->ack_twice = 0;
		return 1;
	}
	p->ack_cum = p->rx_cum;
	p->ack_at = now;
	mr_pub_ack(e, c, slot);
	p->ack_due = 0;
	p->ack_pending = 0;
	p->ack_urgent = 0;
	p->ack_flags = 0;
	p->rx_ce = 0;
	return 1;
}

/* PATH_REROLL: path slot has a new generation and source port. */
static int tx_reroll(struct mroce_engine *e, struct mr_conn *c, int slot,
		     struct mroce_tx_pkt *out, size_t cap)
{
	struct mr_path *p = &c->path[slot];
	struct mroce_meta_pkt pk;

	memset(&pk, 0, sizeof(pk));
	pk.opcode = MROCE_OP_PATH_REROLL;
	pk.conn_id = c->remote_id;
	pk.path = (uint8_t)slot;
	pk.path_gen = p->gen;
	pk.reroll.old_gen = p->old_gen;
	pk.reroll.new_gen = p->gen;
	pk.reroll.new_sport = p->sport;
	pk.reroll.reason = p->want_reroll;
	if (mr_emit(e, c, &pk, out, cap, p->sport, false) < 0)
		return -1;
	p->want_reroll = 0;
	return 1;
}

static const uint8_t mr_probe_pad[MROCE_PROBE_PAD];

/* A PROBE on path slot: what has the receiver got? */
static int tx_probe(struct mroce_engine *e, struct mr_conn *c, int slot,
		    struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	struct mroce_meta_pkt pk;

	memset(&pk, 0, sizeof(pk));
	pk.opcode = MROCE_OP_PROBE;
	/* nothing outstanding: a port check, not a question about missing
	 * ACKs (rx_probe) */
	pk.flags = MROCE_F_ACK_REQ | (path_empty(p) ? MROCE_F_CHECK : 0);
	pk.conn_id = c->remote_id;
	pk.path = (uint8_t)slot;
	pk.path_gen = p->gen;
	pk.next_psn = p->next_psn;
	pk.tsval = now_us(now);
	pk.payload = mr_probe_pad;	/* as long as its answer */
	pk.payload_len = MROCE_PROBE_PAD;
	if (mr_emit(e, c, &pk, out, cap, p->sport, false) < 0)
		return -1;
	p->want_probe = 0;
	p->probe_rtx = p->rtx.total;
	p->probe_psn = p->next_psn;
	p->probe_ts = pk.tsval;
	p->probe_sent = now;
	MROCE_STAT_INC(e, probes_sent);
	return 1;
}

/* One control packet of connection c, if any is due: handshake first,
 * then NAKs, then per path its ACK, PATH_REROLL or PROBE. 1 = built, 0 =
 * nothing due, -1 = no room in out. */
int mr_tx_control(struct mroce_engine *e, struct mr_conn *c,
		  struct mroce_tx_pkt *out, size_t cap, uint64_t now)
{
	int r = mr_tx_handshake(e, c, out, cap, now);

	if (r)
		return r;
	if (c->state != MR_CONN_ESTABLISHED)
		return 0;
	if (c->naks.count)
		return tx_nak(e, c, out, cap);
	for (int i = 0; i < c->npaths; i++) {
		struct mr_path *p = &c->path[i];

		if (p->ack_due && (p->ack_urgent || now >= p->ack_due))
			return tx_ack(e, c, i, out, cap, now);
		if (p->want_reroll)
			return tx_reroll(e, c, i, out, cap);
		if (p->want_probe)
			return tx_probe(e, c, i, out, cap, now);
	}
	return 0;
}
