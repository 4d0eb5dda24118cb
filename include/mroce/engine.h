/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The mroce transport engine: sans-IO, deterministic, single-threaded.
 *
 * The engine owns verbs objects (MRs, CQs, QPs) and connection/path state,
 * and is driven only through calls:
 *   packets in   mroce_engine_rx()
 *   work in      mroce_post_send() / mroce_post_recv()
 *   time in      every call takes `now` (nanoseconds, any monotonic origin)
 *   packets out  mroce_engine_tx() fills caller-provided buffers
 *   completions  mroce_poll_cq()
 *   timers       mroce_engine_next_timer() says when to call again
 * It opens no sockets, reads no clock, starts no thread and keeps no global
 * state, so it runs the same under the simulator, the daemon and in tests.
 *
 * Error convention of this layer: 0 (or a count) on success, a NEGATIVE
 * errno on failure (-EINVAL bad argument, -ENOMEM out of resources,
 * -ENOENT no such object, -EAGAIN queue full, -EPERM wrong QP state or
 * access, -EBUSY object in use). The one exception is mroce_engine_rx(),
 * which also passes on the codec's -MROCE_E_* (codec.h): those start at
 * MROCE_E_BASE (4096), above every errno, so the two never collide. The
 * engine never prints.
 *
 * Both transports live behind this one API:
 *   MROCE_TRANSPORT_METAROCE  multipath spraying, per-path PSN + SACK,
 *                             selective retransmit, CC, OOO placement
 *   MROCE_TRANSPORT_ROCEV2    standard RC: one source port per QP, strict
 *                             in-order PSNs, NAK sequence error, go-back-N
 * For RoCEv2 the ICRC covers the IP header, which the engine never sees:
 * the framing layer (daemon, simulator) fills it on transmit and verifies
 * it on receive; the engine leaves the 4 ICRC bytes in place.
 */
#ifndef MROCE_ENGINE_H
#define MROCE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mroce/addr.h"

enum mroce_transport {
	MROCE_TRANSPORT_METAROCE = 1,
	MROCE_TRANSPORT_ROCEV2 = 2,
};

struct mroce_engine;

struct mroce_engine_cfg {
	uint8_t transport;	/* enum mroce_transport */
	uint8_t npaths;		/* MetaRoCE paths per connection (default 8) */
	uint16_t mtu;		/* max payload bytes per packet (default 4096) */
	uint64_t seed;		/* RNG seed: ISNs, keys, conn ids, ports */
	uint8_t secret[16];	/* cookie key (random in production) */
	uint32_t max_conns;	/* default 4096 */
	uint32_t max_qps;	/* default 4096 */
	uint32_t max_mrs;	/* default 1024 */
	uint64_t link_bps;	/* local line rate, for pacing/fair share
				 * (0: MROCE_DEFAULT_LINK_BPS) */
	uint32_t rto_min_us;	/* default 200 */
	uint8_t retry_cnt;	/* retries before RETRY_EXC_ERR (default 7) */
	uint8_t rnr_retry;	/* RNR retries, 7 = infinite (default 7) */
	uint32_t jitter_us;	/* MetaRoCE: RTT variation (us) that is not
				 * queueing: the endpoints' own timing noise.
				 * The CC's delay target and the loss timers
				 * allow for it, and path exploration is off
				 * (the CPU, not the planes, limits the
				 * rate). 0: hardware-like endpoints (1 us).
				 * Software endpoints (kernel UDP, AF_XDP)
				 * set it: libmroce and mroced use
				 * MROCE_EP_SW_JITTER_US (user/endpoint/endpoint.h);
				 * see docs/engine.md */
	uint32_t queue_us;	/* MetaRoCE, with jitter_us: the standing
				 * queue a path may hold, judged by the
				 * smallest RTT sample of each round trip
				 * (jitter delays some samples, a queue all
				 * of them): above base + queue_us the window
				 * is cut and does not grow the next round
				 * trip. 0: only jitter_us bounds the queue
				 * (libmroce: mrv_dev_attr.queue_us, off by
				 * default; docs/engine.md, "Short queues") */
	/* Testing (the simulator's --psn and --gen): when isn_fixed, every
	 * MetaRoCE connection's transmit ISN is isn, and every path slot
	 * starts at generation first_gen (both ends must agree: a receiver
	 * takes path 0 to start there), so that a run crosses the 32-bit
	 * PSN wrap and the 8-bit generation wrap where it chooses. Off (0)
	 * in production: random ISN, generation 0. */
	bool isn_fixed;
	uint32_t isn;
	uint8_t first_gen;
};

/* The line rate an engine assumes when none is configured. */
#define MROCE_DEFAULT_LINK_BPS 100000000000ull

/* Fill defaults for every zero field. */
void mroce_engine_cfg_default(struct mroce_engine_cfg *cfg);
int mroce_engine_create(const struct mroce_engine_cfg *cfg,
			struct mroce_engine **out);
void mroce_engine_destroy(struct mroce_engine *e);

/* ------------------------------------------------------------------ */
/* Peers: the I/O layer's address book. A peer is one remote endpoint  */
/* (node). MetaRoCE runs one connection per peer.                      */
/* ------------------------------------------------------------------ */
/* struct mroce_peer_addr: mroce/addr.h */
/* Returns a peer id >= 0 (stable for the engine's life) or -errno. The same
 * address twice returns the same id. */
int mroce_peer_add(struct mroce_engine *e, const struct mroce_peer_addr *a);

/* ------------------------------------------------------------------ */
/* Verbs objects                                                        */
/* ------------------------------------------------------------------ */
enum mroce_access {
	MROCE_ACCESS_LOCAL_WRITE = 1 << 0,
	MROCE_ACCESS_REMOTE_WRITE = 1 << 1,
	MROCE_ACCESS_REMOTE_READ = 1 << 2,
};

struct mroce_mr {
	uint64_t addr;		/* start (a pointer in this process) */
	uint64_t length;
	uint32_t lkey, rkey;	/* random, never 0 */
	uint32_t access;
};

int mroce_reg_mr(struct mroce_engine *e, void *addr, size_t len,
		 uint32_t access, struct mroce_mr *out);
/* Like mroce_reg_mr(), but the region is known to SGEs and to peers by the
 * I/O virtual address `iova` (ibverbs' reg_mr_iova): a byte at iova + k is
 * stored at addr + k in this process. The daemon registers memory that an
 * application mapped at another address this way (iova = the
 * application's address). out->addr is the iova. */
int mroce_reg_mr_iova(struct mroce_engine *e, void *addr, size_t len,
		      uint64_t iova, uint32_t access, struct mroce_mr *out);
int mroce_dereg_mr(struct mroce_engine *e, uint32_t lkey);

/* Returns a CQ id >= 0 or -errno. depth = max unpolled completions; an
 * overflowing CQ moves its QPs to ERR (as ibverbs reports CQ overrun). */
int mroce_create_cq(struct mroce_engine *e, uint32_t depth);
int mroce_destroy_cq(struct mroce_engine *e, int cq);

enum mroce_qp_state {
	MROCE_QPS_RESET = 0,
	MROCE_QPS_INIT,
	MROCE_QPS_RTR,
	MROCE_QPS_RTS,
	MROCE_QPS_ERR,
};
const char *mroce_qp_state_name(enum mroce_qp_state s);

struct mroce_qp_init_attr {
	int send_cq, recv_cq;
	uint32_t max_send_wr, max_recv_wr;
};

/* Returns the QP number (24-bit, random, never 0) or -errno. */
int mroce_create_qp(struct mroce_engine *e,
		    const struct mroce_qp_init_attr *attr);
int mroce_destroy_qp(struct mroce_engine *e, uint32_t qpn);

enum mroce_qp_attr_mask {
	MROCE_QP_STATE = 1 << 0,
	MROCE_QP_ACCESS_FLAGS = 1 << 1,	/* INIT: remote access allowed */
	MROCE_QP_DEST = 1 << 2,		/* RTR: peer + dest_qpn */
	MROCE_QP_RQ_PSN = 1 << 3,	/* RTR (RoCEv2): expected PSN */
	MROCE_QP_SQ_PSN = 1 << 4,	/* RTS (RoCEv2): first send PSN */
};

struct mroce_qp_attr {
	enum mroce_qp_state state;
	uint32_t access;	/* enum mroce_access bits */
	int peer;		/* from mroce_peer_add */
	uint32_t dest_qpn;
	uint32_t rq_psn, sq_psn;
};

/* ibverbs-style transitions: RESET->INIT->RTR->RTS, any->ERR, any->RESET.
 * A transition ibverbs does not allow returns -EPERM and changes nothing.
 * In MetaRoCE mode, RTR starts the connection handshake to the peer if
 * there is no connection yet (sends wait for it to complete). */
int mroce_modify_qp(struct mroce_engine *e, uint32_t qpn,
		    const struct mroce_qp_attr *attr, uint32_t mask,
		    uint64_t now);
int mroce_query_qp(struct mroce_engine *e, uint32_t qpn,
		   struct mroce_qp_attr *attr);

/* Work requests (one scatter/gather element each in v0). */
struct mroce_sge {
	uint64_t addr;		/* inside the MR of lkey */
	uint32_t length;
	uint32_t lkey;
};

enum mroce_wr_opcode {
	MROCE_WR_SEND = 0,
	MROCE_WR_SEND_WITH_IMM,
	MROCE_WR_RDMA_WRITE,
	MROCE_WR_RDMA_WRITE_WITH_IMM,
	MROCE_WR_RDMA_READ,
};

enum mroce_send_flags {
	MROCE_SEND_SIGNALED = 1 << 0,	/* completion on success */
	MROCE_SEND_SOLICITED = 1 << 1,
};

struct mroce_send_wr {
	uint64_t wr_id;
	enum mroce_wr_opcode opcode;
	uint32_t send_flags;
	struct mroce_sge sge;
	uint32_t imm;		/* *_WITH_IMM */
	uint64_t remote_addr;	/* WRITE / READ */
	uint32_t rkey;
};

struct mroce_recv_wr {
	uint64_t wr_id;
	struct mroce_sge sge;
};

/* 0, or -errno with nothing queued (-EPERM: QP not in RTS, -EAGAIN: send
 * queue full, -EINVAL: bad lkey/length/opcode). */
int mroce_post_send(struct mroce_engine *e, uint32_t qpn,
		    const struct mroce_send_wr *wr, uint64_t now);
/* Allowed from INIT on. */
int mroce_post_recv(struct mroce_engine *e, uint32_t qpn,
		    const struct mroce_recv_wr *wr);

enum mroce_wc_status {
	MROCE_WC_SUCCESS = 0,
	MROCE_WC_LOC_LEN_ERR,
	MROCE_WC_LOC_QP_OP_ERR,
	MROCE_WC_LOC_PROT_ERR,
	MROCE_WC_WR_FLUSH_ERR,
	MROCE_WC_REM_INV_REQ_ERR,
	MROCE_WC_REM_ACCESS_ERR,
	MROCE_WC_REM_OP_ERR,
	MROCE_WC_RETRY_EXC_ERR,
	MROCE_WC_RNR_RETRY_EXC_ERR,
	MROCE_WC_GENERAL_ERR,
};
const char *mroce_wc_status_str(enum mroce_wc_status s);

enum mroce_wc_opcode {
	MROCE_WC_SEND = 0,
	MROCE_WC_RDMA_WRITE,
	MROCE_WC_RDMA_READ,
	MROCE_WC_RECV,
	MROCE_WC_RECV_RDMA_WITH_IMM,
};

#define MROCE_WC_WITH_IMM 1u

struct mroce_wc {
	uint64_t wr_id;
	enum mroce_wc_status status;
	enum mroce_wc_opcode opcode;
	uint32_t byte_len;	/* receives: bytes received */
	uint32_t imm;
	uint32_t qpn;
	uint32_t flags;		/* MROCE_WC_WITH_IMM */
};

/* Returns the number of completions written (0..n) or -errno. */
int mroce_poll_cq(struct mroce_engine *e, int cq, struct mroce_wc *wc,
		  int n);

/* ------------------------------------------------------------------ */
/* Packet I/O                                                           */
/* ------------------------------------------------------------------ */
struct mroce_rx_meta {
	int peer;		/* from mroce_peer_add (source address) */
	uint16_t sport;		/* UDP source port seen */
	bool ce;		/* IP ECN field was CE (11) */
};

/* Hand one received UDP payload to the engine. Returns 0 when consumed,
 * or when dropped a negative codec error (-MROCE_E_*, at most
 * -MROCE_E_BASE: the packet did not parse) or a negative errno (-4095..-1:
 * it parsed but was refused); the two ranges never overlap (codec.h,
 * mroce_is_codec_err). Drops are also counted in the engine stats. Never
 * keeps a pointer to buf. */
int mroce_engine_rx(struct mroce_engine *e, const struct mroce_rx_meta *m,
		    const void *buf, size_t len, uint64_t now);

struct mroce_tx_pkt {
	uint8_t *buf;		/* caller-provided, buf_cap bytes */
	uint32_t len;		/* set by the engine: UDP payload length */
	int peer;		/* set: destination peer */
	uint16_t sport;		/* set: UDP source port (path entropy) */
	uint16_t dport;		/* set: 4792 or 4791 */
	bool ect;		/* set: send as ECN-capable (ECT(0)) */
};

/* Produce up to n packets that may be sent now (window and pacing
 * permitting). Returns the count filled. */
int mroce_engine_tx(struct mroce_engine *e, struct mroce_tx_pkt *pkts,
		    int n, size_t buf_cap, uint64_t now);

/* Run timers due at `now` (retransmission, probes, pacing, handshake). */
void mroce_engine_tick(struct mroce_engine *e, uint64_t now);

/* Earliest time the engine needs tick() or tx() again; UINT64_MAX when
 * idle. Packets already sendable make it return <= now. */
uint64_t mroce_engine_next_timer(const struct mroce_engine *e, uint64_t now);

/* ------------------------------------------------------------------ */
/* Introspection                                                        */
/* ------------------------------------------------------------------ */
/* Engine counters, one list for the struct, the IPC arrays and the JSON
 * names. state_errors counts illegal state transitions the engine refused:
 * a bug of ours, reported here instead of crashing the application. */
#define MROCE_ENGINE_STATS(X)                                                  \
	X(tx_pkts) X(tx_bytes) X(rx_pkts) X(rx_bytes) X(tx_data_pkts)          \
	X(rx_data_pkts) X(tx_acks) X(rx_acks) X(rx_acks_xdp) X(tx_naks)        \
	X(rx_naks)                                                             \
	X(retransmits) X(rx_dup) X(rx_ooo) X(rx_out_of_window) X(rx_malformed) \
	X(rx_no_conn) X(rx_bad_rkey) X(rx_stale_path) X(ce_marks)              \
	X(path_rerolls) X(rto_fires) X(probes_sent) X(msgs_completed)          \
	X(bytes_completed) X(handshakes) X(state_errors)

/* How many counters MROCE_ENGINE_STATS lists. */
enum {
#define MROCE_X_STAT_N(n) MROCE_ENGINE_STAT_##n,
	MROCE_ENGINE_STATS(MROCE_X_STAT_N)
#undef MROCE_X_STAT_N
	MROCE_ENGINE_NSTATS
};

struct mroce_engine_stats {
#define MROCE_X_STAT(n) uint64_t n;
	MROCE_ENGINE_STATS(MROCE_X_STAT)
#undef MROCE_X_STAT
};

void mroce_engine_get_stats(const struct mroce_engine *e,
			    struct mroce_engine_stats *st);

struct mroce_path_info {
	uint16_t sport;
	uint8_t gen;
	bool alive;
	uint32_t srtt_us;
	uint32_t cwnd_pkts;
	uint32_t inflight;
	uint64_t tx_pkts, retransmits, ce_marks;
	/* MetaRoCE: the path's next PSN to send and the newest PSN of its
	 * receive side (both 32 bits; the simulator's wrap tests watch them
	 * cross 2^32). RoCEv2: one past the QP's highest PSN sent and the
	 * PSN it expects next (24 bits). */
	uint32_t next_psn, rx_psn;
};

/* MetaRoCE: info on path `idx` of the connection to `peer`. RoCEv2: idx 0
 * is the QP's fixed port. Returns -ENOENT past the last path. */
int mroce_engine_path_info(const struct mroce_engine *e, int peer, int idx,
			   struct mroce_path_info *out);

/* ------------------------------------------------------------------ */
/* Events for the I/O layer                                             */
/* ------------------------------------------------------------------ */
/*
 * What the framing layer must know to steer packets (the AF_XDP backend's
 * XDP `conns` map): a MetaRoCE connection's local id becomes valid or
 * invalid, a RoCEv2 QP starts or stops receiving. The engine queues an
 * event at the moment the state changes and never drops one (the queue
 * grows; allocation happens only on these control-path changes). The I/O
 * layer drains the queue after every engine call that can change it and
 * BEFORE transmitting what that call produced, so a peer can never answer
 * a connection id that is not yet registered.
 */
enum mroce_engine_event_type {
	MROCE_EV_CONN_UP = 1,	/* MetaRoCE: packets with conn_id `id` are
				 * ours from now on; peer_id is the id the
				 * peer expects (0 until known: a second
				 * CONN_UP with the same id updates it) */
	MROCE_EV_CONN_DOWN = 2,	/* MetaRoCE: conn `id` is gone */
	MROCE_EV_QP_UP = 3,	/* RoCEv2: QP `id` receives (reached RTR) */
	MROCE_EV_QP_DOWN = 4,	/* RoCEv2: QP `id` destroyed or reset */
};

struct mroce_engine_event {
	uint8_t type;		/* enum mroce_engine_event_type */
	int peer;		/* engine peer id */
	uint32_t id;		/* local conn_id (MetaRoCE) or QPN (RoCEv2) */
	uint32_t peer_id;	/* MetaRoCE: the peer's conn_id, else 0 */
	uint32_t slot;		/* MetaRoCE: a small dense index < max_conns
				 * (rx_state/scoreboard slot), else 0 */
};

/* Takes the oldest event: 1 when *ev was filled, 0 when none is queued. */
int mroce_engine_poll_event(struct mroce_engine *e,
			    struct mroce_engine_event *ev);

/* ------------------------------------------------------------------ */
/* Path state for a kernel fast path                                    */
/* ------------------------------------------------------------------ */
/*
 * An I/O layer with an XDP program (docs/xdp.md) keeps a copy of each
 * MetaRoCE connection's path state in shared maps: the receive side of
 * every path as data is placed (the program answers duplicates from it:
 * never more than the engine placed) and the
 * transmit side's ports and generations (the program sprays its own ACKs
 * over those ports and takes telemetry only from ACKs of a current
 * generation). The engine calls these hooks synchronously, inside the
 * call that changes the state, in the order of the changes; `slot` is
 * the connection's slot of its events. Any hook may be NULL; RoCEv2
 * never calls them.
 */
struct mroce_pub_rx {		/* a path's receive state, all placed */
	uint32_t slot;
	uint8_t path, gen;
	uint32_t cum_psn;	/* next PSN expected */
	uint32_t rx_high;	/* PSN after the newest data packet taken in
				 * (placed, refused or a duplicate) */
	uint32_t rate_mbps;	/* the fair-share hint of our last ACK */
	uint8_t sack[32];	/* as struct mroce_ackh.sack
				 * (MROCE_SACK_BYTES) */
};

struct mroce_pub_tx {		/* a path of ours: its port and generation */
	uint32_t slot;
	uint8_t path, gen;
	uint8_t npaths;		/* paths of the connection */
	bool active;		/* carries data and ACKs (not a fresh port
				 * on probation) */
	uint16_t sport;
};

struct mroce_pub_ack {		/* the last ACK we sent for a path */
	uint32_t slot;
	uint8_t path;
	uint32_t cum_psn;	/* the cum_psn it reported */
	uint32_t lost_at_us;	/* CLOCK_MONOTONIC us (32 bits): a PROBE
				 * whose next_psn it covers, arriving from
				 * then on, shows our ACKs lost (spec 8.2):
				 * only the engine may answer that one */
};

struct mroce_engine_pub {
	void *ctx;
	/* The slot holds nothing: before a connection takes it and after
	 * it is gone. */
	void (*reset)(void *ctx, uint32_t slot);
	void (*rx)(void *ctx, const struct mroce_pub_rx *r);
	void (*tx)(void *ctx, const struct mroce_pub_tx *t);
	void (*ack)(void *ctx, const struct mroce_pub_ack *a);
};

/* Set (or, with NULL, clear) the hooks. Connections that exist already
 * are published in full at their next change of state. */
void mroce_engine_set_pub(struct mroce_engine *e,
			  const struct mroce_engine_pub *pub);

/* Bytes of engine memory per connection (for the scale report). */
size_t mroce_engine_conn_mem(const struct mroce_engine *e);

#endif /* MROCE_ENGINE_H */
