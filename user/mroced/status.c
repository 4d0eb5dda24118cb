// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * What mroced tells about itself: STATUS (sessions, objects, backend,
 * the control and I/O counters and one engine's) and APP_INFO (one
 * session) for `mrocectl daemon`, QUERY_STATS for an application's
 * mrv_query_stats(), and the per-queue counters it logs on exit.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "../ipc/devstats.h"
#include "mroced.h"

/* STATUS copies the counter structs into its arrays whole. */
_Static_assert(sizeof(((struct mrd_status *)0)->io) ==
		       sizeof(struct mroce_io_stats),
	       "mrd_status.io holds struct mroce_io_stats");
_Static_assert(sizeof(((struct mrd_status *)0)->eng) ==
		       sizeof(struct mroce_engine_stats),
	       "mrd_status.eng holds struct mroce_engine_stats");

/* One line per receive queue the endpoint read (afxdp), on exit. */
void log_queue_stats(void)
{
	int nq = mroce_ep_nqueues(mroced.ep);

	for (int i = 0; i < nq; i++) {
		struct mroce_io_stats is;
		uint32_t q = 0;

		mroce_io_get_stats(mroce_ep_queue_io(mroced.ep, i, &q), &is);
		pr_info("queue %u: rx %llu pkts %llu bytes, tx %llu pkts "
			"%llu bytes",
			q, (unsigned long long)is.rx_pkts,
			(unsigned long long)is.rx_bytes,
			(unsigned long long)is.tx_pkts,
			(unsigned long long)is.tx_bytes);
	}
}

void do_query_stats(struct sess *s, struct mrd_rep *r)
{
	struct mroce_engine_stats es;
	struct mroce_io_stats is;

	mroce_engine_get_stats(s->e, &es);
	mroce_ep_io_stats(mroced.ep, &is);
	mroce_dev_stats_fill(&r->u.stats, &es, &is);
}

int do_status(const struct mrd_req *q, struct mrd_rep *r)
{
	struct mrd_status *st = &r->u.status;
	struct mroce_engine *e;
	struct mroce_io_stats is;
	struct mroce_engine_stats es;

	st->pid = (uint32_t)getpid();
	for (struct sess *s = mroced.sessions; s; s = s->next) {
		if (!s->hello)
			continue;
		st->apps++;
		st->pds += (uint32_t)s->npds;
		st->mrs += (uint32_t)s->nmrs;
		st->cqs += (uint32_t)s->ncqs;
		st->qps += (uint32_t)s->nqps;
	}
	st->backend = mroced.backend;
	st->family = mroced.family;
	st->mtu = mroce_ep_mtu(mroced.ep);
	memcpy(st->local, mroced.local, 16);
	memcpy(st->ifname, mroced.ifname, sizeof(st->ifname));
	st->uptime_ms = (now_ns() - mroced.start_ns) / 1000000u;
	memcpy(st->ctl, mroced.ctl, sizeof(mroced.ctl));
	memcpy(st->loop, mroced.loop, sizeof(mroced.loop));
	mroce_ep_io_stats(mroced.ep, &is);
	memcpy(st->io, &is, sizeof(st->io));
	e = mroce_ep_engine(mroced.ep, q->u.status.transport
					       ? q->u.status.transport
					       : MRV_TRANSPORT_METAROCE);
	if (!e)
		return -ENOTSUP;
	mroce_engine_get_stats(e, &es);
	memcpy(st->eng, &es, sizeof(st->eng));
	return 0;
}

int do_app_info(const struct mrd_req *q, struct mrd_rep *r)
{
	uint32_t i = 0;

	for (struct sess *s = mroced.sessions; s; s = s->next) {
		if (!s->hello)
			continue;
		if (i++ != q->u.status.index)
			continue;
		struct mrd_app_info *a = &r->u.app;

		*a = (struct mrd_app_info){
			.pid = (uint32_t)s->pid,
			.session = (uint32_t)s->id,
			.transport = s->transport,
			.pds = (uint32_t)s->npds,
			.mrs = (uint32_t)s->nmrs,
			.cqs = (uint32_t)s->ncqs,
			.qps = (uint32_t)s->nqps,
		};
		for (struct sess_qp *p = s->qps; p; p = p->next)
			a->backlog += (uint32_t)p->bl_n;
		for (struct sess_cq *c = s->cqs; c; c = c->next)
			a->synth += (uint32_t)c->nsynth;
		/* The fill as the application left it: shown, never used. */
		a->sq_fill = atomic_load(&s->hdr->sq.head) -
			     atomic_load(&s->hdr->sq.tail);
		memcpy(a->sess, s->c, sizeof(a->sess));
		for (int k = 0; k < MRD_APP_NCOUNTERS; k++)
			a->app[k] = atomic_load_explicit(&s->hdr->app[k],
							 memory_order_relaxed);
		return 0;
	}
	return -ENOENT;
}
