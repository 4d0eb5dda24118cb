// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The copy of path state a kernel fast path keeps (mroce_engine_set_pub,
 * docs/xdp.md): each path's receive state, and our own ports and
 * generations. The receive side is published when a packet has been
 * placed (and when a new generation starts, with nothing received), from
 * the state that ACKs report, so the copy never says more than the
 * engine placed; each ACK we send is published too (what it covered, and
 * when a PROBE shows it lost). The transmit side is compared with what was
 * last published whenever a connection's state is brought up to date
 * (mr_flush_dirty), so every change of a port, a generation or a path's
 * probation reaches the fast path before the call returns; new hooks or a
 * new path count publish the connection in full, from a reset slot.
 */
#include "metaroce_int.h"

_Static_assert(sizeof(((struct mroce_pub_rx *)0)->sack) == MROCE_SACK_BYTES,
	       "the published SACK is the ACK's");

void mr_pub_reset(struct mroce_engine *e, uint32_t slot)
{
	if (e->pub.reset)
		e->pub.reset(e->pub.ctx, slot);
}

void mr_pub_rx(struct mroce_engine *e, const struct mr_conn *c, int slot)
{
	const struct mr_path *p = &c->path[slot];
	struct mroce_pub_rx r;

	if (!e->pub.rx)
		return;
	r.slot = (uint32_t)c->peer;
	r.path = (uint8_t)slot;
	r.gen = p->rx_gen;
	r.cum_psn = p->rx_cum;
	r.rx_high = p->rx_high;
	r.rate_mbps = c->pub_rate_mbps;
	mr_sack_bytes(p, r.sack);
	e->pub.rx(e->pub.ctx, &r);
}

void mr_pub_ack(struct mroce_engine *e, const struct mr_conn *c, int slot)
{
	const struct mr_path *p = &c->path[slot];
	struct mroce_pub_ack a;

	if (!e->pub.ack)
		return;
	a.slot = (uint32_t)c->peer;
	a.path = (uint8_t)slot;
	a.cum_psn = p->ack_cum;
	a.lost_at_us = now_us(p->ack_at + mr_ack_late_ns(e));
	a.lost_at_us |= !a.lost_at_us;	/* 0 is "no ACK yet" */
	e->pub.ack(e->pub.ctx, &a);
}

/* A path carries data and its ACKs: not a fresh port on probation (our
 * ACKs avoid those too, ack_sport). */
static bool path_active(const struct mr_path *p)
{
	return p->life != MR_PATH_PROBATION;
}

void mr_pub_tx(struct mroce_engine *e, struct mr_conn *c)
{
	bool full;

	if (!e->pub.tx)
		return;
	full = c->pub_epoch != e->pub_epoch || c->pub_npaths != c->npaths;
	if (full) {
		/* from nothing: then what the receive side has already
		 * published goes out again too */
		mr_pub_reset(e, (uint32_t)c->peer);
		c->pub_epoch = e->pub_epoch;
		c->pub_npaths = c->npaths;
		for (int i = 0; i < c->npaths; i++) {
			if (c->path[i].rx_valid)
				mr_pub_rx(e, c, i);
			if (c->path[i].ack_at)
				mr_pub_ack(e, c, i);
		}
	}
	for (int i = 0; i < c->npaths; i++) {
		struct mr_path *p = &c->path[i];
		struct mroce_pub_tx t = {
			.slot = (uint32_t)c->peer,
			.path = (uint8_t)i,
			.gen = p->gen,
			.npaths = c->npaths,
			.active = path_active(p),
			.sport = p->sport,
		};

		if (!full && p->pub_sport == t.sport && p->pub_gen == t.gen &&
		    p->pub_active == t.active)
			continue;
		p->pub_sport = t.sport;
		p->pub_gen = t.gen;
		p->pub_active = t.active;
		e->pub.tx(e->pub.ctx, &t);
	}
}
