// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The simulation: one mroce engine per host on top of the simulated net,
 * and an application that keeps a fixed number of WRITEs or SENDs in
 * flight on every QP and checks every byte that arrives.
 *
 * Topology: host 0 receives, hosts 1..K send (incast when K > 1). Each
 * sender sits behind its own leaf unless shared_leaf is set, so with
 * separate leaves every sender has its own N planes and the receiver's
 * downlink is the only shared queue (the incast bottleneck).
 *
 * Host model: the NIC pulls one packet from the engine whenever its
 * uplink is free (mroce_engine_tx with n = 1), so the engine is the only
 * queue at the sender and sees back-pressure exactly at line rate.
 * Received packets go to mroce_engine_rx() when they reach the host;
 * tick() runs at next_timer(); the CQ is polled after every call.
 *
 * Data: byte `off` of QP c's stream is mroce_sim_pattern(c, off). The
 * sender writes the pattern into its slot before posting; the receiver's
 * slot is compared with it when the WR completes (WRITE: at the sender's
 * CQE, which RC semantics allow only after placement; SEND: at the
 * receive CQE). A slot is reused only after that check, and a stale
 * write into it would break the next check because the pattern depends
 * on the stream offset.
 */
#include "mroce/sim.h"
#include "mroce/codec.h"
#include "mroce/engine.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum {
	EV_NIC = 1,	/* arg = host: its uplink is free again */
	EV_TIMER = 2,	/* arg = host: engine timer */
};

#define RECV_HOST	0
#define POLL_BATCH	64
#define HIST_SUB	64	/* log-linear histogram: 64 steps per octave */
#define HIST_BUCKETS	(64 * HIST_SUB)
#define MAX_BINS	(1u << 20)

struct pairing {
	uint32_t snd;		/* sender host */
	int peer_at_snd;	/* receiver's peer id in the sender's engine */
	int peer_at_rcv;	/* sender's peer id in the receiver's engine */
};

struct qpconn {
	uint32_t id, snd;
	uint32_t sqpn, rqpn;	/* sender's and receiver's QP numbers */
	uint8_t *sbuf, *rbuf;	/* outstanding slots of msg_size */
	uint64_t nmsgs;
	uint64_t posted, done;	/* send WRs posted / completed */
	uint64_t rposted, rdone; /* receive WRs (SEND op) */
	uint64_t bytes_done;
	uint64_t finish_ns;
	uint64_t *post_ns;	/* per slot */
};

struct host {
	uint32_t id;
	struct mroce_engine *e;
	int cq;
	uint8_t *mem;
	size_t memlen;
	struct mroce_mr mr;
	struct pairing **peer_pair;	/* by peer id */
	uint32_t peer_cap;
	uint64_t nic_free_at;
	uint64_t timer_at;
	bool nic_pending;
};

/* open addressing (host << 32 | qpn) -> conn index */
struct qpmap {
	uint64_t *keys;
	uint32_t *vals;
	uint32_t cap;
};

struct mroce_sim {
	struct mroce_sim_cfg cfg;
	struct mroce_sim_net *net;
	uint32_t nhosts;
	uint32_t *host_leaf;
	struct host *hosts;
	struct pairing *pairs;	/* one per sender */
	struct qpconn *conns;
	uint32_t nconns, nfinished;
	struct qpmap qpmap;
	struct mroce_sim_rng rng;

	bool stop;		/* a violation: stop at once */
	bool all_done;		/* every QP finished: drain, then sweep */
	uint64_t drain_until;
	struct mroce_sim_result res;
	uint64_t last_progress;
	uint64_t first_fail;	/* earliest blackhole, or NEVER */
	uint64_t hist[HIST_BUCKETS];
	uint64_t *bins;
	uint32_t nbins;
	uint64_t bin_ns;
	bool jain_done;
	uint64_t corrupt_accepted;
	uint64_t trace_next;	/* next cfg.trace call */
};

const char *mroce_sim_verdict_str(enum mroce_sim_verdict v)
{
	switch (v) {
	case MROCE_SIM_OK:
		return "ok";
	case MROCE_SIM_INTEGRITY:
		return "integrity violation";
	case MROCE_SIM_ERROR_WC:
		return "error completion";
	case MROCE_SIM_HANG:
		return "hang (no progress)";
	case MROCE_SIM_TIME_LIMIT:
		return "time limit reached";
	case MROCE_SIM_ENGINE:
		return "engine call failed";
	}
	return "unknown";
}

void mroce_sim_cfg_default(struct mroce_sim_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->transport = MROCE_TRANSPORT_METAROCE;
	c->senders = 1;
	c->conns = 1;
	c->bytes = 1 << 20;
	c->msg_size = 64 << 10;
	c->outstanding = 16;
	c->op = MROCE_SIM_OP_WRITE;
	c->start_psn = -1;
	c->fault_msg = -1;
	c->time_limit_ns = 10000000000ull;	/* 10 s virtual */
	c->drain_ns = 1000000;			/* 1 ms virtual */
	c->stall_ns = 500000000ull;		/* 500 ms virtual */
	c->seed = 1;
	c->net.npaths = 4;
	for (int i = 0; i < MROCE_SIM_MAX_PATHS; i++) {
		struct mroce_sim_link_cfg *p = &c->net.path[i];

		p->rate_bps = 100000000000ull;
		p->delay_ns = 2000;
		p->queue_bytes = 1 << 20;
		p->ecn_bytes = 100 << 10;
		p->blackhole_at = MROCE_SIM_NEVER;
	}
	c->net.host.rate_bps = 400000000000ull;
	c->net.host.delay_ns = 500;
	c->net.host.queue_bytes = 4 << 20;
	c->net.host.ecn_bytes = 200 << 10;
	c->net.host.blackhole_at = MROCE_SIM_NEVER;
}

static inline uint32_t mroce_sim_net_cfg_max(const struct mroce_sim *s)
{
	return s->cfg.net.max_frame;
}

/* ------------------------------------------------------------------ */
/* Violations                                                           */
/* ------------------------------------------------------------------ */
__attribute__((format(printf, 3, 4))) static void
violation(struct mroce_sim *s, enum mroce_sim_verdict v, const char *fmt,
	  ...)
{
	va_list ap;

	if (s->res.verdict == MROCE_SIM_OK) {
		s->res.verdict = v;
		va_start(ap, fmt);
		vsnprintf(s->res.why, sizeof(s->res.why), fmt, ap);
		va_end(ap);
	}
	s->stop = true;
}

/* ------------------------------------------------------------------ */
/* QP lookup                                                            */
/* ------------------------------------------------------------------ */
static uint32_t qpmap_slot(const struct qpmap *m, uint64_t key)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	uint32_t i = (uint32_t)(h >> 32) & (m->cap - 1);

	while (m->keys[i] && m->keys[i] != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

static void qpmap_put(struct qpmap *m, uint32_t host, uint32_t qpn,
		      uint32_t val)
{
	uint64_t key = ((uint64_t)host << 32 | qpn) + 1;
	uint32_t i = qpmap_slot(m, key);

	m->keys[i] = key;
	m->vals[i] = val;
}

static struct qpconn *qpmap_get(struct mroce_sim *s, uint32_t host,
				uint32_t qpn)
{
	uint64_t key = ((uint64_t)host << 32 | qpn) + 1;
	uint32_t i = qpmap_slot(&s->qpmap, key);

	return s->qpmap.keys[i] ? &s->conns[s->qpmap.vals[i]] : NULL;
}

/* ------------------------------------------------------------------ */
/* Statistics helpers                                                   */
/* ------------------------------------------------------------------ */
static uint32_t hist_bucket(uint64_t v)
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
/* Application                                                          */
/* ------------------------------------------------------------------ */
static uint32_t msg_len(const struct mroce_sim *s, uint64_t idx)
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

/* Index of the first wrong byte, or -1. */
static int64_t check_pattern(const uint8_t *p, uint32_t conn, uint64_t off,
			     uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (p[i] != mroce_sim_pattern(conn, off + i))
			return i;
	return -1;
}

static uint8_t *slot(uint8_t *base, const struct mroce_sim *s, uint64_t idx)
{
	return base + (idx % s->cfg.outstanding) * (uint64_t)s->cfg.msg_size;
}

static int post_recvs(struct mroce_sim *s, struct qpconn *c)
{
	struct host *r = &s->hosts[RECV_HOST];

	while (c->rposted < c->nmsgs &&
	       c->rposted - c->rdone < s->cfg.outstanding) {
		struct mroce_recv_wr wr = {
			.wr_id = c->rposted,
			.sge = {
				.addr = (uint64_t)(uintptr_t)slot(c->rbuf, s,
								  c->rposted),
				.length = s->cfg.msg_size,
				.lkey = r->mr.lkey,
			},
		};
		int err = mroce_post_recv(r->e, c->rqpn, &wr);

		if (err) {
			violation(s, MROCE_SIM_ENGINE,
				  "post_recv conn %u: %d", c->id, err);
			return err;
		}
		c->rposted++;
	}
	return 0;
}

static void post_sends(struct mroce_sim *s, struct qpconn *c, uint64_t now)
{
	struct host *h = &s->hosts[c->snd];

	while (c->posted < c->nmsgs &&
	       c->posted - c->done < s->cfg.outstanding) {
		uint64_t i = c->posted;
		uint32_t len = msg_len(s, i);
		uint8_t *src = slot(c->sbuf, s, i);
		struct mroce_send_wr wr = {
			.wr_id = i,
			.opcode = s->cfg.op == MROCE_SIM_OP_SEND
					  ? MROCE_WR_SEND
					  : MROCE_WR_RDMA_WRITE,
			.send_flags = MROCE_SEND_SIGNALED,
			.sge = {
				.addr = (uint64_t)(uintptr_t)src,
				.length = len,
				.lkey = h->mr.lkey,
			},
			.remote_addr = (uint64_t)(uintptr_t)slot(c->rbuf, s, i),
			.rkey = s->hosts[RECV_HOST].mr.rkey,
		};
		int err;

		fill_pattern(src, c->id, i * s->cfg.msg_size, len);
		err = mroce_post_send(h->e, c->sqpn, &wr, now);
		if (err) {
			violation(s, MROCE_SIM_ENGINE,
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
static void jain_snapshot(struct mroce_sim *s)
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

static void progress(struct mroce_sim *s, struct qpconn *c, uint64_t now)
{
	/* the longest time without any completion across the failure */
	if (now > s->first_fail && now - s->last_progress > s->res.fail_gap_ns)
		s->res.fail_gap_ns = now - s->last_progress;
	s->last_progress = now;
	if (!conn_finished(s, c))
		return;
	c->finish_ns = now;
	if (!s->jain_done)
		jain_snapshot(s);
	if (++s->nfinished == s->nconns) {
		s->res.end_ns = now;
		s->all_done = true;
		s->drain_until = now + s->cfg.drain_ns;
	}
}

static void inject_fault(struct mroce_sim *s, struct qpconn *c, uint64_t i)
{
	if (c->id == 0 && s->cfg.fault_msg >= 0 &&
	    i == (uint64_t)s->cfg.fault_msg && msg_len(s, i))
		slot(c->rbuf, s, i)[msg_len(s, i) / 2] ^= 0x40;
}

static void on_send_wc(struct mroce_sim *s, struct qpconn *c,
		       const struct mroce_wc *wc, uint64_t now)
{
	uint64_t i = c->done;
	uint32_t len;
	uint64_t lat, b;

	if (i == c->nmsgs) {
		violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: send completion wr %llu after the last one",
			  c->id, (unsigned long long)wc->wr_id);
		return;
	}
	len = msg_len(s, i);
	if (wc->wr_id != i) {
		violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: send completion wr %llu, expected %llu",
			  c->id, (unsigned long long)wc->wr_id,
			  (unsigned long long)i);
		return;
	}
	if (s->cfg.op == MROCE_SIM_OP_WRITE) {
		int64_t bad;

		inject_fault(s, c, i);
		bad = check_pattern(slot(c->rbuf, s, i), c->id,
					    i * s->cfg.msg_size, len);

		if (bad >= 0) {
			violation(s, MROCE_SIM_INTEGRITY,
				  "conn %u: WRITE %llu byte %lld wrong at the "
				  "receiver", c->id, (unsigned long long)i,
				  (long long)bad);
			return;
		}
	}
	c->done++;
	c->bytes_done += len;
	s->res.completed_bytes += len;
	s->res.msgs++;
	lat = now - c->post_ns[i % s->cfg.outstanding];
	s->hist[hist_bucket(lat)]++;
	b = (now - s->res.start_ns) / s->bin_ns;
	if (b < s->nbins)
		s->bins[b] += len;
	progress(s, c, now);
	if (!s->stop)
		post_sends(s, c, now);
}

static void on_recv_wc(struct mroce_sim *s, struct qpconn *c,
		       const struct mroce_wc *wc, uint64_t now)
{
	uint64_t i = c->rdone;
	uint32_t len;
	int64_t bad;

	if (i == c->nmsgs) {
		violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: receive completion wr %llu after the last "
			  "one", c->id, (unsigned long long)wc->wr_id);
		return;
	}
	len = msg_len(s, i);
	if (wc->wr_id != i || wc->byte_len != len) {
		violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: receive completion wr %llu len %u, "
			  "expected wr %llu len %u", c->id,
			  (unsigned long long)wc->wr_id, wc->byte_len,
			  (unsigned long long)i, len);
		return;
	}
	inject_fault(s, c, i);
	bad = check_pattern(slot(c->rbuf, s, i), c->id, i * s->cfg.msg_size,
			    len);
	if (bad >= 0) {
		violation(s, MROCE_SIM_INTEGRITY,
			  "conn %u: SEND %llu byte %lld wrong at the receiver",
			  c->id, (unsigned long long)i, (long long)bad);
		return;
	}
	c->rdone++;
	progress(s, c, now);
	if (!s->stop)
		post_recvs(s, c);
}

static void poll_host(struct mroce_sim *s, struct host *h, uint64_t now)
{
	struct mroce_wc wc[POLL_BATCH];
	int n;

	do {
		n = mroce_poll_cq(h->e, h->cq, wc, POLL_BATCH);
		if (n < 0) {
			violation(s, MROCE_SIM_ENGINE, "poll_cq host %u: %d",
				  h->id, n);
			return;
		}
		for (int i = 0; i < n && !s->stop; i++) {
			struct qpconn *c = qpmap_get(s, h->id, wc[i].qpn);

			mroce_sim_net_mix(s->net, (uint64_t)wc[i].qpn << 32 ^
						  wc[i].wr_id ^
						  (uint64_t)wc[i].status << 56);
			if (wc[i].status != MROCE_WC_SUCCESS) {
				s->res.error_wcs++;
				violation(s, MROCE_SIM_ERROR_WC,
					  "host %u qp %u wr %llu: %s", h->id,
					  wc[i].qpn,
					  (unsigned long long)wc[i].wr_id,
					  mroce_wc_status_str(wc[i].status));
				return;
			}
			if (!c) {
				violation(s, MROCE_SIM_INTEGRITY,
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

/* ------------------------------------------------------------------ */
/* Host NIC and timers                                                  */
/* ------------------------------------------------------------------ */
static void arm_timer(struct mroce_sim *s, struct host *h, uint64_t at)
{
	if (at >= h->timer_at && h->timer_at != MROCE_SIM_NEVER &&
	    h->timer_at >= mroce_sim_net_now(s->net))
		return;
	h->timer_at = at;
	if (mroce_sim_net_at(s->net, at, EV_TIMER, h->id))
		violation(s, MROCE_SIM_ENGINE, "out of memory (events)");
}

static void nic_send(struct mroce_sim *s, struct host *h,
		     struct mroce_sim_pkt *p, const struct mroce_tx_pkt *t,
		     uint64_t now)
{
	struct pairing *pr = NULL;

	if (t->peer >= 0 && (uint32_t)t->peer < h->peer_cap)
		pr = h->peer_pair[t->peer];
	if (!pr || t->len > mroce_sim_net_cfg_max(s)) {
		/* nothing to route it to: the NIC drops it */
		mroce_sim_net_free(s->net, p);
		return;
	}
	p->len = t->len;
	p->src = h->id;
	p->dst = h->id == RECV_HOST ? pr->snd : RECV_HOST;
	p->sport = t->sport;
	p->dport = t->dport;
	p->ect = t->ect;
	p->owner = pr;
	if (s->cfg.transport == MROCE_TRANSPORT_ROCEV2 && p->len >= 4) {
		/* framing layer: fill the ICRC the engine left in place (over
		 * the UDP payload: the sim has no IP header to cover) */
		uint32_t crc = mroce_crc32(0, p->data, p->len - 4);
		uint8_t *q = p->data + p->len - 4;

		q[0] = (uint8_t)crc;
		q[1] = (uint8_t)(crc >> 8);
		q[2] = (uint8_t)(crc >> 16);
		q[3] = (uint8_t)(crc >> 24);
	}
	h->nic_free_at = mroce_sim_net_send(s->net, p, now);
}

static void host_service(struct mroce_sim *s, struct host *h, uint64_t now)
{
	uint64_t next;
	bool ticked = false;

	poll_host(s, h, now);
	if (s->stop)
		return;
again:
	if (now >= h->nic_free_at) {
		struct mroce_sim_pkt *p = mroce_sim_net_alloc(s->net);
		struct mroce_tx_pkt t = { 0 };
		int n;

		if (!p) {
			violation(s, MROCE_SIM_ENGINE, "out of memory (pkts)");
			return;
		}
		t.buf = p->data;
		n = mroce_engine_tx(h->e, &t, 1, mroce_sim_net_cfg_max(s), now);
		if (n == 1) {
			nic_send(s, h, p, &t, now);
		} else {
			mroce_sim_net_free(s->net, p);
			if (n < 0) {
				violation(s, MROCE_SIM_ENGINE,
					  "engine_tx host %u: %d", h->id, n);
				return;
			}
		}
	}
	/* completions can appear during tx (e.g. a flushed WR) */
	poll_host(s, h, now);
	if (s->stop)
		return;
	if (h->nic_free_at > now) {
		/* The NIC is busy: the engine is asked again when it frees
		 * up (and ticked then if a timer fell due). A timer runs at
		 * most one packet time late, and next_timer() (which may cost
		 * O(connections)) is not called for every received packet
		 * in a busy period. */
		if (!h->nic_pending) {
			h->nic_pending = true;
			if (mroce_sim_net_at(s->net, h->nic_free_at, EV_NIC,
					     h->id))
				violation(s, MROCE_SIM_ENGINE, "out of memory");
		}
		return;
	}
	next = mroce_engine_next_timer(h->e, now);
	if (next == MROCE_SIM_NEVER)
		return;
	if (next > now) {
		arm_timer(s, h, next);
		return;
	}
	/* The engine says it is due but produced nothing: run its timers
	 * once and retry; if it still insists, poll again a microsecond
	 * later rather than spinning at one instant forever. */
	if (!ticked) {
		ticked = true;
		mroce_engine_tick(h->e, now);
		goto again;
	}
	s->res.timer_spins++;
	arm_timer(s, h, now + 1000);
}

static void on_event(void *ctx, uint32_t kind, uint64_t arg, uint64_t now)
{
	struct mroce_sim *s = ctx;
	struct host *h = &s->hosts[arg];

	if (s->stop)
		return;
	if (kind == EV_NIC) {
		h->nic_pending = false;
		/* timers that fell due while the NIC was busy (they were not
		 * armed then, see host_service) run before the next packet,
		 * so a continuously sending host still gets its ticks */
		if (mroce_engine_next_timer(h->e, now) <= now)
			mroce_engine_tick(h->e, now);
	} else if (kind == EV_TIMER) {
		if (now != h->timer_at)
			return;	/* superseded by an earlier timer */
		h->timer_at = MROCE_SIM_NEVER;
		mroce_engine_tick(h->e, now);
	}
	host_service(s, h, now);
}

static void on_deliver(void *ctx, struct mroce_sim_pkt *p, uint64_t now)
{
	struct mroce_sim *s = ctx;
	struct host *h = &s->hosts[p->dst];
	struct pairing *pr = p->owner;
	struct mroce_rx_meta m = {
		.peer = p->dst == RECV_HOST ? pr->peer_at_rcv : pr->peer_at_snd,
		.sport = p->sport,
		.ce = p->ce,
	};
	int err;

	if (s->stop)
		return;
	if (s->cfg.transport == MROCE_TRANSPORT_ROCEV2 && p->len >= 4) {
		const uint8_t *q = p->data + p->len - 4;
		uint32_t want = mroce_crc32(0, p->data, p->len - 4);
		uint32_t got = q[0] | q[1] << 8 | q[2] << 16 |
			       (uint32_t)q[3] << 24;

		if (got != want) {
			s->res.icrc_drops++;	/* the NIC's ICRC check */
			return;
		}
	}
	err = mroce_engine_rx(h->e, &m, p->data, p->len, now);
	if (err == 0 && p->corrupted) {
		/* a flipped byte got past the ICRC check: never allowed */
		s->corrupt_accepted++;
		violation(s, MROCE_SIM_INTEGRITY,
			  "host %u accepted a corrupted packet (len %u)",
			  h->id, p->len);
		return;
	}
	host_service(s, h, now);
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */
/* ------------------------------------------------------------------ */
static int host_add_peer(struct host *h, int peer, struct pairing *pr)
{
	if ((uint32_t)peer >= h->peer_cap) {
		uint32_t cap = h->peer_cap ? h->peer_cap : 4;
		struct pairing **np;

		while (cap <= (uint32_t)peer)
			cap *= 2;
		np = realloc(h->peer_pair, cap * sizeof(*np));
		if (!np)
			return -ENOMEM;
		memset(np + h->peer_cap, 0,
		       (cap - h->peer_cap) * sizeof(*np));
		h->peer_pair = np;
		h->peer_cap = cap;
	}
	h->peer_pair[peer] = pr;
	return 0;
}

static void host_addr(uint32_t host, uint8_t a[16])
{
	memset(a, 0, 16);
	a[0] = 10;
	a[1] = (uint8_t)(host >> 16);
	a[2] = (uint8_t)(host >> 8);
	a[3] = (uint8_t)host;
}

static int host_setup(struct mroce_sim *s, struct host *h, uint32_t npeers,
		      uint32_t nqps, size_t memlen)
{
	struct mroce_engine_cfg ec = { 0 };
	uint32_t depth;
	int err;

	ec.transport = s->cfg.transport;
	ec.npaths = s->cfg.engine_paths;
	ec.mtu = s->cfg.mtu;
	ec.seed = mroce_sim_rng_next(&s->rng);
	for (int i = 0; i < 16; i++)
		ec.secret[i] = (uint8_t)mroce_sim_rng_next(&s->rng);
	ec.max_conns = npeers + 2;
	ec.max_qps = nqps + 2;
	ec.max_mrs = 4;
	ec.link_bps = s->cfg.net.host.rate_bps;
	ec.rto_min_us = s->cfg.rto_min_us;
	mroce_engine_cfg_default(&ec);
	err = mroce_engine_create(&ec, &h->e);
	if (err)
		return err;
	depth = nqps * s->cfg.outstanding * 2 + 64;
	h->cq = mroce_create_cq(h->e, depth);
	if (h->cq < 0)
		return h->cq;
	h->memlen = memlen ? memlen : 64;
	h->mem = calloc(1, h->memlen);
	if (!h->mem)
		return -ENOMEM;
	err = mroce_reg_mr(h->e, h->mem, h->memlen,
			   MROCE_ACCESS_LOCAL_WRITE |
				   MROCE_ACCESS_REMOTE_WRITE,
			   &h->mr);
	return err;
}

static int qp_bringup(struct mroce_sim *s, struct host *h, uint32_t qpn,
		      int peer, uint32_t dest_qpn, uint32_t rq_psn,
		      uint32_t sq_psn)
{
	struct mroce_qp_attr a = { 0 };
	int err;

	a.state = MROCE_QPS_INIT;
	a.access = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE;
	err = mroce_modify_qp(h->e, qpn, &a,
			      MROCE_QP_STATE | MROCE_QP_ACCESS_FLAGS, 0);
	if (err)
		return err;
	a.state = MROCE_QPS_RTR;
	a.peer = peer;
	a.dest_qpn = dest_qpn;
	a.rq_psn = rq_psn;
	err = mroce_modify_qp(h->e, qpn, &a,
			      MROCE_QP_STATE | MROCE_QP_DEST | MROCE_QP_RQ_PSN,
			      0);
	if (err)
		return err;
	a.state = MROCE_QPS_RTS;
	a.sq_psn = sq_psn;
	return mroce_modify_qp(h->e, qpn, &a,
			       MROCE_QP_STATE | MROCE_QP_SQ_PSN, 0);
}

static uint32_t pick_psn(struct mroce_sim *s)
{
	if (s->cfg.start_psn >= 0)
		return (uint32_t)s->cfg.start_psn & 0xffffff;
	return (uint32_t)mroce_sim_rng_next(&s->rng) & 0xffffff;
}

static int setup(struct mroce_sim *s)
{
	const struct mroce_sim_cfg *c = &s->cfg;
	uint64_t slotbytes = (uint64_t)c->outstanding * c->msg_size;
	struct mroce_qp_init_attr qa = { 0 };
	int err;

	for (uint32_t h = 0; h < s->nhosts; h++) {
		bool rcv = h == RECV_HOST;

		s->hosts[h].id = h;
		s->hosts[h].timer_at = MROCE_SIM_NEVER;
		err = host_setup(s, &s->hosts[h], rcv ? c->senders : 1,
				 rcv ? s->nconns : c->conns,
				 slotbytes * (rcv ? s->nconns : c->conns));
		if (err)
			return err;
	}
	/* peers */
	for (uint32_t k = 0; k < c->senders; k++) {
		struct pairing *pr = &s->pairs[k];
		struct host *snd = &s->hosts[k + 1], *rcv = &s->hosts[0];
		struct mroce_peer_addr a = { .family = AF_INET };

		pr->snd = k + 1;
		host_addr(RECV_HOST, a.addr);
		host_addr(k + 1, a.local);
		pr->peer_at_snd = mroce_peer_add(snd->e, &a);
		host_addr(k + 1, a.addr);
		host_addr(RECV_HOST, a.local);
		pr->peer_at_rcv = mroce_peer_add(rcv->e, &a);
		if (pr->peer_at_snd < 0)
			return pr->peer_at_snd;
		if (pr->peer_at_rcv < 0)
			return pr->peer_at_rcv;
		err = host_add_peer(snd, pr->peer_at_snd, pr);
		if (!err)
			err = host_add_peer(rcv, pr->peer_at_rcv, pr);
		if (err)
			return err;
	}
	/* QPs */
	for (uint32_t i = 0; i < s->nconns; i++) {
		struct qpconn *q = &s->conns[i];
		uint32_t k = i / c->conns, j = i % c->conns;
		struct host *snd = &s->hosts[k + 1], *rcv = &s->hosts[0];
		uint32_t psn_fwd = pick_psn(s), psn_rev = pick_psn(s);
		int qpn;

		q->id = i;
		q->snd = k + 1;
		q->nmsgs = (c->bytes + c->msg_size - 1) / c->msg_size;
		q->sbuf = snd->mem + j * slotbytes;
		q->rbuf = rcv->mem + i * slotbytes;
		q->post_ns = calloc(c->outstanding, sizeof(*q->post_ns));
		if (!q->post_ns)
			return -ENOMEM;
		qa.send_cq = qa.recv_cq = snd->cq;
		qa.max_send_wr = qa.max_recv_wr = c->outstanding;
		qpn = mroce_create_qp(snd->e, &qa);
		if (qpn < 0)
			return qpn;
		q->sqpn = (uint32_t)qpn;
		qa.send_cq = qa.recv_cq = rcv->cq;
		qpn = mroce_create_qp(rcv->e, &qa);
		if (qpn < 0)
			return qpn;
		q->rqpn = (uint32_t)qpn;
		qpmap_put(&s->qpmap, q->snd, q->sqpn, i);
		qpmap_put(&s->qpmap, RECV_HOST, q->rqpn, i);
		err = qp_bringup(s, rcv, q->rqpn, s->pairs[k].peer_at_rcv,
				 q->sqpn, psn_fwd, psn_rev);
		if (err)
			return err;
		err = qp_bringup(s, snd, q->sqpn, s->pairs[k].peer_at_snd,
				 q->rqpn, psn_rev, psn_fwd);
		if (err)
			return err;
	}
	return 0;
}

int mroce_sim_create(const struct mroce_sim_cfg *cfg, struct mroce_sim **out)
{
	struct mroce_sim *s;
	struct mroce_sim_net_cfg nc;
	uint32_t qcap = 16;
	int err;

	if (!cfg || !out || cfg->senders == 0 || cfg->conns == 0 ||
	    cfg->msg_size == 0 || cfg->outstanding == 0 ||
	    (cfg->transport != MROCE_TRANSPORT_METAROCE &&
	     cfg->transport != MROCE_TRANSPORT_ROCEV2) ||
	    cfg->op > MROCE_SIM_OP_SEND ||
	    (uint64_t)cfg->senders * cfg->conns > 1000000)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->nhosts = cfg->senders + 1;
	s->nconns = cfg->senders * cfg->conns;
	mroce_sim_rng_seed(&s->rng, cfg->seed ^ 0x5eed5eed5eedull);
	if (!s->cfg.net.max_frame)
		s->cfg.net.max_frame = (cfg->mtu ? cfg->mtu : 4096) + 512;
	s->host_leaf = calloc(s->nhosts, sizeof(*s->host_leaf));
	s->hosts = calloc(s->nhosts, sizeof(*s->hosts));
	s->pairs = calloc(cfg->senders, sizeof(*s->pairs));
	s->conns = calloc(s->nconns, sizeof(*s->conns));
	while (qcap < s->nconns * 4)
		qcap *= 2;
	s->qpmap.cap = qcap;
	s->qpmap.keys = calloc(qcap, sizeof(*s->qpmap.keys));
	s->qpmap.vals = calloc(qcap, sizeof(*s->qpmap.vals));
	if (!s->host_leaf || !s->hosts || !s->pairs || !s->conns ||
	    !s->qpmap.keys || !s->qpmap.vals) {
		mroce_sim_destroy(s);
		return -ENOMEM;
	}
	for (uint32_t h = 1; h < s->nhosts; h++)
		s->host_leaf[h] = cfg->shared_leaf ? 1 : h;
	nc = s->cfg.net;
	nc.nhosts = s->nhosts;
	nc.nleaves = cfg->shared_leaf ? 2 : s->nhosts;
	nc.host_leaf = s->host_leaf;
	nc.seed = cfg->seed;
	s->cfg.net = nc;
	s->cfg.net.host_leaf = NULL;
	err = mroce_sim_net_create(&nc, on_deliver, on_event, s, &s->net);
	if (!err)
		err = setup(s);
	if (err) {
		mroce_sim_destroy(s);
		return err;
	}
	*out = s;
	return 0;
}

void mroce_sim_destroy(struct mroce_sim *s)
{
	if (!s)
		return;
	for (uint32_t h = 0; s->hosts && h < s->nhosts; h++) {
		if (s->hosts[h].e)
			mroce_engine_destroy(s->hosts[h].e);
		free(s->hosts[h].mem);
		free(s->hosts[h].peer_pair);
	}
	for (uint32_t i = 0; s->conns && i < s->nconns; i++)
		free(s->conns[i].post_ns);
	mroce_sim_net_destroy(s->net);
	free(s->qpmap.keys);
	free(s->qpmap.vals);
	free(s->host_leaf);
	free(s->hosts);
	free(s->pairs);
	free(s->conns);
	free(s->bins);
	free(s);
}

struct mroce_engine *mroce_sim_engine(struct mroce_sim *s, uint32_t host)
{
	return host < s->nhosts ? s->hosts[host].e : NULL;
}

struct mroce_sim_net *mroce_sim_get_net(struct mroce_sim *s)
{
	return s->net;
}

uint32_t mroce_sim_series(const struct mroce_sim *s, const uint64_t **bins,
			  uint64_t *bin_ns)
{
	uint64_t n;

	*bins = s->bins;
	*bin_ns = s->bin_ns;
	if (!s->bins)
		return 0;
	n = (s->res.end_ns - s->res.start_ns) / s->bin_ns + 1;
	return n < s->nbins ? (uint32_t)n : s->nbins;
}

/* ------------------------------------------------------------------ */
/* Running and the report                                               */
/* ------------------------------------------------------------------ */
static uint64_t ser(uint64_t bytes, uint64_t bps)
{
	return bytes * 8000000000ull / bps;
}

static double capacity_bps(const struct mroce_sim *s, uint64_t at)
{
	const struct mroce_sim_net_cfg *n = &s->cfg.net;
	double planes = 0, host = (double)n->host.rate_bps, k;

	for (uint32_t i = 0; i < n->npaths; i++)
		if (n->path[i].blackhole_at > at)
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

static void report(struct mroce_sim *s)
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
	if (!s->jain_done)
		jain_snapshot(s);
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
static void final_sweep(struct mroce_sim *s)
{
	for (uint32_t i = 0; i < s->nconns && !s->stop; i++) {
		const struct qpconn *c = &s->conns[i];
		uint64_t k = c->nmsgs > s->cfg.outstanding
				     ? c->nmsgs - s->cfg.outstanding
				     : 0;

		for (; k < c->nmsgs; k++) {
			int64_t bad = check_pattern(slot(c->rbuf, s, k), c->id,
						    k * s->cfg.msg_size,
						    msg_len(s, k));

			if (bad >= 0) {
				violation(s, MROCE_SIM_INTEGRITY,
					  "conn %u: message %llu byte %lld "
					  "overwritten after completion", c->id,
					  (unsigned long long)k,
					  (long long)bad);
				return;
			}
		}
	}
}

int mroce_sim_run(struct mroce_sim *s, struct mroce_sim_result *res)
{
	const struct mroce_sim_cfg *c = &s->cfg;
	uint64_t rtt_guess, bin;

	if (s->bins)
		return -EALREADY;	/* one run per mroce_sim_create() */
	memset(&s->res, 0, sizeof(s->res));
	/* goodput bins: about a base RTT, at least 5 us, and few enough
	 * to cover the whole time limit */
	rtt_guess = 2 * (c->net.path[0].delay_ns + 2 * c->net.host.delay_ns);
	bin = c->bin_ns ? c->bin_ns : (rtt_guess > 5000 ? rtt_guess : 5000);
	while (c->time_limit_ns / bin >= MAX_BINS)
		bin *= 2;
	s->bin_ns = bin;
	s->nbins = (uint32_t)(c->time_limit_ns / bin + 2);
	s->bins = calloc(s->nbins, sizeof(*s->bins));
	if (!s->bins)
		return -ENOMEM;
	s->res.start_ns = 0;
	s->last_progress = 0;
	s->first_fail = MROCE_SIM_NEVER;
	for (uint32_t i = 0; i < c->net.npaths; i++)
		if (c->net.path[i].blackhole_at < s->first_fail)
			s->first_fail = c->net.path[i].blackhole_at;
	for (uint32_t i = 0; i < s->nconns && !s->stop; i++) {
		if (c->op == MROCE_SIM_OP_SEND)
			post_recvs(s, &s->conns[i]);
		post_sends(s, &s->conns[i], 0);
		if (s->conns[i].nmsgs == 0)
			progress(s, &s->conns[i], 0);
	}
	for (uint32_t h = 0; h < s->nhosts && !s->stop; h++)
		host_service(s, &s->hosts[h], 0);
	while (!s->stop) {
		uint64_t next = mroce_sim_net_next(s->net);

		if (s->all_done) {
			if (next == MROCE_SIM_NEVER || next > s->drain_until)
				break;
		} else if (next == MROCE_SIM_NEVER) {
			violation(s, MROCE_SIM_HANG,
				  "deadlock: nothing scheduled, %u of %u QPs "
				  "finished", s->nfinished, s->nconns);
			break;
		} else if (next > c->time_limit_ns) {
			violation(s, MROCE_SIM_TIME_LIMIT,
				  "not finished at %.3f ms: %llu of %llu "
				  "bytes", c->time_limit_ns / 1e6,
				  (unsigned long long)s->res.completed_bytes,
				  (unsigned long long)c->bytes * s->nconns);
			break;
		} else if (next - s->last_progress > c->stall_ns) {
			violation(s, MROCE_SIM_HANG,
				  "no completion for %.3f ms (at %.3f ms): %u "
				  "of %u QPs finished", c->stall_ns / 1e6,
				  next / 1e6, s->nfinished, s->nconns);
			break;
		}
		while (c->trace && c->trace_ns && next >= s->trace_next) {
			c->trace(c->trace_arg, s, s->trace_next);
			s->trace_next += c->trace_ns;
		}
		mroce_sim_net_step(s->net);
		s->res.events++;
	}
	if (s->all_done && s->res.verdict == MROCE_SIM_OK)
		final_sweep(s);
	report(s);
	*res = s->res;
	return 0;
}
