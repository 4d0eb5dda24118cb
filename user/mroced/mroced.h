/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: the state of mroced and what its files share.
 *
 *   main.c     options, start-up, readiness (sd_notify), the exit order
 *   ctl.c      control socket: accept, read a request, dispatch, reply
 *   session.c  a session's verbs objects (PD, MR, CQ, QP) and its end
 *   rings.c    data path: submission ring -> engine (with a per-QP
 *              backlog), engine -> completion rings
 *   loop.c     the event loop: pump, adaptive sleep, signals, flush on
 *              shutdown
 *   status.c   STATUS, APP_INFO and QUERY_STATS answers, the exit log
 *
 * Every session object lives in the daemon's memory; the shared region
 * holds only the rings, which the daemon never trusts (user/ipc/ipc.h).
 * One thread: nothing here locks. This is a tool: it logs to stderr
 * (nothing per packet).
 */
#ifndef MROCED_H
#define MROCED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../ipc/ipc.h"
#include "../endpoint/endpoint.h"

/* ------------------------------------------------------------------ */
/* Logging                                                              */
/* ------------------------------------------------------------------ */
void mroced_log(const char *lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define pr_err(...) mroced_log("error: ", __VA_ARGS__)
#define pr_info(...) mroced_log("", __VA_ARGS__)
#define pr_dbg(...)                                                            \
	do {                                                                   \
		if (mroced.verbose)                                            \
			mroced_log("", __VA_ARGS__);                           \
	} while (0)

/* ------------------------------------------------------------------ */
/* State                                                                */
/* ------------------------------------------------------------------ */
enum ev_kind { EV_LISTEN = 1, EV_SIGNAL, EV_EP, EV_SOCK, EV_KICK };

/* What an epoll event points at. */
struct evtag {
	enum ev_kind kind;
	struct sess *s;
};

/* A protection domain of a session: only counts what hangs on it. */
struct sess_pd {
	uint32_t handle;
	int nmrs, nqps;
	struct sess_pd *next;
};

/* A memory region: the application's memfd, mapped here too. */
struct sess_mr {
	uint32_t lkey;
	struct sess_pd *pd;
	void *map;
	size_t len;
	struct sess_mr *next;
};

/* A completion queue: the engine's CQ and the completion ring in the
 * session's shared region that the daemon fills. */
struct sess_cq {
	int id;		/* engine CQ id = handle */
	uint32_t off;	/* ring offset in the session's region */
	uint32_t bytes; /* ring size in the region */
	uint32_t entries;
	struct mrd_ring_hdr *hdr;
	struct mrd_cqe *ring;
	struct mrd_cqe *synth; /* daemon-made completions, delivered first */
	int nsynth, capsynth;  /* capsynth = entries: the bound (rings.c) */
	bool blocked; /* the ring was full at the last delivery */
	int nqps;
	struct sess_cq *next;
};

/* A queue pair: the engine's QP and the work it could not take yet. */
struct sess_qp {
	uint32_t qpn;
	struct sess_pd *pd;
	struct sess_cq *scq, *rcq;
	int peer; /* engine peer id after RTR, else -1 */
	char dest[48];
	struct mrd_sqe *bl; /* backlog: WRs the engine refused with -EAGAIN */
	int bl_head, bl_n, bl_cap;
	int bl_max; /* the bound: max_send_wr + max_recv_wr (rings.c) */
	struct sess_qp *next;
};

/* One application connection (one control socket). */
struct sess {
	int id;
	int fd;
	pid_t pid;
	bool hello;
	bool dead;
	uint8_t transport;
	struct mroce_engine *e;
	int shm_fd, kick_fd, cq_fd;
	void *shm;
	size_t shm_size;
	struct mrd_shm *hdr;
	struct mrd_sqe *sq;
	uint32_t sq_entries;
	uint32_t cq_area_off, cq_area_size;
	uint32_t next_pd;
	struct sess_pd *pds;
	struct sess_mr *mrs;
	struct sess_cq *cqs; /* sorted by off */
	struct sess_qp *qps;
	struct sess_qp *last_qp;
	int npds, nmrs, ncqs, nqps;
	bool backlog; /* some QP has a backlog */
	bool stalled; /* the ring's next entry waits for room (rings.c) */
	uint64_t c[MRD_SESS_NCOUNTERS];
	struct evtag tag_sock, tag_kick;
	struct sess *next;
};

/* The daemon: one endpoint, its sessions, the loop's descriptors. */
struct mroced {
	struct mroce_ep *ep;
	int epfd, lfd, sigfd;
	const char *sock_path;
	struct sess *sessions;
	int next_id;
	uint64_t start_ns;
	uint64_t spin_ns;
	uint8_t backend;
	uint8_t family;
	uint8_t local[16];
	char ifname[16];
	bool attached;
	bool verbose;
	int sock_mode; /* chmod of the socket, -1 = leave (umask) */
	int sock_gid;  /* chown of the socket to this group, -1 = leave */
	uint64_t ctl[MRD_CTL_NCOUNTERS];
	uint64_t loop[MRD_LOOP_NCOUNTERS];
	struct evtag tag_listen, tag_signal, tag_ep;
};

extern struct mroced mroced;

static inline uint64_t now_ns(void)
{
	return mroce_ep_now();
}

/* main.c: systemd's readiness notification ("READY=1", "STOPPING=1") */
void mroced_notify(const char *state);

/* ctl.c */
int ep_add(int fd, struct evtag *t);
void accept_one(void);
bool handle_sock(struct sess *s);

/* session.c */
struct sess_qp *find_qp(struct sess *s, uint32_t qpn);
int do_hello(struct sess *s, const struct mrd_req *q, struct mrd_rep *r,
	     int fds[3], int *nfds);
int do_alloc_pd(struct sess *s, struct mrd_rep *r);
int do_dealloc_pd(struct sess *s, const struct mrd_req *q);
int do_reg_mr(struct sess *s, const struct mrd_req *q, struct mrd_rep *r,
	      int fd);
int do_dereg_mr(struct sess *s, const struct mrd_req *q);
int do_create_cq(struct sess *s, const struct mrd_req *q, struct mrd_rep *r);
int do_destroy_cq(struct sess *s, const struct mrd_req *q);
int do_create_qp(struct sess *s, const struct mrd_req *q, struct mrd_rep *r);
int do_destroy_qp(struct sess *s, const struct mrd_req *q);
int do_modify_qp(struct sess *s, const struct mrd_req *q);
int do_query_qp(struct sess *s, const struct mrd_req *q, struct mrd_rep *r);
int do_query_path(struct sess *s, const struct mrd_req *q, struct mrd_rep *r);
void sess_close(struct sess *s);
void sess_reap(struct sess *s, const char *why);

/* rings.c */
int deliver(struct sess *s);
int run_backlog(struct sess *s, uint64_t now);
int drain_sq(struct sess *s, uint64_t now, int budget);
/* Everything the ring holds that there is room for. */
void drain_sq_all(struct sess *s, uint64_t now);
bool sq_pending(const struct sess *s);
void flush_backlog(struct sess *s, struct sess_qp *q);

/* loop.c: runs until a signal; 0 clean shutdown, 1 epoll failed */
int mroced_run(void);

/* status.c */
int do_status(const struct mrd_req *q, struct mrd_rep *r);
int do_app_info(const struct mrd_req *q, struct mrd_rep *r);
void do_query_stats(struct sess *s, struct mrd_rep *r);
void log_queue_stats(void);

#endif /* MROCED_H */
