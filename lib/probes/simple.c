// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The simple backend: one single-producer ring per thread (the producer never takes a
 * lock or makes a system call on the fast path), a writer thread that moves committed
 * bytes to the file with writev() every 50 ms or when a ring is half full, and a final
 * flush at exit and on fatal signals. The records in the rings are already in the file's
 * layout (hgtrace/probefile.h), so the writer copies nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../common/thread.h"
#include "../common/common-local.h"
#include "probes-local.h"

__thread struct hgt__probe_ring *hgt__probe_tls __attribute__((tls_model("initial-exec")));
#if defined(__x86_64__) || defined(__i386__)
int hgt__probe_clock_tsc = 1;
#else
int hgt__probe_clock_tsc;
#endif

struct ring {
	struct hgt__probe_ring r; /* first: the inline fast path sees only this */
	struct ring *next;
	char comm[16];
	unsigned int announced; /* file generation its THREAD record went to */
	int orphan;		/* its thread has exited */
};

static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ring *rings; /* under drain_lock */
static int fd = -1;	   /* under drain_lock */
static unsigned int generation;
static char file_name[4096];
static pthread_t writer;
static int writer_running, writer_stop;
static uint32_t wake_word;
static pthread_key_t ring_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int exit_hooked;

/*
 * HGTRACE_SIMPLE_FORMAT=qemu: the file is QEMU's simple trace format, version 4, for QEMU's
 * scripts/simpletrace.py: a header, a mapping record per event, and per event record its
 * id, CLOCK_MONOTONIC ns, length and pid, then the arguments (u64 each; strings u32 length
 * and bytes). The rings keep hgtrace's records; the writer converts them, looking the
 * argument kinds up by id in a table filled as mappings are written (under drain_lock).
 */
static int qemu_fmt;
static struct hgt_probe_event **qtab; /* open addressing by id */
static size_t qtab_size, qtab_used;
static unsigned char *qbuf; /* one drain's converted records */
static size_t qbuf_cap;

#define QEMU_HEADER_ID UINT64_MAX
#define QEMU_MAGIC 0xf2b177cb0aa429b4ull
#define QEMU_DROPPED_ID (UINT64_MAX - 1)

uint64_t hgt__probe_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t read_tsc(void)
{
#if defined(__x86_64__) || defined(__i386__)
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
#else
	return 0;
#endif
}

int hgt__probe_set_clock(const char *name)
{
	if (!strcmp(name, "mono")) {
		hgt__probe_clock_tsc = 0;
		return 0;
	}
#if defined(__x86_64__) || defined(__i386__)
	if (!strcmp(name, "tsc") || !strcmp(name, "x86-tsc")) {
		hgt__probe_clock_tsc = 1;
		return 0;
	}
#endif
	return -EINVAL;
}

int hgt__probe_set_file_format(const char *name)
{
	if (!strcmp(name, "qemu")) {
		qemu_fmt = 1;
		hgt__probe_clock_tsc = 0; /* QEMU's records are monotonic nanoseconds */
		return 0;
	}
	if (!strcmp(name, "hgtrace")) {
		qemu_fmt = 0;
		return 0;
	}
	return -EINVAL;
}

void hgt__probe_file_default(const char *path)
{
	pthread_mutex_lock(&drain_lock);
	snprintf(file_name, sizeof(file_name), "%s", path);
	pthread_mutex_unlock(&drain_lock);
}

const char *hgt__probe_file_name(void)
{
	if (!file_name[0])
		snprintf(file_name, sizeof(file_name), "hgtrace-%d.trace", (int)getpid());
	return file_name;
}

int hgt__probe_file_is_on(void)
{
	return __atomic_load_n(&fd, __ATOMIC_RELAXED) >= 0;
}

/* ---- rings ---- */

static void ring_exit(void *p)
{
	struct ring *r = p;

	pthread_mutex_lock(&drain_lock);
	r->orphan = 1;
	pthread_mutex_unlock(&drain_lock);
	hgt__probe_tls = NULL;
}

static int key_made;

static void make_key(void)
{
	key_made = !pthread_key_create(&ring_key, ring_exit);
}

#define RING_POPULATE (16u << 20) /* rings up to this are committed at once */

/*
 * HGTRACE_RING_KB: a number of KB from 4 to 4 GiB, rounded up to a power of two. Anything
 * else (a sign, letters, 0, out of range) keeps the default, said once on stderr: a typo
 * must not give a 4 GiB ring per thread, nor a 4 KB one. A ring is at most 1/64 of the
 * machine's memory (said once): every thread that fires gets one.
 */
static size_t ring_bytes(void)
{
	static int warned, capped;
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	size_t most = pages > 0 && psz > 0 ? (size_t)pages * (size_t)psz / 64 : (size_t)1 << 32;
	const char *e = getenv("HGTRACE_RING_KB");
	size_t kb = 1024, sz = 4096;

	if (e && *e) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(e, &end, 10);
		if (*e < '0' || *e > '9' || errno || *end || v < 4 || v > (1ULL << 22)) {
			if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
				fprintf(stderr,
					"hgtrace-probes: HGTRACE_RING_KB='%s': expected a number of KB from 4 to 4194304; using 1024\n",
					e);
		} else {
			kb = (size_t)v;
		}
	}
	while (sz < kb * 1024)
		sz <<= 1;
	if (sz > most) {
		while (sz > most && sz > 4096)
			sz >>= 1;
		if (!__atomic_exchange_n(&capped, 1, __ATOMIC_RELAXED))
			fprintf(stderr,
				"hgtrace-probes: HGTRACE_RING_KB=%s: capped at %zu KB per thread (1/64 of this machine's memory)\n",
				e, sz / 1024);
	}
	return sz;
}

struct hgt__probe_ring *hgt__probe_ring_new(void)
{
	struct ring *r = calloc(1, sizeof(*r));
	size_t sz = ring_bytes();

	if (!r)
		return NULL;
	/* populated now: no page faults on the fast path later; a ring larger than that is
	 * committed as it fills (a big ring for a thread that fires little costs nothing) */
	r->r.buf =
		mmap(NULL, sz, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | (sz <= RING_POPULATE ? MAP_POPULATE : 0), -1, 0);
	if (r->r.buf == MAP_FAILED) {
		free(r);
		return NULL;
	}
	r->r.size = sz;
	r->r.tid = (uint32_t)syscall(SYS_gettid);
	prctl(PR_GET_NAME, r->comm, 0, 0, 0);
	pthread_once(&key_once, make_key);
	pthread_setspecific(ring_key, r);
	pthread_mutex_lock(&drain_lock);
	r->next = rings;
	rings = r;
	pthread_mutex_unlock(&drain_lock);
	hgt__probe_tls = &r->r;
	return &r->r;
}

static void futex_wake(uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void hgt__probe_wake(struct hgt__probe_ring *r)
{
	if (__atomic_exchange_n(&r->wake_sent, 1, __ATOMIC_RELAXED))
		return;
	__atomic_fetch_add(&wake_word, 1, __ATOMIC_RELEASE);
	futex_wake(&wake_word);
}

/* ---- writing (async-signal-safe below this line: write(2) and stack buffers only) ---- */

static int write_all(int f, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(f, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static int writev_all(int f, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(f, iov, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static uint64_t now(void)
{
	return hgt__probe_clock_tsc ? read_tsc() : hgt__probe_mono();
}

static size_t rec_hdr(unsigned char *b, uint32_t type, uint32_t size)
{
	memcpy(b, &type, 4);
	memcpy(b + 4, &size, 4);
	return 8;
}

static size_t clock_rec(unsigned char *b)
{
	struct timespec m, rt;
	uint64_t v[3];

	v[0] = read_tsc();
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &rt);
	v[1] = (uint64_t)m.tv_sec * 1000000000u + (uint64_t)m.tv_nsec;
	v[2] = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
	rec_hdr(b, HGT_PROBE_R_CLOCK, 32);
	memcpy(b + 8, v, 24);
	return 32;
}

/* The mapping table: @ev findable by its id. Returns 0 or -ENOMEM. */
static int qtab_add(struct hgt_probe_event *ev)
{
	if (2 * (qtab_used + 1) > qtab_size) {
		size_t n = qtab_size ? 2 * qtab_size : 256;
		struct hgt_probe_event **t = calloc(n, sizeof(*t));

		if (!t)
			return -ENOMEM;
		for (size_t i = 0; i < qtab_size; i++)
			if (qtab[i]) {
				size_t k = qtab[i]->id & (n - 1);

				while (t[k])
					k = (k + 1) & (n - 1);
				t[k] = qtab[i];
			}
		free(qtab);
		qtab = t;
		qtab_size = n;
	}
	for (size_t k = ev->id & (qtab_size - 1);; k = (k + 1) & (qtab_size - 1)) {
		if (qtab[k] == ev)
			return 0;
		if (!qtab[k]) {
			qtab[k] = ev;
			qtab_used++;
			return 0;
		}
	}
}

static struct hgt_probe_event *qtab_find(uint32_t id)
{
	for (size_t k = qtab_size ? id & (qtab_size - 1) : 0; qtab_size && qtab[k];
	     k = (k + 1) & (qtab_size - 1))
		if (qtab[k]->id == id)
			return qtab[k];
	return NULL;
}

static unsigned char *qbuf_room(size_t n, size_t used)
{
	if (used + n > qbuf_cap) {
		size_t cap = (used + n) * 2;
		unsigned char *b = realloc(qbuf, cap);

		if (!b)
			return NULL;
		qbuf = b;
		qbuf_cap = cap;
	}
	return qbuf + used;
}

/* QEMU's record for one of ours (EVENT, DROPPED) at @rec; others give nothing. Returns
 * the bytes appended at qbuf + @used, or -1 when out of memory. */
static long qemu_record(const unsigned char *rec, size_t used)
{
	uint32_t type, size, id, pid = (uint32_t)getpid(), len;
	uint64_t t1 = 1, ts, qid;
	const unsigned char *a, *end;
	struct hgt_probe_event *ev;
	unsigned char *o;
	size_t n = 32;

	memcpy(&type, rec, 4);
	memcpy(&size, rec + 4, 4);
	if (type == HGT_PROBE_R_DROPPED) {
		o = qbuf_room(40, used);
		if (!o)
			return -1;
		qid = QEMU_DROPPED_ID;
		len = 32;
		memcpy(o, &t1, 8);
		memcpy(o + 8, &qid, 8);
		memcpy(o + 16, rec + 16, 8); /* ts */
		memcpy(o + 24, &len, 4);
		memcpy(o + 28, &pid, 4);
		memcpy(o + 32, rec + 24, 8); /* events lost */
		return 40;
	}
	if (type != HGT_PROBE_R_EVENT || size < 24)
		return 0;
	memcpy(&id, rec + 8, 4);
	memcpy(&ts, rec + 16, 8);
	ev = qtab_find(id);
	if (!ev)
		return 0; /* no mapping was written: simpletrace.py could not name it */
	end = rec + size;
	a = rec + 24;
	for (unsigned int i = 0; i < ev->nargs && a < end; i++) { /* the size, as QEMU's */
		uint32_t sl;

		if (ev->args[i].kind == HGT_PROBE_STR) {
			memcpy(&sl, a, 4);
			n += 4 + sl;
			a += HGT_PROBE_STR_SIZE(sl);
		} else {
			n += 8;
			a += 8;
		}
	}
	o = qbuf_room(n, used);
	if (!o)
		return -1;
	qid = id;
	len = (uint32_t)(n - 8);
	memcpy(o, &t1, 8);
	memcpy(o + 8, &qid, 8);
	memcpy(o + 16, &ts, 8);
	memcpy(o + 24, &len, 4);
	memcpy(o + 28, &pid, 4);
	n = 32;
	a = rec + 24;
	for (unsigned int i = 0; i < ev->nargs && a < end; i++) {
		if (ev->args[i].kind == HGT_PROBE_STR) {
			uint32_t sl;

			memcpy(&sl, a, 4);
			memcpy(o + n, a, 4 + (size_t)sl);
			n += 4 + sl;
			a += HGT_PROBE_STR_SIZE(sl);
		} else {
			memcpy(o + n, a, 8);
			n += 8;
			a += 8;
		}
	}
	return (long)n;
}

/* The records of @len bytes at @p (whole records: a PAD fills a ring's end) as QEMU's. */
static int qemu_convert(const unsigned char *p, uint64_t len, size_t *used)
{
	for (uint64_t off = 0; off + 8 <= len;) {
		uint32_t size;
		long k;

		memcpy(&size, p + off + 4, 4);
		if (size < 8 || off + size > len)
			break;
		k = qemu_record(p + off, *used);
		if (k < 0)
			return -1;
		*used += (size_t)k;
		off += size;
	}
	return 0;
}

/* Move one ring's committed bytes, with its thread and loss records, to the file. */
static int drain_ring(struct ring *r, int out)
{
	unsigned char meta[64 + 16];
	struct iovec iov[3];
	uint64_t head = __atomic_load_n(&r->r.head, __ATOMIC_ACQUIRE), tail = r->r.tail;
	uint64_t lost = __atomic_exchange_n(&r->r.dropped, 0, __ATOMIC_RELAXED);
	size_t m = 0;
	int n = 0;

	if (out >= 0 && r->announced != generation) {
		size_t len = strnlen(r->comm, sizeof(r->comm));
		uint32_t sz = (uint32_t)((16 + len + 1 + 7) & ~7u);

		memset(meta, 0, sizeof(meta));
		rec_hdr(meta, HGT_PROBE_R_THREAD, sz);
		memcpy(meta + 8, &r->r.tid, 4);
		memcpy(meta + 16, r->comm, len);
		m = sz;
		r->announced = generation;
	}
	if (lost && out >= 0) {
		uint64_t ts = now();

		memset(meta + m, 0, 32);
		rec_hdr(meta + m, HGT_PROBE_R_DROPPED, 32);
		memcpy(meta + m + 8, &r->r.tid, 4);
		memcpy(meta + m + 16, &ts, 8);
		memcpy(meta + m + 24, &lost, 8);
		m += 32;
	}
	if (m)
		iov[n++] = (struct iovec){ meta, m };
	if (head != tail) {
		uint64_t off = tail & (r->r.size - 1), len = head - tail;

		if (off + len > r->r.size) {
			iov[n++] = (struct iovec){ r->r.buf + off, r->r.size - off };
			iov[n++] = (struct iovec){ r->r.buf, len - (r->r.size - off) };
		} else {
			iov[n++] = (struct iovec){ r->r.buf + off, len };
		}
	}
	if (n && out >= 0 && qemu_fmt) {
		size_t used = 0;

		for (int i = 0; i < n; i++)
			if (qemu_convert(iov[i].iov_base, iov[i].iov_len, &used) < 0)
				return -1;
		if (used && write_all(out, qbuf, used) < 0)
			return -1;
	} else if (n && out >= 0 && writev_all(out, iov, n) < 0) {
		return -1;
	}
	__atomic_store_n(&r->r.tail, head, __ATOMIC_RELEASE);
	__atomic_store_n(&r->r.wake_sent, 0, __ATOMIC_RELAXED);
	return 0;
}

/* One round: a ROUND record (see probefile.h), then every ring. drain_lock held. */
static int drain_all(int out)
{
	unsigned char round[16];
	uint64_t ts = now();
	int ret = 0;

	if (out >= 0 && !qemu_fmt) {
		rec_hdr(round, HGT_PROBE_R_ROUND, 16);
		memcpy(round + 8, &ts, 8);
		if (write_all(out, round, 16) < 0)
			return -1;
	}
	for (struct ring *r = rings; r; r = r->next)
		if (drain_ring(r, out) < 0)
			ret = -1;
	return ret;
}

static void free_orphans(void)
{
	for (struct ring **pp = &rings; *pp;) {
		struct ring *r = *pp;

		if (r->orphan && r->r.head == r->r.tail) {
			*pp = r->next;
			munmap(r->r.buf, r->r.size);
			free(r);
		} else {
			pp = &r->next;
		}
	}
}

static void *writer_main(void *arg)
{
	prctl(PR_SET_NAME, "hgt-probe-wr", 0, 0, 0);
	for (unsigned int n = 1;; n++) {
		uint32_t seen = __atomic_load_n(&wake_word, __ATOMIC_ACQUIRE);
		struct timespec to = { 0, 50 * 1000 * 1000 };
		int stop;

		pthread_mutex_lock(&drain_lock);
		if (fd >= 0 && !qemu_fmt &&
		    n % 20 == 0) { /* a clock sample a second: TSC rate of a crashed run */
			unsigned char c[32];

			if (write_all(fd, c, clock_rec(c)) < 0)
				errno = EIO;
		}
		if (fd >= 0 && drain_all(fd) < 0) {
			fprintf(stderr,
				"hgtrace-probes: trace file %s: write: %s; trace file off\n",
				file_name, strerror(errno));
			close(fd);
			fd = -1;
		}
		free_orphans();
		stop = writer_stop;
		pthread_mutex_unlock(&drain_lock);
		if (stop)
			break;
		syscall(SYS_futex, &wake_word, FUTEX_WAIT_PRIVATE, seen, &to, NULL, 0);
	}
	return NULL;
}

/* ---- the file ---- */

static void stop_writer(void)
{
	if (!writer_running)
		return;
	pthread_mutex_lock(&drain_lock);
	writer_stop = 1;
	pthread_mutex_unlock(&drain_lock);
	__atomic_fetch_add(&wake_word, 1, __ATOMIC_RELEASE);
	futex_wake(&wake_word);
	pthread_join(writer, NULL);
	writer_running = 0;
	writer_stop = 0;
}

static void at_exit(void)
{
	stop_writer();
	pthread_mutex_lock(&drain_lock);
	if (fd >= 0) {
		unsigned char c[32];

		drain_all(fd);
		if (!qemu_fmt)
			write_all(fd, c, clock_rec(c));
		close(fd);
		fd = -1;
	}
	pthread_mutex_unlock(&drain_lock);
}

void hgt__probe_file_fork_prepare(void)
{
	pthread_mutex_lock(&drain_lock);
}

void hgt__probe_file_fork_parent(void)
{
	pthread_mutex_unlock(&drain_lock);
}

void hgt__probe_file_fork_child(void)
{
	/* the parent's threads are gone: their rings (and this thread's, named with the
	 * parent's thread id) are emptied and left to be freed; the next probe makes a new
	 * ring with this process's thread id */
	for (struct ring *r = rings; r; r = r->next) {
		r->r.tail = r->r.head;
		r->orphan = 1;
	}
	free_orphans();
	hgt__probe_tls = NULL;
	if (key_made)
		pthread_setspecific(ring_key, NULL);
	if (fd >= 0)
		close(fd); /* the parent's file: its own, not the child's */
	fd = -1;
	writer_running = 0;
	writer_stop = 0;
	pthread_mutex_unlock(&drain_lock);
}

static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT, SIGHUP };

static void on_fatal(int sig)
{
	int f = __atomic_load_n(&fd, __ATOMIC_RELAXED);

	/* The writer may hold the lock: give it 100 ms, then write regardless. */
	for (int i = 0; i < 100 && pthread_mutex_trylock(&drain_lock); i++) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
	if (f >= 0)
		drain_all(f);
	signal(sig, SIG_DFL);
	raise(sig);
}

static void hook_exit(void)
{
	if (exit_hooked)
		return;
	exit_hooked = 1;
	atexit(at_exit);
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
		struct sigaction old, sa = { .sa_handler = on_fatal, .sa_flags = SA_RESETHAND };

		/* Never take over a signal the program handles or ignores itself. */
		if (sigaction(fatal[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
		    !(old.sa_flags & SA_SIGINFO))
			sigaction(fatal[i], &sa, NULL);
	}
}

struct desc_ctx {
	unsigned char *buf;
	size_t len, cap;
	int err;
};

/* Room for @need more bytes in @c; 0, or -1 with c->err set. */
static int desc_room(struct desc_ctx *c, size_t need)
{
	if (c->err)
		return -1;
	if (c->len + need > c->cap) {
		size_t cap = (c->cap + need) * 2;
		unsigned char *b = realloc(c->buf, cap);

		if (!b) {
			c->err = -ENOMEM;
			return -1;
		}
		c->buf = b;
		c->cap = cap;
	}
	return 0;
}

static void put_desc(struct hgt_probe_event *ev, void *arg)
{
	struct desc_ctx *c = arg;
	size_t need = 24 + strlen(ev->name) + 1 + strlen(ev->fmt) + 1 + 8, start = c->len;
	uint16_t n = ev->nargs, fl = ev->flags;

	for (unsigned int i = 0; i < ev->nargs; i++)
		need += 1 + strlen(ev->args[i].type) + 1 + strlen(ev->args[i].name) + 1;
	if (desc_room(c, need))
		return;
	memset(c->buf + start, 0, need);
	c->len += 8;
	memcpy(c->buf + c->len, &ev->id, 4);
	memcpy(c->buf + c->len + 4, &n, 2);
	memcpy(c->buf + c->len + 6, &fl, 2);
	c->len += 8;
#define PUTS(s)                                   \
	do {                                      \
		size_t l_ = strlen(s) + 1;        \
		memcpy(c->buf + c->len, (s), l_); \
		c->len += l_;                     \
	} while (0)
	PUTS(ev->name);
	PUTS(ev->fmt);
	for (unsigned int i = 0; i < ev->nargs; i++) {
		c->buf[c->len++] = ev->args[i].kind;
		PUTS(ev->args[i].type);
		PUTS(ev->args[i].name);
	}
#undef PUTS
	c->len = (c->len + 7) & ~(size_t)7;
	rec_hdr(c->buf + start, HGT_PROBE_R_DESC, (uint32_t)(c->len - start));
}

/* QEMU's mapping record for @ev (type 0: id, name length, name), and @ev in the table. */
static void put_mapping(struct hgt_probe_event *ev, void *arg)
{
	struct desc_ctx *c = arg;
	uint64_t zero = 0, id = ev->id;
	uint32_t len = (uint32_t)strlen(ev->name);

	if (desc_room(c, 20 + len))
		return;
	pthread_mutex_lock(&drain_lock);
	c->err = qtab_add(ev);
	pthread_mutex_unlock(&drain_lock);
	memcpy(c->buf + c->len, &zero, 8);
	memcpy(c->buf + c->len + 8, &id, 8);
	memcpy(c->buf + c->len + 16, &len, 4);
	memcpy(c->buf + c->len + 20, ev->name, len);
	c->len += 20 + len;
}

/* QEMU's header (id ~0, magic, version 4) and a mapping record per registered event. */
static int write_qemu_head(int out)
{
	uint64_t h[3] = { QEMU_HEADER_ID, QEMU_MAGIC, 4 };
	struct desc_ctx c = { 0 };
	int ret;

	hgt__probe_each(put_mapping, &c);
	ret = c.err;
	if (!ret && (write_all(out, h, sizeof(h)) < 0 || write_all(out, c.buf, c.len) < 0))
		ret = -errno;
	free(c.buf);
	return ret;
}

/* Header, a clock sample, and every registered event's description. */
static int write_head(int out)
{
	unsigned char h[HGT_PROBEFILE_HDR + 32];
	uint32_t v[4] = { HGT_PROBEFILE_VERSION, HGT_PROBEFILE_BOM,
			  hgt__probe_clock_tsc ? HGT_PROBE_CLOCK_TSC : HGT_PROBE_CLOCK_MONO,
			  (uint32_t)getpid() };
	struct desc_ctx c = { 0 };
	int ret;

	memcpy(h, HGT_PROBEFILE_MAGIC, 8);
	memcpy(h + 8, v, 16);
	clock_rec(h + HGT_PROBEFILE_HDR);
	hgt__probe_each(put_desc, &c);
	ret = c.err;
	if (!ret && (write_all(out, h, sizeof(h)) < 0 || write_all(out, c.buf, c.len) < 0))
		ret = -errno;
	free(c.buf);
	return ret;
}

/* Called with hgt__probe_lock held. */
int hgt__probe_file_on_locked(void)
{
	int f, ret;

	if (hgt__probe_file_is_on())
		return 0;
	hgt__probe_file_name();
	{
		/* a link is followed only where nobody else could have planted it; anything
		 * else is never followed, even if it appears after the look */
		struct stat lst;
		char why[512];
		bool link = !lstat(file_name, &lst) && S_ISLNK(lst.st_mode);

		if (link && hgt__link_check(file_name, &lst, why, sizeof(why))) {
			fprintf(stderr, "hgtrace-probes: trace file %s: %s\n", file_name, why);
			return -EPERM;
		}
		f = open(file_name,
			 O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | (link ? 0 : O_NOFOLLOW), 0644);
	}
	if (f < 0) {
		ret = -errno;
		fprintf(stderr, "hgtrace-probes: trace file %s: %s\n", file_name, strerror(errno));
		return ret;
	}
	ret = qemu_fmt ? write_qemu_head(f) : write_head(f);
	if (ret < 0) {
		fprintf(stderr, "hgtrace-probes: trace file %s: %s\n", file_name, strerror(-ret));
		close(f);
		return ret;
	}
	hook_exit();
	pthread_mutex_lock(&drain_lock);
	drain_all(-1); /* what was recorded while the file was off is not this file's */
	generation++;
	__atomic_store_n(&fd, f, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&drain_lock);
	if (!writer_running) {
		if (hgt__thread_spawn(&writer, writer_main, NULL) == 0)
			writer_running = 1;
		else
			fprintf(stderr,
				"hgtrace-probes: no writer thread; the file is written at exit and on trace-file flush\n");
	}
	return 0;
}

/* Called with hgt__probe_lock held. */
int hgt__probe_file_off_locked(void)
{
	int ret = 0;

	stop_writer();
	pthread_mutex_lock(&drain_lock);
	if (fd >= 0) {
		unsigned char c[32];

		if (drain_all(fd) < 0 || (!qemu_fmt && write_all(fd, c, clock_rec(c)) < 0))
			ret = -errno;
		close(fd);
		__atomic_store_n(&fd, -1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&drain_lock);
	return ret;
}

/**
 * hgt_probe_flush - write out everything the simple backend holds.
 * Returns 0 or a negative errno.
 */
int hgt_probe_flush(void)
{
	int ret = 0;

	pthread_mutex_lock(&drain_lock);
	if (fd >= 0 && drain_all(fd) < 0)
		ret = -errno;
	pthread_mutex_unlock(&drain_lock);
	return ret;
}

/**
 * hgt_probe_file - rename the simple backend's file or switch it on or off.
 * Returns 0 or a negative errno.
 */
int hgt_probe_file(const char *path, int on)
{
	int r = 0, was;

	pthread_mutex_lock(&hgt__probe_lock);
	was = hgt__probe_file_is_on();
	if (path) {
		if (was)
			hgt__probe_file_off_locked();
		hgt__probe_file_default(path);
		if (was && on != 0)
			r = hgt__probe_file_on_locked();
	}
	if (on == 1 && !hgt__probe_file_is_on())
		r = hgt__probe_file_on_locked();
	else if (on == 0)
		r = hgt__probe_file_off_locked();
	pthread_mutex_unlock(&hgt__probe_lock);
	return r;
}

/* A group registered after the file opened (a module): describe its events now. */
int hgt__probe_file_describe(struct hgt_probe_group *g)
{
	struct desc_ctx c = { 0 };
	int ret;

	for (size_t i = 0; i < g->nevents; i++)
		(qemu_fmt ? put_mapping : put_desc)(g->events[i], &c);
	ret = c.err;
	pthread_mutex_lock(&drain_lock);
	if (!ret && fd >= 0 && write_all(fd, c.buf, c.len) < 0)
		ret = -errno;
	pthread_mutex_unlock(&drain_lock);
	free(c.buf);
	return ret;
}
