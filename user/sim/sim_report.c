// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The simulation's statistics and report: the FCT histogram, the capacity
 * available at a time (blackholes), the recovery time after the first
 * blackhole, the result fields and the final sweep of every receive slot.
 */
#include "sim_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ------------------------------------------------------------------ */
/* Statistics helpers                                                   */
/* ------------------------------------------------------------------ */
uint32_t sim_hist_bucket(uint64_t v)
{
	int e;

	if (v < HIST_SUB)
		return (uint32_t)v;
	e = 63 - __builtin_clzll(v);	/* >= 6 */
	return (uint32_t)((e - 5) * HIST_SUB +
			  ((v >> (e - 6)) - HIST_SUB));
}

static uint64_t hist_value(uint32_t b)
{
	uint32_t e, m;

	if (b < HIST_SUB)
		return b;
	e = b / HIST_SUB + 5;
	m = b % HIST_SUB + HIST_SUB;
	/* middle of the bucket */
	return ((uint64_t)m << (e - 6)) + ((1ull << (e - 6)) >> 1);
}

static double hist_pct(const uint64_t *h, uint64_t total, double pct)
{
	uint64_t want, acc = 0;

	if (!total)
		return 0;
	want = (uint64_t)ceil(pct / 100.0 * (double)total);
	if (want == 0)
		want = 1;
	for (uint32_t b = 0; b < HIST_BUCKETS; b++) {
		acc += h[b];
		if (acc >= want)
			return (double)hist_value(b);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Running and the report                                               */
/* ------------------------------------------------------------------ */
static double jain(const double *x, uint32_t n)
{
	double sum = 0, sq = 0;

	for (uint32_t i = 0; i < n; i++) {
		sum += x[i];
		sq += x[i] * x[i];
	}
	return sq > 0 ? sum * sum / (n * sq) : 1.0;
}

/* Jain's index over the bytes each QP has completed when the first QP
 * finishes: how evenly the capacity was shared while all competed. */
void sim_jain_snapshot(struct mroce_sim *s)
{
	double *x = calloc(s->nconns, sizeof(*x));

	if (x) {
		for (uint32_t i = 0; i < s->nconns; i++)
			x[i] = (double)s->conns[i].bytes_done;
		s->res.jain_first = jain(x, s->nconns);
		free(x);
	}
	s->jain_done = true;
}

/* Jain's index over per-QP throughput (bytes / own completion time) of
 * the QPs that finished. */
static void jain_final(struct mroce_sim *s)
{
	double *x = calloc(s->nconns, sizeof(*x));
	uint32_t n = 0;

	if (!x)
		return;
	for (uint32_t i = 0; i < s->nconns; i++) {
		const struct qpconn *c = &s->conns[i];

		if (c->finish_ns > s->res.start_ns)
			x[n++] = (double)c->bytes_done /
				 (double)(c->finish_ns - s->res.start_ns);
	}
	s->res.jain = n ? jain(x, n) : 0;
	free(x);
}

static uint64_t ser(uint64_t bytes, uint64_t bps)
{
	return bytes * 8000000000ull / bps;
}

static double capacity_bps(const struct mroce_sim *s, uint64_t at)
{
	const struct mroce_sim_net_cfg *n = &s->cfg.net;
	double planes = 0, host = (double)n->host.rate_bps, k;

	for (uint32_t i = 0; i < n->npaths; i++)
		if (!mroce_sim_link_down(&n->path[i], at))
			planes += (double)n->path[i].rate_bps;
	k = s->cfg.shared_leaf ? 1 : s->cfg.senders;
	planes *= k;
	if (s->cfg.senders * host < planes)
		planes = s->cfg.senders * host;
	return planes < host ? planes : host;
}

/*
 * Blackhole recovery. Goodput is measured per bin of completed bytes. The
 * target is 90% of the pre-failure goodput scaled by the share of capacity
 * that survives. Recovery is the start of the first window after the
 * failure, w bins long (at least 10 base RTTs and 8 messages at full
 * capacity, so that message granularity and bursts of in-order completion
 * do not count as dips), that reaches the target and from which on the
 * average over the rest of the run also does (it is sustained).
 */
static void recovery(struct mroce_sim *s, double base_rtt_ns)
{
	struct mroce_sim_result *r = &s->res;
	uint64_t fail = s->first_fail, fb, b0, last, w, sum = 0, suffix = 0;
	double before, target, msg_ns, cap0;

	r->recovery_us = -1;
	if (fail == MROCE_SIM_NEVER || fail <= r->start_ns ||
	    fail >= r->end_ns)
		return;
	fb = (fail - r->start_ns) / s->bin_ns;
	last = (r->end_ns - r->start_ns) / s->bin_ns; /* partial: excluded */
	if (fb < 2 || last > s->nbins)
		return;
	b0 = fb / 2;	/* leave the start-up out */
	for (uint64_t b = b0; b < fb; b++)
		sum += s->bins[b];
	before = (double)sum * 8 / ((double)(fb - b0) * s->bin_ns);
	r->pre_fail_gbps = before;
	sum = 0;
	for (uint64_t b = fb + 1; b < last; b++)
		sum += s->bins[b];
	if (last > fb + 1)
		r->post_fail_gbps =
			(double)sum * 8 / ((double)(last - fb - 1) * s->bin_ns);
	if (r->verdict != MROCE_SIM_OK)
		return;
	cap0 = capacity_bps(s, r->start_ns);
	target = 0.9 * before * capacity_bps(s, fail) / cap0;
	msg_ns = (double)s->cfg.msg_size * 8 * 1e9 / cap0;
	w = (uint64_t)((10 * base_rtt_ns > 8 * msg_ns ? 10 * base_rtt_ns
						       : 8 * msg_ns) /
		       s->bin_ns) + 1;
	if (fb + w > last)
		return;		/* too little time after the failure */
	for (uint64_t b = fb; b < last; b++)
		suffix += s->bins[b];
	for (uint64_t b = fb; b + w <= last; b++) {
		uint64_t win = 0;

		for (uint64_t k = b; k < b + w; k++)
			win += s->bins[k];
		if ((double)win * 8 / ((double)w * s->bin_ns) >= target &&
		    (double)suffix * 8 / ((double)(last - b) * s->bin_ns) >=
			    target) {
			uint64_t t = r->start_ns + b * s->bin_ns;

			r->recovery_us = t > fail ? (double)(t - fail) / 1000.0
						  : 0;
			return;
		}
		suffix -= s->bins[b];
	}
}

void sim_report(struct mroce_sim *s)
{
	struct mroce_sim_result *r = &s->res;
	const struct mroce_sim_net_cfg *n = &s->cfg.net;
	struct mroce_sim_link_stats ls;
	uint64_t total = 0, pb[MROCE_SIM_MAX_PATHS], msgs = 0;
	double dt;

	if (!r->end_ns)
		r->end_ns = mroce_sim_net_now(s->net);
	/* a run that stopped after the failure stalled until it stopped */
	if (r->end_ns > s->first_fail &&
	    r->end_ns - s->last_progress > r->fail_gap_ns)
		r->fail_gap_ns = r->end_ns - s->last_progress;
	dt = (double)(r->end_ns - r->start_ns);
	r->goodput_gbps = dt > 0 ? (double)r->completed_bytes * 8 / dt : 0;
	for (uint32_t b = 0; b < HIST_BUCKETS; b++)
		msgs += s->hist[b];
	r->fct_p50_us = hist_pct(s->hist, msgs, 50) / 1000.0;
	r->fct_p99_us = hist_pct(s->hist, msgs, 99) / 1000.0;
	r->fct_max_us = hist_pct(s->hist, msgs, 100) / 1000.0;
	if (s->probe.on) {
		const struct probe *p = &s->probe;

		for (uint32_t b = 0; b < HIST_BUCKETS; b++) {
			r->probe_idle_n += p->hist_idle[b];
			r->probe_loaded_n += p->hist_loaded[b];
		}
		r->probe_idle_p50_us =
			hist_pct(p->hist_idle, r->probe_idle_n, 50) / 1000.0;
		r->probe_idle_p99_us =
			hist_pct(p->hist_idle, r->probe_idle_n, 99) / 1000.0;
		r->probe_loaded_p50_us =
			hist_pct(p->hist_loaded, r->probe_loaded_n, 50) / 1000.0;
		r->probe_loaded_p99_us =
			hist_pct(p->hist_loaded, r->probe_loaded_n, 99) / 1000.0;
	}
	if (!s->jain_done)
		sim_jain_snapshot(s);
	jain_final(s);
	for (uint32_t h = 0; h < s->nhosts; h++) {
		struct mroce_engine_stats st;

		mroce_engine_get_stats(s->hosts[h].e, &st);
		r->retransmits += st.retransmits;
		r->tx_pkts += st.tx_pkts;
		r->rx_pkts += st.rx_pkts;
		r->tx_data_pkts += st.tx_data_pkts;
		r->rto_fires += st.rto_fires;
		r->path_rerolls += st.path_rerolls;
		r->rx_dup += st.rx_dup;
		r->rx_ooo += st.rx_ooo;
		r->ce_marks_rx += st.ce_marks;
	}
	r->npaths = n->npaths;
	for (uint32_t i = 0; i < n->npaths; i++) {
		mroce_sim_net_path_stats(s->net, UINT32_MAX, UINT32_MAX, i,
					 &ls);
		r->net_pkts += ls.tx_pkts;
		r->drops_tail += ls.drop_tail;
		r->drops_loss += ls.drop_loss;
		r->drops_blackhole += ls.drop_blackhole;
		r->dups += ls.dups;
		r->corrupts += ls.corrupts;
		r->ce_marked += ls.ce_marks;
		/* data direction: towards the receiver's leaf */
		mroce_sim_net_path_stats(s->net, UINT32_MAX,
					 mroce_sim_net_leaf(s->net, RECV_HOST),
					 i, &ls);
		pb[i] = ls.tx_bytes;
		total += pb[i];
	}
	for (uint32_t i = 0; i < n->npaths; i++)
		r->path_share[i] = total ? (double)pb[i] / total : 0;
	for (uint32_t h = 0; h < s->nhosts; h++) {
		mroce_sim_net_host_stats(s->net, h, &ls);
		r->drops_tail += ls.drop_tail;
		r->ce_marked += ls.ce_marks;
		r->dups += ls.dups;
		r->corrupts += ls.corrupts;
		r->drops_loss += ls.drop_loss;
	}
	{
		uint64_t mtu = (s->cfg.mtu ? s->cfg.mtu : 4096) + 64 +
			       MROCE_SIM_WIRE_OVERHEAD;
		uint64_t d = 2 * (n->path[0].delay_ns + 2 * n->host.delay_ns);

		d += ser(mtu, n->path[0].rate_bps) +
		     2 * ser(mtu, n->host.rate_bps);
		r->base_rtt_us = (double)d / 1000.0;
	}
	r->capacity_gbps = capacity_bps(s, r->start_ns) / 1e9;
	recovery(s, r->base_rtt_us * 1000.0);
	r->mem_per_conn = mroce_engine_conn_mem(s->hosts[RECV_HOST].e);
	r->target_bytes = s->cfg.bytes * s->nconns;
	r->digest = mroce_sim_net_digest(s->net);
	{
		uint64_t inflight;

		mroce_sim_net_pool(s->net, &r->pool_pkts, &inflight);
	}
}

/* After the drain: every receive slot must still hold the last message
 * written into it. A late duplicate or retransmission of an older message
 * that lands after its WR completed shows up here (the pattern depends on
 * the stream offset). */
void sim_final_sweep(struct mroce_sim *s)
{
	for (uint32_t i = 0; i < s->nconns && !s->stop; i++) {
		const struct qpconn *c = &s->conns[i];
		uint64_t k = c->nmsgs > s->cfg.outstanding
				     ? c->nmsgs - s->cfg.outstanding
				     : 0;

		for (; k < c->nmsgs; k++) {
			int64_t bad = sim_check_pattern(sim_dst(s, c, k), c->id,
						    k * s->cfg.msg_size,
						    sim_msg_len(s, k));

			if (bad >= 0) {
				sim_violation(s, MROCE_SIM_INTEGRITY,
					  "conn %u: message %llu byte %lld "
					  "overwritten after completion", c->id,
					  (unsigned long long)k,
					  (long long)bad);
				return;
			}
		}
	}
}

