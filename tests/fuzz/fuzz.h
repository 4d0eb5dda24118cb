/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * A fuzz target is written once and built two ways:
 *  - with -DMROCE_FUZZ_MAIN by clang + libFuzzer (`make fuzz`), where the
 *    macro defines LLVMFuzzerTestOneInput;
 *  - into the Check runner (`make check`), where the macro registers the
 *    function and tests/fuzz/replay.c feeds it every file of
 *    tests/fuzz/corpus/<name>/ under ASan/UBSan.
 */
#ifndef MROCE_TESTS_FUZZ_H
#define MROCE_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

typedef void (*mroce_fuzz_fn)(const uint8_t *data, size_t size);

#ifdef MROCE_FUZZ_MAIN
#define MROCE_FUZZ_TARGET(name, fn)                                            \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);          \
	int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)           \
	{                                                                      \
		fn(data, size);                                                \
		return 0;                                                      \
	}
#else
void mroce_fuzz_register(const char *name, mroce_fuzz_fn fn);
#define MROCE_FUZZ_TARGET(name, fn)                                            \
	__attribute__((constructor)) static void mroce_fuzz_reg_##name(void)   \
	{                                                                      \
		mroce_fuzz_register(#name, fn);                                \
	}
#endif

#endif
