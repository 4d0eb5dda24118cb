// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * MetaRoCE congestion control: a per-path window driven by ECN and delay in
 * the four cases of UEC NSCC (peers.md) with a short delay target (never
 * below one packet per path on the link), a once-per-RTT cut by the
 * fraction marked CE, no reaction to loss alone; connection pacing at
 * min(line rate, receiver fair-share hint, ECN limit once the windows are
 * at the floor); and the receiver side of the hint (link_bps divided
 * among active senders).
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

/* When the connection's segment size is set: the time npaths segments
 * take on the sender's link (us, rounded up), the CC's smallest delay
 * target over the base RTT (mr_cc_on_ack). */
void mr_cc_conn_mtu(const struct mroce_engine *e, struct mr_conn *c)
{
	uint64_t bits = (uint64_t)c->npaths * c->mtu * 8;
	uint64_t us = (bits * 1000000ull + e->cfg.link_bps - 1) /
		      e->cfg.link_bps;

	c->ser_floor_us = (uint16_t)(us < UINT16_MAX ? us : UINT16_MAX);
}

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

/* The window is in use (RFC 7661's "validated" window): at least half
 * of it in flight. */
static bool window_used(const struct mr_path *p)
{
	return 2 * p->inflight >= mr_cc_cwnd_pkts(p);
}

void mr_cc_on_send(struct mr_path *p)
{
	if (window_used(p))
		p->cc.limited = true;
}

static void cut(struct mr_path *p, uint32_t num, uint32_t den, uint64_t now)
{
	uint64_t rtt_ns =
		(uint64_t)(p->rtt.srtt_us ? p->rtt.srtt_us : 10) * 1000;

	/* At most one decrease per round trip: one congestion event. */
	if (p->cc.last_cut && now - p->cc.last_cut < rtt_ns)
		return;
	p->cc.cwnd = (uint32_t)((uint64_t)p->cc.cwnd * num / den);
	if (p->cc.cwnd < CC_MIN)
		p->cc.cwnd = CC_MIN;
	p->cc.last_cut = now;
}

/* Can the windows express no further decrease: is every path of the
 * connection at a packet or two? (Thin paths beside fat ones are common:
 * then the fat ones take the cut.) */
static bool at_floor(const struct mr_conn *c)
{
	for (int i = 0; i < c->npaths; i++)
		if (c->path[i].cc.cwnd > 2 * CC_MIN)
			return false;
	return c->npaths > 0;
}

static uint64_t srtt_ns(const struct mr_path *p)
{
	return (uint64_t)(p->rtt.srtt_us ? p->rtt.srtt_us : 10) * 1000;
}

/* The per-connection side of the ECN rule. A path's window cannot go
 * below a packet, and npaths packets a round trip is a lot on a short
 * one (8 x 8 KiB every 12 us: 5 Gbit/s), so when every path is at the
 * floor and marks still come, the connection's rate takes the cut, at
 * most once per RTT (the period of the path that reports it); unmarked
 * periods give back 1/64 of the line per RTT (ecn_rate_grow), and the
 * limit goes once it reaches the line. */
static void ecn_rate_cut(const struct mroce_engine *e, struct mr_conn *c,
			 const struct mr_path *p, uint32_t f, uint64_t now)
{
	uint64_t r = c->pace.ecn_bps ? c->pace.ecn_bps : mr_cc_rate(e, c, now);
	uint64_t rtt = srtt_ns(p);

	if (c->pace.ecn_at && now - c->pace.ecn_at < rtt)
		return;
	r = r / 1000 * (1000 - f / 2);
	if (r < e->cfg.link_bps / 1000)
		r = e->cfg.link_bps / 1000;
	c->pace.ecn_bps = r;
	c->pace.ecn_at = now;
}

static void ecn_rate_grow(const struct mroce_engine *e, struct mr_conn *c,
			  const struct mr_path *p, uint64_t now)
{
	uint64_t rtt = srtt_ns(p);

	if (!c->pace.ecn_bps || now - c->pace.ecn_at < rtt)
		return;
	c->pace.ecn_bps += e->cfg.link_bps / 64;
	c->pace.ecn_at = now;
	if (c->pace.ecn_bps >= e->cfg.link_bps)
		c->pace.ecn_bps = 0;
}

/* The delay target over the base RTT: a quarter of it (at least 1 us, the
 * tsval resolution), or floor_us if more. Never below what the
 * connection's smallest load queues: one packet on each path, npaths
 * packets through the sender's link (and, as the planes share it out,
 * through each plane in proportion). On slow links that alone is more
 * than base / 4 (8 x 4 KiB at 100 Gbit/s: 2.6 us over a 6 us base RTT),
 * so a target below it was never met: every sample read as a queue, no
 * window could grow, and each window that a timeout or re-roll had set to
 * one packet stayed there for good - the decay of long lossy runs on 10
 * and 25 Gbit/s planes (docs/engine.md, "Delay target"). */
static uint32_t queue_target(const struct mr_conn *c, uint32_t base,
			     uint32_t floor_us)
{
	uint32_t q = base / 4 > 1 ? base / 4 : 1;

	if (q < c->ser_floor_us)
		q = c->ser_floor_us;
	if (q < floor_us)
		q = floor_us;
	return base + q;
}

/* The connection's base RTT: the smallest of its paths'. On a software
 * endpoint every path shares the hosts' CPUs, and a path whose port was
 * re-rolled under load never saw its own base. */
static uint32_t conn_base(const struct mr_conn *c)
{
	uint32_t b = 0;

	for (int i = 0; i < c->npaths; i++)
		if (c->path[i].rtt.min_us &&
		    (!b || c->path[i].rtt.min_us < b))
			b = c->path[i].rtt.min_us;
	return b;
}

void mr_cc_on_ack(struct mroce_engine *e, struct mr_conn *c,
		  struct mr_path *p, uint32_t newly, uint32_t ce,
		  uint32_t rtt_us, uint64_t now)
{
	uint32_t base = p->rtt.min_us, target, lo;
	bool high_delay;

	/* Queueing delay above a quarter of the base RTT (at least 1 us,
	 * the tsval resolution) is "high". The queue is kept short on
	 * purpose: every loss is recovered through it twice (detection and
	 * retransmission), and a backlog held in the sender is one a
	 * retransmission overtakes. */
	target = queue_target(c, base, 0);
	/* A software endpoint's RTT jitters by its scheduling (tens to
	 * hundreds of us on a busy host): that is no queue, and reading it
	 * as one shrank every window to a packet. */
	if (target < base + e->cfg.jitter_us)
		target = base + e->cfg.jitter_us;
	high_delay = rtt_us && base && rtt_us > target;
	if (rtt_us && (!p->cc.rtt_lo || rtt_us < p->cc.rtt_lo))
		p->cc.rtt_lo = rtt_us;
	p->cc.per_newly += newly;
	p->cc.per_ce += ce;
	if (ce) {
		if (high_delay)
			cut(p, 7, 10, now);	/* congested: decrease */
		/* ECN with low delay: see the period's end below */
	} else if (!high_delay && !p->cc.queued &&
		   (p->cc.limited || !mroce_list_empty(&c->sched))) {
		p->cc.cwnd += newly * CC_ONE / 2;	/* proportional */
	}
	/* High delay without ECN: a queue is building below the marking
	 * threshold. Once per RTT, decrease in proportion to the excess of
	 * the round trip's smallest sample (never below x0.7), so that the
	 * backlog waits in the sender, where a retransmission overtakes it,
	 * not in the fabric, where it delays every loss recovery. The
	 * smallest sample, because a sample echoed by a coalesced ACK also
	 * holds the receiver's ACK delay: judged one by one, those would
	 * shrink a slow path's window, which slows its ACKs further. */
	if (now >= p->cc.period_end) {
		/* ECN without the delay: a marking queue the delay does not
		 * show (a phantom queue, a shallow ECN threshold, another
		 * flow's queue). Once per RTT, decrease by half the
		 * fraction of the period's packets marked (DCTCP's rule
		 * with the period's fraction for alpha): a path marked
		 * throughout halves per RTT; a sender that ignored it ran
		 * at its full rate through any marker (issue #13). */
		if (p->cc.per_ce && p->cc.per_newly) {
			uint32_t f = p->cc.per_ce >= p->cc.per_newly
					     ? 1000
					     : 1000 * p->cc.per_ce /
						       p->cc.per_newly;

			if (at_floor(c))
				ecn_rate_cut(e, c, p, f, now);
			cut(p, 1000 - f / 2, 1000, now);
		} else if (p->cc.per_newly) {
			ecn_rate_grow(e, c, p, now);
		}
		p->cc.per_ce = p->cc.per_newly = 0;
		lo = p->cc.rtt_lo;
		/* A software endpoint's round trip is judged by its
		 * smallest sample against a short queue target: jitter
		 * delays some samples, a standing queue all of them. */
		if (e->cfg.jitter_us && e->cfg.queue_us) {
			uint32_t cb = conn_base(c);

			target = queue_target(c, cb, e->cfg.queue_us);
			p->cc.queued = lo && cb && lo > target;
		}
		if (!ce && lo && base && lo > target) {
			uint32_t num = 1000 -
				       (uint32_t)(800ull * (lo - target) / lo);

			cut(p, num < 700 ? 700 : num, 1000, now);
		}
		p->cc.rtt_lo = 0;
		p->cc.limited = window_used(p);
		p->cc.period_end =
			now +
			(uint64_t)(p->rtt.srtt_us ? p->rtt.srtt_us : 10) * 1000;
	}
	if (p->cc.cwnd > CC_MAX)
		p->cc.cwnd = CC_MAX;
}

void mr_cc_on_loss(struct mroce_engine *e, struct mr_path *p, uint64_t now)
{
	/* Loss alone is not a congestion signal here: a queue that
	 * overflows marks CE and shows delay long before it drops, and the
	 * ACKs around the loss carry both, so the window has already
	 * reacted. A loss without them is corruption or a flaky link, and
	 * shrinking the window for it only idles the path (UEC NSCC reacts
	 * to ECN and delay, not to loss). Losses still count towards the
	 * bad-path test (mr_cc_path_bad). */
	(void)e;
	(void)p;
	(void)now;
}

void mr_cc_on_timeout(struct mroce_engine *e, struct mr_path *p)
{
	p->cc.cwnd = CC_INIT;
}

void mr_cc_on_reroll(struct mroce_engine *e, struct mr_path *p)
{
	/* A port rerolled away from a silent plane may hash onto it (or
	 * another dead one) again: one packet until an ACK proves it. */
	p->cc.cwnd = CC_MIN;
}

void mr_cc_on_explore(struct mroce_engine *e, const struct mr_conn *c,
		      struct mr_path *p)
{
	uint64_t sum = 0;
	uint32_t n = 0;

	/* Moved off a live plane to find a better one, not away from a
	 * dead one: once its PROBE answers (probation) it starts with its
	 * siblings' mean window, so that landing on an idle plane pays at
	 * once rather than after a ramp from one packet. */
	for (int i = 0; i < c->npaths; i++) {
		if (&c->path[i] == p || c->path[i].life == MR_PATH_PROBATION)
			continue;
		sum += c->path[i].cc.cwnd;
		n++;
	}
	p->cc.cwnd = n ? (uint32_t)(sum / n) : CC_INIT;
	if (p->cc.cwnd < CC_MIN)
		p->cc.cwnd = CC_MIN;
}

uint64_t mr_cc_rate(const struct mroce_engine *e, const struct mr_conn *c,
		    uint64_t now)
{
	uint64_t r = e->cfg.link_bps;

	/* Until the receiver has told us its share (first ACK, one RTT),
	 * start at a quarter of the line: an incast's first round trip
	 * then fills the receiver's queue four times slower. */
	if (!c->pace.hint_bps)
		return r / 4;
	if (c->pace.hint_bps < r)
		r = c->pace.hint_bps;
	if (c->pace.ecn_bps && c->pace.ecn_bps < r)
		r = c->pace.ecn_bps;
	return r;
}

uint64_t mr_cc_fair_share(struct mroce_engine *e, struct mr_conn *c,
			  uint64_t now)
{
	struct mr_engine *t = e->tp;
	uint64_t len = t->fair_epoch_len ? t->fair_epoch_len : MR_FAIR_EPOCH_NS;
	uint32_t n;

	if (now - t->fair_epoch_start >= len) {
		/* More than one epoch idle: nobody from the last one. */
		t->active_prev = now - t->fair_epoch_start < 2 * len ?
					 t->active_now :
					 0;
		t->active_now = 0;
		t->fair_epoch++;
		t->fair_epoch_start = now;
		/* A sender paced at its share sends one packet every
		 * n * mtu * 8 / link_bps: with thousands of senders that is
		 * longer than the base epoch, and an epoch must span two
		 * such gaps or it misses senders and overstates the
		 * share. */
		n = t->active_prev;
		len = 0;
		if (e->cfg.link_bps >= 1000000)	/* bits / Mbit/s = us */
			len = 2ull * n * (e->cfg.mtu + 64u) * 8u * 1000u /
			      (e->cfg.link_bps / 1000000);
		t->fair_epoch_len = len > MR_FAIR_EPOCH_NS ? len :
							     MR_FAIR_EPOCH_NS;
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
