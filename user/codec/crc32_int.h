/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The implementations behind mroce_crc32() and mroce_crc32_copy(), one by
 * one, for the unit tests and the benchmark (mroce_sim --bench-crc): the
 * public functions always take the fastest one this CPU runs, chosen once
 * before main().
 */
#ifndef MROCE_CRC32_INT_H
#define MROCE_CRC32_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum crc32_impl {
	CRC32_IMPL_TABLE,	/* slicing-by-8, every CPU */
	CRC32_IMPL_CLMUL,	/* x86-64 PCLMULQDQ, 128-bit folding */
	CRC32_IMPL_AVX512,	/* x86-64 AVX-512 VPCLMULQDQ, 512-bit folding */
	CRC32_IMPL_COUNT
};

/* "table", "clmul", "avx512". */
const char *crc32_impl_name(enum crc32_impl impl);

/* Whether this build and this CPU can run impl. */
bool crc32_impl_available(enum crc32_impl impl);

/* The one mroce_crc32() and mroce_crc32_copy() use. */
enum crc32_impl crc32_impl_selected(void);

/* mroce_crc32() and mroce_crc32_copy() through impl, which must be
 * available. Each implementation hands lengths below its minimum (64
 * bytes for clmul, 256 for avx512) to the next simpler one, exactly as
 * the public functions do. */
uint32_t crc32_impl_crc(enum crc32_impl impl, uint32_t crc, const void *buf,
			size_t len);
uint32_t crc32_impl_copy(enum crc32_impl impl, uint32_t crc, void *dst,
			 const void *src, size_t len);

#endif /* MROCE_CRC32_INT_H */
