// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * mroce_pcapgen (user/pcapgen/pcapgen.c): exit codes, the pcap container,
 * and that every frame it writes is one our own codec accepts (or rejects
 * with BAD_ICRC when it was built with a wrong ICRC on purpose).
 */
#include "../harness.h"
#include "mroce/codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/mroce-pg-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	mroce_run(cmd, NULL, 0);
}

static int pcapgen(const char *args, char *out, size_t cap)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd), "cd '%s' && '%s/bin/mroce_pcapgen' %s", dir,
		 mroce_build_dir(), args);
	return mroce_run(cmd, out, cap);
}

START_TEST(main__usage_errors_exit_2)
{
	char o[4096];

	ck_assert_int_eq(pcapgen("", o, sizeof(o)), 2);
	ck_assert_ptr_nonnull(strstr(o, "-o FILE is required"));
	ck_assert_int_eq(pcapgen("--no-such-option", o, sizeof(o)), 2);
	ck_assert_int_eq(pcapgen("-o x.pcap extra", o, sizeof(o)), 2);
	ck_assert_int_eq(pcapgen("-o - --list", o, sizeof(o)), 2);
}
END_TEST

START_TEST(main__unwritable_output_exits_1)
{
	char o[4096];

	ck_assert_int_eq(pcapgen("-o /nonexistent-dir/x.pcap", o, sizeof(o)),
			 1);
	ck_assert_ptr_nonnull(strstr(o, "/nonexistent-dir/x.pcap"));
}
END_TEST

START_TEST(main__help_documents_every_option)
{
	static char o[16384];

	ck_assert_int_eq(pcapgen("--help", o, sizeof(o)), 0);
	ck_assert_ptr_nonnull(strstr(o, "SYNOPSIS"));
	ck_assert_ptr_nonnull(strstr(o, "--list"));
	ck_assert_ptr_nonnull(strstr(o, "--hexdump"));
	ck_assert_ptr_nonnull(strstr(o, "--bad-icrc"));
	ck_assert_ptr_nonnull(strstr(o, "EXIT STATUS"));
}
END_TEST

/* --version: "<tool> (mroce) <version>", as help2man reads it. */
START_TEST(main__version_names_the_tool)
{
	static char o[1024];

	ck_assert_int_eq(pcapgen("--version", o, sizeof(o)), 0);
	ck_assert_ptr_nonnull(strstr(o, "mroce_pcapgen (mroce) "));
}
END_TEST

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);	/* written in native order */
	return v;
}

START_TEST(main__every_frame_parses_with_the_codec)
{
	static char manifest[1 << 16];
	static uint8_t file[1 << 18];
	char path[128];
	size_t len, off;
	int lines = 0, frames = 0, bad = 0;
	FILE *f;

	ck_assert_int_eq(pcapgen("--bad-icrc -o s.pcap", NULL, 0), 0);
	ck_assert_int_eq(pcapgen("--bad-icrc --list", manifest,
				 sizeof(manifest)), 0);
	for (const char *p = manifest; (p = strchr(p, '\n')); p++)
		lines++;

	snprintf(path, sizeof(path), "%s/s.pcap", dir);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	len = fread(file, 1, sizeof(file), f);
	fclose(f);
	ck_assert_uint_gt(len, 24);
	ck_assert_uint_lt(len, sizeof(file));
	ck_assert_uint_eq(rd32(file), 0xa1b2c3d4);	/* usec, native */
	ck_assert_uint_eq(rd32(file + 20), 1);		/* LINKTYPE_ETHERNET */

	for (off = 24; off + 16 <= len; frames++) {
		uint32_t incl = rd32(file + off + 8), orig = rd32(file + off + 12);
		const uint8_t *fr = file + off + 16;
		struct mroce_frame fp;
		int rc;

		ck_assert_uint_eq(incl, orig);
		ck_assert_uint_le(off + 16 + incl, len);
		ck_assert_int_eq(mroce_frame_parse(fr, incl, &fp), 0);
		if (fp.dport == MROCE_UDP_PORT) {
			struct mroce_meta_pkt p;

			rc = mroce_meta_parse(fp.l4, fp.l4_len, &p);
		} else {
			struct mroce_rv2_pkt p;

			ck_assert_uint_eq(fp.dport, ROCEV2_UDP_PORT);
			rc = mroce_rv2_parse(&fp, &p);
		}
		if (rc == -MROCE_E_BAD_ICRC)
			bad++;
		else
			ck_assert_msg(rc == 0, "frame %d: %s", frames + 1,
				      mroce_err_name(rc));
		off += 16 + incl;
	}
	ck_assert_uint_eq(off, len);
	ck_assert_int_eq(frames, lines);
	ck_assert_int_eq(bad, 2);
}
END_TEST

START_TEST(main__output_is_reproducible)
{
	char o[256], cmd[256];

	ck_assert_int_eq(pcapgen("-o a.pcap", NULL, 0), 0);
	ck_assert_int_eq(pcapgen("-o b.pcap", NULL, 0), 0);

	snprintf(cmd, sizeof(cmd), "cmp '%s/a.pcap' '%s/b.pcap'", dir, dir);
	ck_assert_int_eq(mroce_run(cmd, o, sizeof(o)), 0);
}
END_TEST

/* docs/spec.md promises that its hex dumps are real output of this tool:
 * every ``` block there that starts with "frame " must appear verbatim in
 * `mroce_pcapgen --hexdump`. Regenerate the dumps when the codec changes. */
START_TEST(main__spec_hex_dumps_match_the_tool)
{
	static char dump[1 << 18], spec[1 << 18];
	char path[512];
	size_t len;
	int blocks = 0;
	FILE *f;

	ck_assert_int_eq(pcapgen("--hexdump", dump, sizeof(dump)), 0);
	snprintf(path, sizeof(path), "%s/docs/spec.md", mroce_src_dir());
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	len = fread(spec, 1, sizeof(spec) - 1, f);
	fclose(f);
	spec[len] = '\0';

	for (char *p = spec; (p = strstr(p, "```\nframe ")); ) {
		char *start = p + 4, *end = strstr(start, "\n```");

		ck_assert_ptr_nonnull(end);
		end[1] = '\0';	/* keep the block's final newline */
		ck_assert_msg(strstr(dump, start) != NULL,
			      "docs/spec.md dump '%.40s...' differs from"
			      " mroce_pcapgen --hexdump", start);
		blocks++;
		p = end + 2;
	}
	ck_assert_int_ge(blocks, 20);
}
END_TEST

MROCE_SUITE(pcapgen_suite)
Suite *pcapgen_suite(void)
{
	Suite *s = suite_create("pcapgen");
	TCase *tc = tcase_create("main");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, main__usage_errors_exit_2);
	tcase_add_test(tc, main__unwritable_output_exits_1);
	tcase_add_test(tc, main__help_documents_every_option);
	tcase_add_test(tc, main__version_names_the_tool);
	tcase_add_test(tc, main__every_frame_parses_with_the_codec);
	tcase_add_test(tc, main__output_is_reproducible);
	tcase_add_test(tc, main__spec_hex_dumps_match_the_tool);
	suite_add_tcase(s, tc);
	return s;
}
