// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Memory regions: registration with random keys (key = random bits above
 * the slot index, so a stale key of a reused slot does not match), and
 * the lkey/rkey checks every transport goes through before touching
 * memory.
 */
#include "engine_int.h"

static uint32_t mr_new_key(struct mroce_engine *e, uint32_t idx)
{
	uint32_t k;

	do
		k = (mroce_rng_u32(e) << e->mr_bits) | idx;
	while (k == 0);
	return k;
}

int mroce_reg_mr(struct mroce_engine *e, void *addr, size_t len,
		 uint32_t access, struct mroce_mr *out)
{
	return mroce_reg_mr_iova(e, addr, len, (uint64_t)(uintptr_t)addr,
				 access, out);
}

int mroce_reg_mr_iova(struct mroce_engine *e, void *addr, size_t len,
		      uint64_t iova, uint32_t access, struct mroce_mr *out)
{
	struct mroce_mr_ent *m = NULL;
	uint32_t idx;

	if (!e || !out || (access & ~MROCE_ACCESS_ALL) || (!addr && len))
		return -EINVAL;
	/* ibverbs: remote write needs local write. */
	if ((access & MROCE_ACCESS_REMOTE_WRITE) &&
	    !(access & MROCE_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	if ((uint64_t)(uintptr_t)addr + len < (uint64_t)(uintptr_t)addr ||
	    iova + len < iova)
		return -EINVAL;
	for (idx = 0; idx < e->cfg.max_mrs; idx++) {
		if (!e->mrs[idx].used) {
			m = &e->mrs[idx];
			break;
		}
	}
	if (!m)
		return -ENOMEM;
	m->used = true;
	m->mr.addr = iova;
	m->base = addr;
	m->mr.length = len;
	m->mr.access = access;
	m->mr.lkey = mr_new_key(e, idx);
	m->mr.rkey = mr_new_key(e, idx);
	*out = m->mr;
	return 0;
}

static struct mroce_mr_ent *mr_by_key(const struct mroce_engine *e,
				      uint32_t key, bool remote)
{
	uint32_t idx = key & ((1u << e->mr_bits) - 1);
	struct mroce_mr_ent *m;

	if (key == 0 || idx >= e->cfg.max_mrs)
		return NULL;
	m = &e->mrs[idx];
	if (!m->used || (remote ? m->mr.rkey : m->mr.lkey) != key)
		return NULL;
	return m;
}

int mroce_dereg_mr(struct mroce_engine *e, uint32_t lkey)
{
	struct mroce_mr_ent *m;

	if (!e)
		return -EINVAL;
	m = mr_by_key(e, lkey, false);
	if (!m)
		return -ENOENT;
	memset(m, 0, sizeof(*m));
	return 0;
}

static bool range_in(const struct mroce_mr *mr, uint64_t va, uint64_t len)
{
	return va >= mr->addr && len <= mr->length &&
	       va - mr->addr <= mr->length - len;
}

enum mroce_mr_check mroce_lkey_check(const struct mroce_engine *e,
				     uint32_t lkey, uint64_t addr,
				     uint64_t len, uint32_t need,
				     const struct mroce_mr **mrp)
{
	const struct mroce_mr_ent *m = mr_by_key(e, lkey, false);

	if (!m)
		return MROCE_MRC_BAD_KEY;
	if (!range_in(&m->mr, addr, len))
		return MROCE_MRC_BOUNDS;
	if ((m->mr.access & need) != need)
		return MROCE_MRC_ACCESS;
	if (mrp)
		*mrp = &m->mr;
	return MROCE_MRC_OK;
}

enum mroce_mr_check mroce_rkey_check(const struct mroce_engine *e,
				     const struct mroce_qp *qp, uint32_t rkey,
				     uint64_t va, uint64_t len, uint32_t need)
{
	const struct mroce_mr_ent *m;

	if (len == 0)
		return MROCE_MRC_OK;
	m = mr_by_key(e, rkey, true);
	if (!m)
		return MROCE_MRC_BAD_KEY;
	if (!range_in(&m->mr, va, len))
		return MROCE_MRC_BOUNDS;
	if ((m->mr.access & need) != need || (qp->access & need) != need)
		return MROCE_MRC_ACCESS;
	return MROCE_MRC_OK;
}

uint8_t *mroce_mr_ptr(const struct mroce_engine *e, uint32_t key, bool remote,
		      uint64_t va)
{
	const struct mroce_mr_ent *m = mr_by_key(e, key, remote);

	return m ? m->base + (va - m->mr.addr) : NULL;
}

uint8_t *mroce_wqe_local_ptr(const struct mroce_engine *e,
			     const struct mroce_wqe *w, uint32_t off,
			     uint32_t len, uint32_t need)
{
	const struct mroce_sge *s = &w->wr.sge;

	uint8_t *p;

	if ((uint64_t)off + len > s->length)
		return NULL;
	if (len == 0) {
		/* Nothing is read or written: any non-NULL pointer will do,
		 * and a zero-length SGE need not name a valid region. */
		p = mroce_mr_ptr(e, s->lkey, false, s->addr + off);
		return p ? p : (uint8_t *)(uintptr_t)(s->addr + off);
	}
	if (mroce_lkey_check(e, s->lkey, s->addr + off, len, need, NULL) !=
	    MROCE_MRC_OK)
		return NULL;
	return mroce_mr_ptr(e, s->lkey, false, s->addr + off);
}
