// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The single Check runner: collects every registered suite and runs them. */
#include "harness.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/bpf.h>

#define MAX_SUITES 128
#define MAX_SKIPS 256
#define MAX_SCRIPTS 128

static mroce_suite_fn suites[MAX_SUITES];
static int n_suites;
static struct {
	char name[96];
	char reason[256];
} skips[MAX_SKIPS];
static int n_skips;

void mroce_register_suite(mroce_suite_fn fn)
{
	if (n_suites < MAX_SUITES)
		suites[n_suites++] = fn;
}

void mroce_skip(const char *name, const char *reason)
{
	if (n_skips >= MAX_SKIPS)
		return;
	snprintf(skips[n_skips].name, sizeof(skips[n_skips].name), "%s", name);
	snprintf(skips[n_skips].reason, sizeof(skips[n_skips].reason), "%s",
		 reason);
	n_skips++;
}

/* MROCE_MUST_RUN: the skips that are failures here, as a list of their
 * names (separated by commas or spaces), or "all". For CI, which runs as
 * root and must not lose the namespace, BPF, AF_XDP or tshark tests
 * without anyone noticing; a developer without root leaves it unset and
 * gets the skips listed. Returns how many skips it refused. */
static int must_run(const char *list, const char *name)
{
	size_t n = strlen(name);

	if (!strcmp(list, "all"))
		return 1;
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ',' || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
			return 1;
	return 0;
}

static int strict_violations(void)
{
	const char *list = getenv("MROCE_MUST_RUN");
	int bad = 0;

	if (!list || !*list)
		return 0;
	for (int i = 0; i < n_skips; i++)
		if (must_run(list, skips[i].name)) {
			printf("STRICT: %s was skipped, and MROCE_MUST_RUN "
			       "says it must run: %s\n",
			       skips[i].name, skips[i].reason);
			bad++;
		}
	return bad;
}

const char *mroce_need_root(void)
{
	return geteuid() == 0 ? NULL : "needs root (CAP_NET_ADMIN/CAP_BPF)";
}

const char *mroce_need_bpf(void)
{
	const char *why = mroce_need_root();
	struct stat st;

	if (why)
		return why;
	/* bpf(BPF_PROG_LOAD) with a bad attr returns EINVAL when bpf() exists,
	 * ENOSYS when the kernel lacks it. */
	union bpf_attr attr;
	memset(&attr, 0, sizeof(attr));
	if (syscall(__NR_bpf, BPF_PROG_LOAD, &attr, sizeof(attr)) < 0 &&
	    errno == ENOSYS)
		return "kernel has no bpf() syscall";
	if (stat("/sys/kernel/btf/vmlinux", &st) != 0)
		return "kernel has no BTF (/sys/kernel/btf/vmlinux)";
	return NULL;
}

const char *mroce_need_cmd(const char *cmd)
{
	static char why[MAX_SKIPS][96];
	static int n;
	char buf[256];

	snprintf(buf, sizeof(buf), "command -v %s >/dev/null 2>&1", cmd);
	if (system(buf) == 0)
		return NULL;
	char *w = why[n++ % MAX_SKIPS];
	snprintf(w, 96, "'%s' is not installed (make deps)", cmd);
	return w;
}

const char *mroce_src_dir(void)
{
	const char *s = getenv("MROCE_SRC");
	return s && *s ? s : ".";
}

const char *mroce_build_dir(void)
{
	const char *s = getenv("MROCE_BUILD");
	return s && *s ? s : "./build";
}

int mroce_run(const char *cmd, char *out, size_t cap)
{
	char full[4096];
	FILE *p;
	size_t n = 0;
	int st;

	snprintf(full, sizeof(full), "( %s ) 2>&1", cmd);
	p = popen(full, "r");
	if (!p)
		return -1;
	if (out && cap) {
		size_t r;
		while (n + 1 < cap &&
		       (r = fread(out + n, 1, cap - 1 - n, p)) > 0)
			n += r;
		out[n] = '\0';
	}
	/* drain the rest so the child never blocks on a full pipe */
	char sink[4096];
	while (fread(sink, 1, sizeof(sink), p) > 0)
		;
	st = pclose(p);
	if (st == -1 || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* ---- script tests: one Check test per script, looked up by _i ---- */
static struct {
	char name[96];
	char path[256];
	char args[256];
} scripts[MAX_SCRIPTS];
static int n_scripts;

START_TEST(script_test)
{
	char cmd[1024];
	static char out[1 << 16];
	int rc;

	snprintf(cmd, sizeof(cmd), "cd '%s' && MROCE_BUILD='%s' bash '%s' %s",
		 mroce_src_dir(), mroce_build_dir(), scripts[_i].path,
		 scripts[_i].args);
	rc = mroce_run(cmd, out, sizeof(out));
	if (rc != 0)
		fprintf(stderr, "---- %s (exit %d) ----\n%s\n----\n",
			scripts[_i].name, rc, out);
	ck_assert_msg(rc == 0, "%s: exit %d (output above)", scripts[_i].name,
		      rc);
}
END_TEST

void mroce_add_script_test(Suite *s, const char *name, const char *path,
			   const char *args, int timeout_s)
{
	char cmd[1024], out[512];
	int rc, i;
	TCase *tc;

	if (n_scripts >= MAX_SCRIPTS)
		return;
	snprintf(cmd, sizeof(cmd), "cd '%s' && MROCE_BUILD='%s' bash '%s' --probe",
		 mroce_src_dir(), mroce_build_dir(), path);
	rc = mroce_run(cmd, out, sizeof(out));
	if (rc == 77) {
		out[strcspn(out, "\n")] = '\0';
		mroce_skip(name, out[0] ? out : "probe said skip");
		return;
	}
	if (rc != 0) {
		/* a broken probe is a failure, not a skip */
		out[strcspn(out, "\n")] = '\0';
		fprintf(stderr, "probe of %s failed (%d): %s\n", path, rc, out);
	}
	i = n_scripts++;
	snprintf(scripts[i].name, sizeof(scripts[i].name), "%s", name);
	snprintf(scripts[i].path, sizeof(scripts[i].path), "%s", path);
	snprintf(scripts[i].args, sizeof(scripts[i].args), "%s",
		 args ? args : "");
	tc = tcase_create(name);
	tcase_set_timeout(tc, timeout_s);
	tcase_add_loop_test(tc, script_test, i, i + 1);
	suite_add_tcase(s, tc);
}

void mroce_hexdiff(const char *what, const void *got, size_t got_len,
		   const void *want, size_t want_len)
{
	const uint8_t *g = got, *w = want;
	size_t n = got_len > want_len ? got_len : want_len;

	fprintf(stderr, "%s: got %zu bytes, want %zu bytes\n", what, got_len,
		want_len);
	for (size_t off = 0; off < n; off += 16) {
		fprintf(stderr, "%04zx  ", off);
		for (size_t i = off; i < off + 16; i++)
			if (i < got_len)
				fprintf(stderr, "%02x", g[i]);
			else
				fprintf(stderr, "  ");
		fprintf(stderr, " | ");
		for (size_t i = off; i < off + 16; i++) {
			if (i < want_len)
				fprintf(stderr, "%02x", w[i]);
			else
				fprintf(stderr, "  ");
		}
		int diff = 0;
		for (size_t i = off; i < off + 16 && i < n; i++)
			if (i >= got_len || i >= want_len || g[i] != w[i])
				diff = 1;
		fprintf(stderr, "%s\n", diff ? "  <--" : "");
	}
}

int main(void)
{
	int strict;
	SRunner *sr = NULL;
	int failed;

	for (int i = 0; i < n_suites; i++) {
		Suite *s = suites[i]();
		if (!sr)
			sr = srunner_create(s);
		else
			srunner_add_suite(sr, s);
	}
	if (!sr) {
		fprintf(stderr, "no test suites registered\n");
		return 1;
	}
	/* Run quietly, then list skips and totals, and let Check print its own
	 * summary line ("100%: Checks: N, Failures: 0, Errors: 0") last. */
	srunner_run_all(sr, CK_SILENT);
	failed = srunner_ntests_failed(sr);
	int run = srunner_ntests_run(sr);

	for (int i = 0; i < n_skips; i++)
		printf("SKIP: %s: %s\n", skips[i].name, skips[i].reason);
	printf("%d passed, %d failed, %d skipped\n", run - failed, failed,
	       n_skips);
	strict = strict_violations();
	fflush(stdout);
	srunner_print(sr, getenv("CK_VERBOSITY") ? CK_ENV : CK_NORMAL);
	srunner_free(sr);
	return failed || strict ? 1 : 0;
}
