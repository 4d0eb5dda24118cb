// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Map access of the XDP fast path (include/mroce/xdp.h) that libmroce
 * itself needs: the AF_XDP backend opens the maps mrocectl pinned,
 * registers connections, binds its sockets, publishes receive state and
 * resets a connection's slot. The rest of the layer (error names,
 * counters: xdp_state.c; the loader: loader.c) is the internal library
 * libmroce-xdp.a that only mrocectl, mroced and the tests link.
 */
#include "mroce/xdp.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static void maps_reset(struct mroce_xdp_maps *m)
{
	memset(m, 0, sizeof(*m));
	m->conns_fd = m->xsks_fd = m->rx_state_fd = -1;
	m->scoreboard_fd = m->counters_fd = -1;
}

void mroce_xdp_maps_close(struct mroce_xdp_maps *m)
{
	int *fds[] = {&m->conns_fd, &m->xsks_fd, &m->rx_state_fd,
		      &m->scoreboard_fd, &m->counters_fd};

	if (m->rx_state)
		munmap(m->rx_state, m->rx_state_len);
	if (m->scoreboard)
		munmap(m->scoreboard, m->scoreboard_len);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	maps_reset(m);
}

/* The map behind fd has this type and these sizes. */
static int check_map(int fd, enum bpf_map_type type, uint32_t key,
		     uint32_t value, uint32_t min_entries)
{
	struct bpf_map_info info;
	uint32_t len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
		return -MROCE_XDP_E_MAP;
	if (info.type != type || info.key_size != key ||
	    info.value_size != value || info.max_entries < min_entries)
		return -MROCE_XDP_E_MAP;
	return 0;
}

static int map_shared(int fd, size_t len, void **out)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -MROCE_XDP_E_MMAP;
	*out = p;
	return 0;
}

static int maps_finish(struct mroce_xdp_maps *m)
{
	int err;

	err = check_map(m->conns_fd, BPF_MAP_TYPE_HASH,
			sizeof(struct mroce_conn_key),
			sizeof(struct mroce_conn_val), 1);
	if (!err)
		err = check_map(m->xsks_fd, BPF_MAP_TYPE_XSKMAP, 4, 4, 1);
	if (!err)
		err = check_map(m->rx_state_fd, BPF_MAP_TYPE_ARRAY, 4,
				sizeof(struct mroce_rx_path),
				MROCE_MAX_CONNS * MROCE_MAX_PATHS);
	if (!err)
		err = check_map(m->scoreboard_fd, BPF_MAP_TYPE_ARRAY, 4,
				sizeof(struct mroce_sb_conn), MROCE_MAX_CONNS);
	if (!err)
		err = check_map(m->counters_fd, BPF_MAP_TYPE_PERCPU_ARRAY, 4,
				sizeof(struct mroce_xdp_counters), 1);
	if (err)
		return err;
	m->rx_state_len = (size_t)MROCE_MAX_CONNS * MROCE_MAX_PATHS *
			  sizeof(struct mroce_rx_path);
	m->scoreboard_len =
		(size_t)MROCE_MAX_CONNS * sizeof(struct mroce_sb_conn);
	err = map_shared(m->rx_state_fd, m->rx_state_len,
			 (void **)&m->rx_state);
	if (!err)
		err = map_shared(m->scoreboard_fd, m->scoreboard_len,
				 (void **)&m->scoreboard);
	return err;
}

int mroce_xdp_maps_open(const char *ifname, struct mroce_xdp_maps *m)
{
	const char *names[] = {MROCE_MAP_CONNS, MROCE_MAP_XSKS,
			       MROCE_MAP_RX_STATE, MROCE_MAP_SCOREBOARD,
			       MROCE_MAP_COUNTERS};
	int *fds[] = {&m->conns_fd, &m->xsks_fd, &m->rx_state_fd,
		      &m->scoreboard_fd, &m->counters_fd};
	char path[PATH_MAX];
	int err;

	maps_reset(m);
	if (!ifname || !*ifname || strchr(ifname, '/'))
		return -MROCE_XDP_E_INVAL;
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", MROCE_PIN_ROOT, ifname,
			 names[i]);
		*fds[i] = bpf_obj_get(path);
		if (*fds[i] < 0) {
			err = errno == ENOENT ? -MROCE_XDP_E_NOT_ATTACHED
			      : errno == EPERM || errno == EACCES
				      ? -MROCE_XDP_E_NO_PRIV
				      : -MROCE_XDP_E_MAP;
			mroce_xdp_maps_close(m);
			return err;
		}
	}
	err = maps_finish(m);
	if (err)
		mroce_xdp_maps_close(m);
	return err;
}

int mroce_xdp_maps_from_fds(struct mroce_xdp_maps *m, int conns_fd, int xsks_fd,
			    int rx_state_fd, int scoreboard_fd, int counters_fd)
{
	int in[] = {conns_fd, xsks_fd, rx_state_fd, scoreboard_fd, counters_fd};
	int *fds[] = {&m->conns_fd, &m->xsks_fd, &m->rx_state_fd,
		      &m->scoreboard_fd, &m->counters_fd};
	int err;

	maps_reset(m);
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		*fds[i] = in[i] >= 0 ? dup(in[i]) : -1;
		if (*fds[i] < 0) {
			mroce_xdp_maps_close(m);
			return -MROCE_XDP_E_MAP;
		}
	}
	err = maps_finish(m);
	if (err)
		mroce_xdp_maps_close(m);
	return err;
}

int mroce_xdp_conn_add(const struct mroce_xdp_maps *m, uint8_t proto,
		       uint32_t id, const struct mroce_conn_val *v)
{
	struct mroce_conn_key k = {.id = id, .proto = proto};

	if ((proto != MROCE_CONN_METAROCE && proto != MROCE_CONN_ROCEV2) ||
	    !v || v->slot >= MROCE_MAX_CONNS ||
	    (proto == MROCE_CONN_ROCEV2 && id > ROCEV2_QPN_MASK))
		return -MROCE_XDP_E_INVAL;
	if (bpf_map_update_elem(m->conns_fd, &k, v, BPF_ANY))
		return -MROCE_XDP_E_MAP_UPDATE;
	return 0;
}

int mroce_xdp_conn_del(const struct mroce_xdp_maps *m, uint8_t proto,
		       uint32_t id)
{
	struct mroce_conn_key k = {.id = id, .proto = proto};

	if (bpf_map_delete_elem(m->conns_fd, &k))
		return -MROCE_XDP_E_MAP_UPDATE;
	return 0;
}

int mroce_xdp_xsk_set(const struct mroce_xdp_maps *m, uint32_t queue,
		      int xsk_fd)
{
	if (queue >= MROCE_MAX_QUEUES)
		return -MROCE_XDP_E_INVAL;
	if (xsk_fd < 0) {
		if (bpf_map_delete_elem(m->xsks_fd, &queue) && errno != ENOENT)
			return -MROCE_XDP_E_MAP_UPDATE;
		return 0;
	}
	if (bpf_map_update_elem(m->xsks_fd, &queue, &xsk_fd, BPF_ANY))
		return -MROCE_XDP_E_MAP_UPDATE;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Receive state (abi.h): publishing, and forgetting a slot             */
/* ------------------------------------------------------------------ */
struct mroce_rx_path *mroce_xdp_rx_path(const struct mroce_xdp_maps *m,
					uint32_t slot, uint32_t path)
{
	if (!m->rx_state || slot >= MROCE_MAX_CONNS || path >= MROCE_MAX_PATHS)
		return NULL;
	return &m->rx_state[(size_t)slot * MROCE_MAX_PATHS + path];
}

/* The writer's side of rx_state's sequence lock (abi.h): seq_begin()
 * makes seq odd (readers that start now give up; the fence keeps the data
 * stores after it from being seen before the odd value), seq_end() makes
 * it even again after (release) every data store. */
static uint32_t seq_begin(struct mroce_rx_path *rp)
{
	uint32_t seq = __atomic_load_n(&rp->seq, __ATOMIC_RELAXED);

	__atomic_store_n(&rp->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return seq;
}

static void seq_end(struct mroce_rx_path *rp, uint32_t seq)
{
	__atomic_store_n(&rp->seq, seq + 2, __ATOMIC_RELEASE);
}

void mroce_rx_publish(struct mroce_rx_path *rp, uint8_t gen, uint8_t flags,
		      uint32_t cum_psn, uint32_t rx_high, uint32_t rate_mbps,
		      const uint8_t sack[MROCE_SACK_BYTES])
{
	uint32_t seq = seq_begin(rp);

	rp->gen = gen;
	rp->flags = flags;
	rp->cum_psn = cum_psn;
	rp->rx_high = rx_high;
	rp->rate_mbps = rate_mbps;
	if (sack)
		memcpy(rp->sack, sack, MROCE_SACK_BYTES);
	else
		memset(rp->sack, 0, MROCE_SACK_BYTES);
	seq_end(rp, seq);
}

void mroce_rx_publish_ack(struct mroce_rx_path *rp, uint32_t ack_cum,
			  uint32_t lost_at_us)
{
	uint32_t seq = seq_begin(rp);

	rp->ack_cum = ack_cum;
	rp->ack_lost_us = lost_at_us;
	seq_end(rp, seq);
}

void mroce_xdp_sb_publish(const struct mroce_xdp_maps *m, uint32_t slot,
			  uint32_t path, uint32_t n_paths, uint16_t sport,
			  uint8_t gen, bool active)
{
	struct mroce_sb_conn *sb;
	struct mroce_sb_path *sp;
	uint64_t bit, mask;

	if (!m->scoreboard || slot >= MROCE_MAX_CONNS ||
	    path >= MROCE_MAX_PATHS || n_paths > MROCE_MAX_PATHS)
		return;
	sb = &m->scoreboard[slot];
	sp = &sb->path[path];
	bit = 1ull << path;
	mask = __atomic_load_n(&sb->active_mask, __ATOMIC_RELAXED);
	if (sp->sport != sport || sp->gen != gen) {
		/* a new port or generation: no telemetry of the old one may
		 * land in it (abi.h): inactive first, then cleared */
		mask &= ~bit;
		__atomic_store_n(&sb->active_mask, mask, __ATOMIC_RELEASE);
		memset(sp, 0, sizeof(*sp));
		sp->sport = sport;
		sp->gen = gen;
	}
	sb->n_paths = n_paths;
	mask = active ? mask | bit : mask & ~bit;
	__atomic_store_n(&sb->active_mask, mask, __ATOMIC_RELEASE);
}

void mroce_xdp_slot_reset(const struct mroce_xdp_maps *m, uint32_t slot)
{
	struct mroce_sb_conn *sb;

	if (!m->rx_state || !m->scoreboard || slot >= MROCE_MAX_CONNS)
		return;
	for (uint32_t p = 0; p < MROCE_MAX_PATHS; p++) {
		struct mroce_rx_path *rp = mroce_xdp_rx_path(m, slot, p);

		mroce_rx_publish(rp, 0, 0, 0, 0, 0, NULL);
		mroce_rx_publish_ack(rp, 0, 0);
	}
	/* no path active first (release), then the rest: an ACK racing with
	 * this finds no active path and writes no telemetry (abi.h) */
	sb = &m->scoreboard[slot];
	__atomic_store_n(&sb->active_mask, 0, __ATOMIC_RELEASE);
	sb->n_paths = 0;
	memset(sb->path, 0, sizeof(sb->path));
}
