/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: the protocol between libmroce's daemon mode (user/lib/daemon.c)
 * and the mroced daemon (user/mroced/mroced.c). Its one client is
 * user/lib/dclient.c (also used by `mrocectl daemon`). Both sides are
 * built from one tree, but a running daemon may meet an older library:
 * every message carries MRD_VERSION and a mismatch is answered with
 * -EPROTO.
 *
 * Control: AF_UNIX SOCK_SEQPACKET (message boundaries, SCM_RIGHTS). The
 * application sends one struct mrd_req, the daemon answers with exactly one
 * struct mrd_rep carrying the same op and seq and err = 0 or a negative
 * errno. Descriptors travel with SCM_RIGHTS:
 *   HELLO   reply: [0] the shared-memory memfd, [1] the submission
 *           doorbell (eventfd the app writes), [2] the completion doorbell
 *           (eventfd the daemon writes)
 *   REG_MR  request: [0] the memfd holding the region (sealed against
 *           shrinking, so the daemon's mapping can never fault)
 * Requests other than STATUS/APP_INFO need a HELLO first. A request whose
 * size is not sizeof(struct mrd_req), whose op is unknown or whose handle
 * is not the sender's own gets an error reply and bumps a counter in the
 * daemon; the session stays usable.
 *
 * Data: one shared memory region per session (struct mrd_shm at offset 0):
 *   a submission ring (app produces, daemon consumes) of struct mrd_sqe:
 *     post_send / post_recv descriptors, no system call per request;
 *   one completion ring per CQ (daemon produces, app consumes) of struct
 *     mrd_cqe, placed in the region's CQ area at CREATE_CQ time.
 * Rings are single-producer/single-consumer with free-running 32-bit
 * indexes: the producer writes an entry, then stores head with release;
 * the consumer loads head with acquire, reads entries, then stores tail
 * with release (the producer loads tail with acquire before reusing a
 * slot). head - tail is the fill level and never exceeds the size.
 *
 * Doorbells, as io_uring's SQ_NEED_WAKEUP: a side that is about to sleep
 * sets its flag (daemon_sleeping / app_waiting), then re-checks its ring,
 * then sleeps on its eventfd. The other side publishes ring entries, then
 * reads the flag and writes the eventfd only if the flag is set. Both the
 * flag stores/loads and the index stores/loads around them are seq_cst,
 * so at least one of the two sees the other (no lost wake-up), and the
 * fast path costs no system call while both sides are busy.
 * One more wake-up: a completion ring can fill up while the application
 * does not poll; the daemon then leaves the rest in the engine and may
 * sleep. An application that takes entries from a ring that was full
 * writes the submission doorbell if the daemon sleeps; the daemon, before
 * sleeping, re-checks the rings it left full (same seq_cst pairing).
 *
 * The daemon never trusts the shared region: it copies each entry before
 * looking at it, checks every handle against the session's own objects
 * and treats an impossible index (head - tail > size) as a fatal session
 * error.
 */
#ifndef MROCE_COMMON_IPC_H
#define MROCE_COMMON_IPC_H

#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>

#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/mroce.h"

/* 2: STATUS carries the engine counter state_errors (one more in eng[]);
 * QUERY_PATH answers with struct mrv_path_info.
 * 3: replies are 1024 bytes; STATUS carries the loop counters, APP_INFO
 * the session's queue depths and counters of both sides; the shared
 * header holds the application's counters. */
#define MRD_VERSION 3
#define MRD_DEFAULT_SOCK "/run/mroce/mroced.sock"
#define MRD_SHM_MAGIC 0x6d726f63u /* "mroc" */

/* Region geometry (fixed by the daemon, reported in the HELLO reply). */
#define MRD_SQ_ENTRIES 4096u	       /* power of two */
#define MRD_CQ_AREA (32u << 20)	       /* bytes for completion rings */
#define MRD_CQ_MAX_ENTRIES (1u << 18)  /* per CQ ring */

enum mrd_op {
	MRD_OP_HELLO = 1,
	MRD_OP_ALLOC_PD,
	MRD_OP_DEALLOC_PD,
	MRD_OP_REG_MR,
	MRD_OP_DEREG_MR,
	MRD_OP_CREATE_CQ,
	MRD_OP_DESTROY_CQ,
	MRD_OP_CREATE_QP,
	MRD_OP_DESTROY_QP,
	MRD_OP_MODIFY_QP,
	MRD_OP_QUERY_QP,
	MRD_OP_QUERY_PATH,
	MRD_OP_QUERY_STATS,
	MRD_OP_STATUS,	 /* daemon-wide counts + one engine's stats */
	MRD_OP_APP_INFO, /* one session's counts, by index */
	MRD_OP_MAX,
};

/* ------------------------------------------------------------------ */
/* Control messages                                                     */
/* ------------------------------------------------------------------ */
struct mrd_req {
	uint16_t version; /* MRD_VERSION */
	uint16_t op;	  /* enum mrd_op */
	uint32_t seq;	  /* echoed in the reply */
	union {
		struct {
			uint8_t transport; /* enum mrv_transport */
			uint8_t pad[3];
			uint32_t pid; /* informational */
		} hello;
		struct {
			uint32_t pd;
		} pd;
		struct {
			uint32_t pd;
			uint32_t access; /* enum mrv_access bits */
			uint64_t len;	 /* bytes from offset 0 of the memfd */
			uint64_t iova;	 /* the application's address */
		} reg_mr;
		struct {
			uint32_t lkey;
		} dereg_mr;
		struct {
			uint32_t depth;
		} create_cq;
		struct {
			uint32_t cq;
		} cq;
		struct {
			uint32_t pd, send_cq, recv_cq;
			uint32_t max_send_wr, max_recv_wr;
		} create_qp;
		struct {
			uint32_t qpn;
			int32_t idx; /* QUERY_PATH */
		} qp;
		struct {
			uint32_t qpn, mask, state, access;
			uint32_t dest_qpn, rq_psn, sq_psn;
			char dest_addr[48]; /* NUL-terminated */
		} modify_qp;
		struct {
			uint8_t transport; /* STATUS: which engine */
			uint8_t pad[3];
			uint32_t index; /* APP_INFO */
		} status;
		uint8_t raw[120];
	} u;
};
_Static_assert(sizeof(struct mrd_req) == 128, "mrd_req size");

/* QUERY_PATH and QUERY_STATS answer with the API's own structs
 * (mroce.h), filled by mroce_path_info_fill() and mroce_dev_stats_fill()
 * (devstats.h) exactly as embedded mode fills them. */
_Static_assert(sizeof(struct mrv_path_info) == 48, "mrv_path_info size");
_Static_assert(sizeof(struct mrv_dev_stats) == 14 * 8, "mrv_dev_stats size");

/* Daemon-side counters of refused input, reported by STATUS. */
#define MRD_CTL_COUNTERS(X)                                                    \
	X(ctl_requests) X(ctl_bad_size) X(ctl_bad_version) X(ctl_bad_op)       \
	X(ctl_bad_handle) X(ctl_no_hello) X(ctl_bad_arg) X(sq_entries)         \
	X(sq_bad_entries) X(sessions_reaped)
enum {
#define MRD_X_CTL_IDX(n) MRD_CTL_##n,
	MRD_CTL_COUNTERS(MRD_X_CTL_IDX)
#undef MRD_X_CTL_IDX
	MRD_CTL_NCOUNTERS
};

/* mroced's event loop (STATUS: loop[]): how its one thread spends its
 * time. A round is one pass over every session's rings and the endpoint;
 * it spins (epoll with a zero timeout now and then, sched_yield after an
 * idle round) while busy and sleeps in epoll after --spin-us without
 * work. docs/architecture.md, "Counters of daemon mode", says what each
 * means. */
#define MRD_LOOP_COUNTERS(X)                                                   \
	X(rounds) X(idle_rounds) X(yields) X(epoll_polls) X(sleeps)            \
	X(sleep_aborts) X(wakeups_event) X(wakeups_timer) X(sleep_us)          \
	X(handovers)
enum {
#define MRD_X_LOOP_IDX(n) MRD_LOOP_##n,
	MRD_LOOP_COUNTERS(MRD_X_LOOP_IDX)
#undef MRD_X_LOOP_IDX
	MRD_LOOP_NCOUNTERS
};

/* One session, counted by the daemon (APP_INFO: sess[]). */
#define MRD_SESS_COUNTERS(X)                                                   \
	X(sq_entries) X(sq_batches) X(sq_stalls) X(backlogged) X(backlog_max)  \
	X(cqes) X(cq_batches) X(cq_ring_full) X(cq_doorbells) X(kicks)         \
	X(synth_max)
enum {
#define MRD_X_SESS_IDX(n) MRD_SESS_##n,
	MRD_SESS_COUNTERS(MRD_X_SESS_IDX)
#undef MRD_X_SESS_IDX
	MRD_SESS_NCOUNTERS
};

/* One session, counted by the application's library in the shared
 * header (struct mrd_shm.app); the daemon only copies them into APP_INFO
 * (app[]) and never acts on them. */
#define MRD_APP_COUNTERS(X)                                                    \
	X(posts) X(post_ring_full) X(sq_doorbells) X(cq_kicks) X(polls)        \
	X(polls_empty) X(naps) X(nap_doorbells) X(bytes_copied)
enum {
#define MRD_X_APP_IDX(n) MRD_APP_##n,
	MRD_APP_COUNTERS(MRD_X_APP_IDX)
#undef MRD_X_APP_IDX
	MRD_APP_NCOUNTERS
};

struct mrd_status {
	uint32_t pid;
	uint32_t apps, pds, mrs, cqs, qps;
	uint8_t backend; /* enum mrv_backend */
	uint8_t family;
	uint16_t mtu;
	uint8_t local[16];
	char ifname[16];
	uint64_t uptime_ms;
	uint64_t ctl[MRD_CTL_NCOUNTERS];
	uint64_t io[MROCE_IO_NSTATS];	  /* struct mroce_io_stats, in order */
	uint64_t eng[MROCE_ENGINE_NSTATS]; /* mroce_engine_stats of the asked
					    * engine, in its order */
	uint64_t loop[MRD_LOOP_NCOUNTERS];
};

struct mrd_app_info {
	uint32_t pid, session;
	uint8_t transport;
	uint8_t pad[3];
	uint32_t pds, mrs, cqs, qps;
	/* Queue depths now: work requests the daemon holds for the engine
	 * (all QPs), completions it holds for full rings (all CQs), entries
	 * in the submission ring not taken yet. */
	uint32_t backlog, synth, sq_fill, pad2;
	uint64_t sess[MRD_SESS_NCOUNTERS];
	uint64_t app[MRD_APP_NCOUNTERS];
};

struct mrd_rep {
	uint16_t version;
	uint16_t op;
	uint32_t seq;
	int32_t err; /* 0 or -errno */
	uint32_t pad;
	union {
		struct {
			uint32_t session;
			uint8_t family;
			uint8_t transport;
			uint16_t mtu;
			uint8_t local[16];
			uint64_t shm_size;
			uint32_t sq_off, sq_entries;
			uint32_t cq_area_off, cq_area_size;
			uint64_t link_bps; /* the engines' line rate */
		} hello;
		struct {
			uint32_t handle;
		} pd;
		struct {
			uint32_t lkey, rkey;
		} mr;
		struct {
			uint32_t cq;
			uint32_t ring_off; /* struct mrd_ring_hdr, entries */
			uint32_t entries;  /* power of two */
		} cq;
		struct {
			uint32_t qpn;
		} qp;
		struct {
			uint32_t state, access, dest_qpn, rq_psn, sq_psn;
			char dest_addr[48];
		} qattr;
		struct mrv_path_info path;
		struct mrv_dev_stats stats;
		struct mrd_status status;
		struct mrd_app_info app;
		uint8_t raw[1008];
	} u;
};
_Static_assert(sizeof(struct mrd_rep) == 1024, "mrd_rep size");
_Static_assert(sizeof(struct mrd_status) <= 1008, "mrd_status size");
_Static_assert(sizeof(struct mrd_app_info) <= 1008, "mrd_app_info size");

/* ------------------------------------------------------------------ */
/* Shared memory                                                        */
/* ------------------------------------------------------------------ */
/* Indexes of one ring, each on its own cache line (producer writes head,
 * consumer writes tail). */
struct mrd_ring_hdr {
	alignas(64) _Atomic uint32_t head;
	alignas(64) _Atomic uint32_t tail;
};
_Static_assert(sizeof(struct mrd_ring_hdr) == 128, "ring hdr size");

struct mrd_shm {
	uint32_t magic; /* MRD_SHM_MAGIC */
	uint32_t version;
	/* Set by the daemon before it sleeps; the app writes the submission
	 * doorbell after posting when it sees it set. */
	alignas(64) _Atomic uint32_t daemon_sleeping;
	/* Set by the app before it sleeps (mrv_wait_cq) or for good once it
	 * asked for mrv_device_fd(); the daemon then writes the completion
	 * doorbell after adding completions. */
	alignas(64) _Atomic uint32_t app_waiting;
	/* The CPU the application last waited on (an empty poll), -1 before
	 * that: the daemon gives its CPU to an application waiting on the
	 * same one before it transmits (loop.c). Same writer and cache line
	 * as app_waiting. */
	_Atomic int32_t app_cpu;
	struct mrd_ring_hdr sq; /* entries at hello.sq_off */
	/* Written by the application only (relaxed), read by the daemon for
	 * APP_INFO: informational, never trusted. */
	alignas(64) _Atomic uint64_t app[MRD_APP_NCOUNTERS];
};
_Static_assert(sizeof(struct mrd_shm) <= 4096, "shared header fits its page");

enum mrd_sqe_kind {
	MRD_SQE_SEND = 1,
	MRD_SQE_RECV = 2,
};

/* One work request (post_send or post_recv). */
struct mrd_sqe {
	uint64_t wr_id;
	uint64_t sge_addr;    /* application address, inside lkey's MR */
	uint64_t remote_addr; /* WRITE / READ */
	uint32_t qpn;	      /* QP handle (the QP number) */
	uint32_t sge_len;
	uint32_t lkey;
	uint32_t rkey;
	uint32_t imm;
	uint32_t send_flags; /* enum mrv_send_flags */
	uint8_t kind;	     /* enum mrd_sqe_kind */
	uint8_t opcode;	     /* enum mrv_wr_opcode */
	uint8_t num_sge;     /* 0 or 1 */
	uint8_t pad[13];
};
_Static_assert(sizeof(struct mrd_sqe) == 64, "mrd_sqe size");

/* One completion (struct mrv_wc with fixed-size fields). */
struct mrd_cqe {
	uint64_t wr_id;
	uint32_t status, opcode, byte_len, imm, qpn, flags;
};
_Static_assert(sizeof(struct mrd_cqe) == 32, "mrd_cqe size");

#endif /* MROCE_COMMON_IPC_H */
