/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * mroce test harness: every Check suite in tests/ registers itself here and
 * one runner (build/tests/mroce_check) runs them all.
 *
 * A test file registers a suite with
 *	MROCE_SUITE(codec_suite)	// Suite *codec_suite(void)
 * Tests that need root, BPF or a kernel feature ask before adding their
 * TCase:
 *	const char *why = mroce_need_root();
 *	if (why) mroce_skip("xdp_ns", why); else suite_add_tcase(s, tc);
 * Skipped tests are listed (with the reason) before Check's summary and are
 * never counted as passed.
 */
#ifndef MROCE_TESTS_HARNESS_H
#define MROCE_TESTS_HARNESS_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

typedef Suite *(*mroce_suite_fn)(void);
void mroce_register_suite(mroce_suite_fn fn);

#define MROCE_SUITE(fn)                                                        \
	Suite *fn(void);                                                       \
	__attribute__((constructor)) static void mroce_reg_##fn(void)          \
	{                                                                      \
		mroce_register_suite(fn);                                      \
	}

/* Record a skipped test (name, reason); printed before the summary. */
void mroce_skip(const char *name, const char *reason);

/* NULL when the requirement holds, else a static reason string. */
const char *mroce_need_root(void);
const char *mroce_need_bpf(void);	/* root + bpf() + BTF */
const char *mroce_need_cmd(const char *cmd);	/* e.g. "tshark" */

/* Absolute paths: source tree and build tree (from MROCE_SRC/MROCE_BUILD,
 * set by `make check`; default "." and "./build"). */
const char *mroce_src_dir(void);
const char *mroce_build_dir(void);

/* Run a shell command, capture up to cap-1 bytes of combined stdout/stderr
 * into out (NUL-terminated; out may be NULL). Returns the exit status, or
 * -1 if it could not run / was killed. */
int mroce_run(const char *cmd, char *out, size_t cap);

/* Add a test that runs script `path` (relative to the source tree) with
 * `args`; it passes on exit 0 and fails otherwise, printing the output.
 * The script is first run with `--probe`: exit 77 means "cannot run here",
 * and its first output line is recorded as the skip reason. */
void mroce_add_script_test(Suite *s, const char *name, const char *path,
			   const char *args, int timeout_s);

/* Hex dump of two buffers side by side into stderr (for mismatches). */
void mroce_hexdiff(const char *what, const void *got, size_t got_len,
		   const void *want, size_t want_len);

#endif
