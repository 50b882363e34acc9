/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * trace-cmd's agent protocol, as trace-cmd 3.1.6 speaks it (the layouts are its
 * lib/trace-cmd/trace-msg.c's; checked against Debian's trace-cmd by
 * tests/transport/tracecmd-msg.sh). Every message, big endian:
 *   {u32 size (the whole message), u32 cmd, u32 cmd_size} + a fixed part of cmd_size bytes
 *   + a buffer (size - 12 - cmd_size bytes); at most 8192 bytes in all.
 * TRACE_REQ  fixed {u32 flags (1: FIFOs), u32 argc (0 as trace-cmd sends it), u64 trace id}
 *            buffer: params {u32 id, u32 length, length bytes}: id 0 the guest's record
 *            argv {u32 argc, NUL-terminated strings}, id 1 the time-sync protocols the
 *            host can use (NUL-terminated names, then one more NUL)
 * TRACE_RESP fixed {u32 flags, u32 cpus, u32 page size, u64 trace id, char proto[16],
 *            u32 time-sync port}; buffer: one NUL-terminated decimal port per CPU
 * CLOSE, SEND_DATA (the buffer is data), FIN_DATA, NOT_SUPP, CLOSE_RESP: no fixed part.
 */
#ifndef HGT_TRANSPORT_TCMSG_H
#define HGT_TRANSPORT_TCMSG_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HGT__TC_MSG_MAX 8192
#define HGT__TC_HDR 12
#define HGT__TC_PNAME 16      /* a time-sync protocol's name, NUL padded */
#define HGT__TC_USE_FIFOS 1u  /* TRACE_REQ / TRACE_RESP flags */
#define HGT__TC_MAX_CPUS 4096 /* more in a TRACE_RESP is refused */

enum hgt__tc_cmd {
	HGT__TC_CLOSE,
	HGT__TC_TINIT,
	HGT__TC_RINIT,
	HGT__TC_SEND_DATA,
	HGT__TC_FIN_DATA,
	HGT__TC_NOT_SUPP,
	HGT__TC_TRACE_REQ,
	HGT__TC_TRACE_RESP,
	HGT__TC_CLOSE_RESP,
	HGT__TC_TIME_SYNC,
	HGT__TC_TRACE_PROXY,
	HGT__TC_CONT,
	HGT__TC_NR_CMDS
};

/* One message, pointing into the bytes it was parsed from. */
struct hgt__tc_msg {
	uint32_t size, cmd, cmd_size;
	const uint8_t *fixed; /* cmd_size bytes */
	const uint8_t *buf;   /* buf_len bytes */
	uint32_t buf_len;
};

struct hgt__tc_trace_req {
	uint32_t flags;
	uint64_t trace_id;
	int argc;      /* the guest's record options */
	char **argv;   /* argc + 1 (NULL-terminated) */
	int nr_protos; /* time-sync protocols offered */
	char **protos; /* nr_protos + 1 */
	char *store;   /* what argv and protos point into */
};

struct hgt__tc_trace_resp {
	uint32_t flags, cpus, page_size;
	uint64_t trace_id;
	char proto[HGT__TC_PNAME + 1]; /* "" when no time sync was agreed */
	uint32_t tsync_port;
	uint32_t *ports; /* cpus of them (data ports; unused with FIFOs) */
};

/* Big-endian fields, as every trace-cmd message has them. */
static inline uint32_t hgt__tc_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v);
}

static inline uint64_t hgt__tc_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return be64toh(v);
}

/* The name of trace-cmd command @cmd ("CMD 42" style for an unknown one, in @tmp). */
const char *hgt__tc_cmd_name(uint32_t cmd, char tmp[16]);

/* The message at the start of @b (@len bytes): 0 with *@m set, -EAGAIN when more bytes
 * are needed (*@need: how many in all), or -EBADMSG (the error says what is wrong). */
int hgt__tc_parse(const uint8_t *b, size_t len, struct hgt__tc_msg *m, size_t *need);

/* Read one whole message from @fd into @buf (HGT__TC_MSG_MAX bytes), waiting at most
 * @timeout_ms (-1: for ever) for each part. 0, -ETIMEDOUT, -ECONNRESET (closed),
 * -EBADMSG or -errno; the error names @peer. */
int hgt__tc_recv(int fd, uint8_t *buf, int timeout_ms, const char *peer, struct hgt__tc_msg *m);

/* The message with no fixed part and @len bytes of @data (CLOSE, FIN_DATA, NOT_SUPP,
 * CLOSE_RESP: none; SEND_DATA: at most HGT__TC_MSG_MAX - 12) into @out (@cap bytes):
 * its length, or -ENOSPC / -EINVAL. */
int hgt__tc_build_plain(uint8_t *out, size_t cap, uint32_t cmd, const void *data, size_t len);

/* A TRACE_REQ as trace-cmd's record -A sends it: its length, or -ENOSPC / -EINVAL. */
int hgt__tc_build_trace_req(uint8_t *out, size_t cap, uint32_t flags, uint64_t trace_id, int argc,
			    char *const *argv, char *const *protos);
/* 0, -EBADMSG (the error says what is wrong) or -ENOMEM; nothing to free after an error */
int hgt__tc_parse_trace_req(const struct hgt__tc_msg *m, struct hgt__tc_trace_req *r);
void hgt__tc_trace_req_free(struct hgt__tc_trace_req *r);

/* TIME_SYNC: fixed {char proto[16], u32 command}, then the protocol's packet. */
struct hgt__tc_time_sync {
	char proto[HGT__TC_PNAME + 1]; /* "none" for the session's own PROBE and STOP */
	uint32_t cmd;
	const uint8_t *data; /* into the message */
	uint32_t len;
};
#define HGT__TC_TSYNC_PROBE 1 /* "none": sync guest CPU {u16 cpu, host order} now */
#define HGT__TC_TSYNC_STOP 2

int hgt__tc_build_time_sync(uint8_t *out, size_t cap, const char *proto, uint32_t sync_cmd,
			    const void *data, size_t len);
/* 0 or -EBADMSG (the error says what is wrong) */
int hgt__tc_parse_time_sync(const struct hgt__tc_msg *m, struct hgt__tc_time_sync *t);

/* Send the @len bytes a build function made (a negative @len: its error) to @fd. */
int hgt__tc_send(int fd, const uint8_t *msg, int len, const char *peer);

int hgt__tc_build_trace_resp(uint8_t *out, size_t cap, const struct hgt__tc_trace_resp *r);
int hgt__tc_parse_trace_resp(const struct hgt__tc_msg *m, struct hgt__tc_trace_resp *r);
void hgt__tc_trace_resp_free(struct hgt__tc_trace_resp *r);

#endif
