/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/probes.h - the run-time side of hgtrace's userspace probes (libhgtrace-probes).
 *
 * Programs do not call most of this directly: `hgtrace gen` turns trace-events files into a
 * header of inline trace_<name>() functions and a C file that registers the events here. The
 * runtime sets itself up from the environment when the first group registers:
 *   HGTRACE_EVENTS  comma-separated patterns ('*', '?'; a leading '-' disables) or @FILE
 *   HGTRACE_FILE    the simple backend's output file (default hgtrace-<pid>.trace)
 *   HGTRACE_CTL     path of a control socket (see hgtrace-ctl(1))
 *   HGTRACE_CLOCK   tsc or mono: the simple backend's time stamps
 *   HGTRACE_FTRACE_INSTANCE  the tracefs instance whose trace_marker the ftrace backend uses
 * See hgtrace-probes(3).
 */
#ifndef HGTRACE_PROBES_H
#define HGTRACE_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How an argument is recorded and printed. */
enum hgt_probe_kind {
	HGT_PROBE_S8 = 1,
	HGT_PROBE_S16,
	HGT_PROBE_S32,
	HGT_PROBE_S64,
	HGT_PROBE_U8,
	HGT_PROBE_U16,
	HGT_PROBE_U32,
	HGT_PROBE_U64,
	HGT_PROBE_BOOL,
	HGT_PROBE_PTR,
	HGT_PROBE_STR,
};

/* Event flags. */
#define HGT_PROBE_F_DISABLE 0x1	  /* compiled out ('disable' property) */
#define HGT_PROBE_F_VCPU 0x2	  /* first argument is the implicit vCPU/context */
#define HGT_PROBE_F_TCG_TRANS 0x4 /* translation-time half of a 'tcg' event */
#define HGT_PROBE_F_TCG_EXEC 0x8  /* execution-time half of a 'tcg' event */

struct hgt_probe_arg {
	const char *type; /* the C type as declared */
	const char *name;
	unsigned char kind; /* enum hgt_probe_kind */
};

struct hgt_probe_event {
	const char *name;
	const char *fmt; /* the printf format, PRI macros expanded by the compiler */
	const struct hgt_probe_arg *args;
	uint32_t id; /* stable: FNV-1a of the name, the same in every build */
	unsigned short nargs;
	unsigned short flags; /* HGT_PROBE_F_* */
	unsigned char *state; /* the byte trace_<name>() tests; never NULL */
};

struct hgt_probe_group {
	size_t sz; /* sizeof(struct hgt_probe_group) */
	const char *name;
	struct hgt_probe_event *const *events;
	size_t nevents;
	unsigned int backends;	      /* HGT_PROBE_B_* compiled into the group */
	struct hgt_probe_group *next; /* owned by the registry */
};

#define HGT_PROBE_B_LOG 0x1
#define HGT_PROBE_B_SIMPLE 0x2
#define HGT_PROBE_B_FTRACE 0x4
#define HGT_PROBE_B_SYSLOG 0x8
#define HGT_PROBE_B_UST 0x10
#define HGT_PROBE_B_DTRACE 0x20

/**
 * hgt_probe_register_group - make a generated group's events known (called by the
 * generated C file's constructor). The first call reads the environment. Returns 0, or
 * -EEXIST when an event name or id is already registered (the group is then not added).
 */
int hgt_probe_register_group(struct hgt_probe_group *g);

struct hgt_probes_opts {
	size_t sz;	    /* sizeof(struct hgt_probes_opts) */
	const char *events; /* as HGTRACE_EVENTS; NULL: the environment's */
	const char *file;   /* as HGTRACE_FILE */
	const char *ctl;    /* as HGTRACE_CTL */
	const char *clock;  /* "tsc" or "mono" */
};

/**
 * hgt_probes_init - set the runtime up explicitly; fields left NULL fall back to the
 * environment. Call it before any event fires to choose the clock. Returns 0 or a
 * negative errno (an unknown clock, an unreadable events file, a socket that cannot bind).
 */
int hgt_probes_init(const struct hgt_probes_opts *opts);

/**
 * hgt_probe_find - the registered event named @name, or NULL.
 */
struct hgt_probe_event *hgt_probe_find(const char *name);

/**
 * hgt_probe_set - enable (@on) or disable every event @pattern names ('*' and '?'
 * wildcards; without them, one exact name). Compiled-out events are skipped by patterns
 * and refused by exact name. Returns the number of events matched or a negative errno
 * (-ENOENT: no such event; -EPERM: compiled out).
 */
int hgt_probe_set(const char *pattern, bool on);

/**
 * hgt_probe_apply - apply a list of patterns: comma-separated, each optionally led by
 * '-' (disable), or "@FILE" for an events file (one pattern per line; blank lines and
 * lines starting with '#' after blanks are skipped). Unknown names are warned about on
 * stderr with their file:line. Returns 0 or a negative errno (unreadable file).
 */
int hgt_probe_apply(const char *list);

/**
 * hgt_probe_enabled_count - how many events are enabled now.
 */
int hgt_probe_enabled_count(void);

/**
 * hgt_probe_foreach - call @fn for every registered event, in registration order.
 */
void hgt_probe_foreach(void (*fn)(struct hgt_probe_event *ev, void *arg), void *arg);

/**
 * hgt_probe_command - run one monitor command ("info trace-events [PATTERN]",
 * "trace-event NAME on|off", "trace-file [on|off|flush|set PATH]") and write its reply
 * into @out. Returns 0, or a negative errno with the reason as the reply.
 */
int hgt_probe_command(const char *cmd, char *out, size_t outsz);

/**
 * hgt_probe_file - the simple backend's output: hgt_probe_file(path, -1) renames it (reopening
 * when on), hgt_probe_file(NULL, 1|0) switches it on or off. Returns 0 or a negative errno.
 */
int hgt_probe_file(const char *path, int on);

/**
 * hgt_probe_flush - write out everything the simple backend holds. Returns 0 or a
 * negative errno.
 */
int hgt_probe_flush(void);

/*
 * A tcg event's emitter: called at translation time with the execution-time event and
 * the helper to call (with that event's arguments) from the code being generated.
 */
typedef void (*hgt_probe_tcg_emit_fn)(void *jit, const struct hgt_probe_event *exec_event,
				      void (*helper)(void));

/* Backend entry points used by generated code. */
void hgt_probe_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hgt_probe_ftrace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void hgt_probe_syslog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The simple backend's fast path (inline in generated code). */
struct hgt__probe_ring {
	uint64_t head;	    /* producer: bytes committed */
	uint64_t next;	    /* producer: end of the record being written */
	uint64_t tail_seen; /* producer's copy of tail */
	uint64_t size;	    /* power of two */
	unsigned char *buf;
	uint32_t tid;
	uint32_t wake_sent;
	uint32_t busy; /* between reserve and commit: a probe in a signal handler is dropped */
	char pad[60];
	uint64_t tail;	  /* consumer: bytes written out */
	uint64_t dropped; /* events lost to a full ring, taken by the consumer */
};

extern __thread struct hgt__probe_ring *hgt__probe_tls __attribute__((tls_model("initial-exec")));
extern int hgt__probe_clock_tsc;
uint64_t hgt__probe_mono(void);
struct hgt__probe_ring *hgt__probe_ring_new(void);
void hgt__probe_wake(struct hgt__probe_ring *r);

#define HGT_PROBE_REC_PAD 0
#define HGT_PROBE_REC_EVENT 2

static inline uint64_t hgt__probe_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
	if (__builtin_expect(hgt__probe_clock_tsc, 1)) {
		uint32_t lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
#endif
	return hgt__probe_mono();
}

/*
 * hgt__probe_reserve - room for an event record of @size bytes (a multiple of 8, header
 * included) in this thread's ring; returns where the arguments go, or NULL when the ring
 * is full or when this probe runs in a signal handler that interrupted the same thread's
 * probe between its reserve and its commit (the event is counted as dropped either way).
 */
static inline uint64_t *hgt__probe_reserve(uint32_t id, uint32_t size)
{
	struct hgt__probe_ring *r = hgt__probe_tls;
	uint64_t h, off, need, *p;

	if (__builtin_expect(!r, 0) && !(r = hgt__probe_ring_new()))
		return NULL;
	if (__builtin_expect(r->busy, 0)) {
		__atomic_fetch_add(&r->dropped, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	r->busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* set before the record is touched */
	h = r->head;
	off = h & (r->size - 1);
	need = size;
	if (off + size > r->size)
		need += r->size - off;
	if (h + need - r->tail_seen > r->size) {
		r->tail_seen = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
		if (h + need - r->tail_seen > r->size) {
			__atomic_fetch_add(&r->dropped, 1, __ATOMIC_RELAXED);
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			r->busy = 0;
			return NULL;
		}
	}
	if (need != size) { /* pad to the end of the ring, start over at 0 */
		*(uint64_t *)(r->buf + off) = HGT_PROBE_REC_PAD | (r->size - off) << 32;
		h += r->size - off;
		off = 0;
	}
	p = (uint64_t *)(r->buf + off);
	p[0] = HGT_PROBE_REC_EVENT | (uint64_t)size << 32;
	p[1] = id | (uint64_t)r->tid << 32;
	p[2] = hgt__probe_now();
	r->next = h + size;
	return p + 3;
}

/* hgt__probe_commit - publish the record hgt__probe_reserve() returned. */
static inline void hgt__probe_commit(void)
{
	struct hgt__probe_ring *r = hgt__probe_tls;

	__atomic_store_n(&r->head, r->next, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	r->busy = 0;
	if (__builtin_expect(r->next - r->tail_seen > r->size / 2, 0))
		hgt__probe_wake(r);
}

/* Strings: u32 length, the bytes, padded to 8; at most 512 bytes; NULL as length 0. */
#define HGT_PROBE_STR_MAX 512
static inline uint32_t hgt__probe_strlen(const char *s)
{
	uint32_t n = 0;

	if (!s)
		return 0;
	while (n < HGT_PROBE_STR_MAX && s[n])
		n++;
	return n;
}

static inline uint64_t *hgt__probe_put_str(uint64_t *p, const char *s, uint32_t n)
{
	unsigned char *b = (unsigned char *)p;

	*(uint32_t *)b = n;
	__builtin_memcpy(b + 4, s ? s : "", n);
	return (uint64_t *)(b + ((4 + n + 7) & ~7u));
}

#define HGT_PROBE_STR_SIZE(n) ((4 + (n) + 7) & ~7u)

#ifdef __cplusplus
}
#endif

#endif
