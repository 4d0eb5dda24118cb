// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mrocectl daemon: ask a running mroced (its control socket,
 * user/ipc/ipc.h) for its applications, objects and counters. It talks
 * through libmroce's protocol client (user/lib/dclient.h), the same one
 * the library's daemon mode uses, and prints JSON through json-c
 * (user/common/json.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../ipc/ipc.h"
#include "../common/json.h"
#include "../lib/dclient.h"
#include "mroce/engine.h"
#include "mroce/io.h"
#include "mroce/mroce.h"
#include "mrocectl.h"

#define DAEMON_CMD_TIMEOUT_S 5
#define STATUS_LINE_TIMEOUT_S 2

const char help_daemon[] =
	"NAME\n"
	"    mrocectl daemon - state of the mroced daemon\n"
	"\n"
	"SYNOPSIS\n"
	"    mrocectl daemon [--sock PATH] [--json]\n"
	"\n"
	"DESCRIPTION\n"
	"    Asks mroced over its control socket for the number of\n"
	"    applications (sessions) and of their PDs, MRs, CQs and QPs, the\n"
	"    daemon's refused-input counters, its backend's packet counters "
	"and\n"
	"    the counters of both engines (MetaRoCE, RoCEv2), the event "
	"loop's\n"
	"    counters (rounds, yields, sleeps, wake-ups), then one line per\n"
	"    application (pid, transport, objects, queue depths) with its\n"
	"    counters as the daemon and as its library see them (entries,\n"
	"    batches, stalls, doorbells, naps, bytes copied). Each counter "
	"is\n"
	"    described in docs/architecture.md, \"Counters of daemon "
	"mode\".\n"
	"    Needs no privileges beyond access to the socket.\n"
	"\n"
	"OPTIONS\n"
	"    -s, --sock=PATH   control socket (default " MRD_DEFAULT_SOCK ")\n"
	"    -j, --json        one JSON object\n"
	"\n"
	"EXIT STATUS\n"
	"    0 success; 1 mroced is not running or did not answer; 2 bad "
	"usage.\n"
	"\n"
	"EXAMPLE\n"
	"    mrocectl daemon --sock /tmp/mroced.sock --json\n";

static const char *const io_names[] = {
#define X_NAME(n) #n,
	MROCE_IO_STATS(X_NAME)
#undef X_NAME
};
static const char *const eng_names[] = {
#define X_NAME(n) #n,
	MROCE_ENGINE_STATS(X_NAME)
#undef X_NAME
};
static const char *const ctl_names[] = {
#define X_NAME(n) #n,
	MRD_CTL_COUNTERS(X_NAME)
#undef X_NAME
};
static const char *const loop_names[] = {
#define X_NAME(n) #n,
	MRD_LOOP_COUNTERS(X_NAME)
#undef X_NAME
};
static const char *const sess_names[] = {
#define X_NAME(n) #n,
	MRD_SESS_COUNTERS(X_NAME)
#undef X_NAME
};
static const char *const app_names[] = {
#define X_NAME(n) #n,
	MRD_APP_COUNTERS(X_NAME)
#undef X_NAME
};
_Static_assert(sizeof(io_names) / sizeof(io_names[0]) == MROCE_IO_NSTATS,
	       "io stats");
_Static_assert(sizeof(eng_names) / sizeof(eng_names[0]) == MROCE_ENGINE_NSTATS,
	       "eng stats");
_Static_assert(sizeof(ctl_names) / sizeof(ctl_names[0]) == MRD_CTL_NCOUNTERS,
	       "ctl counters");
_Static_assert(sizeof(loop_names) / sizeof(loop_names[0]) ==
		       MRD_LOOP_NCOUNTERS,
	       "loop counters");
_Static_assert(sizeof(sess_names) / sizeof(sess_names[0]) ==
		       MRD_SESS_NCOUNTERS,
	       "session counters");
_Static_assert(sizeof(app_names) / sizeof(app_names[0]) == MRD_APP_NCOUNTERS,
	       "application counters");

/* What the daemon answered: STATUS for each engine, and the sessions. */
struct daemon_view {
	struct mrd_status st;  /* STATUS, MetaRoCE engine's counters */
	struct mrd_status rv2; /* STATUS, RoCEv2 engine's counters */
	char addr[INET6_ADDRSTRLEN];
	char ifname[sizeof(((struct mrd_status *)0)->ifname) + 1];
	const char *backend;
};

static int ask_status(struct mrd_client *c, uint8_t transport,
		      struct mrd_status *st)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err;

	q.u.status.transport = transport;
	err = mrd_client_call(c, MRD_OP_STATUS, &q, &r, -1, NULL, 0);
	if (!err)
		*st = r.u.status;
	return err;
}

/* Session number i (0, 1, ...): 0, or an error past the last one. */
static int ask_app(struct mrd_client *c, uint32_t i, struct mrd_app_info *a)
{
	struct mrd_req q = {0};
	struct mrd_rep r;
	int err;

	q.u.status.index = i;
	err = mrd_client_call(c, MRD_OP_APP_INFO, &q, &r, -1, NULL, 0);
	if (!err)
		*a = r.u.app;
	return err;
}

static int ask_view(struct mrd_client *c, struct daemon_view *v)
{
	int err = ask_status(c, MRV_TRANSPORT_METAROCE, &v->st);

	if (!err)
		err = ask_status(c, MRV_TRANSPORT_ROCEV2, &v->rv2);
	if (err)
		return err;
	snprintf(v->addr, sizeof(v->addr), "?");
	inet_ntop(v->st.family, v->st.local, v->addr, sizeof(v->addr));
	memcpy(v->ifname, v->st.ifname, sizeof(v->st.ifname));
	v->ifname[sizeof(v->st.ifname)] = 0;
	v->backend = v->st.backend == MRV_BACKEND_AFXDP ? "afxdp" : "udp";
	return 0;
}

static const char *transport_name(uint8_t t)
{
	return t == MRV_TRANSPORT_ROCEV2 ? "rocev2" : "metaroce";
}

/* ------------------------------------------------------------------ */
/* Text                                                                 */
/* ------------------------------------------------------------------ */
static void print_list(const char *title, const char *const *names,
		       const uint64_t *v, int n)
{
	printf("%s:\n", title);
	for (int i = 0; i < n; i++)
		if (v[i])
			printf("  %-20s %14llu\n", names[i],
			       (unsigned long long)v[i]);
}

static void print_text(const char *path, const struct daemon_view *v,
		       struct mrd_client *c)
{
	const struct mrd_status *st = &v->st;
	struct mrd_app_info a;

	printf("mroced pid %u at %s: %s %s%s%s, mtu %u, up %.1f s\n", st->pid,
	       path, v->addr, v->backend, v->ifname[0] ? " " : "", v->ifname,
	       st->mtu, (double)st->uptime_ms / 1000.0);
	printf("apps %u  pds %u  mrs %u  cqs %u  qps %u\n", st->apps, st->pds,
	       st->mrs, st->cqs, st->qps);
	print_list("control", ctl_names, st->ctl, MRD_CTL_NCOUNTERS);
	print_list("loop", loop_names, st->loop, MRD_LOOP_NCOUNTERS);
	print_list("io", io_names, st->io, MROCE_IO_NSTATS);
	print_list("metaroce", eng_names, st->eng, MROCE_ENGINE_NSTATS);
	print_list("rocev2", eng_names, v->rv2.eng, MROCE_ENGINE_NSTATS);
	for (uint32_t i = 0; ask_app(c, i, &a) == 0; i++) {
		if (!i)
			printf("%-8s %-8s %-9s %5s %5s %5s %5s %7s %7s %7s\n",
			       "PID", "SESSION", "TRANSPORT", "PDS", "MRS",
			       "CQS", "QPS", "BACKLOG", "SYNTH", "SQ_FILL");
		printf("%-8u %-8u %-9s %5u %5u %5u %5u %7u %7u %7u\n", a.pid,
		       a.session, transport_name(a.transport), a.pds, a.mrs,
		       a.cqs, a.qps, a.backlog, a.synth, a.sq_fill);
		print_list("  daemon", sess_names, a.sess, MRD_SESS_NCOUNTERS);
		print_list("  library", app_names, a.app, MRD_APP_NCOUNTERS);
	}
}

/* ------------------------------------------------------------------ */
/* JSON (key scheme: user/common/json.h)                                */
/* ------------------------------------------------------------------ */
static struct json_object *json_doc(const char *path)
{
	struct json_object *doc = mroce_json_doc("mrocectl");

	mroce_json_add_str(doc, "command", "daemon");
	mroce_json_add_str(doc, "sock", path);
	return doc;
}

static void json_list(struct json_object *doc, const char *title,
		      const char *const *names, const uint64_t *v, int n)
{
	struct json_object *o = json_object_new_object();

	for (int i = 0; i < n; i++)
		mroce_json_add_u64(o, names[i], v[i]);
	json_object_object_add(doc, title, o);
}

/* The objects of one session, or of the whole daemon. */
static void json_counts(struct json_object *o, uint32_t pds, uint32_t mrs,
			uint32_t cqs, uint32_t qps)
{
	mroce_json_add_u64(o, "pds", pds);
	mroce_json_add_u64(o, "mrs", mrs);
	mroce_json_add_u64(o, "cqs", cqs);
	mroce_json_add_u64(o, "qps", qps);
}

static int print_json(const char *path, const struct daemon_view *v,
		      struct mrd_client *c)
{
	const struct mrd_status *st = &v->st;
	struct json_object *doc = json_doc(path), *apps;
	struct mrd_app_info a;

	mroce_json_add_u64(doc, "pid", st->pid);
	mroce_json_add_str(doc, "local", v->addr);
	mroce_json_add_str(doc, "backend", v->backend);
	mroce_json_add_str(doc, "ifname", v->ifname);
	mroce_json_add_u64(doc, "mtu_bytes", st->mtu);
	mroce_json_add_u64(doc, "uptime_ms", st->uptime_ms);
	mroce_json_add_u64(doc, "apps", st->apps);
	json_counts(doc, st->pds, st->mrs, st->cqs, st->qps);
	json_list(doc, "control", ctl_names, st->ctl, MRD_CTL_NCOUNTERS);
	json_list(doc, "loop", loop_names, st->loop, MRD_LOOP_NCOUNTERS);
	json_list(doc, "io", io_names, st->io, MROCE_IO_NSTATS);
	json_list(doc, "metaroce", eng_names, st->eng, MROCE_ENGINE_NSTATS);
	json_list(doc, "rocev2", eng_names, v->rv2.eng, MROCE_ENGINE_NSTATS);
	apps = json_object_new_array();
	for (uint32_t i = 0; ask_app(c, i, &a) == 0; i++) {
		struct json_object *o = json_object_new_object();

		mroce_json_add_u64(o, "pid", a.pid);
		mroce_json_add_u64(o, "session", a.session);
		mroce_json_add_str(o, "transport", transport_name(a.transport));
		json_counts(o, a.pds, a.mrs, a.cqs, a.qps);
		mroce_json_add_u64(o, "backlog", a.backlog);
		mroce_json_add_u64(o, "synth", a.synth);
		mroce_json_add_u64(o, "sq_fill", a.sq_fill);
		json_list(o, "daemon", sess_names, a.sess, MRD_SESS_NCOUNTERS);
		json_list(o, "library", app_names, a.app, MRD_APP_NCOUNTERS);
		json_object_array_add(apps, o);
	}
	json_object_object_add(doc, "app_list", apps);
	return mroce_json_emit(stdout, doc, 0) < 0 ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* The command                                                          */
/* ------------------------------------------------------------------ */
/* Options into *path and *json: -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, const char **path, bool *json)
{
	static const struct option lo[] = {
		{"sock", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{0}};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "s:j", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			*path = optarg;
			break;
		case 'j':
			*json = true;
			break;
		default:
			fprintf(stderr, "Try 'mrocectl daemon --help'.\n");
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr,
			"mrocectl daemon: unexpected argument '%s'\n"
			"Try 'mrocectl daemon --help'.\n",
			argv[optind]);
		return 2;
	}
	return -1;
}

/* Reports a failure to reach (connected: false) or to ask the daemon:
 * exit status 1. With --json, one document with an "error" too. */
static int daemon_failed(const char *path, int err, bool connected, bool json)
{
	char msg[320];

	if (!connected && (err == -EACCES || err == -EPERM))
		snprintf(msg, sizeof(msg), "socket %s: %s", path,
			 mrd_client_strerror(err));
	else if (!connected)
		snprintf(msg, sizeof(msg), "mroced is not running (socket %s)",
			 path);
	else
		snprintf(msg, sizeof(msg), "mroced at %s: %s", path,
			 mrd_client_strerror(err));
	fprintf(stderr, "mrocectl daemon: %s\n", msg);
	if (json) {
		struct json_object *doc = json_doc(path);

		mroce_json_set_error(doc, err, msg);
		(void)mroce_json_emit(stdout, doc, 0);
	}
	return 1;
}

int cmd_daemon(int argc, char **argv)
{
	const char *path = MRD_DEFAULT_SOCK;
	struct daemon_view v;
	struct mrd_client c;
	bool json = false;
	int rc, err;

	rc = parse_args(argc, argv, &path, &json);
	if (rc >= 0)
		return rc;
	err = mrd_client_connect(&c, path, DAEMON_CMD_TIMEOUT_S);
	if (err == -ENAMETOOLONG) {
		fprintf(stderr, "mrocectl daemon: socket path too long\n");
		return 2;
	}
	if (err)
		return daemon_failed(path, err, false, json);
	err = ask_view(&c, &v);
	if (err) {
		mrd_client_close(&c);
		return daemon_failed(path, err, true, json);
	}
	if (json) {
		rc = print_json(path, &v, &c);
	} else {
		print_text(path, &v, &c);
		rc = 0;
	}
	mrd_client_close(&c);
	return rc;
}

void daemon_status_line(void)
{
	struct mrd_client c;
	struct mrd_status st;

	int err = mrd_client_connect(&c, MRD_DEFAULT_SOCK,
				     STATUS_LINE_TIMEOUT_S);

	if (err == -EACCES || err == -EPERM) {
		printf("mroced: socket %s: %s\n", MRD_DEFAULT_SOCK,
		       mrd_client_strerror(err));
		return;
	}
	if (err) {
		printf("mroced: not running (socket %s)\n", MRD_DEFAULT_SOCK);
		return;
	}
	if (ask_status(&c, MRV_TRANSPORT_METAROCE, &st))
		printf("mroced: not answering (socket %s)\n", MRD_DEFAULT_SOCK);
	else
		printf("mroced: pid %u at %s: apps %u  pds %u  mrs %u  cqs %u  "
		       "qps %u (mrocectl daemon: more)\n",
		       st.pid, MRD_DEFAULT_SOCK, st.apps, st.pds, st.mrs,
		       st.cqs, st.qps);
	mrd_client_close(&c);
}
