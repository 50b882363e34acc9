// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The probe registry: groups registered by generated code, atomic per-event state,
 * patterns, events files, the environment, and the monitor commands.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes-local.h"

pthread_mutex_t hgt__probe_lock = PTHREAD_MUTEX_INITIALIZER;
static struct hgt_probe_group *groups, **groups_tail = &groups;
static int enabled_count;
static unsigned int all_backends;
static int quiet; /* patterns re-applied to each new group: warn once, at exit */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static struct {
	const char *events, *file, *ctl, *clock;
	int explicit;
} init_opts;

void hgt__probe_each(void (*fn)(struct hgt_probe_event *ev, void *arg), void *arg)
{
	for (struct hgt_probe_group *g = groups; g; g = g->next)
		for (size_t i = 0; i < g->nevents; i++)
			fn(g->events[i], arg);
}

/**
 * hgt_probe_foreach - call @fn for every registered event, in registration order.
 */
void hgt_probe_foreach(void (*fn)(struct hgt_probe_event *ev, void *arg), void *arg)
{
	pthread_mutex_lock(&hgt__probe_lock);
	hgt__probe_each(fn, arg);
	pthread_mutex_unlock(&hgt__probe_lock);
}

/* The registered group that declares event @name, or NULL. */
static const struct hgt_probe_group *group_of_locked(const char *name)
{
	for (const struct hgt_probe_group *g = groups; g; g = g->next)
		for (size_t i = 0; i < g->nevents; i++)
			if (!strcmp(g->events[i]->name, name))
				return g;
	return NULL;
}

static struct hgt_probe_event *find_locked(const char *name)
{
	for (struct hgt_probe_group *g = groups; g; g = g->next)
		for (size_t i = 0; i < g->nevents; i++)
			if (!strcmp(g->events[i]->name, name))
				return g->events[i];
	return NULL;
}

/**
 * hgt_probe_find - the registered event named @name, or NULL.
 */
struct hgt_probe_event *hgt_probe_find(const char *name)
{
	struct hgt_probe_event *ev;

	pthread_mutex_lock(&hgt__probe_lock);
	ev = find_locked(name);
	pthread_mutex_unlock(&hgt__probe_lock);
	return ev;
}

static void set_state(struct hgt_probe_event *ev, bool on)
{
	unsigned char old = __atomic_exchange_n(ev->state, on ? 1 : 0, __ATOMIC_RELEASE);

	enabled_count += (on ? 1 : 0) - (old ? 1 : 0);
}

static bool is_pattern(const char *p)
{
	return strpbrk(p, "*?[") != NULL;
}

static int set_locked(const char *pattern, bool on)
{
	int n = 0;

	if (!is_pattern(pattern)) {
		struct hgt_probe_event *ev = find_locked(pattern);

		if (!ev)
			return -ENOENT;
		if (ev->flags & HGT_PROBE_F_DISABLE)
			return -EPERM;
		set_state(ev, on);
		return 1;
	}
	for (struct hgt_probe_group *g = groups; g; g = g->next)
		for (size_t i = 0; i < g->nevents; i++) {
			struct hgt_probe_event *ev = g->events[i];

			if (ev->flags & HGT_PROBE_F_DISABLE || fnmatch(pattern, ev->name, 0))
				continue;
			set_state(ev, on);
			n++;
		}
	return n;
}

/**
 * hgt_probe_set - enable or disable every event @pattern names. Returns the number of
 * events matched or a negative errno (-ENOENT: no such event; -EPERM: compiled out).
 */
int hgt_probe_set(const char *pattern, bool on)
{
	int n;

	pthread_once(&setup_once, hgt__probe_setup);
	pthread_mutex_lock(&hgt__probe_lock);
	n = set_locked(pattern, on);
	pthread_mutex_unlock(&hgt__probe_lock);
	return n;
}

/**
 * hgt_probe_enabled_count - how many events are enabled now.
 */
int hgt_probe_enabled_count(void)
{
	int n;

	pthread_mutex_lock(&hgt__probe_lock);
	n = enabled_count;
	pthread_mutex_unlock(&hgt__probe_lock);
	return n;
}

/* One pattern from a list or a file; @where names it in warnings. */
static void apply_one(char *p, const char *where)
{
	bool on = true;
	int n;

	if (*p == '-') {
		on = false;
		p++;
	}
	if (!*p)
		return;
	n = set_locked(p, on);
	if (n == -ENOENT && quiet)
		return;
	if (n == -ENOENT)
		fprintf(stderr, "hgtrace-probes: %s: trace event '%s' does not exist\n", where, p);
	else if (n == -EPERM)
		fprintf(stderr, "hgtrace-probes: %s: trace event '%s' is compiled out (disable)\n",
			where, p);
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/*
 * Call @fn for each pattern line of events file @path ("FILE:LINE" in @where); blank lines
 * and '#' comments skipped. A missing file, or one that is not a regular file (a directory,
 * a FIFO that could block), is one line on stderr when @say, and -errno.
 */
static int each_line(const char *path, bool say, void (*fn)(char *p, const char *where))
{
	char *line = NULL, where[512];
	size_t cap = 0;
	unsigned int no = 0;
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), err = 0;
	FILE *f = NULL;

	if (fd < 0)
		err = errno;
	else if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
	else if (!(f = fdopen(fd, "r")))
		err = errno;
	if (err) {
		if (fd >= 0 && !f)
			close(fd);
		if (say)
			fprintf(stderr, "hgtrace-probes: events file %s: %s\n", path,
				err == EINVAL ? "not a regular file" : strerror(err));
		return -err;
	}
	while (getline(&line, &cap, f) >= 0) {
		char *p = trim(line);

		no++;
		if (!*p || *p == '#')
			continue;
		snprintf(where, sizeof(where), "%s:%u", path, no);
		fn(p, where);
	}
	free(line);
	fclose(f);
	return 0;
}

static int apply_file_locked(const char *path)
{
	/* quiet while patterns are re-applied to each new group: said once, at exit */
	return each_line(path, !quiet, apply_one);
}

static int apply_locked(const char *list)
{
	char *copy = strdup(list), *save = NULL;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *p = trim(tok);

		if (*p == '@') {
			int r = apply_file_locked(p + 1);

			if (r < 0 && !ret)
				ret = r;
		} else {
			apply_one(p, "HGTRACE_EVENTS");
		}
	}
	free(copy);
	return ret;
}

/**
 * hgt_probe_apply - apply a list of patterns (see probes.h). Returns 0 or a negative errno.
 */
int hgt_probe_apply(const char *list)
{
	int r;

	pthread_once(&setup_once, hgt__probe_setup);
	pthread_mutex_lock(&hgt__probe_lock);
	r = apply_locked(list);
	pthread_mutex_unlock(&hgt__probe_lock);
	return r;
}

static const char *opt_or_env(const char *opt, const char *env)
{
	return opt ? opt : getenv(env);
}

static void warn_unmatched(void);

/*
 * fork(): the locks are taken around it so the child gets them in a known state. The child
 * has only the forking thread: no writer, no control thread. It must not write the parent's
 * undrained events again, label its events with the parent's thread ids, append to the
 * parent's file or remove the parent's control socket: its trace file is off (it can name
 * one of its own) and its rings start empty.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&hgt__probe_lock);
	hgt__probe_file_fork_prepare();
}

static void fork_parent(void)
{
	hgt__probe_file_fork_parent();
	pthread_mutex_unlock(&hgt__probe_lock);
}

static void fork_child(void)
{
	hgt__probe_file_fork_child();
	hgt__probe_ctl_fork_child();
	pthread_mutex_unlock(&hgt__probe_lock);
}

/* Once, at the first registration (or hgt_probes_init()): clock and file. */
void hgt__probe_setup(void)
{
	const char *clock = opt_or_env(init_opts.clock, "HGTRACE_CLOCK");
	const char *file = opt_or_env(init_opts.file, "HGTRACE_FILE");
	if (clock && hgt__probe_set_clock(clock) < 0)
		fprintf(stderr, "hgtrace-probes: HGTRACE_CLOCK=%s: not tsc or mono; using %s\n",
			clock, hgt__probe_clock_tsc ? "tsc" : "mono");
	if (file)
		hgt__probe_file_default(file);
	if (getenv("HGTRACE_SIMPLE_FORMAT") &&
	    hgt__probe_set_file_format(getenv("HGTRACE_SIMPLE_FORMAT")) < 0)
		fprintf(stderr,
			"hgtrace-probes: HGTRACE_SIMPLE_FORMAT=%s: not hgtrace or qemu; using hgtrace\n",
			getenv("HGTRACE_SIMPLE_FORMAT"));
	atexit(warn_unmatched);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/*
 * The control socket starts once there is something to control: after the first group is
 * linked in (or at hgt_probes_init()), so that a client that connects at once never sees
 * an empty program.
 */
static pthread_once_t ctl_once = PTHREAD_ONCE_INIT;

static void start_ctl(void)
{
	const char *ctl = opt_or_env(init_opts.ctl, "HGTRACE_CTL");

	if (ctl && hgt__probe_ctl_start(ctl) < 0)
		fprintf(stderr, "hgtrace-probes: control socket %s: %s\n", ctl, strerror(errno));
}

/*
 * The simple backend's file opens by itself when a group compiled with it is registered
 * and events or a file were named at start-up (never just because the program runs).
 */
int hgt__probe_wants_file(void)
{
	return (all_backends & HGT_PROBE_B_SIMPLE) && !hgt__probe_file_is_on() &&
	       (opt_or_env(init_opts.events, "HGTRACE_EVENTS") ||
		opt_or_env(init_opts.file, "HGTRACE_FILE"));
}

/* Events named by the environment are applied to each group as it registers. */
static void apply_env_locked(struct hgt_probe_group *g)
{
	const char *events = opt_or_env(init_opts.events, "HGTRACE_EVENTS");
	struct hgt_probe_group *saved = groups;

	if (!events || !*events)
		return;
	/* Only the new group: later patterns must not re-enable what the user turned off. */
	groups = g;
	g->next = NULL;
	quiet = 1;
	apply_locked(events);
	quiet = 0;
	groups = saved;
}

/* Exact names in HGTRACE_EVENTS that no group had by the end. */
/* An events file's line naming an event no group has: FILE:LINE. */
static void warn_missing(char *p, const char *where)
{
	p += *p == '-';
	if (*p && !is_pattern(p) && !find_locked(p))
		fprintf(stderr, "hgtrace-probes: %s: trace event '%s' does not exist\n", where, p);
}

static void warn_unmatched(void)
{
	const char *events = opt_or_env(init_opts.events, "HGTRACE_EVENTS");
	char *copy, *save = NULL;

	if (!events || !(copy = strdup(events)))
		return;
	pthread_mutex_lock(&hgt__probe_lock);
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *p = trim(tok);

		p += *p == '-';
		if (*p == '@')
			each_line(p + 1, true, warn_missing);
		else if (*p && !is_pattern(p) && !find_locked(p))
			fprintf(stderr,
				"hgtrace-probes: HGTRACE_EVENTS: trace event '%s' does not exist\n",
				p);
	}
	pthread_mutex_unlock(&hgt__probe_lock);
	free(copy);
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/**
 * hgt_probe_register_group - make a generated group's events known. Returns 0 or -EEXIST.
 */
int hgt_probe_register_group(struct hgt_probe_group *g)
{
	int ret = 0;

	pthread_once(&setup_once, hgt__probe_setup);
	pthread_mutex_lock(&hgt__probe_lock);
	for (size_t i = 0; i < g->nevents && !ret; i++) {
		struct hgt_probe_event *ev = g->events[i];

		const struct hgt_probe_group *had = group_of_locked(ev->name);

		if (had) {
			/* two groups may name the same event; one program may not link both */
			fprintf(stderr,
				"hgtrace-probes: event %s is declared by group %s and by group %s, both linked into this program: group %s is not registered\n",
				ev->name, had->name, g->name, g->name);
			ret = -EEXIST;
		}
		if (ev->id != fnv1a(ev->name)) {
			fprintf(stderr, "hgtrace-probes: group %s: event %s has id %#x, not %#x\n",
				g->name, ev->name, ev->id, fnv1a(ev->name));
			ret = -EINVAL;
		}
	}
	if (!ret) {
		apply_env_locked(g);
		g->next = NULL;
		*groups_tail = g;
		groups_tail = &g->next;
		all_backends |= g->backends;
		if (hgt__probe_file_is_on())
			hgt__probe_file_describe(g);
		else if (hgt__probe_wants_file())
			hgt__probe_file_on_locked();
	}
	pthread_mutex_unlock(&hgt__probe_lock);
	if (!ret)
		pthread_once(&ctl_once, start_ctl);
	return ret;
}

/**
 * hgt_probes_init - set the runtime up explicitly. Returns 0 or a negative errno.
 */
int hgt_probes_init(const struct hgt_probes_opts *opts)
{
	int ret = 0;

	if (opts && opts->sz < sizeof(size_t))
		return -EINVAL;
	if (opts) {
		init_opts.events = opts->events;
		init_opts.file = opts->file;
		init_opts.ctl = opts->ctl;
		init_opts.clock = opts->clock;
		init_opts.explicit = 1;
	}
	if (init_opts.clock && hgt__probe_set_clock(init_opts.clock) < 0)
		return -EINVAL;
	pthread_once(&setup_once, hgt__probe_setup);
	if (opts && opts->file)
		hgt__probe_file_default(opts->file);
	pthread_mutex_lock(&hgt__probe_lock);
	if (opts && opts->events) {
		ret = apply_locked(opts->events);
	}
	if (!ret && hgt__probe_wants_file())
		ret = hgt__probe_file_on_locked();
	pthread_mutex_unlock(&hgt__probe_lock);
	pthread_once(&ctl_once, start_ctl);
	return ret;
}

/* ---- monitor commands ---- */

struct out {
	char *buf;
	size_t sz, len;
};

static void __attribute__((format(printf, 2, 3))) put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len >= o->sz)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->sz - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->sz ? o->len + (size_t)n : o->sz - 1;
}

static int cmd_info(struct out *o, const char *pattern)
{
	int n = 0;

	for (struct hgt_probe_group *g = groups; g; g = g->next)
		for (size_t i = 0; i < g->nevents; i++) {
			struct hgt_probe_event *ev = g->events[i];

			if (fnmatch(pattern, ev->name, 0))
				continue;
			if (ev->flags & HGT_PROBE_F_DISABLE)
				put(o, "%s : state unavailable\n", ev->name);
			else
				put(o, "%s : state %d\n", ev->name,
				    __atomic_load_n(ev->state, __ATOMIC_RELAXED) ? 1 : 0);
			n++;
		}
	if (!n && !is_pattern(pattern)) {
		put(o, "error: unknown event \"%s\"\n", pattern);
		return -ENOENT;
	}
	return 0;
}

static int cmd_event(struct out *o, const char *name, const char *state)
{
	int on, n;

	if (!strcmp(state, "on"))
		on = 1;
	else if (!strcmp(state, "off"))
		on = 0;
	else {
		put(o, "error: trace-event %s: state '%s' is not on or off\n", name, state);
		return -EINVAL;
	}
	n = set_locked(name, on);
	if (n == -ENOENT) {
		put(o, "error: unknown event \"%s\"\n", name);
		return n;
	}
	if (n == -EPERM) {
		put(o, "error: event \"%s\" is disabled at build time\n", name);
		return n;
	}
	put(o, "%d event%s %s\n", n, n == 1 ? "" : "s", on ? "enabled" : "disabled");
	return 0;
}

static int cmd_file(struct out *o, const char *arg, const char *path)
{
	int r = 0;

	if (!arg) {
		put(o, "Trace file \"%s\" %s.\n", hgt__probe_file_name(),
		    hgt__probe_file_is_on() ? "on" : "off");
		return 0;
	}
	if (!strcmp(arg, "on"))
		r = hgt__probe_file_on_locked();
	else if (!strcmp(arg, "off"))
		r = hgt__probe_file_off_locked();
	else if (!strcmp(arg, "flush")) {
		pthread_mutex_unlock(&hgt__probe_lock);
		r = hgt_probe_flush();
		pthread_mutex_lock(&hgt__probe_lock);
	} else if (!strcmp(arg, "set") && path) {
		int was = hgt__probe_file_is_on();

		hgt__probe_file_off_locked();
		hgt__probe_file_default(path);
		if (was)
			r = hgt__probe_file_on_locked();
	} else {
		put(o, "error: trace-file takes on, off, flush or set PATH\n");
		return -EINVAL;
	}
	if (r < 0)
		put(o, "error: trace file \"%s\": %s\n", hgt__probe_file_name(), strerror(-r));
	else
		put(o, "Trace file \"%s\" %s.\n", hgt__probe_file_name(),
		    hgt__probe_file_is_on() ? "on" : "off");
	return r;
}

/**
 * hgt_probe_command - run one monitor command and write its reply into @out.
 * Returns 0, or a negative errno with the reason as the reply.
 */
int hgt_probe_command(const char *cmd, char *outbuf, size_t outsz)
{
	char *copy = strdup(cmd), *save = NULL, *w[4] = { 0 };
	struct out o = { outbuf, outsz, 0 };
	int n = 0, r;

	if (!copy || !outsz)
		return -ENOMEM;
	outbuf[0] = '\0';
	for (char *t = strtok_r(copy, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save))
		if (n < 4)
			w[n++] = t;
		else
			n++;
	pthread_once(&setup_once, hgt__probe_setup);
	pthread_mutex_lock(&hgt__probe_lock);
	if (n == 2 && !strcmp(w[0], "info") && !strcmp(w[1], "trace-events"))
		r = cmd_info(&o, "*");
	else if (n == 3 && !strcmp(w[0], "info") && !strcmp(w[1], "trace-events"))
		r = cmd_info(&o, w[2]);
	else if (n == 3 && !strcmp(w[0], "trace-event"))
		r = cmd_event(&o, w[1], w[2]);
	else if (n >= 1 && n <= 3 && !strcmp(w[0], "trace-file"))
		r = cmd_file(&o, w[1], w[2]);
	else {
		put(&o,
		    "error: unknown command '%s' (info trace-events [PATTERN], trace-event NAME on|off, trace-file [on|off|flush|set PATH])\n",
		    cmd);
		r = -EINVAL;
	}
	pthread_mutex_unlock(&hgt__probe_lock);
	free(copy);
	return r;
}
