# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# bpf/: the XDP fast path. Each bpf/X.bpf.c becomes build/bpf/X.bpf.o and
# the skeleton build/include/X.skel.h.
#   mroce_xdp        the program mrocectl attaches (parse, steer, ACK, telemetry)
#   mroce_spray_test test-only: runs include/mroce/spray.h in the kernel so
#                    tests/bpf/test_spray.c can compare it with userspace
BPF_SRCS += bpf/mroce_xdp.bpf.c bpf/mroce_spray_test.bpf.c

# v3: atomic exchange (BPF_XCHG) for rx_state.ce_pending, 32-bit
# sub-registers and jmp32 (smaller, faster code). Kernel >= 5.12.
BPF_CFLAGS += -mcpu=v3
