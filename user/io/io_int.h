/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Internal: how a backend plugs into mroce_io_* (include/mroce/io.h). */
#ifndef MROCE_IO_INT_H
#define MROCE_IO_INT_H

#include "mroce/addr.h" /* struct mroce_peer_addr, read on transmit */
#include "mroce/io.h"

struct mroce_io_ops {
	int (*open)(const struct mroce_io_cfg *cfg, struct mroce_io **out);
	void (*close)(struct mroce_io *io);
	int (*rx)(struct mroce_io *io, struct mroce_io_rx *pkts, int n);
	void (*rx_release)(struct mroce_io *io, struct mroce_io_rx *pkts,
			   int n);
	int (*tx)(struct mroce_io *io, const struct mroce_io_tx *pkts, int n);
	int (*fd)(const struct mroce_io *io);
	/* optional (NULL: -EOPNOTSUPP): zero-copy transmit buffers */
	int (*tx_bufs)(struct mroce_io *io, uint8_t **bufs, int n,
		       uint32_t *cap);
	void (*tx_bufs_put)(struct mroce_io *io, uint8_t *const *bufs, int n);
};

/* Every backend's private struct starts with this. */
struct mroce_io {
	const struct mroce_io_ops *ops;
	struct mroce_io_cfg cfg;
	struct mroce_io_stats stats;
};

extern const struct mroce_io_ops mroce_io_udp_ops;	/* user/io/udp.c */
extern const struct mroce_io_ops mroce_io_afxdp_ops;	/* user/io/afxdp.c */

#endif
