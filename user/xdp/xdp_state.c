// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The parts of include/mroce/xdp.h that tools and the daemon use around
 * the XDP program, beyond what libmroce's AF_XDP backend needs
 * (xdp_maps.c): error names, the program's clock, publishing receive
 * state into the shared rx_state array, reading the per-CPU counters.
 * Part of the internal library libmroce-xdp.a (user/xdp/module.mk).
 */
#include "mroce/xdp.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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
