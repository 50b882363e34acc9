/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent -> listener protocol (version 3; a listener takes version 2 agents too), all
 * little endian.
 *
 * Control channel, agent -> host: messages {u32 magic "HGTC", u16 type, u16 flags (0),
 * u32 len} + len bytes:
 *   HELLO  {u32 version, u32 nr_cpus, u32 page_size, u32 long_size, u64 session} clock\0
 *   META   {u32 id (16..21)} + the item's v6 encoding
 *   OPTION {u32 id} + payload (TRACECLOCK, UNAME, VERSION, TRACEID, CPUSTAT, DATE, OFFSET)
 *   READY  {u64 session[, u32 nr_cpus, u32 page_size]}: the first message, sent as soon
 *          as the channel is open (before the host's start), so the host knows the guest
 *          and its data channels; an agent a host dials (serve --listen) says its CPUs,
 *          and the host then opens one data connection per CPU, each starting with
 *          {u32 "HGTD", u32 cpu, u64 session} from the host
 *   PROBE_REPLY {u32 seq, u32 cpu, u64 ts}: the agent's trace clock, read on guest CPU cpu
 *   END    {u64 lost events[, u64 session cpu ns, u64 session ns, u64 recording cpu ns,
 *          u64 recording ns[, u64 page bytes of CPU 0..nr_cpus-1]]}: everything was sent;
 *          the agent's own cost, all of the session and the steady part (after the
 *          metadata, until the stop); each CPU channel's bytes after its header
 *   HEARTBEAT {}: sent when the agent has sent nothing on the control channel for
 *          HGT__HEARTBEAT_MS, so a silent network guest is known to be gone (version 2)
 *   RECORDING {u64 ts}: its tracing is on (after its description), and the agent's trace
 *          clock just after (0: not readable in user space): a host-driven session starts
 *          its command once every guest said so (version 3; of a version 2 agent, TRACEID,
 *          the end of its description, stands for it)
 * Control channel, host -> agent: "1\n" start, "0\n" stop (as virtio-trace's agent), and
 * framed messages with the same header (their first byte, 'H', is never a command):
 *   CONFIG {u32 buffer_kb, u32 flags} clock\0 event\0...: what the next session records
 *          (agent --serve: nothing is sent before it)
 *   PROBE  {u32 seq, u32 cpu}: read the trace clock on @cpu and answer PROBE_REPLY
 * Data channel, one per CPU: {u32 magic "HGTD", u32 version, u32 cpu, u32 page_size,
 * u64 session}, then whole ring-buffer pages, nothing else (zero-copy with splice).
 */
#ifndef HGT_TRANSPORT_PROTO_H
#define HGT_TRANSPORT_PROTO_H

#include <stdint.h>
#include <stdio.h>

#include <hgtrace/transport.h>

#define HGT__CTL_MAGIC 0x43544748u  /* "HGTC" */
#define HGT__DATA_MAGIC 0x44544748u /* "HGTD" */
#define HGT__PROTO_VERSION 3
#define HGT__PROTO_MIN 2 /* the oldest agent a listener takes */
#define HGT__HEARTBEAT_MS HGT_AGENT_HEARTBEAT_MS
#define HGT__MSG_HDR 12
#define HGT__DATA_HDR 24
#define HGT__MSG_MAX (128u << 20) /* kallsyms of a big kernel fit */

enum hgt__msg_type {
	HGT__MSG_HELLO = 1,
	HGT__MSG_META = 2,
	HGT__MSG_OPTION = 3,
	HGT__MSG_END = 4,
	HGT__MSG_READY = 5,	  /* {u64 session}: first message, sent on connecting */
	HGT__MSG_CONFIG = 6,	  /* host -> agent */
	HGT__MSG_PROBE = 7,	  /* host -> agent */
	HGT__MSG_PROBE_REPLY = 8, /* agent -> host */
	HGT__MSG_REFUSED = 9,	  /* host -> agent: why the host will not take it (text) */
	HGT__MSG_HEARTBEAT = 10,  /* agent -> host: still there (empty) */
	HGT__MSG_RECORDING = 11,  /* agent -> host: its tracing is on {u64 ts} */
};

#define HGT__CONFIG_MAX 65536 /* a CONFIG larger than this is refused by the agent */

int hgt__listen_fuzz(const uint8_t *data, size_t size, const char *base, FILE *log);

#endif
