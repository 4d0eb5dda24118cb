/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Internal: the embedded-mode objects behind include/mroce/mroce.h. */
#ifndef MROCE_LIB_INT_H
#define MROCE_LIB_INT_H

#include <stdbool.h>

#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/mroce.h"
#include "../io/endpoint.h"

#define MRV_CQ_STASH 32
/* mrv_wait_cq spins this long after the last round that moved packets */
#define MRV_SPIN_NS 50000ull

struct mrv_device {
	struct mroce_ep *ep;	/* backend + engine: the pump */
	struct mroce_engine *e;	/* the endpoint's one engine */
	struct mroce_io *io;	/* the endpoint's backend */
	uint8_t transport;
	uint16_t mtu; /* payload bytes per packet */
	bool afxdp;
	uint8_t family;
	uint8_t local[16];
	int npds, ncqs;
	struct mrd_dev *daemon; /* daemon mode (daemon.c), else NULL */
};

struct mrv_pd {
	struct mrv_device *dev;
	int nmrs, nqps;
};

struct mrv_cq {
	struct mrv_device *dev;
	int id;
	int nqps;
	struct mrv_wc stash[MRV_CQ_STASH]; /* fetched, not yet returned */
	int stash_head, stash_n;
};

struct mrv_qp {
	struct mrv_pd *pd;
	struct mrv_cq *send_cq, *recv_cq;
	uint32_t qpn;
	int peer; /* engine peer id after RTR, else -1 */
};

uint64_t mrv_now_ns(void);
int mrv_random(void *buf, size_t len);
/* Engine peer id for a numeric address string (adds it if new). */
int mrv_peer_by_name(struct mrv_device *dev, const char *addr);

#endif
