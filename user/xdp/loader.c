// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The XDP program's loader for mrocectl and mroced (see loader.h). */
#include "loader.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>
#include <xdp/libxdp.h>

#include "mroce_xdp.skel.h"

#define BPFFS "/sys/fs/bpf"

static const char *const map_names[6] = {
	MROCE_MAP_CONNS,      MROCE_MAP_XSKS,	  MROCE_MAP_RX_STATE,
	MROCE_MAP_SCOREBOARD, MROCE_MAP_COUNTERS, MROCE_MAP_ACK_LIMIT,
};

int ctl_ensure_bpffs(void)
{
	struct statfs st;

	if (statfs(BPFFS, &st) == 0 && st.f_type == BPF_FS_MAGIC)
		return 0;
	/* Missing (e.g. inside `ip netns exec`, which remounts /sys). */
	mkdir(BPFFS, 0700);
	if (mount("bpf", BPFFS, "bpf", 0, "mode=0700"))
		return errno == EPERM ? -MROCE_XDP_E_NO_PRIV
				      : -MROCE_XDP_E_BPFFS;
	return 1;
}

static int read_int(const char *ifname, const char *file)
{
	char path[PATH_MAX];
	FILE *f;
	int v = -1;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", ifname, file);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

static int count_queues(const char *ifname, const char *prefix)
{
	char path[PATH_MAX];
	struct dirent *d;
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", ifname);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, prefix, strlen(prefix)))
			n++;
	closedir(dir);
	return n;
}

static void pin_dir(const char *ifname, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", MROCE_PIN_ROOT, ifname);
}

static bool pins_exist(const char *ifname)
{
	char path[PATH_MAX];
	struct stat st;

	pin_dir(ifname, path, sizeof(path));
	return stat(path, &st) == 0;
}

/* Find our program among those on the interface. */
static void describe_progs(struct ctl_iface_info *info)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p;

	info->mode = "-";
	if (info->ifindex <= 0)
		return;
	mp = xdp_multiprog__get_from_ifindex(info->ifindex);
	if (libxdp_get_error(mp) || !mp)
		return;
	switch (xdp_multiprog__attach_mode(mp)) {
	case XDP_MODE_NATIVE:
		info->mode = "native";
		break;
	case XDP_MODE_SKB:
		info->mode = "skb";
		break;
	case XDP_MODE_HW:
		info->mode = "hw";
		break;
	default:
		break;
	}
	info->dispatcher = !xdp_multiprog__is_legacy(mp);
	if (info->dispatcher) {
		info->n_progs = xdp_multiprog__program_count(mp);
		for (p = xdp_multiprog__next_prog(NULL, mp); p;
		     p = xdp_multiprog__next_prog(p, mp)) {
			if (!strcmp(xdp_program__name(p), CTL_PROG_NAME)) {
				info->attached = true;
				info->prog_id = xdp_program__id(p);
			}
		}
	} else {
		p = xdp_multiprog__main_prog(mp);
		info->n_progs = p ? 1 : 0;
		if (p && !strcmp(xdp_program__name(p), CTL_PROG_NAME)) {
			info->attached = true;
			info->prog_id = xdp_program__id(p);
		}
	}
	xdp_multiprog__close(mp);
}

int ctl_describe(const char *ifname, struct ctl_iface_info *info)
{
	char path[PATH_MAX];

	memset(info, 0, sizeof(*info));
	snprintf(info->ifname, sizeof(info->ifname), "%s", ifname);
	info->ifindex = (int)if_nametoindex(ifname);
	info->mtu = read_int(ifname, "mtu");
	info->rx_queues = count_queues(ifname, "rx-");
	info->tx_queues = count_queues(ifname, "tx-");
	info->pinned = pins_exist(ifname);
	describe_progs(info);
	for (int i = 0; i < 6 && info->pinned; i++) {
		struct bpf_map_info mi;
		uint32_t len = sizeof(mi);
		int fd;

		snprintf(path, sizeof(path), "%s/%s/%s", MROCE_PIN_ROOT, ifname,
			 map_names[i]);
		fd = bpf_obj_get(path);
		if (fd < 0)
			continue;
		memset(&mi, 0, sizeof(mi));
		if (!bpf_obj_get_info_by_fd(fd, &mi, &len))
			info->map_ids[i] = mi.id;
		close(fd);
	}
	return info->ifindex > 0 ? 0 : -MROCE_XDP_E_NO_IFACE;
}

static void unpin_all(const char *ifname)
{
	char path[PATH_MAX];

	for (int i = 0; i < 6; i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", MROCE_PIN_ROOT, ifname,
			 map_names[i]);
		unlink(path);
	}
	pin_dir(ifname, path, sizeof(path));
	rmdir(path);
	rmdir(MROCE_PIN_ROOT); /* only succeeds when empty */
}

static int pin_all(struct mroce_xdp *skel, const char *ifname)
{
	struct bpf_map *maps[6] = {skel->maps.conns,	  skel->maps.xsks,
				   skel->maps.rx_state,	  skel->maps.scoreboard,
				   skel->maps.counters,	  skel->maps.ack_limit};
	struct mroce_ack_limit lim = {.per_ms = MROCE_ACK_LIMIT_PER_MS,
				      .path_gap_us =
					      MROCE_ACK_LIMIT_PATH_GAP_US};
	__u32 zero = 0;
	char path[PATH_MAX];

	if (mkdir(MROCE_PIN_ROOT, 0700) && errno != EEXIST)
		return -MROCE_XDP_E_PIN;
	pin_dir(ifname, path, sizeof(path));
	if (mkdir(path, 0700) && errno != EEXIST)
		return -MROCE_XDP_E_PIN;
	for (int i = 0; i < 6; i++) {
		snprintf(path, sizeof(path), "%s/%s/%s", MROCE_PIN_ROOT, ifname,
			 map_names[i]);
		if (bpf_map__pin(maps[i], path))
			return -MROCE_XDP_E_PIN;
	}
	/* Until this, the limit is 0: no XDP ACK. */
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ack_limit), &zero,
				&lim, BPF_ANY))
		return -MROCE_XDP_E_MAP;
	return 0;
}

static void set_rodata(struct mroce_xdp *skel, const struct ctl_attach_opts *o)
{
	skel->rodata->cfg_ack_offload = o->ack_offload;
	if (o->mroce_port)
		skel->rodata->cfg_mroce_port = o->mroce_port;
	if (o->rocev2_port)
		skel->rodata->cfg_rocev2_port = o->rocev2_port;
}

/* Load once on its own, so a verifier refusal is told apart from an
 * attach refusal (libxdp reports both as -EINVAL). */
static int trial_load(const struct ctl_attach_opts *o)
{
	struct mroce_xdp *trial = mroce_xdp__open();
	int err;

	if (!trial)
		return -MROCE_XDP_E_LOAD;
	set_rodata(trial, o);
	err = mroce_xdp__load(trial);
	mroce_xdp__destroy(trial);
	if (err)
		return err == -EPERM ? -MROCE_XDP_E_NO_PRIV : -MROCE_XDP_E_LOAD;
	return 0;
}

int ctl_attach(const char *ifname, const struct ctl_attach_opts *o,
	       struct ctl_iface_info *info)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, xopts);
	struct mroce_xdp *skel;
	struct xdp_program *prog;
	int err;

	if (geteuid() != 0)
		return -MROCE_XDP_E_NO_PRIV;
	/* bpffs first: libxdp decides once whether it can use one */
	err = ctl_ensure_bpffs();
	if (err < 0)
		return err;
	if (ctl_describe(ifname, info))
		return -MROCE_XDP_E_NO_IFACE;
	info->bpffs_mounted = err == 1;
	/* A bpffs we just mounted dies with this mount namespace (the end
	 * of `ip netns exec`), and with it the dispatcher's pinned links:
	 * the program would silently stop running. Attach it alone then;
	 * it stays attached, holding its maps, until detach. */
	if (info->bpffs_mounted)
		setenv("LIBXDP_SKIP_DISPATCHER", "1", 1);
	if (info->attached || info->pinned)
		return -MROCE_XDP_E_ALREADY_ATTACHED;

	err = trial_load(o);
	if (err)
		return err;

	skel = mroce_xdp__open();
	if (!skel)
		return -MROCE_XDP_E_LOAD;
	set_rodata(skel, o);
	xopts.obj = skel->obj;
	xopts.prog_name = CTL_PROG_NAME;
	prog = xdp_program__create(&xopts);
	if (libxdp_get_error(prog) || !prog) {
		mroce_xdp__destroy(skel);
		return -MROCE_XDP_E_LOAD;
	}
	/* libxdp does not take this from the "xdp.frags" section of an
	 * object it did not open itself */
	xdp_program__set_xdp_frags_support(prog, true);
	err = xdp_program__attach(
		prog, info->ifindex,
		o->mode == CTL_MODE_SKB ? XDP_MODE_SKB : XDP_MODE_NATIVE, 0);
	if (err) {
		xdp_program__close(prog);
		mroce_xdp__destroy(skel);
		if (err == -EPERM)
			return -MROCE_XDP_E_NO_PRIV;
		if (o->mode != CTL_MODE_SKB &&
		    (err == -EINVAL || err == -EOPNOTSUPP || err == -ERANGE ||
		     err == -ENOSPC || err == -E2BIG))
			return -MROCE_XDP_E_NATIVE_REFUSED;
		return -MROCE_XDP_E_ATTACH;
	}
	err = pin_all(skel, ifname);
	if (err) {
		xdp_program__detach(prog, info->ifindex,
				    o->mode == CTL_MODE_SKB ? XDP_MODE_SKB
							    : XDP_MODE_NATIVE,
				    0);
		unpin_all(ifname);
	}
	/* The attachment lives on (dispatcher links pinned by libxdp, or
	 * the netlink attachment); the maps live on in their pins. */
	xdp_program__close(prog);
	mroce_xdp__destroy(skel);
	if (!err) {
		bool mounted = info->bpffs_mounted;

		ctl_describe(ifname, info);
		info->bpffs_mounted = mounted;
	}
	return err;
}

int ctl_detach(const char *ifname)
{
	struct ctl_iface_info info;
	struct xdp_multiprog *mp;
	struct xdp_program *p;
	bool found = false;
	int err = 0;

	if (geteuid() != 0)
		return -MROCE_XDP_E_NO_PRIV;
	err = ctl_ensure_bpffs();
	if (err < 0)
		return err;
	err = 0;
	ctl_describe(ifname, &info);
	if (info.ifindex <= 0 && !info.pinned)
		return -MROCE_XDP_E_NO_IFACE;
	if (info.ifindex > 0) {
		mp = xdp_multiprog__get_from_ifindex(info.ifindex);
		if (!libxdp_get_error(mp) && mp) {
			enum xdp_attach_mode mode =
				xdp_multiprog__attach_mode(mp);

			if (xdp_multiprog__is_legacy(mp))
				p = xdp_multiprog__main_prog(mp);
			else
				p = xdp_multiprog__next_prog(NULL, mp);
			for (; p;
			     p = xdp_multiprog__is_legacy(mp)
					 ? NULL
					 : xdp_multiprog__next_prog(p, mp)) {
				if (strcmp(xdp_program__name(p), CTL_PROG_NAME))
					continue;
				found = true;
				if (xdp_program__detach(p, info.ifindex, mode,
							0))
					err = -MROCE_XDP_E_ATTACH;
				break;
			}
			xdp_multiprog__close(mp);
		}
	}
	if (!found && !info.pinned)
		return -MROCE_XDP_E_NOT_ATTACHED;
	unpin_all(ifname);
	return err;
}

int ctl_list_pinned(char names[][32], int max)
{
	struct dirent *d;
	DIR *dir;
	int n = 0;

	dir = opendir(MROCE_PIN_ROOT);
	if (!dir)
		return errno == ENOENT ? 0 : -MROCE_XDP_E_BPFFS;
	while ((d = readdir(dir)) && n < max) {
		if (d->d_name[0] == '.' || strlen(d->d_name) >= 32)
			continue;
		memcpy(names[n++], d->d_name, strlen(d->d_name) + 1);
	}
	closedir(dir);
	return n;
}
