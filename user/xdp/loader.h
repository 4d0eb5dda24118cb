/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Internal: the XDP program's loader, shared by mrocectl (attach, detach,
 * status) and mroced (--attach): attach/detach bpf/mroce_xdp.bpf.c with
 * libxdp, pin and unpin its maps, describe what is attached. Part of the
 * internal library libmroce-xdp.a (user/xdp/module.mk). Returns 0 or a
 * negative enum mroce_xdp_err (include/mroce/xdp.h); never prints.
 */
#ifndef MROCE_XDP_LOADER_H
#define MROCE_XDP_LOADER_H

#include <stdbool.h>
#include <stdint.h>

#include "mroce/xdp.h"

enum ctl_mode {
	CTL_MODE_NATIVE = 1,
	CTL_MODE_SKB = 2,
};

struct ctl_attach_opts {
	enum ctl_mode mode;
	bool ack_offload;
	uint16_t mroce_port;
	uint16_t rocev2_port;
};

/* Facts for error messages and status. */
struct ctl_iface_info {
	char ifname[32];
	int ifindex;
	int mtu;
	int rx_queues, tx_queues;
	bool attached;	  /* our program is on the interface */
	bool pinned;	  /* our maps are pinned */
	bool dispatcher;  /* via the libxdp dispatcher (not legacy) */
	const char *mode; /* "native", "skb", "hw", "-" */
	uint32_t prog_id;
	int n_progs;	     /* XDP programs on the interface */
	uint32_t map_ids[6]; /* conns xsks rx_state scoreboard counters
			      * ack_limit */
	bool bpffs_mounted;  /* attach had to mount bpffs itself */
};

/* Mount bpffs at /sys/fs/bpf when it is not there: 0 = was there,
 * 1 = mounted now, or a negative error. */
int ctl_ensure_bpffs(void);

int ctl_attach(const char *ifname, const struct ctl_attach_opts *o,
	       struct ctl_iface_info *info);
int ctl_detach(const char *ifname);
int ctl_describe(const char *ifname, struct ctl_iface_info *info);

/* Names of the interfaces with pins under MROCE_PIN_ROOT; returns the
 * count (at most max), or a negative error. */
int ctl_list_pinned(char names[][32], int max);

/* Program name on the interface. */
#define CTL_PROG_NAME "mroce_xdp"

#endif /* MROCE_XDP_LOADER_H */
