/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * AF_XDP backend extras (user/io/afxdp.c), beyond include/mroce/io.h.
 *
 * The backend binds one AF_XDP socket to (ifname, queue) and registers it
 * in the XSKMAP of the mroce XDP program that `mrocectl attach IFNAME`
 * loaded and pinned (MROCE_PIN_ROOT/<ifname>/). That program redirects to
 * the socket only frames it can attribute: MetaRoCE handshake/CLOSE and
 * PATH_REROLL always, everything else only for connections listed in its
 * `conns` map (MetaRoCE by our conn_id, RoCEv2 by destination QPN). The
 * owner of the backend therefore registers each connection here as soon
 * as it has chosen the id, and removes it when the connection is gone.
 * Nothing is removed automatically on close: entries belong to the owner.
 *
 * Error convention: as io.h, 0 or a count on success, negative errno on
 * failure. Every function returns -EINVAL for an io that is not AF_XDP.
 */
#ifndef MROCE_IO_AFXDP_H
#define MROCE_IO_AFXDP_H

#include <stdint.h>

#include "mroce/abi.h"
#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/xdp.h"

/* Add (or replace) the conns entry {proto, id} -> v on the interface of
 * io. proto: enum mroce_conn_proto; id: our conn_id (MetaRoCE) or the
 * destination QPN (RoCEv2, 24 bits). -EINVAL for a bad proto/id/slot,
 * -ENOSPC when the table is full, -EIO for another map failure. */
int mroce_io_afxdp_conn_add(struct mroce_io *io, uint8_t proto, uint32_t id,
			    const struct mroce_conn_val *v);
/* Remove the entry; -ENOENT if there was none. */
int mroce_io_afxdp_conn_del(struct mroce_io *io, uint8_t proto, uint32_t id);

/* The pinned maps the backend opened (rx_state, scoreboard, counters...),
 * so that the owner can read or write them without opening them a second
 * time. Valid until mroce_io_close(). NULL if io is not AF_XDP. */
const struct mroce_xdp_maps *mroce_io_afxdp_maps(const struct mroce_io *io);

/* Hooks for mroce_engine_set_pub() that keep the XDP program's rx_state
 * and scoreboard (abi.h) up to date with a MetaRoCE engine's paths, in
 * the backend's maps (valid until mroce_io_close()). */
int mroce_io_afxdp_pub(struct mroce_io *io, struct mroce_engine_pub *out);

/* AF_XDP specific counters (the generic ones: mroce_io_get_stats()). */
struct mroce_io_afxdp_stats {
	/* the kernel's (XDP_STATISTICS) */
	uint64_t rx_dropped;		   /* e.g. a frame too big for the
					    * UMEM frame without multi-buffer */
	uint64_t rx_invalid_descs;	   /* bad descriptors we gave */
	uint64_t tx_invalid_descs;	   /* bad descriptors we gave */
	uint64_t rx_ring_full;		   /* RX ring full: frame dropped */
	uint64_t rx_fill_ring_empty_descs; /* no free frame: the owner holds
					    * too many received packets */
	uint64_t tx_ring_empty_descs;	   /* a kick found nothing to send */
	/* the backend's */
	uint64_t rx_chains;		   /* multi-buffer frames reassembled */
	uint64_t tx_chains;		   /* frames sent as several descs */
	uint64_t tx_no_neigh;		   /* payloads dropped: no MAC known
					    * for the next hop */
	uint64_t tx_zc_pkts;		   /* sent from mroce_io_tx_bufs()
					    * buffers (no copy) */
	uint64_t tx_slots;		   /* cfg.tx_slots */
	uint64_t tx_slots_free;		   /* of those, free (neither the
					    * owner's nor the kernel's) at
					    * the last transmit call */
};
int mroce_io_afxdp_get_stats(const struct mroce_io *io,
			     struct mroce_io_afxdp_stats *s);

#endif /* MROCE_IO_AFXDP_H */
