// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * MetaRoCE congestion control: a per-path window driven by ECN and delay in
 * the four cases of UEC NSCC (peers.md), multiplicative decrease on loss,
 * connection pacing at min(line rate, receiver fair-share hint), and the
 * receiver side of the hint (link_bps divided among active senders).
 *
 * Windows are in packets << 8 so that fractional increases accumulate
 * without floating point.
 */
#include "metaroce_int.h"

#define CC_SHIFT	8
#define CC_ONE		(1u << CC_SHIFT)
#define CC_INIT		(8u << CC_SHIFT)
#define CC_MIN		(1u << CC_SHIFT)
#define CC_MAX		((uint32_t)MR_PATH_WIN << CC_SHIFT)

void mr_cc_init(struct mroce_engine *e, struct mr_path *p)
{
	memset(&p->cc, 0, sizeof(p->cc));
	p->cc.cwnd = CC_INIT;
}

uint32_t mr_cc_cwnd_pkts(const struct mr_path *p)
{
	uint32_t w = p->cc.cwnd >> CC_SHIFT;

	return w ? w : 1;
}

uint32_t mr_cc_room(const struct mr_path *p)
{
	uint32_t w = mr_cc_cwnd_pkts(p);

	return w > p->inflight ? w - p->inflight : 0;
}

static void cut(struct mr_path *p, uint32_t num, uint32_t den, uint64_t now)
{
	uint64_t rtt_ns = (uint64_t)(p->srtt_us ? p->srtt_us : 10) * 1000;

	/* At most one decrease per round trip: one congestion event. */
	if (p->cc.last_cut && now - p->cc.last_cut < rtt_ns)
		return;
	p->cc.cwnd = (uint32_t)((uint64_t)p->cc.cwnd * num / den);
	if (p->cc.cwnd < CC_MIN)
		p->cc.cwnd = CC_MIN;
	p->cc.last_cut = now;
}

void mr_cc_on_ack(struct mroce_engine *e, struct mr_conn *c,
		  struct mr_path *p, uint32_t newly, uint32_t ce,
		  uint32_t rtt_us, uint64_t now)
{
	uint32_t base = p->min_rtt_us, target;
	bool high_delay;

	/* Queueing delay above half a base RTT (at least 5 us) is "high". */
	target = base + (base / 2 > 5 ? base / 2 : 5);
	high_delay = rtt_us && base && rtt_us > target;
	if (ce) {
		if (high_delay)
			cut(p, 7, 10, now);	/* congested: decrease */
		/* ECN with low delay: hold; the spraying moves load. */
	} else if (!high_delay) {
		p->cc.cwnd += newly * CC_ONE / 2;	/* proportional */
	} else {
		/* fair additive increase: about one packet per RTT */
		p->cc.cwnd += (uint32_t)((uint64_t)newly * CC_ONE * CC_ONE /
					 p->cc.cwnd);
	}
	if (p->cc.cwnd > CC_MAX)
		p->cc.cwnd = CC_MAX;
}

void mr_cc_on_loss(struct mroce_engine *e, struct mr_path *p, uint64_t now)
{
	cut(p, 7, 10, now);
}

void mr_cc_on_timeout(struct mroce_engine *e, struct mr_path *p)
{
	p->cc.cwnd = CC_INIT;
}

uint64_t mr_cc_rate(const struct mroce_engine *e, const struct mr_conn *c,
		    uint64_t now)
{
	uint64_t r = e->cfg.link_bps;

	/* Until the receiver has told us its share (first ACK, one RTT),
	 * start at a quarter of the line: an incast's first round trip
	 * then fills the receiver's queue four times slower. */
	if (!c->hint_bps)
		return r / 4;
	if (c->hint_bps < r)
		r = c->hint_bps;
	return r;
}

uint64_t mr_cc_fair_share(struct mroce_engine *e, struct mr_conn *c,
			  uint64_t now)
{
	struct mr_engine *t = e->tp;
	uint32_t n;

	if (now - t->fair_epoch_start >= MR_FAIR_EPOCH_NS) {
		/* More than one epoch idle: nobody from the last one. */
		t->active_prev = now - t->fair_epoch_start <
						 2 * MR_FAIR_EPOCH_NS ?
					 t->active_now :
					 0;
		t->active_now = 0;
		t->fair_epoch++;
		t->fair_epoch_start = now;
	}
	if (c && c->active_epoch != t->fair_epoch + 1) {
		c->active_epoch = t->fair_epoch + 1;
		t->active_now++;
	}
	n = t->active_now > t->active_prev ? t->active_now : t->active_prev;
	return e->cfg.link_bps / (n ? n : 1);
}

bool mr_cc_path_bad(const struct mr_conn *c, const struct mr_path *p,
		    uint8_t *reason)
{
	uint64_t sent = 0, lost = 0;

	/* "Keeps losing": a quarter of its last >= 64 packets, at least 8,
	 * and three times the loss rate of the connection's paths together
	 * (uniform loss is no reason to move: every path has it). */
	if (p->cc.losses < 8 || p->cc.losses * 4 < p->cc.sent)
		return false;
	for (int i = 0; i < c->npaths; i++) {
		sent += c->path[i].cc.sent;
		lost += c->path[i].cc.losses;
	}
	if ((uint64_t)p->cc.losses * sent < 3 * lost * p->cc.sent)
		return false;
	*reason = MROCE_REROLL_LOSS;
	return true;
}

void mr_cc_path_reset_stats(struct mr_path *p)
{
	p->cc.sent = p->cc.losses = p->cc.acks = p->cc.ce_acks = 0;
}
