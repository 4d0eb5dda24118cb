// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Fuzz mroce_meta_parse() on raw UDP payloads.
 *
 * Each input is parsed twice: as is, and with its last 4 bytes replaced by
 * the right ICRC, so that the fuzzer reaches the checks behind the CRC.
 * Whenever a parse succeeds, the round-trip property must hold: building
 * the parsed struct reproduces the input byte for byte, except reserved
 * bits and bytes (zero on send, ignored on receive) and the ICRC that
 * covers them.
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

#define MAXPKT 65536
static uint8_t work[MAXPKT], canon[MAXPKT], out[MAXPKT];

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = (uint8_t)v;
}

/* The input with reserved fields zeroed and its ICRC made right again:
 * what our builder emits for the same packet. */
static void canonical(const uint8_t *in, size_t n, uint16_t ext)
{
	memcpy(canon, in, n);
	canon[2] &= (uint8_t)~MROCE_F_RESERVED;
	/* ACK, NAK, REROLL and CONN are the only extension of their
	 * opcode, so each starts right after the 12-byte common header */
	if (ext & MROCE_EXT_ACK)
		canon[12 + 15] = 0;
	if (ext & MROCE_EXT_NAK)
		canon[12 + 2] = canon[12 + 3] = 0;
	if (ext & MROCE_EXT_REROLL)
		memset(canon + 12 + 5, 0, 3);
	if (ext & MROCE_EXT_CONN)
		memset(canon + 12 + 36, 0, 4);
	put_be32(canon + n - 4, mroce_meta_icrc(canon, n - 4));
}

static void parse_and_round_trip(const uint8_t *in, size_t n)
{
	struct mroce_meta_pkt p;
	int err = mroce_meta_parse(in, n, &p), m;

	if (err) {
		CHECK(err < 0 && mroce_is_codec_err(err));
		return;
	}
	CHECK(p.desc && p.desc->opcode == p.opcode);
	CHECK(p.payload == in + p.desc->hdr_len);
	CHECK(p.desc->hdr_len + p.payload_len + 4 == n);
	m = mroce_meta_build(&p, out, sizeof(out));
	CHECK(m == (int)n);
	canonical(in, n, p.desc->ext);
	CHECK(memcmp(out, canon, n) == 0);
}

static void fuzz_meta_parse(const uint8_t *data, size_t size)
{
	if (size > MAXPKT)
		return;
	parse_and_round_trip(data, size);
	if (size < 4)
		return;
	memcpy(work, data, size);
	put_be32(work + size - 4, mroce_meta_icrc(work, size - 4));
	parse_and_round_trip(work, size);
}

MROCE_FUZZ_TARGET(meta_parse, fuzz_meta_parse)
