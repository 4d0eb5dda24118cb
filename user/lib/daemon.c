// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * libmroce, daemon mode: the verbs of include/mroce/mroce.h served by the
 * mroced daemon (user/mroced/mroced.c) through the protocol of
 * user/common/ipc.h.
 *
 * Control calls (create, modify, query, destroy) are synchronous requests
 * over the device's SOCK_SEQPACKET socket. Work requests go into the
 * shared submission ring and completions come out of one shared ring per
 * CQ: no system call per request while the daemon is awake; a doorbell
 * (eventfd write) only when the daemon said it sleeps.
 *
 * The library keeps, per QP, a record of every work request the daemon
 * has not completed yet (wr_id, opcode, buffer). It serves three things:
 * the queue limits (max_send_wr / max_recv_wr -> -EAGAIN, as ibverbs: an
 * unsignaled send is retired by a later completion of the same QP), the
 * copy back of bounce-buffered MRs at completion time, and the flush when
 * the daemon dies: every recorded request then completes with
 * MRV_WC_WR_FLUSH_ERR, after the completions already in the rings, and
 * later calls return -ENOTCONN. A dead daemon is seen as a hang-up of the
 * socket: checked in every control call, in mrv_wait_cq()'s poll() and,
 * at most once a millisecond, when mrv_poll_cq() finds its ring empty.
 *
 * Memory: mrv_alloc_mr() memory is a sealed memfd that the daemon maps
 * too (zero copy, registered at the application's address). mrv_reg_mr()
 * of arbitrary memory gets a bounce memfd shared with the daemon: the
 * library copies the source into it when posting a SEND/WRITE, and copies
 * received data (RECV, READ) back at completion. A peer's WRITE or READ
 * could not be copied at any defined moment, so REMOTE_* rights on such
 * memory are refused with -ENOTSUP.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../common/ipc.h"
#include "daemon_int.h"
#include "lib_int.h"

#define MRD_RPC_TIMEOUT_S 10
#define MRD_CHECK_NS 1000000ull /* liveness check while idle */
#define MRD_SPIN_NS 50000ull
/* mrv_poll_cq() with the CQ's own sends outstanding: after this long of
 * empty polls, an empty poll naps on the completion doorbell for at most
 * MRD_NAP_NS instead of only yielding (see mrd_poll_cq). */
#define MRD_POLL_SPIN_NS 20000ull
#define MRD_NAP_NS 200000ull

struct mrd_mr {
	struct mrv_mr *mr;
	uint32_t lkey;
	uint8_t *bounce; /* mrv_reg_mr: our mapping of the bounce memfd */
	int bounce_fd;
	size_t map_len;
	struct mrd_mr *next;
};

struct mrd_wqe {
	uint64_t wr_id;
	uint64_t addr; /* application address of the SGE */
	uint32_t len;
	uint8_t opcode; /* enum mrv_wr_opcode (sends) */
	uint8_t signaled;
	struct mrd_mr *bounce; /* copy back at completion (RECV, READ) */
};

struct mrd_fifo {
	struct mrd_wqe *e;
	uint32_t cap, head, n;
};

struct mrd_cq {
	struct mrv_cq base;
	struct mrd_ring_hdr *hdr;
	struct mrd_cqe *ring;
	uint32_t entries;
	/* Completions made by the library (flush after the daemon died). */
	struct mrv_wc *local;
	int nlocal, caplocal, localhead;
	uint64_t empty_since; /* first of a run of empty polls, 0: none */
	uint64_t empty_last;  /* last empty poll of that run */
	struct mrd_cq *next;
};

struct mrd_qp {
	struct mrv_qp base;
	enum mrv_qp_state state; /* as last set or queried */
	struct mrd_fifo sq, rq;
	struct mrd_qp *next;
};

struct mrd_pd {
	struct mrv_pd base;
	uint32_t handle;
};

struct mrd_dev {
	struct mrv_device *dev;
	int sock;
	uint32_t seq;
	void *shm;
	size_t shm_size;
	struct mrd_shm *hdr;
	struct mrd_sqe *sq;
	uint32_t sq_entries;
	int kick_fd, cq_fd;
	bool dead;
	bool notify_always;
	uint64_t next_check;
	struct mrd_mr *mrs;
	struct mrd_qp *qps, *last_qp;
	struct mrd_cq *cqs;
};

static struct mrd_cq *dcq(struct mrv_cq *cq)
{
	return (struct mrd_cq *)cq;
}

static struct mrd_qp *dqp(struct mrv_qp *qp)
{
	return (struct mrd_qp *)qp;
}

static struct mrd_pd *dpd(struct mrv_pd *pd)
{
	return (struct mrd_pd *)pd;
}

/* ------------------------------------------------------------------ */
/* Completions                                                          */
/* ------------------------------------------------------------------ */
static struct mrd_qp *find_qp(struct mrd_dev *d, uint32_t qpn)
{
	if (d->last_qp && d->last_qp->base.qpn == qpn)
		return d->last_qp;
	for (struct mrd_qp *q = d->qps; q; q = q->next)
		if (q->base.qpn == qpn)
			return d->last_qp = q;
	return NULL;
}

static struct mrd_wqe *fifo_at(struct mrd_fifo *f, uint32_t i)
{
	return &f->e[(f->head + i) % f->cap];
}

static void fifo_pop(struct mrd_fifo *f, uint32_t k)
{
	f->head = (f->head + k) % f->cap;
	f->n -= k;
}

static void copy_back(const struct mrd_wqe *w, uint32_t len)
{
	struct mrd_mr *m = w->bounce;
	uint64_t off;

	if (!m || len > w->len)
		len = m ? w->len : 0;
	if (!m || !len)
		return;
	off = w->addr - (uint64_t)(uintptr_t)m->mr->addr;
	memcpy((void *)(uintptr_t)w->addr, m->bounce + off, len);
}

/* Retires the request a completion belongs to (and, for sends, the
 * unsignaled ones posted before it). */
static void retire(struct mrd_dev *d, const struct mrv_wc *wc)
{
	struct mrd_qp *q = find_qp(d, wc->qp_num);

	if (!q)
		return;
	if (wc->opcode == MRV_WC_RECV ||
	    wc->opcode == MRV_WC_RECV_RDMA_WITH_IMM) {
		if (q->rq.n) {
			if (wc->status == MRV_WC_SUCCESS)
				copy_back(fifo_at(&q->rq, 0), wc->byte_len);
			fifo_pop(&q->rq, 1);
		}
		return;
	}
	for (uint32_t i = 0; i < q->sq.n; i++) {
		struct mrd_wqe *w = fifo_at(&q->sq, i);

		if (w->wr_id != wc->wr_id)
			continue;
		if (wc->status == MRV_WC_SUCCESS &&
		    w->opcode == MRV_WR_RDMA_READ)
			copy_back(w, w->len);
		fifo_pop(&q->sq, i + 1);
		return;
	}
}

static int local_push(struct mrd_cq *c, const struct mrv_wc *wc)
{
	if (c->nlocal == c->caplocal) {
		int cap = c->caplocal ? 2 * c->caplocal : 64;
		struct mrv_wc *n;

		if (c->localhead) {
			memmove(c->local, c->local + c->localhead,
				(size_t)(c->nlocal - c->localhead) *
					sizeof(*n));
			c->nlocal -= c->localhead;
			c->localhead = 0;
		}
		if (c->nlocal < c->caplocal)
			goto add;
		n = realloc(c->local, (size_t)cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		c->local = n;
		c->caplocal = cap;
	}
add:
	c->local[c->nlocal++] = *wc;
	return 0;
}

static void cqe_to_wc(const struct mrd_cqe *e, struct mrv_wc *wc)
{
	*wc = (struct mrv_wc){
		.wr_id = e->wr_id,
		.status = (enum mrv_wc_status)e->status,
		.opcode = (enum mrv_wc_opcode)e->opcode,
		.byte_len = e->byte_len,
		.imm_data = e->imm,
		.qp_num = e->qpn,
		.wc_flags = e->flags,
	};
}

/* Takes up to n completions from the shared ring. */
static int ring_take(struct mrd_dev *d, struct mrd_cq *c, int n,
		     struct mrv_wc *wc)
{
	uint32_t tail =
		atomic_load_explicit(&c->hdr->tail, memory_order_relaxed);
	uint32_t head =
		atomic_load_explicit(&c->hdr->head, memory_order_acquire);
	bool was_full = head - tail == c->entries;
	int got = 0;

	while (tail != head && got < n) {
		struct mrd_cqe e = c->ring[tail & (c->entries - 1)];

		tail++;
		cqe_to_wc(&e, &wc[got]);
		retire(d, &wc[got]);
		got++;
	}
	if (got) {
		atomic_store(&c->hdr->tail, tail); /* seq_cst: see ipc.h */
		/* The daemon stops filling a full ring and may have gone to
		 * sleep with completions still in the engine: wake it. */
		if (was_full && atomic_load(&d->hdr->daemon_sleeping)) {
			uint64_t one = 1;

			(void)!write(d->kick_fd, &one, sizeof(one));
		}
	}
	return got;
}

static bool ring_ready(struct mrd_cq *c)
{
	return c->nlocal > c->localhead ||
	       atomic_load(&c->hdr->head) !=
		       atomic_load_explicit(&c->hdr->tail,
					    memory_order_relaxed);
}

static void flush_fifo(struct mrd_qp *q, struct mrd_fifo *f, bool recv)
{
	struct mrd_cq *c = dcq(recv ? q->base.recv_cq : q->base.send_cq);

	for (uint32_t i = 0; i < f->n; i++) {
		struct mrd_wqe *w = fifo_at(f, i);
		struct mrv_wc wc = {
			.wr_id = w->wr_id,
			.status = MRV_WC_WR_FLUSH_ERR,
			.qp_num = q->base.qpn,
		};

		if (recv)
			wc.opcode = MRV_WC_RECV;
		else if (w->opcode == MRV_WR_RDMA_READ)
			wc.opcode = MRV_WC_RDMA_READ;
		else if (w->opcode == MRV_WR_RDMA_WRITE ||
			 w->opcode == MRV_WR_RDMA_WRITE_WITH_IMM)
			wc.opcode = MRV_WC_RDMA_WRITE;
		else
			wc.opcode = MRV_WC_SEND;
		(void)local_push(c, &wc);
	}
	f->head = f->n = 0;
}

/* The daemon is gone: what it completed stays in the rings' order, then
 * every request still recorded completes flushed. */
static void went_dead(struct mrd_dev *d)
{
	if (d->dead)
		return;
	d->dead = true;
	for (struct mrd_cq *c = d->cqs; c; c = c->next) {
		struct mrv_wc wc[64];
		int n;

		while ((n = ring_take(d, c, 64, wc)) > 0)
			for (int i = 0; i < n; i++)
				(void)local_push(c, &wc[i]);
	}
	for (struct mrd_qp *q = d->qps; q; q = q->next) {
		flush_fifo(q, &q->sq, false);
		flush_fifo(q, &q->rq, true);
		q->state = MRV_QPS_ERR;
	}
}

/* Non-blocking: has the daemon hung up? */
static bool check_alive(struct mrd_dev *d)
{
	struct pollfd p = {.fd = d->sock, .events = POLLIN};
	char c;

	if (d->dead)
		return false;
	if (poll(&p, 1, 0) > 0 &&
	    ((p.revents & (POLLHUP | POLLERR)) ||
	     recv(d->sock, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0)) {
		went_dead(d);
		return false;
	}
	return true;
}

static void check_alive_sometimes(struct mrd_dev *d)
{
	uint64_t now = mrv_now_ns();

	if (now >= d->next_check) {
		d->next_check = now + MRD_CHECK_NS;
		(void)check_alive(d);
	}
}

/* ------------------------------------------------------------------ */
/* Control requests                                                     */
/* ------------------------------------------------------------------ */
static int rpc(struct mrd_dev *d, uint16_t op, struct mrd_req *q,
	       struct mrd_rep *r, int sendfd, int *rfds, int nrfds)
{
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = q, .iov_len = sizeof(*q)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	int got = 0;
	ssize_t n;

	if (d->dead)
		return -ENOTCONN;
	q->version = MRD_VERSION;
	q->op = op;
	q->seq = ++d->seq;
	if (sendfd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &sendfd, sizeof(int));
	}
	do
		n = sendmsg(d->sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*q)) {
		went_dead(d);
		return -ENOTCONN;
	}
	iov = (struct iovec){.iov_base = r, .iov_len = sizeof(*r)};
	m = (struct msghdr){.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = u.buf,
			    .msg_controllen = sizeof(u.buf)};
	do
		n = recvmsg(d->sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); n > 0 && c;
	     c = CMSG_NXTHDR(&m, c)) {
		int k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (got < nrfds)
				rfds[got++] = fd;
			else
				close(fd);
		}
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
		/* A daemon that stopped answering is as good as dead. */
		went_dead(d);
		return -ETIMEDOUT;
	}
	if (n <= 0) {
		went_dead(d);
		return -ENOTCONN;
	}
	if (n != (ssize_t)sizeof(*r) || r->version != MRD_VERSION ||
	    r->seq != q->seq || r->op != op) {
		for (int i = 0; i < got; i++)
			close(rfds[i]);
		went_dead(d);
		return -EPROTO;
	}
	if (!r->err && got < nrfds) {
		for (int i = 0; i < got; i++)
			close(rfds[i]);
		return -EPROTO;
	}
	return r->err;
}

/* Asks the daemon to destroy the object q names. A daemon that is gone
 * took its objects with it: then the caller frees its own state all the
 * same, and this returns 0. */
static int rpc_destroy(struct mrd_dev *d, uint16_t op, struct mrd_req *q)
{
	struct mrd_rep r;
	int err = rpc(d, op, q, &r, -1, NULL, 0);

	return err < 0 && !d->dead ? err : 0;
}

/* Takes x off the singly linked list that starts at head (via ->next). */
#define LIST_UNLINK(head, x)                                                   \
	do {                                                                   \
		for (__typeof__(x) *pp_ = &(head); *pp_; pp_ = &(*pp_)->next)  \
			if (*pp_ == (x)) {                                     \
				*pp_ = (x)->next;                              \
				break;                                         \
			}                                                      \
	} while (0)

static struct mrd_dev *ddev(const struct mrv_device *dev)
{
	return dev->daemon;
}

/* ------------------------------------------------------------------ */
/* Device                                                               */
/* ------------------------------------------------------------------ */
int mrd_open_device(const struct mrv_dev_attr *attr, struct mrv_device **out)
{
	const char *path =
		attr->daemon_sock ? attr->daemon_sock : MRD_DEFAULT_SOCK;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = MRD_RPC_TIMEOUT_S};
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct mrv_device *dev;
	struct mrd_dev *d;
	int fds[3] = {-1, -1, -1}, err;

	if (attr->transport && attr->transport != MRV_TRANSPORT_METAROCE &&
	    attr->transport != MRV_TRANSPORT_ROCEV2)
		return -EINVAL;
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	dev = calloc(1, sizeof(*dev));
	d = calloc(1, sizeof(*d));
	if (!dev || !d) {
		free(dev);
		free(d);
		return -ENOMEM;
	}
	d->dev = dev;
	dev->daemon = d;
	d->kick_fd = d->cq_fd = -1;
	d->sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (d->sock < 0) {
		err = -errno;
		goto fail;
	}
	if (connect(d->sock, (struct sockaddr *)&a, sizeof(a)) < 0) {
		err = -errno; /* -ENOENT / -ECONNREFUSED: no daemon */
		goto fail;
	}
	(void)setsockopt(d->sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	q.u.hello.transport =
		attr->transport ? attr->transport : MRV_TRANSPORT_METAROCE;
	q.u.hello.pid = (uint32_t)getpid();
	err = rpc(d, MRD_OP_HELLO, &q, &r, -1, fds, 3);
	if (err < 0)
		goto fail;
	if (r.u.hello.shm_size <
		    r.u.hello.sq_off + (uint64_t)r.u.hello.sq_entries *
					       sizeof(struct mrd_sqe) ||
	    !r.u.hello.sq_entries ||
	    (r.u.hello.sq_entries & (r.u.hello.sq_entries - 1))) {
		err = -EPROTO;
		goto fail;
	}
	d->shm_size = r.u.hello.shm_size;
	d->shm = mmap(NULL, d->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		      fds[0], 0);
	close(fds[0]);
	fds[0] = -1;
	if (d->shm == MAP_FAILED) {
		d->shm = NULL;
		err = -errno;
		goto fail;
	}
	d->hdr = d->shm;
	if (d->hdr->magic != MRD_SHM_MAGIC || d->hdr->version != MRD_VERSION) {
		err = -EPROTO;
		goto fail;
	}
	d->sq = (struct mrd_sqe *)((uint8_t *)d->shm + r.u.hello.sq_off);
	d->sq_entries = r.u.hello.sq_entries;
	d->kick_fd = fds[1];
	d->cq_fd = fds[2];
	dev->transport = r.u.hello.transport;
	dev->mtu = r.u.hello.mtu;
	dev->family = r.u.hello.family;
	memcpy(dev->local, r.u.hello.local, 16);
	*out = dev;
	return 0;
fail:
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (d->shm)
		munmap(d->shm, d->shm_size);
	if (d->sock >= 0)
		close(d->sock);
	free(d);
	free(dev);
	return err;
}

int mrd_close_device(struct mrv_device *dev)
{
	struct mrd_dev *d = ddev(dev);

	if (dev->npds || dev->ncqs)
		return -EBUSY;
	close(d->sock); /* the daemon releases the session */
	munmap(d->shm, d->shm_size);
	close(d->kick_fd);
	close(d->cq_fd);
	free(d);
	free(dev);
	return 0;
}

int mrd_progress(struct mrv_device *dev)
{
	struct mrd_dev *d = ddev(dev);

	check_alive_sometimes(d);
	if (d->dead)
		return -ENOTCONN;
	/* Called in loops that wait on memory: the daemon does the work
	 * and may need this core. */
	sched_yield();
	return 0;
}

int mrd_device_fd(const struct mrv_device *dev)
{
	struct mrd_dev *d = ddev(dev);

	/* An application polling this fd itself cannot announce each
	 * sleep: the daemon then signals after every batch. */
	d->notify_always = true;
	atomic_store(&d->hdr->app_waiting, 1);
	return d->cq_fd;
}

int mrd_query_stats(const struct mrv_device *dev, struct mrv_dev_stats *st)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err = rpc(ddev(dev), MRD_OP_QUERY_STATS, &q, &r, -1, NULL, 0);

	if (err < 0)
		return err;
	*st = r.u.stats;
	return 0;
}

/* ------------------------------------------------------------------ */
/* PD and MR                                                            */
/* ------------------------------------------------------------------ */
int mrd_alloc_pd(struct mrv_device *dev, struct mrv_pd **out)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct mrd_pd *pd;
	int err = rpc(ddev(dev), MRD_OP_ALLOC_PD, &q, &r, -1, NULL, 0);

	if (err < 0)
		return err;
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return -ENOMEM; /* the daemon frees it with the session */
	pd->base.dev = dev;
	pd->handle = r.u.pd.handle;
	dev->npds++;
	*out = &pd->base;
	return 0;
}

int mrd_dealloc_pd(struct mrv_pd *pd)
{
	struct mrd_dev *d = ddev(pd->dev);
	struct mrd_req q = {0};
	int err;

	if (pd->nmrs || pd->nqps)
		return -EBUSY;
	q.u.pd.pd = dpd(pd)->handle;
	err = rpc_destroy(d, MRD_OP_DEALLOC_PD, &q);
	if (err < 0)
		return err;
	pd->dev->npds--;
	free(pd);
	return 0;
}

/* A memfd of `size` bytes sealed against resizing (so that the daemon,
 * which maps it too, can never be made to fault by a truncate), mapped
 * here. Returns the fd and sets *map, or -errno. */
static int sealed_memfd(size_t size, const char *name, void **map)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

static size_t page_up(size_t len)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (len + page - 1) & ~(page - 1);
}

/* Registers [iova, iova+len) held by memfd `fd`. */
static int reg_fd(struct mrv_pd *pd, int fd, void *iova, size_t len,
		  uint32_t access, struct mrv_mr **out, struct mrd_mr **dmr)
{
	struct mrd_dev *d = ddev(pd->dev);
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct mrv_mr *mr;
	struct mrd_mr *m;
	int err;

	q.u.reg_mr.pd = dpd(pd)->handle;
	q.u.reg_mr.access = access;
	q.u.reg_mr.len = len;
	q.u.reg_mr.iova = (uint64_t)(uintptr_t)iova;
	err = rpc(d, MRD_OP_REG_MR, &q, &r, fd, NULL, 0);
	if (err < 0)
		return err;
	mr = calloc(1, sizeof(*mr));
	m = calloc(1, sizeof(*m));
	if (!mr || !m) {
		free(mr);
		free(m);
		q.u.dereg_mr.lkey = r.u.mr.lkey;
		(void)rpc(d, MRD_OP_DEREG_MR, &q, &r, -1, NULL, 0);
		return -ENOMEM;
	}
	mr->addr = iova;
	mr->length = len;
	mr->lkey = r.u.mr.lkey;
	mr->rkey = r.u.mr.rkey;
	mr->access = access;
	mr->pd = pd;
	mr->fd = -1;
	mr->priv = m;
	m->mr = mr;
	m->lkey = mr->lkey;
	m->bounce_fd = -1;
	m->next = d->mrs;
	d->mrs = m;
	pd->nmrs++;
	*out = mr;
	*dmr = m;
	return 0;
}

/* A new sealed memfd of len bytes (rounded up to pages), mapped here at
 * *map and registered as an MR at iova (NULL: at *map, the whole memfd).
 * Returns the fd, or -errno with nothing left behind. */
static int reg_new_memfd(struct mrv_pd *pd, void *iova, size_t len,
			 uint32_t access, const char *name, struct mrv_mr **out,
			 struct mrd_mr **dmr, void **map)
{
	size_t size = page_up(len);
	int fd, err;

	fd = sealed_memfd(size, name, map);
	if (fd < 0)
		return fd;
	err = reg_fd(pd, fd, iova ? iova : *map, iova ? len : size, access, out,
		     dmr);
	if (err < 0) {
		munmap(*map, size);
		close(fd);
		return err;
	}
	(*dmr)->map_len = size;
	return fd;
}

static bool access_valid(uint32_t access)
{
	return !(access &
		 ~(uint32_t)(MRV_ACCESS_LOCAL_WRITE | MRV_ACCESS_REMOTE_WRITE |
			     MRV_ACCESS_REMOTE_READ));
}

int mrd_reg_mr(struct mrv_pd *pd, void *addr, size_t len, uint32_t access,
	       struct mrv_mr **out)
{
	struct mrd_mr *m;
	void *p;
	int fd;

	if (!access_valid(access))
		return -EINVAL;
	/* Remote access to memory the daemon cannot map: see the top. */
	if (access & (MRV_ACCESS_REMOTE_WRITE | MRV_ACCESS_REMOTE_READ))
		return -ENOTSUP;
	fd = reg_new_memfd(pd, addr, len, access, "mroce-bounce", out, &m, &p);
	if (fd < 0)
		return fd;
	m->bounce = p;
	m->bounce_fd = fd;
	return 0;
}

int mrd_alloc_mr(struct mrv_pd *pd, size_t len, uint32_t access,
		 struct mrv_mr **out)
{
	struct mrd_mr *m;
	void *p;
	int fd;

	if (!access_valid(access))
		return -EINVAL;
	fd = reg_new_memfd(pd, NULL, len, access, "mroce-mr", out, &m, &p);
	if (fd < 0)
		return fd;
	(*out)->fd = fd;
	return 0;
}

int mrd_dereg_mr(struct mrv_mr *mr)
{
	struct mrd_dev *d = ddev(mr->pd->dev);
	struct mrd_mr *m = mr->priv;
	struct mrd_req q = {0};
	int err;

	q.u.dereg_mr.lkey = mr->lkey;
	err = rpc_destroy(d, MRD_OP_DEREG_MR, &q);
	if (err < 0)
		return err;
	LIST_UNLINK(d->mrs, m);
	if (m->bounce) {
		munmap(m->bounce, m->map_len);
		close(m->bounce_fd);
	}
	if (mr->fd >= 0) {
		munmap(mr->addr, m->map_len);
		close(mr->fd);
	}
	mr->pd->nmrs--;
	free(m);
	free(mr);
	return 0;
}

static struct mrd_mr *find_mr(struct mrd_dev *d, uint32_t lkey)
{
	for (struct mrd_mr *m = d->mrs; m; m = m->next)
		if (m->lkey == lkey)
			return m;
	return NULL;
}

/* ------------------------------------------------------------------ */
/* CQ                                                                   */
/* ------------------------------------------------------------------ */
int mrd_create_cq(struct mrv_device *dev, int depth, struct mrv_cq **out)
{
	struct mrd_dev *d = ddev(dev);
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct mrd_cq *c;
	uint64_t end;
	int err;

	q.u.create_cq.depth = (uint32_t)depth;
	err = rpc(d, MRD_OP_CREATE_CQ, &q, &r, -1, NULL, 0);
	if (err < 0)
		return err;
	end = (uint64_t)r.u.cq.ring_off + sizeof(struct mrd_ring_hdr) +
	      (uint64_t)r.u.cq.entries * sizeof(struct mrd_cqe);
	c = calloc(1, sizeof(*c));
	if (!c || end > d->shm_size || !r.u.cq.entries ||
	    (r.u.cq.entries & (r.u.cq.entries - 1)) || (r.u.cq.ring_off & 63)) {
		free(c);
		q.u.cq.cq = r.u.cq.cq;
		(void)rpc(d, MRD_OP_DESTROY_CQ, &q, &r, -1, NULL, 0);
		return c ? -EPROTO : -ENOMEM;
	}
	c->base.dev = dev;
	c->base.id = (int)r.u.cq.cq;
	c->hdr = (struct mrd_ring_hdr *)((uint8_t *)d->shm + r.u.cq.ring_off);
	c->ring = (struct mrd_cqe *)(c->hdr + 1);
	c->entries = r.u.cq.entries;
	c->next = d->cqs;
	d->cqs = c;
	dev->ncqs++;
	*out = &c->base;
	return 0;
}

int mrd_destroy_cq(struct mrv_cq *cq)
{
	struct mrd_dev *d = ddev(cq->dev);
	struct mrd_cq *c = dcq(cq);
	struct mrd_req q = {0};
	int err;

	if (cq->nqps)
		return -EBUSY;
	q.u.cq.cq = (uint32_t)cq->id;
	err = rpc_destroy(d, MRD_OP_DESTROY_CQ, &q);
	if (err < 0)
		return err;
	LIST_UNLINK(d->cqs, c);
	cq->dev->ncqs--;
	free(c->local);
	free(c);
	return 0;
}

/* Sleeps on the completion doorbell and the control socket until the
 * ring has entries, the daemon hangs up or timeout_ns (UINT64_MAX: none)
 * passed. Announces the sleep first and looks once more (see ipc.h). */
static int nap(struct mrd_dev *d, struct mrd_cq *c, uint64_t timeout_ns)
{
	struct pollfd p[2] = {{.fd = d->cq_fd, .events = POLLIN},
			      {.fd = d->sock, .events = POLLIN}};
	struct timespec ts, *tsp = NULL;
	uint64_t v;
	int err = 0;

	atomic_store(&d->hdr->app_waiting, 1);
	if (!ring_ready(c)) {
		if (timeout_ns != UINT64_MAX) {
			ts.tv_sec = (time_t)(timeout_ns / 1000000000ull);
			ts.tv_nsec = (long)(timeout_ns % 1000000000ull);
			tsp = &ts;
		}
		if (ppoll(p, 2, tsp, NULL) < 0 && errno != EINTR)
			err = -errno;
		else if (p[1].revents)
			(void)check_alive(d);
	}
	if (!d->notify_always)
		atomic_store_explicit(&d->hdr->app_waiting, 0,
				      memory_order_relaxed);
	/* Consume the doorbell (a late one only costs a spurious wake-up
	 * of the next nap, which then finds the ring as it is). */
	if (p[0].revents & POLLIN)
		(void)!read(d->cq_fd, &v, sizeof(v));
	return err;
}

/* Are sends whose completions go to this CQ outstanding? */
static bool sends_pending(struct mrd_dev *d, struct mrd_cq *c)
{
	for (struct mrd_qp *q = d->qps; q; q = q->next)
		if (q->sq.n && dcq(q->base.send_cq) == c)
			return true;
	return false;
}

int mrd_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc)
{
	struct mrd_dev *d = ddev(cq->dev);
	struct mrd_cq *c = dcq(cq);
	int got = 0;
	uint64_t now;

	if (d->notify_always && !d->dead) {
		uint64_t v;

		/* Reset the fd the application polls before looking at the
		 * ring: a completion arriving after this signals it again. */
		(void)!read(d->cq_fd, &v, sizeof(v));
	}
	while (got < n && c->localhead < c->nlocal)
		wc[got++] = c->local[c->localhead++];
	if (c->localhead == c->nlocal)
		c->localhead = c->nlocal = 0;
	if (!d->dead && got < n)
		got += ring_take(d, c, n - got, wc + got);
	if (got) {
		c->empty_since = 0;
		return got;
	}
	if (d->dead)
		return n ? -ENOTCONN : 0;
	check_alive_sometimes(d);
	if (d->dead) /* the flush may have filled the local list */
		return mrd_poll_cq(cq, n, wc);
	/* Nothing yet: the work happens in the daemon, which may share this
	 * core (2-core hosts). First let it run; once the ring stayed empty
	 * for a while and this CQ waits for our own sends, sleep until the
	 * daemon rings (bounded): a caller that spins on an empty CQ would
	 * otherwise keep a core the daemon needs. */
	now = mrv_now_ns();
	if (!c->empty_since || now - c->empty_last > MRD_NAP_NS)
		c->empty_since = now; /* a new run of empty polls */
	c->empty_last = now;
	if (now - c->empty_since < MRD_POLL_SPIN_NS || !n ||
	    !sends_pending(d, c)) {
		sched_yield();
		return 0;
	}
	(void)nap(d, c, MRD_NAP_NS);
	c->empty_last = mrv_now_ns(); /* the nap continues the run */
	if (d->dead)
		return mrd_poll_cq(cq, n, wc);
	got = ring_take(d, c, n, wc);
	if (got)
		c->empty_since = 0;
	return got;
}

int mrd_wait_cq(struct mrv_cq *cq, int timeout_ms)
{
	struct mrd_dev *d = ddev(cq->dev);
	struct mrd_cq *c = dcq(cq);
	uint64_t start = mrv_now_ns(), deadline;

	deadline = timeout_ms < 0 ? UINT64_MAX
				  : start + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		uint64_t now;
		int err;

		if (ring_ready(c))
			return 1;
		if (d->dead)
			return -ENOTCONN;
		now = mrv_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		if (now - start < MRD_SPIN_NS) {
			/* The daemon may need this core to make the
			 * completion we wait for. */
			sched_yield();
			continue;
		}
		err = nap(d, c,
			  deadline == UINT64_MAX ? UINT64_MAX : deadline - now);
		if (err < 0)
			return err;
	}
}

/* ------------------------------------------------------------------ */
/* QP                                                                   */
/* ------------------------------------------------------------------ */
int mrd_create_qp(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
		  struct mrv_qp **out)
{
	struct mrd_dev *d = ddev(pd->dev);
	struct mrd_req q = {0};
	struct mrd_rep r;
	struct mrd_qp *qp;
	int err;

	if (attr->max_send_wr > 65536 || attr->max_recv_wr > 65536)
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->sq.cap = attr->max_send_wr ? attr->max_send_wr : 128;
	qp->rq.cap = attr->max_recv_wr ? attr->max_recv_wr : 128;
	qp->sq.e = calloc(qp->sq.cap, sizeof(*qp->sq.e));
	qp->rq.e = calloc(qp->rq.cap, sizeof(*qp->rq.e));
	if (!qp->sq.e || !qp->rq.e) {
		err = -ENOMEM;
		goto fail;
	}
	q.u.create_qp.pd = dpd(pd)->handle;
	q.u.create_qp.send_cq = (uint32_t)attr->send_cq->id;
	q.u.create_qp.recv_cq = (uint32_t)attr->recv_cq->id;
	q.u.create_qp.max_send_wr = qp->sq.cap;
	q.u.create_qp.max_recv_wr = qp->rq.cap;
	err = rpc(d, MRD_OP_CREATE_QP, &q, &r, -1, NULL, 0);
	if (err < 0)
		goto fail;
	qp->base.pd = pd;
	qp->base.send_cq = attr->send_cq;
	qp->base.recv_cq = attr->recv_cq;
	qp->base.qpn = r.u.qp.qpn;
	qp->base.peer = -1;
	qp->state = MRV_QPS_RESET;
	qp->next = d->qps;
	d->qps = qp;
	pd->nqps++;
	attr->send_cq->nqps++;
	attr->recv_cq->nqps++;
	*out = &qp->base;
	return 0;
fail:
	free(qp->sq.e);
	free(qp->rq.e);
	free(qp);
	return err;
}

int mrd_destroy_qp(struct mrv_qp *qp)
{
	struct mrd_dev *d = ddev(qp->pd->dev);
	struct mrd_qp *x = dqp(qp);
	struct mrd_req q = {0};
	int err;

	q.u.qp.qpn = qp->qpn;
	err = rpc_destroy(d, MRD_OP_DESTROY_QP, &q);
	if (err < 0)
		return err;
	LIST_UNLINK(d->qps, x);
	if (d->last_qp == x)
		d->last_qp = NULL;
	qp->pd->nqps--;
	qp->send_cq->nqps--;
	qp->recv_cq->nqps--;
	free(x->sq.e);
	free(x->rq.e);
	free(x);
	return 0;
}

int mrd_modify_qp(struct mrv_qp *qp, const struct mrv_qp_attr *attr,
		  uint32_t mask)
{
	struct mrd_dev *d = ddev(qp->pd->dev);
	struct mrd_qp *x = dqp(qp);
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err;

	q.u.modify_qp.qpn = qp->qpn;
	q.u.modify_qp.mask = mask;
	q.u.modify_qp.state = attr->qp_state;
	q.u.modify_qp.access = attr->qp_access_flags;
	q.u.modify_qp.dest_qpn = attr->dest_qp_num;
	q.u.modify_qp.rq_psn = attr->rq_psn;
	q.u.modify_qp.sq_psn = attr->sq_psn;
	memcpy(q.u.modify_qp.dest_addr, attr->dest_addr,
	       sizeof(attr->dest_addr));
	err = rpc(d, MRD_OP_MODIFY_QP, &q, &r, -1, NULL, 0);
	if (err < 0)
		return err;
	if (mask & MRV_QP_STATE) {
		x->state = attr->qp_state;
		if (x->state == MRV_QPS_RESET) /* the engine dropped them */
			x->sq.head = x->sq.n = x->rq.head = x->rq.n = 0;
	}
	if (mask & MRV_QP_DEST)
		qp->peer = 0; /* known to the daemon */
	return 0;
}

int mrd_query_qp(struct mrv_qp *qp, struct mrv_qp_attr *attr)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err;

	q.u.qp.qpn = qp->qpn;
	err = rpc(ddev(qp->pd->dev), MRD_OP_QUERY_QP, &q, &r, -1, NULL, 0);
	if (err < 0)
		return err;
	memset(attr, 0, sizeof(*attr));
	attr->qp_state = (enum mrv_qp_state)r.u.qattr.state;
	attr->qp_access_flags = r.u.qattr.access;
	attr->dest_qp_num = r.u.qattr.dest_qpn;
	attr->rq_psn = r.u.qattr.rq_psn;
	attr->sq_psn = r.u.qattr.sq_psn;
	memcpy(attr->dest_addr, r.u.qattr.dest_addr,
	       sizeof(attr->dest_addr) - 1);
	dqp(qp)->state = attr->qp_state;
	return 0;
}

int mrd_query_path(struct mrv_qp *qp, int idx, struct mrv_path_info *out)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err;

	q.u.qp.qpn = qp->qpn;
	q.u.qp.idx = idx;
	err = rpc(ddev(qp->pd->dev), MRD_OP_QUERY_PATH, &q, &r, -1, NULL, 0);
	if (err < 0)
		return err;
	*out = (struct mrv_path_info){
		.sport = r.u.path.sport,
		.alive = r.u.path.alive,
		.srtt_us = r.u.path.srtt_us,
		.cwnd_pkts = r.u.path.cwnd_pkts,
		.inflight = r.u.path.inflight,
		.tx_pkts = r.u.path.tx_pkts,
		.retransmits = r.u.path.retransmits,
		.ce_marks = r.u.path.ce_marks,
	};
	return 0;
}

/* ------------------------------------------------------------------ */
/* Work requests                                                        */
/* ------------------------------------------------------------------ */
/* Room in the submission ring. */
static uint32_t sq_room(struct mrd_dev *d, uint32_t head)
{
	uint32_t tail =
		atomic_load_explicit(&d->hdr->sq.tail, memory_order_acquire);

	return d->sq_entries - (head - tail);
}

static void sq_publish(struct mrd_dev *d, uint32_t head)
{
	atomic_store(&d->hdr->sq.head, head); /* seq_cst: see ipc.h */
	if (atomic_load(&d->hdr->daemon_sleeping)) {
		uint64_t one = 1;

		(void)!write(d->kick_fd, &one, sizeof(one));
	}
}

/* Checks the SGE against the application's MRs; the bounce MR when the
 * memory is bounce-buffered. */
static int check_sge(struct mrd_dev *d, const struct mrv_sge *sg, int num,
		     struct mrd_mr **bounce)
{
	struct mrd_mr *m;
	uint64_t start;

	*bounce = NULL;
	if (num < 0 || num > 1 || (num && !sg))
		return -EINVAL;
	if (!num)
		return 0;
	m = find_mr(d, sg->lkey);
	if (!m)
		return -EINVAL;
	start = (uint64_t)(uintptr_t)m->mr->addr;
	if (sg->addr < start || sg->addr - start > m->mr->length ||
	    sg->length > m->mr->length - (sg->addr - start))
		return -EINVAL;
	if (m->bounce)
		*bounce = m;
	return 0;
}

/* One post_send / post_recv call: the ring's head as it goes. */
struct sq_post {
	struct mrd_dev *d;
	struct mrd_qp *x;
	uint32_t from, head;
};

static int sq_begin(struct mrv_qp *qp, struct sq_post *p)
{
	p->d = ddev(qp->pd->dev);
	p->x = dqp(qp);
	if (p->d->dead)
		return -ENOTCONN;
	p->from = p->head = atomic_load_explicit(&p->d->hdr->sq.head,
						 memory_order_relaxed);
	return 0;
}

/* May one more request with this SGE go into fifo f (state_ok: the QP's
 * state allows the kind)? 0, or the error of the first check failing. */
static int sq_check(struct sq_post *p, const struct mrd_fifo *f,
		    const struct mrv_sge *sg, int num_sge, bool state_ok,
		    struct mrd_mr **bounce)
{
	int err = check_sge(p->d, sg, num_sge, bounce);

	if (err < 0)
		return err;
	if (!state_ok)
		return -EPERM;
	if (f->n == f->cap || !sq_room(p->d, p->head))
		return -EAGAIN;
	return 0;
}

/* Writes one request into the ring and its record into f (after
 * sq_check()), with the SGE, if any, in both. */
static void sq_put(struct sq_post *p, struct mrd_fifo *f, struct mrd_sqe e,
		   struct mrd_wqe w, const struct mrv_sge *sg, int num_sge)
{
	if (num_sge) {
		e.sge_addr = w.addr = sg->addr;
		e.sge_len = w.len = sg->length;
		e.lkey = sg->lkey;
	}
	p->d->sq[p->head & (p->d->sq_entries - 1)] = e;
	*fifo_at(f, f->n) = w;
	f->n++;
	p->head++;
}

/* Ends the call: publishes what it wrote. */
static int sq_end(struct sq_post *p, int err)
{
	if (p->head != p->from)
		sq_publish(p->d, p->head);
	return err;
}

int mrd_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
		  struct mrv_send_wr **bad_wr)
{
	struct sq_post p;
	int err = sq_begin(qp, &p);

	if (err)
		return err;
	for (*bad_wr = wr; wr; wr = wr->next, *bad_wr = wr) {
		struct mrd_mr *b;

		err = (unsigned int)wr->opcode > MRV_WR_RDMA_READ
			      ? -EINVAL
			      : sq_check(&p, &p.x->sq, wr->sg_list,
					 wr->num_sge,
					 p.x->state == MRV_QPS_RTS, &b);
		if (err)
			break;
		if (b && wr->opcode != MRV_WR_RDMA_READ)
			memcpy(b->bounce + (wr->sg_list->addr -
					    (uint64_t)(uintptr_t)b->mr->addr),
			       (void *)(uintptr_t)wr->sg_list->addr,
			       wr->sg_list->length);
		sq_put(&p, &p.x->sq,
		       (struct mrd_sqe){
			       .wr_id = wr->wr_id,
			       .remote_addr = wr->remote_addr,
			       .qpn = qp->qpn,
			       .rkey = wr->rkey,
			       .imm = wr->imm_data,
			       .send_flags = wr->send_flags,
			       .kind = MRD_SQE_SEND,
			       .opcode = (uint8_t)wr->opcode,
			       .num_sge = (uint8_t)wr->num_sge,
		       },
		       (struct mrd_wqe){
			       .wr_id = wr->wr_id,
			       .opcode = (uint8_t)wr->opcode,
			       .signaled = !!(wr->send_flags &
					      MRV_SEND_SIGNALED),
			       .bounce = wr->opcode == MRV_WR_RDMA_READ ? b
									: NULL,
		       },
		       wr->sg_list, wr->num_sge);
	}
	return sq_end(&p, err);
}

int mrd_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
		  struct mrv_recv_wr **bad_wr)
{
	struct sq_post p;
	int err = sq_begin(qp, &p);

	if (err)
		return err;
	for (*bad_wr = wr; wr; wr = wr->next, *bad_wr = wr) {
		struct mrd_mr *b;

		err = sq_check(&p, &p.x->rq, wr->sg_list, wr->num_sge,
			       p.x->state != MRV_QPS_RESET, &b);
		if (err)
			break;
		sq_put(&p, &p.x->rq,
		       (struct mrd_sqe){
			       .wr_id = wr->wr_id,
			       .qpn = qp->qpn,
			       .kind = MRD_SQE_RECV,
			       .num_sge = (uint8_t)wr->num_sge,
		       },
		       (struct mrd_wqe){.wr_id = wr->wr_id, .bounce = b},
		       wr->sg_list, wr->num_sge);
	}
	return sq_end(&p, err);
}
