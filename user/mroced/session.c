// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * A session of mroced: set up by HELLO (the shared region with its rings,
 * two eventfds), then the verbs objects the application creates through
 * control requests (PD, MR, CQ, QP: engine objects plus the daemon's own
 * records of them), and its end, which releases everything at once
 * (hang-up, death of the application, a corrupted ring, shutdown).
 *
 * The do_*() functions answer one control request each (ctl.c dispatches):
 * 0 or a negative errno for the reply, which fills *r on success.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ipc/devstats.h"
#include "mroced.h"

/* Lookups: every handle is checked against the session's own objects. */
static struct sess_pd *find_pd(struct sess *s, uint32_t h)
{
	for (struct sess_pd *p = s->pds; p; p = p->next)
		if (p->handle == h)
			return p;
	return NULL;
}

static struct sess_cq *find_cq(struct sess *s, uint32_t h)
{
	for (struct sess_cq *c = s->cqs; c; c = c->next)
		if ((uint32_t)c->id == h)
			return c;
	return NULL;
}

struct sess_qp *find_qp(struct sess *s, uint32_t qpn)
{
	if (s->last_qp && s->last_qp->qpn == qpn)
		return s->last_qp;
	for (struct sess_qp *q = s->qps; q; q = q->next)
		if (q->qpn == qpn) {
			s->last_qp = q;
			return q;
		}
	return NULL;
}

static void free_qp(struct sess *s, struct sess_qp *q)
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

static void free_cq(struct sess *s, struct sess_cq *c)
{
	(void)mroce_destroy_cq(s->e, c->id);
	free(c->synth);
	s->ncqs--;
	free(c);
}

static void free_mr(struct sess *s, struct sess_mr *m)
{
	(void)mroce_dereg_mr(s->e, m->lkey);
	munmap(m->map, m->len);
	m->pd->nmrs--;
	s->nmrs--;
	free(m);
}

void sess_close(struct sess *s)
{
	struct sess **pp;

	for (pp = &mroced.sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	while (s->qps) {
		struct sess_qp *q = s->qps;

		s->qps = q->next;
		free_qp(s, q);
	}
	while (s->mrs) {
		struct sess_mr *m = s->mrs;

		s->mrs = m->next;
		free_mr(s, m);
	}
	while (s->cqs) {
		struct sess_cq *c = s->cqs;

		s->cqs = c->next;
		free_cq(s, c);
	}
	while (s->pds) {
		struct sess_pd *p = s->pds;

		s->pds = p->next;
		free(p);
	}
	(void)mroce_ep_sync(mroced.ep);
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

void sess_reap(struct sess *s, const char *why)
{
	if (s->hello) {
		pr_dbg("session %d (pid %d) ended: %s: %d QPs, %d CQs, %d MRs "
		       "released",
		       s->id, (int)s->pid, why, s->nqps, s->ncqs, s->nmrs);
		mroced.ctl[MRD_CTL_sessions_reaped]++;
	}
	sess_close(s);
}

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
	s->e = mroce_ep_engine(mroced.ep, q->u.hello.transport);
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
	atomic_store(&s->hdr->app_cpu, -1);
	s->sq = (struct mrd_sqe *)((uint8_t *)s->shm + hdr_bytes);
	s->sq_entries = MRD_SQ_ENTRIES;
	s->cq_area_off = (uint32_t)(hdr_bytes + sq_bytes);
	s->cq_area_size = MRD_CQ_AREA;
	s->hello = true;
	if (q->u.hello.pid && !s->pid)
		s->pid = (pid_t)q->u.hello.pid;
	r->u.hello.session = (uint32_t)s->id;
	r->u.hello.family = mroced.family;
	r->u.hello.transport = s->transport;
	r->u.hello.mtu = mroce_ep_mtu(mroced.ep);
	r->u.hello.link_bps = mroce_ep_link_bps(mroced.ep, NULL);
	memcpy(r->u.hello.local, mroced.local, 16);
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
int do_hello(struct sess *s, const struct mrd_req *q, struct mrd_rep *r,
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

int do_alloc_pd(struct sess *s, struct mrd_rep *r)
{
	struct sess_pd *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->handle = s->next_pd++;
	p->next = s->pds;
	s->pds = p;
	s->npds++;
	r->u.pd.handle = p->handle;
	return 0;
}

int do_dealloc_pd(struct sess *s, const struct mrd_req *q)
{
	for (struct sess_pd **pp = &s->pds; *pp; pp = &(*pp)->next)
		if ((*pp)->handle == q->u.pd.pd) {
			struct sess_pd *p = *pp;

			if (p->nmrs || p->nqps)
				return -EBUSY;
			*pp = p->next;
			free(p);
			s->npds--;
			return 0;
		}
	return -ENOENT;
}

int do_reg_mr(struct sess *s, const struct mrd_req *q, struct mrd_rep *r,
	      int fd)
{
	uint32_t all = MRV_ACCESS_LOCAL_WRITE | MRV_ACCESS_REMOTE_WRITE |
		       MRV_ACCESS_REMOTE_READ;
	struct sess_pd *pd = find_pd(s, q->u.reg_mr.pd);
	struct mroce_mr emr;
	struct sess_mr *m;
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

int do_dereg_mr(struct sess *s, const struct mrd_req *q)
{
	for (struct sess_mr **pp = &s->mrs; *pp; pp = &(*pp)->next)
		if ((*pp)->lkey == q->u.dereg_mr.lkey) {
			struct sess_mr *m = *pp;

			*pp = m->next;
			free_mr(s, m);
			return 0;
		}
	return -ENOENT;
}

int do_create_cq(struct sess *s, const struct mrd_req *q, struct mrd_rep *r)
{
	uint32_t depth = q->u.create_cq.depth, entries = 16, bytes, off;
	struct sess_cq *c, **pp;
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

int do_destroy_cq(struct sess *s, const struct mrd_req *q)
{
	for (struct sess_cq **pp = &s->cqs; *pp; pp = &(*pp)->next)
		if ((uint32_t)(*pp)->id == q->u.cq.cq) {
			struct sess_cq *c = *pp;

			if (c->nqps)
				return -EBUSY;
			*pp = c->next;
			free_cq(s, c);
			return 0;
		}
	return -ENOENT;
}

int do_create_qp(struct sess *s, const struct mrd_req *q, struct mrd_rep *r)
{
	struct sess_pd *pd = find_pd(s, q->u.create_qp.pd);
	struct sess_cq *scq = find_cq(s, q->u.create_qp.send_cq);
	struct sess_cq *rcq = find_cq(s, q->u.create_qp.recv_cq);
	struct mroce_qp_init_attr ia;
	struct sess_qp *qp;
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
	qp->bl_max = (int)(ia.max_send_wr + ia.max_recv_wr);
	qp->next = s->qps;
	s->qps = qp;
	pd->nqps++;
	scq->nqps++;
	rcq->nqps++;
	s->nqps++;
	r->u.qp.qpn = (uint32_t)qpn;
	return 0;
}

int do_destroy_qp(struct sess *s, const struct mrd_req *q)
{
	for (struct sess_qp **pp = &s->qps; *pp; pp = &(*pp)->next)
		if ((*pp)->qpn == q->u.qp.qpn) {
			struct sess_qp *qp = *pp;

			*pp = qp->next;
			free_qp(s, qp);
			return mroce_ep_sync(mroced.ep);
		}
	return -ENOENT;
}

int do_modify_qp(struct sess *s, const struct mrd_req *q)
{
	struct sess_qp *qp = find_qp(s, q->u.modify_qp.qpn);
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
			mroced.ep, (enum mroce_transport)s->transport, dest);
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
	return mroce_ep_sync(mroced.ep);
}

int do_query_qp(struct sess *s, const struct mrd_req *q, struct mrd_rep *r)
{
	struct sess_qp *qp = find_qp(s, q->u.qp.qpn);
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

int do_query_path(struct sess *s, const struct mrd_req *q, struct mrd_rep *r)
{
	struct sess_qp *qp = find_qp(s, q->u.qp.qpn);
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
	mroce_path_info_fill(&r->u.path, &pi);
	return 0;
}
