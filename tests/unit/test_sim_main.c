// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Tests of the mroce_sim tool (user/sim/main.c): arguments, exit codes,
 * the JSON report and run-to-run determinism through the command line. */
#include "../harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char out[1 << 16];

static int sim(const char *args)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "'%s/bin/mroce_sim' %s", mroce_build_dir(),
		 args);
	return mroce_run(cmd, out, sizeof(out));
}

/* The value text of "key": in the JSON object in out, or "". */
static const char *field(const char *key, char *buf, size_t cap)
{
	char pat[64];
	const char *p;
	size_t n = 0;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(out, pat);
	buf[0] = '\0';
	if (!p)
		return buf;
	p += strlen(pat);
	if (*p == '"')
		p++;
	while (*p && *p != ',' && *p != '}' && *p != '"' && n + 1 < cap)
		buf[n++] = *p++;
	buf[n] = '\0';
	return buf;
}

START_TEST(main__help_is_a_manual)
{
	ck_assert_int_eq(sim("--help"), 0);
	ck_assert_ptr_nonnull(strstr(out, "SYNOPSIS"));
	ck_assert_ptr_nonnull(strstr(out, "--blackhole"));
	ck_assert_ptr_nonnull(strstr(out, "EXIT STATUS"));
}
END_TEST

/* --version: "<tool> (mroce) <version>", as help2man reads it. */
START_TEST(main__version_names_the_tool)
{
	ck_assert_int_eq(sim("--version"), 0);
	ck_assert_ptr_nonnull(strstr(out, "mroce_sim (mroce) "));
}
END_TEST

START_TEST(main__bad_arguments_exit_2)
{
	static const char *bad[] = {
		"--transport tcp", "--loss 2", "--loss x", "--bytes 12Q",
		"--blackhole 9@1", "--blackhole 1", "--paths 0",
		"--rates 10,20 --paths 3", "--msg-size 0", "--op atomic",
		"--gen 256", "--psn 0x100000000", "--flap-us 0",
		"--no-such-option", "stray",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(sim(bad[i]) == 2, "%s: exit not 2: %s", bad[i],
			      out);
		ck_assert_msg(strstr(out, "mroce_sim"), "%s: no message",
			      bad[i]);
	}
}
END_TEST

START_TEST(main__json_has_the_required_fields)
{
	static const char *keys[] = {
		"transport", "goodput_gbps", "fct_p50_us", "fct_p99_us",
		"retransmits", "completed_bytes", "integrity_ok",
		"virtual_time_us", "path_share_ratio", "jain_fairness_ratio",
		"mem_per_conn_bytes", "wall_time_s", "digest", "schema_version",
	};
	char v[64];
	int rc = sim("--transport rocev2 --paths 2 --rate-gbps 10 "
		     "--bytes 256K --msg-size 16K --loss 0.01 --json");

	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		ck_assert_msg(field(keys[i], v, sizeof(v))[0],
			      "no %s in %s", keys[i], out);
	ck_assert_str_eq(field("transport", v, sizeof(v)), "rocev2");
	ck_assert_str_eq(field("integrity_ok", v, sizeof(v)), "true");
	ck_assert_str_eq(field("completed_bytes", v, sizeof(v)), "262144");
	ck_assert_ptr_nonnull(strstr(out, "\"path_share_ratio\":["));
}
END_TEST

/* --op read with the wrap options and a flapping plane: a READ run that
 * starts path slot 0 just below 2^32 at generation 254 completes with
 * every byte checked. */
START_TEST(main__read_across_the_wraps)
{
	char v[64];
	int rc = sim("--op read --psn 0xffffffc0 --gen 254 --blackhole 1@0.02 "
		     "--flap-us 100 --bytes 1M --msg-size 16K --json");

	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_str_eq(field("integrity_ok", v, sizeof(v)), "true");
	ck_assert_str_eq(field("completed_bytes", v, sizeof(v)), "1048576");
}
END_TEST

START_TEST(main__same_seed_same_digest)
{
	char d1[64], d2[64], d3[64];
	const char *a = "--paths 4 --rates 10,5,2.5,1 --bytes 256K "
			"--msg-size 16K --loss 0.02 --dup 0.01 --json --seed ";
	char args[256];

	snprintf(args, sizeof(args), "%s5", a);
	ck_assert_int_eq(sim(args), 0);
	field("digest", d1, sizeof(d1));
	ck_assert_int_eq(sim(args), 0);
	field("digest", d2, sizeof(d2));
	snprintf(args, sizeof(args), "%s6", a);
	ck_assert_int_eq(sim(args), 0);
	field("digest", d3, sizeof(d3));
	ck_assert_uint_eq(strlen(d1), 16);
	ck_assert_str_eq(d1, d2);
	ck_assert_str_ne(d1, d3);
}
END_TEST

START_TEST(main__series_is_a_json_array)
{
	int rc = sim("--paths 2 --rate-gbps 10 --bytes 256K --msg-size 16K "
		     "--series --bin-us 20 --json");

	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_ptr_nonnull(strstr(out, "\"series_bin_us\":20.000"));
	ck_assert_ptr_nonnull(strstr(out, "\"series_gbps\":["));
	ck_assert_ptr_nonnull(strstr(out, "]}"));
}
END_TEST

START_TEST(main__violation_exits_1)
{
	/* every plane dead from the start: no way to finish */
	int rc = sim("--paths 2 --rate-gbps 10 --bytes 64K --msg-size 16K "
		     "--blackhole 0@0 --blackhole 1@0 --stall-ms 100 --json");

	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_ptr_nonnull(strstr(out, "\"ok\":false"));
}
END_TEST

START_TEST(main__bench_engine_reports_costs)
{
	char v[64];
	int rc = sim("--bench-engine --bytes 4M --msg-size 64K --json");

	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_msg(strtod(field("rx_data_ns", v, sizeof(v)), NULL) > 0,
		      "%s", out);
	ck_assert_msg(strtod(field("rx_ack_ns", v, sizeof(v)), NULL) > 0,
		      "%s", out);
	ck_assert_uint_ge(strtoull(field("data_pkts", v, sizeof(v)), NULL, 10),
			  1024);
}
END_TEST

/* --bench-crc: a row per implementation, the selected one among them. */
START_TEST(main__bench_crc_reports_every_path)
{
	char v[64], pat[96];
	int rc = sim("--bench-crc --json");

	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	ck_assert_int_eq((int)strtol(field("buffer_bytes", v, sizeof(v)), NULL, 10),
			 8192);
	ck_assert_msg(strtod(field("crc_ns", v, sizeof(v)), NULL) > 0, "%s",
		      out);
	ck_assert_msg(strtod(field("memcpy_ns", v, sizeof(v)), NULL) > 0,
		      "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "\"impl\":\"table\""));
	snprintf(pat, sizeof(pat), "\"impl\":\"%s\"",
		 field("selected_impl", v, sizeof(v)));
	ck_assert_msg(strstr(out, pat), "%s", out);
}
END_TEST

MROCE_SUITE(sim_main_suite)
Suite *sim_main_suite(void)
{
	Suite *s = suite_create("sim_main");
	TCase *tc = tcase_create("cli");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, main__help_is_a_manual);
	tcase_add_test(tc, main__version_names_the_tool);
	tcase_add_test(tc, main__bad_arguments_exit_2);
	tcase_add_test(tc, main__read_across_the_wraps);
	tcase_add_test(tc, main__json_has_the_required_fields);
	tcase_add_test(tc, main__same_seed_same_digest);
	tcase_add_test(tc, main__series_is_a_json_array);
	tcase_add_test(tc, main__violation_exits_1);
	tcase_add_test(tc, main__bench_engine_reports_costs);
	tcase_add_test(tc, main__bench_crc_reports_every_path);
	suite_add_tcase(s, tc);
	return s;
}
