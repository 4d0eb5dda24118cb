// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * The spraying policy (include/mroce/spray.h): its choices in userspace,
 * and the same choices from the BPF build of the same function (run in
 * the kernel by bpf/mroce_spray_test.bpf.c through bpf_prog_test_run) over
 * a seeded table of random scoreboards.
 */
#include "../harness.h"

#include <errno.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "mroce/spray.h"
#include "../../bpf/spray_test.h"
#include "mroce_spray_test.skel.h"

static struct mroce_sb_conn sb;

static void sb_paths(__u32 n, __u64 active)
{
	memset(&sb, 0, sizeof(sb));
	sb.n_paths = n;
	sb.active_mask = active;
	for (int i = 0; i < MROCE_MAX_PATHS; i++) {
		sb.path[i].sport = (__u16)(0xc000 + i);
		sb.path[i].gen = (__u8)i;
	}
}

START_TEST(mroce_spray_pick__no_paths)
{
	sb_paths(0, ~0ull);
	ck_assert_int_eq(mroce_spray_pick(&sb, 1234, 0), -1);
	sb_paths(8, 0);
	ck_assert_int_eq(mroce_spray_pick(&sb, 1234, 0), -1);
	/* an active bit beyond n_paths does not count */
	sb_paths(8, 1ull << 9);
	ck_assert_int_eq(mroce_spray_pick(&sb, 1234, 0), -1);
}
END_TEST

START_TEST(mroce_spray_pick__only_active_paths)
{
	sb_paths(16, 1ull << 5 | 1ull << 11);
	for (__u32 h = 0; h < 5000; h++) {
		int p = mroce_spray_pick(&sb, mroce_spray_hash(h, 0, 0), 0);

		ck_assert(p == 5 || p == 11);
	}
}
END_TEST

START_TEST(mroce_spray_pick__spreads_over_healthy_paths)
{
	int hits[8] = {0};

	sb_paths(8, 0xff);
	for (__u32 h = 0; h < 8000; h++)
		hits[mroce_spray_pick(&sb, mroce_spray_hash(h, 1, 2), 0)]++;
	for (int i = 0; i < 8; i++)
		ck_assert_msg(hits[i] > 500 && hits[i] < 1500, "path %d: %d", i,
			      hits[i]);
}
END_TEST

START_TEST(mroce_spray_pick__avoids_recent_loss_and_ecn)
{
	int hits[4] = {0};
	__u32 now = 1000000;

	sb_paths(4, 0xf);
	for (int i = 0; i < 4; i++)
		sb.path[i].srtt_us = 100;
	sb.path[1].last_loss_us = now - 50; /* recent: within 4 srtt */
	sb.path[2].last_ece_us = now - 10;
	sb.path[3].last_loss_us = now - 100000; /* long ago */
	ck_assert_uint_eq(mroce_spray_cost(&sb.path[0], now), 100);
	ck_assert_uint_eq(mroce_spray_cost(&sb.path[1], now),
			  100 + MROCE_SPRAY_LOSS_PENALTY_US);
	ck_assert_uint_eq(mroce_spray_cost(&sb.path[2], now),
			  100 + MROCE_SPRAY_ECN_PENALTY_US);
	ck_assert_uint_eq(mroce_spray_cost(&sb.path[3], now), 100);
	for (__u32 h = 0; h < 4000; h++)
		hits[mroce_spray_pick(&sb, mroce_spray_hash(h, 3, 4), now)]++;
	/* a bad path only wins when both candidates are it (1/16) */
	ck_assert_int_lt(hits[1], 400);
	ck_assert_int_lt(hits[2], hits[0]);
	ck_assert_int_gt(hits[0], 1000);
	ck_assert_int_gt(hits[3], 1000);
}
END_TEST

START_TEST(mroce_spray_cost__unknown_rtt_and_wrap)
{
	sb_paths(1, 1);
	ck_assert_uint_eq(mroce_spray_cost(&sb.path[0], 5),
			  MROCE_SPRAY_RTT_UNKNOWN_US);
	/* times wrap at 2^32: a loss 10 us "before" 5 is recent */
	sb.path[0].last_loss_us = 0xfffffffbu;
	ck_assert_uint_eq(mroce_spray_cost(&sb.path[0], 5),
			  MROCE_SPRAY_RTT_UNKNOWN_US +
				  MROCE_SPRAY_LOSS_PENALTY_US);
	sb.path[0].srtt_us = 0xffffffffu; /* clamped, no overflow */
	ck_assert_uint_eq(mroce_spray_cost(&sb.path[0], 5),
			  MROCE_SPRAY_RTT_MAX_US + MROCE_SPRAY_LOSS_PENALTY_US);
}
END_TEST

START_TEST(mroce_spray_lowest_bit__every_bit)
{
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(mroce_spray_lowest_bit(1ull << i), i);
		ck_assert_int_eq(mroce_spray_lowest_bit(~0ull << i), i);
	}
}
END_TEST

/* xorshift64*: a reproducible table of cases */
static __u64 rng_state = 0x9e3779b97f4a7c15ull;
static __u32 rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (__u32)((rng_state * 0x2545f4914f6cdd1dull) >> 32);
}

static void random_case(struct spray_case *c)
{
	memset(c, 0, sizeof(*c));
	c->now_us = rnd();
	c->hash = rnd();
	c->sb.n_paths = rnd() % 4 == 0 ? rnd() % 256 : rnd() % 65;
	for (int i = 0; i < MROCE_MAX_PATHS; i++) {
		struct mroce_sb_path *p = &c->sb.path[i];

		if (rnd() % 3)
			c->sb.active_mask |= 1ull << i;
		p->sport = (__u16)rnd();
		p->srtt_us = rnd() % 5 == 0
				     ? 0
				     : rnd() % (rnd() % 2 ? 400 : 1u << 26);
		if (rnd() % 3 == 0)
			p->last_loss_us = c->now_us - rnd() % 3000;
		if (rnd() % 3 == 0)
			p->last_ece_us = c->now_us - rnd() % 3000;
	}
}

START_TEST(mroce_spray_pick__bpf_matches_userspace)
{
	struct mroce_spray_test *skel = mroce_spray_test__open_and_load();
	int map_fd, prog_fd, mismatches = 0;
	__u32 zero = 0;
	__u8 pkt[64] = {0};

	ck_assert_msg(skel, "load: %s", strerror(errno));
	map_fd = bpf_map__fd(skel->maps.spray_case);
	prog_fd = bpf_program__fd(skel->progs.spray_run);
	for (int i = 0; i < 2000; i++) {
		static struct spray_case c, got;

		random_case(&c);
		ck_assert_int_eq(bpf_map_update_elem(map_fd, &zero, &c, 0), 0);
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt,
			    .data_size_in = sizeof(pkt));
		ck_assert_int_eq(bpf_prog_test_run_opts(prog_fd, &o), 0);
		ck_assert_int_eq(o.retval, 2 /* XDP_PASS */);
		ck_assert_int_eq(bpf_map_lookup_elem(map_fd, &zero, &got), 0);
		c.pick = mroce_spray_pick(&c.sb, c.hash, c.now_us);
		c.cost[0] = mroce_spray_cost(&c.sb.path[0], c.now_us);
		c.cost[1] = mroce_spray_cost(&c.sb.path[1], c.now_us);
		c.hash_out = mroce_spray_hash(c.hash, c.now_us, 7);
		if (memcmp(&c, &got, sizeof(c))) {
			if (mismatches++ < 3)
				fprintf(stderr,
					"case %d: n %u hash %08x now %u: bpf "
					"pick %d cost %u/%u hash %08x, user "
					"pick %d cost %u/%u hash %08x\n",
					i, c.sb.n_paths, c.hash, c.now_us,
					got.pick, got.cost[0], got.cost[1],
					got.hash_out, c.pick, c.cost[0],
					c.cost[1], c.hash_out);
		}
	}
	mroce_spray_test__destroy(skel);
	ck_assert_int_eq(mismatches, 0);
}
END_TEST

MROCE_SUITE(spray_suite)
Suite *spray_suite(void)
{
	Suite *s = suite_create("spray");
	TCase *tc = tcase_create("policy");
	TCase *bpf;
	const char *why = mroce_need_bpf();

	tcase_add_test(tc, mroce_spray_pick__no_paths);
	tcase_add_test(tc, mroce_spray_pick__only_active_paths);
	tcase_add_test(tc, mroce_spray_pick__spreads_over_healthy_paths);
	tcase_add_test(tc, mroce_spray_pick__avoids_recent_loss_and_ecn);
	tcase_add_test(tc, mroce_spray_cost__unknown_rtt_and_wrap);
	tcase_add_test(tc, mroce_spray_lowest_bit__every_bit);
	suite_add_tcase(s, tc);
	if (why) {
		mroce_skip("spray/bpf", why);
	} else {
		bpf = tcase_create("bpf");
		tcase_set_timeout(bpf, 60);
		tcase_add_test(bpf, mroce_spray_pick__bpf_matches_userspace);
		suite_add_tcase(s, bpf);
	}
	return s;
}
