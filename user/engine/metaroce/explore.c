// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Path exploration (REPS-style): when a connection that could send at the line
 * rate delivers well below it, move its least delivering path to a new source
 * port in search of an idle plane. The judgement of each measuring interval
 * lives here; the move itself is path.c's.
 */
#include "metaroce_int.h"

/* The connection's base RTT (us): its paths' smallest sample, 0 = none. */
static uint32_t conn_min_rtt(const struct mr_conn *c)
{
	uint32_t base = 0;

	for (int i = 0; i < c->npaths; i++) {
		uint32_t m = c->path[i].rtt.min_us;

		if (m && (!base || m < base))
			base = m;
	}
	return base;
}

/* A moved port whose PROBE takes longer than this (ns) landed behind a
 * queue: the connection's fastest PROBE round trip + 1/16. A software
 * endpoint's round trips jitter by milliseconds, and a plane that limits
 * it holds a queue near its CC target (base + jitter_us): it allows
 * jitter_us / MR_EXPLORE_SW_QUEUE, between the two, over its base RTT
 * (its first PROBE may already wait behind a queue). */
uint64_t mr_hop_limit(const struct mroce_engine *e,
		      const struct mr_conn *c)
{
	uint64_t ref = c->explore.probe_rtt_min, slack,
		 sw = (uint64_t)e->cfg.jitter_us * 1000 / MR_EXPLORE_SW_QUEUE,
		 base = (uint64_t)conn_min_rtt(c) * 1000;

	if (sw && base && base < ref)
		ref = base;
	slack = ref / 16;
	return ref + (sw > slack ? sw : slack);
}

/* Every port a software endpoint's move tried (p's) waited behind a
 * queue: likely no plane is idle (a balanced connection that the planes
 * limit; an idle plane escapes MR_EXPLORE_HOPS tries over 4 planes 1 time
 * in 6). The next move waits twice as long, as after MR_EXPLORE_TRIES
 * failures, and p goes back to the port it left (its plane was no worse,
 * and a port dropped at random onto another plane unbalances them). It
 * is empty (moved once drained; only PROBEs went out since), and that
 * port is proven. */
void mr_explore_busy(const struct mroce_engine *e, struct mr_conn *c,
		     struct mr_path *p)
{
	if (!e->cfg.jitter_us)
		return;
	if (c->explore.fails / MR_EXPLORE_TRIES < MR_EXPLORE_MAX_SHIFT)
		c->explore.fails = (c->explore.fails / MR_EXPLORE_TRIES + 1) *
				   MR_EXPLORE_TRIES;
	for (int i = 0; i < c->npaths; i++)
		if (&c->path[i] != p && c->path[i].sport == p->home_sport)
			return;
	if (p->home_sport)
		p->sport = p->home_sport;
}

/* Software endpoints: did the planes hold a queue through the whole
 * interval? Its smallest RTT sample, over every path, above the
 * connection's base RTT + jitter_us / MR_EXPLORE_SW_QUEUE. Scheduling
 * jitter delays some samples, a standing queue all of them; random loss
 * none (it adds no queue). */
static bool explore_queued(const struct mroce_engine *e,
			   const struct mr_conn *c)
{
	uint32_t base = conn_min_rtt(c);

	return base && c->explore.rtt_lo &&
	       c->explore.rtt_lo >
		       base + e->cfg.jitter_us / MR_EXPLORE_SW_QUEUE;
}

/* Software endpoints' verdict on a judged interval: move a path after
 * MR_EXPLORE_SW_RUN queued intervals in a row; MR_EXPLORE_SW_CLEAR clear
 * ones in a row (the planes no longer limit) end the backoff. */
static bool explore_sw_move(const struct mroce_engine *e, struct mr_conn *c)
{
	if (!explore_queued(e, c)) {
		c->explore.qrun = 0;
		if (c->explore.crun < MR_EXPLORE_SW_CLEAR &&
		    ++c->explore.crun == MR_EXPLORE_SW_CLEAR)
			c->explore.fails = 0;
		return false;
	}
	c->explore.crun = 0;
	if (++c->explore.qrun < MR_EXPLORE_SW_RUN)
		return false;
	c->explore.qrun = 0;
	/* the queue is now: a path failure before it no longer explains it */
	c->explore.failed = 0;
	return true;
}

static void explore_restart(struct mr_conn *c, uint64_t now, uint8_t fl)
{
	c->explore.start = now;
	c->explore.acked = 0;
	c->explore.lost = 0;
	c->explore.fl = fl;
	c->explore.rtt_lo = 0;
	for (int i = 0; i < c->npaths; i++)
		c->path[i].explore_acked = 0;
}

/* The path to move: the one that delivered least in the interval (its
 * plane is the most crowded), not one moved by the last exploration (its
 * window is still growing), nor one in `skip` or on probation. -1 while
 * a path is draining for a move: one exploration at a time. */
static int explore_victim(const struct mr_conn *c, uint64_t skip)
{
	uint32_t least = 0;
	int worst = -1;

	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (p->life == MR_PATH_MOVING)
			return -1;
		/* a port being proven after a failure is no candidate, but
		 * does not hold up the search (a dead plane may have taken
		 * the only ports of a live one: their ACKs crossed it) */
		if ((i < 64 && (skip >> i & 1)) ||
		    p->life == MR_PATH_PROBATION || p->want_reroll ||
		    !p->rtt.srtt_us)
			continue;
		if (i < 64 && (c->explore.moved >> i & 1))
			continue;
		if (worst < 0 || p->explore_acked < least) {
			worst = i;
			least = p->explore_acked;
		}
	}
	return worst;
}

/* A path fell silent: maybe a plane died. The interval's rate holds the
 * failure, not the planes: measure afresh. The pace stays (it used to jump
 * to the slowest, x64: the paths of a dead plane, and those whose ACKs
 * crossed it, each fell silent, and the search for the planes still idle
 * after their new ports landed stopped for the rest of the transfer;
 * exploring costs little now, since a path moves only once drained and a
 * port on a dead plane never leaves probation). */
void mr_explore_quiet(struct mr_conn *c, uint64_t now)
{
	c->explore.failed = 1;
	explore_restart(c, now, c->explore.fl & MR_EXPLORE_WARM);
}

/* The length (ns) of an exploration interval: MR_EXPLORE_RTTS of the
 * slowest path's srtt, doubled per MR_EXPLORE_TRIES failed moves. */
static uint64_t explore_interval(const struct mroce_engine *e,
				 const struct mr_conn *c)
{
	uint32_t srtt_max = 0;

	for (int i = 0; i < c->npaths; i++)
		if (c->path[i].rtt.srtt_us > srtt_max)
			srtt_max = c->path[i].rtt.srtt_us;
	/* A software endpoint's interval spans at least MR_EXPLORE_RTTS
	 * jitter_us: its smallest RTT sample must not be one stall long. */
	if (srtt_max < e->cfg.jitter_us)
		srtt_max = e->cfg.jitter_us;
	return (uint64_t)MR_EXPLORE_RTTS * srtt_max * 1000
	       << (c->explore.fails / MR_EXPLORE_TRIES < MR_EXPLORE_MAX_SHIFT ?
		   c->explore.fails / MR_EXPLORE_TRIES : MR_EXPLORE_MAX_SHIFT);
}

/* An interval that holds a move (a path draining, or a new port on
 * probation) measures the move, not the planes: the interval starts
 * when the new port carries data. */
static bool explore_moving(const struct mr_conn *c)
{
	for (int i = 0; i < c->npaths; i++)
		if (c->path[i].life == MR_PATH_MOVING ||
		    (c->path[i].life == MR_PATH_PROBATION && i < 64 &&
		     (c->explore.moved >> i & 1)))
			return true;
	return false;
}

/* The verdict on a finished interval (flags fl): is a move due? */
static bool explore_move_due(const struct mroce_engine *e, struct mr_conn *c,
			     uint8_t fl, uint64_t now)
{
	uint64_t rate, link = e->cfg.link_bps;

	/* The rate the planes took from us: packets acknowledged plus
	 * packets declared lost (their retransmissions are sent, and
	 * counted, again). Random loss then does not look like a crowded
	 * plane: with it the acknowledged rate alone falls by the loss
	 * rate and its recovery, on every plane alike, and judging by it
	 * either rerolled for nothing or (as before) had to give up on
	 * every interval with a little loss - which left a connection of
	 * 8 ports on 3 of 4 planes there for good under 1% loss. */
	rate = (uint64_t)(c->explore.acked + c->explore.lost) * c->mtu * 8 *
	       1000000000ull / (now - c->explore.start);
	/* The first interval holds the rate's ramp: not a measurement.
	 * Nor is one where a fifth of the packets was lost: that is a
	 * failure (a dead plane), which the path timers handle. */
	if (!(fl & MR_EXPLORE_WARM) || c->npaths < 2 ||
	    c->explore.lost * 4 > c->explore.acked ||
	    mr_cc_rate(e, c, now) < link || (fl & MR_EXPLORE_IDLE) ||
	    !(fl & MR_EXPLORE_BLOCKED))
		return false;
	/* Software endpoints: the host, not the planes, usually limits the
	 * rate (link_bps is nominal), so a rate below it says nothing about
	 * the planes; a queue that stays on every path does. */
	if (e->cfg.jitter_us)
		return explore_sw_move(e, c);
	if (rate >= link / 100 * MR_EXPLORE_PCT) {
		/* Payload rate; a balanced connection reaches ~93% of the
		 * line. */
		c->explore.failed = 0;
		c->explore.good = 1;
		c->explore.fails = 0;
		return false;
	}
	if (c->explore.good) {
		/* A connection that had the rate needs two short intervals
		 * below it in a row: one is noise (a loss recovery, a burst
		 * of completions), and a move off a plane it needs costs a
		 * search. */
		c->explore.good = 0;
		return false;
	}
	return true;
}

/* Move the worst path(s) of the interval just judged, and start the
 * next interval. */
static void explore_move(struct mroce_engine *e, struct mr_conn *c,
			 uint64_t now)
{
	int worst = explore_victim(c, 0);
	uint64_t moved = 0;

	explore_restart(c, now, MR_EXPLORE_WARM);
	if (worst < 0)
		return;
	if (c->explore.fails < UINT8_MAX)
		c->explore.fails++;
	/* MR_EXPLORE_PATHS per round, never more than a quarter of the
	 * paths. Each new port finds a given idle plane with probability
	 * 1/planes, so two per round would halve the search; measured, one
	 * did better (the two least delivering paths were at times the
	 * only two ports of a plane, which then emptied). */
	for (int k = 0; k < MR_EXPLORE_PATHS && worst >= 0 &&
			(k == 0 || 4 * (k + 1) <= c->npaths);
	     k++) {
		moved |= worst < 64 ? 1ull << worst : 0;
		mr_path_set_life(e, &c->path[worst], MR_PATH_MOVING);
		mr_path_move(e, c, worst, now);
		worst = explore_victim(c, moved);
	}
	c->explore.moved = moved;
}

/* Called on every ACK with progress: account the interval, and when it
 * is over judge it and maybe move a path. */
void mr_path_explore(struct mroce_engine *e, struct mr_conn *c, uint64_t now)
{
	uint8_t fl = c->explore.fl;
	uint64_t ival;

	/* An ACK that finds the pacer ready and data waiting: the windows,
	 * not the rate, held the data back. */
	if (mroce_list_empty(&c->sched))
		c->explore.fl |= MR_EXPLORE_IDLE;
	else if (c->pace.next_send <= now)
		c->explore.fl |= MR_EXPLORE_BLOCKED;
	ival = explore_interval(e, c);
	if (!c->explore.start || now - c->explore.start > 4 * ival) {
		/* First ACK, or the connection slept: start afresh. */
		explore_restart(c, now, 0);
		return;
	}
	if (explore_moving(c)) {
		explore_restart(c, now, fl & MR_EXPLORE_WARM);
		return;
	}
	if (now - c->explore.start < ival)
		return;
	if (explore_move_due(e, c, fl, now))
		explore_move(e, c, now);
	else
		explore_restart(c, now, MR_EXPLORE_WARM);
}
