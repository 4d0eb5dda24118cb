// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Registers the mroced end-to-end scripts:
 * tests/net/daemon_udp.sh: two daemons on loopback in a private network
 * namespace, mroce_perf --daemon with --verify for both transports, two
 * applications at once, a killed application reclaimed, a killed daemon
 * (error, no hang), SIGTERM (exit 0, flush errors), named errors;
 * tests/net/daemon_afxdp.sh: a daemon per namespace over AF_XDP on a veth
 * pair (--attach), mroce_perf --daemon write_bw --verify for both
 * transports (skipped without XDP/AF_XDP);
 * tests/net/daemon_fabric.sh: daemons on the 4-path namespace fabric over
 * AF_XDP, both transports with --verify, MetaRoCE sprayed over the paths;
 * tests/net/xdp_offload.sh: the same at 1% loss, the XDP maps the daemons'
 * engines kept during the run (conns, rx_state, scoreboard, counters),
 * with and without --no-ack-offload.
 */
#include "../harness.h"

MROCE_SUITE(daemon_net_suite)
Suite *daemon_net_suite(void)
{
	Suite *s = suite_create("daemon_net");

	mroce_add_script_test(s, "daemon_udp", "tests/net/daemon_udp.sh", "",
			      180);
	mroce_add_script_test(s, "daemon_afxdp", "tests/net/daemon_afxdp.sh",
			      "", 180);
	mroce_add_script_test(s, "daemon_fabric", "tests/net/daemon_fabric.sh",
			      "", 240);
	mroce_add_script_test(s, "daemon_mq", "tests/net/daemon_mq.sh", "", 180);
	mroce_add_script_test(s, "xdp_offload", "tests/net/xdp_offload.sh", "",
			      180);
	return s;
}
