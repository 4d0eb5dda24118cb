/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: small helpers that more than one part of mroce needs (random
 * bytes, addresses, numbers from the command line, --version). Library
 * code and tools both use them; nothing here prints except
 * mroce_print_version(), which only tools call.
 *
 * Error convention: 0 on success, a negative errno on failure
 * (-EINVAL: not a number / not an address; -ERANGE: outside [min, max]).
 */
#ifndef MROCE_COMMON_UTIL_H
#define MROCE_COMMON_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Fill buf with len bytes from getrandom(2), retrying on EINTR. */
int mroce_random_bytes(void *buf, size_t len);

/* Parse an IPv4 or IPv6 literal: *family = AF_INET or AF_INET6; addr gets
 * the 4 or 16 address bytes (zero-padded to 16). NULL s is -EINVAL. */
int mroce_parse_addr(const char *s, uint8_t *family, uint8_t addr[16]);

/* An unsigned integer in [min, max]: decimal, or 0x hex. No sign, no
 * trailing characters. */
int mroce_parse_u64(const char *s, uint64_t min, uint64_t max,
		    uint64_t *out);

/* A size in [min, max]: an unsigned decimal with an optional K, M or G
 * suffix (powers of 1024). */
int mroce_parse_size(const char *s, uint64_t min, uint64_t max,
		     uint64_t *out);

/* A finite number in [min, max]. */
int mroce_parse_double(const char *s, double min, double max, double *out);

/* "<prog> (mroce) <version>" and the licence line, for every tool's
 * --version. */
void mroce_print_version(FILE *f, const char *prog);

#endif
