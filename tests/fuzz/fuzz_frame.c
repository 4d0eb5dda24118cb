// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* Fuzz mroce_frame_parse(): any input either fails with a named error or
 * yields pointers and lengths that stay inside the input. */
#include "fuzz.h"
#include "mroce/codec.h"

#include <stdlib.h>
#include <sys/socket.h>

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c))                                                      \
			abort();                                               \
	} while (0)

static void fuzz_frame(const uint8_t *data, size_t size)
{
	struct mroce_frame f;
	int err = mroce_frame_parse(data, size, &f);

	if (err) {
		CHECK(err < 0 && mroce_is_codec_err(err));
		return;
	}
	CHECK(f.l3.family == AF_INET || f.l3.family == AF_INET6);
	CHECK(f.l3_hdr >= data + 14 && f.l3_hdr <= data + 18);
	CHECK(f.l3_hdr_len >= 20 && f.l3_hdr_len <= 60);
	CHECK(f.udp == f.l3_hdr + f.l3_hdr_len);
	CHECK(f.l4 == f.udp + 8);
	CHECK(f.l4 + f.l4_len <= data + size);
	/* the ICRC walks the headers and the payload: must stay in bounds */
	(void)mroce_rv2_icrc(&f);
}

MROCE_FUZZ_TARGET(frame, fuzz_frame)
