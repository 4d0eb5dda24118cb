// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of the engine-driving simulation (user/sim/sim.c): configuration,
 * the data pattern, the liveness watchdog and run-to-run determinism. */
#include "../harness.h"
#include "mroce/engine.h"
#include "mroce/sim.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* A small, quick configuration: 4 x 10G planes, 256 KiB per QP. */
static void small_cfg(struct mroce_sim_cfg *c, uint8_t transport)
{
	mroce_sim_cfg_default(c);
	c->transport = transport;
	c->bytes = 256 << 10;
	c->msg_size = 16 << 10;
	c->outstanding = 8;
	c->time_limit_ns = 2000000000ull;
	c->stall_ns = 200000000ull;
	for (int i = 0; i < MROCE_SIM_MAX_PATHS; i++)
		c->net.path[i].rate_bps = 10000000000ull;
	c->net.host.rate_bps = 40000000000ull;
}

static void run(const struct mroce_sim_cfg *c, struct mroce_sim_result *r)
{
	struct mroce_sim *s;
	int err = mroce_sim_create(c, &s);

	ck_assert_msg(err == 0, "mroce_sim_create: %d", err);
	ck_assert_int_eq(mroce_sim_run(s, r), 0);
	mroce_sim_destroy(s);
}

START_TEST(mroce_sim_pattern__depends_on_conn_and_offset)
{
	int same_conn = 0, same_off = 0, zero = 0;

	for (uint64_t off = 0; off < 4096; off++) {
		same_conn += mroce_sim_pattern(1, off) ==
			     mroce_sim_pattern(2, off);
		same_off += mroce_sim_pattern(1, off) ==
			    mroce_sim_pattern(1, off + 4096);
		zero += mroce_sim_pattern(3, off) == 0;
	}
	/* about 1/256 collisions each way: nowhere near a constant */
	ck_assert_int_lt(same_conn, 64);
	ck_assert_int_lt(same_off, 64);
	ck_assert_int_lt(zero, 64);
	ck_assert_uint_eq(mroce_sim_pattern(7, 12345),
			  mroce_sim_pattern(7, 12345));
}
END_TEST

START_TEST(mroce_sim_create__rejects_bad_config)
{
	struct mroce_sim_cfg c;
	struct mroce_sim *s = NULL;

	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.msg_size = 0;
	ck_assert_int_eq(mroce_sim_create(&c, &s), -EINVAL);
	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.senders = 0;
	ck_assert_int_eq(mroce_sim_create(&c, &s), -EINVAL);
	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.outstanding = 0;
	ck_assert_int_eq(mroce_sim_create(&c, &s), -EINVAL);
	small_cfg(&c, 7);
	ck_assert_int_eq(mroce_sim_create(&c, &s), -EINVAL);
	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.op = 9;
	ck_assert_int_eq(mroce_sim_create(&c, &s), -EINVAL);
	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.net.npaths = 0;
	ck_assert_int_eq(mroce_sim_create(&c, &s), -EINVAL);
	ck_assert_ptr_null(s);
}
END_TEST

START_TEST(mroce_sim_verdict_str__names_every_verdict)
{
	ck_assert_str_eq(mroce_sim_verdict_str(MROCE_SIM_OK), "ok");
	for (int v = MROCE_SIM_INTEGRITY; v <= MROCE_SIM_ENGINE; v++)
		ck_assert_str_ne(mroce_sim_verdict_str(v), "unknown");
	ck_assert_str_eq(mroce_sim_verdict_str(99), "unknown");
}
END_TEST

/* Every plane dead from the start: the run must end with an error
 * completion or a detected hang, never "ok" and never run forever. */
START_TEST(mroce_sim_run__dead_fabric_is_reported_not_hung)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;

	small_cfg(&c, _i ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE);
	for (int i = 0; i < 4; i++)
		c.net.path[i].blackhole_at = 0;
	c.time_limit_ns = 5000000000ull;
	run(&c, &r);
	ck_assert_msg(r.verdict == MROCE_SIM_ERROR_WC ||
			      r.verdict == MROCE_SIM_HANG,
		      "verdict %s (%s)", mroce_sim_verdict_str(r.verdict),
		      r.why);
	ck_assert_uint_eq(r.completed_bytes, 0);
	ck_assert_uint_le(r.end_ns, c.time_limit_ns);
}
END_TEST

START_TEST(mroce_sim_run__clean_transfer_completes)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;

	small_cfg(&c, _i ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE);
	run(&c, &r);
	ck_assert_msg(r.verdict == MROCE_SIM_OK, "%s: %s",
		      mroce_sim_verdict_str(r.verdict), r.why);
	ck_assert_uint_eq(r.completed_bytes, 256 << 10);
	ck_assert_uint_eq(r.msgs, 16);
	ck_assert(r.goodput_gbps > 0);
	ck_assert(r.goodput_gbps <= r.capacity_gbps * 1.001);
	ck_assert(r.fct_p50_us > 0 && r.fct_p50_us <= r.fct_p99_us);
	ck_assert_uint_eq(r.drops_loss + r.drops_blackhole, 0);
	ck_assert_uint_eq(r.error_wcs, 0);
}
END_TEST

START_TEST(mroce_sim_series__bins_add_up_to_completed_bytes)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;
	struct mroce_sim *s;
	const uint64_t *bins;
	uint64_t bin_ns, sum = 0;
	uint32_t n;

	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.net.path[2].blackhole_at = 50000;
	ck_assert_int_eq(mroce_sim_create(&c, &s), 0);
	ck_assert_int_eq(mroce_sim_series(s, &bins, &bin_ns), 0);
	ck_assert_int_eq(mroce_sim_run(s, &r), 0);
	n = mroce_sim_series(s, &bins, &bin_ns);
	ck_assert_uint_gt(n, 1);
	ck_assert_uint_ge(bin_ns, 5000);
	ck_assert_uint_ge((uint64_t)n * bin_ns, r.end_ns - r.start_ns);
	for (uint32_t i = 0; i < n; i++)
		sum += bins[i];
	ck_assert_uint_eq(sum, r.completed_bytes);
	mroce_sim_destroy(s);
}
END_TEST

/* RoCEv2 pins its QP to one plane: losing another plane costs nothing,
 * so the recovery metric must say 0 and goodput must hold. */
START_TEST(mroce_sim_run__unused_plane_failure_needs_no_recovery)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;
	int used = -1;

	small_cfg(&c, MROCE_TRANSPORT_ROCEV2);
	c.bytes = 4 << 20;
	c.start_psn = 100;
	run(&c, &r);
	ck_assert_int_eq(r.verdict, MROCE_SIM_OK);
	for (int i = 0; i < 4; i++)
		if (r.path_share[i] > 0.99)
			used = i;
	ck_assert_int_ge(used, 0);
	c.net.path[(used + 1) % 4].blackhole_at = r.end_ns / 2;
	run(&c, &r);
	ck_assert_msg(r.verdict == MROCE_SIM_OK, "%s", r.why);
	ck_assert(r.pre_fail_gbps > 0);
	ck_assert_msg(r.recovery_us == 0, "recovery %.1f us", r.recovery_us);
	ck_assert_uint_eq(r.drops_blackhole, 0);
}
END_TEST

/* A flapping plane (flap_ns) is down for flap_ns from blackhole_at, up
 * for flap_ns, down again; without flap_ns it stays down. */
START_TEST(mroce_sim_link_down__blackhole_and_flap)
{
	struct mroce_sim_link_cfg l = { .blackhole_at = 1000 };

	ck_assert(!mroce_sim_link_down(&l, 999));
	ck_assert(mroce_sim_link_down(&l, 1000));
	ck_assert(mroce_sim_link_down(&l, 1000000000));
	l.flap_ns = 100;
	ck_assert(!mroce_sim_link_down(&l, 999));
	ck_assert(mroce_sim_link_down(&l, 1000));
	ck_assert(mroce_sim_link_down(&l, 1099));
	ck_assert(!mroce_sim_link_down(&l, 1100));
	ck_assert(!mroce_sim_link_down(&l, 1199));
	ck_assert(mroce_sim_link_down(&l, 1200));
}
END_TEST

START_TEST(mroce_sim_run__runs_only_once)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;
	struct mroce_sim *s;

	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.bytes = 16 << 10;
	ck_assert_int_eq(mroce_sim_create(&c, &s), 0);
	ck_assert_int_eq(mroce_sim_run(s, &r), 0);
	ck_assert_int_eq(mroce_sim_run(s, &r), -EALREADY);
	mroce_sim_destroy(s);
}
END_TEST

/* The determinism contract: same configuration and seed, same digest of
 * every event, packet and completion; another seed, another run. */
START_TEST(mroce_sim_run__same_seed_same_digest)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result a, b, d;

	small_cfg(&c, _i ? MROCE_TRANSPORT_ROCEV2 : MROCE_TRANSPORT_METAROCE);
	for (int i = 0; i < 4; i++) {
		c.net.path[i].loss = 0.02;
		c.net.path[i].dup = 0.01;
	}
	c.conns = 2;
	c.seed = 77;
	run(&c, &a);
	run(&c, &b);
	c.seed = 78;
	run(&c, &d);
	ck_assert_msg(a.verdict == MROCE_SIM_OK, "%s: %s",
		      mroce_sim_verdict_str(a.verdict), a.why);
	ck_assert_uint_eq(a.digest, b.digest);
	ck_assert_uint_eq(a.events, b.events);
	ck_assert_uint_eq(a.end_ns, b.end_ns);
	ck_assert_uint_eq(a.retransmits, b.retransmits);
	ck_assert_uint_ne(a.digest, d.digest);
}
END_TEST

/* The checker itself: one flipped byte in one received message must be
 * reported as an integrity violation (WRITE and SEND paths). */
START_TEST(mroce_sim_run__detects_a_wrong_byte)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;

	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.op = _i ? MROCE_SIM_OP_SEND : MROCE_SIM_OP_WRITE;
	c.fault_msg = 5;
	run(&c, &r);
	ck_assert_msg(r.verdict == MROCE_SIM_INTEGRITY, "verdict %s (%s)",
		      mroce_sim_verdict_str(r.verdict), r.why);
	ck_assert_msg(strstr(r.why, " 5 byte 8192 wrong"), "%s", r.why);
	ck_assert_uint_lt(r.completed_bytes, 256 << 10);
}
END_TEST

/* The latency probe (cfg.probe_ns): alone it measures the base round
 * trip; beside the bulk it sees the bulk's queue, and the bulk's goodput
 * counts from its own start. A probe on a path with nothing else gives the
 * same numbers loaded and idle. */
START_TEST(mroce_sim_run__probe_sees_the_bulk_queue)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r, alone;

	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.bytes = 8 << 20;
	c.msg_size = 64 << 10;
	c.outstanding = 16;
	run(&c, &alone);
	ck_assert_int_eq(alone.verdict, MROCE_SIM_OK);
	ck_assert_uint_eq(alone.probe_idle_n + alone.probe_loaded_n, 0);
	c.probe_ns = 500000;
	run(&c, &r);
	ck_assert_msg(r.verdict == MROCE_SIM_OK, "%s", r.why);
	ck_assert_uint_eq(r.start_ns, 500000);
	/* about 500 us / 6.3 us alone; one per loaded round trip */
	ck_assert_uint_gt(r.probe_idle_n, 50);
	ck_assert_uint_gt(r.probe_loaded_n, 50);
	/* 2 x (2 us + 2 x 0.5 us) of propagation, and 8 bytes' time */
	ck_assert_msg(r.probe_idle_p50_us >= 6 && r.probe_idle_p99_us < 7,
		      "idle %.2f / %.2f us", r.probe_idle_p50_us,
		      r.probe_idle_p99_us);
	/* a 4 KiB packet queued ahead on a 10 Gbit/s plane: 3.3 us */
	ck_assert(r.probe_loaded_p50_us > r.probe_idle_p50_us + 3);
	ck_assert(r.goodput_gbps > 0.8 * alone.goodput_gbps);
}
END_TEST

/* cfg ce_mark (--ce-plane): a plane CE-marks ECN-capable packets without
 * a queue of its own (traffic the run does not model): the receiver sees
 * the marks and the transfer completes; without it this load marks
 * nothing (the planes' ECN threshold is never reached). */
START_TEST(mroce_sim_run__ce_plane_marks_without_a_queue)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;

	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.bytes = 4 << 20;
	c.net.path[2].ce_mark = 1;
	run(&c, &r);
	ck_assert_msg(r.verdict == MROCE_SIM_OK, "%s", r.why);
	ck_assert_uint_gt(r.ce_marked, 0);
	ck_assert_uint_gt(r.ce_marks_rx, 0);
	ck_assert(r.path_share[2] > 0);
	c.net.path[2].ce_mark = 0;
	run(&c, &r);
	ck_assert_uint_eq(r.ce_marked, 0);
}
END_TEST

START_TEST(mroce_sim_run__time_limit_is_enforced)
{
	struct mroce_sim_cfg c;
	struct mroce_sim_result r;

	small_cfg(&c, MROCE_TRANSPORT_METAROCE);
	c.bytes = 64 << 20;
	c.time_limit_ns = 100000;	/* 100 us: far too short */
	run(&c, &r);
	ck_assert_msg(r.verdict == MROCE_SIM_TIME_LIMIT, "verdict %s",
		      mroce_sim_verdict_str(r.verdict));
	ck_assert_uint_le(r.end_ns, 100000);
	ck_assert_uint_lt(r.completed_bytes, 64 << 20);
}
END_TEST

MROCE_SUITE(sim_suite)
Suite *sim_suite(void)
{
	Suite *s = suite_create("sim");
	TCase *tc = tcase_create("sim");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, mroce_sim_pattern__depends_on_conn_and_offset);
	tcase_add_test(tc, mroce_sim_create__rejects_bad_config);
	tcase_add_test(tc, mroce_sim_verdict_str__names_every_verdict);
	tcase_add_loop_test(tc, mroce_sim_run__dead_fabric_is_reported_not_hung,
			    0, 2);
	tcase_add_loop_test(tc, mroce_sim_run__clean_transfer_completes, 0, 2);
	tcase_add_test(tc, mroce_sim_run__unused_plane_failure_needs_no_recovery);
	tcase_add_test(tc, mroce_sim_run__runs_only_once);
	tcase_add_test(tc, mroce_sim_link_down__blackhole_and_flap);
	tcase_add_test(tc, mroce_sim_series__bins_add_up_to_completed_bytes);
	tcase_add_loop_test(tc, mroce_sim_run__same_seed_same_digest, 0, 2);
	tcase_add_loop_test(tc, mroce_sim_run__detects_a_wrong_byte, 0, 2);
	tcase_add_test(tc, mroce_sim_run__time_limit_is_enforced);
	tcase_add_test(tc, mroce_sim_run__probe_sees_the_bulk_queue);
	tcase_add_test(tc, mroce_sim_run__ce_plane_marks_without_a_queue);
	suite_add_tcase(s, tc);
	return s;
}
