// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Backend dispatcher for include/mroce/io.h: picks the ops table by
 * cfg->kind and forwards every call through it.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "io_int.h"

/*
 * The AF_XDP backend is developed separately and may be absent. With it in
 * the library the module file defines MROCE_HAVE_AFXDP and we reference it
 * normally (which makes the archive member get linked); without it the
 * reference is weak and resolves to NULL, and opening it says -ENOTSUP.
 */
#ifndef MROCE_HAVE_AFXDP
extern const struct mroce_io_ops mroce_io_afxdp_ops __attribute__((weak));
#endif

static const struct mroce_io_ops *afxdp_ops(void)
{
	const struct mroce_io_ops *ops = &mroce_io_afxdp_ops;

	return ops;
}

int mroce_io_open(const struct mroce_io_cfg *cfg, struct mroce_io **out)
{
	const struct mroce_io_ops *ops;
	int err;

	if (!cfg || !out)
		return -EINVAL;
	*out = NULL;
	switch (cfg->kind) {
	case MROCE_IO_UDP:
		ops = &mroce_io_udp_ops;
		break;
	case MROCE_IO_AFXDP:
		ops = afxdp_ops();
		if (!ops)
			return -ENOTSUP;
		break;
	default:
		return -EINVAL;
	}
	err = ops->open(cfg, out);
	if (err < 0)
		return err;
	/* Backends fill these too; make the dispatcher's contract explicit. */
	(*out)->ops = ops;
	return 0;
}

void mroce_io_close(struct mroce_io *io)
{
	if (io)
		io->ops->close(io);
}

int mroce_io_rx(struct mroce_io *io, struct mroce_io_rx *pkts, int n)
{
	if (!io || (!pkts && n > 0) || n < 0)
		return -EINVAL;
	if (!n)
		return 0;
	return io->ops->rx(io, pkts, n);
}

void mroce_io_rx_release(struct mroce_io *io, struct mroce_io_rx *pkts, int n)
{
	if (io && pkts && n > 0)
		io->ops->rx_release(io, pkts, n);
}

int mroce_io_tx(struct mroce_io *io, const struct mroce_io_tx *pkts, int n)
{
	if (!io || (!pkts && n > 0) || n < 0)
		return -EINVAL;
	if (!n)
		return 0;
	return io->ops->tx(io, pkts, n);
}

int mroce_io_tx_bufs(struct mroce_io *io, uint8_t **bufs, int n, uint32_t *cap)
{
	if (!io || !cap || (!bufs && n > 0) || n < 0)
		return -EINVAL;
	if (!io->ops->tx_bufs)
		return -EOPNOTSUPP;
	return io->ops->tx_bufs(io, bufs, n, cap);
}

void mroce_io_tx_bufs_put(struct mroce_io *io, uint8_t *const *bufs, int n)
{
	if (io && bufs && n > 0 && io->ops->tx_bufs_put)
		io->ops->tx_bufs_put(io, bufs, n);
}

int mroce_io_fd(const struct mroce_io *io)
{
	if (!io)
		return -1;
	return io->ops->fd(io);
}

void mroce_io_get_stats(const struct mroce_io *io, struct mroce_io_stats *s)
{
	if (!s)
		return;
	if (!io) {
		memset(s, 0, sizeof(*s));
		return;
	}
	*s = io->stats;
}
