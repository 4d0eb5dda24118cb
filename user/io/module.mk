# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# user/io: packet I/O backends behind include/mroce/io.h. The dispatcher
# and the UDP backend are always built; the AF_XDP backend joins when its
# source exists. `make NO_AFXDP=1` leaves it out (then opening an AF_XDP
# device fails with -ENOTSUP). The pump that drives a backend is the layer
# above: user/endpoint.
IO_AFXDP_SRC := $(if $(NO_AFXDP),,$(wildcard user/io/afxdp.c))
LIB_SRCS += user/io/io.c user/io/udp.c $(IO_AFXDP_SRC) \
	$(if $(IO_AFXDP_SRC),user/io/afxdp_neigh.c)

# io.c takes a strong reference to the AF_XDP ops only when afxdp.c is part
# of the library: a weak reference alone would never pull afxdp.o out of
# libmroce.a. Rebuild io.o when afxdp.c appears.
ifneq ($(IO_AFXDP_SRC),)
CPPFLAGS_ALL += -DMROCE_HAVE_AFXDP
endif
$(BUILD)/obj/user/io/io.o $(BUILD)/san/user/io/io.o \
$(BUILD)/fuzzobj/user/io/io.o: $(IO_AFXDP_SRC)
