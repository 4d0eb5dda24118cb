/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: libmroce's daemon mode, shared by its two files only:
 *   daemon.c        the device and the control verbs (PD, MR, CQ and QP
 *                   lifetimes, modify/query): requests to mroced through
 *                   the protocol client (dclient.h);
 *   daemon_rings.c  the data path: work requests into the shared
 *                   submission ring, completions out of the CQ rings,
 *                   the record of outstanding requests and the flush
 *                   when the daemon dies.
 * Same error convention as the API, plus -ENOTCONN once the daemon is
 * gone. Names: dm_ (daemon mode); the protocol's own are mrd_ (ipc.h).
 */
#ifndef MROCE_LIB_DAEMON_INT_H
#define MROCE_LIB_DAEMON_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../ipc/ipc.h"
#include "dclient.h"
#include "lib_int.h"

/* A registered MR: the public struct plus what the daemon mode adds. */
struct dm_mr {
	struct mrv_mr *mr;
	uint32_t lkey;
	uint8_t *bounce; /* mrv_reg_mr: our mapping of the bounce memfd */
	int bounce_fd;
	size_t map_len;
	struct dm_mr *next;
};

/* A work request the daemon has not completed yet (see daemon.c's top). */
struct dm_wr {
	uint64_t wr_id;
	uint64_t addr; /* application address of the SGE */
	uint32_t len;
	uint8_t opcode;	      /* enum mrv_wr_opcode (sends) */
	struct dm_mr *bounce; /* copy back at completion (RECV, READ) */
};

/* The outstanding requests of one queue, oldest first. */
struct dm_wr_fifo {
	struct dm_wr *e;
	uint32_t cap, head, n;
};

struct dm_cq {
	struct mrv_cq base;
	struct mrd_ring_hdr *hdr;
	struct mrd_cqe *ring;
	uint32_t entries;
	/* Completions made by the library (flush after the daemon died). */
	struct mrv_wc *local;
	int nlocal, caplocal, localhead;
	uint64_t empty_since; /* first of a run of empty polls, 0: none */
	uint64_t empty_last;  /* last empty poll of that run */
	struct dm_cq *next;
};

struct dm_qp {
	struct mrv_qp base;
	enum mrv_qp_state state; /* as last set or queried */
	struct dm_wr_fifo sq, rq;
	struct dm_qp *next;
};

struct dm_pd {
	struct mrv_pd base;
	uint32_t handle;
};

struct dm_dev {
	struct mrv_device base;
	struct mrd_client cl; /* the control socket */
	void *shm;
	size_t shm_size;
	struct mrd_shm *hdr;
	struct mrd_sqe *sq;
	uint32_t sq_entries;
	int kick_fd, cq_fd;
	bool dead;
	bool notify_always;
	uint64_t next_check;
	struct dm_mr *mrs;
	struct dm_qp *qps, *last_qp;
	struct dm_cq *cqs;
};

static inline struct dm_dev *to_dm_dev(const struct mrv_device *dev)
{
	return mrl_container_of(dev, struct dm_dev, base);
}

static inline struct dm_cq *to_dm_cq(struct mrv_cq *cq)
{
	return mrl_container_of(cq, struct dm_cq, base);
}

static inline struct dm_qp *to_dm_qp(struct mrv_qp *qp)
{
	return mrl_container_of(qp, struct dm_qp, base);
}

/* Adds v to the application-side counter k in the shared header (the
 * daemon shows them in APP_INFO; ipc.h). One writer per device: plain
 * load and store, no locked instruction on the data path. */
static inline void dm_count(struct dm_dev *d, int k, uint64_t v)
{
	_Atomic uint64_t *c = &d->hdr->app[k];

	atomic_store_explicit(
		c, atomic_load_explicit(c, memory_order_relaxed) + v,
		memory_order_relaxed);
}

/* daemon.c */
struct dm_mr *dm_find_mr(struct dm_dev *d, uint32_t lkey);

/* daemon_rings.c */
/* The daemon is gone: flush everything outstanding, calls -ENOTCONN. */
void dm_went_dead(struct dm_dev *d);
/* Looks for a hang-up of the socket at most once per DM_CHECK_NS. */
void dm_check_alive_sometimes(struct dm_dev *d);
int dm_poll_cq(struct mrv_cq *cq, int n, struct mrv_wc *wc);
int dm_wait_cq(struct mrv_cq *cq, int timeout_ms);
int dm_post_send(struct mrv_qp *qp, struct mrv_send_wr *wr,
		 struct mrv_send_wr **bad_wr);
int dm_post_recv(struct mrv_qp *qp, struct mrv_recv_wr *wr,
		 struct mrv_recv_wr **bad_wr);

#endif
