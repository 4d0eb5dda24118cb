// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_perf's command line: perftest's options (-s -n -D -q -a -t -p,
 * --report_gbits, --cycle_buffer, --out_json) plus mroce's (transport,
 * backend, --verify, --daemon, --json). Bad values exit 2 with a message
 * naming the option.
 */
#include "perf.h"

#include "../common/util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage_err(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	exit(2);
}

/* clang-format off: the help text is laid out as it prints. */
static const char help_text[] =
"NAME\n"
"    mroce_perf - perftest-style RDMA benchmarks over mroce\n"
"\n"
"SYNOPSIS\n"
"    mroce_perf TEST [options]            (server)\n"
"    mroce_perf TEST [options] HOST       (client)\n"
"\n"
"    TEST is one of write_bw, read_bw, send_bw, write_lat, read_lat,\n"
"    send_lat. Start the server first; the client connects to HOST over\n"
"    TCP (-p), both set up their QPs, the client runs the test and prints\n"
"    the results. As with perftest, give the server the same -s/-a/-t/-q\n"
"    and --transport as the client.\n"
"\n"
"DESCRIPTION\n"
"    Bandwidth tests keep up to --tx-depth operations in flight per QP and\n"
"    print perftest's columns:\n"
"      #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]\n"
"    ([Gb/sec] with --report_gbits; MB = 2^20 bytes). The peak is the best\n"
"    window of at least 10 ms between two completions. Latency tests\n"
"    ping-pong one message at a time (write and send: half the round trip;\n"
"    read: the whole READ) and print:\n"
"      #bytes #iterations t_min[usec] t_max[usec] t_typical[usec]\n"
"      t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]\n"
"    (t_typical is the median). A block on path spraying follows: paths,\n"
"    packets sent and retransmitted, the receiver's out-of-order share, and\n"
"    each path's share of the packets.\n"
"\n"
"OPTIONS\n"
"    -s, --size=BYTES       message size (bw: 65536, lat: 2)\n"
"    -n, --iters=N          iterations (bw: 5000, lat: 1000)\n"
"    -D, --duration=SECS    run for SECS seconds instead of -n\n"
"    -q, --qp=N             number of QPs (1..64, default 1)\n"
"    -a, --all              all sizes 2 .. 8388608 (powers of two)\n"
"    -t, --tx-depth=N       operations in flight per QP (default 128)\n"
"    -p, --port=PORT        TCP rendezvous port (default 18515)\n"
"        --cycle_buffer=B   without --verify, as perftest: messages of up\n"
"                           to B/2 bytes step through the first B bytes of\n"
"                           the buffer (cache-line aligned), larger ones\n"
"                           all use its start (default 4096, a page), so\n"
"                           a bandwidth test measures the transport, not\n"
"                           the memory bus. With --verify every message in\n"
"                           flight has its own slot\n"
"        --report_gbits     bandwidth in Gb/sec\n"
"        --transport=T      metaroce (default) or rocev2\n"
"        --paths=N          MetaRoCE paths per connection (default 8)\n"
"        --verify           check the bytes: message N of a QP carries a\n"
"                           window of a seeded pattern that moves with N.\n"
"                           write_bw streams the same RDMA WRITEs as the\n"
"                           benchmark, message N into slot N mod 2 x tx\n"
"                           depth, and the server checks every slot's last\n"
"                           message at the end; send_bw and pings are\n"
"                           checked by the receiver, READs by the client,\n"
"                           every message. A wrong byte fails the run,\n"
"                           naming the QP, message and offset\n"
"        --interval=SECS    bandwidth tests: report the goodput of every\n"
"                           SECS seconds as it ends, like iperf3 (text\n"
"                           lines before the table; \"intervals\" in --json)\n"
"        --idle=SECS        client: after the test, with the connection up,\n"
"                           sit idle SECS seconds (what connected but quiet\n"
"                           applications cost a daemon)\n"
"        --probe            write_bw client, -q 2 or more: the last QP is a\n"
"                           latency probe beside the others' bulk WRITEs:\n"
"                           one 8-byte WRITE at a time, post to completion\n"
"                           (a round trip). It runs alone first (100\n"
"                           warm-up, then 2000 samples or 1 s: idle), then\n"
"                           during the test (loaded); a line after the\n"
"                           table gives both p50 / p99 (\"probe\" in --json).\n"
"                           The bandwidth is the other QPs'. The server\n"
"                           needs the same -q only\n"
"        --warmup=N         latency tests: N iterations before the measured\n"
"                           ones, run (and checked with --verify) but not\n"
"                           counted: the first round trips of a fresh\n"
"                           process pay for page faults and cold caches\n"
"                           (default 0, as perftest)\n"
"        --json             print the results as one JSON document\n"
"                           (docs/json.md); a run that fails still prints\n"
"                           a whole document, with an \"error\" object\n"
"        --out_json         as perftest: also write perftest's JSON report\n"
"                           (test_info, results with BW_peak, BW_average,\n"
"                           MsgRate or t_min .. percentile_99.9) to\n"
"                           perftest_out.json in the working directory\n"
"        --out_json_file=F  the file --out_json writes\n"
"        --backend=B        udp (default) or afxdp\n"
"        --ifname=IF        interface for --backend=afxdp\n"
"        --local=ADDR       local data address (server default 127.0.0.1;\n"
"                           client default: the route's source address, or\n"
"                           127.0.0.2 when that is the server's own)\n"
"        --daemon[=PATH]    use the mroced daemon at socket PATH (default\n"
"                           /run/mroce/mroced.sock): the address, backend,\n"
"                           MTU, paths and RTO are the daemon's, so\n"
"                           --backend, --ifname, --local, --paths,\n"
"                           --rto-min and --link-gbps do not apply\n"
"        --rto-min=USEC     minimum retransmission timeout (default: the\n"
"                           engine's 200 us); processes sharing busy cores\n"
"                           want milliseconds, or they retransmit spuriously\n"
"        --link-gbps=R      the line rate MetaRoCE paces at and shares\n"
"                           out among senders, Gbit/s (default: the\n"
"                           interface's speed, or 100 where it reports\n"
"                           none or is virtual: loopback, veth)\n"
"        --queue-us=N       MetaRoCE, embedded mode: the standing queue\n"
"                           (us) a path may keep, judged by each round\n"
"                           trip's smallest RTT sample (default: none\n"
"                           but the 10 ms scheduling-noise allowance;\n"
"                           docs/engine.md, \"Short queues\")\n"
"        --no-ack-offload   --backend=afxdp: the XDP program answers nothing\n"
"                           for our connections (by default it answers\n"
"                           duplicates of placed data); for comparison. With\n"
"                           --daemon it is mroced's option\n"
"        --corrupt=MSG:OFF  testing --verify: QP 0's message MSG (from 0)\n"
"                           goes out with byte OFF changed (write_bw and\n"
"                           send_bw with --verify); the run must fail\n"
"    -V, --version          print the version and exit\n"
"    -h, --help             this text\n"
"\n"
"EXIT STATUS\n"
"    0 success; 1 run failed (connection, error completion, verify\n"
"    mismatch); 2 bad arguments.\n"
"\n"
"EXAMPLES\n"
"    mroce_perf write_bw --local 127.0.0.1 &\n"
"    mroce_perf write_bw -s 4096 -n 1000 --verify 127.0.0.1\n"
"    mroce_perf write_bw --daemon=/tmp/a.sock &\n"
"    mroce_perf write_bw --daemon=/tmp/b.sock --verify 127.0.0.1\n"
"    mroce_perf read_lat -s 64 --out_json 127.0.0.1\n";
/* clang-format on */

/* A number in [min, max] for option opt, or exit 2 naming it. */
static uint64_t num(const char *s, const char *opt, uint64_t min,
		    uint64_t max)
{
	uint64_t v;

	if (mroce_parse_u64(s, min, max, &v)) {
		fprintf(stderr,
			"%s: %s: '%s' is not a number in [%llu, %llu]\n"
			"Try '%s --help'.\n",
			prog, opt, s, (unsigned long long)min,
			(unsigned long long)max, prog);
		exit(2);
	}
	return v;
}

enum {
	O_GBITS = 256,
	O_TRANSPORT,
	O_PATHS,
	O_VERIFY,
	O_JSON,
	O_OUT_JSON,
	O_OUT_JSON_FILE,
	O_BACKEND,
	O_IFNAME,
	O_LOCAL,
	O_DAEMON,
	O_RTO,
	O_LINK,
	O_NO_OFFLOAD,
	O_CYCLE,
	O_INTERVAL,
	O_IDLE,
	O_WARMUP,
	O_CORRUPT,
	O_PROBE,
	O_QUEUE_US,
};

static const struct option lo[] = {
	{"size", required_argument, NULL, 's'},
	{"iters", required_argument, NULL, 'n'},
	{"duration", required_argument, NULL, 'D'},
	{"qp", required_argument, NULL, 'q'},
	{"all", no_argument, NULL, 'a'},
	{"tx-depth", required_argument, NULL, 't'},
	{"port", required_argument, NULL, 'p'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{"report_gbits", no_argument, NULL, O_GBITS},
	{"transport", required_argument, NULL, O_TRANSPORT},
	{"paths", required_argument, NULL, O_PATHS},
	{"verify", no_argument, NULL, O_VERIFY},
	{"json", no_argument, NULL, O_JSON},
	{"out_json", no_argument, NULL, O_OUT_JSON},
	{"out_json_file", required_argument, NULL, O_OUT_JSON_FILE},
	{"backend", required_argument, NULL, O_BACKEND},
	{"ifname", required_argument, NULL, O_IFNAME},
	{"local", required_argument, NULL, O_LOCAL},
	{"rto-min", required_argument, NULL, O_RTO},
	{"link-gbps", required_argument, NULL, O_LINK},
	{"no-ack-offload", no_argument, NULL, O_NO_OFFLOAD},
	{"daemon", optional_argument, NULL, O_DAEMON},
	{"cycle_buffer", required_argument, NULL, O_CYCLE},
	{"interval", required_argument, NULL, O_INTERVAL},
	{"idle", required_argument, NULL, O_IDLE},
	{"warmup", required_argument, NULL, O_WARMUP},
	{"probe", no_argument, NULL, O_PROBE},
	{"queue-us", required_argument, NULL, O_QUEUE_US},
	{"corrupt", required_argument, NULL, O_CORRUPT},
	{0},
};

/* perftest's numeric options. Returns false for any other option. */
static bool parse_perftest(int ch, const char *arg, struct opts *o,
			   bool *size_set)
{
	switch (ch) {
	case 's':
		o->size = num(arg, "--size", 1, MAX_ALL_SIZE);
		*size_set = true;
		return true;
	case 'n':
		o->iters = (long)num(arg, "--iters", 1, 1000000000);
		o->iters_set = true;
		return true;
	case 'D':
		o->duration = (int)num(arg, "--duration", 1, 86400);
		return true;
	case 'q':
		o->qps = (int)num(arg, "--qp", 1, MAX_QPS);
		return true;
	case 't':
		o->tx_depth = (int)num(arg, "--tx-depth", 1, 4096);
		return true;
	case 'p':
		o->port = (uint16_t)num(arg, "--port", 1, 65535);
		return true;
	case O_CYCLE:
		o->cycle_buffer = num(arg, "--cycle_buffer", 64, 1ull << 30);
		return true;
	}
	return false;
}

/* --corrupt=MSG:OFF */
static void parse_corrupt(const char *arg, struct opts *o)
{
	char msg[32];
	const char *colon = strchr(arg, ':');
	size_t n = colon ? (size_t)(colon - arg) : 0;

	if (!colon || n == 0 || n >= sizeof(msg))
		usage_err("--corrupt: '%s' is not MSG:OFF", arg);
	memcpy(msg, arg, n);
	msg[n] = 0;
	o->corrupt_msg = num(msg, "--corrupt MSG", 0, UINT32_MAX);
	o->corrupt_off = num(colon + 1, "--corrupt OFF", 0, MAX_ALL_SIZE - 1);
	o->corrupt = true;
}

/* The transport and backend choices. Returns false for other options. */
static bool parse_mroce(int ch, const char *arg, struct opts *o)
{
	switch (ch) {
	case O_TRANSPORT:
		if (!strcmp(arg, "metaroce"))
			o->transport = MRV_TRANSPORT_METAROCE;
		else if (!strcmp(arg, "rocev2"))
			o->transport = MRV_TRANSPORT_ROCEV2;
		else
			usage_err("unknown transport '%s' "
				  "(metaroce or rocev2)", arg);
		return true;
	case O_PATHS:
		o->paths = (int)num(arg, "--paths", 1, 64);
		return true;
	case O_BACKEND:
		if (!strcmp(arg, "udp"))
			o->backend = MRV_BACKEND_UDP;
		else if (!strcmp(arg, "afxdp"))
			o->backend = MRV_BACKEND_AFXDP;
		else
			usage_err("unknown backend '%s' (udp or afxdp)", arg);
		return true;
	case O_IFNAME:
		o->ifname = arg;
		return true;
	case O_LOCAL:
		o->local = arg;
		return true;
	case O_DAEMON:
		o->daemon = true;
		o->daemon_sock = arg;
		return true;
	case O_RTO:
		o->rto_min_us = (int)num(arg, "--rto-min", 1, 10000000);
		return true;
	case O_LINK: {
		double g;

		if (mroce_parse_double(arg, 0.001, 4000, &g) < 0)
			usage_err("--link-gbps: '%s' is not a rate in "
				  "Gbit/s (0.001 to 4000)", arg);
		o->link_mbps = (uint32_t)(g * 1000 + 0.5);
		return true;
	}
	case O_NO_OFFLOAD:
		o->no_ack_offload = true;
		return true;
	case O_INTERVAL:
		if (mroce_parse_double(arg, 0.01, 3600, &o->interval))
			usage_err("--interval: '%s' is not a number of seconds "
				  "in [0.01, 3600]", arg);
		return true;
	case O_IDLE:
		if (mroce_parse_double(arg, 0, 3600, &o->idle))
			usage_err("--idle: '%s' is not a number of seconds "
				  "in [0, 3600]", arg);
		return true;
	case O_WARMUP:
		o->warmup = (long)num(arg, "--warmup", 0, 1000000);
		return true;
	case O_PROBE:
		o->probe = true;
		return true;
	case O_QUEUE_US:
		o->queue_us = (uint32_t)num(arg, "--queue-us", 1, 1000000);
		return true;
	case O_CORRUPT:
		parse_corrupt(arg, o);
		return true;
	}
	return false;
}

/* Flags without a value; exits for --help, --version and unknown ones. */
static void parse_flag(int ch, struct opts *o, const char **json_file)
{
	switch (ch) {
	case 'a':
		o->all = true;
		break;
	case O_GBITS:
		o->gbits = true;
		break;
	case O_VERIFY:
		o->verify = true;
		break;
	case O_JSON:
		o->json = true;
		break;
	case O_OUT_JSON:
		o->out_json = *json_file;
		break;
	case O_OUT_JSON_FILE:
		*json_file = optarg;
		if (o->out_json)
			o->out_json = optarg;
		break;
	case 'h':
		fputs(help_text, stdout);
		exit(0);
	case 'V':
		mroce_print_version(stdout, prog);
		exit(0);
	default:
		fprintf(stderr, "Try '%s --help'.\n", prog);
		exit(2);
	}
}

/* TEST [HOST] after the options. */
static void parse_operands(int argc, char **argv, struct opts *o)
{
	static const struct {
		const char *name;
		enum test_kind kind;
		bool bw;
	} tests[] = {
		{"write_bw", T_WRITE, true}, {"read_bw", T_READ, true},
		{"send_bw", T_SEND, true},   {"write_lat", T_WRITE, false},
		{"read_lat", T_READ, false}, {"send_lat", T_SEND, false},
	};
	size_t i;

	if (optind >= argc)
		usage_err("%s", "missing TEST (write_bw, read_bw, send_bw, "
				"write_lat, read_lat, send_lat)");
	o->name = argv[optind++];
	for (i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!strcmp(o->name, tests[i].name))
			break;
	if (i == sizeof(tests) / sizeof(tests[0]))
		usage_err("unknown test '%s'", o->name);
	o->kind = tests[i].kind;
	o->bw = tests[i].bw;
	o->name = tests[i].name;
	if (optind < argc)
		o->host = argv[optind++];
	if (optind < argc)
		usage_err("unexpected argument '%s'", argv[optind]);
}

void perf_parse(int argc, char **argv, struct opts *o)
{
	const char *json_file = PERFTEST_JSON_FILE;
	bool size_set = false;
	int c;

	memset(o, 0, sizeof(*o));
	o->qps = 1;
	o->port = DEF_PORT;
	o->transport = MRV_TRANSPORT_METAROCE;
	o->backend = MRV_BACKEND_UDP;
	o->tx_depth = 128;
	o->cycle_buffer = 4096;
	while ((c = getopt_long(argc, argv, "s:n:D:q:at:p:hV", lo, NULL)) !=
	       -1) {
		if (!parse_perftest(c, optarg, o, &size_set) &&
		    !parse_mroce(c, optarg, o))
			parse_flag(c, o, &json_file);
	}
	parse_operands(argc, argv, o);
	if (o->backend == MRV_BACKEND_AFXDP && !o->ifname)
		usage_err("%s", "--backend=afxdp needs --ifname");
	if (o->all && size_set)
		usage_err("%s", "-a and -s are exclusive");
	if (o->duration && o->iters_set)
		usage_err("%s", "-D and -n are exclusive");
	if (!size_set)
		o->size = o->bw ? 65536 : 2;
	if (!o->iters_set)
		o->iters = o->bw ? 5000 : 1000;
	if (!o->bw && o->qps > 1)
		usage_err("%s", "latency tests use one QP (-q 1)");
	if (o->interval && !o->bw)
		usage_err("%s", "--interval applies to bandwidth tests");
	if (o->warmup && o->bw)
		usage_err("%s", "--warmup applies to latency tests");
	if (o->probe && (o->kind != T_WRITE || !o->bw || o->qps < 2 ||
			 o->verify || o->size < 8))
		usage_err("%s", "--probe is for write_bw with -q 2 or more "
				"(the last QP is the probe) and without "
				"--verify");
	if (o->corrupt && (!o->verify || o->kind == T_READ || !o->bw ||
			   !o->host))
		usage_err("%s", "--corrupt is for the client of write_bw or "
				"send_bw with --verify");
	if (o->corrupt && o->corrupt_off >= o->size)
		usage_err("%s", "--corrupt: OFF must be inside the message (-s)");
}
