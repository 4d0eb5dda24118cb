// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Error names and the opcode descriptor tables of both protocols, generated
 * from the X-macro lists so that a new opcode or error is one line in one
 * place. The tables are indexed directly by opcode (256 entries each): a
 * lookup is one load, and an unknown opcode is a NULL name, known before
 * any length is computed from the packet.
 */
#include "mroce/codec.h"

/* Indexed by err - MROCE_E__BEFORE: slot 0 is MROCE_OK. */
static const char *const err_names[MROCE_E_NUM + 1] = {
	[0] = "OK",
#define MROCE_X_ERR(name, text) [MROCE_E_##name - MROCE_E__BEFORE] = #name,
	MROCE_ERRORS(MROCE_X_ERR)
#undef MROCE_X_ERR
};

static const char *const err_texts[MROCE_E_NUM + 1] = {
	[0] = "success",
#define MROCE_X_ERR(name, text) [MROCE_E_##name - MROCE_E__BEFORE] = text,
	MROCE_ERRORS(MROCE_X_ERR)
#undef MROCE_X_ERR
};

/* Slot of err in the tables above, or -1 (errno values, unknown codes). */
static int err_index(int err)
{
	if (err == MROCE_OK)
		return 0;
	if (!mroce_is_codec_err(err))
		return -1;
	/* both signs are accepted; the range check above keeps -err from
	 * overflowing (INT_MIN is not a codec error) */
	return (err < 0 ? -err : err) - MROCE_E__BEFORE;
}

const char *mroce_err_name(int err)
{
	int i = err_index(err);

	return i < 0 ? "UNKNOWN" : err_names[i];
}

const char *mroce_err_text(int err)
{
	int i = err_index(err);

	return i < 0 ? "unknown error" : err_texts[i];
}

/* mroce_ext_len() as a constant expression, for the static tables below;
 * tests check that both agree for every opcode. */
#define MR_EXT_LEN(ext)                                                        \
	(sizeof(struct mroce_hdr) +                                            \
	 (((ext) & MROCE_EXT_SEQ) ? sizeof(struct mroce_seqh) : 0) +           \
	 (((ext) & MROCE_EXT_MSG) ? sizeof(struct mroce_msgh) : 0) +           \
	 (((ext) & MROCE_EXT_RADDR) ? sizeof(struct mroce_raddrh) : 0) +       \
	 (((ext) & MROCE_EXT_SINK) ? sizeof(struct mroce_sinkh) : 0) +         \
	 (((ext) & MROCE_EXT_SEND) ? sizeof(struct mroce_sendh) : 0) +         \
	 (((ext) & MROCE_EXT_IMM) ? sizeof(struct mroce_immh) : 0) +           \
	 (((ext) & MROCE_EXT_ACK) ? sizeof(struct mroce_ackh) : 0) +           \
	 (((ext) & MROCE_EXT_NAK) ? sizeof(struct mroce_nakh) : 0) +           \
	 (((ext) & MROCE_EXT_PROBE) ? sizeof(struct mroce_probeh) : 0) +       \
	 (((ext) & MROCE_EXT_REROLL) ? sizeof(struct mroce_rerollh) : 0) +     \
	 (((ext) & MROCE_EXT_CONN) ? sizeof(struct mroce_connh) : 0))

#define RV2_EXT_LEN(ext)                                                       \
	(sizeof(struct rocev2_bth) +                                           \
	 (((ext) & ROCEV2_EXT_RETH) ? sizeof(struct rocev2_reth) : 0) +        \
	 (((ext) & ROCEV2_EXT_AETH) ? sizeof(struct rocev2_aeth) : 0) +        \
	 (((ext) & ROCEV2_EXT_IMM) ? sizeof(struct rocev2_immdt) : 0) +        \
	 (((ext) & ROCEV2_EXT_CNP) ? ROCEV2_CNP_RESV_LEN : 0))

static const struct mroce_opdesc mr_ops[256] = {
#define MR_X_DESC(nm, code, ext_, pl)                                          \
	[code] = { .name = #nm, .proto = MROCE_PROTO_METAROCE,                 \
		   .opcode = code, .ext = (ext_),                              \
		   .hdr_len = MR_EXT_LEN(ext_), .payload = (pl),               \
		   .pos = MROCE_POS_ONLY },
	MROCE_MR_OPS(MR_X_DESC)
#undef MR_X_DESC
};

/* Position of each RoCEv2 opcode in its message, named after the opcode
 * so that an opcode added to ROCEV2_OPS without its line here does not
 * compile. Tests check every entry against the opcode's name. */
enum {
	RV2_POS_SEND_FIRST = MROCE_POS_FIRST,
	RV2_POS_SEND_MIDDLE = MROCE_POS_MIDDLE,
	RV2_POS_SEND_LAST = MROCE_POS_LAST,
	RV2_POS_SEND_LAST_IMM = MROCE_POS_LAST,
	RV2_POS_SEND_ONLY = MROCE_POS_ONLY,
	RV2_POS_SEND_ONLY_IMM = MROCE_POS_ONLY,
	RV2_POS_WRITE_FIRST = MROCE_POS_FIRST,
	RV2_POS_WRITE_MIDDLE = MROCE_POS_MIDDLE,
	RV2_POS_WRITE_LAST = MROCE_POS_LAST,
	RV2_POS_WRITE_LAST_IMM = MROCE_POS_LAST,
	RV2_POS_WRITE_ONLY = MROCE_POS_ONLY,
	RV2_POS_WRITE_ONLY_IMM = MROCE_POS_ONLY,
	RV2_POS_READ_REQ = MROCE_POS_ONLY,
	RV2_POS_READ_RESP_FIRST = MROCE_POS_FIRST,
	RV2_POS_READ_RESP_MIDDLE = MROCE_POS_MIDDLE,
	RV2_POS_READ_RESP_LAST = MROCE_POS_LAST,
	RV2_POS_READ_RESP_ONLY = MROCE_POS_ONLY,
	RV2_POS_ACK = MROCE_POS_ONLY,
	RV2_POS_CNP = MROCE_POS_ONLY,
};

static const struct mroce_opdesc rv2_ops[256] = {
#define RV2_X_DESC(nm, code, ext_, pl)                                         \
	[code] = { .name = #nm, .proto = MROCE_PROTO_ROCEV2,                   \
		   .opcode = code, .ext = (ext_),                              \
		   .hdr_len = RV2_EXT_LEN(ext_), .payload = (pl),              \
		   .pos = RV2_POS_##nm },
	ROCEV2_OPS(RV2_X_DESC)
	ROCEV2_EXTRA_OPS(RV2_X_DESC)
#undef RV2_X_DESC
};

/* hdr_words is one byte: every MetaRoCE header must fit in 255 words. */
#define MR_X_CHECK(nm, code, ext_, pl)                                         \
	_Static_assert(MR_EXT_LEN(ext_) % 4 == 0 &&                            \
			       MR_EXT_LEN(ext_) / 4 <= 255,                    \
		       "MetaRoCE header of " #nm " is not whole words");
MROCE_MR_OPS(MR_X_CHECK)
#undef MR_X_CHECK

const struct mroce_opdesc *mroce_meta_opdesc(uint8_t opcode)
{
	return mr_ops[opcode].name ? &mr_ops[opcode] : NULL;
}

const struct mroce_opdesc *mroce_rv2_opdesc(uint8_t opcode)
{
	return rv2_ops[opcode].name ? &rv2_ops[opcode] : NULL;
}

int mroce_meta_hdr_len(uint8_t opcode)
{
	const struct mroce_opdesc *d = mroce_meta_opdesc(opcode);

	return d ? d->hdr_len : -MROCE_E_BAD_OPCODE;
}
