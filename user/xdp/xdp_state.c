// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The parts of include/mroce/xdp.h that tools and the daemon use around
 * the XDP program, beyond what libmroce's AF_XDP backend needs
 * (xdp_maps.c): error names, the program's clock, reading the per-CPU
 * counters.
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
