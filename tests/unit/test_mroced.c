// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Tests of mroced as a service (user/mroced/main.c): the systemd readiness
 * protocol (READY=1 on $NOTIFY_SOCKET once the control socket listens,
 * at a path and at an abstract address; STOPPING=1 on SIGTERM),
 * --sock-group, --version, the removed --foreground, and the message a
 * user without access to the socket gets. Each test starts
 * its own daemon (UDP backend on 127.a.b.9, a and b from the pid, so
 * parallel runs never share ports); it gets SIGTERM when the test process
 * dies (PR_SET_PDEATHSIG).
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"

/* The sanitizer build of the daemon when it was built, else the release
 * one ("" when neither is). */
static const char *mroced_bin(void)
{
	static char bin[512];

	snprintf(bin, sizeof(bin), "%s/tests/mroced_san", mroce_build_dir());
	if (access(bin, X_OK))
		snprintf(bin, sizeof(bin), "%s/bin/mroced", mroce_build_dir());
	return access(bin, X_OK) ? "" : bin;
}

static void local_addr(char *out, size_t len)
{
	pid_t p = getpid();

	snprintf(out, len, "127.%u.%u.9", 1 + p % 250, (p / 250) % 256);
}

/* A datagram socket bound at name (a path, or '@' + an abstract name), as
 * a service manager binds its notification socket. */
static int notify_listener(const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_lt(n, sizeof(a.sun_path));
	memcpy(a.sun_path, name, n);
	if (name[0] == '@')
		a.sun_path[0] = 0;
	else
		unlink(name);
	ck_assert_int_eq(
		bind(fd, (struct sockaddr *)&a,
		     (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)),
		0);
	return fd;
}

/* Starts the daemon with NOTIFY_SOCKET=notify (NULL: unset) and extra
 * arguments after --local/--sock. */
static pid_t start(const char *sock, const char *notify, const char *arg1,
		   const char *arg2)
{
	pid_t parent = getpid(), pid;
	char addr[32];

	local_addr(addr, sizeof(addr));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		if (null >= 0 && !getenv("MROCE_TEST_VERBOSE"))
			dup2(null, 2);
		if (notify)
			setenv("NOTIFY_SOCKET", notify, 1);
		else
			unsetenv("NOTIFY_SOCKET");
		execl(mroced_bin(), "mroced", "--local", addr, "--sock", sock,
		      arg1, arg2, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* The next notification, "" after 20 s without one. */
static void read_state(int fd, char *buf, size_t cap)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ssize_t n = 0;

	if (poll(&p, 1, 20000) == 1)
		n = recv(fd, buf, cap - 1, 0);
	buf[n > 0 ? n : 0] = 0;
}

static bool sock_listens(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	bool ok;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a));
	if (fd >= 0)
		close(fd);
	return ok;
}

static int stop(pid_t pid)
{
	int st = -1;

	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	return st;
}

/* _i = 0: NOTIFY_SOCKET is a path; 1: an abstract address ('@'). */
START_TEST(mroced_notify__ready_once_listening_stopping_on_sigterm)
{
	char sock[108], name[108], state[256];
	int nfd, st;
	pid_t pid;

	snprintf(sock, sizeof(sock), "/tmp/mroced-notify-%d.sock",
		 (int)getpid());
	snprintf(name, sizeof(name), "%s/tmp/mroced-notify-%d-%d.ntf",
		 _i ? "@" : "", (int)getpid(), _i);
	nfd = notify_listener(name);
	pid = start(sock, name, NULL, NULL);
	read_state(nfd, state, sizeof(state));
	ck_assert_str_eq(state, "READY=1");
	ck_assert_msg(sock_listens(sock), "READY=1 before %s listens", sock);
	kill(pid, SIGTERM);
	read_state(nfd, state, sizeof(state));
	ck_assert_str_eq(state, "STOPPING=1");
	waitpid(pid, &st, 0);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	close(nfd);
	if (!_i)
		unlink(name);
	unlink(sock);
}
END_TEST

START_TEST(mroced_sock_group__socket_owned_by_group_mode_0660)
{
	char sock[108], gid[16];
	struct stat sb;
	pid_t pid;

	snprintf(sock, sizeof(sock), "/tmp/mroced-group-%d.sock",
		 (int)getpid());
	snprintf(gid, sizeof(gid), "%u", (unsigned int)getgid());
	pid = start(sock, NULL, "--sock-group", gid);
	for (int i = 0; i < 2000 && !sock_listens(sock); i++)
		usleep(10000);
	ck_assert_int_eq(stat(sock, &sb), 0);
	ck_assert_uint_eq(sb.st_gid, getgid());
	ck_assert_uint_eq(sb.st_mode & 0777, 0660);
	ck_assert_int_eq(stop(pid), 0);
	unlink(sock);
}
END_TEST

START_TEST(mroced_options__version_and_removed_foreground)
{
	char cmd[600], out[256];

	snprintf(cmd, sizeof(cmd), "%s --version", mroced_bin());
	ck_assert_int_eq(mroce_run(cmd, out, sizeof(out)), 0);
	ck_assert_msg(!strncmp(out, "mroced (mroce) ", 15), "got '%s'", out);
	snprintf(cmd, sizeof(cmd), "%s --local 127.0.0.1 --foreground",
		 mroced_bin());
	ck_assert_int_eq(mroce_run(cmd, out, sizeof(out)), 2);
}
END_TEST

/* A user who may not use the socket is told how to get access, not that
 * mroced is not running (mrocectl daemon, as uid/gid 65534 via setpriv). */
START_TEST(mroced_sock_mode__eacces_says_how_to_get_access)
{
	char sock[108], cmd[900], out[1024];
	pid_t pid;

	snprintf(sock, sizeof(sock), "/tmp/mroced-eacces-%d.sock",
		 (int)getpid());
	pid = start(sock, NULL, "--sock-mode", "0600");
	for (int i = 0; i < 2000 && !sock_listens(sock); i++)
		usleep(10000);
	snprintf(cmd, sizeof(cmd),
		 "setpriv --reuid=65534 --regid=65534 --clear-groups "
		 "%s/bin/mrocectl daemon --sock %s",
		 mroce_build_dir(), sock);
	ck_assert_int_eq(mroce_run(cmd, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "no permission") &&
			      strstr(out, "--sock-group") &&
			      !strstr(out, "not running"),
		      "got '%s'", out);
	ck_assert_int_eq(stop(pid), 0);
	unlink(sock);
}
END_TEST

Suite *mroced_suite(void)
{
	Suite *s = suite_create("mroced");
	TCase *tc = tcase_create("mroced");

	if (!*mroced_bin()) {
		mroce_skip("mroced", "mroced is not built");
		return s;
	}
	tcase_add_loop_test(
		tc, mroced_notify__ready_once_listening_stopping_on_sigterm, 0,
		2);
	tcase_add_test(tc, mroced_sock_group__socket_owned_by_group_mode_0660);
	tcase_add_test(tc, mroced_options__version_and_removed_foreground);
	if (geteuid() == 0 && !access("/usr/bin/setpriv", X_OK))
		tcase_add_test(tc,
			       mroced_sock_mode__eacces_says_how_to_get_access);
	else
		mroce_skip("mroced_sock_mode__eacces_says_how_to_get_access",
			   "needs root and setpriv (util-linux) to run a "
			   "client as another user");
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
MROCE_SUITE(mroced_suite)
