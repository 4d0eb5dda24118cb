/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* mrocectl's command table entry and the commands in other files. */
#ifndef MROCECTL_H
#define MROCECTL_H

#include <stdbool.h>

struct command {
	const char *name;
	int (*handler)(int argc, char **argv); /* argv[0] = name */
	const char *synopsis;
	const char *summary;
	const char *help; /* man-page style, printed by --help */
	bool hidden;	  /* not listed by `mrocectl --help` */
};

/* bench.c */
extern const char help_bench[];
int cmd_bench(int argc, char **argv);

/* daemon_cmd.c */
extern const char help_daemon[];
int cmd_daemon(int argc, char **argv);
/* One line on the daemon at the default socket (for `status`). */
void daemon_status_line(void);

#endif /* MROCECTL_H */
