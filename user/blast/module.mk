# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/blast: mroce_blast, the unreliable AF_XDP / kernel UDP packet blast
# that measures a fabric's ceiling (docs/fabric.md). Its receiver embeds
# bpf/fabric_xsk_rx.bpf.c through the skeleton (declared in scripts/module.mk).
TOOLS += mroce_blast
mroce_blast_SRCS := user/blast/blast.c user/blast/xsk.c user/blast/handoff.c \
		    user/blast/tcp_pp.c
mroce_blast_LDLIBS :=
mroce_blast_ILIBS := tool
