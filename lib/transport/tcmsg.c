// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * trace-cmd's agent protocol messages (tcmsg.h): built as trace-cmd builds them, parsed as
 * from a peer that may send anything (every length and string checked, one error line).
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "../common/common-local.h"
#include "tcmsg.h"

/* The fixed part of each command (a longer one is read as far as this; shorter: zeros). */
static const uint32_t fixed_size[HGT__TC_NR_CMDS] = {
	[HGT__TC_TINIT] = 12,	   [HGT__TC_RINIT] = 4,	     [HGT__TC_TRACE_REQ] = 16,
	[HGT__TC_TRACE_RESP] = 40, [HGT__TC_TIME_SYNC] = 20, [HGT__TC_TRACE_PROXY] = 24,
};

static const char *const names[HGT__TC_NR_CMDS] = {
	"CLOSE",     "TINIT",	   "RINIT",	 "SEND_DATA", "FIN_DATA",    "NOT_SUPP",
	"TRACE_REQ", "TRACE_RESP", "CLOSE_RESP", "TIME_SYNC", "TRACE_PROXY", "CONT",
};

const char *hgt__tc_cmd_name(uint32_t cmd, char tmp[16])
{
	if (cmd < HGT__TC_NR_CMDS)
		return names[cmd];
	snprintf(tmp, 16, "CMD %u", cmd);
	return tmp;
}

#define get32 hgt__tc_get32
#define get64 hgt__tc_get64

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

int hgt__tc_parse(const uint8_t *b, size_t len, struct hgt__tc_msg *m, size_t *need)
{
	*need = HGT__TC_HDR;
	if (len < HGT__TC_HDR)
		return -EAGAIN;
	m->size = get32(b);
	m->cmd = get32(b + 4);
	m->cmd_size = get32(b + 8);
	if (m->size < HGT__TC_HDR || m->size > HGT__TC_MSG_MAX)
		return hgt__errorf(EBADMSG,
				   "trace-cmd message: size %u, not within 12..8192 (command %u)",
				   m->size, m->cmd);
	if (m->cmd_size > m->size - HGT__TC_HDR)
		return hgt__errorf(
			EBADMSG, "trace-cmd message: command part of %u bytes in a %u-byte message",
			m->cmd_size, m->size);
	*need = m->size;
	if (len < m->size)
		return -EAGAIN;
	m->fixed = b + HGT__TC_HDR;
	m->buf = m->fixed + m->cmd_size;
	m->buf_len = m->size - HGT__TC_HDR - m->cmd_size;
	return 0;
}

/* Read exactly @n bytes into @p, each wait at most @timeout_ms. */
static int read_exact(int fd, uint8_t *p, size_t n, int timeout_ms, const char *peer)
{
	while (n) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		ssize_t r;
		int pr = poll(&pfd, 1, timeout_ms);

		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return hgt__errorf(errno, "%s: %s", peer, strerror(errno));
		if (!pr)
			return hgt__errorf(ETIMEDOUT, "%s: no trace-cmd message for %d ms", peer,
					   timeout_ms);
		r = read(fd, p, n);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return hgt__errorf(errno, "%s: %s", peer, strerror(errno));
		if (!r)
			return hgt__errorf(ECONNRESET, "%s: the connection closed", peer);
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int hgt__tc_recv(int fd, uint8_t *buf, int timeout_ms, const char *peer, struct hgt__tc_msg *m)
{
	size_t have = 0, need = HGT__TC_HDR;
	int ret;

	for (;;) {
		ret = read_exact(fd, buf + have, need - have, timeout_ms, peer);
		if (ret)
			return ret;
		have = need;
		ret = hgt__tc_parse(buf, have, m, &need);
		if (ret != -EAGAIN)
			return ret;
	}
}

/* The header of a message of @size bytes in all. */
static void header(uint8_t *out, uint32_t size, uint32_t cmd, uint32_t cmd_size)
{
	put32(out, size);
	put32(out + 4, cmd);
	put32(out + 8, cmd_size);
}

int hgt__tc_build_plain(uint8_t *out, size_t cap, uint32_t cmd, const void *data, size_t len)
{
	size_t size = HGT__TC_HDR + len;

	if (cmd >= HGT__TC_NR_CMDS || fixed_size[cmd] || size > HGT__TC_MSG_MAX)
		return -EINVAL;
	if (size > cap)
		return -ENOSPC;
	header(out, (uint32_t)size, cmd, 0);
	if (len)
		memcpy(out + HGT__TC_HDR, data, len);
	return (int)size;
}

/* Append @n bytes of @p at *@at in @out (@cap): false when there is no room. */
static bool put(uint8_t *out, size_t cap, size_t *at, const void *p, size_t n)
{
	if (*at + n > cap || *at + n > HGT__TC_MSG_MAX)
		return false;
	memcpy(out + *at, p, n);
	*at += n;
	return true;
}

/* A {u32 id, u32 length} param head at *@at, its length filled in by param_end(). */
static bool param_start(uint8_t *out, size_t cap, size_t *at, uint32_t id, size_t *len_at)
{
	uint8_t h[8];

	put32(h, id);
	put32(h + 4, 0);
	*len_at = *at + 4;
	return put(out, cap, at, h, 8);
}

static void param_end(uint8_t *out, size_t at, size_t len_at)
{
	put32(out + len_at, (uint32_t)(at - len_at - 4));
}

int hgt__tc_build_trace_req(uint8_t *out, size_t cap, uint32_t flags, uint64_t trace_id, int argc,
			    char *const *argv, char *const *protos)
{
	size_t at = HGT__TC_HDR + 16, len_at;
	uint8_t n[4];
	bool ok = cap >= at && argc >= 0;

	if (!ok)
		return -ENOSPC;
	put32(out + HGT__TC_HDR, flags);
	put32(out + HGT__TC_HDR + 4, 0); /* argc: trace-cmd leaves it 0 (the param has it) */
	put64(out + HGT__TC_HDR + 8, trace_id);
	if (argc) {
		ok = param_start(out, cap, &at, 0, &len_at);
		put32(n, (uint32_t)argc);
		ok = ok && put(out, cap, &at, n, 4);
		for (int i = 0; ok && i < argc; i++)
			ok = put(out, cap, &at, argv[i], strlen(argv[i]) + 1);
		if (ok)
			param_end(out, at, len_at);
	}
	if (ok && protos) {
		ok = param_start(out, cap, &at, 1, &len_at);
		for (int i = 0; ok && protos[i]; i++)
			ok = put(out, cap, &at, protos[i], strlen(protos[i]) + 1);
		ok = ok && put(out, cap, &at, "", 1);
		if (ok)
			param_end(out, at, len_at);
	}
	if (!ok)
		return -ENOSPC;
	header(out, (uint32_t)at, HGT__TC_TRACE_REQ, 16);
	return (int)at;
}

/* The fixed part of @m as its command's layout, zero-padded (a shorter one) or cut. */
static void fixed_part(const struct hgt__tc_msg *m, uint8_t *f, size_t n)
{
	memset(f, 0, n);
	memcpy(f, m->fixed, m->cmd_size < n ? m->cmd_size : n);
}

/* Count the NUL-terminated strings in @p (@n bytes, ending in NUL). */
static int count_strings(const char *p, size_t n)
{
	int k = 0;

	for (size_t i = 0; i < n; i++)
		k += !p[i];
	return k;
}

/* Point @v[0..want-1] at the first @want strings of @p (@n bytes, ending in NUL). */
static void split_strings(char *p, size_t n, char **v, int want)
{
	for (int i = 0; i < want; i++) {
		v[i] = p;
		p += strlen(p) + 1;
	}
	v[want] = NULL;
	(void)n;
}

/* The ARGS param (@p, @n bytes, copied into @store) into @r. */
static int req_args(const uint8_t *p, uint32_t n, char *store, struct hgt__tc_trace_req *r)
{
	uint32_t argc;

	if (n < 4 || (n > 4 && p[n - 1]))
		return hgt__errorf(
			EBADMSG, "trace-cmd TRACE_REQ: its arguments (%u bytes) do not end in NUL",
			n);
	argc = get32(p);
	memcpy(store, p + 4, n - 4);
	if ((int)argc < 0 || argc > (uint32_t)count_strings(store, n - 4))
		return hgt__errorf(EBADMSG,
				   "trace-cmd TRACE_REQ: %u arguments said, %d strings sent", argc,
				   count_strings(store, n - 4));
	r->argv = calloc(argc + 1, sizeof(*r->argv));
	if (!r->argv)
		return -ENOMEM;
	split_strings(store, n - 4, r->argv, (int)argc);
	r->argc = (int)argc;
	return 0;
}

/* The TSYNC_PROTOS param: names, then an empty one. */
static int req_protos(const uint8_t *p, uint32_t n, char *store, struct hgt__tc_trace_req *r)
{
	int k;

	if (!n || p[n - 1])
		return hgt__errorf(
			EBADMSG,
			"trace-cmd TRACE_REQ: its time-sync protocols (%u bytes) do not end in NUL",
			n);
	memcpy(store, p, n);
	k = count_strings(store, n);
	for (int i = 0, at = 0; i < k; i++) { /* up to the empty name that ends them */
		if (!store[at]) {
			k = i;
			break;
		}
		at += (int)strlen(store + at) + 1;
	}
	r->protos = calloc((size_t)k + 1, sizeof(*r->protos));
	if (!r->protos)
		return -ENOMEM;
	split_strings(store, n, r->protos, k);
	r->nr_protos = k;
	return 0;
}

static int parse_trace_req(const struct hgt__tc_msg *m, struct hgt__tc_trace_req *r)
{
	uint8_t f[16];
	uint32_t at = 0;
	int ret = 0;
	char tmp[16];

	memset(r, 0, sizeof(*r));
	if (m->cmd != HGT__TC_TRACE_REQ)
		return hgt__errorf(EBADMSG, "trace-cmd: %s where a TRACE_REQ was due",
				   hgt__tc_cmd_name(m->cmd, tmp));
	fixed_part(m, f, sizeof(f));
	r->flags = get32(f);
	r->trace_id = get64(f + 8);
	/* every string is copied here, each param at its own offset (at most the buffer) */
	r->store = calloc(m->buf_len + 1, 1);
	if (!r->store)
		return -ENOMEM;
	while (!ret && m->buf_len - at >= 8) {
		uint32_t id = get32(m->buf + at), n = get32(m->buf + at + 4);

		at += 8;
		if (n > m->buf_len - at)
			return hgt__errorf(EBADMSG,
					   "trace-cmd TRACE_REQ: param %u of %u bytes, %u left", id,
					   n, m->buf_len - at);
		if (id == 0 && !r->argv)
			ret = req_args(m->buf + at, n, r->store + at, r);
		else if (id == 1 && !r->protos)
			ret = req_protos(m->buf + at, n, r->store + at, r);
		at += n;
	}
	if (!ret && !r->argv && !(r->argv = calloc(1, sizeof(*r->argv))))
		ret = -ENOMEM;
	if (!ret && !r->protos && !(r->protos = calloc(1, sizeof(*r->protos))))
		ret = -ENOMEM;
	return ret;
}

int hgt__tc_parse_trace_req(const struct hgt__tc_msg *m, struct hgt__tc_trace_req *r)
{
	int ret = parse_trace_req(m, r);

	if (ret)
		hgt__tc_trace_req_free(r);
	return ret;
}

void hgt__tc_trace_req_free(struct hgt__tc_trace_req *r)
{
	free(r->argv);
	free(r->protos);
	free(r->store);
	memset(r, 0, sizeof(*r));
}

int hgt__tc_build_trace_resp(uint8_t *out, size_t cap, const struct hgt__tc_trace_resp *r)
{
	size_t at = HGT__TC_HDR + 40;
	bool ok = cap >= at;

	if (!ok)
		return -ENOSPC;
	put32(out + 12, r->flags);
	put32(out + 16, r->cpus);
	put32(out + 20, r->page_size);
	put64(out + 24, r->trace_id);
	memset(out + 32, 0, HGT__TC_PNAME);
	memcpy(out + 32, r->proto, strnlen(r->proto, HGT__TC_PNAME));
	put32(out + 48, r->tsync_port);
	for (uint32_t i = 0; ok && i < r->cpus; i++) {
		char s[16];
		int n = snprintf(s, sizeof(s), "%u", r->ports ? r->ports[i] : 0);

		ok = put(out, cap, &at, s, (size_t)n + 1);
	}
	if (!ok)
		return -ENOSPC;
	header(out, (uint32_t)at, HGT__TC_TRACE_RESP, 40);
	return (int)at;
}

/* One decimal port of a TRACE_RESP at *@p (before @end), moved past its NUL. */
static int resp_port(const char **p, const char *end, uint32_t cpu, uint32_t *port)
{
	const char *s = *p;
	unsigned long v = 0;

	if (s >= end || !*s)
		return hgt__errorf(EBADMSG, "trace-cmd TRACE_RESP: no port for CPU %u", cpu);
	for (; s < end && *s; s++) {
		if (*s < '0' || *s > '9' || (v = v * 10 + (unsigned long)(*s - '0')) > 65535)
			return hgt__errorf(
				EBADMSG,
				"trace-cmd TRACE_RESP: CPU %u's port is not a port (0..65535)",
				cpu);
	}
	*port = (uint32_t)v;
	*p = s + 1;
	return 0;
}

static int parse_trace_resp(const struct hgt__tc_msg *m, struct hgt__tc_trace_resp *r)
{
	const char *p = (const char *)m->buf, *end = p + m->buf_len;
	uint8_t f[40];
	char tmp[16];
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (m->cmd != HGT__TC_TRACE_RESP)
		return hgt__errorf(EBADMSG, "trace-cmd: %s where a TRACE_RESP was due",
				   hgt__tc_cmd_name(m->cmd, tmp));
	fixed_part(m, f, sizeof(f));
	r->flags = get32(f);
	r->cpus = get32(f + 4);
	r->page_size = get32(f + 8);
	r->trace_id = get64(f + 12);
	memcpy(r->proto, f + 20, HGT__TC_PNAME);
	r->tsync_port = get32(f + 36);
	if (!r->cpus || r->cpus > HGT__TC_MAX_CPUS)
		return hgt__errorf(EBADMSG, "trace-cmd TRACE_RESP: %u CPUs (1..%d)", r->cpus,
				   HGT__TC_MAX_CPUS);
	if (r->page_size < 4096 || r->page_size > HGT__MAX_PAGE ||
	    (r->page_size & (r->page_size - 1)))
		return hgt__errorf(EBADMSG, "trace-cmd TRACE_RESP: page size %u", r->page_size);
	if (m->buf_len && end[-1])
		return hgt__errorf(EBADMSG, "trace-cmd TRACE_RESP: its ports do not end in NUL");
	r->ports = calloc(r->cpus, sizeof(*r->ports));
	if (!r->ports)
		return -ENOMEM;
	for (uint32_t i = 0; !ret && i < r->cpus; i++)
		ret = resp_port(&p, end, i, &r->ports[i]);
	return ret;
}

int hgt__tc_parse_trace_resp(const struct hgt__tc_msg *m, struct hgt__tc_trace_resp *r)
{
	int ret = parse_trace_resp(m, r);

	if (ret)
		hgt__tc_trace_resp_free(r);
	return ret;
}

void hgt__tc_trace_resp_free(struct hgt__tc_trace_resp *r)
{
	free(r->ports);
	r->ports = NULL;
}

int hgt__tc_build_time_sync(uint8_t *out, size_t cap, const char *proto, uint32_t sync_cmd,
			    const void *data, size_t len)
{
	size_t size = HGT__TC_HDR + 20 + len;

	if (!proto || strlen(proto) >= HGT__TC_PNAME || size > HGT__TC_MSG_MAX)
		return -EINVAL;
	if (size > cap)
		return -ENOSPC;
	header(out, (uint32_t)size, HGT__TC_TIME_SYNC, 20);
	memset(out + HGT__TC_HDR, 0, HGT__TC_PNAME);
	memcpy(out + HGT__TC_HDR, proto, strlen(proto));
	put32(out + HGT__TC_HDR + HGT__TC_PNAME, sync_cmd);
	if (len)
		memcpy(out + HGT__TC_HDR + 20, data, len);
	return (int)size;
}

int hgt__tc_parse_time_sync(const struct hgt__tc_msg *m, struct hgt__tc_time_sync *t)
{
	uint8_t f[20];

	if (m->cmd != HGT__TC_TIME_SYNC)
		return hgt__errorf(EBADMSG, "trace-cmd time sync: a %s message, not TIME_SYNC",
				   names[m->cmd < HGT__TC_NR_CMDS ? m->cmd : 0]);
	if (m->cmd_size < 20)
		return hgt__errorf(EBADMSG,
				   "trace-cmd TIME_SYNC: a command part of %u bytes, not 20",
				   m->cmd_size);
	fixed_part(m, f, sizeof(f));
	memcpy(t->proto, f, HGT__TC_PNAME);
	t->proto[HGT__TC_PNAME] = '\0';
	t->cmd = get32(f + HGT__TC_PNAME);
	t->data = m->buf;
	t->len = m->buf_len;
	return 0;
}

int hgt__tc_send(int fd, const uint8_t *msg, int len, const char *peer)
{
	size_t done = 0;

	if (len < 0)
		return hgt__errorf(-len, "%s: a trace-cmd message could not be built: %s", peer,
				   strerror(-len));
	while (done < (size_t)len) {
		ssize_t w = send(fd, msg + done, (size_t)len - done, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return hgt__errorf(errno, "%s: %s", peer, strerror(errno));
		done += (size_t)w;
	}
	return 0;
}
