/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Counters of the XDP fast path: one X-macro list gives the BPF side its
 * struct (named __u64 fields, so `bpftool map dump` prints the names from
 * BTF) and userspace its name/description table.
 *
 * Who may include this: BPF programs AND userspace. Only <linux/types.h>.
 *
 * The map "counters" is a per-CPU array with one entry; readers sum the
 * CPUs. Every packet the program sees increments rx_packets and exactly one
 * verdict counter: a pass_*, a drop_*, a redirect_* or a tx_* counter (the
 * others - rx_metaroce, rx_rocev2, rx_ce, ack_* - are informational).
 */
#ifndef MROCE_COUNTERS_H
#define MROCE_COUNTERS_H

#include <linux/types.h>

/* X(name, description) in the order bpftool prints them. */
#define MROCE_XDP_COUNTERS(X)                                                  \
	X(rx_packets, "frames seen by the program")                            \
	X(rx_metaroce, "MetaRoCE frames (UDP 4792)")                           \
	X(rx_rocev2, "RoCEv2 frames (UDP 4791)")                               \
	X(rx_ce, "our frames carrying ECN CE")                                 \
	X(pass_not_ip, "passed: neither IPv4 nor IPv6 (ARP, LLDP, ...)")       \
	X(pass_not_udp, "passed: no UDP header (ICMP, TCP, IPv6 ext, frag)")   \
	X(pass_other_port, "passed: UDP to another port")                      \
	X(pass_malformed_ip, "passed: IP too broken to find a UDP port")       \
	X(redirect_data, "to the daemon: data of a known connection")          \
	X(redirect_ack, "to the daemon: ACK/NAK (after telemetry)")            \
	X(redirect_ctrl, "to the daemon: handshake, close, unknown conn")      \
	X(redirect_rocev2, "to the daemon: RoCEv2 of a known QP")              \
	X(tx_ack_dup, "XDP_TX: ACK answering a duplicate")                     \
	X(tx_ack_probe, "XDP_TX: ACK answering a PROBE")                       \
	X(ack_rtt_samples, "ACKs that gave an RTT sample")                     \
	X(ack_stale_gen, "ACKs for another path generation (no sample)")       \
	X(ack_offload_busy, "ACK left to the daemon: state busy or no room")   \
	X(ack_offload_larger, "ACK left to the daemon: longer than its trigger") \
	X(ack_not_peer, "not from the connection's peer: no answer, no telemetry") \
	X(ack_offload_limited, "ACK left to the daemon: over ack_limit") \
	X(ack_offload_unverified,                                              \
	  "ACK left to the daemon: trigger too long to verify here")           \
	X(ack_probe_acks_lost,                                                 \
	  "PROBE left to the daemon: it shows the daemon's ACKs lost")         \
	X(ack_probe_queued,                                                    \
	  "PROBE left to the daemon: data of its path still queued for it")   \
	X(tx_ack_bytes, "bytes of the frames XDP_TX sent as ACKs")            \
	X(tx_ack_trigger_bytes, "bytes of the frames those ACKs answered")   \
	X(drop_bad_ip_len, "dropped: IP length disagrees with the frame")      \
	X(drop_bad_ip_csum, "dropped: IPv4 header checksum wrong")             \
	X(drop_ip_frag, "dropped: fragmented IPv4 to our port")                \
	X(drop_bad_udp_len, "dropped: UDP length disagrees with IP")           \
	X(drop_trunc_hdr, "dropped: shorter than the transport header")        \
	X(drop_bad_version, "dropped: unknown version / TVer")                 \
	X(drop_bad_opcode, "dropped: unknown opcode")                          \
	X(drop_bad_hdr_len, "dropped: hdr_words disagrees with the opcode")    \
	X(drop_bad_len, "dropped: payload length disagrees with UDP")          \
	X(drop_bad_payload, "dropped: opcode must not carry payload")          \
	X(drop_bad_icrc, "dropped: PROBE, ACK or duplicate with a wrong ICRC") \
	X(drop_no_conn, "dropped: no such connection / QP")                    \
	X(drop_no_xsk, "dropped: no AF_XDP socket on the receive queue")

struct mroce_xdp_counters {
#define MROCE_X_FIELD(name, desc) __u64 name;
	MROCE_XDP_COUNTERS(MROCE_X_FIELD)
#undef MROCE_X_FIELD
};

enum mroce_xdp_counter_idx {
#define MROCE_X_IDX(name, desc) MROCE_XC_##name,
	MROCE_XDP_COUNTERS(MROCE_X_IDX)
#undef MROCE_X_IDX
		MROCE_XC__COUNT
};

_Static_assert(sizeof(struct mroce_xdp_counters) == 8 * MROCE_XC__COUNT,
	       "mroce_xdp_counters has one __u64 per counter");

#endif /* MROCE_COUNTERS_H */
