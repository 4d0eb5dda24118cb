// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Wireshark interop: stock tshark must decode our RoCEv2 frames exactly as
 * we built them, and conformance/wireshark/mroce.lua (written from
 * docs/spec.md, independently of the C codec) must decode our MetaRoCE
 * frames exactly as we built them and agree on every ICRC.
 *
 * The frames and the expected values both come from mroce_pcapgen: the
 * pcap (-o) and its manifest (--list, one "N PROTO NET key=value..." line
 * per frame). Each test runs tshark once with -T fields and compares every
 * manifest key that has a tshark field, frame by frame.
 */
#include "../harness.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_FRAMES	64
#define MAX_KV		64
#define MAX_COLS	96
#define OUT_CAP		(1 << 18)

struct kv {
	char key[32];
	char val[72];
};

struct frame_exp {
	unsigned int no;
	char proto[16];		/* "metaroce" / "rocev2" */
	char net[16];
	int nkv;
	struct kv kv[MAX_KV];
};

/* Per-test fixture: a private directory with the pcap and the manifest. */
static char dir[64];
static struct frame_exp exp_frames[MAX_FRAMES];
static int n_exp;
static char out[OUT_CAP];

/* Manifest key -> tshark field, per protocol. bytes: tshark shows the
 * field as a hex byte string, the manifest as a 32-bit number. */
struct fmap {
	const char *proto;	/* NULL: any */
	const char *key;
	const char *field;
	bool bytes;
};

static const struct fmap rocev2_map[] = {
	{ NULL, "sport", "udp.srcport", false },
	{ NULL, "dport", "udp.dstport", false },
	{ NULL, "vlan", "vlan.id", false },
	{ "rocev2", "opcode", "infiniband.bth.opcode", false },
	{ "rocev2", "se", "infiniband.bth.se", false },
	{ "rocev2", "padcnt", "infiniband.bth.padcnt", false },
	{ "rocev2", "pkey", "infiniband.bth.p_key", false },
	{ "rocev2", "qpn", "infiniband.bth.destqp", false },
	{ "rocev2", "ackreq", "infiniband.bth.a", false },
	{ "rocev2", "psn", "infiniband.bth.psn", false },
	{ "rocev2", "va", "infiniband.reth.va", false },
	{ "rocev2", "rkey", "infiniband.reth.r_key", false },
	{ "rocev2", "dmalen", "infiniband.reth.dmalen", false },
	{ "rocev2", "syndrome", "infiniband.aeth.syndrome", false },
	{ "rocev2", "msn", "infiniband.aeth.msn", false },
	{ "rocev2", "imm", "infiniband.immdt", true },
	{ "rocev2", "icrc_wire", "infiniband.invariant.crc", false },
	{ NULL, NULL, NULL, false },
};

/* MetaRoCE keys are the Lua field names without "mroce."; filled in at
 * run time from the manifest. The fixed part: */
static const struct fmap lua_map[] = {
	{ NULL, "sport", "udp.srcport", false },
	{ NULL, "dport", "udp.dstport", false },
	{ NULL, "vlan", "vlan.id", false },
	{ "metaroce", "icrc_ok", "mroce.icrc.status", false },
	{ "rocev2", "icrc_ok", "rocev2_icrc.status", false },
	{ NULL, NULL, NULL, false },
};

static const char *kv_get(const struct frame_exp *e, const char *key)
{
	for (int i = 0; i < e->nkv; i++)
		if (!strcmp(e->kv[i].key, key))
			return e->kv[i].val;
	return NULL;
}

static void parse_manifest(const char *text)
{
	const char *line = text;

	n_exp = 0;
	while (*line && n_exp < MAX_FRAMES) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		char buf[4096], *save = NULL, *tok;
		struct frame_exp *e = &exp_frames[n_exp];

		ck_assert_uint_lt(len, sizeof(buf));
		memcpy(buf, line, len);
		buf[len] = '\0';
		line = nl ? nl + 1 : line + len;
		if (!len)
			continue;
		memset(e, 0, sizeof(*e));
		tok = strtok_r(buf, " ", &save);
		ck_assert_ptr_nonnull(tok);
		e->no = (unsigned int)strtoul(tok, NULL, 10);
		tok = strtok_r(NULL, " ", &save);
		ck_assert_ptr_nonnull(tok);
		snprintf(e->proto, sizeof(e->proto), "%s", tok);
		tok = strtok_r(NULL, " ", &save);
		ck_assert_ptr_nonnull(tok);
		snprintf(e->net, sizeof(e->net), "%s", tok);
		while ((tok = strtok_r(NULL, " ", &save)) && e->nkv < MAX_KV) {
			char *eq = strchr(tok, '=');

			ck_assert_msg(eq, "manifest token '%s' lacks '='", tok);
			*eq = '\0';
			snprintf(e->kv[e->nkv].key, sizeof(e->kv[0].key), "%s",
				 tok);
			snprintf(e->kv[e->nkv].val, sizeof(e->kv[0].val), "%s",
				 eq + 1);
			e->nkv++;
		}
		ck_assert_uint_eq(e->no, (unsigned int)n_exp + 1);
		n_exp++;
	}
}

static void setup(void)
{
	char cmd[512];
	static char manifest[1 << 16];
	int rc;

	snprintf(dir, sizeof(dir), "/tmp/mroce-ws-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* --bad-icrc adds frames whose ICRC the checkers must reject. */
	snprintf(cmd, sizeof(cmd),
		 "'%s/bin/mroce_pcapgen' --bad-icrc -o '%s/s.pcap' && "
		 "'%s/bin/mroce_pcapgen' --bad-icrc --list",
		 mroce_build_dir(), dir, mroce_build_dir());
	rc = mroce_run(cmd, manifest, sizeof(manifest));
	ck_assert_msg(rc == 0, "mroce_pcapgen failed (%d): %s", rc, manifest);
	parse_manifest(manifest);
	ck_assert_int_gt(n_exp, 40);
}

static void teardown(void)
{
	char cmd[128];

	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		mroce_run(cmd, NULL, 0);
	}
	dir[0] = '\0';
}

/* Run tshark on the fixture pcap. HOME points at the private directory so
 * that the user's Wireshark profile and personal plugins (possibly an
 * installed copy of mroce.lua) cannot change the result. stderr (tshark
 * warns when run as root) goes to a file, shown only on failure. */
static int tshark(const char *args, bool lua)
{
	char cmd[8192];
	int rc;

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && HOME='%s' XDG_CONFIG_HOME='%s/.config' tshark -n "
		 "-r s.pcap %s%s%s -o udp.check_checksum:TRUE "
		 "-o ip.check_checksum:TRUE %s 2>tshark.err",
		 dir, dir, dir, lua ? "-X 'lua_script:" : "",
		 lua ? mroce_src_dir() : "",
		 lua ? "/conformance/wireshark/mroce.lua'" : "", args);
	rc = mroce_run(cmd, out, sizeof(out));
	if (rc != 0) {
		char err[4096];

		snprintf(cmd, sizeof(cmd), "cat '%s/tshark.err'", dir);
		mroce_run(cmd, err, sizeof(err));
		fprintf(stderr, "tshark failed (%d): %s\n%s\n", rc, err, out);
	}
	return rc;
}

/* Split one output line into tab-separated columns (in place). */
static int split_cols(char *line, char **cols, int max)
{
	int n = 0;

	cols[n++] = line;
	for (char *p = line; *p && n < max; p++)
		if (*p == '\t') {
			*p = '\0';
			cols[n++] = p + 1;
		}
	return n;
}

/* Compare one value. Numbers are compared as numbers (tshark prints some
 * fields in decimal, some in hex); byte strings as hex without colons. */
static bool same_value(const char *want, const char *got, bool bytes)
{
	char *end;
	unsigned long long w, g;

	if (bytes) {
		char hex[80], norm[80];
		size_t k = 0;

		w = strtoull(want, &end, 0);
		snprintf(hex, sizeof(hex), "%08llx", w);
		for (const char *p = got; *p && k + 1 < sizeof(norm); p++)
			if (*p != ':')
				norm[k++] = *p;
		norm[k] = '\0';
		return !strcasecmp(hex, norm);
	}
	w = strtoull(want, &end, 0);
	if (*want && !*end) {
		g = strtoull(got, &end, 0);
		return *got && !*end && g == w;
	}
	/* not a number (the SACK bitvector): compare hex text */
	char norm[128];
	size_t k = 0;

	for (const char *p = got; *p && k + 1 < sizeof(norm); p++)
		if (*p != ':')
			norm[k++] = *p;
	norm[k] = '\0';
	return !strcasecmp(want, norm);
}

struct col {
	char key[32];		/* manifest key */
	const char *proto;	/* NULL: any */
	char field[64];
	bool bytes;
};

static int add_col(struct col *cols, int n, const char *proto,
		   const char *key, const char *field, bool bytes)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(cols[i].key, key) &&
		    (cols[i].proto == proto ||
		     (cols[i].proto && proto && !strcmp(cols[i].proto, proto))))
			return n;
	ck_assert_int_lt(n, MAX_COLS);
	snprintf(cols[n].key, sizeof(cols[n].key), "%s", key);
	cols[n].proto = proto;
	snprintf(cols[n].field, sizeof(cols[n].field), "%s", field);
	cols[n].bytes = bytes;
	return n + 1;
}

/* Run tshark with one column per mapped manifest key and compare every
 * frame. Returns the number of values compared. */
static int compare_fields(const struct col *cols, int ncols, bool lua,
			  const char *only_proto)
{
	char args[6144];
	size_t k = 0;
	int compared = 0, mismatches = 0, rows = 0;

	k += (size_t)snprintf(args + k, sizeof(args) - k,
			      "-T fields -E separator=/t -E occurrence=f "
			      "-e frame.number -e _ws.col.Protocol "
			      "-e ip.checksum.status -e udp.checksum.status");
	for (int i = 0; i < ncols; i++)
		k += (size_t)snprintf(args + k, sizeof(args) - k, " -e %s",
				      cols[i].field);
	ck_assert_uint_lt(k, sizeof(args) - 1);
	ck_assert_int_eq(tshark(args, lua), 0);

	for (char *line = out, *nl; *line; line = nl + 1) {
		char *c[MAX_COLS + 8];
		int n;

		nl = strchr(line, '\n');
		if (!nl)
			break;
		*nl = '\0';
		n = split_cols(line, c, MAX_COLS + 8);
		ck_assert_int_eq(n, ncols + 4);
		unsigned int no = (unsigned int)strtoul(c[0], NULL, 10);

		ck_assert_uint_eq(no, (unsigned int)rows + 1);
		ck_assert_int_lt(rows, n_exp);
		const struct frame_exp *e = &exp_frames[rows++];

		/* Our IPv4 header checksums and IPv6 UDP checksums must
		 * verify (0 = Bad in Wireshark's checksum status). */
		ck_assert_msg(strcmp(c[2], "0") && strcmp(c[3], "0"),
			      "frame %u: IP/UDP checksum bad (%s/%s)", no, c[2],
			      c[3]);
		if (only_proto && strcmp(e->proto, only_proto))
			continue;
		for (int i = 0; i < ncols; i++) {
			const char *want = kv_get(e, cols[i].key);

			if (!want ||
			    (cols[i].proto && strcmp(cols[i].proto, e->proto)))
				continue;
			/* Wireshark 4.0 does not know the CNP opcode (0x81):
			 * it shows the rest of the packet, ICRC included, as
			 * vendor data. The Lua check still verifies the ICRC. */
			if (!strcmp(cols[i].key, "icrc_wire") &&
			    !strcmp(kv_get(e, "name"), "CNP"))
				continue;
			compared++;
			if (!same_value(want, c[4 + i], cols[i].bytes)) {
				mismatches++;
				fprintf(stderr,
					"frame %u (%s %s): %s: built %s,"
					" tshark %s shows '%s'\n",
					no, e->proto, kv_get(e, "name"),
					cols[i].key, want, cols[i].field,
					c[4 + i]);
			}
		}
		/* The protocol column names who decoded it. */
		if (!strcmp(e->proto, "rocev2"))
			ck_assert_msg(!strcmp(c[1], "RRoCE"),
				      "frame %u decoded as %s, not RRoCE", no,
				      c[1]);
		else if (lua)
			ck_assert_msg(!strcmp(c[1], "MetaRoCE"),
				      "frame %u decoded as %s, not MetaRoCE",
				      no, c[1]);
	}
	ck_assert_int_eq(rows, n_exp);
	ck_assert_msg(mismatches == 0, "%d of %d fields differ (listed above)",
		      mismatches, compared);
	return compared;
}

START_TEST(infiniband_dissector__decodes_our_rocev2_fields)
{
	struct col cols[MAX_COLS];
	int n = 0, compared;

	for (int i = 0; rocev2_map[i].key; i++)
		n = add_col(cols, n, rocev2_map[i].proto, rocev2_map[i].key,
			    rocev2_map[i].field, rocev2_map[i].bytes);
	compared = compare_fields(cols, n, false, "rocev2");
	/* 25 RoCEv2 frames, at least 10 fields each */
	ck_assert_int_gt(compared, 240);
}
END_TEST

START_TEST(mroce_lua__decodes_every_field_we_built)
{
	struct col cols[MAX_COLS];
	int n = 0, compared;
	static const char *const not_fields[] = { "name", "icrc_ok", "sport",
						  "dport", "vlan" };

	for (int i = 0; lua_map[i].key; i++)
		n = add_col(cols, n, lua_map[i].proto, lua_map[i].key,
			    lua_map[i].field, lua_map[i].bytes);
	/* Every other MetaRoCE manifest key K is the Lua field mroce.K. */
	for (int f = 0; f < n_exp; f++) {
		const struct frame_exp *e = &exp_frames[f];

		if (strcmp(e->proto, "metaroce"))
			continue;
		for (int i = 0; i < e->nkv; i++) {
			char field[64];
			bool skip = false;

			for (size_t j = 0;
			     j < sizeof(not_fields) / sizeof(not_fields[0]); j++)
				skip |= !strcmp(e->kv[i].key, not_fields[j]);
			if (skip)
				continue;
			snprintf(field, sizeof(field), "mroce.%s",
				 e->kv[i].key);
			n = add_col(cols, n, "metaroce", e->kv[i].key, field,
				    false);
		}
	}
	compared = compare_fields(cols, n, true, NULL);
	/* 21 MetaRoCE frames with >= 12 fields, 25 RoCEv2 ICRC verdicts */
	ck_assert_int_gt(compared, 21 * 12 + 25);
}
END_TEST

START_TEST(mroce_lua__flags_bad_icrc_as_expert_info)
{
	char want[256] = "";
	size_t k = 0;

	for (int i = 0; i < n_exp; i++) {
		const char *ok = kv_get(&exp_frames[i], "icrc_ok");

		ck_assert_ptr_nonnull(ok);
		if (!strcmp(ok, "0"))
			k += (size_t)snprintf(want + k, sizeof(want) - k,
					      "%u\n", exp_frames[i].no);
	}
	/* one bad frame of each protocol */
	ck_assert_int_eq(strchr(want, '\n') != strrchr(want, '\n'), 1);
	/* A Lua runtime error in any frame would be listed too. */
	ck_assert_int_eq(tshark("-Y 'mroce.icrc.bad || rocev2_icrc.bad || "
				"_ws.lua.error' -T fields -e frame.number",
				true),
			 0);
	ck_assert_str_eq(out, want);
}
END_TEST

/* Broken MetaRoCE packets must be flagged, never crash the dissector (a
 * Lua runtime error shows as _ws.lua.error). Variants of frame 1 (a SEND)
 * that keep the IP/UDP headers intact, so only our layer is malformed. */
START_TEST(mroce_lua__flags_malformed_packets)
{
	static const struct {
		unsigned int off;	/* byte of the MetaRoCE header */
		uint8_t xor;
		const char *expert;	/* expected expert info text */
	} mut[] = {
		{ 0, 0x01, "Unknown MetaRoCE version" },
		{ 1, 0x7e, "unknown opcode" },		/* 0x01 -> 0x7f */
		{ 3, 0x03, "hdr_words should be 10" },	/* 10 -> 9 */
		{ 10, 0x01, "truncated" },		/* payload_len + 256 */
		{ 2, 0x01, "Reserved bits set" },
	};
	const size_t l4 = 14 + 20 + 8;
	static uint8_t file[1 << 18];
	char path[128];
	size_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/s.pcap", dir);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	len = fread(file, 1, sizeof(file), f);
	fclose(f);
	ck_assert_uint_gt(len, 24 + 16 + l4 + 12);

	uint32_t incl;

	memcpy(&incl, file + 24 + 8, 4);
	ck_assert_str_eq(kv_get(&exp_frames[0], "name"), "SEND");
	ck_assert_str_eq(exp_frames[0].net, "ipv4");
	/* rewrite the pcap: the global header, then one copy of frame 1
	 * per mutation */
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(file, 1, 24, f), 24);
	for (size_t i = 0; i < sizeof(mut) / sizeof(mut[0]); i++) {
		uint8_t rec[16 + 2048];

		ck_assert_uint_le(incl, 2048);
		memcpy(rec, file + 24, 16 + incl);
		rec[16 + l4 + mut[i].off] ^= mut[i].xor;
		ck_assert_uint_eq(fwrite(rec, 1, 16 + incl, f), 16 + incl);
	}
	ck_assert_int_eq(fclose(f), 0);

	ck_assert_int_eq(tshark("-T fields -E separator=/t "
				"-e frame.number -e _ws.expert.message",
				true),
			 0);
	ck_assert_ptr_null(strstr(out, "Lua Error"));
	char *line = out;

	for (size_t i = 0; i < sizeof(mut) / sizeof(mut[0]); i++) {
		char *nl = strchr(line, '\n');

		ck_assert_ptr_nonnull(nl);
		*nl = '\0';
		ck_assert_msg(strstr(line, mut[i].expert),
			      "mutation %zu: want '%s' in '%s'", i,
			      mut[i].expert, line);
		line = nl + 1;
	}
	ck_assert_str_eq(line, "");
}
END_TEST

/* Lua support can be missing (a tshark built without it) or refused (when
 * init.lua sets run_user_scripts_when_superuser = false and we are root;
 * Debian ships it true). Probe with a one-line script instead of guessing. */
static const char *need_tshark_lua(void)
{
	char tmp[] = "/tmp/mroce-ws-probe-XXXXXX", cmd[512], o[4096];
	int fd = mkstemp(tmp);

	if (fd < 0)
		return "cannot create a temporary file";
	if (write(fd, "print('mroce-lua-probe')\n", 25) != 25) {
		close(fd);
		unlink(tmp);
		return "cannot write a temporary file";
	}
	close(fd);
	snprintf(cmd, sizeof(cmd),
		 "HOME=/nonexistent tshark -X lua_script:%s -v 2>/dev/null",
		 tmp);
	mroce_run(cmd, o, sizeof(o));
	unlink(tmp);
	if (!strstr(o, "mroce-lua-probe"))
		return "tshark does not run Lua scripts here (built without "
		       "Lua, or Lua disabled for root in init.lua)";
	return NULL;
}

MROCE_SUITE(wireshark_suite)
Suite *wireshark_suite(void)
{
	Suite *s = suite_create("wireshark");
	const char *why = mroce_need_cmd("tshark");
	TCase *tc;

	if (why) {
		mroce_skip("wireshark/rocev2", why);
		mroce_skip("wireshark/lua", why);
		return s;
	}
	tc = tcase_create("rocev2");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, infiniband_dissector__decodes_our_rocev2_fields);
	suite_add_tcase(s, tc);

	why = need_tshark_lua();
	if (why) {
		mroce_skip("wireshark/lua", why);
		return s;
	}
	tc = tcase_create("lua");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, mroce_lua__decodes_every_field_we_built);
	tcase_add_test(tc, mroce_lua__flags_bad_icrc_as_expert_info);
	tcase_add_test(tc, mroce_lua__flags_malformed_packets);
	suite_add_tcase(s, tc);
	return s;
}
