// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Userspace side of the XDP maps (include/mroce/xdp.h). */
#include "mroce/xdp.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static const char *const err_names[] = {[MROCE_XDP_OK] = "OK",
#define X_NAME(name, text) [MROCE_XDP_E_##name] = #name,
					MROCE_XDP_ERRORS(X_NAME)
#undef X_NAME
};

static const char *const err_texts[] = {[MROCE_XDP_OK] = "success",
#define X_TEXT(name, text) [MROCE_XDP_E_##name] = text,
					MROCE_XDP_ERRORS(X_TEXT)
#undef X_TEXT
};

const char *mroce_xdp_err_name(int err)
{
	if (err < 0)
		err = -err;
	return err < MROCE_XDP_E__COUNT ? err_names[err] : "UNKNOWN";
}

const char *mroce_xdp_err_text(int err)
{
	if (err < 0)
		err = -err;
	return err < MROCE_XDP_E__COUNT ? err_texts[err] : "unknown error";
}

uint32_t mroce_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint32_t)((uint64_t)ts.tv_sec * 1000000u +
			  (uint64_t)ts.tv_nsec / 1000u);
}

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

struct mroce_rx_path *mroce_xdp_rx_path(const struct mroce_xdp_maps *m,
					uint32_t slot, uint32_t path)
{
	if (!m->rx_state || slot >= MROCE_MAX_CONNS || path >= MROCE_MAX_PATHS)
		return NULL;
	return &m->rx_state[(size_t)slot * MROCE_MAX_PATHS + path];
}

void mroce_rx_publish(struct mroce_rx_path *rp, uint8_t gen, uint8_t flags,
		      uint32_t cum_psn, uint32_t rate_mbps,
		      const uint8_t sack[MROCE_SACK_BYTES])
{
	uint32_t seq = __atomic_load_n(&rp->seq, __ATOMIC_RELAXED);

	/* odd: readers that start now give up; the fence keeps the data
	 * stores below from being seen before the odd value */
	__atomic_store_n(&rp->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	rp->gen = gen;
	rp->flags = flags;
	rp->cum_psn = cum_psn;
	rp->rate_mbps = rate_mbps;
	if (sack)
		memcpy(rp->sack, sack, MROCE_SACK_BYTES);
	else
		memset(rp->sack, 0, MROCE_SACK_BYTES);
	/* even again, after (release) every data store */
	__atomic_store_n(&rp->seq, seq + 2, __ATOMIC_RELEASE);
}

uint32_t mroce_rx_take_ce(struct mroce_rx_path *rp)
{
	return __atomic_exchange_n(&rp->ce_pending, 0, __ATOMIC_ACQ_REL);
}

int mroce_xdp_counters_read(int counters_fd, struct mroce_xdp_counters *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct mroce_xdp_counters *per;
	uint32_t zero = 0;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0)
		return -MROCE_XDP_E_MAP;
	per = calloc((size_t)ncpu, sizeof(*per));
	if (!per)
		return -MROCE_XDP_E_INVAL;
	if (bpf_map_lookup_elem(counters_fd, &zero, per)) {
		err = -MROCE_XDP_E_MAP;
	} else {
		for (int c = 0; c < ncpu; c++)
			for (unsigned int i = 0; i < MROCE_XC__COUNT; i++)
				((uint64_t *)out)[i] +=
					((const uint64_t *)&per[c])[i];
	}
	free(per);
	return err;
}

static const char *const ctr_names[] = {
#define X_NAME(name, desc) #name,
	MROCE_XDP_COUNTERS(X_NAME)
#undef X_NAME
};

static const char *const ctr_descs[] = {
#define X_DESC(name, desc) desc,
	MROCE_XDP_COUNTERS(X_DESC)
#undef X_DESC
};

const char *mroce_xdp_counter_name(unsigned int idx)
{
	return idx < MROCE_XC__COUNT ? ctr_names[idx] : NULL;
}

const char *mroce_xdp_counter_desc(unsigned int idx)
{
	return idx < MROCE_XC__COUNT ? ctr_descs[idx] : NULL;
}

uint64_t mroce_xdp_counter_get(const struct mroce_xdp_counters *c,
			       unsigned int idx)
{
	return idx < MROCE_XC__COUNT ? ((const uint64_t *)c)[idx] : 0;
}

int mroce_xdp_counter_find(const char *name)
{
	for (unsigned int i = 0; i < MROCE_XC__COUNT; i++)
		if (!strcmp(ctr_names[i], name))
			return (int)i;
	return -1;
}
