// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The simulation's application: keeps a fixed number of WRITEs, SENDs or
 * READs in flight on every QP, fills each message with the stream's
 * pattern and checks every byte at completion (see sim.c for the data rules), and
 * records per-QP progress and fairness.
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
/* Application                                                          */
/* ------------------------------------------------------------------ */
uint32_t sim_msg_len(const struct mroce_sim *s, uint64_t idx)
{
	uint64_t off = idx * s->cfg.msg_size;
	uint64_t left = s->cfg.bytes - off;

	return left < s->cfg.msg_size ? (uint32_t)left : s->cfg.msg_size;
}

static void fill_pattern(uint8_t *p, uint32_t conn, uint64_t off, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = mroce_sim_pattern(conn, off + i);
}

/* Every byte differs from the pattern: a READ that placed nothing fails. */
static void fill_not_pattern(uint8_t *p, uint32_t conn, uint64_t off,
			     uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		p[i] = (uint8_t)~mroce_sim_pattern(conn, off + i);
}

static uint8_t *sim_slot(uint8_t *base, const struct mroce_sim *s, uint64_t idx)
{
	return base + (idx % s->cfg.outstanding) * (uint64_t)s->cfg.msg_size;
}

/* Where message idx of connection c lands: host 0's memory, or the
 * reader's own for a READ. */
uint8_t *sim_dst(const struct mroce_sim *s, const struct qpconn *c,
		 uint64_t idx)
{
	return sim_slot(s->cfg.op == MROCE_SIM_OP_READ ? c->sbuf : c->rbuf, s,
			idx);
}

/* Index of the first wrong byte, or -1. */
int64_t sim_check_pattern(const uint8_t *p, uint32_t conn, uint64_t off,
			     uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (p[i] != mroce_sim_pattern(conn, off + i))
			return i;
	return -1;
}


static int sim_post_recvs(struct mroce_sim *s, struct qpconn *c)
{
	struct host *r = &s->hosts[RECV_HOST];

	while (c->rposted < c->nmsgs &&
	       c->rposted - c->rdone < s->cfg.outstanding) {
		struct mroce_recv_wr wr = {
			.wr_id = c->rposted,
			.sge = {
				.addr = (uint64_t)(uintptr_t)sim_slot(c->rbuf, s,
								  c->rposted),
				.length = s->cfg.msg_size,
				.lkey = r->mr.lkey,
			},
		};
		int err = mroce_post_recv(r->e, c->rqpn, &wr);

		if (err) {
			sim_violation(s, MROCE_SIM_ENGINE,
				  "post_recv conn %u: %d", c->id, err);
			return err;
		}
		c->rposted++;
	}
	return 0;
}

static void sim_post_sends(struct mroce_sim *s, struct qpconn *c, uint64_t now)
{
	struct host *h = &s->hosts[c->snd];

	while (c->posted < c->nmsgs &&
	       c->posted - c->done < s->cfg.outstanding) {
		uint64_t i = c->posted;
		uint32_t len = sim_msg_len(s, i);
		uint8_t *src = sim_slot(c->sbuf, s, i);
		struct mroce_send_wr wr = {
			.wr_id = i,
			.opcode = s->cfg.op == MROCE_SIM_OP_SEND ? MROCE_WR_SEND
				  : s->cfg.op == MROCE_SIM_OP_READ
					  ? MROCE_WR_RDMA_READ
					  : MROCE_WR_RDMA_WRITE,
			.send_flags = MROCE_SEND_SIGNALED,
			.sge = {
				.addr = (uint64_t)(uintptr_t)src,
				.length = len,
				.lkey = h->mr.lkey,
			},
			.remote_addr = (uint64_t)(uintptr_t)sim_slot(c->rbuf, s, i),
			.rkey = s->hosts[RECV_HOST].mr.rkey,
		};
		int err;

		if (s->cfg.op == MROCE_SIM_OP_READ) {
			/* host 0's application has the message ready */
			fill_pattern(sim_slot(c->rbuf, s, i), c->id,
				     i * s->cfg.msg_size, len);
			fill_not_pattern(src, c->id, i * s->cfg.msg_size, len);
		} else {
			fill_pattern(src, c->id, i * s->cfg.msg_size, len);
		}
		err = mroce_post_send(h->e, c->sqpn, &wr, now);
		if (err) {
			sim_violation(s, MROCE_SIM_ENGINE,
				  "post_send conn %u wr %llu: %d", c->id,
				  (unsigned long long)i, err);
			return;
		}
		c->post_ns[i % s->cfg.outstanding] = now;
		c->posted++;
	}
}

static bool conn_finished(const struct mroce_sim *s, const struct qpconn *c)
{
	return c->done == c->nmsgs &&
	       (s->cfg.op != MROCE_SIM_OP_SEND || c->rdone == c->nmsgs);
}

static void sim_progress(struct mroce_sim *s, struct qpconn *c, uint64_t now)
{
	/* the longest time without any completion across the failure */
	if (now > s->first_fail && now - s->last_progress > s->res.fail_gap_ns)
		s->res.fail_gap_ns = now - s->last_progress;
	s->last_progress = now;
	if (!conn_finished(s, c))
		return;
	c->finish_ns = now;
	if (!s->jain_done)
		sim_jain_snapshot(s);
	if (++s->nfinished == s->nconns) {
		s->res.end_ns = now;
		s->all_done = true;
		s->drain_until = now + s->cfg.drain_ns;
	}
}

static void inject_fault(struct mroce_sim *s, struct qpconn *c, uint64_t i)
{
	if (c->id == 0 && s->cfg.fault_msg >= 0 &&
	    i == (uint64_t)s->cfg.fault_msg && sim_msg_len(s, i))
		sim_dst(s, c, i)[sim_msg_len(s, i) / 2] ^= 0x40;
}

static void on_send_wc(struct mroce_sim *s, struct qpconn *c,
		       const struct mroce_wc *wc, uint64_t now)
{
	uint64_t i = c->done;
	uint32_t len;
	uint64_t lat, b;

	if (i == c->nmsgs) {
		sim_violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: send completion wr %llu after the last one",
			  c->id, (unsigned long long)wc->wr_id);
		return;
	}
	len = sim_msg_len(s, i);
	if (wc->wr_id != i) {
		sim_violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: send completion wr %llu, expected %llu",
			  c->id, (unsigned long long)wc->wr_id,
			  (unsigned long long)i);
		return;
	}
	if (s->cfg.op != MROCE_SIM_OP_SEND) {
		bool rd = s->cfg.op == MROCE_SIM_OP_READ;
		int64_t bad;

		inject_fault(s, c, i);
		bad = sim_check_pattern(sim_dst(s, c, i), c->id,
					    i * s->cfg.msg_size, len);

		if (bad >= 0) {
			sim_violation(s, MROCE_SIM_INTEGRITY,
				  "conn %u: %s %llu byte %lld wrong at the "
				  "%s", c->id, rd ? "READ" : "WRITE",
				  (unsigned long long)i, (long long)bad,
				  rd ? "reader" : "receiver");
			return;
		}
	}
	c->done++;
	c->bytes_done += len;
	s->res.completed_bytes += len;
	s->res.msgs++;
	lat = now - c->post_ns[i % s->cfg.outstanding];
	s->hist[sim_hist_bucket(lat)]++;
	b = (now - s->res.start_ns) / s->bin_ns;
	if (b < s->nbins)
		s->bins[b] += len;
	sim_progress(s, c, now);
	if (!s->stop)
		sim_post_sends(s, c, now);
}

/* The latency probe posts its next WRITE as soon as the last one
 * completed, until the bulk QPs have all finished. */
void sim_probe_post(struct mroce_sim *s, uint64_t now)
{
	struct probe *p = &s->probe;
	struct host *h = &s->hosts[1];
	struct mroce_send_wr wr = {
		.wr_id = p->seq,
		.opcode = MROCE_WR_RDMA_WRITE,
		.send_flags = MROCE_SEND_SIGNALED,
		.sge = {
			.addr = (uint64_t)(uintptr_t)p->sbuf,
			.length = PROBE_LEN,
			.lkey = h->mr.lkey,
		},
		.remote_addr = (uint64_t)(uintptr_t)p->rbuf,
		.rkey = s->hosts[RECV_HOST].mr.rkey,
	};
	int err;

	if (!p->on || p->busy || s->all_done || s->stop)
		return;
	fill_pattern(p->sbuf, PROBE_CONN_ID, p->seq * PROBE_LEN, PROBE_LEN);
	err = mroce_post_send(h->e, p->sqpn, &wr, now);
	if (err) {
		sim_violation(s, MROCE_SIM_ENGINE, "post_send probe %llu: %d",
			      (unsigned long long)p->seq, err);
		return;
	}
	p->busy = true;
	p->post_ns = now;
}

static void on_probe_wc(struct mroce_sim *s, const struct mroce_wc *wc,
			uint64_t now)
{
	struct probe *p = &s->probe;
	uint64_t lat = now - p->post_ns;

	if (!p->busy || wc->wr_id != p->seq) {
		sim_violation(s, MROCE_SIM_INTEGRITY,
			      "probe: completion wr %llu, expected %llu",
			      (unsigned long long)wc->wr_id,
			      (unsigned long long)p->seq);
		return;
	}
	if (sim_check_pattern(p->rbuf, PROBE_CONN_ID, p->seq * PROBE_LEN,
			      PROBE_LEN) >= 0) {
		sim_violation(s, MROCE_SIM_INTEGRITY,
			      "probe: WRITE %llu wrong at the receiver",
			      (unsigned long long)p->seq);
		return;
	}
	p->busy = false;
	p->seq++;
	if (!s->bulk_started) {
		/* the first one waited for the connection's handshake */
		if (p->seq > 1)
			p->hist_idle[sim_hist_bucket(lat)]++;
		s->last_progress = now;
	} else if (p->post_ns >= s->res.start_ns && !s->all_done) {
		p->hist_loaded[sim_hist_bucket(lat)]++;
	}
	sim_probe_post(s, now);
}

/* The bulk QPs post their first WRs (at 0, or after the idle probes). */
void sim_bulk_start(struct mroce_sim *s, uint64_t now)
{
	s->bulk_started = true;
	s->res.start_ns = now;
	s->last_progress = now;
	for (uint32_t i = 0; i < s->nconns && !s->stop; i++) {
		if (s->cfg.op == MROCE_SIM_OP_SEND)
			sim_post_recvs(s, &s->conns[i]);
		sim_post_sends(s, &s->conns[i], now);
		if (s->conns[i].nmsgs == 0)
			sim_progress(s, &s->conns[i], now);
	}
}

static void on_recv_wc(struct mroce_sim *s, struct qpconn *c,
		       const struct mroce_wc *wc, uint64_t now)
{
	uint64_t i = c->rdone;
	uint32_t len;
	int64_t bad;

	if (i == c->nmsgs) {
		sim_violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: receive completion wr %llu after the last "
			  "one", c->id, (unsigned long long)wc->wr_id);
		return;
	}
	len = sim_msg_len(s, i);
	if (wc->wr_id != i || wc->byte_len != len) {
		sim_violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: receive completion wr %llu len %u, "
			  "expected wr %llu len %u", c->id,
			  (unsigned long long)wc->wr_id, wc->byte_len,
			  (unsigned long long)i, len);
		return;
	}
	inject_fault(s, c, i);
	bad = sim_check_pattern(sim_slot(c->rbuf, s, i), c->id, i * s->cfg.msg_size,
			    len);
	if (bad >= 0) {
		sim_violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: SEND %llu byte %lld wrong at the receiver",
			  c->id, (unsigned long long)i, (long long)bad);
		return;
	}
	c->rdone++;
	sim_progress(s, c, now);
	if (!s->stop)
		sim_post_recvs(s, c);
}

void sim_poll_host(struct mroce_sim *s, struct host *h, uint64_t now)
{
	struct mroce_wc wc[POLL_BATCH];
	int n;

	do {
		n = mroce_poll_cq(h->e, h->cq, wc, POLL_BATCH);
		if (n < 0) {
			sim_violation(s, MROCE_SIM_ENGINE, "poll_cq host %u: %d",
				  h->id, n);
			return;
		}
		for (int i = 0; i < n && !s->stop; i++) {
			struct qpconn *c = sim_qpmap_get(s, h->id, wc[i].qpn);

			mroce_sim_net_mix(s->net, (uint64_t)wc[i].qpn << 32 ^
						  wc[i].wr_id ^
						  (uint64_t)wc[i].status << 56);
			if (wc[i].status != MROCE_WC_SUCCESS) {
				s->res.error_wcs++;
				sim_violation(s, MROCE_SIM_ERROR_WC,
					  "host %u qp %u wr %llu: %s", h->id,
					  wc[i].qpn,
					  (unsigned long long)wc[i].wr_id,
					  mroce_wc_status_str(wc[i].status));
				return;
			}
			if (s->probe.on && h->id == 1 &&
			    wc[i].qpn == s->probe.sqpn) {
				on_probe_wc(s, &wc[i], now);
				continue;
			}
			if (!c) {
				sim_violation(s, MROCE_SIM_INTEGRITY,
					  "host %u: completion for unknown "
					  "qp %u", h->id, wc[i].qpn);
				return;
			}
			if (h->id == RECV_HOST)
				on_recv_wc(s, c, &wc[i], now);
			else
				on_send_wc(s, c, &wc[i], now);
		}
	} while (n == POLL_BATCH && !s->stop);
}

