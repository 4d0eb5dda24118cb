# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/codec: MetaRoCE v0 and RoCEv2 packet codecs, CRC-32, SipHash-2-4.
LIB_SRCS += user/codec/codec.c user/codec/codec_frame.c \
	user/codec/codec_meta.c user/codec/codec_rv2.c \
	user/codec/crc32.c user/codec/siphash.c
# The fuzz seed corpus generator, built with the tests so it keeps
# compiling (run by hand: build/tests/mroce_corpus_gen tests/fuzz/corpus).
TEST_BINS += mroce_corpus_gen
mroce_corpus_gen_SRCS := tests/fuzz/corpus/gen_corpus.c
