/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: struct mrv_dev_stats and struct mrv_path_info (mroce.h) from an
 * engine's and a backend's counters, written once for embedded mode
 * (user/lib) and the daemon (mroced answers QUERY_STATS and QUERY_PATH with
 * the same structs).
 */
#ifndef MROCE_COMMON_DEVSTATS_H
#define MROCE_COMMON_DEVSTATS_H

#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/mroce.h"

/* X(mrv_dev_stats field, source: es (engine) or is (I/O), source field) */
#define MROCE_DEV_STATS_MAP(X)                                                 \
	X(tx_pkts, es, tx_pkts) X(rx_pkts, es, rx_pkts)                        \
	X(tx_data_pkts, es, tx_data_pkts) X(rx_data_pkts, es, rx_data_pkts)    \
	X(retransmits, es, retransmits) X(rx_dup, es, rx_dup)                  \
	X(rx_ooo, es, rx_ooo) X(ce_marks, es, ce_marks)                        \
	X(path_rerolls, es, path_rerolls) X(rto_fires, es, rto_fires)          \
	X(rx_malformed, es, rx_malformed) X(rx_bad_rkey, es, rx_bad_rkey)      \
	X(io_tx_full, is, tx_full) X(io_tx_errors, is, tx_errors)

static inline void mroce_dev_stats_fill(struct mrv_dev_stats *st,
					const struct mroce_engine_stats *es,
					const struct mroce_io_stats *is)
{
#define MROCE_X_DEVSTAT(f, src, sf) st->f = src->sf;
	MROCE_DEV_STATS_MAP(MROCE_X_DEVSTAT)
#undef MROCE_X_DEVSTAT
}

/* struct mrv_path_info from the engine's path info (both modes). */
static inline void mroce_path_info_fill(struct mrv_path_info *out,
					const struct mroce_path_info *pi)
{
	*out = (struct mrv_path_info){
		.sport = pi->sport,
		.alive = pi->alive,
		.srtt_us = pi->srtt_us,
		.cwnd_pkts = pi->cwnd_pkts,
		.inflight = pi->inflight,
		.tx_pkts = pi->tx_pkts,
		.retransmits = pi->retransmits,
		.ce_marks = pi->ce_marks,
	};
}

/* Every field of struct mrv_dev_stats is in the map. */
#define MROCE_X_DEVSTAT_N(f, src, sf) +1
_Static_assert(sizeof(struct mrv_dev_stats) ==
		       (0 MROCE_DEV_STATS_MAP(MROCE_X_DEVSTAT_N)) * 8,
	       "MROCE_DEV_STATS_MAP covers struct mrv_dev_stats");
#undef MROCE_X_DEVSTAT_N

#endif
