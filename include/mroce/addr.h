/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The address of a peer, the one type the engine (mroce/engine.h: peers,
 * cookies) and the I/O layer (mroce/io.h: where a packet goes) share. It
 * lives on its own so that neither layer includes the other.
 */
#ifndef MROCE_ADDR_H
#define MROCE_ADDR_H

#include <stdint.h>

struct mroce_peer_addr {
	uint8_t family;		/* AF_INET / AF_INET6 */
	uint8_t addr[16];	/* remote address (cookie input) */
	uint8_t local[16];	/* local address (cookie input) */
};
_Static_assert(sizeof(struct mroce_peer_addr) == 33, "mroce_peer_addr size");

#endif
