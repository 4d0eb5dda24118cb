/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal to user/sim: the simulation's state, shared by sim.c (set-up,
 * NIC, run loop), sim_app.c (the application) and sim_report.c
 * (statistics and the report).
 */
#ifndef MROCE_SIM_INT_H
#define MROCE_SIM_INT_H

#include "mroce/sim.h"
#include "mroce/codec.h"
#include "mroce/engine.h"

#include <stdbool.h>
#include <stdint.h>


enum {
	EV_NIC = 1,	/* arg = host: its uplink is free again */
	EV_TIMER = 2,	/* arg = host: engine timer */
	EV_BULK = 3,	/* the bulk QPs start (after the idle probes) */
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

/* The latency probe: one 8-byte WRITE in flight at a time. */
#define PROBE_LEN	8
#define PROBE_CONN_ID	0xffffffffu	/* its pattern's stream id */
struct probe {
	bool on;
	uint32_t sqpn, rqpn;	/* on host 1 and host 0 */
	uint8_t *sbuf, *rbuf;
	uint64_t seq;		/* WRITEs completed */
	uint64_t post_ns;	/* of the one in flight */
	bool busy;
	uint64_t hist_idle[HIST_BUCKETS], hist_loaded[HIST_BUCKETS];
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
	bool bulk_started;
	struct probe probe;
};

/* sim.c */
void sim_violation(struct mroce_sim *s, enum mroce_sim_verdict v,
		   const char *fmt, ...) __attribute__((format(printf, 3, 4)));
struct qpconn *sim_qpmap_get(struct mroce_sim *s, uint32_t host,
			     uint32_t qpn);

/* sim_app.c */
void sim_poll_host(struct mroce_sim *s, struct host *h, uint64_t now);
void sim_probe_post(struct mroce_sim *s, uint64_t now);
void sim_bulk_start(struct mroce_sim *s, uint64_t now);
uint8_t *sim_dst(const struct mroce_sim *s, const struct qpconn *c,
		 uint64_t idx);
uint32_t sim_msg_len(const struct mroce_sim *s, uint64_t idx);
int64_t sim_check_pattern(const uint8_t *p, uint32_t conn, uint64_t off,
			  uint32_t n);

/* sim_report.c */
uint32_t sim_hist_bucket(uint64_t v);
void sim_jain_snapshot(struct mroce_sim *s);
void sim_report(struct mroce_sim *s);
void sim_final_sweep(struct mroce_sim *s);

#endif
