// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Events for the I/O layer (mroce_engine_poll_event): connection and QP
 * up/down. Never dropped: see the reservation scheme in engine_int.h.
 */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

/* Ring capacity at least `need` (a power of two); -ENOMEM otherwise. */
static int ev_grow(struct mroce_engine *e, uint64_t need)
{
	struct mroce_engine_event *n;
	uint64_t cap = e->ev_cap ? e->ev_cap : 16;

	if (need <= e->ev_cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > UINT32_MAX / 2 || cap > SIZE_MAX / sizeof(*n))
		return -ENOMEM;
	n = malloc((size_t)cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < e->ev_n; i++)
		n[i] = e->ev[(e->ev_head + i) % e->ev_cap];
	free(e->ev);
	e->ev = n;
	e->ev_cap = (uint32_t)cap;
	e->ev_head = 0;
	return 0;
}

int mroce_ev_reserve(struct mroce_engine *e, uint32_t k)
{
	return ev_grow(e, (uint64_t)e->ev_n + e->ev_owed + k);
}

static void ev_push(struct mroce_engine *e, uint8_t type, int peer,
		    uint32_t id, uint32_t peer_id, uint32_t slot)
{
	/* Room was reserved; growing here is only a second chance. */
	if (e->ev_n == e->ev_cap && ev_grow(e, (uint64_t)e->ev_n + 1) < 0)
		return;
	e->ev[(e->ev_head + e->ev_n) % e->ev_cap] =
		(struct mroce_engine_event){
			.type = type,
			.peer = peer,
			.id = id,
			.peer_id = peer_id,
			.slot = slot,
		};
	e->ev_n++;
}

void mroce_ev_conn_up(struct mroce_engine *e, int peer, uint32_t id,
		      uint32_t slot)
{
	ev_push(e, MROCE_EV_CONN_UP, peer, id, 0, slot);
	e->ev_owed += 2; /* its peer_id update and its CONN_DOWN */
}

void mroce_ev_conn_update(struct mroce_engine *e, int peer, uint32_t id,
			  uint32_t peer_id, uint32_t slot)
{
	ev_push(e, MROCE_EV_CONN_UP, peer, id, peer_id, slot);
	/* Keep room for a later update of this connection (after a new
	 * handshake); this path cannot fail, so only try. */
	(void)mroce_ev_reserve(e, 0);
}

void mroce_ev_conn_down(struct mroce_engine *e, int peer, uint32_t id,
			uint32_t slot)
{
	ev_push(e, MROCE_EV_CONN_DOWN, peer, id, 0, slot);
	e->ev_owed = e->ev_owed >= 2 ? e->ev_owed - 2 : 0;
}

void mroce_ev_qp_up(struct mroce_engine *e, struct mroce_qp *qp)
{
	if (qp->ev_up)
		return;
	ev_push(e, MROCE_EV_QP_UP, qp->peer, qp->qpn, 0, 0);
	qp->ev_up = true;
	e->ev_owed++;
}

void mroce_ev_qp_down(struct mroce_engine *e, struct mroce_qp *qp,
		      int peer)
{
	if (!qp->ev_up)
		return;
	ev_push(e, MROCE_EV_QP_DOWN, peer, qp->qpn, 0, 0);
	qp->ev_up = false;
	if (e->ev_owed)
		e->ev_owed--;
}

int mroce_engine_poll_event(struct mroce_engine *e,
			    struct mroce_engine_event *ev)
{
	if (!e || !ev)
		return -EINVAL;
	if (!e->ev_n)
		return 0;
	*ev = e->ev[e->ev_head];
	e->ev_head = (e->ev_head + 1) % e->ev_cap;
	e->ev_n--;
	return 1;
}

void mroce_engine_set_pub(struct mroce_engine *e,
			  const struct mroce_engine_pub *pub)
{
	if (pub)
		e->pub = *pub;
	else
		memset(&e->pub, 0, sizeof(e->pub));
	e->pub_epoch++;
}
