/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Packet I/O backends (userspace): move UDP payloads of both protocols
 * between the engine and the network.
 *
 *   AF_XDP   (user/io/afxdp.c)  primary: one socket per receive queue, copy
 *                               mode, multi-buffer for jumbo frames; frames
 *                               are built/parsed here (Ethernet/IP/UDP)
 *   UDP      (user/io/udp.c)    fallback for hosts without XDP and for the
 *                               loopback demo: kernel UDP sockets
 *
 * Error convention: 0 or a count on success, negative errno on failure.
 * Backends never print. They are not thread-safe: one owner thread each.
 *
 * RoCEv2 ICRC: the AF_XDP backend fills it on transmit and verifies it on
 * receive (it sees the IP header; a bad ICRC is dropped and counted). The
 * UDP backend cannot see or choose the IP header the kernel writes, so it
 * sends RoCEv2 payloads with a zero ICRC and does not verify received ones
 * (documented limitation; MetaRoCE's ICRC is inside the payload and is
 * always verified by the engine).
 */
#ifndef MROCE_IO_H
#define MROCE_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mroce/addr.h"

/* A transmit destination is a peer address (family, address;
 * mroce/addr.h), the one type shared with the engine: the I/O layer needs
 * nothing else of it. */

enum mroce_io_kind {
	MROCE_IO_UDP = 1,
	MROCE_IO_AFXDP = 2,
};

struct mroce_io_cfg {
	uint8_t kind;		/* enum mroce_io_kind */
	uint8_t family;		/* AF_INET / AF_INET6 of local_addr */
	uint8_t local_addr[16];	/* address to bind / source address */
	uint16_t mroce_port;	/* UDP port of MetaRoCE (4792) */
	uint16_t rocev2_port;	/* UDP port of RoCEv2 (4791) */
	/* AF_XDP only */
	const char *ifname;
	uint32_t queue;		/* receive queue to bind (0) */
	uint32_t frame_size;	/* UMEM frame size (4096) */
	uint32_t nframes;	/* UMEM frames (4096) */
	bool multi_buffer;	/* XDP_USE_SG for frames > one page */
	uint32_t tx_slots;	/* transmit buffers in the UMEM handed out by
				 * mroce_io_tx_bufs() (0: none) */
	/* UDP only: source ports used for spraying (bound lazily), range */
	uint16_t sport_min, sport_max;
};

/* One received UDP payload. `data` stays valid until the next
 * mroce_io_rx_release() of this entry. */
struct mroce_io_rx {
	const uint8_t *data;
	uint32_t len;
	uint8_t family;
	uint8_t src[16];	/* source address (for the peer lookup) */
	uint16_t sport, dport;
	bool ce;		/* IP ECN was CE */
	uint64_t cookie;	/* backend-private (frame address) */
};

/* One UDP payload to send. */
struct mroce_io_tx {
	const uint8_t *data;
	uint32_t len;
	const struct mroce_peer_addr *dst;
	uint16_t sport, dport;
	bool ect;		/* mark ECT(0) */
};

struct mroce_io;

int mroce_io_open(const struct mroce_io_cfg *cfg, struct mroce_io **out);
void mroce_io_close(struct mroce_io *io);

/* Receive up to n payloads without blocking. Returns the count. */
int mroce_io_rx(struct mroce_io *io, struct mroce_io_rx *pkts, int n);
void mroce_io_rx_release(struct mroce_io *io, struct mroce_io_rx *pkts,
			 int n);

/* Queue up to n payloads and kick the transmit path once. Returns how
 * many were accepted (the rest: retry later; -EAGAIN-like pressure is a
 * short count, not an error). */
int mroce_io_tx(struct mroce_io *io, const struct mroce_io_tx *pkts, int n);

/*
 * Optional zero-copy transmit: buffers that live in the backend's own
 * transmit memory (AF_XDP: the UMEM, cfg.tx_slots of them), so that a
 * payload is written once, where the kernel reads it, and mroce_io_tx()
 * only writes the headers in front of it.
 *
 * mroce_io_tx_bufs() hands out up to n buffers of *cap payload bytes each
 * and returns how many (0 when none is free now: completions free them),
 * or -EOPNOTSUPP when the backend has none (UDP; AF_XDP without
 * tx_slots). n = 0 only asks (and sets *cap). A buffer is the caller's
 * until either
 *   - it is the `data` of an entry mroce_io_tx() accepted (the pointer as
 *     handed out: the payload starts there, any len up to *cap); the
 *     backend owns it again from then on, also when it drops the packet;
 *   - or it goes back through mroce_io_tx_bufs_put().
 * An entry mroce_io_tx() did not accept (short count) leaves its buffer
 * with the caller, contents intact, to send later or put back. put()
 * ignores pointers that are not buffers of io handed out to the caller.
 */
int mroce_io_tx_bufs(struct mroce_io *io, uint8_t **bufs, int n, uint32_t *cap);
void mroce_io_tx_bufs_put(struct mroce_io *io, uint8_t *const *bufs, int n);

/* A file descriptor to poll() for readability when idle (-1 if none). */
int mroce_io_fd(const struct mroce_io *io);

#define MROCE_IO_STATS(X)                                                      \
	X(rx_pkts) X(rx_bytes) X(tx_pkts) X(tx_bytes) X(rx_not_ours)           \
	X(rx_bad_frame) X(rx_bad_icrc) X(tx_full) X(tx_kicks) X(tx_errors)

/* How many counters MROCE_IO_STATS lists. */
enum {
#define MROCE_X_IOSTAT_N(n) MROCE_IO_STAT_##n,
	MROCE_IO_STATS(MROCE_X_IOSTAT_N)
#undef MROCE_X_IOSTAT_N
	MROCE_IO_NSTATS
};

struct mroce_io_stats {
#define MROCE_X_IOSTAT(n) uint64_t n;
	MROCE_IO_STATS(MROCE_X_IOSTAT)
#undef MROCE_X_IOSTAT
};

void mroce_io_get_stats(const struct mroce_io *io, struct mroce_io_stats *s);

#endif /* MROCE_IO_H */
