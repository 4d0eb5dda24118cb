/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Userspace access to the XDP fast path's maps (libmroce, user/xdp/):
 * open the maps mrocectl pinned for an interface, map the shared arrays,
 * add/remove connections and AF_XDP sockets, publish receive state, read
 * counters. The daemon uses this; so do mrocectl and the tests.
 *
 * Error convention of this layer: 0 or a value >= 0 on success, a
 * NEGATIVE enum mroce_xdp_err on failure; the failing system call's errno
 * is left in errno. Nothing here prints or exits.
 */
#ifndef MROCE_XDP_H
#define MROCE_XDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mroce/abi.h"
#include "mroce/counters.h"

#define MROCE_XDP_ERRORS(X)                                                    \
	X(NO_IFACE, "no such network interface")                               \
	X(NO_PRIV, "operation needs root (CAP_BPF and CAP_NET_ADMIN)")         \
	X(BPFFS, "cannot mount or use the BPF filesystem at /sys/fs/bpf")      \
	X(NOT_ATTACHED, "mroce is not attached to this interface")             \
	X(ALREADY_ATTACHED, "mroce is already attached to this interface")     \
	X(LOAD, "the kernel refused to load the XDP program")                  \
	X(ATTACH, "the kernel refused to attach the XDP program")              \
	X(NATIVE_REFUSED, "the driver refused native XDP (queues/MTU)")        \
	X(PIN, "cannot pin the maps under /sys/fs/bpf/mroce")                  \
	X(MAP, "a map is missing or has the wrong layout")                     \
	X(MMAP, "cannot mmap a shared map")                                    \
	X(MAP_UPDATE, "map update failed (full table, bad socket?)")           \
	X(INVAL, "invalid argument")

enum mroce_xdp_err {
	MROCE_XDP_OK = 0,
#define MROCE_XDP_X_ERR(name, text) MROCE_XDP_E_##name,
	MROCE_XDP_ERRORS(MROCE_XDP_X_ERR)
#undef MROCE_XDP_X_ERR
		MROCE_XDP_E__COUNT
};

/* "NO_IFACE", ... for err or -err; "OK" for 0; "UNKNOWN" otherwise. */
const char *mroce_xdp_err_name(int err);
/* One-line description; never NULL. */
const char *mroce_xdp_err_text(int err);

/* The clock of tsval/tsecr and of every time in the maps: CLOCK_MONOTONIC
 * microseconds truncated to 32 bits (= bpf_ktime_get_ns() / 1000). */
uint32_t mroce_now_us(void);

/* Open maps and the mmapped shared arrays. fds are -1 when not open. */
struct mroce_xdp_maps {
	int conns_fd, xsks_fd, rx_state_fd, scoreboard_fd, counters_fd;
	struct mroce_rx_path *rx_state;	     /* MROCE_MAX_CONNS * MAX_PATHS */
	struct mroce_sb_conn *scoreboard;    /* MROCE_MAX_CONNS */
	size_t rx_state_len, scoreboard_len; /* mapped bytes */
};

/* Open the maps pinned for ifname (MROCE_PIN_ROOT/<ifname>/) and mmap the
 * shared arrays. -NOT_ATTACHED when there are no pins. */
int mroce_xdp_maps_open(const char *ifname, struct mroce_xdp_maps *m);
/* Take over already open fds (e.g. from a skeleton: they are dup'ed) and
 * mmap the shared arrays. Checks each map's type and sizes. */
int mroce_xdp_maps_from_fds(struct mroce_xdp_maps *m, int conns_fd, int xsks_fd,
			    int rx_state_fd, int scoreboard_fd,
			    int counters_fd);
void mroce_xdp_maps_close(struct mroce_xdp_maps *m);

/* Connection table (key proto = enum mroce_conn_proto, id = conn_id or
 * QPN). add replaces an existing entry. */
int mroce_xdp_conn_add(const struct mroce_xdp_maps *m, uint8_t proto,
		       uint32_t id, const struct mroce_conn_val *v);
int mroce_xdp_conn_del(const struct mroce_xdp_maps *m, uint8_t proto,
		       uint32_t id);

/* Bind (xsk_fd >= 0) or unbind (-1) the AF_XDP socket of a queue. */
int mroce_xdp_xsk_set(const struct mroce_xdp_maps *m, uint32_t queue,
		      int xsk_fd);

/* The rx_state entry of (slot, path), or NULL when out of range. */
struct mroce_rx_path *mroce_xdp_rx_path(const struct mroce_xdp_maps *m,
					uint32_t slot, uint32_t path);

/* Publish the receive state of a path (seqlock writer, see abi.h). Only
 * what the caller has already placed may be published. */
void mroce_rx_publish(struct mroce_rx_path *rp, uint8_t gen, uint8_t flags,
		      uint32_t cum_psn, uint32_t rx_high, uint32_t rate_mbps,
		      const uint8_t sack[MROCE_SACK_BYTES]);

/* Publish one of our paths in the scoreboard (single writer, abi.h):
 * its port and generation (a change clears the path's telemetry, with
 * the path inactive meanwhile), whether it is active, and the
 * connection's n_paths. */
void mroce_xdp_sb_publish(const struct mroce_xdp_maps *m, uint32_t slot,
			  uint32_t path, uint32_t n_paths, uint16_t sport,
			  uint8_t gen, bool active);

/* Publish the daemon's last ACK of a path (seqlock writer, abi.h): the
 * cum_psn it reported and when a PROBE it covers shows it lost (0: no
 * ACK yet). */
void mroce_rx_publish_ack(struct mroce_rx_path *rp, uint32_t ack_cum,
			  uint32_t lost_at_us);

/* Forget everything published for a connection slot: every path's
 * rx_state invalid (the program answers nothing from it), the
 * scoreboard's paths gone (no telemetry). The endpoint calls it when a
 * connection goes down and before a slot is used again, so a new
 * connection never sees its predecessor's state. */
void mroce_xdp_slot_reset(const struct mroce_xdp_maps *m, uint32_t slot);

/* Sum of the per-CPU counters. */
int mroce_xdp_counters_read(int counters_fd, struct mroce_xdp_counters *out);

/* Counter table (from MROCE_XDP_COUNTERS): name, description, value. */
const char *mroce_xdp_counter_name(unsigned int idx);
const char *mroce_xdp_counter_desc(unsigned int idx);
uint64_t mroce_xdp_counter_get(const struct mroce_xdp_counters *c,
			       unsigned int idx);
/* Index of a counter by name, or -1. */
int mroce_xdp_counter_find(const char *name);

#endif /* MROCE_XDP_H */
