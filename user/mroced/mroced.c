// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroced - the mroce daemon: one endpoint (packet I/O backend + a MetaRoCE
 * engine + a RoCEv2 engine, user/endpoint/endpoint.h) shared by many
 * applications. Applications reach it through libmroce's daemon mode
 * (user/lib/daemon.c); the protocol is in user/common/ipc.h.
 *
 * One thread, one loop:
 *   drain every session's submission ring into the engine (work requests
 *   the engine cannot take yet wait in a per-QP backlog, in order) ->
 *   pump the endpoint (receive, timers, transmit) -> move engine
 *   completions into the sessions' completion rings (doorbell if the app
 *   sleeps) -> control requests and signals from epoll.
 * Adaptive polling: while there is work the loop spins (epoll with a zero
 * timeout to see control traffic, at most every 20 us while busy or
 * spinning: the system call costs more than a round); after spin_us
 * without work it announces that it sleeps in every session's shared
 * header, re-checks the rings and sleeps in epoll until a packet, a
 * doorbell, a control message, a signal or the engines' next timer.
 *
 * A session ends when its socket hangs up (the application exited or
 * died): its QPs, CQs, MRs and shared memory are released at once.
 * SIGINT/SIGTERM: every QP moves to ERR (outstanding work completes with
 * WR_FLUSH_ERR into the applications' rings), sessions are closed, what
 * --attach attached is detached, the socket is unlinked, exit 0.
 *
 * This is a tool: it logs to stderr (nothing per packet).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "../common/devstats.h"
#include "../common/ipc.h"
#include "../endpoint/endpoint.h"
#include "../xdp/loader.h"
#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/mroce.h"
#include "mroce/wire.h"

_Static_assert(sizeof(struct mroce_io_stats) == 10 * 8, "io stats count");
_Static_assert(sizeof(struct mroce_engine_stats) == 25 * 8, "engine stats");

/* clang-format off */
static const char help_text[] =
"NAME\n"
"    mroced - the mroce daemon: RDMA transports for many applications\n"
"\n"
"SYNOPSIS\n"
"    mroced --local ADDR [--backend udp|afxdp] [--ifname IF]\n"
"           [--queue Q|all] [--attach] [--sock PATH] [--paths N]\n"
"           [--mtu BYTES]\n"
"           [--rto-min USEC] [--udp-port PORT] [--spin-us USEC]\n"
"           [--sock-mode MODE] [--seed N] [--foreground] [-v]\n"
"\n"
"DESCRIPTION\n"
"    Owns the packet I/O of one local address (kernel UDP sockets, or an\n"
"    AF_XDP sockets, one per receive queue of IF, behind the XDP program\n"
"    of `mrocectl attach IF`) and runs both transports on it: MetaRoCE (UDP\n"
"    port 4792) and RoCEv2 (4791). Applications use it through libmroce\n"
"    with struct mrv_dev_attr.mode = MRV_MODE_DAEMON (mroce_perf\n"
"    --daemon): verbs calls travel over the UNIX socket PATH, work requests\n"
"    and completions over rings in memory shared with each application,\n"
"    without a system call per request. Memory from mrv_alloc_mr() is\n"
"    mapped by the daemon too (zero copy).\n"
"\n"
"    The daemon spins while there is work and sleeps in epoll after\n"
"    --spin-us without any (these machines have 2 cores). An application\n"
"    that exits or dies loses its QPs, CQs and MRs at once. SIGINT or\n"
"    SIGTERM: outstanding work completes with flush errors in the\n"
"    applications, the socket is removed, what --attach attached is\n"
"    detached, exit 0. `mrocectl daemon` shows its state.\n"
"\n"
"OPTIONS\n"
"    -l, --local=ADDR     numeric IPv4/IPv6 address to use (required)\n"
"    -b, --backend=B      udp (default) or afxdp\n"
"    -i, --ifname=IF      interface (afxdp)\n"
"    -q, --queue=Q|all    afxdp: bind only receive queue Q of IF, or one\n"
"                         socket per receive queue (all, the default);\n"
"                         a packet leaves on queue (source port % queues).\n"
"                         The per-queue counters are logged on exit\n"
"    -A, --attach         attach the XDP program to IF first (as\n"
"                         `mrocectl attach IF`) and detach it on exit\n"
"    -s, --sock=PATH      control socket (default " MRD_DEFAULT_SOCK ")\n"
"    -p, --paths=N        MetaRoCE paths per peer (default 8)\n"
"    -m, --mtu=BYTES      payload bytes per packet (default: 4096 on udp,\n"
"                         from the interface MTU on afxdp)\n"
"    -r, --rto-min=USEC   minimum retransmission timeout (default 200)\n"
"    -u, --udp-port=PORT  MetaRoCE port; RoCEv2 uses PORT+1 (default\n"
"                         4792/4791)\n"
"        --sock-mode=MODE chmod the socket (e.g. 0666: every local user;\n"
"                         default: as the umask leaves it). Connecting\n"
"                         needs write permission on the socket\n"
"        --spin-us=USEC   busy-poll this long after the last work before\n"
"                         sleeping (default 50)\n"
"        --seed=N         fixed engine seed (tests only)\n"
"    -f, --foreground     accepted for compatibility: mroced never forks\n"
"                         (run it under systemd or with &)\n"
"    -v, --verbose        log every session and control error\n"
"    -h, --help           this text\n"
"\n"
"EXIT STATUS\n"
"    0 clean shutdown (SIGINT/SIGTERM); 1 start-up failed (address,\n"
"    interface, socket in use by a running mroced); 2 bad arguments.\n"
"\n"
"EXAMPLE\n"
"    mroced --local 10.0.0.1 --sock /tmp/mroced.sock &\n"
"    mroce_perf write_bw --daemon=/tmp/mroced.sock &\n"
"    mroced --backend afxdp --ifname eth1 --attach --local 10.0.0.1\n";
/* clang-format on */

static bool verbose;

static void pr(const char *lvl, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void pr(const char *lvl, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "mroced: %s", lvl);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
#define pr_err(...) pr("error: ", __VA_ARGS__)
#define pr_info(...) pr("", __VA_ARGS__)
#define pr_dbg(...)                                                            \
	do {                                                                   \
		if (verbose)                                                   \
			pr("", __VA_ARGS__);                                   \
	} while (0)

/* libbpf/libxdp chatter (fallbacks they handle themselves) only with -v;
 * failures become our own named errors. */
static int bpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return verbose ? vfprintf(stderr, fmt, ap) : 0;
}

static int xdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	return verbose ? vfprintf(stderr, fmt, ap) : 0;
}

/* ------------------------------------------------------------------ */
/* State                                                                */
/* ------------------------------------------------------------------ */
enum ev_kind { EV_LISTEN = 1, EV_SIGNAL, EV_EP, EV_SOCK, EV_KICK };

struct evtag {
	enum ev_kind kind;
	struct sess *s;
};

struct dpd {
	uint32_t handle;
	int nmrs, nqps;
	struct dpd *next;
};

struct dmr {
	uint32_t lkey;
	struct dpd *pd;
	void *map;
	size_t len;
	struct dmr *next;
};

struct dcq {
	int id;		/* engine CQ id = handle */
	uint32_t off;	/* ring offset in the session's region */
	uint32_t bytes; /* ring size in the region */
	uint32_t entries;
	struct mrd_ring_hdr *hdr;
	struct mrd_cqe *ring;
	struct mrd_cqe *synth; /* daemon-made completions, delivered first */
	int nsynth, capsynth;
	bool blocked; /* the ring was full at the last delivery */
	int nqps;
	struct dcq *next;
};

struct dqp {
	uint32_t qpn;
	struct dpd *pd;
	struct dcq *scq, *rcq;
	int peer; /* engine peer id after RTR, else -1 */
	char dest[48];
	struct mrd_sqe *bl; /* backlog: WRs the engine refused with -EAGAIN */
	int bl_head, bl_n, bl_cap;
	struct dqp *next;
};

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
	struct dpd *pds;
	struct dmr *mrs;
	struct dcq *cqs; /* sorted by off */
	struct dqp *qps;
	struct dqp *last_qp;
	int npds, nmrs, ncqs, nqps;
	bool backlog; /* some QP has a backlog */
	struct evtag tag_sock, tag_kick;
	struct sess *next;
};

static struct {
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
	int sock_mode; /* chmod of the socket, -1 = leave (umask) */
	uint64_t ctl[MRD_CTL_NCOUNTERS];
	struct evtag tag_listen, tag_signal, tag_ep;
} D;


static uint64_t now_ns(void)
{
	return mroce_ep_now();
}

/* ------------------------------------------------------------------ */
/* Lookups (every handle is checked against the session's own objects) */
/* ------------------------------------------------------------------ */
static struct dpd *find_pd(struct sess *s, uint32_t h)
{
	for (struct dpd *p = s->pds; p; p = p->next)
		if (p->handle == h)
			return p;
	return NULL;
}

static struct dcq *find_cq(struct sess *s, uint32_t h)
{
	for (struct dcq *c = s->cqs; c; c = c->next)
		if ((uint32_t)c->id == h)
			return c;
	return NULL;
}

static struct dqp *find_qp(struct sess *s, uint32_t qpn)
{
	if (s->last_qp && s->last_qp->qpn == qpn)
		return s->last_qp;
	for (struct dqp *q = s->qps; q; q = q->next)
		if (q->qpn == qpn) {
			s->last_qp = q;
			return q;
		}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Completions                                                          */
/* ------------------------------------------------------------------ */
static int synth_push(struct dcq *c, const struct mrd_cqe *e)
{
	if (c->nsynth == c->capsynth) {
		int cap = c->capsynth ? 2 * c->capsynth : 16;
		struct mrd_cqe *n = realloc(c->synth, (size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		c->synth = n;
		c->capsynth = cap;
	}
	c->synth[c->nsynth++] = *e;
	return 0;
}

static uint8_t wc_opcode_of(const struct mrd_sqe *q)
{
	if (q->kind == MRD_SQE_RECV)
		return MRV_WC_RECV;
	switch (q->opcode) {
	case MRV_WR_RDMA_WRITE:
	case MRV_WR_RDMA_WRITE_WITH_IMM:
		return MRV_WC_RDMA_WRITE;
	case MRV_WR_RDMA_READ:
		return MRV_WC_RDMA_READ;
	default:
		return MRV_WC_SEND;
	}
}

/* Moves completions (daemon-made first, then the engine's) into the CQ's
 * ring while it has room. Returns the number moved. */
static int deliver_cq(struct sess *s, struct dcq *c)
{
	uint32_t head =
		atomic_load_explicit(&c->hdr->head, memory_order_relaxed);
	uint32_t tail =
		atomic_load_explicit(&c->hdr->tail, memory_order_acquire);
	uint32_t room = c->entries - (head - tail);
	int moved = 0;

	if (head - tail > c->entries) {
		s->dead = true; /* corrupted by the application */
		return 0;
	}
	if (c->nsynth && room) {
		int k = c->nsynth < (int)room ? c->nsynth : (int)room;

		for (int i = 0; i < k; i++)
			c->ring[(head + (uint32_t)i) & (c->entries - 1)] =
				c->synth[i];
		memmove(c->synth, c->synth + k,
			(size_t)(c->nsynth - k) * sizeof(*c->synth));
		c->nsynth -= k;
		head += (uint32_t)k;
		room -= (uint32_t)k;
		moved += k;
	}
	while (room && !c->nsynth) {
		struct mroce_wc w[64];
		int want = room < 64 ? (int)room : 64;
		int n = mroce_poll_cq(s->e, c->id, w, want);

		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			c->ring[(head + (uint32_t)i) & (c->entries - 1)] =
				(struct mrd_cqe){
					.wr_id = w[i].wr_id,
					.status = w[i].status,
					.opcode = w[i].opcode,
					.byte_len = w[i].byte_len,
					.imm = w[i].imm,
					.qpn = w[i].qpn,
					.flags = w[i].flags,
				};
		head += (uint32_t)n;
		room -= (uint32_t)n;
		moved += n;
		if (n < want)
			break;
	}
	if (moved)
		atomic_store_explicit(&c->hdr->head, head,
				      memory_order_seq_cst);
	/* Full: the app kicks us when it frees room while we sleep. */
	c->blocked = !room;
	return moved;
}

static int deliver(struct sess *s)
{
	int moved = 0;

	for (struct dcq *c = s->cqs; c; c = c->next)
		moved += deliver_cq(s, c);
	if (moved && atomic_load(&s->hdr->app_waiting)) {
		uint64_t one = 1;

		(void)!write(s->cq_fd, &one, sizeof(one));
	}
	return moved;
}

/* ------------------------------------------------------------------ */
/* Submissions                                                          */
/* ------------------------------------------------------------------ */
static int bl_push(struct dqp *q, const struct mrd_sqe *e)
{
	if (q->bl_n == q->bl_cap) {
		int cap = q->bl_cap ? 2 * q->bl_cap : 64;
		struct mrd_sqe *n = malloc((size_t)cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (int i = 0; i < q->bl_n; i++)
			n[i] = q->bl[(q->bl_head + i) % q->bl_cap];
		free(q->bl);
		q->bl = n;
		q->bl_head = 0;
		q->bl_cap = cap;
	}
	q->bl[(q->bl_head + q->bl_n) % q->bl_cap] = *e;
	q->bl_n++;
	return 0;
}

/* Hands one entry to the engine: 0 taken (or failed into a completion),
 * -EAGAIN engine queue full (keep it). */
static int submit(struct sess *s, struct dqp *q, const struct mrd_sqe *x,
		  uint64_t now)
{
	struct mroce_sge sge = {0};
	enum mrv_wc_status st;
	struct mroce_qp_attr qa;
	int err;

	if (x->num_sge)
		sge = (struct mroce_sge){
			.addr = x->sge_addr,
			.length = x->sge_len,
			.lkey = x->lkey,
		};
	if (x->kind == MRD_SQE_SEND) {
		struct mroce_send_wr w = {
			.wr_id = x->wr_id,
			.opcode = (enum mroce_wr_opcode)x->opcode,
			.send_flags = x->send_flags,
			.sge = sge,
			.imm = x->imm,
			.remote_addr = x->remote_addr,
			.rkey = x->rkey,
		};

		err = x->opcode > MRV_WR_RDMA_READ || x->num_sge > 1
			      ? -EINVAL
			      : mroce_post_send(s->e, q->qpn, &w, now);
	} else {
		struct mroce_recv_wr w = {.wr_id = x->wr_id, .sge = sge};

		err = x->num_sge > 1 ? -EINVAL
				     : mroce_post_recv(s->e, q->qpn, &w);
	}
	if (!err || err == -EAGAIN)
		return err;
	/* The library checked state, opcode and lkey before posting; what
	 * still fails here failed later (QP moved to ERR meanwhile, MR
	 * deregistered): report it the way ibverbs would. */
	if (err == -EPERM && !mroce_query_qp(s->e, q->qpn, &qa) &&
	    qa.state == MROCE_QPS_ERR)
		st = MRV_WC_WR_FLUSH_ERR;
	else if (err == -EINVAL)
		st = MRV_WC_LOC_PROT_ERR;
	else
		st = MRV_WC_LOC_QP_OP_ERR;
	(void)synth_push(x->kind == MRD_SQE_SEND ? q->scq : q->rcq,
			 &(struct mrd_cqe){
				 .wr_id = x->wr_id,
				 .status = st,
				 .opcode = wc_opcode_of(x),
				 .qpn = q->qpn,
			 });
	return 0;
}

static int run_backlog(struct sess *s, uint64_t now)
{
	int moved = 0;
	bool left = false;

	for (struct dqp *q = s->qps; q; q = q->next) {
		while (q->bl_n) {
			if (submit(s, q, &q->bl[q->bl_head], now) == -EAGAIN)
				break;
			q->bl_head = (q->bl_head + 1) % q->bl_cap;
			q->bl_n--;
			moved++;
		}
		if (q->bl_n)
			left = true;
	}
	s->backlog = left;
	return moved;
}

/* Drains up to `budget` submission entries. */
static int drain_sq(struct sess *s, uint64_t now, int budget)
{
	uint32_t tail =
		atomic_load_explicit(&s->hdr->sq.tail, memory_order_relaxed);
	uint32_t head =
		atomic_load_explicit(&s->hdr->sq.head, memory_order_acquire);
	int n = 0;

	if (head - tail > s->sq_entries) {
		s->dead = true;
		return 0;
	}
	while (tail != head && n < budget) {
		struct mrd_sqe x = s->sq[tail & (s->sq_entries - 1)];
		struct dqp *q;

		tail++;
		n++;
		D.ctl[MRD_CTL_sq_entries]++;
		q = find_qp(s, x.qpn);
		if (!q || (x.kind != MRD_SQE_SEND && x.kind != MRD_SQE_RECV)) {
			D.ctl[MRD_CTL_sq_bad_entries]++;
			continue;
		}
		if (q->bl_n || submit(s, q, &x, now) == -EAGAIN) {
			if (bl_push(q, &x) < 0)
				s->dead = true;
			s->backlog = true;
		}
	}
	if (n)
		atomic_store_explicit(&s->hdr->sq.tail, tail,
				      memory_order_release);
	return n;
}

static bool sq_pending(struct sess *s)
{
	return atomic_load(&s->hdr->sq.head) !=
	       atomic_load_explicit(&s->hdr->sq.tail, memory_order_relaxed);
}

/* ------------------------------------------------------------------ */
/* Session life                                                         */
/* ------------------------------------------------------------------ */
static void free_qp(struct sess *s, struct dqp *q)
{
	(void)mroce_destroy_qp(s->e, q->qpn);
	q->pd->nqps--;
	q->scq->nqps--;
	q->rcq->nqps--;
	if (s->last_qp == q)
		s->last_qp = NULL;
	s->nqps--;
	free(q->bl);
	free(q);
}

static void free_cq(struct sess *s, struct dcq *c)
{
	(void)mroce_destroy_cq(s->e, c->id);
	free(c->synth);
	s->ncqs--;
	free(c);
}

static void free_mr(struct sess *s, struct dmr *m)
{
	(void)mroce_dereg_mr(s->e, m->lkey);
	munmap(m->map, m->len);
	m->pd->nmrs--;
	s->nmrs--;
	free(m);
}

static void sess_close(struct sess *s)
{
	struct sess **pp;

	for (pp = &D.sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	while (s->qps) {
		struct dqp *q = s->qps;

		s->qps = q->next;
		free_qp(s, q);
	}
	while (s->mrs) {
		struct dmr *m = s->mrs;

		s->mrs = m->next;
		free_mr(s, m);
	}
	while (s->cqs) {
		struct dcq *c = s->cqs;

		s->cqs = c->next;
		free_cq(s, c);
	}
	while (s->pds) {
		struct dpd *p = s->pds;

		s->pds = p->next;
		free(p);
	}
	(void)mroce_ep_sync(D.ep);
	if (s->shm)
		munmap(s->shm, s->shm_size);
	if (s->shm_fd >= 0)
		close(s->shm_fd);
	if (s->kick_fd >= 0)
		close(s->kick_fd);
	if (s->cq_fd >= 0)
		close(s->cq_fd);
	close(s->fd); /* also leaves the epoll set */
	free(s);
}

static void sess_reap(struct sess *s, const char *why)
{
	if (s->hello)
		pr_dbg("session %d (pid %d) ended: %s: %d QPs, %d CQs, %d MRs "
		       "released",
		       s->id, (int)s->pid, why, s->nqps, s->ncqs, s->nmrs);
	if (s->hello)
		D.ctl[MRD_CTL_sessions_reaped]++;
	sess_close(s);
}

static int ep_add(int fd, struct evtag *t)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = t};

	return epoll_ctl(D.epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static void accept_one(void)
{
	struct sess *s;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	int fd = accept4(D.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return;
	}
	s->fd = fd;
	s->id = ++D.next_id;
	s->shm_fd = s->kick_fd = s->cq_fd = -1;
	s->next_pd = 1;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
		s->pid = cr.pid;
	s->tag_sock = (struct evtag){EV_SOCK, s};
	s->tag_kick = (struct evtag){EV_KICK, s};
	if (ep_add(fd, &s->tag_sock) < 0) {
		close(fd);
		free(s);
		return;
	}
	s->next = D.sessions;
	D.sessions = s;
}

/* ------------------------------------------------------------------ */
/* Control requests                                                     */
/* ------------------------------------------------------------------ */
static int hello_setup(struct sess *s, const struct mrd_req *q,
		       struct mrd_rep *r, int fds[3], int *nfds)
{
	size_t hdr_bytes = 4096;
	size_t sq_bytes = (size_t)MRD_SQ_ENTRIES * sizeof(struct mrd_sqe);
	int err;

	if (s->hello)
		return -EISCONN;
	if (q->u.hello.transport != MRV_TRANSPORT_METAROCE &&
	    q->u.hello.transport != MRV_TRANSPORT_ROCEV2)
		return -EINVAL;
	s->e = mroce_ep_engine(D.ep, q->u.hello.transport);
	if (!s->e)
		return -ENOTSUP;
	s->transport = q->u.hello.transport;
	s->shm_size = hdr_bytes + sq_bytes + MRD_CQ_AREA;
	s->shm_fd =
		memfd_create("mroced-session", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (s->shm_fd < 0)
		return -errno;
	if (ftruncate(s->shm_fd, (off_t)s->shm_size) < 0 ||
	    fcntl(s->shm_fd, F_ADD_SEALS,
		  F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -errno;
	s->shm = mmap(NULL, s->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      s->shm_fd, 0);
	if (s->shm == MAP_FAILED) {
		s->shm = NULL;
		return -errno;
	}
	s->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	s->cq_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->kick_fd < 0 || s->cq_fd < 0)
		return -errno;
	err = ep_add(s->kick_fd, &s->tag_kick);
	if (err < 0)
		return err;
	s->hdr = s->shm;
	s->hdr->magic = MRD_SHM_MAGIC;
	s->hdr->version = MRD_VERSION;
	s->sq = (struct mrd_sqe *)((uint8_t *)s->shm + hdr_bytes);
	s->sq_entries = MRD_SQ_ENTRIES;
	s->cq_area_off = (uint32_t)(hdr_bytes + sq_bytes);
	s->cq_area_size = MRD_CQ_AREA;
	s->hello = true;
	if (q->u.hello.pid && !s->pid)
		s->pid = (pid_t)q->u.hello.pid;
	r->u.hello.session = (uint32_t)s->id;
	r->u.hello.family = D.family;
	r->u.hello.transport = s->transport;
	r->u.hello.mtu = mroce_ep_mtu(D.ep);
	memcpy(r->u.hello.local, D.local, 16);
	r->u.hello.shm_size = s->shm_size;
	r->u.hello.sq_off = (uint32_t)hdr_bytes;
	r->u.hello.sq_entries = s->sq_entries;
	r->u.hello.cq_area_off = s->cq_area_off;
	r->u.hello.cq_area_size = s->cq_area_size;
	fds[0] = s->shm_fd;
	fds[1] = s->kick_fd;
	fds[2] = s->cq_fd;
	*nfds = 3;
	pr_dbg("session %d: pid %d, %s", s->id, (int)s->pid,
	       s->transport == MRV_TRANSPORT_ROCEV2 ? "rocev2" : "metaroce");
	return 0;
}

/* HELLO: a failed set-up leaves the session as it was (a retry works). */
static int do_hello(struct sess *s, const struct mrd_req *q, struct mrd_rep *r,
		    int fds[3], int *nfds)
{
	int err = hello_setup(s, q, r, fds, nfds);

	if (err < 0 && !s->hello) {
		if (s->shm)
			munmap(s->shm, s->shm_size);
		s->shm = NULL;
		s->hdr = NULL;
		if (s->shm_fd >= 0)
			close(s->shm_fd);
		if (s->kick_fd >= 0)
			close(s->kick_fd); /* also leaves the epoll set */
		if (s->cq_fd >= 0)
			close(s->cq_fd);
		s->shm_fd = s->kick_fd = s->cq_fd = -1;
		*nfds = 0;
	}
	return err;
}

static int do_reg_mr(struct sess *s, const struct mrd_req *q, struct mrd_rep *r,
		     int fd)
{
	uint32_t all = MRV_ACCESS_LOCAL_WRITE | MRV_ACCESS_REMOTE_WRITE |
		       MRV_ACCESS_REMOTE_READ;
	struct dpd *pd = find_pd(s, q->u.reg_mr.pd);
	struct mroce_mr emr;
	struct dmr *m;
	struct stat st;
	int seals, err;
	void *p;

	if (!pd)
		return -ENOENT;
	if (fd < 0 || !q->u.reg_mr.len || (q->u.reg_mr.access & ~all) ||
	    q->u.reg_mr.len > ((uint64_t)1 << 40))
		return -EINVAL;
	/* A region the application could shrink would fault the daemon. */
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size < q->u.reg_mr.len)
		return -EINVAL;
	p = mmap(NULL, q->u.reg_mr.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 0);
	if (p == MAP_FAILED)
		return -errno;
	m = calloc(1, sizeof(*m));
	if (!m) {
		munmap(p, q->u.reg_mr.len);
		return -ENOMEM;
	}
	err = mroce_reg_mr_iova(s->e, p, q->u.reg_mr.len, q->u.reg_mr.iova,
				q->u.reg_mr.access, &emr);
	if (err < 0) {
		munmap(p, q->u.reg_mr.len);
		free(m);
		return err;
	}
	m->lkey = emr.lkey;
	m->pd = pd;
	m->map = p;
	m->len = q->u.reg_mr.len;
	m->next = s->mrs;
	s->mrs = m;
	pd->nmrs++;
	s->nmrs++;
	r->u.mr.lkey = emr.lkey;
	r->u.mr.rkey = emr.rkey;
	return 0;
}

static int do_dereg_mr(struct sess *s, const struct mrd_req *q)
{
	for (struct dmr **pp = &s->mrs; *pp; pp = &(*pp)->next)
		if ((*pp)->lkey == q->u.dereg_mr.lkey) {
			struct dmr *m = *pp;

			*pp = m->next;
			free_mr(s, m);
			return 0;
		}
	return -ENOENT;
}

static int do_create_cq(struct sess *s, const struct mrd_req *q,
			struct mrd_rep *r)
{
	uint32_t depth = q->u.create_cq.depth, entries = 16, bytes, off;
	struct dcq *c, **pp;
	int id;

	if (!depth || depth > MRD_CQ_MAX_ENTRIES)
		return -EINVAL;
	while (entries < depth)
		entries *= 2;
	bytes = (uint32_t)sizeof(struct mrd_ring_hdr) +
		entries * (uint32_t)sizeof(struct mrd_cqe);
	bytes = (bytes + 4095u) & ~4095u;
	/* First fit in the CQ area (the list is sorted by offset). */
	off = s->cq_area_off;
	for (pp = &s->cqs; *pp; pp = &(*pp)->next) {
		if ((*pp)->off - off >= bytes)
			break;
		off = (*pp)->off + (*pp)->bytes;
	}
	if (off + bytes > s->cq_area_off + s->cq_area_size)
		return -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	id = mroce_create_cq(s->e, depth);
	if (id < 0) {
		free(c);
		return id;
	}
	c->id = id;
	c->off = off;
	c->bytes = bytes;
	c->entries = entries;
	c->hdr = (struct mrd_ring_hdr *)((uint8_t *)s->shm + off);
	c->ring = (struct mrd_cqe *)(c->hdr + 1);
	atomic_store(&c->hdr->head, 0);
	atomic_store(&c->hdr->tail, 0);
	c->next = *pp;
	*pp = c;
	s->ncqs++;
	r->u.cq.cq = (uint32_t)id;
	r->u.cq.ring_off = off;
	r->u.cq.entries = entries;
	return 0;
}

static int do_destroy_cq(struct sess *s, const struct mrd_req *q)
{
	for (struct dcq **pp = &s->cqs; *pp; pp = &(*pp)->next)
		if ((uint32_t)(*pp)->id == q->u.cq.cq) {
			struct dcq *c = *pp;

			if (c->nqps)
				return -EBUSY;
			*pp = c->next;
			free_cq(s, c);
			return 0;
		}
	return -ENOENT;
}

static int do_create_qp(struct sess *s, const struct mrd_req *q,
			struct mrd_rep *r)
{
	struct dpd *pd = find_pd(s, q->u.create_qp.pd);
	struct dcq *scq = find_cq(s, q->u.create_qp.send_cq);
	struct dcq *rcq = find_cq(s, q->u.create_qp.recv_cq);
	struct mroce_qp_init_attr ia;
	struct dqp *qp;
	int qpn;

	if (!pd || !scq || !rcq)
		return -ENOENT;
	if (q->u.create_qp.max_send_wr > 65536 ||
	    q->u.create_qp.max_recv_wr > 65536)
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	ia = (struct mroce_qp_init_attr){
		.send_cq = scq->id,
		.recv_cq = rcq->id,
		.max_send_wr = q->u.create_qp.max_send_wr
				       ? q->u.create_qp.max_send_wr
				       : 128,
		.max_recv_wr = q->u.create_qp.max_recv_wr
				       ? q->u.create_qp.max_recv_wr
				       : 128,
	};
	qpn = mroce_create_qp(s->e, &ia);
	if (qpn < 0) {
		free(qp);
		return qpn;
	}
	qp->qpn = (uint32_t)qpn;
	qp->pd = pd;
	qp->scq = scq;
	qp->rcq = rcq;
	qp->peer = -1;
	qp->next = s->qps;
	s->qps = qp;
	pd->nqps++;
	scq->nqps++;
	rcq->nqps++;
	s->nqps++;
	r->u.qp.qpn = (uint32_t)qpn;
	return 0;
}

static int do_destroy_qp(struct sess *s, const struct mrd_req *q)
{
	for (struct dqp **pp = &s->qps; *pp; pp = &(*pp)->next)
		if ((*pp)->qpn == q->u.qp.qpn) {
			struct dqp *qp = *pp;

			*pp = qp->next;
			free_qp(s, qp);
			return mroce_ep_sync(D.ep);
		}
	return -ENOENT;
}

static int do_modify_qp(struct sess *s, const struct mrd_req *q)
{
	struct dqp *qp = find_qp(s, q->u.modify_qp.qpn);
	struct mroce_qp_attr a = {0};
	char dest[48];
	int err;

	if (!qp)
		return -ENOENT;
	if (q->u.modify_qp.state > MRV_QPS_ERR)
		return -EINVAL;
	a.state = (enum mroce_qp_state)q->u.modify_qp.state;
	a.access = q->u.modify_qp.access;
	a.dest_qpn = q->u.modify_qp.dest_qpn;
	a.rq_psn = q->u.modify_qp.rq_psn;
	a.sq_psn = q->u.modify_qp.sq_psn;
	a.peer = -1;
	memcpy(dest, q->u.modify_qp.dest_addr, sizeof(dest));
	dest[sizeof(dest) - 1] = 0;
	if (q->u.modify_qp.mask & MRV_QP_DEST) {
		a.peer = mroce_ep_peer_by_name(
			D.ep, (enum mroce_transport)s->transport, dest);
		if (a.peer < 0)
			return a.peer;
	}
	err = mroce_modify_qp(s->e, qp->qpn, &a, q->u.modify_qp.mask, now_ns());
	if (err < 0)
		return err;
	if (q->u.modify_qp.mask & MRV_QP_DEST) {
		qp->peer = a.peer;
		memcpy(qp->dest, dest, sizeof(dest));
	}
	return mroce_ep_sync(D.ep);
}

static int do_query_qp(struct sess *s, const struct mrd_req *q,
		       struct mrd_rep *r)
{
	struct dqp *qp = find_qp(s, q->u.qp.qpn);
	struct mroce_qp_attr a;
	int err;

	if (!qp)
		return -ENOENT;
	err = mroce_query_qp(s->e, qp->qpn, &a);
	if (err < 0)
		return err;
	r->u.qattr.state = a.state;
	r->u.qattr.access = a.access;
	r->u.qattr.dest_qpn = a.dest_qpn;
	r->u.qattr.rq_psn = a.rq_psn;
	r->u.qattr.sq_psn = a.sq_psn;
	if (qp->peer >= 0)
		memcpy(r->u.qattr.dest_addr, qp->dest, sizeof(qp->dest));
	return 0;
}

static int do_query_path(struct sess *s, const struct mrd_req *q,
			 struct mrd_rep *r)
{
	struct dqp *qp = find_qp(s, q->u.qp.qpn);
	struct mroce_path_info pi;
	int err;

	if (!qp)
		return -ENOENT;
	if (q->u.qp.idx < 0)
		return -EINVAL;
	if (qp->peer < 0)
		return -ENOENT;
	err = mroce_engine_path_info(s->e, qp->peer, q->u.qp.idx, &pi);
	if (err < 0)
		return err;
	r->u.path = (struct mrd_path){
		.sport = pi.sport,
		.alive = pi.alive,
		.srtt_us = pi.srtt_us,
		.cwnd_pkts = pi.cwnd_pkts,
		.inflight = pi.inflight,
		.tx_pkts = pi.tx_pkts,
		.retransmits = pi.retransmits,
		.ce_marks = pi.ce_marks,
	};
	return 0;
}

/* One line per receive queue the endpoint read (afxdp), on exit. */
static void log_queue_stats(void)
{
	int nq = mroce_ep_nqueues(D.ep);

	for (int i = 0; i < nq; i++) {
		struct mroce_io_stats is;
		uint32_t q = 0;

		mroce_io_get_stats(mroce_ep_queue_io(D.ep, i, &q), &is);
		pr_info("queue %u: rx %llu pkts %llu bytes, tx %llu pkts "
			"%llu bytes",
			q, (unsigned long long)is.rx_pkts,
			(unsigned long long)is.rx_bytes,
			(unsigned long long)is.tx_pkts,
			(unsigned long long)is.tx_bytes);
	}
}

static void do_query_stats(struct sess *s, struct mrd_rep *r)
{
	struct mroce_engine_stats es;
	struct mroce_io_stats is;

	mroce_engine_get_stats(s->e, &es);
	mroce_ep_io_stats(D.ep, &is);
	mroce_dev_stats_fill(&r->u.stats, &es, &is);
}

static int do_status(const struct mrd_req *q, struct mrd_rep *r)
{
	struct mrd_status *st = &r->u.status;
	struct mroce_engine *e;
	struct mroce_io_stats is;
	struct mroce_engine_stats es;

	st->pid = (uint32_t)getpid();
	for (struct sess *s = D.sessions; s; s = s->next) {
		if (!s->hello)
			continue;
		st->apps++;
		st->pds += (uint32_t)s->npds;
		st->mrs += (uint32_t)s->nmrs;
		st->cqs += (uint32_t)s->ncqs;
		st->qps += (uint32_t)s->nqps;
	}
	st->backend = D.backend;
	st->family = D.family;
	st->mtu = mroce_ep_mtu(D.ep);
	memcpy(st->local, D.local, 16);
	memcpy(st->ifname, D.ifname, sizeof(st->ifname));
	st->uptime_ms = (now_ns() - D.start_ns) / 1000000u;
	memcpy(st->ctl, D.ctl, sizeof(D.ctl));
	mroce_ep_io_stats(D.ep, &is);
	memcpy(st->io, &is, sizeof(st->io));
	e = mroce_ep_engine(D.ep, q->u.status.transport
					  ? q->u.status.transport
					  : MRV_TRANSPORT_METAROCE);
	if (!e)
		return -ENOTSUP;
	mroce_engine_get_stats(e, &es);
	memcpy(st->eng, &es, sizeof(st->eng));
	return 0;
}

static int do_app_info(const struct mrd_req *q, struct mrd_rep *r)
{
	uint32_t i = 0;

	for (struct sess *s = D.sessions; s; s = s->next) {
		if (!s->hello)
			continue;
		if (i++ != q->u.status.index)
			continue;
		r->u.app = (struct mrd_app_info){
			.pid = (uint32_t)s->pid,
			.session = (uint32_t)s->id,
			.transport = s->transport,
			.pds = (uint32_t)s->npds,
			.mrs = (uint32_t)s->nmrs,
			.cqs = (uint32_t)s->ncqs,
			.qps = (uint32_t)s->nqps,
		};
		return 0;
	}
	return -ENOENT;
}

static int dispatch(struct sess *s, const struct mrd_req *q, struct mrd_rep *r,
		    int rfd, int fds[3], int *nfds)
{
	if (q->op == MRD_OP_STATUS)
		return do_status(q, r);
	if (q->op == MRD_OP_APP_INFO)
		return do_app_info(q, r);
	if (q->op == MRD_OP_HELLO)
		return do_hello(s, q, r, fds, nfds);
	if (q->op == 0 || q->op >= MRD_OP_MAX) {
		D.ctl[MRD_CTL_ctl_bad_op]++;
		return -EOPNOTSUPP;
	}
	if (!s->hello) {
		D.ctl[MRD_CTL_ctl_no_hello]++;
		return -ENOTCONN;
	}
	/* Work posted before this request goes first (program order). */
	while (sq_pending(s) && !s->dead)
		drain_sq(s, now_ns(), 1 << 30);
	switch (q->op) {
	case MRD_OP_ALLOC_PD: {
		struct dpd *p = calloc(1, sizeof(*p));

		if (!p)
			return -ENOMEM;
		p->handle = s->next_pd++;
		p->next = s->pds;
		s->pds = p;
		s->npds++;
		r->u.pd.handle = p->handle;
		return 0;
	}
	case MRD_OP_DEALLOC_PD:
		for (struct dpd **pp = &s->pds; *pp; pp = &(*pp)->next)
			if ((*pp)->handle == q->u.pd.pd) {
				struct dpd *p = *pp;

				if (p->nmrs || p->nqps)
					return -EBUSY;
				*pp = p->next;
				free(p);
				s->npds--;
				return 0;
			}
		return -ENOENT;
	case MRD_OP_REG_MR:
		return do_reg_mr(s, q, r, rfd);
	case MRD_OP_DEREG_MR:
		return do_dereg_mr(s, q);
	case MRD_OP_CREATE_CQ:
		return do_create_cq(s, q, r);
	case MRD_OP_DESTROY_CQ:
		return do_destroy_cq(s, q);
	case MRD_OP_CREATE_QP:
		return do_create_qp(s, q, r);
	case MRD_OP_DESTROY_QP:
		return do_destroy_qp(s, q);
	case MRD_OP_MODIFY_QP:
		return do_modify_qp(s, q);
	case MRD_OP_QUERY_QP:
		return do_query_qp(s, q, r);
	case MRD_OP_QUERY_PATH:
		return do_query_path(s, q, r);
	case MRD_OP_QUERY_STATS:
		do_query_stats(s, r);
		return 0;
	}
	D.ctl[MRD_CTL_ctl_bad_op]++;
	return -EOPNOTSUPP;
}

static int send_rep(struct sess *s, const struct mrd_rep *r, const int *fds,
		    int nfds)
{
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)r, .iov_len = sizeof(*r)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};

	if (nfds) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	/* Replies are small and the app waits for each: a full socket
	 * buffer means a misbehaving app, which loses its session. */
	return sendmsg(s->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) ==
			       (ssize_t)sizeof(*r)
		       ? 0
		       : -EPIPE;
}

/* Reads and answers every pending request; false when the session is
 * over (hang-up, error). */
static bool handle_sock(struct sess *s)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} u;
		union {
			struct mrd_req q;
			char raw[sizeof(struct mrd_req) + 1];
		} in;
		struct iovec iov = {.iov_base = &in, .iov_len = sizeof(in)};
		struct msghdr m = {.msg_iov = &iov,
				   .msg_iovlen = 1,
				   .msg_control = u.buf,
				   .msg_controllen = sizeof(u.buf)};
		struct mrd_rep r = {0};
		int rfd = -1, fds[3], nfds = 0;
		struct cmsghdr *c;
		ssize_t n;

		n = recvmsg(s->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n == 0)
			return false; /* hang-up */
		for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			int k;

			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (int i = 0; i < k; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int),
				       sizeof(fd));
				if (rfd < 0)
					rfd = fd;
				else
					close(fd);
			}
		}
		D.ctl[MRD_CTL_ctl_requests]++;
		r.version = MRD_VERSION;
		if ((size_t)n < 8 || (m.msg_flags & MSG_TRUNC) ||
		    (size_t)n != sizeof(struct mrd_req)) {
			D.ctl[MRD_CTL_ctl_bad_size]++;
			r.err = -EBADMSG;
			if ((size_t)n >= 8) {
				r.op = in.q.op;
				r.seq = in.q.seq;
			}
		} else if (in.q.version != MRD_VERSION) {
			D.ctl[MRD_CTL_ctl_bad_version]++;
			r.op = in.q.op;
			r.seq = in.q.seq;
			r.err = -EPROTO;
		} else {
			r.op = in.q.op;
			r.seq = in.q.seq;
			r.err = dispatch(s, &in.q, &r, rfd, fds, &nfds);
			if (r.err == -ENOENT)
				D.ctl[MRD_CTL_ctl_bad_handle]++;
			else if (r.err == -EINVAL)
				D.ctl[MRD_CTL_ctl_bad_arg]++;
			if (r.err && verbose)
				pr_dbg("session %d: op %u: %s", s->id, r.op,
				       strerror(-r.err));
		}
		if (rfd >= 0)
			close(rfd);
		if (send_rep(s, &r, fds, r.err ? 0 : nfds) < 0)
			return false;
	}
}

/* ------------------------------------------------------------------ */
/* Loop                                                                 */
/* ------------------------------------------------------------------ */
static int pump(uint64_t now)
{
	int work = 0, n;

	for (struct sess *s = D.sessions; s; s = s->next) {
		if (!s->hello || s->dead)
			continue;
		if (s->backlog)
			work += run_backlog(s, now);
		work += drain_sq(s, now, 1024);
	}
	n = mroce_ep_progress(D.ep, now);
	if (n > 0)
		work += n;
	for (struct sess *s = D.sessions; s; s = s->next)
		if (s->hello && !s->dead)
			work += deliver(s);
	return work;
}

static void reap_dead(void)
{
	struct sess *s = D.sessions, *next;

	for (; s; s = next) {
		next = s->next;
		if (s->dead)
			sess_reap(s, "corrupted shared ring");
	}
}

/* Announces sleep; false when a ring got work meanwhile. */
static bool prepare_sleep(void)
{
	bool idle = true;

	for (struct sess *s = D.sessions; s; s = s->next)
		if (s->hello)
			atomic_store(&s->hdr->daemon_sleeping, 1);
	for (struct sess *s = D.sessions; s; s = s->next) {
		if (!s->hello)
			continue;
		/* (A backlog alone does not keep us awake: only an ACK or
		 * a timer of the engine can make room for it.) */
		if (sq_pending(s))
			idle = false;
		/* A full completion ring the app drained meanwhile: its
		 * kick may have raced with our flag (see ipc.h). */
		for (struct dcq *c = s->cqs; c; c = c->next)
			if (c->blocked &&
			    atomic_load(&c->hdr->head) !=
				    atomic_load(&c->hdr->tail) + c->entries)
				idle = false;
	}
	return idle;
}

static void end_sleep(void)
{
	for (struct sess *s = D.sessions; s; s = s->next)
		if (s->hello)
			atomic_store_explicit(&s->hdr->daemon_sleeping, 0,
					      memory_order_relaxed);
}

static void shutdown_all(void)
{
	uint64_t now = now_ns();
	struct mroce_qp_attr err_attr = {.state = MROCE_QPS_ERR, .peer = -1};
	int nq = 0, ns = 0;

	/* Outstanding work completes with flush errors in the apps' rings
	 * (the library flushes whatever does not fit, from its own records,
	 * once it sees the socket close). */
	for (struct sess *s = D.sessions; s; s = s->next) {
		if (!s->hello)
			continue;
		while (sq_pending(s) && !s->dead)
			drain_sq(s, now, 1 << 30);
		for (struct dqp *q = s->qps; q; q = q->next) {
			(void)mroce_modify_qp(s->e, q->qpn, &err_attr,
					      MROCE_QP_STATE, now);
			/* backlog never reached the engine: flush it here */
			while (q->bl_n) {
				struct mrd_sqe *x = &q->bl[q->bl_head];

				(void)synth_push(
					x->kind == MRD_SQE_SEND ? q->scq
								: q->rcq,
					&(struct mrd_cqe){
						.wr_id = x->wr_id,
						.status = MRV_WC_WR_FLUSH_ERR,
						.opcode = wc_opcode_of(x),
						.qpn = q->qpn});
				q->bl_head = (q->bl_head + 1) % q->bl_cap;
				q->bl_n--;
			}
			nq++;
		}
		(void)deliver(s);
		{
			uint64_t one = 1; /* wake a sleeping mrv_wait_cq */

			(void)!write(s->cq_fd, &one, sizeof(one));
		}
		ns++;
	}
	(void)mroce_ep_progress(D.ep, now);
	while (D.sessions)
		sess_close(D.sessions);
	pr_info("shut down: %d sessions, %d QPs flushed", ns, nq);
}

/* Ends a session while handling a batch of events: later events of the
 * batch that point into it (its tags die with it) become no-ops. */
static void reap_in_batch(struct sess *s, struct epoll_event *evs, int from,
			  int nev)
{
	const void *ts = &s->tag_sock, *tk = &s->tag_kick;

	for (int j = from; j < nev; j++)
		if (evs[j].data.ptr == ts || evs[j].data.ptr == tk)
			evs[j].data.ptr = &D.tag_ep;
	sess_reap(s, "socket closed");
}

/* While there is work, epoll (control, signals) at most this often. */
#define EPOLL_BUSY_NS 20000ull

static int run(void)
{
	uint64_t last_work = now_ns(), last_epoll = 0;
	struct epoll_event evs[64];

	for (;;) {
		uint64_t now = now_ns();
		struct timespec ts = {0, 0};
		bool sleeping = false;
		int work, nev;

		work = pump(now);
		reap_dead();
		if (work > 0)
			last_work = now;
		if (now - last_work < D.spin_ns) {
			/* Busy, or spinning for more: packets and rings are
			 * polled by pump(); look at control traffic and
			 * signals only now and then (a system call per round
			 * costs more than the round, and between two packets
			 * of a bulk transfer there are many idle rounds). */
			/* An idle spin round gives the core away: on a host
			 * with as many busy processes as cores (2 here: the
			 * applications poll their memory) spinning would
			 * starve the very application whose next request
			 * it waits for, for a scheduler slice. */
			if (!work)
				sched_yield();
			if (now - last_epoll < EPOLL_BUSY_NS)
				continue;
		} else if (prepare_sleep()) {
			uint64_t wake = mroce_ep_next_timer(D.ep, now);

			now = now_ns();
			if (wake > now) {
				uint64_t d = wake - now;

				if (d > 1000000000ull)
					d = 1000000000ull;
				ts.tv_sec = (time_t)(d / 1000000000ull);
				ts.tv_nsec = (long)(d % 1000000000ull);
				sleeping = true;
			}
		}
		nev = epoll_pwait2(D.epfd, evs, 64, &ts, NULL);
		last_epoll = now_ns();
		if (sleeping)
			end_sleep();
		if (nev < 0 && errno != EINTR) {
			pr_err("epoll: %s", strerror(errno));
			return 1;
		}
		for (int i = 0; i < nev; i++) {
			struct evtag *t = evs[i].data.ptr;

			switch (t->kind) {
			case EV_LISTEN:
				accept_one();
				break;
			case EV_SIGNAL: {
				struct signalfd_siginfo si;

				if (read(D.sigfd, &si, sizeof(si)) ==
				    sizeof(si)) {
					pr_info("signal %u: shutting down",
						si.ssi_signo);
					shutdown_all();
					return 0;
				}
				break;
			}
			case EV_EP:
				break;
			case EV_KICK: {
				uint64_t v;

				(void)!read(t->s->kick_fd, &v, sizeof(v));
				break;
			}
			case EV_SOCK:
				if (!handle_sock(t->s) ||
				    (evs[i].events & (EPOLLHUP | EPOLLERR)))
					reap_in_batch(t->s, evs, i + 1, nev);
				break;
			}
		}
		if (nev > 0)
			last_work = now_ns();
	}
}

/* ------------------------------------------------------------------ */
/* Start-up                                                             */
/* ------------------------------------------------------------------ */
static int listen_sock(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	char dir[sizeof(a.sun_path)];
	char *slash;
	int fd, probe;

	if (strlen(path) >= sizeof(a.sun_path)) {
		pr_err("socket path too long: %s", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			pr_err("cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	/* A live daemon answers; a stale socket file refuses. */
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe >= 0 && !connect(probe, (struct sockaddr *)&a, sizeof(a))) {
		close(probe);
		pr_err("another mroced is running (socket %s)", path);
		return -1;
	}
	if (probe >= 0)
		close(probe);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 64) < 0 ||
	    (D.sock_mode >= 0 && chmod(path, (mode_t)D.sock_mode) < 0)) {
		pr_err("cannot listen on %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void usage_err(const char *fmt, const char *arg)
{
	fprintf(stderr, "mroced: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'mroced --help'.\n");
	exit(2);
}

static long num(const char *s, const char *what, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "mroced: invalid %s: '%s'\n", what, s);
		fprintf(stderr, "Try 'mroced --help'.\n");
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	enum { O_SPIN = 256, O_SEED, O_MODE };
	static const struct option lo[] = {
		{"local", required_argument, NULL, 'l'},
		{"backend", required_argument, NULL, 'b'},
		{"ifname", required_argument, NULL, 'i'},
		{"queue", required_argument, NULL, 'q'},
		{"attach", no_argument, NULL, 'A'},
		{"sock", required_argument, NULL, 's'},
		{"paths", required_argument, NULL, 'p'},
		{"mtu", required_argument, NULL, 'm'},
		{"rto-min", required_argument, NULL, 'r'},
		{"udp-port", required_argument, NULL, 'u'},
		{"spin-us", required_argument, NULL, O_SPIN},
		{"seed", required_argument, NULL, O_SEED},
		{"sock-mode", required_argument, NULL, O_MODE},
		{"foreground", no_argument, NULL, 'f'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{0}};
	struct mroce_ep_cfg cfg = {0};
	const char *local = NULL, *ifname = NULL;
	bool one_queue = false;
	uint16_t udp_port = 0;
	uint64_t seed = 0;
	sigset_t mask;
	int c, err;

	D.sock_path = MRD_DEFAULT_SOCK;
	D.backend = MRV_BACKEND_UDP;
	D.spin_ns = 50000;
	D.sock_mode = -1;
	for (int t = 0; t < 2; t++) {
		cfg.eng[t].transport =
			t ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE;
		/* a process, not a NIC: as libmroce's embedded mode */
		cfg.eng[t].jitter_us = MROCE_EP_SW_JITTER_US;
	}
	while ((c = getopt_long(argc, argv, "l:b:i:q:As:p:m:r:u:fvh", lo,
				NULL)) != -1) {
		switch (c) {
		case 'l':
			local = optarg;
			break;
		case 'b':
			if (!strcmp(optarg, "udp"))
				D.backend = MRV_BACKEND_UDP;
			else if (!strcmp(optarg, "afxdp"))
				D.backend = MRV_BACKEND_AFXDP;
			else
				usage_err("unknown backend '%s' (udp or afxdp)",
					  optarg);
			break;
		case 'i':
			ifname = optarg;
			break;
		case 'q':
			one_queue = strcmp(optarg, "all") != 0;
			if (one_queue)
				cfg.io.queue = (uint32_t)num(
					optarg, "queue", 0, MROCE_MAX_QUEUES - 1);
			break;
		case 'A':
			D.attached = true; /* requested; set for real below */
			break;
		case 's':
			D.sock_path = optarg;
			break;
		case 'p':
			cfg.eng[0].npaths =
				(uint8_t)num(optarg, "paths", 1, 64);
			break;
		case 'm':
			cfg.eng[0].mtu = cfg.eng[1].mtu =
				(uint16_t)num(optarg, "MTU", 256, 8192);
			break;
		case 'r':
			cfg.eng[0].rto_min_us = cfg.eng[1].rto_min_us =
				(uint32_t)num(optarg, "RTO", 1, 10000000);
			break;
		case 'u':
			udp_port = (uint16_t)num(optarg, "UDP port", 1, 65534);
			break;
		case O_SPIN:
			D.spin_ns = 1000ull * (uint64_t)num(optarg, "spin time",
							    0, 1000000);
			break;
		case O_MODE:
			D.sock_mode = (int)num(optarg, "socket mode", 0, 0777);
			break;
		case O_SEED:
			seed = (uint64_t)num(optarg, "seed", 1, __LONG_MAX__);
			break;
		case 'f':
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(help_text, stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'mroced --help'.\n");
			return 2;
		}
	}
	if (optind < argc)
		usage_err("unexpected argument '%s'", argv[optind]);
	if (!local)
		usage_err("%s", "--local ADDR is required");
	if (D.backend == MRV_BACKEND_AFXDP && !ifname)
		usage_err("%s", "--backend afxdp needs --ifname");
	if (D.attached && D.backend != MRV_BACKEND_AFXDP)
		usage_err("%s", "--attach needs --backend afxdp");
	if (inet_pton(AF_INET, local, D.local) == 1)
		D.family = AF_INET;
	else if (inet_pton(AF_INET6, local, D.local) == 1)
		D.family = AF_INET6;
	else
		usage_err("--local needs a numeric address, not '%s'", local);
	if (ifname)
		snprintf(D.ifname, sizeof(D.ifname), "%s", ifname);

	cfg.io.kind =
		D.backend == MRV_BACKEND_AFXDP ? MROCE_IO_AFXDP : MROCE_IO_UDP;
	cfg.io.family = D.family;
	memcpy(cfg.io.local_addr, D.local, 16);
	cfg.io.mroce_port = udp_port ? udp_port : MROCE_UDP_PORT;
	cfg.io.rocev2_port =
		udp_port ? (uint16_t)(udp_port + 1) : ROCEV2_UDP_PORT;
	cfg.io.ifname = ifname;
	cfg.all_queues = D.backend == MRV_BACKEND_AFXDP && !one_queue;
	cfg.io.frame_size = 4096;
	cfg.io.nframes = 4096;
	cfg.io.sport_min = MROCE_SPORT_MIN;
	cfg.io.sport_max = MROCE_SPORT_MAX;
	for (int t = 0; t < 2; t++)
		cfg.eng[t].seed = seed ? seed + (uint64_t)t : 0;

	libbpf_set_print(bpf_print);
	libxdp_set_print(xdp_print);
	if (D.attached) {
		struct ctl_attach_opts ao = {.mode = CTL_MODE_NATIVE,
					     .ack_offload = true,
					     .mroce_port = cfg.io.mroce_port,
					     .rocev2_port = cfg.io.rocev2_port};
		struct ctl_iface_info info;

		D.attached = false;
		err = ctl_attach(ifname, &ao, &info);
		if (err) {
			pr_err("cannot attach the XDP program to %s: %s (%d)",
			       ifname, mroce_xdp_err_text(err), err);
			return 1;
		}
		D.attached = true;
		pr_info("attached XDP program to %s (prog id %u, %s)", ifname,
			info.prog_id, info.mode);
	}
	err = mroce_ep_open(&cfg, &D.ep);
	if (err < 0) {
		pr_err("cannot open the %s backend on %s%s%s: %s",
		       D.backend == MRV_BACKEND_AFXDP ? "afxdp" : "udp", local,
		       ifname ? " dev " : "", ifname ? ifname : "",
		       strerror(-err));
		goto out_detach;
	}
	/* Signals through the loop: handled between requests, never
	 * inside one. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	D.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	D.epfd = epoll_create1(EPOLL_CLOEXEC);
	D.lfd = listen_sock(D.sock_path);
	if (D.sigfd < 0 || D.epfd < 0 || D.lfd < 0)
		goto out_ep;
	D.tag_listen = (struct evtag){EV_LISTEN, NULL};
	D.tag_signal = (struct evtag){EV_SIGNAL, NULL};
	D.tag_ep = (struct evtag){EV_EP, NULL};
	if (ep_add(D.lfd, &D.tag_listen) < 0 ||
	    ep_add(D.sigfd, &D.tag_signal) < 0 ||
	    (mroce_ep_fd(D.ep) >= 0 &&
	     ep_add(mroce_ep_fd(D.ep), &D.tag_ep) < 0)) {
		pr_err("epoll: %s", strerror(errno));
		goto out_sock;
	}
	D.start_ns = now_ns();
	pr_info("serving %s on %s (%s%s, %d queue%s, mtu %u) at %s",
		"metaroce+rocev2", local,
		D.backend == MRV_BACKEND_AFXDP ? "afxdp " : "udp",
		ifname ? ifname : "", mroce_ep_nqueues(D.ep),
		mroce_ep_nqueues(D.ep) == 1 ? "" : "s", mroce_ep_mtu(D.ep),
		D.sock_path);
	err = run();
	log_queue_stats();
	close(D.lfd);
	unlink(D.sock_path);
	close(D.epfd);
	close(D.sigfd);
	mroce_ep_close(D.ep);
	if (D.attached) {
		int e2 = ctl_detach(ifname);

		if (e2)
			pr_err("detach from %s: %s", ifname,
			       mroce_xdp_err_text(e2));
		else
			pr_info("detached XDP program from %s", ifname);
	}
	return err ? 1 : 0;
out_sock:
	close(D.lfd);
	unlink(D.sock_path);
out_ep:
	mroce_ep_close(D.ep);
out_detach:
	if (D.attached)
		(void)ctl_detach(ifname);
	return 1;
}
