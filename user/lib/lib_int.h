/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Internal: the embedded-mode objects behind include/mroce/mroce.h. */
#ifndef MROCE_LIB_INT_H
#define MROCE_LIB_INT_H

#include <stdbool.h>

#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/mroce.h"

#define MRV_RX_BATCH 64
#define MRV_TX_BATCH 64
#define MRV_CQ_STASH 32

struct mrv_device {
	struct mroce_engine *e;
	struct mroce_io *io;
	uint8_t transport;
	uint16_t mtu; /* payload bytes per packet */
	bool afxdp;   /* AF_XDP backend: register QPs with XDP */
	uint8_t family;
	uint8_t local[16];
	int npds, ncqs;
	/* Engine peer id -> address, for the backend's destination. */
	struct mroce_peer_addr *peers;
	int npeers;
	/* Last source seen on receive: packets come in trains per peer, so
	 * this spares the engine's peer lookup almost always. */
	uint8_t last_family;
	uint8_t last_src[16];
	int last_peer;
	/* Packets produced by the engine but refused by a full backend; sent
	 * first on the next progress (the engine cannot take them back). */
	struct mroce_tx_pkt tx[MRV_TX_BATCH];
	int tx_head, tx_n;
	uint8_t *txbuf;
	size_t txcap;
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
	int peer;	     /* engine peer id after RTR, else -1 */
	bool xdp_registered; /* QPN in the XDP program's conns map */
};

uint64_t mrv_now_ns(void);
int mrv_random(void *buf, size_t len);
/* Engine peer id for a numeric address string (adds it if new). */
int mrv_peer_by_name(struct mrv_device *dev, const char *addr);

#endif
