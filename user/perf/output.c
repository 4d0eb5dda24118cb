// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_perf's output: perftest's header block and result columns (kept
 * column for column: scripts parse them by position), the spraying
 * block, the --json document (docs/json.md: mroce's key scheme) and
 * perftest's own --out_json file (perftest's key names).
 *
 * The --json document is built as the run goes and printed once, at the
 * end or by perf_die(): a run that fails midway still prints a whole
 * document, with the rows measured so far and an "error" object.
 */
#include "perf.h"

#include "../common/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static struct json_object *doc;	    /* --json: the document */
static struct json_object *results; /* its "results" array */
static const struct bw_res *live;   /* the bandwidth run going on */

static const char *test_title(const struct opts *o)
{
	static const char *t[2][3] = {
		{"RDMA_Write Latency Test", "RDMA_Read Latency Test",
		 "Send Latency Test"},
		{"RDMA_Write BW Test", "RDMA_Read BW Test", "Send BW Test"},
	};

	return t[o->bw][o->kind];
}

static const char *perf_tname(uint8_t t)
{
	return t == MRV_TRANSPORT_ROCEV2 ? "RoCEv2" : "MetaRoCE";
}

/* The transport as the command line spells it (JSON values). */
static const char *tkey(uint8_t t)
{
	return t == MRV_TRANSPORT_ROCEV2 ? "rocev2" : "metaroce";
}

/* A number with the decimals the text columns (and perftest) print:
 * json-c's default of 17 digits shows binary noise. */
#define DASHES                                                                 \
	"--------------------------------------------------------------------" \
	"-------------------\n"

void out_begin(const struct ctx *c)
{
	if (!c->o.json || !c->o.host)
		return;
	doc = mroce_json_doc(prog);
	mroce_json_add_str(doc, "test", c->o.name);
	mroce_json_add_str(doc, "transport", tkey(c->o.transport));
	mroce_json_add_i64(doc, "qps", c->o.qps);
	mroce_json_add_bool(doc, "verify", c->o.verify);
	results = json_object_new_array();
	json_object_object_add(doc, "results", results);
}

/* The intervals of a run that ends in an error are kept: "partial"
 * (start_unix_s and intervals, as in a row). */
static struct json_object *ivl_json(const struct ivl *v, uint64_t n);

void out_live(const struct bw_res *r)
{
	live = r;
}

/* The CPU time this process used (every thread), for efficiency
 * figures such as Gbit/s per CPU-second (scripts/bench_e2e.sh): a line
 * in the text output, cpu_user_s / cpu_system_s in the JSON document. */
void out_cpu(const struct ctx *c)
{
	struct rusage ru;
	double u, s;

	if (getrusage(RUSAGE_SELF, &ru))
		return;
	u = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	if (doc) {
		mroce_json_add_fixed(doc, "cpu_user_s", u, 3);
		mroce_json_add_fixed(doc, "cpu_system_s", s, 3);
	} else if (!c->o.json) {
		printf(" CPU             : %.3f s (user %.3f, system %.3f)\n",
		       u + s, u, s);
	}
}

void out_end(int code, const char *error)
{
	if (!doc)
		return;
	if (error)
		mroce_json_set_error(doc, code, error);
	if (error && live && live->n_ivl) {
		struct json_object *p = json_object_new_object();

		mroce_json_add_fixed(p, "start_unix_s", live->start_unix, 6);
		json_object_object_add(p, "intervals",
				       ivl_json(live->ivl, live->n_ivl));
		json_object_object_add(doc, "partial", p);
	}
	mroce_json_emit(stdout, doc, 1);
	doc = NULL;
}

void out_header(struct ctx *c)
{
	struct mrv_qp_attr a;

	if (c->o.json)
		return;
	printf(DASHES);
	printf("                    %s\n", test_title(&c->o));
	printf(" Dual-port       : OFF\t\tDevice         : mroce (%s)\n",
	       c->o.daemon			   ? "mroced"
	       : c->o.backend == MRV_BACKEND_AFXDP ? "embedded, afxdp"
						   : "embedded, udp");
	printf(" Number of qps   : %d\t\tTransport type : %s\n", c->o.qps,
	       perf_tname(c->o.transport));
	printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
	if (c->o.bw)
		printf(" TX depth        : %d\n", c->o.tx_depth);
	printf(" Mtu             : %d[B]\n", mrv_device_mtu(c->dev));
	printf(" Link rate       : %g[Gb/s] (pacing and fair share)\n",
	       mrv_device_link_mbps(c->dev) / 1000.0);
	printf(" Link type       : Ethernet\n");
	printf(" Local address   : %s\n", c->local);
	printf(" Data ex. method : TCP rendezvous (port %u)\n", c->o.port);
	printf(DASHES);
	for (int q = 0; q < c->o.qps; q++) {
		mrv_query_qp(c->q[q].qp, &a);
		printf(" local address: QPN 0x%06x PSN 0x%06x RKey 0x%08x "
		       "VAddr 0x%016" PRIxPTR "\n",
		       mrv_qp_num(c->q[q].qp), a.sq_psn, c->q[q].mr->rkey,
		       (uintptr_t)c->q[q].mr->addr);
		printf(" remote address: QPN 0x%06x PSN 0x%06x RKey 0x%08x "
		       "VAddr 0x%016" PRIx64 "\n",
		       c->q[q].ri.qp_num, c->q[q].ri.psn, c->q[q].ri.buf_rkey,
		       c->q[q].ri.buf_addr);
	}
	printf(DASHES);
	fflush(stdout);
}

void out_table_head(const struct ctx *c)
{
	if (c->o.json)
		return;
	if (c->o.bw)
		printf(" #bytes     #iterations    BW peak[%s]    "
		       "BW average[%s]   MsgRate[Mpps]\n",
		       c->o.gbits ? "Gb/sec" : "MB/sec",
		       c->o.gbits ? "Gb/sec" : "MB/sec");
	else
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  "
		       "t_typical[usec]    t_avg[usec]    t_stdev[usec]   "
		       "99%% percentile[usec]   99.9%% percentile[usec] \n");
}

static double bw_unit(const struct ctx *c, double bps)
{
	return c->o.gbits ? bps * 8 / 1e9 : bps / (1024.0 * 1024.0);
}

/* perftest's --out_json file: {"test_info": {...}, "results": {...}},
 * written after every row like perftest does (so -a leaves the last
 * size's). Takes over row. */
static void perftest_file(const struct ctx *c, struct json_object *row)
{
	static const char *verb[] = {"RDMA_Write", "RDMA_Read", "Send"};
	struct json_object *f = json_object_new_object();
	struct json_object *ti = json_object_new_object();
	char test[64];

	snprintf(test, sizeof(test), "%s_%s_Test", verb[c->o.kind],
		 c->o.bw ? "BW" : "Latency");
	mroce_json_add_str(ti, "test", test);
	mroce_json_add_str(ti, "Dual_port", "OFF");
	mroce_json_add_str(ti, "Device", "mroce");
	mroce_json_add_i64(ti, "Number_of_qps", c->o.qps);
	/* What a RoCE device reports to perftest. */
	mroce_json_add_str(ti, "Transport_type", "IB");
	mroce_json_add_str(ti, "Connection_type", "RC");
	mroce_json_add_str(ti, "Using_SRQ", "OFF");
	if (c->o.bw)
		mroce_json_add_i64(ti, "TX_depth", c->o.tx_depth);
	mroce_json_add_i64(ti, "Mtu", mrv_device_mtu(c->dev));
	mroce_json_add_i64(ti, "Link_rate_mbps", mrv_device_link_mbps(c->dev));
	mroce_json_add_str(ti, "Link_type", "Ethernet");
	mroce_json_add_str(ti, "Data_ex_method", "Ethernet");
	json_object_object_add(f, "test_info", ti);
	json_object_object_add(f, "results", row);
	if (json_object_to_file_ext(c->o.out_json, f,
				    JSON_C_TO_STRING_PRETTY |
					    JSON_C_TO_STRING_NOSLASHESCAPE))
		fprintf(stderr, "%s: cannot write %s: %s\n", prog,
			c->o.out_json, json_util_get_last_err());
	json_object_put(f);
}

/* --interval in the JSON row: [{start_s, end_s, transferred_bytes,
 * bw_gbps}, ...]. */
static struct json_object *ivl_json(const struct ivl *v, uint64_t n)
{
	struct json_object *a = json_object_new_array();

	for (uint64_t i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();
		double d = v[i].end - v[i].start;

		mroce_json_add_fixed(o, "start_s", v[i].start, 3);
		mroce_json_add_fixed(o, "end_s", v[i].end, 3);
		mroce_json_add_u64(o, "transferred_bytes", v[i].bytes);
		mroce_json_add_fixed(o, "bw_gbps",
				     d > 0 ? (double)v[i].bytes * 8 / d / 1e9
					   : 0,
				     3);
		json_object_array_add(a, o);
	}
	return a;
}

/* One --interval line as it closes, iperf3's columns: the interval in
 * seconds since the start, bytes completed (MBytes/GBytes: 2^20/2^30)
 * and the rate (Gbits/sec: 10^9). A header before the first. */
void out_interval(const struct ctx *c, const struct ivl *v)
{
	double d = v->end - v->start, b = (double)v->bytes;

	if (c->o.json)
		return;
	if (v->start < 1e-9)
		printf(" Interval           Transfer       Bitrate\n");
	printf(" %6.2f-%-6.2f sec  %7.2f %s  %7.2f Gbits/sec\n", v->start,
	       v->end, b >= (1 << 30) ? b / (1 << 30) : b / (1 << 20),
	       b >= (1 << 30) ? "GBytes" : "MBytes",
	       d > 0 ? b * 8 / d / 1e9 : 0.0);
	fflush(stdout);
}

struct lat_stats;
static void lat_stats(double *v, uint64_t n, struct lat_stats *s);
static struct json_object *probe_json(struct probe_res *p);
static void probe_line(struct probe_res *p);

void out_bw_row(const struct ctx *c, uint64_t size, struct bw_res *r)
{
	double avg =
		r->secs > 0 ? (double)r->iters * (double)size / r->secs : 0;
	double mpps = r->secs > 0 ? (double)r->iters / r->secs / 1e6 : 0;

	if (c->o.out_json) {
		struct json_object *p = json_object_new_object();
		/* perftest's extra decimals for tiny Gb/sec figures */
		int dec = c->o.gbits && bw_unit(c, avg) < 0.1 ? 6 : 2;

		mroce_json_add_u64(p, "MsgSize", size);
		mroce_json_add_u64(p, "n_iterations", r->iters);
		mroce_json_add_fixed(p, "BW_peak", bw_unit(c, r->peak_bps), dec);
		mroce_json_add_fixed(p, "BW_average", bw_unit(c, avg), dec);
		mroce_json_add_fixed(p, "MsgRate", mpps, 6);
		perftest_file(c, p);
	}
	if (c->o.json) {
		struct json_object *o = json_object_new_object();

		mroce_json_add_u64(o, "size_bytes", size);
		mroce_json_add_u64(o, "iterations", r->iters);
		mroce_json_add_u64(o, "transferred_bytes", r->iters * size);
		mroce_json_add_fixed(o, "duration_s", r->secs, 6);
		mroce_json_add_fixed(o, "start_unix_s", r->start_unix, 6);
		mroce_json_add_fixed(o, "bw_peak_gbps", r->peak_bps * 8 / 1e9, 6);
		mroce_json_add_fixed(o, "bw_average_gbps", avg * 8 / 1e9, 6);
		mroce_json_add_fixed(o, "msg_rate_mpps", mpps, 6);
		if (c->o.interval)
			json_object_object_add(o, "intervals",
					       ivl_json(r->ivl, r->n_ivl));
		if (c->o.probe)
			json_object_object_add(o, "probe",
					       probe_json(&r->probe));
		json_object_array_add(results, o);
		return;
	}
	printf(" %-10" PRIu64 " %-10" PRIu64
	       "     %-15.2f    %-15.2f      %.6f\n",
	       size, r->iters, bw_unit(c, r->peak_bps), bw_unit(c, avg), mpps);
	if (c->o.probe)
		probe_line(&r->probe);
	fflush(stdout);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The latency statistics of one row, from sorted samples. */
struct lat_stats {
	double min, max, median, avg, stdev, p99, p999;
};

static void lat_stats(double *v, uint64_t n, struct lat_stats *s)
{
	double sum = 0, sq = 0;

	qsort(v, n, sizeof(*v), cmp_d);
	for (uint64_t i = 0; i < n; i++)
		sum += v[i];
	s->avg = sum / (double)n;
	for (uint64_t i = 0; i < n; i++)
		sq += (v[i] - s->avg) * (v[i] - s->avg);
	s->stdev = sqrt(sq / (double)n);
	s->min = v[0];
	s->max = v[n - 1];
	s->median = v[(uint64_t)((double)(n - 1) * 0.5)];
	s->p99 = v[(uint64_t)((double)(n - 1) * 0.99)];
	s->p999 = v[(uint64_t)((double)(n - 1) * 0.999)];
}

/* write_bw --probe: p50 / p99 of the idle and the loaded round trips. */
static void probe_pcts(double *v, uint64_t n, double *p50, double *p99)
{
	struct lat_stats s = {0};

	if (n)
		lat_stats(v, n, &s);
	*p50 = s.median;
	*p99 = s.p99;
}

static struct json_object *probe_json(struct probe_res *p)
{
	struct json_object *o = json_object_new_object();
	double a, b;

	mroce_json_add_u64(o, "idle_n", p->n_idle);
	probe_pcts(p->idle, p->n_idle, &a, &b);
	mroce_json_add_fixed(o, "idle_p50_us", a, 2);
	mroce_json_add_fixed(o, "idle_p99_us", b, 2);
	mroce_json_add_u64(o, "loaded_n", p->n_loaded);
	probe_pcts(p->loaded, p->n_loaded, &a, &b);
	mroce_json_add_fixed(o, "loaded_p50_us", a, 2);
	mroce_json_add_fixed(o, "loaded_p99_us", b, 2);
	return o;
}

static void probe_line(struct probe_res *p)
{
	double i50, i99, l50, l99;

	probe_pcts(p->idle, p->n_idle, &i50, &i99);
	probe_pcts(p->loaded, p->n_loaded, &l50, &l99);
	printf(" probe: 8-byte WRITE round trip [usec]: idle p50 %.2f p99 "
	       "%.2f (%" PRIu64 "), loaded p50 %.2f p99 %.2f (%" PRIu64 ")\n",
	       i50, i99, p->n_idle, l50, l99, p->n_loaded);
}

/* A latency row's keys: perftest's (--out_json) and ours (--json), in
 * the order of struct lat_stats. */
static const char *const lat_keys[2][7] = {
	{"t_min", "t_max", "t_typical", "t_avg", "t_stdev", "percentile_99",
	 "percentile_99.9"},
	{"lat_min_us", "lat_max_us", "lat_p50_us", "lat_avg_us", "lat_stdev_us",
	 "lat_p99_us", "lat_p999_us"},
};

static struct json_object *lat_obj(int ours, uint64_t size, uint64_t n,
				   const struct lat_stats *s)
{
	const double v[7] = {s->min,   s->max, s->median, s->avg,
			     s->stdev, s->p99, s->p999};
	struct json_object *o = json_object_new_object();

	mroce_json_add_u64(o, ours ? "size_bytes" : "MsgSize", size);
	mroce_json_add_u64(o, ours ? "iterations" : "n_iterations", n);
	for (int i = 0; i < 7; i++)
		mroce_json_add_fixed(o, lat_keys[ours][i], v[i], 2);
	return o;
}

static void lat_json(const struct ctx *c, uint64_t size, uint64_t n,
		     const struct lat_stats *s)
{
	if (c->o.out_json)
		perftest_file(c, lat_obj(0, size, n, s));
	if (c->o.json)
		json_object_array_add(results, lat_obj(1, size, n, s));
}

void out_lat_row(const struct ctx *c, uint64_t size, double *v, uint64_t n)
{
	struct lat_stats s;

	if (!n) {
		fprintf(stderr, "%s: no latency samples\n", prog);
		return;
	}
	lat_stats(v, n, &s);
	lat_json(c, size, n, &s);
	if (c->o.json)
		return;
	printf(" %-7" PRIu64 " %-10" PRIu64 "     %-10.2f     %-10.2f     "
	       "%-10.2f         %-10.2f     %-10.2f        %-10.2f             "
	       " "
	       "%-10.2f\n",
	       size, n, s.min, s.max, s.median, s.avg, s.stdev, s.p99, s.p999);
	fflush(stdout);
}

static void spray_json(struct ctx *c, const struct spray *peer,
		       const struct mrv_dev_stats *st,
		       const struct mrv_path_info *pi, int np)
{
	struct json_object *s = json_object_new_object();
	struct json_object *pp = json_object_new_array();

	mroce_json_add_str(s, "transport", tkey(c->o.transport));
	mroce_json_add_i64(s, "paths", np);
	mroce_json_add_u64(s, "tx_data_pkts", st->tx_data_pkts);
	mroce_json_add_u64(s, "retransmits", st->retransmits);
	mroce_json_add_u64(s, "rto_fires", st->rto_fires);
	mroce_json_add_u64(s, "peer_rx_data_pkts", peer->rx_data);
	mroce_json_add_u64(s, "peer_rx_ooo_pkts", peer->rx_ooo);
	mroce_json_add_u64(s, "peer_rx_dup_pkts", peer->rx_dup);
	for (int i = 0; i < np; i++) {
		struct json_object *p = json_object_new_object();

		mroce_json_add_u64(p, "sport", pi[i].sport);
		mroce_json_add_bool(p, "alive", pi[i].alive);
		mroce_json_add_u64(p, "tx_pkts", pi[i].tx_pkts);
		mroce_json_add_u64(p, "retransmits", pi[i].retransmits);
		mroce_json_add_u64(p, "srtt_us", pi[i].srtt_us);
		mroce_json_add_u64(p, "cwnd_pkts", pi[i].cwnd_pkts);
		mroce_json_add_u64(p, "ce_echoed_pkts", pi[i].ce_marks);
		json_object_array_add(pp, p);
	}
	json_object_object_add(s, "per_path", pp);
	json_object_object_add(doc, "spray", s);
}

static void spray_text(struct ctx *c, const struct spray *peer,
		       const struct mrv_dev_stats *st,
		       const struct mrv_path_info *pi, int np)
{
	uint64_t tot = 0, ce = 0;

	for (int i = 0; i < np; i++) {
		tot += pi[i].tx_pkts;
		ce += pi[i].ce_marks;
	}
	printf(DASHES);
	printf(" Spraying        : %s, %d path%s (QP 0x%06x)\n",
	       perf_tname(c->o.transport), np, np == 1 ? "" : "s",
	       mrv_qp_num(c->q[0].qp));
	printf(" Data packets    : %" PRIu64 " sent, %" PRIu64
	       " retransmitted, %" PRIu64 " timeouts, %" PRIu64
	       " CE-marked (echoed)\n",
	       st->tx_data_pkts, st->retransmits, st->rto_fires, ce);
	printf(" Receiver        : %" PRIu64 " data packets, out-of-order "
	       "%.2f%%, duplicates %" PRIu64 "\n",
	       peer->rx_data,
	       peer->rx_data
		       ? 100.0 * (double)peer->rx_ooo / (double)peer->rx_data
		       : 0.0,
	       peer->rx_dup);
	if (np) {
		printf(" path  sport  alive  tx_pkts      share[%%]  "
		       "retransmits  srtt[usec]  cwnd[pkts]\n");
		for (int i = 0; i < np; i++)
			printf(" %-5d %-6u %-6s %-12" PRIu64
			       " %-9.1f %-12" PRIu64 " %-11u %u\n",
			       i, pi[i].sport, pi[i].alive ? "yes" : "no",
			       pi[i].tx_pkts,
			       tot ? 100.0 * (double)pi[i].tx_pkts / (double)tot
				   : 0.0,
			       pi[i].retransmits, pi[i].srtt_us,
			       pi[i].cwnd_pkts);
	}
	printf(DASHES);
}

void out_spray(struct ctx *c, const struct spray *peer)
{
	struct mrv_dev_stats st;
	struct mrv_path_info pi[64];
	int np = 0;

	run_stats(c, &st);
	while (np < 64 && mrv_query_path(c->q[0].qp, np, &pi[np]) == 0)
		np++;
	if (doc)
		spray_json(c, peer, &st, pi, np);
	else if (!c->o.json)
		spray_text(c, peer, &st, pi, np);
}
