// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Event formats, parsed by libtraceevent behind a guard.
 *
 * libtraceevent 1.7's tep_parse_event() dereferences NULL on some damaged format texts
 * (found by our fuzzer). A file must never crash us, so every format of a file is first
 * parsed in a helper process with a throw-away tep handle; a format the helper dies on (or
 * hangs on) is reported and skipped, and only the others are parsed for real (a helper that
 * dies is replaced and goes on after the culprit). The helper is sent a file's formats as
 * soon as they are read and works while the parent reads kallsyms.
 * Each format's verdict is kept for the life of the process, by its bytes: a format
 * identical to one probed before is not probed again, and a file whose formats all were
 * (the report's worker handles, a fuzzer's mutations of the pages) needs no probe.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include "../common/thread.h"
#include "tracedat-local.h"

#define MAX_BAD_FORMATS 64
#define PROBE_SECONDS 20

struct hgt__format {
	char *system;
	char *text;
	uint64_t size;
	uint64_t where; /* file offset of the format (or of its section) */
	uint64_t hash;
	bool bad;
	bool known; /* its verdict came from the cache: not probed */
};

/**
 * hgt__format_add - keep one format text (@text is taken over) until hgt__formats_parse().
 */
int hgt__format_add(struct hgt_input *in, const char *system, char *text, uint64_t size,
		    uint64_t where)
{
	struct hgt__format *n;

	if (in->nr_formats == in->max_formats) {
		int m = in->max_formats ? 2 * in->max_formats : 64;

		n = realloc(in->formats, sizeof(*n) * (size_t)m);
		if (!n)
			return -ENOMEM;
		in->formats = n;
		in->max_formats = m;
	}
	n = &in->formats[in->nr_formats];
	n->system = strdup(system);
	if (!n->system)
		return -ENOMEM;
	n->text = text;
	n->size = size;
	n->where = where;
	n->hash = 0;
	n->bad = false;
	n->known = false;
	in->nr_formats++;
	return 0;
}

/*
 * The probe: one helper process per process, forked at the first file and kept, parses
 * the formats it is sent with a throw-away tep handle per request, announcing each index
 * before parsing it. A fault (or an alarm: a hang) kills it; its last announcement names
 * the culprit, and the next request forks a new one. One fork per process instead of one
 * per file: a fork copies the page tables of a big process (a sanitizer's shadow memory)
 * and cost more than the parse. The helper keeps only its socket (nothing of the program's:
 * a pipe or a connection the helper held would never see its end).
 */
struct probe_req {
	uint32_t nr;
	int32_t long_size;
	int32_t big_endian;
};

struct probe_item {
	int32_t index;
	uint32_t sys_len; /* with its NUL */
	uint64_t text_len;
};

static pthread_mutex_t helper_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t helper_pid, helper_owner;
static int helper_fd = -1;

static int send_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	return 0;
}

static int recv_all(int fd, void *p, size_t n)
{
	while (n) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p = (char *)p + r;
		n -= (size_t)r;
	}
	return 0;
}

/* The helper's loop: one request after another until the socket closes. */
static void helper_main(int fd)
{
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGALRM };
	int devnull = open("/dev/null", O_WRONLY);
	struct probe_req rq;

	if (devnull >= 0)
		dup2(devnull, STDERR_FILENO); /* the parent prints what matters */
	if (fd != 3) {
		dup2(fd, 3);
		fd = 3;
	}
	close_range(4, ~0U, 0);
	/* die of a fault, whatever handler the program we run in installed (a test
	 * framework's would report it and carry on) */
	for (size_t k = 0; k < sizeof(fatal) / sizeof(fatal[0]); k++)
		signal(fatal[k], SIG_DFL);
	signal(SIGINT, SIG_IGN); /* the parent's ^C is the parent's to handle */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	while (!recv_all(fd, &rq, sizeof(rq))) {
		struct tep_handle *tep;
		struct probe_item *it;
		char **sys, **text;
		int32_t done = -1;

		/* the alarm covers the whole request, allocations too: a helper that hangs on a
		 * lock fork() copied held dies, and its parent is not left waiting */
		alarm(PROBE_SECONDS);
		tep = tep_alloc();
		it = calloc(rq.nr ? rq.nr : 1, sizeof(*it));
		sys = calloc(rq.nr ? rq.nr : 1, sizeof(*sys));
		text = calloc(rq.nr ? rq.nr : 1, sizeof(*text));
		if (!tep || !it || !sys || !text)
			_exit(2);
		for (uint32_t i = 0; i < rq.nr; i++) {
			if (recv_all(fd, &it[i], sizeof(it[i])))
				_exit(0);
			sys[i] = malloc(it[i].sys_len ? it[i].sys_len : 1);
			text[i] = malloc(it[i].text_len ? (size_t)it[i].text_len : 1);
			if (!sys[i] || !text[i])
				_exit(2);
			if (recv_all(fd, sys[i], it[i].sys_len) ||
			    recv_all(fd, text[i], (size_t)it[i].text_len))
				_exit(0);
			if (it[i].sys_len)
				sys[i][it[i].sys_len - 1] = '\0';
		}
		tep_set_file_bigendian(tep, rq.big_endian ? TEP_BIG_ENDIAN : TEP_LITTLE_ENDIAN);
		tep_set_long_size(tep, rq.long_size);
		for (uint32_t i = 0; i < rq.nr; i++) {
			if (send_all(fd, &it[i].index, sizeof(it[i].index)))
				_exit(3);
			tep_parse_event(tep, text[i], (unsigned long)it[i].text_len, sys[i]);
		}
		if (send_all(fd, &done, sizeof(done)))
			_exit(3);
		for (uint32_t i = 0; i < rq.nr; i++) {
			free(sys[i]);
			free(text[i]);
		}
		free(sys);
		free(text);
		free(it);
		tep_free(tep);
		alarm(0);
	}
	_exit(0);
}

/* Forget a helper that died (or belongs to the process we were forked from). */
static void helper_gone(void)
{
	int status;

	if (helper_fd >= 0)
		close(helper_fd);
	if (helper_pid > 0 && helper_owner == getpid())
		while (waitpid(helper_pid, &status, 0) < 0 && errno == EINTR)
			;
	helper_fd = -1;
	helper_pid = 0;
}

static int helper_start(void)
{
	int sv[2];
	pid_t pid;

	if (helper_pid > 0 && helper_owner == getpid())
		return 0;
	if (helper_pid > 0) { /* inherited across fork(): the parent's, not ours */
		close(helper_fd);
		helper_fd = -1;
		helper_pid = 0;
	}
	/*
	 * Never forked while the library's worker threads run: the helper could hang at its
	 * first request on a lock one of them held. Callers start the helper before their
	 * threads (hgt__formats_helper_start()); one that did not, or whose helper died (a
	 * format crashed it), parses unguarded. The test suite sets HGTRACE_STRICT_FORK to
	 * make that a crash it sees.
	 */
	if (hgt__threads_running() > 0) {
		if (getenv("HGTRACE_STRICT_FORK")) {
			fprintf(stderr,
				"hgtrace: internal error: the format guard would fork while %d worker threads run\n",
				hgt__threads_running());
			abort();
		}
		return -EDEADLK;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(sv[0]);
		close(sv[1]);
		return -e;
	}
	if (pid == 0) {
		close(sv[0]);
		helper_main(sv[1]);
	}
	close(sv[1]);
	helper_pid = pid;
	helper_owner = getpid();
	helper_fd = sv[0];
	return 0;
}

/**
 * hgt__formats_helper_start - fork the format guard's helper now, if this process has none.
 *
 * For callers about to start threads: the helper is then forked while this thread is the
 * only one, and it outlives the threads (it dies with the thread that forked it). Returns
 * 0 or -errno (no helper: formats are then parsed unguarded).
 */
int hgt__formats_helper_start(void)
{
	int ret;

	pthread_mutex_lock(&helper_lock);
	ret = helper_start();
	pthread_mutex_unlock(&helper_lock);
	return ret;
}

/*
 * libtraceevent's format parser keeps parse state in static variables (the tokenizer's
 * input in older releases; 1.7.1's parser still writes static variables): every parse of a
 * format or header page in this library takes this lock, so that inputs may be opened by
 * several threads at once (the listener finishes each guest's file in a thread).
 */
static pthread_mutex_t parse_lock = PTHREAD_MUTEX_INITIALIZER;

void hgt__parse_lock(void)
{
	pthread_mutex_lock(&parse_lock);
}

void hgt__parse_unlock(void)
{
	pthread_mutex_unlock(&parse_lock);
}

/* Send the formats from @start whose verdict is unknown to the helper; the lock is held
 * until probe_end(). Returns 0 or -errno (no probe: the caller parses unguarded). */
static int probe_begin(struct hgt_input *in, int start)
{
	struct probe_req rq = { 0, in->kernel_long_size ? in->kernel_long_size : in->long_size,
				in->big_endian };
	int i, ret, attempt;

	for (i = start; i < in->nr_formats; i++)
		rq.nr += !in->formats[i].known;
	pthread_mutex_lock(&helper_lock);
	/* a helper found dead (it died on a request's last format, was killed, or the
	 * thread that made it ended) is replaced once */
	for (attempt = 0; attempt < 2; attempt++) {
		ret = helper_start();
		if (ret)
			break;
		ret = send_all(helper_fd, &rq, sizeof(rq));
		for (i = start; !ret && i < in->nr_formats; i++) {
			const struct hgt__format *f = &in->formats[i];
			struct probe_item it = { i, (uint32_t)strlen(f->system) + 1, f->size };

			if (f->known)
				continue;
			ret = send_all(helper_fd, &it, sizeof(it));
			if (!ret)
				ret = send_all(helper_fd, f->system, it.sys_len);
			if (!ret)
				ret = send_all(helper_fd, f->text, (size_t)f->size);
		}
		if (!ret)
			break;
		helper_gone();
		ret = -EPIPE;
	}
	if (ret) {
		pthread_mutex_unlock(&helper_lock);
		return ret;
	}
	in->probe_pid = helper_pid;
	in->probe_fd = helper_fd;
	in->probe_start = start;
	return 0;
}

/* The helper's next word into @v: the index of the format it starts on (>= 0), or -1 when
 * it went through the request. Returns false when it died instead. */
static bool probe_next(const struct hgt_input *in, int32_t *v)
{
	return !recv_all(in->probe_fd, v, sizeof(*v));
}

/* Release the helper after a request (@died: it did not finish it). */
static void probe_release(struct hgt_input *in, bool died)
{
	if (died)
		helper_gone();
	in->probe_pid = 0;
	in->probe_fd = -1;
	pthread_mutex_unlock(&helper_lock);
}

/* Read the helper's answer to probe_begin() and release it. Returns -1 when all went
 * through, the index of the format it died on, or -2 when the probe itself failed. */
static int probe_end(struct hgt_input *in)
{
	int32_t last = -2, v;
	bool died = true;

	while (probe_next(in, &v)) {
		if (v == -1) {
			died = false;
			break;
		}
		last = v;
	}
	probe_release(in, died);
	if (!died)
		return -1;
	if (last >= in->probe_start)
		return last;
	return -2;
}

/*
 * Verdicts on formats probed in this process, one per format text: an open-addressing
 * table keyed by a hash of the system and the text, each entry holding its own copy of
 * both, so a different text never borrows another's verdict. Bounded: once full (slots or
 * bytes), new verdicts are not kept and those formats are probed each time.
 */
#define VERDICT_SLOTS 8192 /* a power of two */
#define VERDICT_MAX_USED (VERDICT_SLOTS / 2)
#define VERDICT_MAX_BYTES (64u << 20)

struct verdict {
	uint64_t hash;
	char *system;
	char *text;
	uint64_t size;
	bool bad;
};
static struct verdict *verdicts;
static unsigned int verdicts_used;
static uint64_t verdict_bytes;
static pthread_mutex_t verdict_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t format_hash(const struct hgt__format *f)
{
	uint64_t h = fnv1a(0xcbf29ce484222325ULL, f->system, strlen(f->system) + 1);

	h = fnv1a(h, f->text, (size_t)f->size);
	return h ? h : 1; /* 0 marks an empty slot */
}

/* The slot of @f's verdict, or of the empty slot where it would go. Lock held. */
static struct verdict *verdict_slot(const struct hgt__format *f)
{
	unsigned int k = (unsigned int)f->hash & (VERDICT_SLOTS - 1);

	for (;; k = (k + 1) & (VERDICT_SLOTS - 1)) {
		struct verdict *v = &verdicts[k];

		if (!v->hash ||
		    (v->hash == f->hash && v->size == f->size && !strcmp(v->system, f->system) &&
		     !memcmp(v->text, f->text, (size_t)f->size)))
			return v;
	}
}

/* Mark the formats of @in whose verdicts are known. Returns true when all are. */
static bool verdicts_take(struct hgt_input *in)
{
	int i, known = 0;

	pthread_mutex_lock(&verdict_lock);
	for (i = 0; i < in->nr_formats; i++) {
		struct hgt__format *f = &in->formats[i];
		struct verdict *v;

		f->hash = format_hash(f);
		if (!verdicts)
			continue;
		v = verdict_slot(f);
		if (v->hash) {
			f->known = true;
			f->bad = v->bad;
			known++;
		}
	}
	pthread_mutex_unlock(&verdict_lock);
	return known == in->nr_formats;
}

/* Keep the verdicts on @in's probed formats (best effort: none without memory or room). */
static void verdicts_keep(const struct hgt_input *in)
{
	int i;

	pthread_mutex_lock(&verdict_lock);
	if (!verdicts)
		verdicts = calloc(VERDICT_SLOTS, sizeof(*verdicts));
	for (i = 0; verdicts && i < in->nr_formats; i++) {
		const struct hgt__format *f = &in->formats[i];
		struct verdict *v;
		char *sys, *text;

		if (f->known || verdicts_used >= VERDICT_MAX_USED ||
		    verdict_bytes + f->size > VERDICT_MAX_BYTES)
			continue;
		v = verdict_slot(f);
		if (v->hash)
			continue; /* the same text twice in one file */
		sys = strdup(f->system);
		text = malloc(f->size ? (size_t)f->size : 1);
		if (!sys || !text) {
			free(sys);
			free(text);
			break;
		}
		memcpy(text, f->text, (size_t)f->size);
		*v = (struct verdict){ f->hash, sys, text, f->size, f->bad };
		verdicts_used++;
		verdict_bytes += f->size;
	}
	pthread_mutex_unlock(&verdict_lock);
}

/* An early probe runs while nobody reads its pipe: its announcements (one int per format)
 * must fit in the pipe, or it would block there and its alarm would blame a good format. */
#define EARLY_PROBE_MAX_FORMATS 8192

/**
 * hgt__formats_check_start - start probing the formats read so far in a child. @early: the
 * parent reads the rest of the metadata (kallsyms above all) meanwhile. Formats probed
 * before in this process with the same bytes are not probed again.
 */
void hgt__formats_check_start(struct hgt_input *in, bool early)
{
	if (!in->tep || in->formats_checked || in->probe_pid > 0 || !in->nr_formats)
		return;
	if (early && in->nr_formats > EARLY_PROBE_MAX_FORMATS)
		return; /* probed in hgt__formats_parse(), read as it goes */
	if (verdicts_take(in)) {
		in->formats_checked = true;
		return;
	}
	if (probe_begin(in, 0))
		in->formats_checked = true; /* no probe possible (no fork): parse unguarded */
}

/* Whether a print argument divides by anything but a nonzero constant: libtraceevent 1.7
 * evaluates "/" and "%" unchecked (a damaged "REC->ve%tor" is a modulo by an unknown
 * field, read as 0: SIGFPE when printed). */
static bool divides_unsafely(const struct tep_print_arg *a)
{
	for (; a; a = a->next) {
		const struct tep_print_arg *sub[3] = { NULL, NULL, NULL };

		switch (a->type) {
		case TEP_PRINT_OP:
			if (a->op.op && (!strcmp(a->op.op, "/") || !strcmp(a->op.op, "%"))) {
				const struct tep_print_arg *r = a->op.right;

				if (!r || r->type != TEP_PRINT_ATOM || !r->atom.atom ||
				    !strtoull(r->atom.atom, NULL, 0))
					return true;
			}
			sub[0] = a->op.left;
			sub[1] = a->op.right;
			break;
		case TEP_PRINT_TYPE:
			sub[0] = a->typecast.item;
			break;
		case TEP_PRINT_FLAGS:
			sub[0] = a->flags.field;
			break;
		case TEP_PRINT_SYMBOL:
			sub[0] = a->symbol.field;
			break;
		case TEP_PRINT_HEX:
		case TEP_PRINT_HEX_STR:
			sub[0] = a->hex.field;
			sub[1] = a->hex.size;
			break;
		case TEP_PRINT_INT_ARRAY:
			sub[0] = a->int_array.field;
			sub[1] = a->int_array.count;
			sub[2] = a->int_array.el_size;
			break;
		case TEP_PRINT_FUNC:
			sub[0] = a->func.args;
			break;
		case TEP_PRINT_DYNAMIC_ARRAY:
			sub[0] = a->dynarray.index;
			break;
		default:
			break;
		}
		for (int k = 0; k < 3; k++)
			if (divides_unsafely(sub[k]))
				return true;
	}
	return false;
}

/* The event's fields, as `report -R` prints them, instead of its print format. */
static int print_fields_only(struct trace_seq *s, struct tep_record *rec, struct tep_event *ev,
			     void *ctx)
{
	(void)ctx;
	tep_print_fields(s, rec->data, rec->size, ev);
	return 0;
}

/* Events whose print format cannot be evaluated safely are printed by their fields. */
static void guard_print_formats(struct hgt_input *in)
{
	int n = tep_get_events_count(in->tep);

	for (int i = 0; i < n; i++) {
		struct tep_event *ev = tep_get_event(in->tep, i);

		if (!ev || !divides_unsafely(ev->print_fmt.args))
			continue;
		if (!(in->flags & HGT_OPEN_QUIET))
			fprintf(stderr,
				"hgtrace: %s: event %s:%s: its print format divides by something other than a nonzero constant: its fields are printed instead\n",
				in->path, ev->system, ev->name);
		tep_register_event_handler(in->tep, ev->id, ev->system, ev->name, print_fields_only,
					   NULL);
	}
}

/* Parse formats [*@done, @upto) for real, but for those found bad; *@done moves on. */
static void parse_upto(struct hgt_input *in, int upto, int *done)
{
	if (*done >= upto)
		return;
	hgt__parse_lock();
	for (; *done < upto; (*done)++) {
		const struct hgt__format *f = &in->formats[*done];

		/* A format libtraceevent cannot parse is skipped, as trace-cmd does. */
		if (in->tep && !f->bad)
			tep_parse_event(in->tep, f->text, f->size, f->system);
	}
	hgt__parse_unlock();
}

/* Format @bad killed the helper: report it. Returns 0, or -EBADMSG when too many did. */
static int format_crashed(struct hgt_input *in, int bad, int *nbad)
{
	in->formats[bad].bad = true;
	if (!(in->flags & HGT_OPEN_QUIET))
		fprintf(stderr,
			"hgtrace: %s: offset 0x%llx: event format %d of system \"%s\" crashes libtraceevent's parser: skipped\n",
			in->path, (unsigned long long)in->formats[bad].where, bad,
			in->formats[bad].system);
	if (++*nbad <= MAX_BAD_FORMATS)
		return 0;
	return hgt__error(
		in, in->formats[bad].where, EBADMSG,
		"more than %d event formats crash libtraceevent's parser: the metadata is damaged",
		MAX_BAD_FORMATS);
}

/*
 * Follow the helper through the formats, parsing each here as soon as the helper has gone
 * past it (it announces the next one, or the end), so that the two parses overlap. Returns
 * 0 or -errno; *@verdict tells whether a helper went through every format.
 */
static int parse_behind_probe(struct hgt_input *in, int *done, bool *verdict)
{
	int nbad = 0, last = -2, ret;
	int32_t v;

	while (in->probe_pid > 0) {
		bool got = probe_next(in, &v);

		if (got && v >= 0) {
			parse_upto(in, v, done); /* every format before @v went through */
			last = v;
			continue;
		}
		probe_release(in, !got || v != -1);
		if (got && v == -1) {
			*verdict = true;
			return 0;
		}
		if (last < in->probe_start)
			return 0; /* no verdict: the rest is parsed unguarded, as before */
		ret = format_crashed(in, last, &nbad);
		if (ret)
			return ret;
		if (last + 1 == in->nr_formats) {
			*verdict = true;
			return 0;
		}
		if (probe_begin(in, last + 1))
			return 0;
	}
	return 0;
}

/**
 * hgt__formats_parse - hand every kept format to libtraceevent, except those that crash
 * (or hang) it in the probe child; then free the texts.
 */
int hgt__formats_parse(struct hgt_input *in)
{
	bool verdict = false; /* a child went through every format (skipping the bad ones) */
	int i, done = 0, ret;

	hgt__formats_check_start(in, false);
	ret = parse_behind_probe(in, &done, &verdict);
	if (!ret && verdict)
		verdicts_keep(in);
	in->formats_checked = true;
	if (!ret)
		parse_upto(in, in->nr_formats, &done);
	for (i = 0; i < in->nr_formats; i++) {
		free(in->formats[i].text);
		free(in->formats[i].system);
	}
	free(in->formats);
	in->formats = NULL;
	in->nr_formats = in->max_formats = 0;
	if (!ret && in->tep)
		guard_print_formats(in);
	return ret;
}

void hgt__formats_free(struct hgt_input *in)
{
	int i;

	if (in->probe_pid > 0) /* the open failed while the probe ran: take its answer */
		probe_end(in);
	for (i = 0; i < in->nr_formats; i++) {
		free(in->formats[i].text);
		free(in->formats[i].system);
	}
	free(in->formats);
	in->formats = NULL;
	in->nr_formats = 0;
}

/* Where common field @name of @size bytes lies in @tep's records when it can be read
 * straight (file and machine little endian), else -1. */
static int common_offset(struct tep_handle *tep, const char *name, int size)
{
	struct tep_event *ev = tep_get_events_count(tep) ? tep_get_event(tep, 0) : NULL;
	struct tep_format_field *f = ev ? tep_find_common_field(ev, name) : NULL;

	if (!f || f->size != size || f->offset < 0 || tep_is_file_bigendian(tep) ||
	    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		return -1;
	return f->offset;
}

/**
 * hgt__type_offset - where the 2-byte common_type lies in @tep's records when it can be
 * read straight (file and machine little endian), else -1: tep_data_type() looks the
 * field up every time.
 */
int hgt__type_offset(struct tep_handle *tep)
{
	return common_offset(tep, "common_type", 2);
}

/**
 * hgt__pid_offset - hgt__type_offset() of the 4-byte common_pid, for hgt__record_pid().
 */
int hgt__pid_offset(struct tep_handle *tep)
{
	return common_offset(tep, "common_pid", 4);
}

/**
 * hgt__record_pid - tep_data_pid(@tep, @rec), read at @off (hgt__pid_offset()) when the
 * record holds it.
 */
int hgt__record_pid(struct tep_handle *tep, int off, struct tep_record *rec)
{
	int32_t pid;

	if (off < 0 || off + 4 > rec->size)
		return tep_data_pid(tep, rec);
	memcpy(&pid, (const uint8_t *)rec->data + off, 4);
	return pid;
}

/**
 * hgt__record_type - tep_data_type(@tep, @rec), read at @off (hgt__type_offset()) when the
 * record holds it.
 */
int hgt__record_type(struct tep_handle *tep, int off, struct tep_record *rec)
{
	uint16_t t;

	if (off < 0 || off + 2 > rec->size)
		return tep_data_type(tep, rec);
	memcpy(&t, (const uint8_t *)rec->data + off, 2);
	return t;
}
