/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: an endpoint = one packet I/O backend + the engines it feeds.
 *
 * Both users of the engine outside the simulator need the same pump:
 * libmroce's embedded mode (one engine, one transport) and the mroced
 * daemon (both transports, one engine each, over one backend). The pump:
 *   receive a batch -> map the source address to the engine's peer id ->
 *   hand it to the engine of the destination port (4792 MetaRoCE, 4791
 *   RoCEv2, or the configured pair) -> drain engine events (register /
 *   unregister connections and QPs in the XDP `conns` map on AF_XDP) ->
 *   run due timers -> transmit what the engines produced (a backend that
 *   refuses part of a batch keeps the rest for the next call: the engine
 *   cannot take packets back).
 * Error convention: 0 or a count on success, negative errno on failure.
 * Never prints. Not thread-safe (one thread drives an endpoint).
 */
#ifndef MROCE_ENDPOINT_H
#define MROCE_ENDPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include "mroce/engine.h"
#include "mroce/io.h"

/* RTT noise of a process-driven endpoint on a busy host: a scheduler time
 * slice (ms), measured on loopback (docs/engine.md). Every user of an
 * endpoint sets its MetaRoCE engine's jitter_us to this: without it the
 * engine reads that noise as queueing and as loss (windows of one packet,
 * spurious timeouts). */
#define MROCE_EP_SW_JITTER_US 10000

struct mroce_ep_cfg {
	/* The backend. io.mroce_port / io.rocev2_port select which UDP
	 * destination port feeds which engine. */
	struct mroce_io_cfg io;
	/* Engines to run: eng[0] MetaRoCE, eng[1] RoCEv2. An entry whose
	 * transport is 0 is not run. seed 0 = random seed and cookie key. */
	struct mroce_engine_cfg eng[2];
	/* AF_XDP only: one socket per receive queue of io.ifname (the
	 * queues /sys/class/net/IF/queues/rx-* lists) instead of one on
	 * io.queue. Received from all each round; a packet leaves through
	 * the socket of queue (UDP source port % queues), so that the
	 * spraying of MetaRoCE also spreads a peer's receive load. */
	bool all_queues;
	/* AF_XDP only: the XDP program answers no packet of our MetaRoCE
	 * connections itself (duplicates of placed data, docs/xdp.md);
	 * every ACK then comes from the engine. For comparison. */
	bool no_ack_offload;
};

struct mroce_ep;

int mroce_ep_open(const struct mroce_ep_cfg *cfg, struct mroce_ep **out);
void mroce_ep_close(struct mroce_ep *ep);

/* The engine of a transport, NULL when this endpoint does not run it.
 * Callers use the engine API directly for verbs objects. */
struct mroce_engine *mroce_ep_engine(struct mroce_ep *ep,
				     enum mroce_transport t);

/* Engine peer id of a numeric address ("10.0.0.2", "fd00::2") for
 * transport t, adding the peer if new. -EINVAL bad string,
 * -EAFNOSUPPORT other family than the local address, -ENOENT transport
 * not run. */
int mroce_ep_peer_by_name(struct mroce_ep *ep, enum mroce_transport t,
			  const char *addr);

/* One round of the pump at time now (ns, CLOCK_MONOTONIC). Returns the
 * number of packets moved (0 when idle) or -errno (backend failure). */
int mroce_ep_progress(struct mroce_ep *ep, uint64_t now);

/* The receive half of a round: receive, apply events, run due timers;
 * what the engines have to send waits for mroce_ep_flush(). A caller
 * can hand completions to their consumer in between, so that replies
 * leave in the same transmit batch as the ACKs. Packets received or
 * -errno. */
int mroce_ep_progress_rx(struct mroce_ep *ep, uint64_t now);

/* Transmit what the engines have ready now, after applying their events
 * (the latency kick after posting work). Packets sent or -errno. */
int mroce_ep_flush(struct mroce_ep *ep, uint64_t now);

/* The address of engine peer `peer` of transport t (NULL if unknown). */
const struct mroce_peer_addr *mroce_ep_peer_addr(const struct mroce_ep *ep,
						 enum mroce_transport t,
						 int peer);

/* Drain and apply engine events now (after a verbs call such as
 * modify_qp/destroy_qp that can queue some). mroce_ep_progress() does
 * this too. 0 or -errno (XDP map update failed). */
int mroce_ep_sync(struct mroce_ep *ep);

/* Earliest time any engine wants progress again (UINT64_MAX idle). */
uint64_t mroce_ep_next_timer(const struct mroce_ep *ep, uint64_t now);

/* fd to poll() for readability while idle (-1 if none): the socket's
 * own with one backend, an epoll fd over all of them with several. */
int mroce_ep_fd(const struct mroce_ep *ep);

/* Payload bytes per packet the engines were configured with. */
uint16_t mroce_ep_mtu(const struct mroce_ep *ep);
/* The line rate (bit/s) the engines pace at and share out, and where it
 * came from ("configured": an engine's link_bps; "interface": the speed
 * of AF_XDP's interface, or of the one holding the UDP backend's local
 * address; "default": neither, MROCE_DEFAULT_LINK_BPS). */
uint64_t mroce_ep_link_bps(const struct mroce_ep *ep, const char **src);

/* The backend (for stats; mroce_io_get_stats()); with several (all
 * queues) the first one, which also holds the XDP `conns` entries. */
struct mroce_io *mroce_ep_io(struct mroce_ep *ep);

/* Number of backends (receive queues) this endpoint reads: 1 unless
 * all_queues, 0 for NULL. */
int mroce_ep_nqueues(const struct mroce_ep *ep);

/* Backend i (0 <= i < mroce_ep_nqueues()) and the receive queue it is
 * bound to (*queue may be NULL). NULL when i is out of range. */
struct mroce_io *mroce_ep_queue_io(struct mroce_ep *ep, int i,
				   uint32_t *queue);

/* The generic counters summed over every backend. */
void mroce_ep_io_stats(const struct mroce_ep *ep, struct mroce_io_stats *s);

/* Current time in ns (CLOCK_MONOTONIC), the clock every caller uses. */
uint64_t mroce_ep_now(void);

#endif /* MROCE_ENDPOINT_H */
