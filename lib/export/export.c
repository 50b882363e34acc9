// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A session in the Trace Event Format (chrome://tracing, ui.perfetto.dev): the inputs are
 * merged as the report merges them, in its time base (a guest's events mapped to its
 * host's time), and written as one JSON object. Per input (a process) and CPU there are
 * three threads: the events as instants, the task running on the CPU as complete events
 * (from sched_switch), and guest mode as complete events (kvm_entry to kvm_exit on the
 * vCPU thread's host CPU). Each instant carries the event's fields and, named apart from
 * any field (common_ is the common fields' prefix, which no event field takes: sched_waking
 * has a field "comm", sys_enter_sysinfo one named "info"), the task's comm and pid and the
 * report's text (common_comm, common_pid, common_info). The kvm plugin's guest symbols are
 * looked up as the report looks them up (kvm-guest-func.c), so that text is the report's.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>
#include <traceevent/trace-seq.h>

#include <hgtrace/clock.h>
#include <hgtrace/export.h>
#include <hgtrace/merge.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/tracedat.h>

#include "../private/report.h"
#include "../private/tracedat.h"
#include "../common/common-local.h"

enum { TID_EVENTS = 1, TID_TASKS = 2, TID_GUEST = 3, TIDS = 3 };

struct track {
	unsigned long long first, last; /* the CPU's first and last event */
	unsigned long long run_start;	/* the running task's start (0: not known) */
	char comm[64];
	int pid;
	unsigned long long guest_start; /* guest mode since (0: not in guest mode) */
	int vcpu;
	unsigned int named;		  /* TID_* bits whose thread_name was written */
	unsigned long long end[TIDS + 1]; /* where the last slice of each TID_* ended */
};

struct src {
	struct hgt_input *in;
	struct hgt_clock clock;
	struct hgt_cursor **cur;
	struct track *tr;
	int nr_cpus;
	const char *name;
	int top;    /* which of the session's inputs (files) it is of */
	bool owner; /* closes @in */
	struct tep_event *sw, *entry, *exit_;
	/* their fields, found once */
	struct tep_format_field *prev_pid, *next_pid, *prev_comm, *next_comm, *vcpu_id;
	/* a TCG host (no kvm_entry): its vCPU threads (GUEST options), guest mode while they
	 * run */
	int *vpid, *vid, nr_v;
};

#define ADDR_SLOTS 1024 /* power of two */
#define EV_SLOTS 256	/* power of two */

/* The session: its sources, each CPU's state, where it goes. */
struct session {
	FILE *out;
	bool pb;		 /* Perfetto protobuf, else JSON */
	struct hgt__bgwrite *bw; /* writes the output while the next is made (NULL: written
				  * by whoever made it) */
	struct src *s;
	int nr, nr_top;		  /* sources; inputs (files) */
	uint64_t tsc_hz;	  /* TSC cycles made ns at this rate (0: were ns, or no rate) */
	unsigned long long count; /* records planned */
	bool stateful;		  /* a record of a plugin with state was planned */
	struct exporter *mk;	  /* the main thread's formatting context */
	struct hgt__par *par;	  /* workers formatting batches (NULL: the main thread) */
};

/* An iid remembered while the interning it came from lasts (epoch: exporter.epoch). */
struct kept_iid {
	uint64_t iid; /* 0: none */
	unsigned int epoch;
};

/*
 * How put_fields() writes an event's own fields, decided once per event: which fields,
 * read how, named how. Made the first time the event is written, kept for the export (an
 * event's format does not change).
 */
enum { FO_NUM, FO_STR, FO_BYTES };
struct field_out {
	const struct tep_format_field *fl;
	const char *json; /* JSON: ,"NAME": */
	size_t json_len;
	struct kept_iid iid; /* protobuf: NAME's debug annotation name */
	int offset, size;
	uint8_t kind; /* FO_* */
	bool sign;
	bool load; /* a number read with one load: 1, 2, 4 or 8 bytes in the machine's order */
};

struct fields {
	const struct tep_event *ev;
	struct kept_iid name, cat; /* protobuf: the event's name and system */
	char *names;		   /* the fields' JSON names, one after another */
	char *head;		   /* JSON: ,"name":...,"cat":...,"ts": of its instants */
	size_t head_len;
	int n;
	struct field_out f[];
};

/* A formatting context: the main thread's, or a worker's with its own handles. Protobuf
 * messages are built in hgt__bufs (Perfetto's trace format, written by hand from its
 * documented field numbers: protos/perfetto/trace/...). */
struct exporter {
	const struct session *ss;
	struct tep_handle **tep; /* per source: this context's handle of its file */
	struct hgt__comm_cache comms;
	bool pb;		  /* Perfetto protobuf, else JSON */
	struct hgt__blob ev, sub; /* a packet's track event or descriptor, its parts */
	struct hgt__blob o;	  /* what goes out next, a MB at a time or a batch */
	struct hgt__blob bytes;	  /* a byte array field's text (hgt__bytes_text()) */
	/* Perfetto's interning: each category, event name and annotation name is sent once,
	 * in the packet that first uses it (its InternedData, @interned), then by iid */
	struct intern {
		char **str;
		uint64_t *iid;
		size_t cap, n; /* open addressing, @cap a power of two */
	} names[3];
	struct hgt__blob interned, entry;
	/* iids of strings that stay at one address for the whole export (format names,
	 * literals), by that address: most lookups then neither hash nor compare a string */
	struct {
		const char *p;
		int kind;
		uint64_t iid;
	} by_addr[ADDR_SLOTS];
	/* JSON: the quoted text of such strings, by their address */
	struct {
		const char *p;
		char *json;
		size_t len;
	} json_by_addr[ADDR_SLOTS];
	bool cleared; /* the sequence's first packet since a reset was written */
	struct trace_seq seq;
	struct hgt__info_memo *memo; /* info texts of payloads seen before (NULL: none) */
	bool first;		     /* no event written yet: no comma before the next */
	int *type_off;		     /* per source: hgt__type_offset() of its handle */
	int *pid_off;		     /* per source: hgt__pid_offset() of its handle */
	/* events by type id, as found last in each slot: tep_find_event() keeps one and
	 * bisects for the others, 9% of an export's time */
	struct ev_slot {
		struct tep_handle *tep;
		int id;
		struct tep_event *ev;
		struct fields *fs; /* its fields' plan (NULL: not looked up yet) */
		bool stateful;	   /* hgt__par_stateful() of @ev */
	} evc[EV_SLOTS];
	struct fields **fields; /* every event's plan made so far, to free and find again */
	int nfields, capfields;
	unsigned int epoch;	   /* intern_reset()s so far: an iid kept from before is stale */
	struct kept_iid common[4]; /* common_pid, common_comm, common_info, pid */
};

/* ---- protobuf encoding ---- */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

/* a field's key, and a varint after it (inlined: the key of a constant field folds to a
 * constant, and this is the export's most frequent call) */
static inline __attribute__((always_inline)) void pb_key(struct hgt__blob *b, unsigned int field,
							 int wt, uint64_t v)
{
	uint8_t t[20];
	size_t n;

	if (b->p && b->cap - b->len >= sizeof(t)) { /* in place: no copy of a few bytes */
		n = hgt__varint(b->p + b->len, (uint64_t)field << 3 | (unsigned int)wt);
		b->len += n + hgt__varint(b->p + b->len + n, v);
		return;
	}
	n = hgt__varint(t, (uint64_t)field << 3 | (unsigned int)wt);
	hgt__blob_add(b, t, n + hgt__varint(t + n, v));
}

static inline __attribute__((always_inline)) void pb_uint(struct hgt__blob *b, unsigned int field,
							  uint64_t v)
{
	pb_key(b, field, WT_VARINT, v);
}

static void pb_str(struct hgt__blob *b, unsigned int field, const char *p, size_t n)
{
	n = strnlen(p, n);
	pb_key(b, field, WT_LEN, n);
	hgt__blob_add(b, p, n);
}

/* @m as field @field of @b; @m is emptied */
static void pb_msg(struct hgt__blob *b, unsigned int field, struct hgt__blob *m)
{
	pb_key(b, field, WT_LEN, m->len);
	hgt__blob_add(b, m->p, m->len);
	b->oom |= m->oom;
	m->len = 0;
	m->oom = false;
}

/* TracePacket fields, TrackDescriptor, ProcessDescriptor, ThreadDescriptor, TrackEvent and
 * DebugAnnotation fields used here */
enum {
	TRACE_PACKET = 1,
	PKT_TIMESTAMP = 8,
	PKT_SEQ_ID = 10,
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQ_FLAGS = 13,
	PKT_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	PD_PID = 1,
	PD_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_NAME = 5,
	TE_CATEGORY_IIDS = 3,
	TE_DEBUG_ANNOTATIONS = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_TRACK_UUID = 11,
	TE_CATEGORIES = 22,
	TE_NAME = 23,
	DA_UINT = 3,
	DA_INT = 4,
	DA_STRING = 6,
	DA_NAME_IID = 1,
	ID_EVENT_CATEGORIES = 1, /* InternedData */
	ID_EVENT_NAMES = 2,
	ID_DEBUG_ANNOTATION_NAMES = 3,
	IN_IID = 1, /* EventCategory, EventName, DebugAnnotationName */
	IN_NAME = 2,
	TYPE_SLICE_BEGIN = 1,
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,
};

static uint64_t track_uuid(int si, int cpu, int kind)
{
	return (uint64_t)(si + 1) << 32 | (uint32_t)(kind ? cpu * TIDS + kind : 0);
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

/* The bytes of field @field holding @len bytes: its key, its length, them. */
static size_t pb_field_len(unsigned int field, size_t len)
{
	return varint_len((uint64_t)field << 3 | WT_LEN) + varint_len(len) + len;
}

/* Write a Trace.packet of @x->ev as its field @field (a track event or descriptor), with
 * the timestamp @ts when @has_ts: straight into @x->o, its length counted first. */
static void pb_packet(struct exporter *x, unsigned int field, bool has_ts, uint64_t ts)
{
	struct hgt__blob head = { 0 };
	uint8_t h[40];
	size_t body;

	head.p = h;
	head.cap = sizeof(h); /* three varint fields: never more */
	if (has_ts)
		pb_uint(&head, PKT_TIMESTAMP, ts);
	pb_uint(&head, PKT_SEQ_ID, 1);
	pb_uint(&head, PKT_SEQ_FLAGS,
		x->cleared ? SEQ_NEEDS_INCREMENTAL_STATE : SEQ_INCREMENTAL_STATE_CLEARED);
	x->cleared = true;
	body = head.len + pb_field_len(field, x->ev.len);
	if (x->interned.len)
		body += pb_field_len(PKT_INTERNED_DATA, x->interned.len);
	pb_key(&x->o, TRACE_PACKET, WT_LEN, body); /* the file is a Trace: its packets */
	hgt__blob_add(&x->o, h, head.len);
	if (x->interned.len)
		pb_msg(&x->o, PKT_INTERNED_DATA, &x->interned);
	pb_msg(&x->o, field, &x->ev);
}

static uint64_t str_hash(const char *p)
{
	uint64_t h = 1469598103934665603ULL; /* FNV-1a */

	while (*p)
		h = (h ^ (unsigned char)*p++) * 1099511628211ULL;
	return h;
}

/* The iid of @str in table @kind (ID_*), 0 when out of memory; a new one goes into the
 * packet's InternedData. */
static uint64_t intern(struct exporter *x, int kind, const char *str)
{
	struct intern *t = &x->names[kind - 1];
	size_t i;

	if (t->n * 2 >= t->cap) { /* grow: rehash into twice the room */
		size_t cap = t->cap ? t->cap * 2 : 64;
		char **str2 = calloc(cap, sizeof(*str2));
		uint64_t *iid2 = calloc(cap, sizeof(*iid2));

		if (!str2 || !iid2) {
			free(str2);
			free(iid2);
			x->interned.oom = true;
			return 0;
		}
		for (size_t k = 0; k < t->cap; k++) {
			if (!t->str[k])
				continue;
			for (i = str_hash(t->str[k]) & (cap - 1); str2[i]; i = (i + 1) & (cap - 1))
				;
			str2[i] = t->str[k];
			iid2[i] = t->iid[k];
		}
		free(t->str);
		free(t->iid);
		t->str = str2;
		t->iid = iid2;
		t->cap = cap;
	}
	for (i = str_hash(str) & (t->cap - 1); t->str[i]; i = (i + 1) & (t->cap - 1))
		if (!strcmp(t->str[i], str))
			return t->iid[i];
	t->str[i] = strdup(str);
	if (!t->str[i]) {
		x->interned.oom = true;
		return 0;
	}
	t->iid[i] = ++t->n;
	pb_uint(&x->entry, IN_IID, t->iid[i]);
	pb_str(&x->entry, IN_NAME, str, strlen(str));
	pb_msg(&x->interned, (unsigned int)kind, &x->entry);
	return t->iid[i];
}

/* intern() of a string @str that is not written over while the export runs (an event's,
 * system's or field's name from its format, a literal). */
static uint64_t intern_fixed(struct exporter *x, int kind, const char *str)
{
	uintptr_t a = (uintptr_t)str;
	size_t k = (size_t)((a ^ a >> 11 ^ (uintptr_t)kind << 7) >> 3) & (ADDR_SLOTS - 1);

	if (x->by_addr[k].p != str || x->by_addr[k].kind != kind) {
		uint64_t iid = intern(x, kind, str);

		if (!iid)
			return 0; /* out of memory: not kept */
		x->by_addr[k].p = str;
		x->by_addr[k].kind = kind;
		x->by_addr[k].iid = iid;
	}
	return x->by_addr[k].iid;
}

/* The sequence's incremental state cleared: every string interned again from iid 1, the
 * next packet says so (a batch formatted apart starts so). */
static void intern_reset(struct exporter *x)
{
	if (!x->pb)
		return;
	for (int k = 0; k < 3; k++) {
		struct intern *t = &x->names[k];

		for (size_t i = 0; i < t->cap; i++) {
			free(t->str[i]);
			t->str[i] = NULL;
		}
		t->n = 0;
	}
	memset(x->by_addr, 0, sizeof(x->by_addr));
	x->interned.len = 0;
	x->cleared = false;
	x->epoch++;
}

static void intern_free(struct exporter *x)
{
	for (int k = 0; k < 3; k++) {
		for (size_t i = 0; i < x->names[k].cap; i++)
			free(x->names[k].str[i]);
		free(x->names[k].str);
		free(x->names[k].iid);
	}
	free(x->interned.p);
	free(x->entry.p);
}

/* intern_fixed() of @str, remembered in *@k until the interning is reset */
static uint64_t intern_kept(struct exporter *x, struct kept_iid *k, int kind, const char *str)
{
	if (!k->iid || k->epoch != x->epoch) {
		k->iid = intern_fixed(x, kind, str);
		k->epoch = x->epoch;
	}
	return k->iid;
}

/* The bytes of a varint field @field holding @v: its key and @v. */
static size_t pb_uint_len(unsigned int field, uint64_t v)
{
	return varint_len((uint64_t)field << 3 | WT_VARINT) + varint_len(v);
}

/* A debug annotation named by @iid (ID_DEBUG_ANNOTATION_NAMES) = a number (signed or not)
 * or, with @str, a string (up to its first NUL), written whole: its length is counted
 * first, so nothing is moved after. */
static void pb_ann_iid(struct exporter *x, uint64_t iid, const char *str, size_t n, int64_t v,
		       bool sign)
{
	struct hgt__blob *b = &x->ev;
	unsigned int vf = sign ? DA_INT : DA_UINT;
	size_t body = pb_uint_len(DA_NAME_IID, iid);
	uint8_t *q;

	if (str) {
		n = strnlen(str, n);
		body += pb_field_len(DA_STRING, n);
	} else {
		body += pb_uint_len(vf, (uint64_t)v);
	}
	/* besides the body: the annotation's key (1 byte) and length (at most 10) */
	if (hgt__blob_room(b, body + 11))
		return;
	q = b->p + b->len; /* written through one pointer: the length stays in a register */
	q += hgt__varint(q, (uint64_t)TE_DEBUG_ANNOTATIONS << 3 | WT_LEN);
	q += hgt__varint(q, body);
	q += hgt__varint(q, (uint64_t)DA_NAME_IID << 3 | WT_VARINT);
	q += hgt__varint(q, iid);
	if (str) {
		q += hgt__varint(q, (uint64_t)DA_STRING << 3 | WT_LEN);
		q += hgt__varint(q, n);
		memcpy(q, str, n);
		q += n;
	} else {
		q += hgt__varint(q, (uint64_t)vf << 3 | WT_VARINT);
		q += hgt__varint(q, (uint64_t)v);
	}
	b->len = (size_t)(q - b->p);
}

/* pb_ann_iid() of a name that stays at its address (a literal), its iid kept in *@k */
static void pb_ann(struct exporter *x, struct kept_iid *k, const char *name, const char *str,
		   size_t n, int64_t v, bool sign)
{
	pb_ann_iid(x, intern_kept(x, k, ID_DEBUG_ANNOTATION_NAMES, name), str, n, v, sign);
}

/* The track descriptor of a process (@kind 0) or of one of its CPU threads. */
static void pb_track(struct exporter *x, int si, int cpu, int kind, const char *name)
{
	pb_uint(&x->ev, TD_UUID, track_uuid(si, cpu, kind));
	if (!kind) {
		pb_uint(&x->sub, PD_PID, (uint64_t)(si + 1));
		pb_str(&x->sub, PD_NAME, name, strlen(name));
		pb_msg(&x->ev, TD_PROCESS, &x->sub);
	} else {
		pb_uint(&x->sub, THD_PID, (uint64_t)(si + 1));
		pb_uint(&x->sub, THD_TID, (uint64_t)(cpu * TIDS + kind));
		pb_str(&x->sub, THD_NAME, name, strlen(name));
		pb_msg(&x->ev, TD_THREAD, &x->sub);
	}
	pb_packet(x, PKT_TRACK_DESCRIPTOR, false, 0);
}

static void put_str(struct hgt__blob *o, const char *s)
{
	hgt__blob_add(o, s, strlen(s));
}

/* Bytes a plan's texts (struct fields) have after them, for put_padded() */
#define PAD 64

/* @n bytes at @p, which has @width readable (PAD at most): copied @width at a time, a
 * copy the compiler inlines, where they and the output have room */
static inline __attribute__((always_inline)) void put_padded(struct hgt__blob *o, const char *p,
							     size_t n, size_t width)
{
	if (n <= width && o->p && o->cap - o->len >= width) {
		memcpy(o->p + o->len, p, width);
		o->len += n;
		return;
	}
	hgt__blob_add(o, p, n);
}

/* A JSON string that stays at its address for the whole export (intern_fixed()'s kind):
 * quoted once, then copied. */
static void put_json_fixed(struct exporter *x, const char *str)
{
	uintptr_t a = (uintptr_t)str;
	size_t k = (size_t)((a ^ a >> 11) >> 3) & (ADDR_SLOTS - 1);

	if (x->json_by_addr[k].p != str) {
		struct hgt__blob b = { 0 };

		hgt__json_blob_s(&b, str);
		if (b.oom) {
			free(b.p);
			hgt__json_blob_s(&x->o, str);
			return;
		}
		free(x->json_by_addr[k].json);
		x->json_by_addr[k].p = str;
		x->json_by_addr[k].json = (char *)b.p;
		x->json_by_addr[k].len = b.len;
	}
	hgt__blob_add(&x->o, x->json_by_addr[k].json, x->json_by_addr[k].len);
}

/* @ns as microseconds with the nanosecond digits ("12.345"), in one pass */
static void put_us(struct hgt__blob *o, unsigned long long ns)
{
	unsigned long long us = ns / 1000;
	unsigned int frac = (unsigned int)(ns % 1000);
	char tmp[32], *p, *e;
	size_t d = (size_t)hgt__ndigits(us) + 4;

	p = o->p && o->cap - o->len >= sizeof(tmp) ? (char *)o->p + o->len : tmp;
	e = p + d;
	memcpy(e - 2, hgt__digit_pairs + 2 * (frac % 100), 2);
	e[-3] = (char)('0' + frac / 100);
	e[-4] = '.';
	hgt__put_dec_back(e - 4, us);
	if (p == tmp)
		hgt__blob_add(o, tmp, d);
	else
		o->len += d;
}

/* ,"@key": and put_us() of @ns (@key a string literal) */
#define put_ts(o, key, ns)                           \
	do {                                         \
		hgt__blob_lit((o), ",\"" key "\":"); \
		put_us((o), (ns));                   \
	} while (0)

/* The output so far to the session's FILE once it holds a MB (with @all: whatever it
 * holds). */
static void flush_out(struct exporter *x, bool all)
{
	if (x->o.len < (1u << 20) && !all)
		return;
	if (x->ss->bw) {
		hgt__bgwrite_put(x->ss->bw, &x->o);
		return;
	}
	fwrite(x->o.p, 1, x->o.len, x->ss->out);
	x->o.len = 0;
}

/* An event's start: its phase @ph ('i', 'X' or 'M'), process and thread (not negative) */
static void begin(struct exporter *x, char ph, int pid, int tid)
{
	static const char lead[] = ",\n{\"ph\":\"?\",\"pid\":"; /* ? : @ph */
	size_t skip = x->first ? 1 : 0;

	if (!hgt__blob_add(&x->o, lead + skip, sizeof(lead) - 1 - skip))
		x->o.p[x->o.len - 9] = (uint8_t)ph;
	hgt__blob_u64(&x->o, (unsigned int)pid);
	hgt__blob_lit(&x->o, ",\"tid\":");
	hgt__blob_u64(&x->o, (unsigned int)tid);
	x->first = false;
}

/* The name of thread @kind of CPU @cpu of source @si (written once: plan_name()). */
static void thread_name(struct exporter *x, int si, int cpu, int kind)
{
	static const char *const what[] = { "", "events", "tasks", "guest mode" };

	if (x->pb) {
		char name[64];

		snprintf(name, sizeof(name), "CPU %d %s", cpu, what[kind]);
		pb_track(x, si, cpu, kind, name);
		return;
	}
	begin(x, 'M', si + 1, cpu * TIDS + kind);
	hgt__blob_lit(&x->o, ",\"name\":\"thread_name\",\"args\":{\"name\":\"CPU ");
	hgt__blob_i64(&x->o, cpu);
	hgt__blob_lit(&x->o, " ");
	put_str(&x->o, what[kind]);
	hgt__blob_lit(&x->o, "\"}}");
	begin(x, 'M', si + 1, cpu * TIDS + kind);
	hgt__blob_lit(&x->o, ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":");
	hgt__blob_i64(&x->o, cpu * TIDS + kind);
	hgt__blob_lit(&x->o, "}}");
}

/* A complete event on thread @kind of CPU @cpu of source @si, with args "pid" (when @pid
 * >= 0) and @key: @val (when @key). */
static void complete(struct exporter *x, int si, int cpu, int kind, const char *name,
		     unsigned long long from, unsigned long long to, int pid, const char *key,
		     const char *val, size_t n)
{
	if (x->pb) { /* a slice: its begin and its end */
		pb_uint(&x->ev, TE_TYPE, TYPE_SLICE_BEGIN);
		pb_uint(&x->ev, TE_TRACK_UUID, track_uuid(si, cpu, kind));
		pb_uint(&x->ev, TE_NAME_IID, intern(x, ID_EVENT_NAMES, name));
		if (pid >= 0)
			pb_ann(x, &x->common[3], "pid", NULL, 0, pid, true);
		if (key) /* "switch" or "exit" */
			pb_ann_iid(x, intern_fixed(x, ID_DEBUG_ANNOTATION_NAMES, key), val, n, 0,
				   false);
		pb_packet(x, PKT_TRACK_EVENT, true, from);
		pb_uint(&x->ev, TE_TYPE, TYPE_SLICE_END);
		pb_uint(&x->ev, TE_TRACK_UUID, track_uuid(si, cpu, kind));
		pb_packet(x, PKT_TRACK_EVENT, true, to);
		return;
	}
	begin(x, 'X', si + 1, cpu * TIDS + kind);
	hgt__blob_lit(&x->o, ",\"name\":");
	hgt__json_blob_s(&x->o, name);
	put_ts(&x->o, "ts", from);
	put_ts(&x->o, "dur", to - from);
	hgt__blob_lit(&x->o, ",\"args\":{");
	if (pid >= 0) {
		hgt__blob_lit(&x->o, "\"pid\":");
		hgt__blob_i64(&x->o, pid);
		if (key)
			hgt__blob_lit(&x->o, ",");
	}
	if (key) {
		hgt__json_blob_s(&x->o, key);
		hgt__blob_lit(&x->o, ":");
		hgt__json_blob(&x->o, val, n);
	}
	hgt__blob_lit(&x->o, "}}");
}

/* The plan of field @fl (a string or a number put_fields() writes), its JSON name
 * written into @names; false for a field it leaves out. */
static bool field_out(struct field_out *fo, const struct tep_format_field *fl, bool native,
		      struct hgt__blob *names)
{
	memset(fo, 0, sizeof(*fo));
	fo->fl = fl;
	fo->offset = fl->offset;
	fo->size = fl->size;
	if (fl->flags & TEP_FIELD_IS_STRING) {
		fo->kind = hgt__field_is_bytes(fl) ? FO_BYTES : FO_STR;
	} else if (!(fl->flags & (TEP_FIELD_IS_ARRAY | TEP_FIELD_IS_DYNAMIC)) && fl->size > 0 &&
		   fl->size <= 8 && fl->offset >= 0) {
		fo->kind = FO_NUM;
		fo->sign = fl->flags & TEP_FIELD_IS_SIGNED;
		fo->load = native &&
			   (fl->size == 1 || fl->size == 2 || fl->size == 4 || fl->size == 8);
	} else {
		return false;
	}
	fo->json_len = names->len; /* its start, until the names are placed */
	hgt__blob_add(names, ",", 1);
	hgt__json_blob(names, fl->name, strlen(fl->name));
	hgt__blob_add(names, ":", 1);
	fo->json_len = names->len - fo->json_len;
	return true;
}

/* @ev's fields' plan, made now (NULL when out of memory). */
static struct fields *fields_new(struct tep_handle *tep, const struct tep_event *ev)
{
	bool native = !tep_is_file_bigendian(tep) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
	struct hgt__blob names = { 0 }, head = { 0 };
	struct fields *fs;
	size_t at = 0;
	int n = 0;

	for (const struct tep_format_field *fl = ev->format.fields; fl; fl = fl->next)
		n++;
	fs = calloc(1, sizeof(*fs) + (size_t)n * sizeof(fs->f[0]));
	if (!fs)
		return NULL;
	fs->ev = ev;
	for (const struct tep_format_field *fl = ev->format.fields; fl; fl = fl->next)
		fs->n += field_out(&fs->f[fs->n], fl, native, &names);
	hgt__blob_lit(&head, ",\"name\":");
	hgt__json_blob_s(&head, ev->name);
	hgt__blob_lit(&head, ",\"cat\":");
	hgt__json_blob_s(&head, ev->system);
	hgt__blob_lit(&head, ",\"ts\":");
	hgt__blob_room(&names, PAD); /* zeros after the texts (PAD): put_padded() */
	hgt__blob_room(&head, PAD);
	if (names.oom || head.oom) {
		free(names.p);
		free(head.p);
		free(fs);
		return NULL;
	}
	memset(names.p + names.len, 0, PAD);
	memset(head.p + head.len, 0, PAD);
	fs->head = (char *)head.p;
	fs->head_len = head.len;
	fs->names = (char *)names.p;
	for (int i = 0; i < fs->n; i++) { /* placed once the blob is whole: it moves */
		fs->f[i].json = fs->names + at;
		at += fs->f[i].json_len;
	}
	return fs;
}

static void fields_free(struct fields *fs)
{
	if (fs) {
		free(fs->names);
		free(fs->head);
	}
	free(fs);
}

/* The plan of event @e (an event slot) of handle @tep, made or found again; NULL when out
 * of memory (x->o.oom then set). */
static struct fields *fields_of(struct exporter *x, struct ev_slot *e, struct tep_handle *tep)
{
	struct fields *fs = NULL;

	if (e->fs)
		return e->fs;
	for (int i = 0; i < x->nfields && !fs; i++)
		if (x->fields[i]->ev == e->ev)
			fs = x->fields[i];
	if (!fs) {
		if (x->nfields == x->capfields) {
			int cap = x->capfields ? 2 * x->capfields : 32;
			struct fields **nf = realloc(x->fields, (size_t)cap * sizeof(*nf));

			if (!nf) {
				x->o.oom = true;
				return NULL;
			}
			x->fields = nf;
			x->capfields = cap;
		}
		fs = fields_new(tep, e->ev);
		if (!fs) {
			x->o.oom = true;
			return NULL;
		}
		x->fields[x->nfields++] = fs;
	}
	e->fs = fs;
	return fs;
}

/* Number field @f of @rec, extended to 64 bits when signed. */
static uint64_t field_num(struct tep_handle *tep, const struct field_out *f,
			  const struct tep_record *rec)
{
	const char *p = (const char *)rec->data + f->offset;
	uint64_t v;

	if (f->load) {
		switch (f->size) {
		case 1:
			v = *(const uint8_t *)p;
			break;
		case 2: {
			uint16_t u;

			memcpy(&u, p, 2);
			v = u;
			break;
		}
		case 4: {
			uint32_t u;

			memcpy(&u, p, 4);
			v = u;
			break;
		}
		default:
			memcpy(&v, p, 8);
		}
	} else {
		v = tep_read_number(tep, p, f->size);
	}
	if (f->sign && f->size < 8 && (v >> (8 * f->size - 1)) & 1)
		v |= ~0ULL << (8 * f->size);
	return v;
}

/* The event's own fields (plan @fs): numbers, and strings (char arrays); JSON members or,
 * in protobuf, debug annotations. */
static void put_fields(struct exporter *x, struct tep_handle *tep, struct fields *fs,
		       struct tep_record *rec)
{
	struct hgt__blob *o = &x->o;

	for (int i = 0; i < fs->n; i++) {
		struct field_out *f = &fs->f[i];
		const char *p;
		size_t n;

		if (f->kind == FO_NUM) {
			uint64_t v;

			if (f->offset + f->size > rec->size)
				continue;
			v = field_num(tep, f, rec);
			if (x->pb) {
				pb_ann_iid(x,
					   intern_kept(x, &f->iid, ID_DEBUG_ANNOTATION_NAMES,
						       f->fl->name),
					   NULL, 0, (int64_t)v, f->sign);
				continue;
			}
			put_padded(o, f->json, f->json_len, 32);
			if (f->sign)
				hgt__blob_i64(o, (long long)v);
			else
				hgt__blob_u64(o, v);
			continue;
		}
		if (!hgt__field_str(rec, f->fl, &p, &n))
			continue;
		if (f->kind == FO_BYTES) {
			x->bytes.len = 0;
			hgt__bytes_text(&x->bytes, p, n);
			if (x->bytes.oom)
				continue;
			p = (const char *)x->bytes.p;
			n = x->bytes.len;
		}
		if (x->pb) {
			pb_ann_iid(x,
				   intern_kept(x, &f->iid, ID_DEBUG_ANNOTATION_NAMES, f->fl->name),
				   p, n, 0, false);
			continue;
		}
		put_padded(o, f->json, f->json_len, 32);
		hgt__json_blob(o, p, n);
	}
}

/* tep_find_event() of source @si's handle in this context, remembered by id: its slot. */
static struct ev_slot *event_slot(struct exporter *x, int si, struct tep_record *rec)
{
	struct tep_handle *tep = x->tep[si];
	int id = hgt__record_type(tep, x->type_off[si], rec);
	struct ev_slot *e = &x->evc[id & (EV_SLOTS - 1)];

	if (e->tep != tep || e->id != id) {
		e->tep = tep;
		e->id = id;
		e->ev = tep_find_event(tep, id);
		e->fs = NULL;
		e->stateful = hgt__par_stateful(e->ev);
	}
	return e;
}

/* The record as an instant on its CPU's events thread, with its fields and texts (@e: its
 * event's slot); its info text into *@info (*@info_len bytes), left NULL when not made. */
static void instant(struct exporter *x, int si, int cpu, struct tep_record *rec, struct ev_slot *e,
		    const char **info, size_t *info_len)
{
	struct tep_handle *tep = x->tep[si];
	struct tep_event *ev = e->ev;
	struct fields *fs = ev ? fields_of(x, e, tep) : NULL;
	int pid = hgt__record_pid(tep, x->pid_off[si], rec);
	const char *text, *name = ev ? ev->name : "unknown", *sys = ev ? ev->system : "unknown";
	size_t len;

	if (ev && !fs)
		return; /* out of memory: said at the end */
	if (x->pb) {
		pb_uint(&x->ev, TE_TYPE, TYPE_INSTANT);
		pb_uint(&x->ev, TE_TRACK_UUID, track_uuid(si, cpu, TID_EVENTS));
		pb_uint(&x->ev, TE_NAME_IID,
			fs ? intern_kept(x, &fs->name, ID_EVENT_NAMES, name)
			   : intern_fixed(x, ID_EVENT_NAMES, name));
		pb_uint(&x->ev, TE_CATEGORY_IIDS,
			fs ? intern_kept(x, &fs->cat, ID_EVENT_CATEGORIES, sys)
			   : intern_fixed(x, ID_EVENT_CATEGORIES, sys));
		pb_ann(x, &x->common[0], "common_pid", NULL, 0, pid, true);
		text = hgt__comm_cached(&x->comms, tep, pid, NULL);
		pb_ann(x, &x->common[1], "common_comm", text, strlen(text), 0, false);
		if (fs)
			put_fields(x, tep, fs, rec);
		text = hgt__info_text(x->memo, &x->seq, tep, ev, rec, false, &len);
		*info = text;
		*info_len = len;
		pb_ann(x, &x->common[2], "common_info", text, len, 0, false);
		pb_packet(x, PKT_TRACK_EVENT, true, rec->ts);
		return;
	}
	/* no "s": an instant's scope is its thread's unless it says otherwise */
	begin(x, 'i', si + 1, cpu * TIDS + TID_EVENTS);
	if (fs) {
		put_padded(&x->o, fs->head, fs->head_len, PAD);
		put_us(&x->o, rec->ts);
	} else {
		hgt__blob_lit(&x->o, ",\"name\":");
		put_json_fixed(x, name);
		hgt__blob_lit(&x->o, ",\"cat\":");
		put_json_fixed(x, sys);
		put_ts(&x->o, "ts", rec->ts);
	}
	hgt__blob_lit(&x->o, ",\"args\":{\"common_pid\":");
	hgt__blob_i64(&x->o, pid);
	hgt__blob_lit(&x->o, ",\"common_comm\":");
	text = hgt__comm_cached(&x->comms, tep, pid, &len);
	hgt__json_blob(&x->o, text, len);
	if (fs)
		put_fields(x, tep, fs, rec);
	text = hgt__info_text(x->memo, &x->seq, tep, ev, rec, false, &len);
	*info = text;
	*info_len = len;
	hgt__blob_lit(&x->o, ",\"common_info\":");
	hgt__json_blob(&x->o, text, len);
	hgt__blob_lit(&x->o, "}}");
}

/* ---- what the main thread decides about each record, in time order ---- */

enum { KEY_NONE, KEY_SWITCH, KEY_EXIT };

/* A complete event on a CPU's tasks or guest-mode thread. */
struct slice {
	unsigned long long from, to;
	int pid;      /* its "pid" arg (-1: none) */
	uint8_t kind; /* TID_* */
	uint8_t key;  /* KEY_*: an arg named so, the record's text */
	bool named;   /* its thread's name is written first */
	char name[64];
};

/*
 * What is written for a record: the main thread decides it with the state of every CPU,
 * and whichever context formats the record writes it (queued beside the record, up to its
 * slices in use). The same plan whether one thread formats or several: the same bytes.
 */
struct plan {
	bool reset;   /* Perfetto: the sequence's incremental state cleared first */
	bool named;   /* the events thread's name is written first */
	bool instant; /* the record itself (else its slices alone: the ends at the last) */
	uint8_t nsl;
	struct slice sl[2];
};

static size_t plan_size(const struct plan *pl)
{
	return offsetof(struct plan, sl) + pl->nsl * sizeof(pl->sl[0]);
}

/* @n bytes of @p (up to a NUL) as a string in @buf of @size bytes: snprintf's "%.*s" without
 * its cost (a comm at each sched_switch) */
static void copy_name(char *buf, size_t size, const char *p, size_t n)
{
	size_t l = strnlen(p, n < size - 1 ? n : size - 1);

	memcpy(buf, p, l);
	buf[l] = 0;
}

/* "vCPU @v" in @buf (32 bytes) */
static void vcpu_name(char *buf, int v)
{
	unsigned int u = v < 0 ? 0u - (unsigned int)v : (unsigned int)v;
	char d[16];
	int i = 16;

	do {
		d[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		d[--i] = '-';
	memcpy(buf, "vCPU ", 5);
	memcpy(buf + 5, d + i, (size_t)(16 - i));
	buf[5 + 16 - i] = 0;
}

/* Whether thread @kind of track @t is named now (true the first time). */
static bool plan_name(struct track *t, int kind)
{
	if (t->named & (1u << kind))
		return false;
	t->named |= 1u << kind;
	return true;
}

/* A slice of @pl, unless it ends before it begins or overlaps the last: a CPU whose time
 * stepped back (a damaged page, a clock set back) has its events, not a slice across the
 * step. */
static void plan_slice(struct plan *pl, struct track *t, int kind, const char *name,
		       unsigned long long from, unsigned long long to, int pid, int key)
{
	struct slice *sl = &pl->sl[pl->nsl];

	if (!from || to < from || from < t->end[kind] || pl->nsl == 2)
		return;
	t->end[kind] = to;
	pl->nsl++;
	sl->from = from;
	sl->to = to;
	sl->pid = pid;
	sl->kind = (uint8_t)kind;
	sl->key = (uint8_t)key;
	sl->named = plan_name(t, kind);
	copy_name(sl->name, sizeof(sl->name), name, strlen(name)); /* a string: its NUL ends it */
}

static int vcpu_of(const struct src *s, int pid)
{
	for (int i = 0; i < s->nr_v; i++)
		if (s->vpid[i] == pid)
			return s->vid[i];
	return -1;
}

/* TCG: a vCPU thread runs its guest whenever it runs: guest mode from its switch-in to its
 * switch-out (from the CPU's first event for one running when the trace began). Planned
 * before the task of the CPU is updated for this switch. */
static void plan_tcg_switch(struct src *s, struct track *t, struct tep_record *rec, struct plan *pl)
{
	int vp = vcpu_of(s, (int)hgt__field_num(s->prev_pid, rec));
	int vn = vcpu_of(s, (int)hgt__field_num(s->next_pid, rec));

	if (vp >= 0) {
		unsigned long long from = t->guest_start  ? t->guest_start
					  : !t->run_start ? t->first
							  : 0;
		char name[32];

		vcpu_name(name, vp);
		if (from && rec->ts > from)
			plan_slice(pl, t, TID_GUEST, name, from, rec->ts, -1, KEY_SWITCH);
		t->guest_start = 0;
	}
	if (vn >= 0) {
		t->guest_start = rec->ts;
		t->vcpu = vn;
	}
}

/* The task switched out ran since the CPU's last switch (or its first event). */
static void plan_switch(struct src *s, struct track *t, struct tep_record *rec, struct plan *pl)
{
	struct tep_format_field *nc = s->next_comm, *pc = s->prev_comm;
	const char *p;
	size_t n;

	if (!t->run_start) {
		t->run_start = t->first;
		t->pid = (int)hgt__field_num(s->prev_pid, rec);
		t->comm[0] = 0;
		if (pc && hgt__field_str(rec, pc, &p, &n))
			copy_name(t->comm, sizeof(t->comm), p, n);
	}
	plan_slice(pl, t, TID_TASKS, t->comm[0] ? t->comm : "?", t->run_start, rec->ts, t->pid,
		   KEY_NONE);
	t->run_start = rec->ts;
	t->pid = (int)hgt__field_num(s->next_pid, rec);
	t->comm[0] = 0;
	if (nc && hgt__field_str(rec, nc, &p, &n))
		copy_name(t->comm, sizeof(t->comm), p, n);
}

static void plan_record(struct session *ss, int si, int cpu, struct tep_record *rec,
			struct plan *pl)
{
	struct src *s = &ss->s[si];
	struct track *t = &s->tr[cpu];
	const struct ev_slot *e = event_slot(ss->mk, si, rec); /* the main thread's handles */
	struct tep_event *ev = e->ev;

	/* a Perfetto sequence's interned strings start again every batch of the parallel
	 * path, and where it ends */
	pl->reset = ss->count++ % HGT__PAR_BATCH == 0;
	if (e->stateful && !ss->stateful) {
		ss->stateful = true;
		pl->reset = true;
	}
	pl->named = plan_name(t, TID_EVENTS);
	pl->instant = true;
	pl->nsl = 0;
	if (!t->first)
		t->first = rec->ts;
	t->last = rec->ts;
	if (ev && ev == s->sw && s->nr_v)
		plan_tcg_switch(s, t, rec, pl);
	if (ev && ev == s->sw) {
		plan_switch(s, t, rec, pl);
	} else if (ev && ev == s->entry) {
		t->guest_start = rec->ts;
		t->vcpu = (int)hgt__field_num(s->vcpu_id, rec);
	} else if (ev && ev == s->exit_ && t->guest_start) {
		char name[32];

		vcpu_name(name, t->vcpu);
		plan_slice(pl, t, TID_GUEST, name, t->guest_start, rec->ts, -1, KEY_EXIT);
		t->guest_start = 0;
	}
}

/* The slices still open at the end of CPU @c of source @si (the first of them: @reset). */
static void plan_end(struct session *ss, int si, int c, bool reset, struct plan *pl)
{
	struct track *t = &ss->s[si].tr[c];

	memset(pl, 0, offsetof(struct plan, sl));
	pl->reset = reset;
	if (t->run_start && t->last > t->run_start)
		plan_slice(pl, t, TID_TASKS, t->comm[0] ? t->comm : "?", t->run_start, t->last,
			   t->pid, KEY_NONE);
	if (t->guest_start && t->last > t->guest_start)
		plan_slice(pl, t, TID_GUEST, "guest mode (no exit seen)", t->guest_start, t->last,
			   -1, KEY_NONE);
}

/* ---- what is written for a record, as planned ---- */

static void render(struct exporter *x, int si, int cpu, struct tep_record *rec,
		   const struct plan *pl)
{
	static const char *const keys[] = { NULL, "switch", "exit" };
	struct ev_slot *e = rec ? event_slot(x, si, rec) : NULL;
	struct tep_event *ev = e ? e->ev : NULL;
	const char *info = NULL; /* the record's info text, made once for all it writes */
	size_t info_len = 0;

	if (pl->reset)
		intern_reset(x);
	if (pl->named)
		thread_name(x, si, cpu, TID_EVENTS);
	if (pl->instant && e)
		instant(x, si, cpu, rec, e, &info, &info_len);
	for (int i = 0; i < pl->nsl; i++) {
		const struct slice *sl = &pl->sl[i];

		if (sl->named)
			thread_name(x, si, cpu, sl->kind);
		if (sl->key && !info)
			info = hgt__info_text(x->memo, &x->seq, x->tep[si], ev, rec, false,
					      &info_len);
		complete(x, si, cpu, sl->kind, sl->name, sl->from, sl->to, sl->pid, keys[sl->key],
			 sl->key ? info : NULL, sl->key ? info_len : 0);
	}
}

/* A TCG host's vCPU threads: every GUEST option's (vCPU id -> host thread). */
static int tcg_threads(struct src *s)
{
	int ng = hgt_input_nr_guests(s->in);

	for (int g = 0; g < ng; g++) {
		struct hgt_guest gu;

		if (hgt_input_guest(s->in, g, &gu))
			continue;
		for (int id = 0; id < gu.nr_vcpus; id++) {
			int *p, *v;

			if (gu.cpu_pid[id] <= 0)
				continue;
			p = realloc(s->vpid, sizeof(*p) * (size_t)(s->nr_v + 1));
			if (p)
				s->vpid = p;
			v = realloc(s->vid, sizeof(*v) * (size_t)(s->nr_v + 1));
			if (v)
				s->vid = v;
			if (!p || !v)
				return -ENOMEM;
			s->vpid[s->nr_v] = gu.cpu_pid[id];
			s->vid[s->nr_v++] = id;
		}
	}
	return 0;
}

static void free_sources(struct session *x)
{
	/* every cursor first: an instance's cursors use its input, closed with the top's */
	for (int i = 0; i < x->nr; i++) {
		struct src *s = &x->s[i];

		for (int c = 0; s->cur && c < s->nr_cpus; c++)
			hgt_cursor_close(s->cur[c]);
		free(s->cur);
		free(s->tr);
		free(s->vpid);
		free(s->vid);
	}
	for (int i = 0; i < x->nr; i++)
		if (x->s[i].owner)
			hgt_input_close(x->s[i].in);
	free(x->s);
}

/* Source @x->nr: buffer @b of @in, the session's input @file (the top one in the input's
 * time base, an instance in its own, as the report prints them), its CPUs added to @m. */
static int add_source(struct session *x, struct hgt_merge *m, struct hgt_input *in, int file, int b,
		      const char *name, const struct hgt_clock *clock)
{
	struct src *s = &x->s[x->nr];
	struct tep_handle *tep = hgt_input_tep(in);
	int idx = x->nr++;

	s->in = in;
	s->top = file;
	s->name = name;
	s->clock = *clock;
	s->sw = tep_find_event_by_name(tep, "sched", "sched_switch");
	s->entry = tep_find_event_by_name(tep, "kvm", "kvm_entry");
	s->exit_ = tep_find_event_by_name(tep, "kvm", "kvm_exit");
	if (s->sw) {
		s->prev_pid = tep_find_field(s->sw, "prev_pid");
		s->next_pid = tep_find_field(s->sw, "next_pid");
		s->prev_comm = tep_find_field(s->sw, "prev_comm");
		s->next_comm = tep_find_field(s->sw, "next_comm");
	}
	if (s->entry)
		s->vcpu_id = tep_find_field(s->entry, "vcpu_id");
	s->nr_cpus = hgt_input_buffer(in, b)->nr_cpus;
	s->cur = calloc((size_t)s->nr_cpus + 1, sizeof(*s->cur));
	s->tr = calloc((size_t)s->nr_cpus + 1, sizeof(*s->tr));
	if (!s->cur || !s->tr)
		return -ENOMEM;
	if (!s->entry && s->sw && b == hgt_input_top_buffer(in) && tcg_threads(s))
		return -ENOMEM;
	for (int c = 0; c < s->nr_cpus; c++) {
		int r;

		s->cur[c] = hgt_cursor_open(in, b, c);
		if (!s->cur[c])
			return -errno;
		r = hgt_merge_add(m, s->cur[c], &s->clock, (void *)(intptr_t)(idx * 65536 + c));
		if (r < 0)
			return r;
	}
	return 0;
}

static int open_sources(struct session *x, const struct hgt_export_opts *o, struct hgt_merge *m)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = o->quiet ? HGT_OPEN_QUIET : 0);
	HGT_OPTS(hgt_clock_opts, co, .ts2secs = o->ts2secs);
	int nsrc = 0, ret = 0;
	struct hgt_input **in = calloc((size_t)o->nr_inputs, sizeof(*in));
	struct hgt_clock *clks = NULL;
	const char *how = "";

	if (!in)
		return -ENOMEM;
	for (int i = 0; i < o->nr_inputs; i++) {
		in[i] = hgt_input_open(o->inputs[i], &oo);
		if (!in[i]) {
			ret = -errno;
			goto out;
		}
		if (hgt_input_top_buffer(in[i]) < 0) {
			ret = hgt__errorf(ENOTSUP, "%s: a latency trace: nothing to export",
					  o->inputs[i]);
			goto out;
		}
		nsrc += hgt_input_nr_buffers(in[i]);
	}
	x->s = calloc((size_t)nsrc, sizeof(*x->s));
	x->nr_top = o->nr_inputs;
	clks = calloc((size_t)o->nr_inputs, sizeof(*clks));
	if (!x->s || !clks) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < o->nr_inputs; i++)
		hgt_clock_init(&clks[i], in[i], &co);
	/* TSC cycles made ns (the report shows them as cycles, as trace-cmd's) */
	x->tsc_hz = hgt__tsc_rate(in, clks, o->nr_inputs, 0, 0, &how);
	for (int i = 0; x->tsc_hz && i < o->nr_inputs; i++)
		clks[i].ts2secs = 1e9 / (double)x->tsc_hz; /* as --ts2secs */
	if (!x->tsc_hz && how[0] && !o->quiet)
		fprintf(stderr, "hgtrace export: %s: %s: times stay cycles (give --ts2secs HZ)\n",
			o->inputs[0], how);
	/* the top buffers first, in input order, then the instances, as the report */
	for (int pass = 0; pass < 2 && !ret; pass++)
		for (int i = 0; i < o->nr_inputs && !ret; i++) {
			int top = hgt_input_top_buffer(in[i]);
			struct hgt_clock clk = clks[i];

			if (pass == 0) {
				const char *base = strrchr(o->inputs[i], '/');

				ret = add_source(x, m, in[i], i, top,
						 base ? base + 1 : o->inputs[i], &clk);
				if (!ret)
					x->s[x->nr - 1].owner = true;
				continue;
			}
			clk.tsync = NULL; /* instances stay in their own time */
			for (int b = 0; b < hgt_input_nr_buffers(in[i]) && !ret; b++)
				if (b != top)
					ret = add_source(x, m, in[i], i, b,
							 hgt_input_buffer(in[i], b)->name, &clk);
		}
out:
	/* inputs not yet owned by a source are closed here */
	for (int i = 0; i < o->nr_inputs; i++) {
		bool owned = false;

		for (int k = 0; k < x->nr; k++)
			owned |= x->s[k].owner && x->s[k].in == in[i];
		if (!owned)
			hgt_input_close(in[i]);
	}
	free(in);
	free(clks);
	return ret;
}

/* The kvm plugin's guest symbols, from the files' GUEST options, as the report's. */
static int kvm_funcs(struct session *x, struct hgt__kvm_funcs *kf, struct hgt__kvm_map *km)
{
	struct hgt_input **in = calloc((size_t)x->nr + 1, sizeof(*in));
	int n = 0, ret;

	if (!in)
		return -ENOMEM;
	for (int i = 0; i < x->nr; i++)
		if (x->s[i].owner) /* the top buffer of each file */
			in[n++] = x->s[i].in;
	ret = hgt__kvm_funcs_build(in, n, kf, km);
	free(in);
	return ret;
}

/* ---- formatting contexts: the main thread's, and each worker's ---- */

/* A context writing sources @ss->s with the handles @teps (one per source). */
static struct exporter *maker_new(const struct session *ss, struct tep_handle **teps)
{
	struct exporter *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->ss = ss;
	x->pb = ss->pb;
	x->first = true;
	x->tep = teps;
	x->type_off = calloc((size_t)ss->nr + 1, sizeof(*x->type_off));
	x->pid_off = calloc((size_t)ss->nr + 1, sizeof(*x->pid_off));
	if (!x->type_off || !x->pid_off) {
		free(x->type_off);
		free(x->pid_off);
		free(x);
		return NULL;
	}
	for (int si = 0; si < ss->nr; si++) {
		x->type_off[si] = hgt__type_offset(teps[si]);
		x->pid_off[si] = hgt__pid_offset(teps[si]);
	}
	trace_seq_init(&x->seq);
	x->memo = hgt__info_memo_new(); /* NULL: every text printed */
	return x;
}

static void maker_free(struct exporter *x)
{
	if (!x)
		return;
	free(x->ev.p);
	free(x->sub.p);
	free(x->o.p);
	free(x->bytes.p);
	intern_free(x);
	for (int i = 0; i < ADDR_SLOTS; i++)
		free(x->json_by_addr[i].json);
	for (int i = 0; i < x->nfields; i++)
		fields_free(x->fields[i]);
	free(x->fields);
	trace_seq_destroy(&x->seq);
	hgt__info_memo_free(x->memo);
	free(x->type_off);
	free(x->pid_off);
	free(x->tep);
	free(x);
}

static bool maker_oom(const struct exporter *x)
{
	return x->ev.oom || x->sub.oom || x->o.oom || x->interned.oom || x->entry.oom;
}

/* A worker's context: its own handles @in of the files (parallel.c opened them). */
static void *par_ctx_new(void *arg, struct hgt_input *const *in)
{
	const struct session *ss = arg;
	struct tep_handle **teps = calloc((size_t)ss->nr + 1, sizeof(*teps));
	struct exporter *x;

	if (!teps)
		return NULL;
	for (int si = 0; si < ss->nr; si++)
		teps[si] = hgt_input_tep(in[ss->s[si].top]);
	x = maker_new(ss, teps);
	if (!x) {
		free(teps);
		return NULL;
	}
	x->first = false; /* the main thread wrote the processes first */
	return x;
}

static void par_ctx_free(void *ctx)
{
	maker_free(ctx);
}

/* A batch: each record as its plan says, into @out (swapped in as the context's output). */
static int par_format(void *ctx, const struct hgt__par_item *it, int n, uint8_t *data,
		      struct hgt__blob *out)
{
	struct exporter *x = ctx;
	int ret;

	x->o = *out;
	for (int i = 0; i < n; i++) {
		struct tep_record rec = { .ts = it[i].ts, .cpu = it[i].cpu, .size = it[i].size };
		struct plan pl;

		rec.data = data + it[i].off;
		rec.missed_events = it[i].missed;
		memcpy(&pl, data + it[i].aux_off, it[i].aux_len);
		render(x, it[i].h, it[i].cpu, &rec, &pl);
	}
	ret = maker_oom(x) ? -ENOMEM : 0;
	*out = x->o;
	memset(&x->o, 0, sizeof(x->o));
	return ret;
}

static int par_write(void *arg, struct hgt__blob *text)
{
	const struct session *ss = arg;

	if (ss->bw) {
		hgt__bgwrite_put(ss->bw, text);
		return 0;
	}
	return fwrite(text->p, 1, text->len, ss->out) == text->len ? 0 : -EIO;
}

/* Workers for a large session (none: the main thread writes it alone). */
static void par_start(struct session *ss, const struct hgt__kvm_map *km)
{
	const struct hgt__par_ops ops = { .ctx_new = par_ctx_new,
					  .ctx_free = par_ctx_free,
					  .format = par_format,
					  .write = par_write,
					  .arg = ss };
	struct hgt_input **in = calloc((size_t)ss->nr_top + 1, sizeof(*in));
	const char **paths = calloc((size_t)ss->nr_top + 1, sizeof(*paths));
	char(*fdpaths)[32] = calloc((size_t)ss->nr_top + 1, sizeof(*fdpaths));
	int n;

	if (!in || !paths || !fdpaths)
		goto out;
	for (int si = 0; si < ss->nr; si++)
		if (ss->s[si].owner) {
			int top = ss->s[si].top;

			in[top] = ss->s[si].in;
			paths[top] = hgt__par_path(in[top], fdpaths[top]);
		}
	n = hgt__par_workers(in, ss->nr_top);
	if (n)
		ss->par = hgt__par_new(n, paths, in, ss->nr_top, HGT_OPEN_QUIET, false, km, &ops);
out:
	free(in);
	free(paths);
	free(fdpaths);
}

/* Record @rec of CPU @cpu of source @si: planned, and queued for a worker or written. */
static int one_record(struct session *ss, int si, int cpu, struct tep_record *rec)
{
	struct src *s = &ss->s[si];
	struct plan pl;

	if (ss->par) {
		int ret = hgt__par_comms(ss->par, s->top, hgt_input_tep(s->in), rec);

		if (ret == 1) { /* a plugin with state: the rest written here, in order */
			ret = hgt__par_finish(ss->par);
			hgt__par_free(ss->par);
			ss->par = NULL;
		}
		if (ret < 0)
			return ret;
	}
	plan_record(ss, si, cpu, rec, &pl);
	if (ss->par)
		return hgt__par_add(ss->par, si, rec, false, 0, &pl, plan_size(&pl));
	render(ss->mk, si, cpu, rec, &pl);
	flush_out(ss->mk, false);
	return 0;
}

/* The processes, before any event. */
static void processes(struct exporter *x, const struct session *ss)
{
	if (!x->pb)
		hgt__blob_lit(&x->o, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	for (int i = 0; i < ss->nr; i++) {
		if (x->pb) {
			pb_track(x, i, 0, 0, ss->s[i].name);
			continue;
		}
		begin(x, 'M', i + 1, 0);
		hgt__blob_lit(&x->o, ",\"name\":\"process_name\",\"args\":{\"name\":");
		hgt__json_blob_s(&x->o, ss->s[i].name);
		hgt__blob_lit(&x->o, "}}");
		begin(x, 'M', i + 1, 0);
		hgt__blob_lit(&x->o, ",\"name\":\"process_sort_index\",\"args\":{\"sort_index\":");
		hgt__blob_i64(&x->o, i);
		hgt__blob_lit(&x->o, "}}");
	}
}

/* Every record of the session, then the slices still open. */
static int records(struct session *ss, struct hgt_merge *m)
{
	struct tep_record *rec;
	void *user;
	int src, ret;

	while ((ret = hgt_merge_next(m, &rec, &user, &src)) > 0) {
		intptr_t u = (intptr_t)user;

		ret = one_record(ss, (int)(u / 65536), (int)(u % 65536), rec);
		if (ret < 0)
			break;
	}
	if (ss->par) {
		int pret = hgt__par_finish(ss->par);

		if (pret && ret >= 0)
			ret = pret;
	}
	for (int si = 0; ret >= 0 && si < ss->nr; si++)
		for (int c = 0; c < ss->s[si].nr_cpus; c++) {
			struct plan pl;

			plan_end(ss, si, c, !si && !c, &pl);
			render(ss->mk, si, c, NULL, &pl);
		}
	return ret;
}

static int export_session(const struct hgt_export_opts *opts, bool pb)
{
	struct hgt_export_opts o = { 0 };
	struct session ss = { .pb = pb };
	struct hgt__kvm_funcs kf = { 0 };
	struct hgt__kvm_map km = { 0 };
	struct tep_handle **teps;
	struct hgt_merge *m;
	int ret, werr;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(o))
		return -EINVAL;
	memcpy(&o, opts, opts->sz);
	if (!o.out || o.nr_inputs < 1)
		return -EINVAL;
	ss.out = o.out;
	m = hgt_merge_new();
	if (!m)
		return -ENOMEM;
	ret = open_sources(&ss, &o, m);
	teps = ret ? NULL : calloc((size_t)ss.nr + 1, sizeof(*teps));
	for (int si = 0; teps && si < ss.nr; si++)
		teps[si] = hgt_input_tep(ss.s[si].in);
	ss.mk = teps ? maker_new(&ss, teps) : NULL;
	if (!ss.mk) {
		free(teps);
		ret = ret ? ret : -ENOMEM;
	}
	if (!ret) {
		processes(ss.mk, &ss);
		ret = kvm_funcs(&ss, &kf, &km);
		hgt__kvm_funcs_set(kf.n ? &kf : NULL);
		/* the inputs are open (their format checks forked, if any): now threads */
		ss.bw = hgt__bgwrite_start(ss.out);
		flush_out(ss.mk, true); /* the processes before any worker's batch */
		if (!ret)
			par_start(&ss, &km);
		if (!ret)
			ret = records(&ss, m);
		hgt__par_free(ss.par);
		hgt__kvm_funcs_set(NULL);
		if (!pb)
			hgt__blob_lit(&ss.mk->o, "\n]}\n");
		if (!ss.mk->o.oom)
			flush_out(ss.mk, true);
		werr = hgt__bgwrite_end(ss.bw);
		if (!ret && maker_oom(ss.mk))
			ret = -ENOMEM;
		if (!ret && werr)
			ret = hgt__errorf(-werr, "export: write failed: %s", strerror(-werr));
		if (!ret && (fflush(ss.out) || ferror(ss.out)))
			ret = hgt__errorf(EIO, "export: write failed: %s", strerror(errno));
	}
	maker_free(ss.mk);
	free(kf.pid);
	free(kf.tep);
	free(kf.ksyms);
	free(km.top);
	hgt_merge_free(m);
	free_sources(&ss);
	return ret < 0 ? ret : 0;
}

/**
 * hgt_export_chrome - the session of @opts->inputs in the Trace Event Format.
 */
int hgt_export_chrome(const struct hgt_export_opts *opts)
{
	return export_session(opts, false);
}

/**
 * hgt_export_perfetto - the session of @opts->inputs in Perfetto's protobuf trace format.
 */
int hgt_export_perfetto(const struct hgt_export_opts *opts)
{
	return export_session(opts, true);
}
