/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal to the AF_XDP backend: the destination MAC of a frame. AF_XDP
 * bypasses the kernel's neighbour resolution, so the backend asks
 * rtnetlink itself (route to the next hop, then the neighbour table) and
 * caches the answer; it also learns the source MAC of received frames for
 * peers the kernel has no entry for (AF_XDP traffic never creates one).
 *
 * Error convention: 0 or a negative errno. Never prints. One thread.
 */
#ifndef MROCE_IO_AFXDP_NEIGH_H
#define MROCE_IO_AFXDP_NEIGH_H

#include <stdint.h>

/* Direct-mapped by address hash. Entries from netlink are re-checked
 * after NEIGH_TTL_NS so that a changed MAC is picked up; a failed lookup
 * is retried after NEIGH_NEG_TTL_NS (not per packet). */
#define AFXDP_NEIGH_SLOTS 256

struct afxdp_neigh {
	uint8_t state; /* enum neigh_state (afxdp_neigh.c) */
	uint8_t family;
	uint8_t addr[16];
	uint8_t mac[6];
	uint64_t expires; /* CLOCK_MONOTONIC ns */
};

struct afxdp_neigh_cache {
	int nl_fd; /* rtnetlink; -1 before afxdp_neigh_open() */
	uint32_t nl_seq;
	int ifindex; /* the interface the backend sends on */
	struct afxdp_neigh slot[AFXDP_NEIGH_SLOTS];
};

/* Opens the netlink socket (on failure nl_fd may be open: close it). */
int afxdp_neigh_open(struct afxdp_neigh_cache *nc, int ifindex);
void afxdp_neigh_close(struct afxdp_neigh_cache *nc);

/* Destination MAC for dst at time now (ns). 0 or -EHOSTUNREACH. */
int afxdp_neigh_resolve(struct afxdp_neigh_cache *nc, uint8_t family,
			const uint8_t *dst, uint64_t now, uint8_t mac[6]);

/* A frame from src arrived with this source MAC: remember it. Never
 * overrides what the kernel said. */
void afxdp_neigh_learn(struct afxdp_neigh_cache *nc, uint8_t family,
		       const uint8_t *src, const uint8_t mac[6]);

#endif
