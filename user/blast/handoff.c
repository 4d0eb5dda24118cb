// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_blast --handoff: what it costs one process to hand work to another
 * through shared memory, the way libmroce and mroced hand each other work
 * requests and completions (docs/architecture.md, "Where a message's time
 * goes"). Two processes pass a token back and forth through one shared
 * word, each waiting for its turn by polling the word and calling
 * sched_yield() between polls, as both sides of the rings do. With both on
 * one core (--cpus C,C) every pass is a switch between the processes; on
 * two cores (--cpus C,D) it is a cache line crossing. The reported sample
 * is one pass (half the token's round trip), the unit of write_lat.
 */
#include "blast.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define HANDOFF_STOP UINT64_MAX		/* parent: finished */
#define HANDOFF_FAILED (UINT64_MAX - 1)	/* child: cannot run */
#define HANDOFF_READY 2			/* child: runs on its CPU */

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* Wait until *w is no longer `was`; its new value. */
static uint64_t wait_change(_Atomic uint64_t *w, uint64_t was)
{
	uint64_t v;

	while ((v = atomic_load_explicit(w, memory_order_acquire)) == was &&
	       !stop)
		sched_yield();
	return v;
}

/* The child: says it runs where it should, then answers every odd value
 * with the next even one. */
static void echo(_Atomic uint64_t *w, int cpu)
{
	uint64_t v = HANDOFF_READY;

	if (pin(cpu) < 0) {
		atomic_store(w, HANDOFF_FAILED);
		_exit(1);
	}
	atomic_store(w, v);
	for (;;) {
		v = wait_change(w, v);
		if (v == HANDOFF_STOP || stop || getppid() == 1)
			_exit(0);
		if (v & 1)
			atomic_store_explicit(w, ++v, memory_order_release);
	}
}

int handoff(const struct opts *o, struct result *r)
{
	long count = o->count > 0 ? o->count : 10000;
	_Atomic uint64_t *w;
	double t0;
	pid_t child;
	int err;

	r->lat = calloc((size_t)count, sizeof(*r->lat));
	w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		 -1, 0);
	if (!r->lat || w == MAP_FAILED) {
		fprintf(stderr, "mroce_blast: --handoff: out of memory\n");
		return 1;
	}
	atomic_store(w, 0);
	child = fork();
	if (child < 0) {
		fprintf(stderr, "mroce_blast: fork: %s\n", strerror(errno));
		return 1;
	}
	if (!child) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		echo(w, o->cpus[1]);
	}
	err = pin(o->cpus[0]);
	if (err < 0) {
		fprintf(stderr, "mroce_blast: --cpus: cannot run on CPU %d: %s\n",
			o->cpus[0], strerror(-err));
		kill(child, SIGTERM);
		waitpid(child, NULL, 0);
		return 1;
	}
	r->mode = "handoff";
	t0 = now_s();
	if (wait_change(w, 0) == HANDOFF_READY) {
		/* pass i: we write 2i + 1, the child answers 2i + 2 */
		for (uint64_t i = 1; i <= (uint64_t)count && !stop; i++) {
			double ts = now_s();
			uint64_t v = 2 * i + 1;

			atomic_store_explicit(w, v, memory_order_release);
			if (wait_change(w, v) != v + 1)
				break;
			r->lat[r->packets++] = (now_s() - ts) * 1e6 / 2;
		}
	}
	r->seconds = now_s() - t0;
	atomic_store(w, HANDOFF_STOP);
	if (waitpid(child, &err, 0) < 0 || !WIFEXITED(err) ||
	    WEXITSTATUS(err)) {
		fprintf(stderr, "mroce_blast: --handoff: the second process "
				"could not run on CPU %d\n", o->cpus[1]);
		return 1;
	}
	munmap((void *)w, 4096);
	qsort(r->lat, r->packets, sizeof(*r->lat), cmp_double);
	return r->packets ? 0 : 1;
}
