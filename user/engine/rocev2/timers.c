// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * RoCEv2 timers: the retransmission timeout (exponential back-off, reset
 * by progress) and the RNR back-off. QPs with a deadline armed sit on the
 * engine-wide rv2_eng.timers list, so a tick looks at those only.
 */
#include "rocev2_int.h"

/* Timeout doubles with every expiry that brings no progress: with a
 * short base timeout and deep queues, a fixed timeout would resend into a
 * queue still full of the previous copies, forever (congestion collapse).
 * Current NICs adapt their retransmission timeout the same way. */
uint64_t rv2_rto_ns(const struct mroce_engine *e, const struct rv2_qp *q)
{
	return ((uint64_t)e->cfg.rto_min_us * 1000) << q->backoff;
}

void rv2_timer_update(struct mroce_engine *e, struct rv2_qp *q)
{
	bool armed = q->rto_at || q->hold_until;

	if (armed && !mroce_list_linked(&q->timer_link))
		mroce_list_add_tail(&rv2e(e)->timers, &q->timer_link);
	else if (!armed)
		mroce_list_del(&q->timer_link);
}

static void rto_fire(struct mroce_engine *e, struct mroce_qp *qp,
		     struct rv2_qp *q, uint64_t now)
{
	struct mroce_wqe *w;
	uint32_t c;

	q->rto_at = 0;
	w = rv2_wqe_of_psn(qp, q->una, &c);
	if (!w || pdiff(q->sent_hw, q->una) <= 0)
		return;
	MROCE_STAT_INC(e, rto_fires);
	if (!rv2_spend_retry(e, qp, w))
		return;
	q->implied = false;
	if (q->backoff < RV2_MAX_BACKOFF)
		q->backoff++;
	rv2_rewind_to(qp, q, q->una, true);
	q->rto_at = now + rv2_rto_ns(e, q);
	rv2_kick(e, qp, now);
}

void rv2_tick(struct mroce_engine *e, uint64_t now)
{
	struct rv2_eng *g = rv2e(e);
	struct mroce_list todo;

	if (mroce_list_empty(&g->timers))
		return;
	/* Work from a private list: handling one QP can move others to ERR
	 * (CQ overrun), which unlinks them from wherever they are. */
	todo.next = g->timers.next;
	todo.prev = g->timers.prev;
	todo.next->prev = &todo;
	todo.prev->next = &todo;
	mroce_list_init(&g->timers);
	while (!mroce_list_empty(&todo)) {
		struct rv2_qp *q = mroce_container_of(todo.next, struct rv2_qp,
						      timer_link);
		struct mroce_qp *qp = q->qp;

		mroce_list_del(&q->timer_link);
		mroce_list_add_tail(&g->timers, &q->timer_link);
		if (q->hold_until && now >= q->hold_until) {
			q->hold_until = 0;
			rv2_kick(e, qp, now);
		}
		if (q->rto_at && now >= q->rto_at)
			rto_fire(e, qp, q, now);
		rv2_timer_update(e, q);
	}
}

uint64_t rv2_next_timer(const struct mroce_engine *e, uint64_t now)
{
	const struct rv2_eng *g = rv2e(e);
	const struct mroce_list *l;
	uint64_t t = UINT64_MAX;

	if (g->gnak_head != g->gnak_tail)
		return now;
	for (l = e->sched.next; l != &e->sched; l = l->next)
		if (rv2_qp_has_tx(mroce_container_of(l, struct mroce_qp, sched),
				  now))
			return now;
	for (l = g->timers.next; l != &g->timers; l = l->next) {
		const struct rv2_qp *q =
			mroce_container_of(l, struct rv2_qp, timer_link);

		if (q->rto_at && q->rto_at < t)
			t = q->rto_at;
		if (q->hold_until && q->hold_until < t)
			t = q->hold_until;
	}
	return t;
}
