// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mrocectl - attach the mroce XDP fast path to an interface, detach it,
 * show what is attached and its counters.
 *
 * The CLI is a table of commands {name, handler, synopsis, help}; every
 * command answers --help with its man-page-style text. Exit status: 0 on
 * success, 1 when the operation failed (a named error is printed), 2 on a
 * usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "../xdp/loader.h"
#include "mrocectl.h"
#include "mroce/xdp.h"
#include "../ipc/ipc.h"
#include "../common/json.h"
#include "../common/util.h"

static bool verbose;

static int lib_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!verbose && level != LIBBPF_WARN)
		return 0;
	if (!verbose)
		return 0; /* warnings become our own named errors */
	return vfprintf(stderr, fmt, ap);
}

static int xdp_print(enum libxdp_print_level level, const char *fmt, va_list ap)
{
	if (!verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* ------------------------------------------------------------------ */
/* Help texts                                                          */
/* ------------------------------------------------------------------ */
static const char help_main[] =
	"NAME\n"
	"    mrocectl - control the mroce XDP fast path\n"
	"\n"
	"SYNOPSIS\n"
	"    mrocectl [-v] COMMAND [ARGS...]\n"
	"    mrocectl COMMAND --help\n"
	"\n"
	"DESCRIPTION\n"
	"    Loads the mroce XDP program (bpf/mroce_xdp.bpf.c) onto a network\n"
	"    interface through libxdp, pins its maps under\n"
	"    " MROCE_PIN_ROOT
	"/<ifname>/ for the daemon, and reports counters.\n"
	"\n"
	"COMMANDS\n"
	"%s"
	"\n"
	"OPTIONS\n"
	"    -v, --verbose  show libbpf/libxdp messages (verifier log on "
	"failure)\n"
	"    -V, --version  print the version and exit\n"
	"    -h, --help     this text\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success, 1 the operation failed (a named error is printed),\n"
	"    2 usage error.\n"
	"\n"
	"EXAMPLES\n"
	"    mrocectl attach eth0\n"
	"    mrocectl stats eth0 --watch 2\n"
	"    mrocectl stats eth0 --json\n";

static const char help_attach[] =
	"NAME\n"
	"    mrocectl attach - attach the XDP fast path to an interface\n"
	"\n"
	"SYNOPSIS\n"
	"    mrocectl attach IFNAME [--mode native|skb] [--no-ack-offload]\n"
	"                    [--port N] [--rocev2-port N]\n"
	"\n"
	"DESCRIPTION\n"
	"    Loads the program and attaches it with libxdp: through the "
	"libxdp\n"
	"    dispatcher when the kernel supports it (other XDP programs may "
	"share\n"
	"    the interface), else as the interface's only program (libxdp's\n"
	"    fallback; `mrocectl status` shows which). Mounts bpffs at\n"
	"    /sys/fs/bpf when missing (as inside `ip netns exec`) and pins "
	"the\n"
	"    maps conns, xsks, rx_state, scoreboard and counters under\n"
	"    " MROCE_PIN_ROOT "/IFNAME/.\n"
	"\n"
	"    Refuses, with a named error and exit status 1: a missing "
	"interface\n"
	"    (NO_IFACE), a second attach (ALREADY_ATTACHED), no privileges\n"
	"    (NO_PRIV), an interface whose driver refuses native XDP\n"
	"    (NATIVE_REFUSED, with the `ip link` setting that fixes it).\n"
	"\n"
	"OPTIONS\n"
	"    --mode native|skb   native (driver) XDP, the default; skb = "
	"generic\n"
	"                        XDP, slower but works on any interface\n"
	"    --no-ack-offload    never generate ACKs in XDP (all from the "
	"daemon)\n"
	"    --port N            MetaRoCE UDP port (default 4792)\n"
	"    --rocev2-port N     RoCEv2 UDP port (default 4791)\n";

static const char help_detach[] =
	"NAME\n"
	"    mrocectl detach - remove the XDP fast path from an interface\n"
	"\n"
	"SYNOPSIS\n"
	"    mrocectl detach IFNAME\n"
	"\n"
	"DESCRIPTION\n"
	"    Detaches the mroce program (other programs on a libxdp "
	"dispatcher\n"
	"    stay) and removes the pins under " MROCE_PIN_ROOT "/IFNAME/.\n"
	"    Leftover pins of an interface that no longer exists are removed "
	"too.\n"
	"    NOT_ATTACHED when there is nothing to remove.\n";

static const char help_status[] =
	"NAME\n"
	"    mrocectl status - show where the XDP fast path is attached\n"
	"\n"
	"SYNOPSIS\n"
	"    mrocectl status [IFNAME]\n"
	"\n"
	"DESCRIPTION\n"
	"    One line per interface with pinned mroce maps (or IFNAME only):\n"
	"    ifindex, program id, attach mode (native/skb), whether it runs\n"
	"    through the libxdp dispatcher or alone, the number of XDP "
	"programs\n"
	"    on the interface, and the ids of the maps conns, xsks, rx_state,\n"
	"    scoreboard, counters. STALE marks pins without a program.\n"
	"    A last line tells whether mroced runs at its default socket\n"
	"    (" MRD_DEFAULT_SOCK ") and its applications, PDs, MRs, CQs and\n"
	"    QPs; `mrocectl daemon` shows more.\n";

static const char help_stats[] =
	"NAME\n"
	"    mrocectl stats - show the XDP fast path's counters\n"
	"\n"
	"SYNOPSIS\n"
	"    mrocectl stats IFNAME [--json] [--all] [--watch [SECS]] [--count "
	"N]\n"
	"\n"
	"DESCRIPTION\n"
	"    Reads the per-CPU counters map and prints each counter summed "
	"over\n"
	"    CPUs: rx_*, pass_* (not ours, left to the kernel), redirect_* "
	"(to\n"
	"    the daemon's AF_XDP socket), tx_* (ACKs sent by XDP), ack_*\n"
	"    (telemetry) and one drop_* per reason. Zero counters are hidden\n"
	"    unless --all or --json. The same numbers, with field names, come\n"
	"    from: bpftool map dump pinned " MROCE_PIN_ROOT "/IFNAME/counters\n"
	"\n"
	"OPTIONS\n"
	"    --json         one JSON document: {\"schema_version\":..,\n"
	"                   \"ifname\":..,\"counters\":{..}} (docs/json.md);\n"
	"                   with --watch one per line, each with\n"
	"                   \"rates_per_s\":{..}; a failure prints one with\n"
	"                   an \"error\" object\n"
	"    --all          also print counters that are zero\n"
	"    --watch [SECS] print again every SECS seconds (default 1) with "
	"the\n"
	"                   rate per second of each counter, until "
	"interrupted\n"
	"    --count N      with --watch: stop after N reports\n";

static const char help_help[] = "NAME\n"
				"    mrocectl help - show help\n"
				"\n"
				"SYNOPSIS\n"
				"    mrocectl help [COMMAND]\n";

/* ------------------------------------------------------------------ */
/* Errors                                                              */
/* ------------------------------------------------------------------ */
static int fail(const char *cmd, const char *ifname, int err,
		const struct ctl_iface_info *info)
{
	fprintf(stderr, "mrocectl: %s%s%s: %s: %s\n", cmd, ifname ? " " : "",
		ifname ? ifname : "", mroce_xdp_err_name(err),
		mroce_xdp_err_text(err));
	switch (-err) {
	case MROCE_XDP_E_NO_IFACE:
		fprintf(stderr,
			"  hint: `ip link show` lists the interfaces "
			"(inside a namespace: ip netns exec NS ip link)\n");
		break;
	case MROCE_XDP_E_ALREADY_ATTACHED:
		fprintf(stderr, "  hint: run `mrocectl detach %s` first\n",
			ifname);
		break;
	case MROCE_XDP_E_NOT_ATTACHED:
		fprintf(stderr, "  hint: `mrocectl status` lists where mroce "
				"is attached\n");
		break;
	case MROCE_XDP_E_NO_PRIV:
		fprintf(stderr, "  hint: run as root (needs CAP_BPF, "
				"CAP_NET_ADMIN and CAP_SYS_ADMIN for bpffs)\n");
		break;
	case MROCE_XDP_E_NATIVE_REFUSED:
		fprintf(stderr,
			"  the driver of %s refused native XDP (mtu %d, %d rx "
			"/ %d tx queues).\n"
			"  fix, on veth: create both ends with equal queue "
			"counts:\n"
			"    ip link add A numtxqueues N numrxqueues N type "
			"veth "
			"peer name B numtxqueues N numrxqueues N\n"
			"  fix, if the MTU is too large for the driver's XDP: "
			"ip link set dev %s mtu 3498\n"
			"  or attach in generic mode: mrocectl attach %s "
			"--mode skb\n",
			ifname, info ? info->mtu : -1,
			info ? info->rx_queues : -1,
			info ? info->tx_queues : -1, ifname, ifname);
		break;
	case MROCE_XDP_E_LOAD:
		fprintf(stderr, "  hint: rerun with -v for the verifier log\n");
		break;
	default:
		break;
	}
	return 1;
}

static int usage(const char *cmd, const char *msg)
{
	fprintf(stderr, "mrocectl: %s: %s (see mrocectl %s --help)\n", cmd, msg,
		cmd);
	return 2;
}

static bool want_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

static int parse_port(const char *s, uint16_t *out)
{
	uint64_t v;

	if (mroce_parse_u64(s, 1, 65535, &v))
		return -1;
	*out = (uint16_t)v;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Commands                                                            */
/* ------------------------------------------------------------------ */
static int cmd_attach(int argc, char **argv)
{
	static const struct option lo[] = {
		{"mode", required_argument, NULL, 'm'},
		{"no-ack-offload", no_argument, NULL, 'n'},
		{"port", required_argument, NULL, 'p'},
		{"rocev2-port", required_argument, NULL, 'r'},
		{0}};
	struct ctl_attach_opts o = {.mode = CTL_MODE_NATIVE,
				    .ack_offload = true};
	struct ctl_iface_info info;
	const char *ifname;
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "native"))
				o.mode = CTL_MODE_NATIVE;
			else if (!strcmp(optarg, "skb"))
				o.mode = CTL_MODE_SKB;
			else
				return usage("attach",
					     "--mode is native or skb");
			break;
		case 'n':
			o.ack_offload = false;
			break;
		case 'p':
			if (parse_port(optarg, &o.mroce_port))
				return usage("attach", "--port is a number "
						       "in [1, 65535]");
			break;
		case 'r':
			if (parse_port(optarg, &o.rocev2_port))
				return usage("attach",
					     "--rocev2-port is a number in "
					     "[1, 65535]");
			break;
		default:
			return usage("attach", "unknown option");
		}
	}
	if (optind != argc - 1)
		return usage("attach", "needs exactly one IFNAME");
	ifname = argv[optind];
	err = ctl_attach(ifname, &o, &info);
	if (err)
		return fail("attach", ifname, err, &info);
	printf("mroce attached to %s: prog id %u, %s mode, %s\n", ifname,
	       info.prog_id, info.mode,
	       info.dispatcher ? "libxdp dispatcher"
			       : "single program (no dispatcher)");
	printf("maps pinned under %s/%s/\n", MROCE_PIN_ROOT, ifname);
	if (info.bpffs_mounted)
		fprintf(stderr,
			"mrocectl: note: mounted bpffs at /sys/fs/bpf in this "
			"mount namespace;\n  the pins vanish when it ends (as "
			"when `ip netns exec` returns): start the daemon in "
			"the\n"
			"  same session, or mount bpffs persistently. The "
			"program "
			"stays attached\n  (without the libxdp dispatcher, "
			"whose "
			"links would vanish too).\n");
	return 0;
}

static int cmd_detach(int argc, char **argv)
{
	int err;

	if (argc != 2 || argv[1][0] == '-')
		return usage("detach", "needs exactly one IFNAME");
	err = ctl_detach(argv[1]);
	if (err)
		return fail("detach", argv[1], err, NULL);
	printf("mroce detached from %s\n", argv[1]);
	return 0;
}

static void print_status(const struct ctl_iface_info *i)
{
	printf("%-15s %7d %7u %-6s %-10s %5d  %u,%u,%u,%u,%u,%u%s\n", i->ifname,
	       i->ifindex, i->prog_id, i->mode,
	       i->attached ? (i->dispatcher ? "dispatcher" : "single") : "-",
	       i->n_progs, i->map_ids[0], i->map_ids[1], i->map_ids[2],
	       i->map_ids[3], i->map_ids[4], i->map_ids[5],
	       i->attached ? "" : "  STALE (pins without program)");
}

static int cmd_status(int argc, char **argv)
{
	char names[64][32];
	struct ctl_iface_info info;
	int n, err;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-'))
		return usage("status", "takes at most one IFNAME");
	if (geteuid() != 0)
		return fail("status", NULL, -MROCE_XDP_E_NO_PRIV, NULL);
	err = ctl_ensure_bpffs();
	if (err < 0)
		return fail("status", NULL, err, NULL);
	if (argc == 2) {
		n = 1;
		snprintf(names[0], sizeof(names[0]), "%s", argv[1]);
	} else {
		n = ctl_list_pinned(names, 64);
		if (n < 0)
			return fail("status", NULL, n, NULL);
	}
	if (n == 0) {
		printf("mroce is not attached to any interface\n");
		daemon_status_line();
		return 0;
	}
	printf("%-15s %7s %7s %-6s %-10s %5s  %s\n", "IFACE", "IFINDEX", "PROG",
	       "MODE", "VIA", "PROGS",
	       "MAPS(conns,xsks,rx_state,scoreboard,counters,ack_limit)");
	for (int i = 0; i < n; i++) {
		ctl_describe(names[i], &info);
		if (argc == 2 && !info.attached && !info.pinned)
			return fail("status", names[i],
				    info.ifindex > 0 ? -MROCE_XDP_E_NOT_ATTACHED
						     : -MROCE_XDP_E_NO_IFACE,
				    NULL);
		print_status(&info);
	}
	daemon_status_line();
	return 0;
}

static volatile sig_atomic_t stop;

static void on_sigint(int sig)
{
	(void)sig;
	stop = 1;
}

static void json_counters(const char *ifname,
			  const struct mroce_xdp_counters *c,
			  const struct mroce_xdp_counters *prev, double secs)
{
	struct json_object *doc = mroce_json_doc("mrocectl");
	struct json_object *o = json_object_new_object();

	mroce_json_add_str(doc, "command", "stats");
	mroce_json_add_str(doc, "ifname", ifname);
	for (unsigned int i = 0; i < MROCE_XC__COUNT; i++)
		mroce_json_add_u64(o, mroce_xdp_counter_name(i),
				   mroce_xdp_counter_get(c, i));
	json_object_object_add(doc, "counters", o);
	if (prev) {
		o = json_object_new_object();
		for (unsigned int i = 0; i < MROCE_XC__COUNT; i++) {
			double r = (double)(mroce_xdp_counter_get(c, i) -
					    mroce_xdp_counter_get(prev, i)) /
				   secs;

			mroce_json_add_fixed(o, mroce_xdp_counter_name(i), r,
					     1);
		}
		json_object_object_add(doc, "rates_per_s", o);
	}
	mroce_json_emit(stdout, doc, 0);
}

static void print_counters(const char *ifname,
			   const struct mroce_xdp_counters *c,
			   const struct mroce_xdp_counters *prev, double secs,
			   bool json, bool all)
{
	if (json) {
		json_counters(ifname, c, prev, secs);
		return;
	}
	printf("%-22s %14s%s  %s\n", "COUNTER", "TOTAL",
	       prev ? "         RATE/s" : "", "MEANING");
	for (unsigned int i = 0; i < MROCE_XC__COUNT; i++) {
		uint64_t v = mroce_xdp_counter_get(c, i);

		if (!v && !all)
			continue;
		printf("%-22s %14llu", mroce_xdp_counter_name(i),
		       (unsigned long long)v);
		if (prev)
			printf(" %14.1f",
			       (double)(v - mroce_xdp_counter_get(prev, i)) /
				       secs);
		printf("  %s\n", mroce_xdp_counter_desc(i));
	}
	fflush(stdout);
}

struct stats_opts {
	bool json, all, watch;
	double secs;
	uint64_t count; /* 0: until interrupted */
};

/* 0, or the exit status of a usage error. */
static int stats_parse(int argc, char **argv, struct stats_opts *so)
{
	static const struct option lo[] = {
		{"json", no_argument, NULL, 'j'},
		{"all", no_argument, NULL, 'a'},
		{"watch", optional_argument, NULL, 'w'},
		{"count", required_argument, NULL, 'c'},
		{0}};
	double d;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'j':
			so->json = true;
			break;
		case 'a':
			so->all = true;
			break;
		case 'w':
			so->watch = true;
			/* --watch SECS: the next word when it is a number */
			if (!optarg && optind < argc &&
			    !mroce_parse_double(argv[optind], 1e-9, 1e300, &d))
				optarg = argv[optind++];
			if (optarg && mroce_parse_double(optarg, 1e-3, 3600,
							 &so->secs))
				return usage("stats", "--watch takes seconds "
						      "in (0, 3600]");
			break;
		case 'c':
			if (mroce_parse_u64(optarg, 1, UINT64_MAX, &so->count))
				return usage("stats", "--count is a number "
						      "from 1");
			break;
		default:
			return usage("stats", "unknown option");
		}
	}
	if (optind != argc - 1)
		return usage("stats", "needs exactly one IFNAME");
	return 0;
}

/* fail(), and with --json a document with the error too. */
static int stats_fail(const struct stats_opts *so, const char *ifname,
		      int err)
{
	if (so->json) {
		struct json_object *doc = mroce_json_doc("mrocectl");
		char msg[160];

		snprintf(msg, sizeof(msg), "stats %s: %s: %s", ifname,
			 mroce_xdp_err_name(err), mroce_xdp_err_text(err));
		mroce_json_add_str(doc, "command", "stats");
		mroce_json_add_str(doc, "ifname", ifname);
		/* the exit status: mroce_xdp_err numbers are not errnos */
		mroce_json_set_error(doc, 1, msg);
		mroce_json_emit(stdout, doc, 0);
	}
	return fail("stats", ifname, err, NULL);
}

/* --watch: a report every so->secs seconds until interrupted or
 * so->count reports. */
static int stats_watch(const struct stats_opts *so, const char *ifname,
		       int fd, struct mroce_xdp_counters *cur)
{
	struct mroce_xdp_counters prev;
	uint64_t left = so->count;
	int err;

	signal(SIGINT, on_sigint);
	signal(SIGTERM, on_sigint);
	while (!stop && (!so->count || left)) {
		struct timespec ts = {
			.tv_sec = (time_t)so->secs,
			.tv_nsec = (long)((so->secs - (time_t)so->secs) * 1e9)};

		prev = *cur;
		nanosleep(&ts, NULL);
		if (stop)
			break;
		err = mroce_xdp_counters_read(fd, cur);
		if (err)
			return stats_fail(so, ifname, err);
		if (!so->json)
			printf("--- %s, every %.1f s\n", ifname, so->secs);
		print_counters(ifname, cur, &prev, so->secs, so->json,
			       so->all);
		if (left)
			left--;
	}
	return 0;
}

static int cmd_stats(int argc, char **argv)
{
	struct stats_opts so = {.secs = 1.0};
	struct mroce_xdp_counters cur;
	char path[256];
	const char *ifname;
	int fd, err;

	err = stats_parse(argc, argv, &so);
	if (err)
		return err;
	ifname = argv[optind];
	if (geteuid() != 0)
		return stats_fail(&so, ifname, -MROCE_XDP_E_NO_PRIV);
	err = ctl_ensure_bpffs();
	if (err < 0)
		return stats_fail(&so, ifname, err);
	snprintf(path, sizeof(path), "%s/%s/%s", MROCE_PIN_ROOT, ifname,
		 MROCE_MAP_COUNTERS);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return stats_fail(&so, ifname, -MROCE_XDP_E_NOT_ATTACHED);
	err = mroce_xdp_counters_read(fd, &cur);
	if (err)
		err = stats_fail(&so, ifname, err);
	else if (!so.watch)
		print_counters(ifname, &cur, NULL, 0, so.json,
			       so.all || so.json);
	else
		err = stats_watch(&so, ifname, fd, &cur);
	close(fd);
	return err;
}

static int cmd_help(int argc, char **argv);

static const struct command commands[] = {
	{"attach", cmd_attach, "IFNAME [--mode native|skb]",
	 "attach the XDP fast path", help_attach, false},
	{"detach", cmd_detach, "IFNAME", "remove it from an interface",
	 help_detach, false},
	{"status", cmd_status, "[IFNAME]",
	 "interfaces, program ids, mode, maps", help_status, false},
	{"stats", cmd_stats, "IFNAME [--json] [--watch [SECS]]",
	 "counters summed over CPUs", help_stats, false},
	{"bench", cmd_bench, "[--repeat N] [--json]",
	 "cost of the XDP program per packet (bpf_prog_test_run)", help_bench,
	 true},
	{"daemon", cmd_daemon, "[--sock PATH] [--json]",
	 "mroced: applications, objects, counters", help_daemon, false},
	{"help", cmd_help, "[COMMAND]", "show help", help_help, false},
};

#define N_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void print_main_help(FILE *f)
{
	char list[2048];
	size_t n = 0;

	list[0] = '\0';
	for (size_t i = 0; i < N_COMMANDS; i++) {
		if (commands[i].hidden)
			continue;
		n += (size_t)snprintf(list + n, sizeof(list) - n,
				      "    %-7s %-36s %s\n", commands[i].name,
				      commands[i].synopsis,
				      commands[i].summary);
		if (n >= sizeof(list))
			break;
	}
	fprintf(f, help_main, list);
}

static int cmd_help(int argc, char **argv)
{
	const struct command *c;

	if (argc < 2) {
		print_main_help(stdout);
		return 0;
	}
	c = find_command(argv[1]);
	if (!c)
		return usage("help", "no such command");
	fputs(c->help, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const struct command *c;
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			verbose = true;
		} else if (!strcmp(argv[i], "-h") ||
			   !strcmp(argv[i], "--help")) {
			print_main_help(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-V") ||
			   !strcmp(argv[i], "--version")) {
			mroce_print_version(stdout, "mrocectl");
			return 0;
		} else {
			fprintf(stderr,
				"mrocectl: unknown option '%s' (see "
				"mrocectl --help)\n",
				argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		print_main_help(stderr);
		return 2;
	}
	libbpf_set_print(lib_print);
	libxdp_set_print(xdp_print);
	c = find_command(argv[i]);
	if (!c) {
		fprintf(stderr,
			"mrocectl: unknown command '%s' (see mrocectl "
			"--help)\n",
			argv[i]);
		return 2;
	}
	if (want_help(argc - i, argv + i)) {
		fputs(c->help, stdout);
		return 0;
	}
	return c->handler(argc - i, argv + i);
}
