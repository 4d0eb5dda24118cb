/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mroce network simulator: a deterministic, seeded, virtual-time model of
 * a leaf/spine fabric that drives real mroce engines (engine.h).
 *
 * Two layers, usable separately:
 *   net   hosts, host access links, leaf switches and N paths (planes)
 *         between every pair of leaves, with rate, propagation delay, tail
 *         drop, random loss, duplication, corruption, ECN marking and
 *         blackholes; ECMP by a fixed hash of the UDP 5-tuple. The net
 *         owns the event queue (virtual time in ns).
 *   sim   one engine per host plus an application that posts WRITE or
 *         SEND work requests, checks every delivered byte and collects
 *         goodput, completion times, fairness and recovery statistics.
 *
 * Everything random comes from one xoshiro256** generator seeded from the
 * configuration, and events with the same time run in the order they were
 * scheduled, so the same configuration gives the same run, bit for bit.
 *
 * Error convention of this layer: 0 or a count on success, a NEGATIVE
 * errno on failure. The library never prints and never exits.
 */
#ifndef MROCE_SIM_H
#define MROCE_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* Random numbers: xoshiro256**, seeded through splitmix64             */
/* ------------------------------------------------------------------ */
struct mroce_sim_rng {
	uint64_t s[4];
};

void mroce_sim_rng_seed(struct mroce_sim_rng *r, uint64_t seed);
uint64_t mroce_sim_rng_next(struct mroce_sim_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double mroce_sim_rng_double(struct mroce_sim_rng *r);
/* Uniform in [0, n); n = 0 returns 0. */
uint64_t mroce_sim_rng_below(struct mroce_sim_rng *r, uint64_t n);

/* ECMP: the fixed hash every leaf uses to map a UDP 5-tuple (addresses
 * are host ids, the protocol is always UDP) onto one of its paths. */
uint32_t mroce_sim_ecmp_hash(uint32_t src, uint32_t dst, uint16_t sport,
			     uint16_t dport);

/* ------------------------------------------------------------------ */
/* Network                                                              */
/* ------------------------------------------------------------------ */
#define MROCE_SIM_MAX_PATHS	64
#define MROCE_SIM_NEVER		UINT64_MAX
/* Bytes a frame costs on the wire beyond its UDP payload: preamble and
 * inter-frame gap 20, Ethernet 14, FCS 4, IPv4 20, UDP 8. */
#define MROCE_SIM_WIRE_OVERHEAD	66

/* One queue-and-wire stage: a path plane, or a host's downlink. */
struct mroce_sim_link_cfg {
	uint64_t rate_bps;	/* serialisation rate */
	uint64_t delay_ns;	/* one-way propagation */
	uint32_t queue_bytes;	/* tail drop above this backlog (0: no limit) */
	uint32_t ecn_bytes;	/* CE-mark ECT packets above this backlog
				 * (0: never mark) */
	double loss;		/* drop probability per packet */
	double dup;		/* duplication probability */
	double corrupt;		/* probability of flipping one byte */
	double ce_mark;		/* probability of CE-marking an ECT packet
				 * whatever the backlog: the queue of
				 * traffic the simulation does not model */
	uint64_t blackhole_at;	/* drop everything from this time on */
	uint64_t flap_ns;	/* non-zero: from blackhole_at on the plane
				 * flaps instead, down flap_ns, up flap_ns,
				 * down again... (a link that keeps failing
				 * and coming back) */
};

/* Does link configuration c drop everything at `now`? */
static inline bool mroce_sim_link_down(const struct mroce_sim_link_cfg *c,
				       uint64_t now)
{
	if (now < c->blackhole_at)
		return false;
	return !c->flap_ns || (now - c->blackhole_at) / c->flap_ns % 2 == 0;
}

struct mroce_sim_net_cfg {
	uint32_t nhosts;
	uint32_t nleaves;
	const uint32_t *host_leaf; /* leaf of each host (NULL: host % nleaves) */
	uint32_t npaths;	/* planes between each pair of leaves */
	struct mroce_sim_link_cfg path[MROCE_SIM_MAX_PATHS];
	struct mroce_sim_link_cfg host; /* every host's up- and downlink */
	uint32_t max_frame;	/* largest UDP payload sent (buffer size) */
	uint64_t seed;
};

/* What the network hands to the receiving host. */
struct mroce_sim_pkt {
	struct mroce_sim_pkt *next;	/* pool / owner list link */
	uint64_t sent_at;	/* time the sender's NIC emitted it */
	uint64_t id;		/* sequence number of emission (dups share) */
	uint32_t src, dst;	/* host ids */
	uint16_t sport, dport;
	uint16_t path;		/* plane taken (0xffff: same leaf) */
	bool ect, ce;
	bool corrupted;		/* a byte was flipped on the way */
	bool duplicate;		/* the copy made by duplication */
	uint8_t hop;		/* internal: next stage */
	void *owner;		/* opaque to the net (the sim's pair) */
	uint32_t len;		/* UDP payload length */
	uint8_t *data;		/* max_frame bytes */
};

struct mroce_sim_link_stats {
	uint64_t tx_pkts, tx_bytes;	/* accepted into the queue */
	uint64_t drop_tail, drop_loss, drop_blackhole;
	uint64_t dups, corrupts, ce_marks;
	uint64_t max_backlog;		/* bytes */
};

struct mroce_sim_net;

/* Called for every packet that reaches its destination host. The packet
 * is returned to the pool when the callback returns. */
typedef void (*mroce_sim_deliver_fn)(void *ctx, struct mroce_sim_pkt *p,
				     uint64_t now);
/* Called for events the user scheduled with mroce_sim_net_at(). */
typedef void (*mroce_sim_event_fn)(void *ctx, uint32_t kind, uint64_t arg,
				   uint64_t now);

int mroce_sim_net_create(const struct mroce_sim_net_cfg *cfg,
			 mroce_sim_deliver_fn deliver,
			 mroce_sim_event_fn event, void *ctx,
			 struct mroce_sim_net **out);
void mroce_sim_net_destroy(struct mroce_sim_net *n);

/* A packet buffer from the pool (NULL: out of memory). Fill data/len,
 * src/dst, ports, ect, then hand it to mroce_sim_net_send(). */
struct mroce_sim_pkt *mroce_sim_net_alloc(struct mroce_sim_net *n);
void mroce_sim_net_free(struct mroce_sim_net *n, struct mroce_sim_pkt *p);

/* The source host's NIC starts serialising p at `now` (>= the current
 * virtual time). Returns the time its uplink is free again; the caller
 * must not send from that host before then (the NIC is the host queue). */
uint64_t mroce_sim_net_send(struct mroce_sim_net *n, struct mroce_sim_pkt *p,
			    uint64_t now);

/* Schedule a user event (kind, arg) at time `at`. 0 or -ENOMEM. */
int mroce_sim_net_at(struct mroce_sim_net *n, uint64_t at, uint32_t kind,
		     uint64_t arg);

/* Run events until the queue is empty or the next one is later than
 * `until`; the clock ends at min(until, last event). Returns the number
 * of events run. */
uint64_t mroce_sim_net_run(struct mroce_sim_net *n, uint64_t until);
/* Run exactly one event; 0 when the queue is empty. */
int mroce_sim_net_step(struct mroce_sim_net *n);

uint64_t mroce_sim_net_now(const struct mroce_sim_net *n);
/* Time of the next event, MROCE_SIM_NEVER when none. */
uint64_t mroce_sim_net_next(const struct mroce_sim_net *n);
/* Digest of every event run so far (time, kind, packet identity): two
 * runs are identical iff their digests match. */
uint64_t mroce_sim_net_digest(const struct mroce_sim_net *n);
/* Mix a caller value (e.g. a completion) into the digest. */
void mroce_sim_net_mix(struct mroce_sim_net *n, uint64_t v);

/* Plane `path` between leaves a and b (direction a -> b), summed over all
 * leaf pairs when a or b is UINT32_MAX. -EINVAL on a bad index. */
int mroce_sim_net_path_stats(const struct mroce_sim_net *n, uint32_t a,
			     uint32_t b, uint32_t path,
			     struct mroce_sim_link_stats *st);
int mroce_sim_net_host_stats(const struct mroce_sim_net *n, uint32_t host,
			     struct mroce_sim_link_stats *st);
uint32_t mroce_sim_net_leaf(const struct mroce_sim_net *n, uint32_t host);
/* Packets in the pool (allocated ever) and in flight now. */
void mroce_sim_net_pool(const struct mroce_sim_net *n, uint64_t *allocated,
			uint64_t *in_flight);

/* ------------------------------------------------------------------ */
/* Simulation of engines and an application                            */
/* ------------------------------------------------------------------ */
enum mroce_sim_op {
	MROCE_SIM_OP_WRITE = 0,	/* RDMA WRITE; checked at the sender's CQE */
	MROCE_SIM_OP_SEND = 1,	/* SEND into posted receives */
	MROCE_SIM_OP_READ = 2,	/* RDMA READ of host 0's memory, which its
				 * application filled with the pattern;
				 * checked at the reader's CQE */
};

struct mroce_sim;

struct mroce_sim_cfg {
	struct mroce_sim_net_cfg net;	/* nhosts/nleaves/host_leaf: set by
					 * the sim from senders/shared_leaf */
	uint8_t transport;	/* enum mroce_transport */
	uint32_t senders;	/* hosts 1..K all send to host 0 */
	bool shared_leaf;	/* all senders behind one leaf (else one each) */
	uint32_t conns;		/* QPs per sender */
	uint64_t bytes;		/* per QP */
	uint32_t msg_size;
	uint32_t outstanding;	/* WRs in flight per QP */
	uint8_t op;		/* enum mroce_sim_op */
	uint16_t mtu;		/* engine MTU (0: engine default) */
	uint8_t engine_paths;	/* MetaRoCE paths per connection (0: default) */
	uint32_t rto_min_us;	/* 0: engine default */
	int64_t start_psn;	/* < 0: random. RoCEv2: every QP's sq/rq PSN
				 * (the low 24 bits); MetaRoCE: the first
				 * PSN of every connection's path slot 0 at
				 * first_gen (32 bits; sets engine cfg isn) */
	uint8_t first_gen;	/* MetaRoCE: every path slot's first
				 * generation (engine cfg first_gen; 0) */
	uint64_t time_limit_ns;	/* liveness: must finish before this */
	uint64_t stall_ns;	/* liveness: some progress this often */
	uint64_t drain_ns;	/* after the last completion, keep running
				 * this long, then re-check every receive
				 * slot (late duplicates, extra CQEs) */
	uint64_t bin_ns;	/* goodput time series bin (0: auto) */
	uint64_t probe_ns;	/* non-zero: a latency probe QP from host 1 to
				 * host 0 keeps one 8-byte WRITE in flight
				 * from time 0; the bulk QPs start at
				 * probe_ns. Probes posted before that are
				 * the idle samples, the rest until the bulk
				 * finishes the loaded ones. */
	int64_t fault_msg;	/* test hook: flip a received byte of QP 0's
				 * message fault_msg before it is checked
				 * (< 0: off), proving the checker works */
	uint64_t seed;
	/* Telemetry (optional): called every trace_ns of virtual time
	 * while the run lasts, before the first event at or after that
	 * instant. It may read engines (mroce_sim_engine) but must not
	 * change anything: a traced run has the same digest. */
	uint64_t trace_ns;
	void (*trace)(void *arg, struct mroce_sim *s, uint64_t now);
	void *trace_arg;
};

void mroce_sim_cfg_default(struct mroce_sim_cfg *cfg);

enum mroce_sim_verdict {
	MROCE_SIM_OK = 0,
	MROCE_SIM_INTEGRITY,	/* wrong bytes, order or duplicate CQE */
	MROCE_SIM_ERROR_WC,	/* an error completion */
	MROCE_SIM_HANG,		/* no progress within stall_ns */
	MROCE_SIM_TIME_LIMIT,	/* still running at time_limit_ns */
	MROCE_SIM_ENGINE,	/* an engine call failed during setup/post */
};
const char *mroce_sim_verdict_str(enum mroce_sim_verdict v);

struct mroce_sim_result {
	enum mroce_sim_verdict verdict;
	char why[160];		/* first violation, human readable */
	uint64_t start_ns;	/* first post */
	uint64_t end_ns;	/* last completion (or where it stopped) */
	uint64_t completed_bytes;
	uint64_t target_bytes;
	uint64_t msgs;
	double goodput_gbps;
	double fct_p50_us, fct_p99_us, fct_max_us;
	double jain;		/* over per-QP throughput (bytes / own FCT) */
	double jain_first;	/* over per-QP bytes when the first finished */
	uint64_t retransmits, tx_pkts, rx_pkts, tx_data_pkts, rto_fires;
	uint64_t path_rerolls, rx_dup, rx_ooo, ce_marks_rx;
	uint64_t net_pkts, drops_tail, drops_loss, drops_blackhole;
	uint64_t dups, corrupts, icrc_drops, ce_marked;
	uint64_t error_wcs;
	uint64_t timer_spins;	/* engine due but idle: polled 1 us later */
	double path_share[MROCE_SIM_MAX_PATHS]; /* data bytes per plane */
	uint32_t npaths;
	double base_rtt_us;
	double capacity_gbps;	/* min(host rate, sum of planes) */
	/* blackhole runs: goodput before the failure and recovery time */
	double pre_fail_gbps;
	double post_fail_gbps;	/* from the failure to the end */
	double recovery_us;	/* < 0: never recovered / not measurable */
	uint64_t fail_gap_ns;	/* longest completion gap ending after the
				 * failure (the stall it caused) */
	/* the latency probe (cfg.probe_ns): post to completion of an
	 * 8-byte WRITE, alone and under the bulk load */
	double probe_idle_p50_us, probe_idle_p99_us;
	double probe_loaded_p50_us, probe_loaded_p99_us;
	uint64_t probe_idle_n, probe_loaded_n;
	size_t mem_per_conn;	/* mroce_engine_conn_mem() of host 0 */
	uint64_t events;
	uint64_t digest;
	uint64_t pool_pkts;
};

struct mroce_sim;

int mroce_sim_create(const struct mroce_sim_cfg *cfg, struct mroce_sim **out);
/* Runs to completion, violation or the time limit. Returns 0 when the
 * run was carried out (the verdict is in res), -errno on setup failure,
 * -EALREADY when this simulation has run already (create a new one). */
int mroce_sim_run(struct mroce_sim *s, struct mroce_sim_result *res);
void mroce_sim_destroy(struct mroce_sim *s);
struct mroce_engine *mroce_sim_engine(struct mroce_sim *s, uint32_t host);
/* After a run: bytes completed per time bin (bin i covers [start + i *
 * bin_ns, start + (i + 1) * bin_ns)), up to the last completion. Returns
 * the number of bins; *bins stays owned by the simulation. */
uint32_t mroce_sim_series(const struct mroce_sim *s, const uint64_t **bins,
			  uint64_t *bin_ns);

/* Byte `off` of the data stream of QP `conn` (the checked pattern). */
static inline uint8_t mroce_sim_pattern(uint32_t conn, uint64_t off)
{
	uint64_t x = ((uint64_t)conn << 40) ^ (off >> 3) ^ 0x9e3779b97f4a7c15ull;

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 29;
	return (uint8_t)(x >> ((off & 7) * 8));
}

#endif /* MROCE_SIM_H */
