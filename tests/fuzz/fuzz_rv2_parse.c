// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz mroce_frame_parse() + mroce_rv2_parse() on whole Ethernet frames,
 * and mroce_rv2_parse_l4() on the same bytes taken as a UDP payload.
 *
 * Each frame that parses is tried as is and with its ICRC recomputed by
 * mroce_rv2_icrc_fill(), so that the fuzzer gets past the CRC. A packet
 * that parses must build back to the same bytes, except reserved bits
 * (BTH byte 4 low 6 bits, byte 8 low 7 bits, the 16 bytes of a CNP) and
 * the ICRC slot, which the builder leaves zero.
 */
#include "fuzz.h"
#include "mroce/codec.h"

#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c))                                                      \
			abort();                                               \
	} while (0)

#define MAXFRAME 65600
static uint8_t work[MAXFRAME], canon[MAXFRAME], out[MAXFRAME];

/* f == NULL: the L4-only parser on b[0..n). */
static void parse_and_round_trip(const uint8_t *b, size_t n,
				 const struct mroce_frame *f)
{
	struct mroce_rv2_pkt p;
	int err, m;

	err = f ? mroce_rv2_parse(f, &p) : mroce_rv2_parse_l4(b, n, &p);
	if (err) {
		CHECK(err < 0 && mroce_is_codec_err(err));
		return;
	}
	CHECK(p.desc && p.desc->opcode == p.opcode);
	CHECK(p.payload == b + p.desc->hdr_len);
	CHECK(p.desc->hdr_len + p.payload_len + p.pad + 4 == n);
	m = mroce_rv2_build(&p, out, sizeof(out));
	CHECK(m == (int)n);
	memcpy(canon, b, n);
	canon[4] &= 0xc0;
	canon[8] &= 0x80;
	if (p.desc->ext & ROCEV2_EXT_CNP)
		memset(canon + 12, 0, ROCEV2_CNP_RESV_LEN);
	memset(canon + n - 4, 0, 4);
	CHECK(memcmp(out, canon, n) == 0);
}

static void fuzz_rv2_parse(const uint8_t *data, size_t size)
{
	struct mroce_frame f;
	int err;

	if (size > MAXFRAME)
		return;
	parse_and_round_trip(data, size, NULL);
	err = mroce_frame_parse(data, size, &f);
	if (err)
		return;
	parse_and_round_trip(f.l4, f.l4_len, &f);

	memcpy(work, data, size);
	if (mroce_rv2_icrc_fill(work, size) != 0)
		return;
	CHECK(mroce_frame_parse(work, size, &f) == 0);
	parse_and_round_trip(f.l4, f.l4_len, &f);
}

MROCE_FUZZ_TARGET(rv2_parse, fuzz_rv2_parse)
