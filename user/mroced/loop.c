// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroced's one thread, one loop:
 *   drain every session's submission ring into the engine (work requests
 *   the engine cannot take yet wait in a per-QP backlog, in order) ->
 *   receive and run timers -> move engine completions into the sessions'
 *   completion rings (doorbell if the app sleeps; the CPU to an app that
 *   waits on this one, see pump()) -> transmit -> control requests and
 *   signals from epoll.
 * Adaptive polling: while there is work the loop spins (epoll with a zero
 * timeout to see control traffic, at most every 20 us while busy or
 * spinning: the system call costs more than a round); after spin_us
 * without work it announces that it sleeps in every session's shared
 * header, re-checks the rings and sleeps in epoll until a packet, a
 * doorbell, a control message, a signal or the engines' next timer.
 *
 * A session ends when its socket hangs up (the application exited or
 * died): its QPs, CQs, MRs and shared memory are released at once.
 * SIGINT/SIGTERM: every QP moves to ERR (outstanding work completes with
 * WR_FLUSH_ERR into the applications' rings), sessions are closed, and
 * mroced_run() returns for main() to undo the start-up.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "mroced.h"

/* One round: submissions into the engines; receive and timers; the
 * completions into the sessions' rings; then transmit. When completions
 * went to an application that waits on this CPU (it shares the core with
 * the daemon: a small host), the daemon first gives the CPU away once
 * and takes what the application posts in reply, so the reply leaves in
 * the same transmit batch as the ACKs instead of one round (two context
 * switches) later. */
static int pump(uint64_t now)
{
	int work = 0, n, moved, cpu = -1;
	bool hand_over = false;

	for (struct sess *s = mroced.sessions; s; s = s->next) {
		if (!s->hello || s->dead)
			continue;
		if (s->backlog)
			work += run_backlog(s, now);
		work += drain_sq(s, now, 1024);
	}
	n = mroce_ep_progress_rx(mroced.ep, now);
	if (n > 0)
		work += n;
	for (struct sess *s = mroced.sessions; s; s = s->next) {
		if (!s->hello || s->dead)
			continue;
		moved = deliver(s);
		if (!moved)
			continue;
		work += moved;
		if (cpu < 0)
			cpu = sched_getcpu();
		if (atomic_load_explicit(&s->hdr->app_cpu,
					 memory_order_relaxed) == cpu)
			hand_over = true;
	}
	if (hand_over) {
		sched_yield();
		mroced.loop[MRD_LOOP_handovers]++;
		for (struct sess *s = mroced.sessions; s; s = s->next)
			if (s->hello && !s->dead)
				work += drain_sq(s, now, 1024);
	}
	n = mroce_ep_flush(mroced.ep, now);
	if (n > 0)
		work += n;
	return work;
}

static void reap_dead(void)
{
	struct sess *s = mroced.sessions, *next;

	for (; s; s = next) {
		next = s->next;
		if (s->dead)
			sess_reap(s, "corrupted shared ring");
	}
}

/* Announces sleep; false when a ring got work meanwhile. */
static bool prepare_sleep(void)
{
	bool idle = true;

	for (struct sess *s = mroced.sessions; s; s = s->next)
		if (s->hello)
			atomic_store(&s->hdr->daemon_sleeping, 1);
	for (struct sess *s = mroced.sessions; s; s = s->next) {
		if (!s->hello)
			continue;
		/* (A backlog alone does not keep us awake, nor a ring
		 * stalled behind one: only an ACK or a timer of the engine
		 * can make room for it.) */
		if (sq_pending(s) && !s->stalled)
			idle = false;
		/* A full completion ring the app drained meanwhile: its
		 * kick may have raced with our flag (see ipc.h). */
		for (struct sess_cq *c = s->cqs; c; c = c->next)
			if (c->blocked &&
			    atomic_load(&c->hdr->head) !=
				    atomic_load(&c->hdr->tail) + c->entries)
				idle = false;
	}
	return idle;
}

static void end_sleep(void)
{
	for (struct sess *s = mroced.sessions; s; s = s->next)
		if (s->hello)
			atomic_store_explicit(&s->hdr->daemon_sleeping, 0,
					      memory_order_relaxed);
}

static void shutdown_all(void)
{
	uint64_t now = now_ns();
	struct mroce_qp_attr err_attr = {.state = MROCE_QPS_ERR, .peer = -1};
	int nq = 0, ns = 0;

	/* Outstanding work completes with flush errors in the apps' rings
	 * (the library flushes whatever does not fit, from its own records,
	 * once it sees the socket close). */
	for (struct sess *s = mroced.sessions; s; s = s->next) {
		if (!s->hello)
			continue;
		drain_sq_all(s, now);
		for (struct sess_qp *q = s->qps; q; q = q->next) {
			(void)mroce_modify_qp(s->e, q->qpn, &err_attr,
					      MROCE_QP_STATE, now);
			flush_backlog(s, q);
			nq++;
		}
		(void)deliver(s);
		{
			uint64_t one = 1; /* wake a sleeping mrv_wait_cq */

			(void)!write(s->cq_fd, &one, sizeof(one));
		}
		ns++;
	}
	(void)mroce_ep_progress(mroced.ep, now);
	while (mroced.sessions)
		sess_close(mroced.sessions);
	pr_info("shut down: %d sessions, %d QPs flushed", ns, nq);
}

/* Ends a session while handling a batch of events: later events of the
 * batch that point into it (its tags die with it) become no-ops. */
static void reap_in_batch(struct sess *s, struct epoll_event *evs, int from,
			  int nev)
{
	const void *ts = &s->tag_sock, *tk = &s->tag_kick;

	for (int j = from; j < nev; j++)
		if (evs[j].data.ptr == ts || evs[j].data.ptr == tk)
			evs[j].data.ptr = &mroced.tag_ep;
	sess_reap(s, "socket closed");
}

/* While there is work, epoll (control, signals) at most this often. */
#define EPOLL_BUSY_NS 20000ull

/* How long the loop may sleep in epoll: until the engines' next timer,
 * at most a second; false when it must not sleep (a timer is due). */
static bool sleep_time(uint64_t now, struct timespec *ts)
{
	uint64_t wake = mroce_ep_next_timer(mroced.ep, now), d;

	now = now_ns();
	if (wake <= now)
		return false;
	d = wake - now;
	if (d > 1000000000ull)
		d = 1000000000ull;
	ts->tv_sec = (time_t)(d / 1000000000ull);
	ts->tv_nsec = (long)(d % 1000000000ull);
	return true;
}

/* Handles one batch of epoll events; false when a signal ended the
 * daemon (everything is flushed and closed then). */
static bool handle_events(struct epoll_event *evs, int nev)
{
	for (int i = 0; i < nev; i++) {
		struct evtag *t = evs[i].data.ptr;
		struct signalfd_siginfo si;
		uint64_t v;

		switch (t->kind) {
		case EV_LISTEN:
			accept_one();
			break;
		case EV_SIGNAL:
			if (read(mroced.sigfd, &si, sizeof(si)) != sizeof(si))
				break;
			mroced_notify("STOPPING=1");
			pr_info("signal %u: shutting down", si.ssi_signo);
			shutdown_all();
			return false;
		case EV_EP:
			break;
		case EV_KICK:
			if (read(t->s->kick_fd, &v, sizeof(v)) == sizeof(v))
				t->s->c[MRD_SESS_kicks] += v;
			break;
		case EV_SOCK:
			if (!handle_sock(t->s) ||
			    (evs[i].events & (EPOLLHUP | EPOLLERR)))
				reap_in_batch(t->s, evs, i + 1, nev);
			break;
		}
	}
	return true;
}

int mroced_run(void)
{
	uint64_t last_work = now_ns(), last_epoll = 0;
	uint64_t *lc = mroced.loop;
	struct epoll_event evs[64];

	for (;;) {
		uint64_t now = now_ns();
		struct timespec ts = {0, 0};
		bool sleeping = false;
		int work, nev;

		work = pump(now);
		reap_dead();
		lc[MRD_LOOP_rounds]++;
		if (work > 0)
			last_work = now;
		else
			lc[MRD_LOOP_idle_rounds]++;
		if (now - last_work < mroced.spin_ns) {
			/* Busy, or spinning for more: packets and rings are
			 * polled by pump(); look at control traffic and
			 * signals only now and then (a system call per round
			 * costs more than the round, and between two packets
			 * of a bulk transfer there are many idle rounds). */
			/* An idle spin round gives the core away: on a host
			 * with as many busy processes as cores (2 here: the
			 * applications poll their memory) spinning would
			 * starve the very application whose next request
			 * it waits for, for a scheduler slice. */
			if (!work) {
				sched_yield();
				lc[MRD_LOOP_yields]++;
			}
			if (now - last_epoll < EPOLL_BUSY_NS)
				continue;
		} else if (prepare_sleep()) {
			sleeping = sleep_time(now, &ts);
		}
		if (sleeping)
			lc[MRD_LOOP_sleeps]++;
		else if (now - last_work >= mroced.spin_ns)
			lc[MRD_LOOP_sleep_aborts]++;
		else
			lc[MRD_LOOP_epoll_polls]++;
		nev = epoll_pwait2(mroced.epfd, evs, 64, &ts, NULL);
		last_epoll = now_ns();
		if (sleeping) {
			end_sleep();
			lc[nev > 0 ? MRD_LOOP_wakeups_event
				   : MRD_LOOP_wakeups_timer]++;
			lc[MRD_LOOP_sleep_us] += (last_epoll - now) / 1000u;
		}
		if (nev < 0 && errno != EINTR) {
			pr_err("epoll: %s", strerror(errno));
			return 1;
		}
		if (nev > 0 && !handle_events(evs, nev))
			return 0;
		if (nev > 0)
			last_work = now_ns();
	}
}
