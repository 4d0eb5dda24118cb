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
 * receive CQE). READ turns it round: host 0's slot gets the pattern and
 * the reader's slot its complement when the READ is posted, and the
 * reader's slot is compared at its CQE. A slot is reused only after that
 * check, and a stale write into it would break the next check because
 * the pattern depends on the stream offset.
 *
 * This file: configuration defaults, violations, the QP lookup, the host
 * NIC and timers, set-up and the run loop. The application (posting and
 * checking) is sim_app.c; statistics and the report are sim_report.c.
 */
#include "sim_int.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

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
void sim_violation(struct mroce_sim *s, enum mroce_sim_verdict v, const char *fmt,
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

struct qpconn *sim_qpmap_get(struct mroce_sim *s, uint32_t host,
				uint32_t qpn)
{
	uint64_t key = ((uint64_t)host << 32 | qpn) + 1;
	uint32_t i = qpmap_slot(&s->qpmap, key);

	return s->qpmap.keys[i] ? &s->conns[s->qpmap.vals[i]] : NULL;
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
		sim_violation(s, MROCE_SIM_ENGINE, "out of memory (events)");
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

	sim_poll_host(s, h, now);
	if (s->stop)
		return;
again:
	if (now >= h->nic_free_at) {
		struct mroce_sim_pkt *p = mroce_sim_net_alloc(s->net);
		struct mroce_tx_pkt t = { 0 };
		int n;

		if (!p) {
			sim_violation(s, MROCE_SIM_ENGINE, "out of memory (pkts)");
			return;
		}
		t.buf = p->data;
		n = mroce_engine_tx(h->e, &t, 1, mroce_sim_net_cfg_max(s), now);
		if (n == 1) {
			nic_send(s, h, p, &t, now);
		} else {
			mroce_sim_net_free(s->net, p);
			if (n < 0) {
				sim_violation(s, MROCE_SIM_ENGINE,
					  "engine_tx host %u: %d", h->id, n);
				return;
			}
		}
	}
	/* completions can appear during tx (e.g. a flushed WR) */
	sim_poll_host(s, h, now);
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
				sim_violation(s, MROCE_SIM_ENGINE, "out of memory");
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
	if (kind == EV_BULK) {
		sim_bulk_start(s, now);
		for (uint32_t i = 0; i < s->nhosts && !s->stop; i++)
			host_service(s, &s->hosts[i], now);
		return;
	}
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
		sim_violation(s, MROCE_SIM_INTEGRITY,
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
	if (s->cfg.start_psn >= 0) {
		/* the ISN that makes path slot 0's first generation start
		 * at start_psn */
		ec.isn_fixed = true;
		ec.isn = (uint32_t)s->cfg.start_psn -
			 mroce_path_isn(0, 0, s->cfg.first_gen);
	}
	ec.first_gen = s->cfg.first_gen;
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
				   MROCE_ACCESS_REMOTE_WRITE |
				   MROCE_ACCESS_REMOTE_READ,
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
	a.access = MROCE_ACCESS_LOCAL_WRITE | MROCE_ACCESS_REMOTE_WRITE |
		   MROCE_ACCESS_REMOTE_READ;
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

/* The latency probe's QP: host 1 to host 0, beside host 1's bulk QPs
 * (MetaRoCE: on the same connection). */
static int probe_setup(struct mroce_sim *s, uint64_t slotbytes)
{
	const struct mroce_sim_cfg *c = &s->cfg;
	struct host *snd = &s->hosts[1], *rcv = &s->hosts[RECV_HOST];
	struct probe *p = &s->probe;
	struct mroce_qp_init_attr qa = { .max_send_wr = 1, .max_recv_wr = 1 };
	uint32_t psn_fwd = pick_psn(s), psn_rev = pick_psn(s);
	int qpn, err;

	p->sbuf = snd->mem + slotbytes * c->conns;
	p->rbuf = rcv->mem + slotbytes * s->nconns;
	qa.send_cq = qa.recv_cq = snd->cq;
	qpn = mroce_create_qp(snd->e, &qa);
	if (qpn < 0)
		return qpn;
	p->sqpn = (uint32_t)qpn;
	qa.send_cq = qa.recv_cq = rcv->cq;
	qpn = mroce_create_qp(rcv->e, &qa);
	if (qpn < 0)
		return qpn;
	p->rqpn = (uint32_t)qpn;
	err = qp_bringup(s, rcv, p->rqpn, s->pairs[0].peer_at_rcv, p->sqpn,
			 psn_fwd, psn_rev);
	if (!err)
		err = qp_bringup(s, snd, p->sqpn, s->pairs[0].peer_at_snd,
				 p->rqpn, psn_rev, psn_fwd);
	p->on = !err;
	return err;
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
		/* the probe's QP and 8 bytes come after the bulk QPs' */
		bool pr = c->probe_ns && h <= 1;

		err = host_setup(s, &s->hosts[h], rcv ? c->senders : 1,
				 (rcv ? s->nconns : c->conns) + pr,
				 slotbytes * (rcv ? s->nconns : c->conns) +
					 (pr ? PROBE_LEN : 0));
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
	return c->probe_ns ? probe_setup(s, slotbytes) : 0;
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
	    cfg->op > MROCE_SIM_OP_READ ||
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
	if (s->probe.on) {
		sim_probe_post(s, 0);
		if (mroce_sim_net_at(s->net, c->probe_ns, EV_BULK, 0))
			sim_violation(s, MROCE_SIM_ENGINE, "out of memory");
	} else {
		sim_bulk_start(s, 0);
	}
	for (uint32_t h = 0; h < s->nhosts && !s->stop; h++)
		host_service(s, &s->hosts[h], 0);
	while (!s->stop) {
		uint64_t next = mroce_sim_net_next(s->net);

		if (s->all_done) {
			if (next == MROCE_SIM_NEVER || next > s->drain_until)
				break;
		} else if (next == MROCE_SIM_NEVER) {
			sim_violation(s, MROCE_SIM_HANG,
				  "deadlock: nothing scheduled, %u of %u QPs "
				  "finished", s->nfinished, s->nconns);
			break;
		} else if (next > c->time_limit_ns) {
			sim_violation(s, MROCE_SIM_TIME_LIMIT,
				  "not finished at %.3f ms: %llu of %llu "
				  "bytes", c->time_limit_ns / 1e6,
				  (unsigned long long)s->res.completed_bytes,
				  (unsigned long long)c->bytes * s->nconns);
			break;
		} else if (next - s->last_progress > c->stall_ns) {
			sim_violation(s, MROCE_SIM_HANG,
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
		sim_final_sweep(s);
	sim_report(s);
	*res = s->res;
	return 0;
}
