// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * trace-cmd's agent protocol messages (lib/transport/tcmsg.c) against bytes Debian's
 * trace-cmd 3.1.6 sent on this project's machine (2026-11-26): a TRACE_REQ of
 * `trace-cmd record -d --no-filter -A 127.0.0.1:P -e sched:sched_wakeup -b 2048 -- true`
 * (trace-cmd adds -C local itself), and the TRACE_RESP of `trace-cmd agent -N 127.0.0.1
 * -p P` to it; then what a hostile peer may send, each refused with its reason. Last, the
 * sample our ptp answer picks from a round, worked out by hand.
 */
#include "test-helpers.h"

#include <errno.h>
#include <string.h>

#include <hgtrace/tracedat.h>

#include "../../lib/transport/tcmsg.h"
#include "../../lib/transport/tcsync.h"

static const uint8_t tc_req[] = { 0x00, 0x00, 0x00, 0x5c, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00,
				  0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xbe, 0xc5,
				  0x4a, 0x0b, 0xe1, 0x85, 0xd5, 0x39, 0x00, 0x00, 0x00, 0x00, 0x00,
				  0x00, 0x00, 0x2b, 0x00, 0x00, 0x00, 0x06, 0x2d, 0x43, 0x00, 0x6c,
				  0x6f, 0x63, 0x61, 0x6c, 0x00, 0x2d, 0x65, 0x00, 0x73, 0x63, 0x68,
				  0x65, 0x64, 0x3a, 0x73, 0x63, 0x68, 0x65, 0x64, 0x5f, 0x77, 0x61,
				  0x6b, 0x65, 0x75, 0x70, 0x00, 0x2d, 0x62, 0x00, 0x32, 0x30, 0x34,
				  0x38, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x05, 0x70,
				  0x74, 0x70, 0x00, 0x00 };

static const uint8_t tc_resp[] = { 0x00, 0x00, 0x00, 0x3e, 0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
				   0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00,
				   0x10, 0x00, 0xf9, 0x2d, 0xae, 0x0b, 0x27, 0x1a, 0xc4, 0xd9, 0x70,
				   0x74, 0x70, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
				   0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05, 0xde, 0x31, 0x35, 0x30,
				   0x30, 0x00, 0x31, 0x35, 0x30, 0x31, 0x00 };

static char *const req_argv[] = { "-C", "local", "-e", "sched:sched_wakeup", "-b", "2048", NULL };
static char *const req_protos[] = { "ptp", NULL };

/* trace-cmd's TRACE_REQ, parsed: its flags, trace id, six arguments and one protocol. */
static void test_trace_req_parse(void **state)
{
	struct hgt__tc_trace_req r;
	struct hgt__tc_msg m;
	size_t need;

	(void)state;
	assert_int_equal(hgt__tc_parse(tc_req, sizeof(tc_req), &m, &need), 0);
	assert_int_equal(m.cmd, HGT__TC_TRACE_REQ);
	assert_int_equal(m.size, 92);
	assert_int_equal(hgt__tc_parse_trace_req(&m, &r), 0);
	assert_int_equal(r.flags, 0);
	assert_true(r.trace_id == 0xbec54a0be185d539ULL);
	assert_int_equal(r.argc, 6);
	for (int i = 0; i < 6; i++)
		assert_string_equal(r.argv[i], req_argv[i]);
	assert_null(r.argv[6]);
	assert_int_equal(r.nr_protos, 1);
	assert_string_equal(r.protos[0], "ptp");
	assert_null(r.protos[1]);
	hgt__tc_trace_req_free(&r);
}

/* ... and built from the same values: byte for byte what trace-cmd sent. */
static void test_trace_req_build(void **state)
{
	uint8_t out[HGT__TC_MSG_MAX];
	int n = hgt__tc_build_trace_req(out, sizeof(out), 0, 0xbec54a0be185d539ULL, 6, req_argv,
					req_protos);

	(void)state;
	assert_int_equal(n, sizeof(tc_req));
	assert_memory_equal(out, tc_req, sizeof(tc_req));
	/* no room: refused, never written past @cap */
	assert_int_equal(hgt__tc_build_trace_req(out, 60, 0, 1, 6, req_argv, req_protos), -ENOSPC);
}

/* trace-cmd's agent's TRACE_RESP: 2 CPUs, 4096-byte pages, ptp on port 1502, data on 1500
 * and 1501; and rebuilt byte for byte. */
static void test_trace_resp(void **state)
{
	struct hgt__tc_trace_resp r;
	uint8_t out[HGT__TC_MSG_MAX];
	struct hgt__tc_msg m;
	size_t need;

	(void)state;
	assert_int_equal(hgt__tc_parse(tc_resp, sizeof(tc_resp), &m, &need), 0);
	assert_int_equal(hgt__tc_parse_trace_resp(&m, &r), 0);
	assert_int_equal(r.flags, 0);
	assert_int_equal(r.cpus, 2);
	assert_int_equal(r.page_size, 4096);
	assert_true(r.trace_id == 0xf92dae0b271ac4d9ULL);
	assert_string_equal(r.proto, "ptp");
	assert_int_equal(r.tsync_port, 1502);
	assert_int_equal(r.ports[0], 1500);
	assert_int_equal(r.ports[1], 1501);
	assert_int_equal(hgt__tc_build_trace_resp(out, sizeof(out), &r), sizeof(tc_resp));
	assert_memory_equal(out, tc_resp, sizeof(tc_resp));
	hgt__tc_trace_resp_free(&r);
}

/* Partial input asks for more; CLOSE and friends are a bare header. */
static void test_parse_partial(void **state)
{
	uint8_t out[64];
	struct hgt__tc_msg m;
	size_t need;

	(void)state;
	assert_int_equal(hgt__tc_parse(tc_req, 5, &m, &need), -EAGAIN);
	assert_int_equal(need, 12);
	assert_int_equal(hgt__tc_parse(tc_req, 40, &m, &need), -EAGAIN);
	assert_int_equal(need, 92);
	assert_int_equal(hgt__tc_build_plain(out, sizeof(out), HGT__TC_NOT_SUPP, NULL, 0), 12);
	assert_int_equal(hgt__tc_parse(out, 12, &m, &need), 0);
	assert_int_equal(m.cmd, HGT__TC_NOT_SUPP);
	assert_int_equal(m.buf_len, 0);
	assert_int_equal(hgt__tc_build_plain(out, sizeof(out), HGT__TC_SEND_DATA, "abc", 3), 15);
	assert_int_equal(hgt__tc_parse(out, 15, &m, &need), 0);
	assert_int_equal(m.buf_len, 3);
	assert_memory_equal(m.buf, "abc", 3);
	/* a command with a fixed part is not plain */
	assert_int_equal(hgt__tc_build_plain(out, sizeof(out), HGT__TC_TRACE_REQ, NULL, 0),
			 -EINVAL);
}

/* @b (@len bytes) as a TRACE_REQ (@resp false) or TRACE_RESP: refused, the error saying
 * @want. */
static void refused(const uint8_t *b, size_t len, bool resp, const char *want)
{
	struct hgt__tc_trace_resp rs;
	struct hgt__tc_trace_req rq;
	struct hgt__tc_msg m;
	size_t need;
	int ret = hgt__tc_parse(b, len, &m, &need);

	if (!ret)
		ret = resp ? hgt__tc_parse_trace_resp(&m, &rs) : hgt__tc_parse_trace_req(&m, &rq);
	assert_int_equal(ret, -EBADMSG);
	if (!strstr(hgt_last_error(), want))
		fail_msg("'%s' does not say '%s'", hgt_last_error(), want);
}

/* What a hostile peer may send: each refused with one line naming what is wrong. */
static void test_hostile(void **state)
{
	uint8_t b[256];

	(void)state;
	memcpy(b, tc_req, sizeof(tc_req));
	b[2] = 0x30; /* size 12380 */
	refused(b, sizeof(tc_req), false, "size 12380, not within 12..8192");
	memcpy(b, tc_req, sizeof(tc_req));
	b[3] = 8; /* size 8 */
	refused(b, sizeof(tc_req), false, "size 8, not within");
	memcpy(b, tc_req, sizeof(tc_req));
	b[11] = 0x60; /* cmd_size 96 */
	refused(b, sizeof(tc_req), false, "command part of 96 bytes in a 92-byte message");
	memcpy(b, tc_req, sizeof(tc_req));
	b[35] = 0x50; /* ARGS length 80, over what is left */
	refused(b, sizeof(tc_req), false, "param 0 of 80 bytes, 56 left");
	memcpy(b, tc_req, sizeof(tc_req));
	b[39] = 0x07; /* argc 7, six strings */
	refused(b, sizeof(tc_req), false, "7 arguments said, 6 strings sent");
	memcpy(b, tc_req, sizeof(tc_req));
	b[78] = 'x'; /* the last argument's NUL */
	refused(b, sizeof(tc_req), false, "arguments (43 bytes) do not end in NUL");
	memcpy(b, tc_req, sizeof(tc_req));
	b[91] = 'x'; /* the protocols' closing NUL */
	refused(b, sizeof(tc_req), false, "time-sync protocols (5 bytes) do not end in NUL");
	refused(tc_resp, sizeof(tc_resp), false, "TRACE_RESP where a TRACE_REQ was due");

	memcpy(b, tc_resp, sizeof(tc_resp));
	b[19] = 3; /* 3 CPUs, 2 ports */
	refused(b, sizeof(tc_resp), true, "no port for CPU 2");
	memcpy(b, tc_resp, sizeof(tc_resp));
	b[16] = 0x10; /* 268435458 CPUs */
	refused(b, sizeof(tc_resp), true, "268435458 CPUs");
	memcpy(b, tc_resp, sizeof(tc_resp));
	b[22] = 0x10;
	b[23] = 0x01; /* page size 4097 */
	refused(b, sizeof(tc_resp), true, "page size 4097");
	memcpy(b, tc_resp, sizeof(tc_resp));
	b[53] = 'a'; /* "1a00": the ports start at 52 */
	refused(b, sizeof(tc_resp), true, "CPU 0's port is not a port");
	memcpy(b, tc_resp, sizeof(tc_resp));
	memcpy(b + 52, "99999", 5); /* over its NUL too: "999991501" */
	refused(b, sizeof(tc_resp), true, "CPU 0's port is not a port");
	memcpy(b, tc_resp, sizeof(tc_resp));
	b[61] = '1'; /* the last port's NUL */
	refused(b, sizeof(tc_resp), true, "ports do not end in NUL");
	refused(tc_req, sizeof(tc_req), true, "TRACE_REQ where a TRACE_RESP was due");
}

/* A PROBES record: the host's stamp @ts of probe @k. */
static void stamp(uint8_t *p, uint64_t ts, uint32_t k)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(ts >> (56 - 8 * i));
	for (int i = 0; i < 4; i++)
		p[8 + i] = (uint8_t)(k >> (24 - 8 * i));
}

static void answer_is(const struct hgt__ptp_round *in, enum hgt__ptp_answer kind, uint64_t mid,
		      int64_t offset, uint64_t rtt)
{
	uint64_t m, r;
	int64_t o;

	assert_int_equal(hgt__ptp_answer(in, &m, &o, &r), kind);
	assert_int_equal(m, mid);
	assert_int_equal(o, offset);
	assert_int_equal(r, rtt);
}

/* Three probes, round trips 100, 40 and 300 ns in our clock (the middle of the fastest,
 * probe 2, is 2020); trace-cmd 3.1.6 drops an OFFSET whose ts or offset is 0 and then
 * writes a TIME_SHIFT it cannot read, so there is always a sample once one is known. */
static void test_ptp_answer(void **state)
{
	const uint64_t s[3] = { 1000, 2000, 3000 }, r[3] = { 1100, 2040, 3300 };
	const uint64_t back_s[1] = { 1000 }, back_r[1] = { 900 };
	uint8_t st[3 * 12];
	struct hgt__ptp_round in = { .s = s, .r = r, .n = 3, .stamps = st, .count = 3 };

	(void)state;
	/* all stamped: the fastest probe, host 7020 - 2020 */
	stamp(st, 5000, 1);
	stamp(st + 12, 7020, 2);
	stamp(st + 24, 9000, 3);
	answer_is(&in, HGT__PTP_MEASURED, 2020, 5000, 40);
	/* probe 2 not stamped: probe 1, host 5000 - (1000 + 50) */
	stamp(st + 12, 9000, 3);
	in.count = 2;
	answer_is(&in, HGT__PTP_MEASURED, 1050, 3950, 100);
	/* measured 0 exactly: sent as 1 ns */
	stamp(st, 2020, 2);
	in.count = 1;
	answer_is(&in, HGT__PTP_NUDGED, 2020, 1, 40);
	/* no stamp matches (probe 0, probe 4 of 3, a zero stamp): the last offset known, at
	 * our fastest probe; none known: nothing */
	stamp(st, 5, 0);
	stamp(st + 12, 5, 4);
	stamp(st + 24, 0, 2);
	in.count = 3;
	answer_is(&in, HGT__PTP_NONE, 0, 0, 0);
	in.have_last = true;
	in.last = -777;
	answer_is(&in, HGT__PTP_REPEATED, 2020, -777, 0);
	/* a probe whose clock went back is no measure, nor our fastest */
	in = (struct hgt__ptp_round){ .s = back_s, .r = back_r, .n = 1, .stamps = st, .count = 1 };
	stamp(st, 5000, 1);
	answer_is(&in, HGT__PTP_NONE, 0, 0, 0);
	in.have_last = true;
	answer_is(&in, HGT__PTP_NONE, 0, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_req_parse), cmocka_unit_test(test_trace_req_build),
		cmocka_unit_test(test_trace_resp),	cmocka_unit_test(test_parse_partial),
		cmocka_unit_test(test_hostile),		cmocka_unit_test(test_ptp_answer),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
