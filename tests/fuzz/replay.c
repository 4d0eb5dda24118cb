// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Replays each fuzz target's committed corpus under ASan/UBSan in the Check
 * runner, so a crash once found stays fixed. */
#include "fuzz.h"
#include "../harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TARGETS 32
static struct {
	const char *name;
	mroce_fuzz_fn fn;
} targets[MAX_TARGETS];
static int n_targets;

void mroce_fuzz_register(const char *name, mroce_fuzz_fn fn)
{
	if (n_targets < MAX_TARGETS) {
		targets[n_targets].name = name;
		targets[n_targets].fn = fn;
		n_targets++;
	}
}

START_TEST(fuzz_replay__corpus)
{
	char dir[512], path[1024];
	static uint8_t buf[1 << 16];
	DIR *d;
	struct dirent *e;
	int files = 0;

	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", mroce_src_dir(),
		 targets[_i].name);
	d = opendir(dir);
	ck_assert_msg(d != NULL, "no corpus directory %s", dir);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		ck_assert_msg(f != NULL, "cannot open %s", path);
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		/* a copy of exactly n bytes, so ASan sees over-reads */
		uint8_t *copy = malloc(n ? n : 1);
		memcpy(copy, buf, n);
		targets[_i].fn(copy, n);
		free(copy);
		files++;
	}
	closedir(d);
	ck_assert_msg(files > 0, "corpus %s is empty", dir);
}
END_TEST

MROCE_SUITE(fuzz_replay_suite)
Suite *fuzz_replay_suite(void)
{
	Suite *s = suite_create("fuzz_replay");
	for (int i = 0; i < n_targets; i++) {
		TCase *tc = tcase_create(targets[i].name);
		tcase_set_timeout(tc, 60);
		tcase_add_loop_test(tc, fuzz_replay__corpus, i, i + 1);
		suite_add_tcase(s, tc);
	}
	return s;
}
