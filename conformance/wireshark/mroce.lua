-- SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
--
-- Wireshark dissector for MetaRoCE v0 (UDP port 4792), as specified in
-- docs/spec.md, plus a RoCEv2 ICRC checker (the stock InfiniBand dissector
-- shows the RoCEv2 ICRC but does not verify it).
--
-- Written from docs/spec.md alone, not from our C code, so the interop
-- tests compare two independent implementations of the wire format.
-- Needs Wireshark >= 3.0 (Lua 5.2 with bit32). Load it with
--   tshark -X lua_script:conformance/wireshark/mroce.lua -r file.pcap
-- or copy it to ~/.local/lib/wireshark/plugins/ (see README.md).

local MROCE_PORT = 4792
local ROCEV2_PORT = 4791
local MROCE_WIRE_VERSION = 0
local HDR_LEN = 12
local ICRC_LEN = 4
local SACK_BYTES = 32

-- ---------------------------------------------------------------------
-- CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as zlib's crc32)
-- ---------------------------------------------------------------------
local band, bxor, bnot, rshift = bit32.band, bit32.bxor, bit32.bnot,
	bit32.rshift

local crc_table = {}
for i = 0, 255 do
	local c = i
	for _ = 1, 8 do
		if band(c, 1) ~= 0 then
			c = bxor(0xedb88320, rshift(c, 1))
		else
			c = rshift(c, 1)
		end
	end
	crc_table[i] = c
end

-- Continue a CRC-32 (crc = 0 to start) over the bytes of Lua string s.
local function crc32(crc, s)
	crc = bnot(crc)
	for i = 1, #s do
		crc = bxor(crc_table[band(bxor(crc, s:byte(i)), 0xff)],
			rshift(crc, 8))
	end
	return bnot(crc)
end

-- ---------------------------------------------------------------------
-- Protocol tables (docs/spec.md "Packet types")
-- ---------------------------------------------------------------------
local EXT_SEQ, EXT_MSG, EXT_RADDR, EXT_SINK = 0x001, 0x002, 0x004, 0x008
local EXT_SEND, EXT_IMM, EXT_ACK, EXT_NAK = 0x010, 0x020, 0x040, 0x080
local EXT_PROBE, EXT_REROLL, EXT_CONN = 0x100, 0x200, 0x400
local DATA = EXT_SEQ + EXT_MSG

-- Extension headers in wire order, with their lengths.
local EXT_ORDER = {
	{ EXT_SEQ, 8 }, { EXT_MSG, 16 }, { EXT_RADDR, 12 }, { EXT_SINK, 12 },
	{ EXT_SEND, 4 }, { EXT_IMM, 4 }, { EXT_ACK, 48 }, { EXT_NAK, 16 },
	{ EXT_PROBE, 8 }, { EXT_REROLL, 8 }, { EXT_CONN, 40 },
}

-- opcode -> { name, extension headers, may carry payload }
local OPS = {
	[0x01] = { "SEND", DATA + EXT_SEND, true },
	[0x02] = { "SEND_IMM", DATA + EXT_SEND + EXT_IMM, true },
	[0x03] = { "WRITE", DATA + EXT_RADDR, true },
	[0x04] = { "WRITE_IMM", DATA + EXT_RADDR + EXT_IMM, true },
	[0x05] = { "READ_REQ", DATA + EXT_RADDR + EXT_SINK, false },
	[0x06] = { "READ_RESP", DATA + EXT_RADDR, true },
	[0x10] = { "ACK", EXT_ACK, false },
	[0x11] = { "NAK", EXT_NAK, false },
	[0x12] = { "PROBE", EXT_PROBE, true }, -- padding (spec 5.10)
	[0x13] = { "PATH_REROLL", EXT_REROLL, false },
	[0x20] = { "CONNECT_REQ", EXT_CONN, false },
	[0x21] = { "CONNECT_CHALLENGE", EXT_CONN, false },
	[0x22] = { "CONNECT_CONFIRM", EXT_CONN, false },
	[0x23] = { "CONNECT_ACCEPT", EXT_CONN, false },
	[0x24] = { "CLOSE", EXT_CONN, false },
	[0x25] = { "CLOSE_ACK", EXT_CONN, false },
}

local op_names = {}
for code, d in pairs(OPS) do op_names[code] = d[1] end

local nak_names = {
	[1] = "OUT_OF_WINDOW", [2] = "BAD_RKEY", [3] = "OUT_OF_BOUNDS",
	[4] = "ACCESS", [5] = "RNR", [6] = "INVALID_REQ", [7] = "NO_CONN",
	[8] = "REMOTE_OP", [9] = "STALE_PATH",
}
local reroll_names = {
	[1] = "LOSS", [2] = "TIMEOUT", [3] = "ECN", [4] = "ADMIN",
}
local close_names = { [0] = "NORMAL", [1] = "ERROR", [2] = "TIMEOUT" }
-- Same numbering as Wireshark's own checksum status fields.
local status_names = { [0] = "Bad", [1] = "Good", [2] = "Unverified" }
local ST_BAD, ST_GOOD, ST_UNVERIFIED = 0, 1, 2

local function has(ext, bit) return band(ext, bit) ~= 0 end

-- ---------------------------------------------------------------------
-- MetaRoCE fields
-- ---------------------------------------------------------------------
local mroce = Proto("mroce", "MetaRoCE v0")
local F = ProtoField
local f = {
	version = F.uint8("mroce.version", "Version", base.DEC),
	opcode = F.uint8("mroce.opcode", "Opcode", base.HEX, op_names),
	flags = F.uint8("mroce.flags", "Flags", base.HEX),
	f_ackreq = F.bool("mroce.flags.ack_req", "ACK request", 8, nil, 0x80),
	f_se = F.bool("mroce.flags.solicited", "Solicited", 8, nil, 0x40),
	f_retx = F.bool("mroce.flags.retx", "Retransmission", 8, nil, 0x20),
	f_last = F.bool("mroce.flags.last", "Last of message", 8, nil, 0x10),
	f_check = F.bool("mroce.flags.check", "Port check (PROBE)", 8, nil,
		0x08),
	f_resv = F.uint8("mroce.flags.reserved", "Reserved", base.HEX, nil,
		0x07),
	hdr_words = F.uint8("mroce.hdr_words", "Header words", base.DEC),
	conn_id = F.uint32("mroce.conn_id", "Connection id", base.HEX),
	path = F.uint8("mroce.path", "Path slot", base.DEC),
	path_gen = F.uint8("mroce.path_gen", "Path generation", base.DEC),
	payload_len = F.uint16("mroce.payload_len", "Payload length",
		base.DEC),
	-- SEQ
	psn = F.uint32("mroce.psn", "PSN", base.HEX),
	tsval = F.uint32("mroce.tsval", "Timestamp", base.HEX),
	-- MSG
	stream = F.uint32("mroce.stream", "Stream", base.HEX),
	msn = F.uint32("mroce.msn", "Message sequence number", base.HEX),
	offset = F.uint32("mroce.offset", "Offset in message", base.HEX),
	msg_len = F.uint32("mroce.msg_len", "Message length", base.HEX),
	-- RADDR, SINK, SEND, IMM
	va = F.uint64("mroce.va", "Remote address (message byte 0)",
		base.HEX),
	rkey = F.uint32("mroce.rkey", "Remote key", base.HEX),
	sink_va = F.uint64("mroce.sink_va", "Sink address", base.HEX),
	sink_key = F.uint32("mroce.sink_key", "Sink key", base.HEX),
	ssn = F.uint32("mroce.ssn", "SEND sequence number", base.HEX),
	imm = F.uint32("mroce.imm", "Immediate data", base.HEX),
	-- ACK
	cum_psn = F.uint32("mroce.ack.cum_psn", "Cumulative PSN", base.HEX),
	tsecr = F.uint32("mroce.ack.tsecr", "Timestamp echo", base.HEX),
	rate = F.uint32("mroce.ack.rate_mbps", "Rate hint (Mbit/s)",
		base.DEC),
	ce_count = F.uint16("mroce.ack.ce_count", "CE count", base.DEC),
	ack_flags = F.uint8("mroce.ack.flags", "ACK flags", base.HEX),
	af_dup = F.bool("mroce.ack.flags.dup", "Duplicate", 8, nil, 0x01),
	af_probe = F.bool("mroce.ack.flags.probe", "Answers PROBE", 8, nil,
		0x02),
	af_xdp = F.bool("mroce.ack.flags.xdp", "From kernel fast path", 8,
		nil, 0x04),
	af_ece = F.bool("mroce.ack.flags.ece", "ECN echo", 8, nil, 0x08),
	ack_resv = F.uint8("mroce.ack.resv", "Reserved", base.HEX),
	sack = F.bytes("mroce.ack.sack", "SACK bitvector"),
	sack_count = F.uint16("mroce.ack.sack_count", "SACKed packets",
		base.DEC),
	sack_psn = F.uint32("mroce.ack.sack_psn", "SACKed PSN", base.HEX),
	-- NAK
	nak_code = F.uint8("mroce.nak.code", "NAK code", base.DEC, nak_names),
	rnr_timer = F.uint8("mroce.nak.rnr_timer", "RNR timer (x10 us)",
		base.DEC),
	nak_resv = F.uint16("mroce.nak.resv", "Reserved", base.HEX),
	nak_stream = F.uint32("mroce.nak.stream", "Stream", base.HEX),
	nak_msn = F.uint32("mroce.nak.msn", "MSN", base.HEX),
	nak_psn = F.uint32("mroce.nak.psn", "PSN", base.HEX),
	-- PROBE
	next_psn = F.uint32("mroce.probe.next_psn", "Next PSN", base.HEX),
	probe_tsval = F.uint32("mroce.probe.tsval", "Timestamp", base.HEX),
	-- PATH_REROLL
	old_gen = F.uint8("mroce.reroll.old_gen", "Old generation", base.DEC),
	new_gen = F.uint8("mroce.reroll.new_gen", "New generation", base.DEC),
	new_sport = F.uint16("mroce.reroll.new_sport", "New source port",
		base.HEX),
	rr_reason = F.uint8("mroce.reroll.reason", "Reason", base.DEC,
		reroll_names),
	rr_resv = F.bytes("mroce.reroll.resv", "Reserved"),
	-- CONN
	src_conn_id = F.uint32("mroce.conn.src_conn_id",
		"Sender's connection id", base.HEX),
	isn = F.uint32("mroce.conn.isn", "Initial sequence number", base.HEX),
	nonce = F.uint64("mroce.conn.nonce", "Nonce", base.HEX),
	cookie = F.uint64("mroce.conn.cookie", "Cookie", base.HEX),
	cookie_time = F.uint32("mroce.conn.cookie_time", "Cookie time",
		base.HEX),
	mtu = F.uint16("mroce.conn.mtu", "MTU (max payload)", base.DEC),
	max_paths = F.uint8("mroce.conn.max_paths", "Max paths", base.DEC),
	caps = F.uint8("mroce.conn.caps", "Capabilities", base.HEX),
	reason = F.uint32("mroce.conn.reason", "Close reason", base.DEC,
		close_names),
	conn_resv = F.uint32("mroce.conn.resv", "Reserved", base.HEX),
	-- payload and ICRC
	payload = F.bytes("mroce.payload", "Payload"),
	icrc = F.uint32("mroce.icrc", "ICRC", base.HEX),
	icrc_status = F.uint8("mroce.icrc.status", "ICRC status", base.DEC,
		status_names),
	icrc_calc = F.uint32("mroce.icrc.computed", "Computed ICRC",
		base.HEX),
}
local field_list = {}
for _, v in pairs(f) do field_list[#field_list + 1] = v end
mroce.fields = field_list

local e_bad_icrc = ProtoExpert.new("mroce.icrc.bad", "Bad ICRC",
	expert.group.CHECKSUM, expert.severity.ERROR)
local e_malformed = ProtoExpert.new("mroce.malformed",
	"Malformed MetaRoCE packet", expert.group.MALFORMED,
	expert.severity.ERROR)
local e_version = ProtoExpert.new("mroce.bad_version",
	"Unknown MetaRoCE version (receivers drop it)",
	expert.group.PROTOCOL, expert.severity.WARN)
local e_reserved = ProtoExpert.new("mroce.reserved_nonzero",
	"Reserved bits set (must be zero on send, ignored on receive)",
	expert.group.PROTOCOL, expert.severity.NOTE)
mroce.experts = { e_bad_icrc, e_malformed, e_version, e_reserved }

-- ---------------------------------------------------------------------
-- MetaRoCE dissection
-- ---------------------------------------------------------------------
local function add_seq(t, tvb, o, info)
	local s = t:add(tvb(o, 8), "SEQ")
	s:add(f.psn, tvb(o, 4))
	s:add(f.tsval, tvb(o + 4, 4))
	info[#info + 1] = string.format("psn=0x%08x", tvb(o, 4):uint())
end

local function add_msg(t, tvb, o, info)
	local s = t:add(tvb(o, 16), "MSG")
	s:add(f.stream, tvb(o, 4))
	s:add(f.msn, tvb(o + 4, 4))
	s:add(f.offset, tvb(o + 8, 4))
	s:add(f.msg_len, tvb(o + 12, 4))
	info[#info + 1] = string.format("stream=0x%x msn=0x%x off=0x%x/0x%x",
		tvb(o, 4):uint(), tvb(o + 4, 4):uint(), tvb(o + 8, 4):uint(),
		tvb(o + 12, 4):uint())
end

local function add_raddr(t, tvb, o, info)
	local s = t:add(tvb(o, 12), "RADDR")
	s:add(f.va, tvb(o, 8))
	s:add(f.rkey, tvb(o + 8, 4))
	info[#info + 1] = string.format("rkey=0x%08x", tvb(o + 8, 4):uint())
end

local function add_sink(t, tvb, o, info)
	local s = t:add(tvb(o, 12), "SINK")
	s:add(f.sink_va, tvb(o, 8))
	s:add(f.sink_key, tvb(o + 8, 4))
end

local function add_send(t, tvb, o, info)
	t:add(tvb(o, 4), "SEND"):add(f.ssn, tvb(o, 4))
	info[#info + 1] = string.format("ssn=0x%x", tvb(o, 4):uint())
end

local function add_imm(t, tvb, o, info)
	t:add(tvb(o, 4), "IMM"):add(f.imm, tvb(o, 4))
	info[#info + 1] = string.format("imm=0x%08x", tvb(o, 4):uint())
end

local function add_ack(t, tvb, o, info)
	local s = t:add(tvb(o, 48), "ACK")
	local cum = tvb(o, 4):uint()
	s:add(f.cum_psn, tvb(o, 4))
	s:add(f.tsecr, tvb(o + 4, 4))
	s:add(f.rate, tvb(o + 8, 4))
	s:add(f.ce_count, tvb(o + 12, 2))
	local af = s:add(f.ack_flags, tvb(o + 14, 1))
	af:add(f.af_ece, tvb(o + 14, 1))
	af:add(f.af_xdp, tvb(o + 14, 1))
	af:add(f.af_probe, tvb(o + 14, 1))
	af:add(f.af_dup, tvb(o + 14, 1))
	s:add(f.ack_resv, tvb(o + 15, 1))
	-- bit i (byte i/8, least significant bit first) = PSN cum+1+i
	local st = s:add(f.sack, tvb(o + 16, SACK_BYTES))
	local n = 0
	for i = 0, SACK_BYTES * 8 - 1 do
		local byte = tvb(o + 16 + math.floor(i / 8), 1):uint()
		if band(byte, bit32.lshift(1, i % 8)) ~= 0 then
			n = n + 1
			st:add(f.sack_psn, tvb(o + 16 + math.floor(i / 8), 1),
				band(cum + 1 + i, 0xffffffff))
		end
	end
	s:add(f.sack_count, n):set_generated()
	info[#info + 1] = string.format("cum=0x%08x sack=%d ce=%d rate=%d",
		cum, n, tvb(o + 12, 2):uint(), tvb(o + 8, 4):uint())
end

local function add_nak(t, tvb, o, info)
	local s = t:add(tvb(o, 16), "NAK")
	local code = tvb(o, 1):uint()
	s:add(f.nak_code, tvb(o, 1))
	s:add(f.rnr_timer, tvb(o + 1, 1))
	s:add(f.nak_resv, tvb(o + 2, 2))
	s:add(f.nak_stream, tvb(o + 4, 4))
	s:add(f.nak_msn, tvb(o + 8, 4))
	s:add(f.nak_psn, tvb(o + 12, 4))
	info[#info + 1] = string.format("%s psn=0x%08x",
		nak_names[code] or ("code " .. code), tvb(o + 12, 4):uint())
end

local function add_probe(t, tvb, o, info)
	local s = t:add(tvb(o, 8), "PROBE")
	s:add(f.next_psn, tvb(o, 4))
	s:add(f.probe_tsval, tvb(o + 4, 4))
	info[#info + 1] = string.format("next_psn=0x%08x", tvb(o, 4):uint())
end

local function add_reroll(t, tvb, o, info)
	local s = t:add(tvb(o, 8), "PATH_REROLL")
	s:add(f.old_gen, tvb(o, 1))
	s:add(f.new_gen, tvb(o + 1, 1))
	s:add(f.new_sport, tvb(o + 2, 2))
	s:add(f.rr_reason, tvb(o + 4, 1))
	s:add(f.rr_resv, tvb(o + 5, 3))
	info[#info + 1] = string.format("gen %d->%d %s", tvb(o, 1):uint(),
		tvb(o + 1, 1):uint(),
		reroll_names[tvb(o + 4, 1):uint()] or "?")
end

local function add_conn(t, tvb, o, info)
	local s = t:add(tvb(o, 40), "CONN")
	s:add(f.src_conn_id, tvb(o, 4))
	s:add(f.isn, tvb(o + 4, 4))
	s:add(f.nonce, tvb(o + 8, 8))
	s:add(f.cookie, tvb(o + 16, 8))
	s:add(f.cookie_time, tvb(o + 24, 4))
	s:add(f.mtu, tvb(o + 28, 2))
	s:add(f.max_paths, tvb(o + 30, 1))
	s:add(f.caps, tvb(o + 31, 1))
	s:add(f.reason, tvb(o + 32, 4))
	s:add(f.conn_resv, tvb(o + 36, 4))
	info[#info + 1] = string.format("src_conn_id=0x%08x",
		tvb(o, 4):uint())
end

local EXT_ADD = {
	[EXT_SEQ] = add_seq, [EXT_MSG] = add_msg, [EXT_RADDR] = add_raddr,
	[EXT_SINK] = add_sink, [EXT_SEND] = add_send, [EXT_IMM] = add_imm,
	[EXT_ACK] = add_ack, [EXT_NAK] = add_nak, [EXT_PROBE] = add_probe,
	[EXT_REROLL] = add_reroll, [EXT_CONN] = add_conn,
}

function mroce.dissector(tvb, pinfo, tree)
	local len = tvb:len()
	pinfo.cols.protocol = "MetaRoCE"
	local t = tree:add(mroce, tvb())
	if len < HDR_LEN then
		t:add_proto_expert_info(e_malformed, "shorter than the header")
		pinfo.cols.info = "MetaRoCE [truncated]"
		return len
	end
	local version, opcode = tvb(0, 1):uint(), tvb(1, 1):uint()
	t:add(f.version, tvb(0, 1))
	if version ~= MROCE_WIRE_VERSION then
		t:add_proto_expert_info(e_version)
		pinfo.cols.info = string.format("MetaRoCE version %d", version)
		return len
	end
	t:add(f.opcode, tvb(1, 1))
	local d = OPS[opcode]
	if not d then
		-- Unknown opcode: nothing after it can be trusted, so no
		-- length arithmetic at all.
		t:add_proto_expert_info(e_malformed, "unknown opcode")
		pinfo.cols.info = string.format("MetaRoCE opcode 0x%02x?",
			opcode)
		return len
	end
	local ft = t:add(f.flags, tvb(2, 1))
	ft:add(f.f_ackreq, tvb(2, 1))
	ft:add(f.f_se, tvb(2, 1))
	ft:add(f.f_retx, tvb(2, 1))
	ft:add(f.f_last, tvb(2, 1))
	ft:add(f.f_check, tvb(2, 1))
	ft:add(f.f_resv, tvb(2, 1))
	if band(tvb(2, 1):uint(), 0x0f) ~= 0 then
		ft:add_proto_expert_info(e_reserved)
	end
	local hw = t:add(f.hdr_words, tvb(3, 1))
	t:add(f.conn_id, tvb(4, 4))
	t:add(f.path, tvb(8, 1))
	t:add(f.path_gen, tvb(9, 1))
	local plt = t:add(f.payload_len, tvb(10, 2))

	local name, ext = d[1], d[2]
	local hlen = HDR_LEN
	for _, e in ipairs(EXT_ORDER) do
		if has(ext, e[1]) then hlen = hlen + e[2] end
	end
	local info = { name }
	if tvb(4, 4):uint() ~= 0 then
		info[#info + 1] = string.format("conn=0x%08x", tvb(4, 4):uint())
	end
	if has(ext, EXT_SEQ) or has(ext, EXT_ACK) or has(ext, EXT_NAK) or
	   has(ext, EXT_PROBE) or has(ext, EXT_REROLL) then
		info[#info + 1] = string.format("path=%d.%d",
			tvb(8, 1):uint(), tvb(9, 1):uint())
	end
	pinfo.cols.info = table.concat(info, " ")

	if tvb(3, 1):uint() * 4 ~= hlen then
		hw:add_proto_expert_info(e_malformed, string.format(
			"hdr_words should be %d for %s", hlen / 4, name))
		return len
	end
	local plen = tvb(10, 2):uint()
	if not d[3] and plen ~= 0 then
		plt:add_proto_expert_info(e_malformed,
			name .. " carries no payload")
	end
	if len < hlen + plen + ICRC_LEN then
		t:add_proto_expert_info(e_malformed,
			"truncated: headers + payload_len + ICRC exceed the"
			.. " UDP payload")
		return len
	end
	if len ~= hlen + plen + ICRC_LEN then
		plt:add_proto_expert_info(e_malformed,
			"payload_len disagrees with the UDP length")
	end

	local o = HDR_LEN
	for _, e in ipairs(EXT_ORDER) do
		if has(ext, e[1]) then
			EXT_ADD[e[1]](t, tvb, o, info)
			o = o + e[2]
		end
	end
	if has(ext, EXT_MSG) then
		local off, ml = tvb(HDR_LEN + 16, 4):uint(),
			tvb(HDR_LEN + 20, 4):uint()
		if off + plen > ml then
			t:add_proto_expert_info(e_malformed,
				"offset + payload_len exceeds msg_len")
		end
	end
	if plen > 0 then
		t:add(f.payload, tvb(hlen, plen))
	end

	-- ICRC: CRC-32 over everything before it, stored big-endian.
	local it = t:add(f.icrc, tvb(hlen + plen, 4))
	local want = tvb(hlen + plen, 4):uint()
	if tvb:captured_len() < hlen + plen + ICRC_LEN then
		t:add(f.icrc_status, ST_UNVERIFIED):set_generated()
	else
		local got = crc32(0, tvb:raw(0, hlen + plen))
		t:add(f.icrc_calc, got):set_generated()
		if got == want then
			t:add(f.icrc_status, ST_GOOD):set_generated()
		else
			t:add(f.icrc_status, ST_BAD):set_generated()
			it:add_proto_expert_info(e_bad_icrc, string.format(
				"Bad ICRC: 0x%08x, computed 0x%08x", want,
				got))
			info[#info + 1] = "[BAD ICRC]"
		end
	end
	pinfo.cols.info = table.concat(info, " ")
	return len
end

DissectorTable.get("udp.port"):add(MROCE_PORT, mroce)

-- ---------------------------------------------------------------------
-- RoCEv2 ICRC check (postdissector)
-- ---------------------------------------------------------------------
-- The ICRC covers a pseudo-packet: 8 bytes of 0xff (for the InfiniBand
-- LRH), the IP header with its mutable fields set to all ones, the UDP
-- header with checksum 0xffff, the BTH with byte 4 (FECN/BECN/reserved)
-- 0xff, then the rest up to the ICRC, which is stored little-endian.
local rv2 = Proto("rocev2_icrc", "RoCEv2 ICRC check")
local rf = {
	status = F.uint8("rocev2_icrc.status", "ICRC status", base.DEC,
		status_names),
	computed = F.uint32("rocev2_icrc.computed", "Computed ICRC",
		base.HEX),
	wire = F.uint32("rocev2_icrc.wire", "ICRC on the wire (LE value)",
		base.HEX),
}
rv2.fields = { rf.status, rf.computed, rf.wire }
local e_rv2_bad = ProtoExpert.new("rocev2_icrc.bad", "Bad RoCEv2 ICRC",
	expert.group.CHECKSUM, expert.severity.ERROR)
rv2.experts = { e_rv2_bad }

local udp_dport = Field.new("udp.dstport")

-- Replace bytes [i, i+n) of string s (1-based i) with 0xff.
local function ones(s, i, n)
	return s:sub(1, i - 1) .. string.rep("\255", n) .. s:sub(i + n)
end

local function le32(s, i)
	local a, b, c, d = s:byte(i, i + 3)
	return a + b * 0x100 + c * 0x10000 + d * 0x1000000
end

function rv2.dissector(tvb, pinfo, tree)
	local dp = udp_dport()
	if not dp or dp.value ~= ROCEV2_PORT then return end
	-- Walk Ethernet / optional 802.1Q / IPv4 or IPv6 / UDP ourselves: a
	-- postdissector sees the whole frame.
	local len = tvb:captured_len()
	if len ~= tvb:reported_length_remaining() or len < 14 then return end
	local l3 = 14
	local et = tvb(12, 2):uint()
	if et == 0x8100 then
		if len < 18 then return end
		et, l3 = tvb(16, 2):uint(), 18
	end
	local ip, udp
	if et == 0x0800 then
		if len < l3 + 20 then return end
		local ihl = band(tvb(l3, 1):uint(), 0x0f) * 4
		ip = tvb:raw(l3, ihl)
		ip = ones(ip, 2, 1)	-- TOS
		ip = ones(ip, 9, 1)	-- TTL
		ip = ones(ip, 11, 2)	-- header checksum
		udp = l3 + ihl
	elseif et == 0x86dd then
		if len < l3 + 40 or tvb(l3 + 6, 1):uint() ~= 17 then return end
		ip = tvb:raw(l3, 40)
		-- traffic class and flow label (all of bytes 1-3, low nibble
		-- of byte 0), hop limit
		ip = string.char(bit32.bor(ip:byte(1), 0x0f)) .. ip:sub(2)
		ip = ones(ip, 2, 3)
		ip = ones(ip, 8, 1)
		udp = l3 + 40
	else
		return
	end
	if len < udp + 8 then return end
	local ulen = tvb(udp + 4, 2):uint()
	if ulen < 8 + 12 + ICRC_LEN or len < udp + ulen then return end
	local uh = ones(tvb:raw(udp, 8), 7, 2)
	local body = tvb:raw(udp + 8, ulen - 8 - ICRC_LEN)
	body = ones(body, 5, 1)
	local crc = crc32(0, string.rep("\255", 8))
	crc = crc32(crc, ip)
	crc = crc32(crc, uh)
	crc = crc32(crc, body)
	local wire = le32(tvb:raw(udp + ulen - ICRC_LEN, 4), 1)
	local t = tree:add(rv2, tvb(udp + ulen - ICRC_LEN, 4))
	t:add(rf.wire, tvb(udp + ulen - ICRC_LEN, 4), wire)
	t:add(rf.computed, crc):set_generated()
	if crc == wire then
		t:add(rf.status, ST_GOOD):set_generated()
	else
		t:add(rf.status, ST_BAD):set_generated()
		t:add_proto_expert_info(e_rv2_bad, string.format(
			"Bad RoCEv2 ICRC: 0x%08x, computed 0x%08x", wire, crc))
		pinfo.cols.info:append(" [BAD ICRC]")
	end
end

register_postdissector(rv2)
