# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/pcapgen: mroce_pcapgen writes one sample frame of every MetaRoCE and
# RoCEv2 packet type to a pcap file (Wireshark interop, spec hex dumps).
TOOLS += mroce_pcapgen
mroce_pcapgen_SRCS := user/pcapgen/pcapgen.c
mroce_pcapgen_LDLIBS :=
