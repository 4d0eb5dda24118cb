// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Timers: each path's PTO/RTO/RNR hold (path_timer), the handshake and READ
 * watchdogs (mr_conn_tick), and the min-heap of connections keyed by their
 * earliest due instant, which makes next_timer(), tick() and tx() cost O(log n)
 * in the number of connections.
 */
#include "metaroce_int.h"

static uint32_t pop_due(struct mr_engine *t, uint64_t now);

/* RNR wait over: held PSNs are retransmitted as they are. */
static void hold_expired(struct mroce_engine *e, struct mr_conn *c,
			 struct mr_path *p, uint64_t now)
{
	for (uint32_t s = p->una; s != p->next_psn; s++) {
		uint16_t idx = p->ring[s % MR_PATH_WIN];
		struct mr_txe *t;

		if (idx == MR_TXE_NONE)
			continue;
		t = &c->txe[idx];
		if (txe_fl(t) & TXE_HOLD) {
			txe_clr(t, TXE_HOLD);
			txe_set(t, TXE_LOST);
			p->nheld--;
			p->nlost++;
		}
	}
	p->hold_until = 0;
	if (!p->deadline)
		mr_path_arm(e, c, p, now);
}

/* The timer of a path with nothing outstanding fired: it is idle, unless
 * a probation probe went unanswered: probe once more (it may have been
 * lost), then try another port. true: the path was probed or retired. */
static bool idle_expired(struct mroce_engine *e, struct mr_conn *c, int slot,
			 uint64_t now)
{
	struct mr_path *p = &c->path[slot];

	if (p->probed && p->probed < MR_PROBES) {
		uint64_t pto = mr_path_pto(e, c, p);

		p->probed++;
		p->want_probe = 1;
		p->deadline = now + (now - mr_conn_heard(c) < pto ?
					     pto :
					     mr_path_rto(e, c, p));
		return true;
	}
	if (p->probed) {
		mr_explore_quiet(c, now);
		mr_path_retire(e, c, slot, MROCE_REROLL_TIMEOUT, false);
		mr_path_probation(e, c, p, now);
		return true;
	}
	p->deadline = 0;
	return false;
}

/* A thin path (a window of a packet or two, on a crowded plane) with the
 * connection alive: its oldest packet is the likely loss, and there are
 * no followers to show it. Resend that packet instead of a PROBE (whose
 * answer would take a round trip before the resend could even start):
 * it asks for an immediate ACK, which tells as much as a probe's answer.
 * Once per progress; then probes. */
static bool tail_resend_due(const struct mr_conn *c, const struct mr_path *p,
			    uint64_t now, uint64_t pto)
{
	return !p->probed && !p->tlp && p->inflight &&
	       p->inflight + p->nlost <= MR_TLP_MAX && c->last_ack &&
	       now - c->last_ack < pto;
}

static void tail_resend(struct mroce_engine *e, struct mr_conn *c,
			struct mr_path *p, uint64_t now)
{
	for (uint32_t s = p->una; s != p->next_psn; s++) {
		uint16_t idx = p->ring[s % MR_PATH_WIN];

		if (idx == MR_TXE_NONE ||
		    (txe_fl(&c->txe[idx]) & (TXE_LOST | TXE_HOLD)))
			continue;
		mr_lose_entry(e, c, p, idx, now);
		break;
	}
	p->tlp = 1;
	p->deadline = now + mr_path_pto(e, c, p);
}

/* Tail-loss probe: ask the receiver what it has. The first comes after a
 * PTO; the next after another PTO while the connection is otherwise alive
 * (a lost probe or answer must not cost rto_min), after an RTO when
 * nothing at all comes back. */
static void tail_probe(struct mroce_engine *e, struct mr_conn *c,
		       struct mr_path *p, uint64_t now)
{
	if (p->probed)
		MROCE_STAT_INC(e, rto_fires);
	p->probed++;
	p->want_probe = 1;
	p->deadline = now + (mr_conn_heard(c) &&
					     now - mr_conn_heard(c) <
						     mr_path_pto(e, c, p) ?
				     mr_path_pto(e, c, p) :
				     mr_path_rto(e, c, p));
}

/* The PTO or RTO of path slot fired. true: the path was retired or
 * probed again (nothing more to do for it in this tick). */
static bool path_expired(struct mroce_engine *e, struct mr_conn *c, int slot,
			 uint64_t now)
{
	struct mr_path *p = &c->path[slot];

	if (!(p->inflight + p->nlost))
		return idle_expired(e, c, slot, now);
	if (mr_path_silent(e, c, p, now)) {
		/* Silent while its siblings deliver: a dead plane (or a
		 * port hashed into one). Waiting for RTOs would stall every
		 * message with a segment on it for rto_min; move its data to
		 * the live paths now and try a fresh source port, which gets
		 * a minimal window until it proves itself. With a handful in
		 * flight a tail loss is likelier than a dead plane: then one
		 * probe goes first. */
		mr_explore_quiet(c, now);
		mr_path_retire(e, c, slot, MROCE_REROLL_TIMEOUT, false);
		mr_path_probation(e, c, p, now);
		return true;
	}
	if (tail_resend_due(c, p, now, mr_path_pto(e, c, p))) {
		tail_resend(e, c, p, now);
	} else if (p->probed < MR_PROBES) {
		tail_probe(e, c, p, now);
	} else {
		/* Nothing came back after MR_PROBES probes and RTOs: the
		 * path is a blackhole. Move everything elsewhere (a lossy
		 * path would have answered one of them). */
		MROCE_STAT_INC(e, rto_fires);
		c->backoff++;
		mr_explore_quiet(c, now);
		mr_path_retire(e, c, slot, MROCE_REROLL_TIMEOUT, true);
		return true;
	}
	return false;
}

static void path_timer(struct mroce_engine *e, struct mr_conn *c, int slot,
		       uint64_t now)
{
	struct mr_path *p = &c->path[slot];
	uint8_t reason;

	mr_path_move(e, c, slot, now);
	if (p->hold_until && now >= p->hold_until)
		hold_expired(e, c, p, now);
	if (p->deadline && now >= p->deadline &&
	    path_expired(e, c, slot, now))
		return;
	if (p->cc.sent >= 64) {
		if (mr_cc_path_bad(c, p, &reason))
			mr_path_retire(e, c, slot, reason, false);
		else
			mr_cc_path_reset_stats(p);
	}
}

static void read_watchdog(struct mroce_engine *e, struct mr_conn *c,
			  uint64_t now)
{
	struct mroce_list *n, *nx;

	for (n = c->qps.next; n != &c->qps; n = nx) {
		struct mroce_qp *qp = mr_qp_of(n);
		struct mr_qp *q = QP(qp);

		nx = n->next;
		if (!q->reads_out || qp->state != MROCE_QPS_RTS)
			continue;
		for (int i = 0; i < MROCE_MAX_RD_ATOMIC; i++) {
			struct mroce_wqe *w;

			if (!q->rdrx[i].used || now < q->rdrx[i].deadline)
				continue;
			w = mr_sq_by_msn(qp, q->rdrx[i].msn);
			if (w && w->state != MROCE_WQE_DONE) {
				mroce_sq_fail(e, qp, w,
					      MROCE_WC_RETRY_EXC_ERR);
				break;
			}
		}
	}
}

void mr_conn_tick(struct mroce_engine *e, struct mr_conn *c, uint64_t now)
{
	if (mr_conn_handshaking(c) && now >= c->hs.deadline) {
		if (++c->hs.tries > e->cfg.retry_cnt) {
			mr_hs_fail(e, c);
			return;
		}
		c->hs.want = 1;
		c->hs.fast = 0;
		c->hs.deadline = mr_hs_deadline(e, c, c->hs.tries, now);
	}
	if (c->hold_until && now >= c->hold_until) {
		/* Streams parked on an RNR hold resume (their held
		 * PSNs are retransmitted by the path timers). */
		c->hold_until = 0;
		for (struct mroce_list *n = c->qps.next; n != &c->qps;
		     n = n->next)
			mr_qp_kick(mr_qp_of(n));
	}
	if (c->state == MR_CONN_ESTABLISHED) {
		for (int i = 0; i < c->npaths; i++)
			path_timer(e, c, i, now);
		read_watchdog(e, c, now);
	}
}

/* Safety net: recompute every active connection once in a while, so
 * that a change no call marked can delay a timer by at most
 * MR_SWEEP_NS. Idle connections leave the active list here. */
void mr_sweep(struct mroce_engine *e, uint64_t now)
{
	struct mr_engine *t = T(e);
	struct mroce_list *l, *nx;

	if (now - t->last_sweep < MR_SWEEP_NS)
		return;
	t->last_sweep = now;
	for (l = t->active.next; l != &t->active; l = nx) {
		struct mr_conn *c =
			mroce_container_of(l, struct mr_conn, alink);

		nx = l->next;
		if (!c->heap.dirty) {
			c->heap.dirty = 1;
			t->dirty[t->ndirty++] = c;
		}
		if (mr_conn_idle(c))
			mroce_list_del(&c->alink);
	}
	mr_flush_dirty(e, now);
}

void mr_tick(struct mroce_engine *e, uint64_t now)
{
	struct mr_engine *t = T(e);
	uint32_t n;

	mr_flush_dirty(e, now);
	mr_sweep(e, now);
	n = pop_due(t, now);
	for (uint32_t i = 0; i < n; i++) {
		struct mr_conn *c = t->work[i];

		if (c->heap.tdue <= now)
			mr_conn_tick(e, c, now);
		mr_conn_kick(c);
	}
	mr_flush_dirty(e, now);
}

static uint64_t umin(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The earliest timer of connection c (what mr_conn_tick() acts on). */
static uint64_t conn_tdue(const struct mr_conn *c)
{
	uint64_t next = UINT64_MAX;

	if (mr_conn_handshaking(c))
		next = umin(next, c->hs.deadline);
	if (c->state != MR_CONN_ESTABLISHED)
		return next;
	if (c->hold_until)
		next = umin(next, c->hold_until);
	for (const struct mroce_list *n = c->qps.next; n != &c->qps;
	     n = n->next) {
		const struct mr_qp *q = QP(mr_qp_of(n));

		for (int i = 0; q->reads_out && i < MROCE_MAX_RD_ATOMIC; i++)
			if (q->rdrx[i].used)
				next = umin(next, q->rdrx[i].deadline);
	}
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (p->deadline)
			next = umin(next, p->deadline);
		if (p->hold_until)
			next = umin(next, p->hold_until);
		/* the lossy-path check (path_timer) is due at once */
		if (p->cc.sent >= 64)
			next = 0;
	}
	return next;
}

/* The earliest instant connection c has something to do: a timer, a
 * pending ACK, a control packet, or data it may send (`now` for "at
 * once"); UINT64_MAX for nothing. *tdue: its earliest timer. */
static uint64_t conn_due(const struct mroce_engine *e, const struct mr_conn *c,
			 uint64_t now, uint64_t *tdue)
{
	uint64_t next = conn_tdue(c);
	bool ready = false, usable = false;
	bool idle = mroce_list_empty(&c->sched);

	*tdue = next;
	if (c->hs.want || c->hs.want_accept)
		return now;
	if (c->state != MR_CONN_ESTABLISHED)
		return next;
	if (c->naks.count)
		return now;
	for (int i = 0; i < c->npaths; i++) {
		const struct mr_path *p = &c->path[i];

		if (p->want_probe || p->want_reroll)
			return now;
		if (idle && mr_idle_probe_due(p) &&
		    c->pace.next_send <= now) {
			uint64_t at = mr_idle_probe_at(e, c, p);

			if (at <= now)
				return now;
			next = umin(next, at);
		}
		if (p->ack_due)
			next = umin(next, p->ack_urgent ? now : p->ack_due);
		if (p->nlost && mr_cc_room(p))
			ready = true;
		if (mr_path_usable(p))
			usable = true;
	}
	/* Entries may belong to a message on RNR hold: then the end of the
	 * hold is the time to look again, not now (no spin). */
	if (c->hold_until > now)
		ready = false;
	if (usable && ((c->nresend && c->hold_until <= now) ||
		       (!mroce_list_empty(&c->sched) &&
			c->txe_used < mr_conn_flight_cap(c))))
		ready = true;
	if (ready) {
		uint64_t at = c->pace.next_send > now ? c->pace.next_send : now;

		next = umin(next, at);
	}
	return next;
}

static bool heap_less(const struct mr_conn *a, const struct mr_conn *b)
{
	return a->heap.due < b->heap.due ||
	       (a->heap.due == b->heap.due && a->heap.dseq < b->heap.dseq);
}

static void heap_put(struct mr_engine *t, uint32_t i, struct mr_conn *c)
{
	t->heap[i] = c;
	c->heap.hidx = i + 1;
}

static void heap_up(struct mr_engine *t, uint32_t i)
{
	struct mr_conn *c = t->heap[i];

	while (i && heap_less(c, t->heap[(i - 1) / 2])) {
		heap_put(t, i, t->heap[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_put(t, i, c);
}

static void heap_down(struct mr_engine *t, uint32_t i)
{
	struct mr_conn *c = t->heap[i];

	for (;;) {
		uint32_t l = 2 * i + 1, m = i;
		const struct mr_conn *best = c;

		if (l < t->nheap && heap_less(t->heap[l], best))
			m = l, best = t->heap[l];
		if (l + 1 < t->nheap && heap_less(t->heap[l + 1], best))
			m = l + 1;
		if (m == i)
			break;
		heap_put(t, i, t->heap[m]);
		i = m;
	}
	heap_put(t, i, c);
}

void mr_heap_remove(struct mr_engine *t, struct mr_conn *c)
{
	uint32_t i = c->heap.hidx - 1;
	struct mr_conn *last = t->heap[--t->nheap];

	c->heap.hidx = 0;
	if (last == c)
		return;
	heap_put(t, i, last);
	heap_up(t, i);
	heap_down(t, last->heap.hidx - 1);
}

/* Recompute c's due instant and its place in the heap. */
void mr_conn_sched(struct mroce_engine *e, struct mr_conn *c, uint64_t now)
{
	struct mr_engine *t = T(e);

	c->heap.due = conn_due(e, c, now, &c->heap.tdue);
	c->heap.dseq = t->hseq++;
	if (c->heap.due == UINT64_MAX) {
		if (c->heap.hidx)
			mr_heap_remove(t, c);
		return;
	}
	if (!c->heap.hidx) {
		heap_put(t, t->nheap++, c);
		heap_up(t, c->heap.hidx - 1);
	} else {
		heap_up(t, c->heap.hidx - 1);
		heap_down(t, c->heap.hidx - 1);
	}
}

/* Bring every connection touched by this call up to date. */
void mr_flush_dirty(struct mroce_engine *e, uint64_t now)
{
	struct mr_engine *t = T(e);

	while (t->ndirty) {
		struct mr_conn *c = t->dirty[--t->ndirty];

		c->heap.dirty = 0;
		mr_conn_sched(e, c, now);
		mr_pub_tx(e, c);
	}
}

/* Take every connection due by `now` out of the heap into t->work (the
 * caller puts them back with mr_conn_kick + mr_flush_dirty). */
static uint32_t pop_due(struct mr_engine *t, uint64_t now)
{
	uint32_t n = 0;

	while (t->nheap && t->heap[0]->heap.due <= now) {
		struct mr_conn *c = t->heap[0];

		mr_heap_remove(t, c);
		t->work[n++] = c;
	}
	return n;
}

uint64_t mr_next_timer(const struct mroce_engine *e, uint64_t now)
{
	struct mr_engine *t = T(e);
	uint64_t next;

	/* Logically const: bring the heap up to date with the calls since
	 * the last flush (rx() and the verbs only mark connections dirty,
	 * so a burst of them costs one recompute per connection). The
	 * engine is never a const object, only passed as one. */
	mr_flush_dirty((struct mroce_engine *)(uintptr_t)e, now);
	if (t->nhs)
		return now;
	if (!t->nheap)
		return UINT64_MAX;
	next = t->heap[0]->heap.due;
	return next < now ? now : next;
}
