/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: the contract between libmroce's front and its device modes,
 * like rxe's struct ib_device_ops under the verbs core.
 *
 *   verbs.c      every public mrv_* entry point: checks the arguments,
 *                keeps the object counts (-EBUSY), links the objects to
 *                their parents, then calls the device's mode through
 *                dev->ops. The modes never see a NULL object, a bad
 *                count, a CQ of another device or an unknown access bit.
 *   embedded.c   MRV_MODE_EMBEDDED: engine + I/O backend in the process.
 *   daemon.c,    MRV_MODE_DAEMON: the same verbs served by mroced
 *   daemon_rings.c  (private header daemon_int.h).
 *   conn.c       the TCP rendezvous, above the verbs (mode-blind).
 *
 * A mode allocates each object as its own struct with the public base
 * first (struct mrv_cq inside its CQ, ...) and reaches its state with
 * container_of. The front fills the base's links (dev, pd, CQs) and the
 * counts after the mode's create succeeded, and undoes the counts before
 * the mode's destroy frees the object. No file of one mode includes the
 * other's header.
 *
 * Internal names: mrl_ ("mroce library", shared by the front and the
 * modes), emb_ (embedded mode), dm_ (daemon mode), mrd_client_ (the
 * daemon-protocol client, dclient.h). Only mrv_* and mroce_version() are
 * the API.
 */
#ifndef MROCE_LIB_INT_H
#define MROCE_LIB_INT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "mroce/mroce.h"

#define mrl_container_of(ptr, type, member)                                    \
	((type *)((uintptr_t)(ptr) - offsetof(type, member)))

/* What a device mode does; arguments already checked (see the top). */
struct mrl_dev_ops {
	int (*close_device)(struct mrv_device *dev);
	int (*progress)(struct mrv_device *dev);
	int (*device_fd)(const struct mrv_device *dev);
	int (*query_stats)(const struct mrv_device *dev,
			   struct mrv_dev_stats *st);
	/* Objects: allocate the mode's struct, return its base in *out. */
	int (*alloc_pd)(struct mrv_device *dev, struct mrv_pd **out);
	int (*dealloc_pd)(struct mrv_pd *pd);
	int (*reg_mr)(struct mrv_pd *pd, void *addr, size_t len,
		      uint32_t access, struct mrv_mr **out);
	int (*alloc_mr)(struct mrv_pd *pd, size_t len, uint32_t access,
			struct mrv_mr **out);
	int (*dereg_mr)(struct mrv_mr *mr);
	int (*create_cq)(struct mrv_device *dev, int depth,
			 struct mrv_cq **out);
	int (*destroy_cq)(struct mrv_cq *cq);
	int (*poll_cq)(struct mrv_cq *cq, int n, struct mrv_wc *wc);
	int (*wait_cq)(struct mrv_cq *cq, int timeout_ms);
	int (*create_qp)(struct mrv_pd *pd, const struct mrv_qp_init_attr *attr,
			 struct mrv_qp **out);
	int (*destroy_qp)(struct mrv_qp *qp);
	int (*modify_qp)(struct mrv_qp *qp, const struct mrv_qp_attr *attr,
			 uint32_t mask);
	int (*query_qp)(struct mrv_qp *qp, struct mrv_qp_attr *attr);
	int (*query_path)(struct mrv_qp *qp, int idx,
			  struct mrv_path_info *out);
	/* *bad_wr is wr on entry; each request is checked with
	 * mrl_wr_check() / mrl_sge_check() as it is posted. */
	int (*post_send)(struct mrv_qp *qp, struct mrv_send_wr *wr,
			 struct mrv_send_wr **bad_wr);
	int (*post_recv)(struct mrv_qp *qp, struct mrv_recv_wr *wr,
			 struct mrv_recv_wr **bad_wr);
};

/* The device as both modes and the rendezvous see it. */
struct mrv_device {
	const struct mrl_dev_ops *ops;
	uint8_t transport; /* enum mrv_transport */
	uint16_t mtu;	   /* payload bytes per packet */
	uint32_t link_mbps; /* the engine's line rate */
	uint8_t family;	   /* of local: AF_INET or AF_INET6 */
	uint8_t local[16];
	int npds, ncqs; /* kept by verbs.c */
};

struct mrv_pd {
	struct mrv_device *dev;
	int nmrs, nqps; /* kept by verbs.c */
};

struct mrv_cq {
	struct mrv_device *dev;
	int id;	  /* the engine's (embedded) or the daemon's CQ handle */
	int nqps; /* kept by verbs.c */
};

struct mrv_qp {
	struct mrv_pd *pd;
	struct mrv_cq *send_cq, *recv_cq;
	uint32_t qpn;
};

/* The mode entry points (the ops are reached through the device). */
int mrl_embedded_open(const struct mrv_dev_attr *attr, struct mrv_device **out);
int mrl_daemon_open(const struct mrv_dev_attr *attr, struct mrv_device **out);

/* Checks every mode applies to each posted request, written once. */
static inline int mrl_sge_check(const struct mrv_sge *sg, int num)
{
	return num < 0 || num > 1 || (num && !sg) ? -EINVAL : 0;
}

static inline int mrl_wr_check(const struct mrv_send_wr *wr)
{
	return (unsigned int)wr->opcode > MRV_WR_RDMA_READ ? -EINVAL : 0;
}

/* CLOCK_MONOTONIC in ns: deadlines and spin budgets. */
static inline uint64_t mrl_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
