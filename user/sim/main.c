// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_sim: run one simulated transfer over a lossy multipath fabric and
 * report goodput, completion times and what the network did to it.
 * Exit status: 0 ok, 1 integrity/liveness/error-completion violation,
 * 2 bad arguments, 3 setup failure (engine refused the configuration).
 */
#include "bench.h"

#include "../common/json.h"
#include "../common/util.h"

#include "mroce/engine.h"
#include "mroce/sim.h"
#include "mroce/wire.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
"NAME\n"
"    mroce_sim - deterministic network simulation of mroce transports\n"
"\n"
"SYNOPSIS\n"
"    mroce_sim [OPTIONS]\n"
"    mroce_sim --bench-engine [--transport T] [--msg-size S] [--bytes B]\n"
"    mroce_sim --bench-crc [--json]\n"
"\n"
"DESCRIPTION\n"
"    Simulates K sender hosts writing to one receiver host over a fabric\n"
"    with N paths (planes) between every pair of leaf switches, in\n"
"    virtual time, with real mroce engines at every host. Every byte is\n"
"    checked against what was sent. The same options and --seed give the\n"
"    same run, bit for bit (see the digest in the output).\n"
"\n"
"OPTIONS\n"
"    --transport metaroce|rocev2   transport of every engine (metaroce)\n"
"    --paths N          planes between two leaves (4)\n"
"    --rate-gbps R      rate of every plane, Gbit/s (100)\n"
"    --rates R1,R2,..   per-plane rates (asymmetry); sets --paths\n"
"    --delay-us D       one-way propagation per plane, us (2)\n"
"    --queue-kb K       plane queue limit, KiB, tail drop (1024)\n"
"    --ecn-kb K         CE-mark ECN-capable packets above this plane\n"
"                       backlog, KiB; 0 disables (100)\n"
"    --loss P           random loss fraction on every plane (0)\n"
"    --dup P            duplication fraction on every plane (0)\n"
"    --corrupt P        fraction of packets with one byte flipped (0)\n"
"    --blackhole I@MS   plane I drops everything from MS ms of virtual\n"
"                       time on (repeatable)\n"
"    --ce-plane I@P     plane I CE-marks a fraction P of ECN-capable\n"
"                       packets whatever its queue: traffic the run does\n"
"                       not model keeps it congested (repeatable)\n"
"    --flap-us U        the --blackhole planes flap instead: from MS on\n"
"                       down U us, up U us, down again...\n"
"    --host-gbps R      host access link rate (sum of the plane rates)\n"
"    --host-delay-us D  host access link propagation (0.5)\n"
"    --host-queue-kb K  receiver downlink queue limit, KiB (4096)\n"
"    --host-ecn-kb K    receiver downlink ECN threshold, KiB (200)\n"
"    --bytes B          bytes per connection (1M)\n"
"    --msg-size S       bytes per work request (64K)\n"
"    --conns C          QPs per sender (1)\n"
"    --senders K        sender hosts, all to host 0: K:1 incast (1)\n"
"    --shared-leaf      put all senders behind one leaf (default: one\n"
"                       leaf each, so only the receiver downlink is shared)\n"
"    --outstanding N    work requests in flight per QP (16)\n"
"    --op write|send|read  RDMA WRITE, SEND into posted receives, or RDMA\n"
"                       READ of the receiver's memory (write)\n"
"    --mtu M            engine MTU, payload bytes (engine default)\n"
"    --engine-paths N   MetaRoCE paths per connection (engine default)\n"
"    --rto-min-us U     engine minimum RTO (engine default)\n"
"    --psn P            first PSN (random): RoCEv2 every QP's (the low 24\n"
"                       bits), MetaRoCE every connection's path slot 0's\n"
"                       (32 bits): crosses the wrap on purpose\n"
"    --gen G            MetaRoCE: every path slot's first generation, 0-255\n"
"                       (0): crosses the generation wrap on purpose\n"
"    --seed S           random seed (1)\n"
"    --time-limit-ms T  fail if not finished by T ms virtual (10000)\n"
"    --stall-ms T       fail if no completion for T ms virtual (500)\n"
"    --bin-us U         goodput time-series bin (about one RTT)\n"
"    --drain-us U       after the last completion keep running U us,\n"
"                       then re-check every receive buffer and fail on\n"
"                       any late write or extra completion (1000)\n"
"    --probe-us U       loaded latency: a probe QP from host 1 to host 0\n"
"                       keeps one 8-byte WRITE in flight; it runs alone\n"
"                       for U us (the idle samples), then beside the bulk\n"
"                       QPs until they finish (the loaded samples). The\n"
"                       goodput counts from U on. Latency: post to\n"
"                       completion (one round trip)\n"
"    --json             print one JSON document instead of text; a run\n"
"                       that fails prints one too, with an \"error\"\n"
"                       object\n"
"    --series           also print goodput per --bin-us bin (Gbit/s),\n"
"                       e.g. to see a blackhole dip and its recovery\n"
"    --trace-us U       every U us of virtual time print the paths of\n"
"                       host 1's connection to host 0 on stderr: per\n"
"                       path plane/gen, window, in flight, srtt us, and\n"
"                       data packets / retransmits sent since the last\n"
"                       line; then packets per plane (telemetry)\n"
"    --bench-engine     engine CPU cost per data packet and per ACK,\n"
"                       two engines back to back, wall-clock timed\n"
"    --bench-crc        ICRC (CRC-32) cost per 8 KiB payload for each\n"
"                       implementation this CPU runs: the CRC alone,\n"
"                       copy+CRC in one pass, memcpy then CRC (ns, best\n"
"                       of 7 rounds)\n"
"    -V, --version      print the version and exit\n"
"    -h, --help         this text\n"
"\n"
"    Sizes take K, M, G suffixes (powers of 1024). Fractions are 0..1.\n"
"\n"
"OUTPUT\n"
"    The --json keys (docs/json.md lists them all):\n"
"    goodput_gbps       completed bytes x 8 / time from the first post to\n"
"                       the last completion\n"
"    fct_p50_us, fct_p99_us\n"
"                       per work request, from post to completion\n"
"    probe_idle_p50_us, probe_idle_p99_us, probe_loaded_p50_us,\n"
"    probe_loaded_p99_us (with --probe-us; _n: samples)\n"
"                       the probe's 8-byte WRITE, post to completion,\n"
"                       alone and under the bulk load\n"
"    jain_fairness_ratio\n"
"                       Jain's index over per-QP throughput (bytes / own\n"
"                       completion time); jain_first_finish_ratio: over\n"
"                       per-QP bytes when the first QP finished\n"
"    path_share_ratio   data bytes per plane towards the receiver\n"
"    recovery_us        from the first blackhole to the start of the\n"
"                       first window of max(10 RTTs, 8 messages) whose\n"
"                       goodput, and the average from there to the end,\n"
"                       reach 90% of the pre-failure goodput scaled to\n"
"                       the surviving capacity; -1 when none does\n"
"    fail_stall_us      longest time without a completion across the\n"
"                       failure\n"
"    digest             hash of every event: equal digests, equal runs\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 integrity, error-completion or liveness violation;\n"
"    2 bad arguments; 3 setup failure.\n"
"\n"
"EXAMPLES\n"
"    mroce_sim --paths 4 --loss 0.01 --bytes 64M --json\n"
"    mroce_sim --transport rocev2 --blackhole 1@1 --bytes 16M\n"
"    mroce_sim --senders 8 --bytes 4M --msg-size 1M\n";

static const char *prog = "mroce_sim";

__attribute__((noreturn, format(printf, 1, 2))) static void
bad_arg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	exit(2);
}

/* A number in [lo, hi] for option opt, or exit 2 naming it. */
static double parse_num(const char *opt, const char *s, double lo,
			double hi)
{
	double v;
	int err = mroce_parse_double(s, lo, hi, &v);

	if (err == -ERANGE)
		bad_arg("%s: %s is out of range [%g, %g]", opt, s, lo, hi);
	if (err)
		bad_arg("%s: '%s' is not a number", opt, s);
	return v;
}

/* A size (K, M, G suffixes) in [lo, hi] for option opt, or exit 2. */
static uint64_t parse_size(const char *opt, const char *s, uint64_t lo,
			   uint64_t hi)
{
	uint64_t v;
	int err = mroce_parse_size(s, lo, hi, &v);

	if (err == -ERANGE)
		bad_arg("%s: '%s' is out of range [%llu, %llu]", opt, s,
			(unsigned long long)lo, (unsigned long long)hi);
	if (err)
		bad_arg("%s: '%s' is not a size (a number, then K, M or G)",
			opt, s);
	return v;
}

static const char *tname(uint8_t t)
{
	return t == MROCE_TRANSPORT_ROCEV2 ? "rocev2" : "metaroce";
}

/* A number with a fixed count of decimals (json-c's default of 17
 * significant digits shows binary noise). */
enum {
	O_TRANSPORT = 256, O_PATHS, O_RATE, O_RATES, O_DELAY, O_QUEUE, O_ECN,
	O_LOSS, O_DUP, O_CORRUPT, O_BLACKHOLE, O_HOST_GBPS, O_HOST_DELAY,
	O_HOST_QUEUE, O_HOST_ECN, O_BYTES, O_MSG, O_CONNS, O_SENDERS,
	O_SHARED, O_OUT, O_OP, O_MTU, O_EPATHS, O_RTO, O_PSN, O_GEN, O_SEED,
	O_TLIMIT, O_STALL, O_BIN, O_JSON, O_BENCH, O_DRAIN, O_SERIES,
	O_TRACE, O_BENCH_CRC, O_FLAP, O_PROBE, O_CE_PLANE,
};

static const struct option opts[] = {
	{ "transport", required_argument, NULL, O_TRANSPORT },
	{ "paths", required_argument, NULL, O_PATHS },
	{ "rate-gbps", required_argument, NULL, O_RATE },
	{ "rates", required_argument, NULL, O_RATES },
	{ "delay-us", required_argument, NULL, O_DELAY },
	{ "queue-kb", required_argument, NULL, O_QUEUE },
	{ "ecn-kb", required_argument, NULL, O_ECN },
	{ "loss", required_argument, NULL, O_LOSS },
	{ "dup", required_argument, NULL, O_DUP },
	{ "corrupt", required_argument, NULL, O_CORRUPT },
	{ "blackhole", required_argument, NULL, O_BLACKHOLE },
	{ "flap-us", required_argument, NULL, O_FLAP },
	{ "ce-plane", required_argument, NULL, O_CE_PLANE },
	{ "host-gbps", required_argument, NULL, O_HOST_GBPS },
	{ "host-delay-us", required_argument, NULL, O_HOST_DELAY },
	{ "host-queue-kb", required_argument, NULL, O_HOST_QUEUE },
	{ "host-ecn-kb", required_argument, NULL, O_HOST_ECN },
	{ "bytes", required_argument, NULL, O_BYTES },
	{ "msg-size", required_argument, NULL, O_MSG },
	{ "conns", required_argument, NULL, O_CONNS },
	{ "senders", required_argument, NULL, O_SENDERS },
	{ "shared-leaf", no_argument, NULL, O_SHARED },
	{ "outstanding", required_argument, NULL, O_OUT },
	{ "op", required_argument, NULL, O_OP },
	{ "mtu", required_argument, NULL, O_MTU },
	{ "engine-paths", required_argument, NULL, O_EPATHS },
	{ "rto-min-us", required_argument, NULL, O_RTO },
	{ "psn", required_argument, NULL, O_PSN },
	{ "gen", required_argument, NULL, O_GEN },
	{ "seed", required_argument, NULL, O_SEED },
	{ "time-limit-ms", required_argument, NULL, O_TLIMIT },
	{ "stall-ms", required_argument, NULL, O_STALL },
	{ "bin-us", required_argument, NULL, O_BIN },
	{ "drain-us", required_argument, NULL, O_DRAIN },
	{ "probe-us", required_argument, NULL, O_PROBE },
	{ "series", no_argument, NULL, O_SERIES },
	{ "trace-us", required_argument, NULL, O_TRACE },
	{ "json", no_argument, NULL, O_JSON },
	{ "bench-engine", no_argument, NULL, O_BENCH },
	{ "bench-crc", no_argument, NULL, O_BENCH_CRC },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	struct mroce_sim_cfg cfg;
	bool json, bench, bench_crc, series, rates_set, paths_set, host_set;
	double rates[MROCE_SIM_MAX_PATHS];
	uint32_t nrates;
	double rate_gbps, delay_us, loss, dup, corrupt, flap_us;
	uint32_t queue_kb, ecn_kb;
	struct {
		uint32_t path;
		double ms;
	} bh[MROCE_SIM_MAX_PATHS];
	uint32_t nbh;
	double ce_mark[MROCE_SIM_MAX_PATHS];	/* --ce-plane */
};

static void parse_rates(struct args *a, const char *s)
{
	char buf[1024], *tok, *save = NULL;

	snprintf(buf, sizeof(buf), "%s", s);
	a->nrates = 0;
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (a->nrates == MROCE_SIM_MAX_PATHS)
			bad_arg("--rates: at most %d paths",
				MROCE_SIM_MAX_PATHS);
		a->rates[a->nrates++] = parse_num("--rates", tok, 0.001, 1e5);
	}
	if (!a->nrates)
		bad_arg("--rates: empty list");
	a->rates_set = true;
}

/* --ce-plane I@P: plane I CE-marks a fraction P of ECN-capable packets. */
static void parse_ce_plane(struct args *a, const char *s)
{
	char *at = strchr(s, '@');
	char plane[32];
	uint32_t i;

	if (!at || at == s || (size_t)(at - s) >= sizeof(plane))
		bad_arg("--ce-plane: '%s' is not PLANE@FRACTION", s);
	memcpy(plane, s, at - s);
	plane[at - s] = '\0';
	i = (uint32_t)parse_num("--ce-plane", plane, 0, MROCE_SIM_MAX_PATHS - 1);
	a->ce_mark[i] = parse_num("--ce-plane", at + 1, 0, 1);
}

static void parse_blackhole(struct args *a, const char *s)
{
	char *at = strchr(s, '@');
	char path[32];

	if (!at || at == s || (size_t)(at - s) >= sizeof(path))
		bad_arg("--blackhole: '%s' is not PATH@MS", s);
	memcpy(path, s, at - s);
	path[at - s] = '\0';
	if (a->nbh == MROCE_SIM_MAX_PATHS)
		bad_arg("--blackhole: too many");
	a->bh[a->nbh].path = (uint32_t)parse_num("--blackhole", path, 0,
						 MROCE_SIM_MAX_PATHS - 1);
	a->bh[a->nbh].ms = parse_num("--blackhole", at + 1, 0, 1e9);
	a->nbh++;
}

/* The fabric's options (planes, host links). False: not one of them. */
static bool parse_net(int o, const char *arg, struct args *a)
{
	struct mroce_sim_cfg *c = &a->cfg;

	switch (o) {
	case O_PATHS:
		c->net.npaths = (uint32_t)parse_num("--paths", arg, 1,
						    MROCE_SIM_MAX_PATHS);
		a->paths_set = true;
		return true;
	case O_RATE:
		a->rate_gbps = parse_num("--rate-gbps", arg, 0.001, 1e5);
		return true;
	case O_RATES:
		parse_rates(a, arg);
		return true;
	case O_DELAY:
		a->delay_us = parse_num("--delay-us", arg, 0, 1e7);
		return true;
	case O_QUEUE:
		a->queue_kb = (uint32_t)parse_num("--queue-kb", arg, 0,
						  4194303);
		return true;
	case O_ECN:
		a->ecn_kb = (uint32_t)parse_num("--ecn-kb", arg, 0, 4194303);
		return true;
	case O_LOSS:
		a->loss = parse_num("--loss", arg, 0, 1);
		return true;
	case O_DUP:
		a->dup = parse_num("--dup", arg, 0, 1);
		return true;
	case O_CORRUPT:
		a->corrupt = parse_num("--corrupt", arg, 0, 1);
		return true;
	case O_BLACKHOLE:
		parse_blackhole(a, arg);
		return true;
	case O_CE_PLANE:
		parse_ce_plane(a, arg);
		return true;
	case O_FLAP:
		a->flap_us = parse_num("--flap-us", arg, 0.001, 1e9);
		return true;
	case O_HOST_GBPS:
		c->net.host.rate_bps = (uint64_t)(parse_num(
			"--host-gbps", arg, 0.001, 1e5) * 1e9);
		a->host_set = true;
		return true;
	case O_HOST_DELAY:
		c->net.host.delay_ns = (uint64_t)(parse_num(
			"--host-delay-us", arg, 0, 1e7) * 1000);
		return true;
	case O_HOST_QUEUE:
		c->net.host.queue_bytes = 1024 * (uint32_t)parse_num(
			"--host-queue-kb", arg, 0, 4194303);
		return true;
	case O_HOST_ECN:
		c->net.host.ecn_bytes = 1024 * (uint32_t)parse_num(
			"--host-ecn-kb", arg, 0, 4194303);
		return true;
	}
	return false;
}

/* The workload's options (what is sent, by whom, how). */
static bool parse_load(int o, const char *arg, struct args *a)
{
	struct mroce_sim_cfg *c = &a->cfg;

	switch (o) {
	case O_TRANSPORT:
		if (!strcmp(arg, "metaroce"))
			c->transport = MROCE_TRANSPORT_METAROCE;
		else if (!strcmp(arg, "rocev2"))
			c->transport = MROCE_TRANSPORT_ROCEV2;
		else
			bad_arg("--transport: '%s' is neither metaroce nor "
				"rocev2", arg);
		return true;
	case O_BYTES:
		c->bytes = parse_size("--bytes", arg, 0, UINT64_MAX);
		return true;
	case O_MSG:
		c->msg_size = (uint32_t)parse_size("--msg-size", arg, 1,
						   1u << 30);
		return true;
	case O_CONNS:
		c->conns = (uint32_t)parse_num("--conns", arg, 1, 100000);
		return true;
	case O_SENDERS:
		c->senders = (uint32_t)parse_num("--senders", arg, 1, 100000);
		return true;
	case O_OUT:
		c->outstanding = (uint32_t)parse_num("--outstanding", arg, 1,
						     4096);
		return true;
	case O_OP:
		if (!strcmp(arg, "write"))
			c->op = MROCE_SIM_OP_WRITE;
		else if (!strcmp(arg, "send"))
			c->op = MROCE_SIM_OP_SEND;
		else if (!strcmp(arg, "read"))
			c->op = MROCE_SIM_OP_READ;
		else
			bad_arg("--op: '%s' is not write, send or read", arg);
		return true;
	case O_SEED:
		c->seed = parse_size("--seed", arg, 0, UINT64_MAX);
		return true;
	}
	return false;
}

/* The engines' knobs and the run's clocks. */
static bool parse_engine(int o, const char *arg, struct args *a)
{
	struct mroce_sim_cfg *c = &a->cfg;

	switch (o) {
	case O_MTU:
		c->mtu = (uint16_t)parse_num("--mtu", arg, 256, 8192);
		return true;
	case O_EPATHS:
		c->engine_paths = (uint8_t)parse_num("--engine-paths", arg, 1,
						     64);
		return true;
	case O_RTO:
		c->rto_min_us = (uint32_t)parse_num("--rto-min-us", arg, 1,
						    1e7);
		return true;
	case O_PSN:
		c->start_psn = (int64_t)parse_num("--psn", arg, 0, 0xffffffff);
		return true;
	case O_GEN:
		c->first_gen = (uint8_t)parse_num("--gen", arg, 0, 255);
		return true;
	case O_TLIMIT:
		c->time_limit_ns = (uint64_t)(parse_num(
			"--time-limit-ms", arg, 0.001, 1e8) * 1e6);
		return true;
	case O_STALL:
		c->stall_ns = (uint64_t)(parse_num("--stall-ms", arg, 0.001,
						   1e8) * 1e6);
		return true;
	case O_BIN:
		c->bin_ns = (uint64_t)(parse_num("--bin-us", arg, 0.01, 1e7) *
				       1000);
		return true;
	case O_DRAIN:
		c->drain_ns = (uint64_t)(parse_num("--drain-us", arg, 0, 1e9) *
					 1000);
		return true;
	case O_TRACE:
		c->trace_ns = (uint64_t)(parse_num("--trace-us", arg, 0.01,
						   1e7) * 1000);
		return true;
	case O_PROBE:
		c->probe_ns = (uint64_t)(parse_num("--probe-us", arg, 0.001,
						   1e7) * 1000);
		return true;
	}
	return false;
}

/* Options without a value; exits for --help, --version, unknown ones. */
static void parse_flag(int o, struct args *a)
{
	switch (o) {
	case O_SHARED:
		a->cfg.shared_leaf = true;
		break;
	case O_SERIES:
		a->series = true;
		break;
	case O_JSON:
		a->json = true;
		break;
	case O_BENCH:
		a->bench = true;
		break;
	case O_BENCH_CRC:
		a->bench_crc = true;
		break;
	case 'h':
		fputs(usage_text, stdout);
		exit(0);
	case 'V':
		mroce_print_version(stdout, prog);
		exit(0);
	default:
		fprintf(stderr, "Try '%s --help'.\n", prog);
		exit(2);
	}
}

/* Every plane gets the common settings (or its --rates entry), then the
 * blackholes; the host link defaults to the planes' sum. */
static void apply_net(struct args *a)
{
	struct mroce_sim_cfg *c = &a->cfg;

	for (uint32_t i = 0; i < MROCE_SIM_MAX_PATHS; i++) {
		struct mroce_sim_link_cfg *p = &c->net.path[i];
		double r = a->rates_set && i < a->nrates ? a->rates[i]
							  : a->rate_gbps;

		p->rate_bps = (uint64_t)(r * 1e9);
		p->delay_ns = (uint64_t)(a->delay_us * 1000);
		p->queue_bytes = a->queue_kb * 1024;
		p->ecn_bytes = a->ecn_kb * 1024;
		p->loss = a->loss;
		p->dup = a->dup;
		p->corrupt = a->corrupt;
		p->ce_mark = a->ce_mark[i];
		p->blackhole_at = MROCE_SIM_NEVER;
	}
	for (uint32_t i = c->net.npaths; i < MROCE_SIM_MAX_PATHS; i++)
		if (a->ce_mark[i] > 0)
			bad_arg("--ce-plane: plane %u does not exist (--paths "
				"%u; planes count from 0)", i, c->net.npaths);
	for (uint32_t i = 0; i < a->nbh; i++) {
		if (a->bh[i].path >= c->net.npaths)
			bad_arg("--blackhole: path %u does not exist (--paths "
				"%u; paths count from 0)", a->bh[i].path,
				c->net.npaths);
		c->net.path[a->bh[i].path].blackhole_at =
			(uint64_t)(a->bh[i].ms * 1e6);
		c->net.path[a->bh[i].path].flap_ns =
			(uint64_t)(a->flap_us * 1000);
	}
	if (!a->host_set) {
		uint64_t sum = 0;

		for (uint32_t i = 0; i < c->net.npaths; i++)
			sum += c->net.path[i].rate_bps;
		c->net.host.rate_bps = sum;
	}
}

static void parse_args(int argc, char **argv, struct args *a)
{
	struct mroce_sim_cfg *c = &a->cfg;
	int o;

	memset(a, 0, sizeof(*a));
	mroce_sim_cfg_default(c);
	a->rate_gbps = 100;
	a->delay_us = 2;
	a->queue_kb = 1024;
	a->ecn_kb = 100;
	while ((o = getopt_long(argc, argv, "hV", opts, NULL)) != -1)
		if (!parse_net(o, optarg, a) && !parse_load(o, optarg, a) &&
		    !parse_engine(o, optarg, a))
			parse_flag(o, a);
	if (optind < argc)
		bad_arg("unexpected argument '%s'", argv[optind]);
	if (a->rates_set) {
		if (a->paths_set && c->net.npaths != a->nrates)
			bad_arg("--paths %u disagrees with %u --rates",
				c->net.npaths, a->nrates);
		c->net.npaths = a->nrates;
	}
	apply_net(a);
	if (c->mtu)
		c->net.max_frame = c->mtu + 512;
	if ((uint64_t)c->senders * c->conns * c->outstanding * c->msg_size >
	    (8ull << 30))
		bad_arg("senders x conns x outstanding x msg-size exceeds 8 GiB "
			"of buffers");
}

/* A failure to set up or run (exit 3): the message on stderr, and with
 * --json (doc) a whole document that carries it. */
__attribute__((format(printf, 3, 4))) static int
sim_failed(struct json_object *doc, int err, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s\n", prog, msg);
	if (doc) {
		mroce_json_set_error(doc, err, msg);
		mroce_json_emit(stdout, doc, 0);
	}
	return 3;
}

static int run_bench(const struct args *a)
{
	struct sim_bench b;
	uint32_t msg = a->cfg.msg_size;
	uint64_t bytes = a->cfg.bytes;
	int err = sim_bench_engine(a->cfg.transport, msg, bytes, &b);

	if (err)
		return sim_failed(a->json ? mroce_json_doc(prog) : NULL, err,
				  "--bench-engine: %s", b.why);
	if (a->json) {
		struct json_object *d = mroce_json_doc(prog);

		mroce_json_add_str(d, "mode", "bench_engine");
		mroce_json_add_str(d, "transport", tname(a->cfg.transport));
		mroce_json_add_u64(d, "msg_size_bytes", msg);
		mroce_json_add_u64(d, "total_bytes", bytes);
		mroce_json_add_u64(d, "data_pkts", b.data_pkts);
		mroce_json_add_u64(d, "ack_pkts", b.acks);
		mroce_json_add_fixed(d, "rx_data_ns", b.rx_data_ns, 1);
		mroce_json_add_fixed(d, "rx_ack_ns", b.rx_ack_ns, 1);
		mroce_json_add_fixed(d, "tx_data_ns", b.tx_data_ns, 1);
		mroce_json_add_fixed(d, "wall_time_s", b.wall_s, 3);
		mroce_json_emit(stdout, d, 0);
	} else {
		printf("engine bench (%s, %u-byte WRITEs, %llu bytes)\n",
		       tname(a->cfg.transport), msg, (unsigned long long)bytes);
		printf("  data packets     %llu\n",
		       (unsigned long long)b.data_pkts);
		printf("  acks             %llu\n", (unsigned long long)b.acks);
		printf("  receive+place+ACK per data packet  %.1f ns\n",
		       b.rx_data_ns);
		printf("  per ACK processed                  %.1f ns\n",
		       b.rx_ack_ns);
		printf("  transmit per data packet           %.1f ns\n",
		       b.tx_data_ns);
	}
	return 0;
}

static int run_bench_crc(bool json)
{
	struct sim_bench_crc b;

	if (sim_bench_crc(8192, &b))
		return sim_failed(json ? mroce_json_doc(prog) : NULL, -ENOMEM,
				  "--bench-crc: out of memory");
	if (json) {
		struct json_object *d = mroce_json_doc(prog);
		struct json_object *rows = json_object_new_array();

		mroce_json_add_str(d, "mode", "bench_crc");
		mroce_json_add_u64(d, "buffer_bytes", b.len);
		mroce_json_add_str(d, "selected_impl", b.selected);
		mroce_json_add_fixed(d, "memcpy_ns", b.memcpy_ns, 1);
		for (int i = 0; i < b.n; i++) {
			struct json_object *r = json_object_new_object();

			mroce_json_add_str(r, "impl", b.row[i].impl);
			mroce_json_add_fixed(r, "crc_ns", b.row[i].crc_ns, 1);
			mroce_json_add_fixed(r, "crc_copy_ns", b.row[i].copy_ns, 1);
			mroce_json_add_fixed(r, "memcpy_crc_ns", b.row[i].memcpy_crc_ns, 1);
			json_object_array_add(rows, r);
		}
		json_object_object_add(d, "impls", rows);
		mroce_json_emit(stdout, d, 0);
		return 0;
	}
	printf("crc bench (%zu-byte buffers, ns per buffer, best of 7 rounds; "
	       "mroce_crc32 uses %s)\n", b.len, b.selected);
	printf("  %-8s %10s %10s %12s\n", "path", "crc", "copy+crc",
	       "memcpy,crc");
	for (int i = 0; i < b.n; i++)
		printf("  %-8s %10.1f %10.1f %12.1f\n", b.row[i].impl,
		       b.row[i].crc_ns, b.row[i].copy_ns,
		       b.row[i].memcpy_crc_ns);
	printf("  memcpy alone %.1f\n", b.memcpy_ns);
	return 0;
}

/* --trace-us: per-path telemetry of host 1's connection to host 0 (its
 * engine's peer 0), one line per interval on stderr. Deltas are since the
 * previous line; the plane is where the path's source port hashes. */
struct trace_state {
	uint32_t nplanes;
	uint64_t tx[MROCE_SIM_MAX_PATHS * 4], rtx[MROCE_SIM_MAX_PATHS * 4];
	struct mroce_engine_stats st;
};

static void trace_paths(void *arg, struct mroce_sim *s, uint64_t now)
{
	struct trace_state *ts = arg;
	struct mroce_engine *e = mroce_sim_engine(s, 1);
	struct mroce_engine_stats st;
	uint64_t plane_tx[MROCE_SIM_MAX_PATHS] = { 0 };
	struct mroce_path_info pi;

	if (!e)
		return;
	mroce_engine_get_stats(e, &st);
	fprintf(stderr, "%9.1f", now / 1000.0);
	for (int i = 0; i < MROCE_SIM_MAX_PATHS * 4 &&
			mroce_engine_path_info(e, 0, i, &pi) == 0;
	     i++) {
		uint32_t pl = mroce_sim_ecmp_hash(1, 0, pi.sport,
						  MROCE_UDP_PORT) %
			      ts->nplanes;
		uint64_t dtx, drtx;

		dtx = pi.tx_pkts - ts->tx[i];
		drtx = pi.retransmits - ts->rtx[i];
		ts->tx[i] = pi.tx_pkts;
		ts->rtx[i] = pi.retransmits;
		plane_tx[pl] += dtx;
		fprintf(stderr, " | p%d %u/%u%s w%u f%u r%u tx%llu rt%llu", i,
			pl, pi.gen, pi.alive ? "" : "?", pi.cwnd_pkts,
			pi.inflight, pi.srtt_us, (unsigned long long)dtx,
			(unsigned long long)drtx);
	}
	fprintf(stderr, " || planes");
	for (uint32_t i = 0; i < ts->nplanes; i++)
		fprintf(stderr, " %llu", (unsigned long long)plane_tx[i]);
	fprintf(stderr, " || rto %llu rerolls %llu probes %llu\n",
		(unsigned long long)(st.rto_fires - ts->st.rto_fires),
		(unsigned long long)(st.path_rerolls - ts->st.path_rerolls),
		(unsigned long long)(st.probes_sent - ts->st.probes_sent));
	ts->st = st;
}

static void print_series(struct mroce_sim *s, struct json_object *doc)
{
	const uint64_t *bins;
	uint64_t bin_ns;
	uint32_t n = mroce_sim_series(s, &bins, &bin_ns);

	if (doc) {
		struct json_object *arr = json_object_new_array();

		mroce_json_add_fixed(doc, "series_bin_us", bin_ns / 1000.0, 3);
		for (uint32_t i = 0; i < n; i++) {
			double g = (double)bins[i] * 8 / (double)bin_ns;

			json_object_array_add(arr, mroce_json_new_fixed(g, 2));
		}
		json_object_object_add(doc, "series_gbps", arr);
		return;
	}
	printf("  goodput per %.3f us bin (Gbit/s):\n", bin_ns / 1000.0);
	for (uint32_t i = 0; i < n; i++)
		printf("  %10.3f us %9.2f\n", (double)i * bin_ns / 1000.0,
		       (double)bins[i] * 8 / (double)bin_ns);
}

/* Where a uint64_t member of the result is (anything else: no build). */
#define RESULT_U64(key, field)                                              \
	{ key, offsetof(struct mroce_sim_result, field) +                   \
		       0 * sizeof(char[__builtin_types_compatible_p(        \
				       __typeof__(((struct mroce_sim_result \
							    *)0)->field),   \
				       uint64_t) ? 1 : -1]) }

/* The counters of a result, in the order and under the names --json
 * prints them (between fct_max_us and path_share). */
static const struct {
	const char *name;
	size_t off;
} json_counters[] = {
	RESULT_U64("completed_bytes", completed_bytes),
	RESULT_U64("target_bytes", target_bytes),
	RESULT_U64("messages", msgs),
	RESULT_U64("retransmits", retransmits),
	RESULT_U64("rto_fires", rto_fires),
	RESULT_U64("path_rerolls", path_rerolls),
	RESULT_U64("error_completions", error_wcs),
	RESULT_U64("tx_pkts", tx_pkts),
	RESULT_U64("rx_pkts", rx_pkts),
	RESULT_U64("tx_data_pkts", tx_data_pkts),
	RESULT_U64("rx_dup_pkts", rx_dup),
	RESULT_U64("rx_ooo_pkts", rx_ooo),
	RESULT_U64("rx_ce_pkts", ce_marks_rx),
	RESULT_U64("timer_spins", timer_spins),
	RESULT_U64("net_pkts", net_pkts),
	RESULT_U64("drops_tail", drops_tail),
	RESULT_U64("drops_loss", drops_loss),
	RESULT_U64("drops_blackhole", drops_blackhole),
	RESULT_U64("dups", dups),
	RESULT_U64("corrupts", corrupts),
	RESULT_U64("icrc_drops", icrc_drops),
	RESULT_U64("ce_marked_pkts", ce_marked),
};

/* The run's configuration, as the first members of the document. */
static void json_config(struct json_object *d, const struct args *a)
{
	const struct mroce_sim_cfg *c = &a->cfg;

	mroce_json_add_str(d, "transport", tname(c->transport));
	mroce_json_add_u64(d, "paths", c->net.npaths);
	mroce_json_add_u64(d, "senders", c->senders);
	mroce_json_add_u64(d, "conns", c->senders * c->conns);
	mroce_json_add_u64(d, "conn_bytes", c->bytes);
	mroce_json_add_u64(d, "msg_size_bytes", c->msg_size);
	mroce_json_add_u64(d, "seed", c->seed);
}

static void json_result(struct json_object *d,
			const struct mroce_sim_result *r, double wall)
{
	struct json_object *share = json_object_new_array();
	char digest[17];

	mroce_json_add_bool(d, "ok", r->verdict == MROCE_SIM_OK);
	mroce_json_add_str(d, "verdict", mroce_sim_verdict_str(r->verdict));
	mroce_json_add_str(d, "why", r->why);
	mroce_json_add_bool(d, "integrity_ok",
			    r->verdict != MROCE_SIM_INTEGRITY);
	mroce_json_add_fixed(d, "goodput_gbps", r->goodput_gbps, 3);
	mroce_json_add_fixed(d, "capacity_gbps", r->capacity_gbps, 3);
	mroce_json_add_fixed(d, "fct_p50_us", r->fct_p50_us, 2);
	mroce_json_add_fixed(d, "fct_p99_us", r->fct_p99_us, 2);
	mroce_json_add_fixed(d, "fct_max_us", r->fct_max_us, 2);
	for (size_t i = 0; i < sizeof(json_counters) / sizeof(json_counters[0]);
	     i++) {
		const char *p = (const char *)r + json_counters[i].off;

		mroce_json_add_u64(d, json_counters[i].name,
				   *(const uint64_t *)p);
	}
	for (uint32_t i = 0; i < r->npaths; i++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%.4f", r->path_share[i]);
		json_object_array_add(share, json_object_new_double_s(
						     r->path_share[i], buf));
	}
	json_object_object_add(d, "path_share_ratio", share);
	mroce_json_add_fixed(d, "jain_fairness_ratio", r->jain, 4);
	mroce_json_add_fixed(d, "jain_first_finish_ratio", r->jain_first, 4);
	if (r->probe_idle_n || r->probe_loaded_n) {
		mroce_json_add_u64(d, "probe_idle_n", r->probe_idle_n);
		mroce_json_add_fixed(d, "probe_idle_p50_us",
				     r->probe_idle_p50_us, 2);
		mroce_json_add_fixed(d, "probe_idle_p99_us",
				     r->probe_idle_p99_us, 2);
		mroce_json_add_u64(d, "probe_loaded_n", r->probe_loaded_n);
		mroce_json_add_fixed(d, "probe_loaded_p50_us",
				     r->probe_loaded_p50_us, 2);
		mroce_json_add_fixed(d, "probe_loaded_p99_us",
				     r->probe_loaded_p99_us, 2);
	}
	mroce_json_add_u64(d, "mem_per_conn_bytes", r->mem_per_conn);
	mroce_json_add_fixed(d, "base_rtt_us", r->base_rtt_us, 2);
	mroce_json_add_fixed(d, "pre_fail_gbps", r->pre_fail_gbps, 3);
	mroce_json_add_fixed(d, "post_fail_gbps", r->post_fail_gbps, 3);
	mroce_json_add_fixed(d, "fail_stall_us", r->fail_gap_ns / 1000.0, 1);
	mroce_json_add_fixed(d, "recovery_us", r->recovery_us, 1);
	mroce_json_add_fixed(d, "recovery_rtts",
		r->recovery_us >= 0 && r->base_rtt_us > 0
			? r->recovery_us / r->base_rtt_us
			: -1.0,
		1);
	mroce_json_add_fixed(d, "virtual_time_us", (double)r->end_ns / 1000.0, 1);
	mroce_json_add_u64(d, "events", r->events);
	mroce_json_add_u64(d, "pool_pkts", r->pool_pkts);
	snprintf(digest, sizeof(digest), "%016llx",
		 (unsigned long long)r->digest);
	mroce_json_add_str(d, "digest", digest);
	mroce_json_add_fixed(d, "wall_time_s", wall, 3);
}

static void print_text(const struct args *a, const struct mroce_sim_result *r,
		       double wall)
{
	const struct mroce_sim_cfg *c = &a->cfg;

	printf("mroce_sim: %s, %u path(s), %u sender(s) x %u QP(s), "
	       "%llu bytes per QP in %u-byte WRs, seed %llu\n",
	       tname(c->transport), c->net.npaths, c->senders, c->conns,
	       (unsigned long long)c->bytes, c->msg_size,
	       (unsigned long long)c->seed);
	printf("  result        %s%s%s\n", mroce_sim_verdict_str(r->verdict),
	       r->why[0] ? ": " : "", r->why);
	printf("  goodput       %.3f Gbit/s (capacity %.3f)\n",
	       r->goodput_gbps, r->capacity_gbps);
	printf("  completed     %llu of %llu bytes, %llu WRs\n",
	       (unsigned long long)r->completed_bytes,
	       (unsigned long long)r->target_bytes,
	       (unsigned long long)r->msgs);
	printf("  WR latency    p50 %.2f us, p99 %.2f us, max %.2f us\n",
	       r->fct_p50_us, r->fct_p99_us, r->fct_max_us);
	if (r->probe_idle_n || r->probe_loaded_n)
		printf("  probe         8 B WRITE: idle p50 %.2f us p99 %.2f us "
		       "(%llu); loaded p50 %.2f us p99 %.2f us (%llu)\n",
		       r->probe_idle_p50_us, r->probe_idle_p99_us,
		       (unsigned long long)r->probe_idle_n,
		       r->probe_loaded_p50_us, r->probe_loaded_p99_us,
		       (unsigned long long)r->probe_loaded_n);
	printf("  engine        %llu pkts sent, %llu retransmits, %llu RTOs, "
	       "%llu path re-rolls\n",
	       (unsigned long long)r->tx_pkts,
	       (unsigned long long)r->retransmits,
	       (unsigned long long)r->rto_fires,
	       (unsigned long long)r->path_rerolls);
	printf("  network       %llu pkts, drops: %llu tail %llu loss %llu "
	       "blackhole, %llu dups, %llu corrupted (%llu ICRC drops), "
	       "%llu CE\n",
	       (unsigned long long)r->net_pkts,
	       (unsigned long long)r->drops_tail,
	       (unsigned long long)r->drops_loss,
	       (unsigned long long)r->drops_blackhole,
	       (unsigned long long)r->dups, (unsigned long long)r->corrupts,
	       (unsigned long long)r->icrc_drops,
	       (unsigned long long)r->ce_marked);
	printf("  path share   ");
	for (uint32_t i = 0; i < r->npaths; i++)
		printf(" %.1f%%", r->path_share[i] * 100);
	printf("\n  fairness      Jain %.4f (per-QP throughput), %.4f (bytes "
	       "at first finish); engine memory %zu bytes/conn\n",
	       r->jain, r->jain_first, r->mem_per_conn);
	if (r->pre_fail_gbps > 0)
		printf("  blackhole     %.3f Gbit/s before, %.3f after; "
		       "stalled %.1f us; recovered in %.1f us (%.1f RTTs)\n",
		       r->pre_fail_gbps, r->post_fail_gbps,
		       r->fail_gap_ns / 1000.0, r->recovery_us,
		       r->recovery_us >= 0 ? r->recovery_us / r->base_rtt_us
					   : -1.0);
	printf("  time          %.1f us virtual, %llu events, %.3f s wall, "
	       "digest %016llx\n",
	       (double)r->end_ns / 1000.0, (unsigned long long)r->events, wall,
	       (unsigned long long)r->digest);
}

int main(int argc, char **argv)
{
	struct json_object *doc = NULL;
	struct args a;
	struct mroce_sim *s;
	struct mroce_sim_result r;
	struct timespec t0, t1;
	double wall;
	int err;

	parse_args(argc, argv, &a);
	if (a.bench)
		return run_bench(&a);
	if (a.bench_crc)
		return run_bench_crc(a.json);
	if (a.cfg.trace_ns) {
		static struct trace_state ts;

		ts.nplanes = a.cfg.net.npaths ? a.cfg.net.npaths : 1;
		a.cfg.trace = trace_paths;
		a.cfg.trace_arg = &ts;
	}
	if (a.json) {
		doc = mroce_json_doc(prog);
		json_config(doc, &a);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	err = mroce_sim_create(&a.cfg, &s);
	if (err)
		return sim_failed(doc, err, "cannot set up the simulation: %s",
				  strerror(-err));
	err = mroce_sim_run(s, &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (err) {
		mroce_sim_destroy(s);
		return sim_failed(doc, err, "simulation failed: %s",
				  strerror(-err));
	}
	wall = (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (doc) {
		json_result(doc, &r, wall);
		if (a.series)
			print_series(s, doc);
	} else {
		print_text(&a, &r, wall);
		if (a.series)
			print_series(s, NULL);
	}
	mroce_sim_destroy(s);
	if (r.verdict != MROCE_SIM_OK) {
		char msg[256];

		snprintf(msg, sizeof(msg), "%s: %s",
			 mroce_sim_verdict_str(r.verdict), r.why);
		if (doc)
			mroce_json_set_error(doc, 1, msg);
		else
			fprintf(stderr, "%s: %s\n", prog, msg);
	}
	if (doc)
		mroce_json_emit(stdout, doc, 0);
	return r.verdict == MROCE_SIM_OK ? 0 : 1;
}
