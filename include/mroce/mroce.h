/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * libmroce: the public, verbs-like application API of mroce.
 *
 * Objects follow ibverbs: a device, protection domains, memory regions,
 * completion queues, RC queue pairs, work requests and completions. The
 * prefix is `mrv_` ("mroce verbs") because the `mroce_` names of the same
 * verbs belong to the sans-IO engine (mroce/engine.h), which this library
 * drives; applications need only this header.
 *
 * Modes (struct mrv_dev_attr.mode):
 *   MRV_MODE_EMBEDDED  the engine runs inside the application, with one
 *                      packet I/O backend (kernel UDP sockets or AF_XDP).
 *                      Progress happens in the caller's thread, inside
 *                      mrv_poll_cq(), mrv_wait_cq(), mrv_post_*() and
 *                      mrv_progress(); nothing runs in the background.
 *   MRV_MODE_DAEMON    the engines run in the mroced daemon, shared by
 *                      many applications: verbs calls go over its UNIX
 *                      socket (daemon_sock), work requests and completions
 *                      through rings in shared memory. Only mode,
 *                      transport and daemon_sock count; the address,
 *                      backend, MTU, paths and RTO are the daemon's.
 *                      Memory: use mrv_alloc_mr() for every buffer a peer
 *                      reads or writes (a memfd the daemon maps too: zero
 *                      copy). mrv_reg_mr() of other memory is local-only
 *                      (copied through a bounce buffer at post and at
 *                      completion); REMOTE_* rights on it are -ENOTSUP.
 *                      If the daemon dies, outstanding work completes
 *                      with MRV_WC_WR_FLUSH_ERR and every later call
 *                      returns -ENOTCONN (never a hang).
 *
 * ERROR CONVENTION (the whole library, no exception): functions return 0,
 * or a count, on success and a NEGATIVE errno on failure. mrv_post_send()
 * and mrv_post_recv() additionally set *bad_wr to the first work request
 * that was not posted (earlier ones in the list were posted). This differs
 * from rdma-core, whose ibv_post_send() returns a positive errno: here
 * `if (err < 0)` is right for every call. Named codes used:
 *   -EINVAL       bad argument (NULL, bad size, unknown opcode, bad lkey)
 *   -ENOMEM       out of memory or of engine resources
 *   -EPERM        QP in the wrong state for the call or transition
 *   -EAGAIN       send/receive queue full (retry after polling the CQ)
 *   -EBUSY        object still in use (destroying a PD with MRs/QPs, ...)
 *   -ENOTSUP      feature not available (AF_XDP not built; daemon mode:
 *                 remote rights on mrv_reg_mr() memory)
 *   -ENOTCONN     daemon mode: the daemon is gone
 *   -ENOENT, -ECONNREFUSED  daemon mode: no mroced at daemon_sock
 *   -EACCES       daemon mode: mroced runs but this user may not use its
 *                 socket (join the socket's group, see mroced --sock-group)
 *   -ENOENT       embedded mode, AF_XDP backend: no XDP program attached
 *                 to the interface (mrocectl attach IFNAME)
 *   -ETIMEDOUT    mrv_wait_cq(), mrv_connect()/mrv_accept() timed out
 *   -ECONNREFUSED nobody listens at the rendezvous address
 *   -EPROTONOSUPPORT  the rendezvous peer uses the other transport
 *                 (MetaRoCE against RoCEv2)
 *   -EPROTO       the peer's rendezvous message is malformed
 *   -EADDRINUSE   the local address/ports are taken (another device)
 *   others        from the system call that failed
 * Failed work shows up as completions with a non-zero status (see
 * enum mrv_wc_status and mrv_wc_status_str()).
 *
 * The library never prints and never exits. Objects are not thread-safe:
 * use one device (and its objects) from one thread at a time.
 */
#ifndef MROCE_MROCE_H
#define MROCE_MROCE_H

#include <stddef.h>
#include <stdint.h>

#include "mroce/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library's version at run time ("MAJOR.MINOR.PATCH"); MROCE_VERSION
 * in mroce/version.h is the one the program was compiled against. */
const char *mroce_version(void);

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */
enum mrv_mode {
	MRV_MODE_EMBEDDED = 0,
	MRV_MODE_DAEMON = 1, /* served by mroced (daemon_sock) */
};

enum mrv_backend {
	MRV_BACKEND_UDP = 1,   /* kernel UDP sockets (any host) */
	MRV_BACKEND_AFXDP = 2, /* AF_XDP on ifname (needs root) */
};

enum mrv_transport {
	MRV_TRANSPORT_METAROCE = 1, /* multipath, selective retransmit */
	MRV_TRANSPORT_ROCEV2 = 2,   /* standard RoCEv2 RC (baseline) */
};

struct mrv_dev_attr {
	uint8_t mode;		 /* enum mrv_mode (0 = embedded) */
	uint8_t backend;	 /* enum mrv_backend (0 = UDP) */
	uint8_t transport;	 /* enum mrv_transport (0 = MetaRoCE) */
	uint8_t npaths;		 /* MetaRoCE paths per peer (0 = default 8) */
	const char *local_addr;	 /* numeric IPv4/IPv6 source address (needed) */
	const char *ifname;	 /* AF_XDP: interface; UDP: unused */
	uint32_t queue;		 /* AF_XDP: receive queue (0) */
	uint16_t udp_port;	 /* 0 = 4792 (MetaRoCE) / 4791 (RoCEv2); both
				  * ends of a deployment must agree */
	uint16_t mtu;		 /* payload bytes per packet; 0 = 4096 (UDP),
				  * the largest power of two fitting the
				  * interface MTU (AF_XDP: 1500 -> 1024) */
	uint64_t seed;		 /* 0 = random; fixed only for reproducible
				  * tests (ISNs and keys become guessable) */
	const char *daemon_sock; /* daemon mode: mroced's control socket
				  * (NULL = /run/mroce/mroced.sock) */
	uint32_t rto_min_us;	 /* minimum retransmission timeout (0 = the
				  * engine's 200 us, tuned for a dedicated
				  * core; processes sharing busy cores see
				  * millisecond scheduling delays and want
				  * more, or they retransmit spuriously) */
	uint32_t flags;		 /* MRV_DEV_* (embedded mode), 0 = none */
	uint32_t link_mbps;	 /* embedded mode: the line rate the engine
				  * paces at and shares out (Mbit/s); 0 =
				  * the interface's speed (AF_XDP: ifname;
				  * UDP: the one holding local_addr), or
				  * 100 Gbit/s when it reports none (veth,
				  * loopback). Daemon mode: mroced's
				  * --link-gbps */
	uint32_t queue_us;	 /* embedded mode: the standing queue (us)
				  * a MetaRoCE path may keep, judged by each
				  * round trip's smallest RTT sample (100
				  * keeps loaded round trips near 150 us on
				  * the namespace fabric). 0 = no bound but
				  * the 10 ms scheduling-noise allowance, the
				  * default: on a 2-core host the short queue
				  * costs about a fifth of the goodput.
				  * Daemon mode: mroced's --queue-us.
				  * docs/engine.md, "Short queues" */
};

/* struct mrv_dev_attr.flags */
#define MRV_DEV_NO_ACK_OFFLOAD 0x1 /* AF_XDP: the XDP program answers
				    * nothing for this device's MetaRoCE
				    * connections; every ACK is the
				    * engine's (docs/xdp.md) */

struct mrv_device;

/* Opens a device; *out is set on success. */
int mrv_open_device(const struct mrv_dev_attr *attr, struct mrv_device **out);
/* Fails with -EBUSY while PDs or CQs exist. */
int mrv_close_device(struct mrv_device *dev);

/* Drives the device once without blocking: receive, timers, transmit.
 * Returns the number of packets moved (0 when idle) or -errno. Polling a
 * CQ does this already; call it when waiting on memory instead. */
int mrv_progress(struct mrv_device *dev);

/* Payload bytes per packet (the path MTU of the transport). */
int mrv_device_mtu(const struct mrv_device *dev);

/* The line rate (Mbit/s) the device's engine paces at and shares out
 * among its senders (struct mrv_dev_attr.link_mbps). */
int mrv_device_link_mbps(const struct mrv_device *dev);

/* A file descriptor that becomes readable when packets arrive (for an
 * application's own poll loop; timers still need mrv_progress()). Daemon
 * mode: readable when completions arrive (the daemon progresses by
 * itself). */
int mrv_device_fd(const struct mrv_device *dev);

/* Counters of the engine and the I/O backend (a stable subset). */
struct mrv_dev_stats {
	uint64_t tx_pkts, rx_pkts;	      /* packets on the wire */
	uint64_t tx_data_pkts, rx_data_pkts;  /* data packets */
	uint64_t retransmits, rx_dup, rx_ooo; /* recovery, reordering */
	uint64_t ce_marks, path_rerolls, rto_fires;
	uint64_t rx_malformed, rx_bad_rkey;
	uint64_t io_tx_full, io_tx_errors; /* backend pressure */
};
int mrv_query_stats(const struct mrv_device *dev, struct mrv_dev_stats *st);

/* ------------------------------------------------------------------ */
/* Protection domains and memory regions                                */
/* ------------------------------------------------------------------ */
struct mrv_pd;

int mrv_alloc_pd(struct mrv_device *dev, struct mrv_pd **out);
/* -EBUSY while MRs or QPs of the PD exist. */
int mrv_dealloc_pd(struct mrv_pd *pd);

enum mrv_access {
	MRV_ACCESS_LOCAL_WRITE = 1 << 0,
	MRV_ACCESS_REMOTE_WRITE = 1 << 1,
	MRV_ACCESS_REMOTE_READ = 1 << 2,
};

struct mrv_mr {
	void *addr; /* first byte */
	size_t length;
	uint32_t lkey;	 /* for local SGEs */
	uint32_t rkey;	 /* for the peer's WRITE/READ */
	uint32_t access; /* enum mrv_access bits */
	struct mrv_pd *pd;
	int fd;	    /* mrv_alloc_mr: the memfd; else -1 */
	void *priv; /* library-private */
};

/* Registers application memory [addr, addr+len). The memory must stay
 * valid until mrv_dereg_mr(). Daemon mode: local access only (a bounce
 * buffer is copied at post and completion); MRV_ACCESS_REMOTE_* returns
 * -ENOTSUP: allocate remotely accessible memory with mrv_alloc_mr(). */
int mrv_reg_mr(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
	       struct mrv_mr **out);
/* Allocates len bytes (rounded up to pages, zeroed) of shareable memory
 * (memfd + mmap) and registers it; mr->addr is page aligned. Freed by
 * mrv_dereg_mr(). Daemon mode: the daemon maps the same pages (zero
 * copy). */
int mrv_alloc_mr(struct mrv_pd *pd, size_t len, uint32_t access,
		 struct mrv_mr **out);
int mrv_dereg_mr(struct mrv_mr *mr);

/* ------------------------------------------------------------------ */
/* Completion queues                                                    */
/* ------------------------------------------------------------------ */
struct mrv_cq;

int mrv_create_cq(struct mrv_device *dev, int depth, struct mrv_cq **out);
/* -EBUSY while a QP uses it. */
int mrv_destroy_cq(struct mrv_cq *cq);

enum mrv_wc_status {
	MRV_WC_SUCCESS = 0,
	MRV_WC_LOC_LEN_ERR,
	MRV_WC_LOC_QP_OP_ERR,
	MRV_WC_LOC_PROT_ERR,
	MRV_WC_WR_FLUSH_ERR,
	MRV_WC_REM_INV_REQ_ERR,
	MRV_WC_REM_ACCESS_ERR,
	MRV_WC_REM_OP_ERR,
	MRV_WC_RETRY_EXC_ERR,
	MRV_WC_RNR_RETRY_EXC_ERR,
	MRV_WC_GENERAL_ERR,
};
const char *mrv_wc_status_str(enum mrv_wc_status s);

enum mrv_wc_opcode {
	MRV_WC_SEND = 0,
	MRV_WC_RDMA_WRITE,
	MRV_WC_RDMA_READ,
	MRV_WC_RECV,
	MRV_WC_RECV_RDMA_WITH_IMM,
};

enum mrv_wc_flags {
	MRV_WC_WITH_IMM = 1 << 0,
};

struct mrv_wc {
	uint64_t wr_id;
	enum mrv_wc_status status;
	enum mrv_wc_opcode opcode;
	uint32_t byte_len; /* receives: bytes received */
	uint32_t imm_data; /* valid with MRV_WC_WITH_IMM */
	uint32_t qp_num;
	uint32_t wc_flags; /* enum mrv_wc_flags */
};

/* Drives progress, then returns up to n completions (0 = none yet) or
 * -errno. Embedded mode never blocks; a poll that returns completions
 * receives but does not transmit: the ACKs it owes leave with the next
 * call into the library (post, poll, wait or mrv_progress), behind the
 * reply when that call posts one, so that a reply is not delayed by the
 * ACK of its request. An application that sleeps on mrv_device_fd()
 * calls mrv_progress() before (it does for the timers anyway). Daemon
 * mode: reads the CQ's shared ring; an
 * empty poll yields the CPU (sched_yield) to the daemon, and once the
 * ring stayed empty for 20 us while sends of this CQ are outstanding it
 * naps on the completion doorbell for at most 200 us (less as soon as a
 * completion arrives), so that a polling loop leaves the core to the
 * daemon. */
int mrv_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc);

/* Blocks until the CQ has a completion or timeout_ms passes (-1 = no
 * limit), driving progress meanwhile and sleeping in poll() on the device
 * fd between timers. Returns 1 when a completion is ready (fetch it with
 * mrv_poll_cq), -ETIMEDOUT otherwise. This replaces ibverbs'
 * req_notify_cq + get_cq_event pair. Daemon mode: sleeps on the
 * completion eventfd and the control socket; -ENOTCONN once the daemon
 * is gone and its flushed completions were taken. */
int mrv_wait_cq(struct mrv_cq *cq, int timeout_ms);

/* ------------------------------------------------------------------ */
/* Queue pairs (RC)                                                     */
/* ------------------------------------------------------------------ */
struct mrv_qp;

struct mrv_qp_init_attr {
	struct mrv_cq *send_cq, *recv_cq;
	uint32_t max_send_wr; /* 0 = 128 */
	uint32_t max_recv_wr; /* 0 = 128 */
};

int mrv_create_qp(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
		  struct mrv_qp **out);
int mrv_destroy_qp(struct mrv_qp *qp);
uint32_t mrv_qp_num(const struct mrv_qp *qp);

enum mrv_qp_state {
	MRV_QPS_RESET = 0,
	MRV_QPS_INIT,
	MRV_QPS_RTR,
	MRV_QPS_RTS,
	MRV_QPS_ERR,
};
const char *mrv_qp_state_str(enum mrv_qp_state s);

enum mrv_qp_attr_mask {
	MRV_QP_STATE = 1 << 0,
	MRV_QP_ACCESS_FLAGS = 1 << 1, /* INIT: remote rights granted */
	MRV_QP_DEST = 1 << 2,	      /* RTR: dest_addr + dest_qp_num */
	MRV_QP_RQ_PSN = 1 << 3,	      /* RTR (RoCEv2): expected PSN */
	MRV_QP_SQ_PSN = 1 << 4,	      /* RTS (RoCEv2): first send PSN */
};

struct mrv_qp_attr {
	enum mrv_qp_state qp_state;
	uint32_t qp_access_flags; /* enum mrv_access bits */
	char dest_addr[46];	  /* numeric address of the peer device */
	uint32_t dest_qp_num;
	uint32_t rq_psn, sq_psn; /* 24-bit */
};

/* ibverbs transitions RESET->INIT->RTR->RTS, any->ERR, any->RESET; any
 * other returns -EPERM and changes nothing. */
int mrv_modify_qp(struct mrv_qp *qp, const struct mrv_qp_attr *attr,
		  uint32_t mask);
int mrv_query_qp(struct mrv_qp *qp, struct mrv_qp_attr *attr);

/* Paths of the QP's connection (MetaRoCE: one per UDP source port;
 * RoCEv2: index 0 is the QP's fixed port). -ENOENT past the last one. */
struct mrv_path_info {
	uint16_t sport;
	int alive;
	uint32_t srtt_us, cwnd_pkts, inflight;
	uint64_t tx_pkts, retransmits, ce_marks;
};
int mrv_query_path(struct mrv_qp *qp, int idx, struct mrv_path_info *out);

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
struct mrv_sge {
	uint64_t addr; /* inside the MR of lkey */
	uint32_t length;
	uint32_t lkey;
};

enum mrv_wr_opcode {
	MRV_WR_SEND = 0,
	MRV_WR_SEND_WITH_IMM,
	MRV_WR_RDMA_WRITE,
	MRV_WR_RDMA_WRITE_WITH_IMM,
	MRV_WR_RDMA_READ,
};

enum mrv_send_flags {
	MRV_SEND_SIGNALED = 1 << 0, /* completion on success too */
	MRV_SEND_SOLICITED = 1 << 1,
};

struct mrv_send_wr {
	struct mrv_send_wr *next; /* NULL-terminated list */
	uint64_t wr_id;
	struct mrv_sge *sg_list;
	int num_sge; /* 0 or 1 in this version */
	enum mrv_wr_opcode opcode;
	uint32_t send_flags;  /* enum mrv_send_flags */
	uint32_t imm_data;    /* *_WITH_IMM */
	uint64_t remote_addr; /* WRITE / READ */
	uint32_t rkey;
};

struct mrv_recv_wr {
	struct mrv_recv_wr *next;
	uint64_t wr_id;
	struct mrv_sge *sg_list;
	int num_sge; /* 0 or 1 */
};

/* Posts the list in order. 0, or -errno with *bad_wr at the first request
 * not posted: -EPERM (QP not in RTS; receives: before INIT), -EAGAIN
 * (queue full), -EINVAL (bad lkey, length, num_sge or opcode). */
int mrv_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
		  struct mrv_send_wr **bad_wr);
int mrv_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
		  struct mrv_recv_wr **bad_wr);

/* ------------------------------------------------------------------ */
/* Connection helper: TCP rendezvous (like rdma_cm / perftest)          */
/* ------------------------------------------------------------------ */
/*
 * Each side sends, over one TCP connection, its device address, QP number,
 * initial PSN, transport and one optional buffer (addr, rkey, length); then
 * both move their QP RESET->INIT->RTR, agree over TCP that both are in RTR,
 * and move to RTS. The QP must be in RESET. The TCP socket stays open and
 * belongs to the caller (mrv_conn_info.sock): useful for out-of-band
 * barriers; close() it when done.
 */
struct mrv_conn_param {
	uint64_t buf_addr; /* buffer offered to the peer (0 = none) */
	uint64_t buf_len;
	uint32_t buf_rkey;
	uint32_t access; /* QP remote rights (0 = WRITE|READ) */
	int timeout_ms;	 /* whole exchange (0 = 10000) */
};

struct mrv_conn_info {
	char addr[46]; /* peer's device address */
	uint32_t qp_num;
	uint32_t psn;
	uint64_t buf_addr;
	uint64_t buf_len;
	uint32_t buf_rkey;
	int sock; /* the TCP rendezvous socket (caller's) */
};

struct mrv_listener;

/* Listens on host:port (host NULL = all addresses of the device's family:
 * IPv4 or IPv6, as its local address). */
int mrv_listen(struct mrv_device *dev, const char *host, uint16_t port,
	       struct mrv_listener **out);
/* The bound TCP port (useful with port 0). */
int mrv_listener_port(const struct mrv_listener *l);
void mrv_listener_close(struct mrv_listener *l);

int mrv_accept(struct mrv_listener *l, struct mrv_qp *qp,
	       const struct mrv_conn_param *local,
	       struct mrv_conn_info *remote);
int mrv_connect(struct mrv_qp *qp, const char *host, uint16_t port,
		const struct mrv_conn_param *local,
		struct mrv_conn_info *remote);

#ifdef __cplusplus
}
#endif

#endif /* MROCE_MROCE_H */
