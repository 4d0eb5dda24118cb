// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Path lifecycle on the sender: a path is a source port with a generation and a
 * PSN space. Its initialisation, retirement (new generation, its entries resent
 * elsewhere), probation of a fresh port, the move of an explored path to a new
 * port, and the timeouts (PTO, RTO) that decide when a path is silent.
 */
#include "metaroce_int.h"

const char *const mr_path_life_names[MR_PATH_NLIVES] = {
#define MR_X(name, str) [MR_PATH_##name] = str,
	MR_PATH_LIVES(MR_X)
#undef MR_X
};

/* Bit t of legal_next[s]: s -> t is a transition (see metaroce_int.h). */
static const uint8_t legal_next[MR_PATH_NLIVES] = {
	[MR_PATH_ACTIVE] = 1u << MR_PATH_ACTIVE | 1u << MR_PATH_MOVING |
			   1u << MR_PATH_PROBATION,
	[MR_PATH_MOVING] = 1u << MR_PATH_ACTIVE,
	[MR_PATH_PROBATION] = 1u << MR_PATH_ACTIVE | 1u << MR_PATH_PROBATION,
};

/* The one place a path's lifecycle state changes. An illegal transition
 * is a bug of ours: counted (state_errors) and refused, never a crash of
 * the application. 0, or -EINVAL when refused. */
int mr_path_set_life(struct mroce_engine *e, struct mr_path *p,
		     enum mr_path_life l)
{
	if ((unsigned)l >= MR_PATH_NLIVES ||
	    !(legal_next[p->life] & (1u << l))) {
		MROCE_STAT_INC(e, state_errors);
		return -EINVAL;
	}
	p->life = (uint8_t)l;
	return 0;
}

static uint16_t new_sport(struct mroce_engine *e, const struct mr_conn *c,
			  int slot)
{
	uint16_t sp;

	for (int tries = 0;; tries++) {
		bool clash = false;

		sp = MROCE_SPORT_MIN +
		     mroce_rng_below(e, MROCE_SPORT_MAX - MROCE_SPORT_MIN + 1);
		for (int i = 0; i < c->npaths && tries < 16; i++)
			if (i != slot && c->path[i].sport == sp)
				clash = true;
		if (!clash && sp != c->path[slot].sport)
			return sp;
	}
}

void mr_path_tx_init(struct mroce_engine *e, struct mr_conn *c, int slot)
{
	struct mr_path *p = &c->path[slot];
	uint32_t isn = mroce_path_isn(c->tx_isn, (uint8_t)slot, p->gen);

	p->sport = new_sport(e, c, slot);
	p->next_psn = p->una = p->loss_scan = p->high_acked = isn;
	p->coal_psn = isn;
	p->inflight = p->nlost = p->nheld = 0;
	p->probed = p->tlp = p->hops = 0;
	mr_path_set_life(e, p, MR_PATH_ACTIVE);
	p->deadline = 0;
	p->hold_until = 0;
	p->rtt.srtt_us = p->rtt.var_us = 0;
	p->dupthresh = 1;
	p->rtx.head = p->rtx.n = 0;
	p->rtx.total = p->probe_rtx = 0;
	/* Forget the retired generation's PROBE: the peer's first ACK of
	 * the new one may still carry its echo (ACKF_PROBE and its tsval),
	 * and probe_psn lies in the old PSN space, which mr_rx_ack would walk
	 * from the new una (up to 2^31 PSNs, a stall of seconds). */
	p->probe_ts = 0;
	p->probe_psn = isn;
	for (int i = 0; i < MR_PATH_WIN; i++)
		p->ring[i] = MR_TXE_NONE;
	mr_cc_init(e, p);
}

/* Path p's smoothed RTT (us), or the best guess without a sample; 0 =
 * none. c may be NULL. */
uint32_t mr_path_srtt(const struct mr_conn *c, const struct mr_path *p)
{
	uint32_t srtt = p->rtt.srtt_us;

	/* A fresh (rerolled) path has no RTT yet: its siblings cross the
	 * same fabric, so the largest of theirs (queues included) is a
	 * better guess than rto_min (30 base RTTs in a data centre). */
	for (int i = 0; !p->rtt.srtt_us && c && i < c->npaths; i++)
		if (c->path[i].rtt.srtt_us > srtt)
			srtt = c->path[i].rtt.srtt_us;
	/* No path has a sample yet (the first flight): the handshake's
	 * round trip, when we initiated it, is one. */
	if (!srtt && c)
		srtt = c->hs.rtt_us;
	return srtt;
}

uint64_t mr_path_pto(const struct mroce_engine *e, const struct mr_conn *c,
		     const struct mr_path *p)
{
	uint32_t srtt = mr_path_srtt(c, p);
	uint64_t pto;

	if (!srtt)
		return (uint64_t)e->cfg.rto_min_us * 1000;
	/* A thin path (a packet or two out) whose packets all asked for an
	 * immediate ACK (each fills its window; message ends;
	 * retransmissions): no coalescing delay to wait for, only the RTT
	 * and its variation. Thin paths have no followers whose ACKs would
	 * reveal a loss, so this timer is what recovers their losses. (Not
	 * for fuller paths: their queue varies more, and their PTO also
	 * decides when a path is silent.) */
	if (p->rtt.srtt_us && p->inflight + p->nlost <= MR_TLP_MAX &&
	    !mroce_psn_before(p->una, p->coal_psn)) {
		uint32_t var = 4 * p->rtt.var_us > 2 ? 4 * p->rtt.var_us : 2;

		return (uint64_t)(p->rtt.srtt_us + var + e->cfg.jitter_us) *
			       1000 +
		       1000;
	}
	/* Most ACKs are immediate (gap, message end, retransmission,
	 * probe), so only a little slack over 2 srtt: a spurious probe
	 * costs one small packet, a late one stalls the messages. */
	pto = 2ull * srtt * 1000 + MR_PTO_SLACK_NS;
	/* ... but at least the receiver's coalescing delay over the RTT:
	 * packets that did not ask for an immediate ACK may be answered
	 * that late, and a PTO shorter than that made a healthy path with
	 * a few packets out look silent (mr_path_silent) and retired it. */
	if (pto < (uint64_t)srtt * 1000 + MR_ACK_WAIT_NS + MR_PTO_SLACK_NS)
		pto = (uint64_t)srtt * 1000 + MR_ACK_WAIT_NS +
		      MR_PTO_SLACK_NS;
	/* An endpoint that jitters (cfg.jitter_us) may answer that much
	 * later than its srtt says, and its RTT varies a lot more than a
	 * fabric's queues make it: the RTO's variance term too. */
	if (e->cfg.jitter_us) {
		uint64_t v = ((uint64_t)p->rtt.srtt_us + 4ull * p->rtt.var_us) *
			     1000;

		if (pto < v)
			pto = v;
		pto += (uint64_t)e->cfg.jitter_us * 1000;
	}
	return pto < 10000 ? 10000 : pto;
}

uint64_t mr_path_rto(const struct mroce_engine *e, const struct mr_conn *c,
		     const struct mr_path *p)
{
	uint64_t rto = (uint64_t)(p->rtt.srtt_us + 4 * p->rtt.var_us) * 1000;
	uint64_t min = (uint64_t)e->cfg.rto_min_us * 1000;

	if (rto < min)
		rto = min;
	return rto << (c->backoff < 6 ? c->backoff : 6);
}

void mr_path_arm(const struct mroce_engine *e, const struct mr_conn *c,
		 struct mr_path *p, uint64_t now)
{
	if (p->inflight + p->nlost)
		p->deadline = now + mr_path_pto(e, c, p);
	else
		p->deadline = 0;
}

void mr_path_retire(struct mroce_engine *e, struct mr_conn *c, int slot,
		    uint8_t reason, bool charge)
{
	struct mr_path *p = &c->path[slot];

	for (uint32_t s = p->una; s != p->next_psn; s++) {
		uint16_t idx = p->ring[s % MR_PATH_WIN];
		struct mr_txe *t;

		if (idx == MR_TXE_NONE)
			continue;
		t = &c->txe[idx];
		if (t->psn != s)
			continue;
		p->ring[s % MR_PATH_WIN] = MR_TXE_NONE;
		txe_clr(t, TXE_LOST | TXE_HOLD);
		txe_set(t, TXE_RESEND);
		/* Only an RTO says these were lost; otherwise the resend is
		 * our decision and costs the message no retry. */
		if (!charge && txe_tries(t))
			t->seg_try -= 1u << 24;
		c->txe_resend[idx / 64] |= 1ull << (idx % 64);
		c->nresend++;
	}
	p->old_gen = p->gen;
	p->gen++;
	mr_path_tx_init(e, c, slot);
	p->want_reroll = reason;
	MROCE_STAT_INC(e, path_rerolls);
}

/* Path p's PTO fired (nothing acknowledged on it for 2 srtt + slack):
 * is it silent while the connection is alive? Yes when a sibling had a
 * packet acknowledged that we sent after `since` (p's PROBE, or its last
 * progress when it has several packets out): the peer receives what we
 * send now, just not over p (other paths may be dead too: a plane
 * carries several of our ports).
 * Comparing send times, not arrival times, keeps deep queues (an incast)
 * from looking like silence, and random loss cannot silence a path with
 * several packets out (it would take every packet and every ACK). When
 * nothing gets through it is the peer or the whole fabric, and the RTO
 * (liveness, retry counting, backoff) decides. */
bool mr_path_silent(const struct mroce_engine *e, const struct mr_conn *c,
		    const struct mr_path *p, uint64_t now)
{
	uint64_t pto = mr_path_pto(e, c, p);
	uint32_t since;

	if (c->npaths < 2 || now - p->last_ack < pto || !c->last_tsecr)
		return false;
	/* Two probes: one lost probe (or answer) is random loss, which
	 * must not retire a path, let alone stop the exploration
	 * (mr_explore_quiet); two in a row are rare (1 in 400 at 5% loss)
	 * and cost one more PTO on a dead plane. */
	if (p->probed >= MR_PROBES)
		since = p->probe_ts;
	else if (p->inflight + p->nlost >= 4 && p->last_ack)
		/* its packets may wait in the receiver's ACK coalescing:
		 * a sibling's packet that left within that delay after
		 * p's last progress, and asked for an immediate ACK,
		 * proves nothing */
		since = now_us(p->last_ack + MR_ACK_WAIT_NS) + 1;
	else
		return false;
	return (int32_t)(c->last_tsecr - since) > 0;
}

/* A path rerolled away from silence may hash onto a dead plane again:
 * it carries no data until a PROBE on it is answered (pick_path avoids
 * probed paths while others have room). */
void mr_path_probation(struct mroce_engine *e, struct mr_conn *c,
		       struct mr_path *p, uint64_t now)
{
	uint64_t pto = mr_path_pto(e, c, p);

	mr_cc_on_reroll(e, p);
	p->last_ack = now;
	mr_path_set_life(e, p, MR_PATH_PROBATION);
	p->probed = 1;
	p->want_probe = 1;
	/* Its probe waits behind the siblings' queues: allow one and a
	 * half PTOs, then a second probe gets one more (path_timer). */
	p->deadline = now + (now - mr_conn_heard(c) < pto ? pto + pto / 2 :
						      mr_path_rto(e, c, p));
}

/* REPS-style path exploration. Random source ports may hash several paths
 * onto one plane and none onto another: the connection then queues on the
 * planes it has while one idles, its windows shrink to what those planes
 * carry, and no path choice can fix that (the RTTs look alike: the CC
 * keeps every queue short). What shows it is the rate: the connection has
 * data waiting for a window, may send at the full line rate (alone at the
 * receiver; an incast's bottleneck is the downlink, which no port avoids),
 * and yet delivers well below it. Then, every few round trips, re-roll its
 * worst path (the one that delivered least: the most crowded plane); a
 * port that lands on the idle plane drains fast and the fewest-in-flight
 * choice moves load onto it. Exploration stops as soon as
 * the rate is reached, and backs off when rerolls keep failing (a fabric
 * slower than the NIC, which no port fixes). A rerolled path goes through
 * probation like one that fell silent. */
/* An explored path takes a fresh port (on probation). The PROBE's answer
 * tells where it landed: over a plane our other ports keep busy it waits
 * behind their queues, over an idle one it takes the base RTT. A move is
 * made because a plane idles, so a port that lands on a queue is tried
 * again at once, up to MR_EXPLORE_HOPS ports (a round trip each, where
 * judging it by the rate took a ramp and two intervals). */
void mr_explore_hop(struct mroce_engine *e, struct mr_conn *c, int slot,
		    uint64_t now)
{
	struct mr_path *p = &c->path[slot];

	p->hops++;
	p->sport = new_sport(e, c, slot);
	p->probe_ts = 0;
	p->tlp = 0;
	MROCE_STAT_INC(e, path_rerolls);
	mr_path_probation(e, c, p, now);
	mr_cc_on_explore(e, c, p);
}

/* Exploration moves a path without retiring it: the path first drains
 * (`moving`: no new data, its losses are still retransmitted on it), then
 * takes a fresh source port with the same generation and PSN space. A
 * path is FIFO only per port, so nothing of it may be in flight across
 * the switch; once it is empty nothing is, and nothing is resent or
 * dropped as stale (retiring it threw its in-flight packets away and
 * resent them elsewhere: each exploration cost a window of data, and a
 * burst of explorations cost more than the plane they looked for). The
 * new port goes through probation (a PROBE must answer: it may hash onto
 * a dead plane) and then starts with its siblings' mean window. Called
 * whenever the path may have drained. */
void mr_path_move(struct mroce_engine *e, struct mr_conn *c, int slot,
		  uint64_t now)
{
	struct mr_path *p = &c->path[slot];

	if (p->life != MR_PATH_MOVING || !path_empty(p))
		return;
	mr_path_set_life(e, p, MR_PATH_ACTIVE);
	p->hops = 0;
	p->home_sport = p->sport;
	mr_explore_hop(e, c, slot, now);
}
