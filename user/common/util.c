// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Small shared helpers: see util.h. */
#include "util.h"

#include "mroce/version.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>

int mroce_random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t r = getrandom(p, len, 0);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

int mroce_parse_addr(const char *s, uint8_t *family, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (!s)
		return -EINVAL;
	if (inet_pton(AF_INET, s, addr) == 1) {
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, s, addr) == 1) {
		*family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

/* Digits of s into *v; *end after them. Rejects signs and empty input. */
static int parse_digits(const char *s, uint64_t *v, char **end, int base)
{
	unsigned long long x;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, end, base);
	if (*end == s)
		return -EINVAL;
	if (errno == ERANGE)
		return -ERANGE;
	*v = x;
	return 0;
}

int mroce_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	char *end;
	int err = parse_digits(s, &v, &end, 0);

	if (err)
		return err;
	if (*end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int mroce_parse_size(const char *s, uint64_t min, uint64_t max,
		     uint64_t *out)
{
	uint64_t v, mul = 1;
	char *end;
	int err = parse_digits(s, &v, &end, 10);

	if (err)
		return err;
	switch (*end) {
	case 'k': case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'm': case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'g': case 'G':
		mul = 1ull << 30;
		end++;
		break;
	}
	if (*end)
		return -EINVAL;
	if (v && v * mul / mul != v)
		return -ERANGE;
	v *= mul;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int mroce_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v))
		return -EINVAL;
	if (!(v >= min && v <= max))
		return -ERANGE;
	*out = v;
	return 0;
}

void mroce_print_version(FILE *f, const char *prog)
{
	fprintf(f, "%s (mroce) %s\n"
		"Licence: GPL-2.0-only OR BSD-2-Clause (LICENSES/).\n",
		prog, MROCE_VERSION);
}
