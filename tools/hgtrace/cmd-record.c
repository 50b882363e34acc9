// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace record: record this machine's ftrace into a trace.dat. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hgtrace/output.h>
#include <hgtrace/record.h>
#include <hgtrace/session.h>

#include "cmd.h"

static volatile int session_stop; /* a signal, or the workload's end */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace record -e SYSTEM[:EVENT] [-f FILTER]... [-C CLOCK] [-b KB] [-B INSTANCE]\n"
		"                      [-o FILE] [-P PID]... [-M CPUMASK] [--compression C]\n"
		"                      [-A NAME[@fifo:DIR|@tcp:HOST:PORT|@vsock:CID[:PORT]|@unix:PATH:PORT]\n"
		"                          [--guest-pid PID] [-e ...] [-C CLOCK] [-b KB]\n"
		"                          [--peer trace-cmd [--peer-arg ARG]...]]...\n"
		"                      [--sync-interval MS] [--flush-ms MS] [--fsync] [--mmap]\n"
		"                      [--flight --trigger COND... [--window S] [--after S]\n"
		"                          [--tick S] [--holdoff S] [--max-triggers N]\n"
		"                          [--flight-prefix PREFIX] [--search-max-mb N]]\n"
		"                      [-- COMMAND ARGS...]\n"
		"  records until COMMAND exits, or until SIGINT/SIGTERM/SIGHUP without one.\n"
		"  Pages reach FILE.recording/ at most --flush-ms (1000) late; after a kill,\n"
		"  'hgtrace restore FILE' writes FILE from it. --fsync: also fsync each interval.\n"
		"  Works in a tracefs instance of its own (or -B NAME) and leaves tracefs as it was.\n"
		"  -A/--guest NAME: also record guest NAME through its agent (hgtrace agent --serve);\n"
		"  the options after it are the guest's. Its file is trace-NAME.dat beside -o.\n"
		"  --peer trace-cmd: the guest's agent is trace-cmd's own (trace-cmd agent, over\n"
		"  tcp: or vsock:); --peer-arg ARG: a trace-cmd record option sent to it as is.\n"
		"  --flight: a flight recorder (hgtrace flight -h): only the last --window (10 s)\n"
		"  is kept, and when a --trigger fires, the window around it is saved as\n"
		"  PREFIX-N.dat + PREFIX-N-NAME.dat --after (1 s) later; FILE then holds the last\n"
		"  window. SIGUSR1 triggers by hand.\n");
}

/* The session's guests as the command line gives them. */
struct gopt {
	struct hgt_session_guest g;
	struct hgt_record_opts ro;
	const char **events;
	const char **filters; /* -f: per event, NULL or its filter */
	int nev;
	char *dir;
	char *name;
	const char **peer_args; /* --peer-arg */
	int npa;
};

/* NAME@unix:PATH:PORT (@spec: PATH:PORT): the agent listens on vsock PORT of a guest whose
 * hybrid-vsock VMM (Firecracker, Cloud Hypervisor) listens on the UNIX socket PATH. */
static int parse_hvsock(const char *arg, const char *spec, struct gopt *g)
{
	char *path = strdup(spec), *colon, *end;
	unsigned long v = 0;

	if (!path)
		return -1;
	g->dir = path; /* owns the path */
	colon = strrchr(path, ':');
	if (colon) {
		*colon = 0;
		errno = 0;
		v = strtoul(colon + 1, &end, 10);
	}
	if (!colon || !*path || errno || *end || !v || v > 0xfffffffeUL) {
		fprintf(stderr,
			"hgtrace: record: -A '%s': expected NAME@unix:PATH:PORT (the VMM's socket, the agent's vsock port)\n",
			arg);
		return -1;
	}
	g->g.transport = HGT_TRANSPORT_HVSOCK;
	g->g.path = path;
	g->g.port = (unsigned int)v;
	g->g.name = g->name;
	return 0;
}

/* NAME[@fifo:DIR], NAME@tcp:HOST:PORT, NAME@vsock:CID[:PORT] (port 8823) or
 * NAME@unix:PATH:PORT (a hybrid-vsock VMM's socket); a bare NAME
 * is DIR = $HGTRACE_GUEST_DIR or /var/lib/hgtrace, + /NAME. */
static int parse_guest(const char *arg, struct gopt *g)
{
	const char *at = strchr(arg, '@');
	const char *root = getenv("HGTRACE_GUEST_DIR");

	g->name = at ? strndup(arg, (size_t)(at - arg)) : strdup(arg);
	if (!g->name)
		return -1;
	if (!at) {
		size_t n = strlen(root ? root : "/var/lib/hgtrace") + strlen(g->name) + 2;

		g->dir = malloc(n);
		if (!g->dir)
			return -1;
		snprintf(g->dir, n, "%s/%s", root ? root : "/var/lib/hgtrace", g->name);
	} else if (!strncmp(at + 1, "fifo:", 5) && at[6]) {
		g->dir = strdup(at + 6);
	} else if (!strncmp(at + 1, "unix:", 5)) {
		return parse_hvsock(arg, at + 6, g);
	} else if (!strncmp(at + 1, "tcp:", 4) || !strncmp(at + 1, "vsock:", 6)) {
		/* an agent --serve --listen: tcp:HOST:PORT, vsock:CID[:PORT] */
		bool tcp = at[1] == 't';
		char *spec = strdup(at + (tcp ? 5 : 7)), *colon, *end;
		unsigned long v;

		if (!spec)
			return -1;
		g->dir = spec; /* owns the host string */
		colon = strrchr(spec, ':');
		if (colon)
			*colon = 0;
		errno = 0;
		v = colon ? strtoul(colon + 1, &end, 10) : 8823;
		if ((colon && (errno || *end || !v || v > 65535)) || (tcp && (!colon || !*spec))) {
			fprintf(stderr,
				"hgtrace: record: -A '%s': expected NAME@tcp:HOST:PORT or NAME@vsock:CID[:PORT]\n",
				arg);
			return -1;
		}
		g->g.port = (unsigned int)v;
		if (tcp) {
			g->g.transport = HGT_TRANSPORT_TCP;
			g->g.host = spec;
		} else {
			errno = 0;
			v = strtoul(spec, &end, 0);
			if (errno || *end || end == spec || v > 0xffffffffUL) {
				fprintf(stderr,
					"hgtrace: record: -A '%s': CID '%s' is not a number\n", arg,
					spec);
				return -1;
			}
			g->g.transport = HGT_TRANSPORT_VSOCK;
			g->g.cid = (unsigned int)v;
		}
		g->g.name = g->name;
		return 0;
	} else {
		fprintf(stderr,
			"hgtrace: record: -A '%s': expected NAME[@fifo:DIR], NAME@tcp:HOST:PORT, NAME@vsock:CID[:PORT] or NAME@unix:PATH:PORT\n",
			arg);
		return -1;
	}
	if (!g->dir)
		return -1;
	g->g.name = g->name;
	g->g.dir = g->dir;
	return 0;
}

/* What a session's callbacks need. */
struct run_ctx {
	char **cmd;		    /* the workload */
	struct cmd_flight_args *fl; /* --flight: its options, else NULL */
	struct hgt_flight *f;	    /* the flight recorder, while it runs */
	int flight_ret;
};

static void started(void *ctx)
{
	struct run_ctx *rc = ctx;

	if (rc->cmd && rc->cmd[0])
		cmd_child_spawn(rc->cmd, "record");
}

/* --flight: the flight recorder on the host's @output and the guests' @gs (their files
 * BASE-NAME.dat). Returns 0, or 1 after saying why. */
static int flight_start(struct run_ctx *rc, const char *output, unsigned int flush_ms,
			const struct gopt *gs, int ng)
{
	size_t n = strlen(output);
	const char **outs;
	int i, k = 0;

	if (!rc->fl)
		return 0;
	outs = calloc((size_t)ng + 1, sizeof(*outs));
	if (!outs)
		return 1;
	outs[k++] = output;
	for (i = 0; i < ng; i++) {
		char *p;

		if (asprintf(&p, "%.*s-%s.dat",
			     (int)(n > 4 && !strcmp(output + n - 4, ".dat") ? n - 4 : n), output,
			     gs[i].g.name) < 0)
			break;
		outs[k++] = p;
	}
	rc->fl->o.outputs = outs;
	rc->fl->o.flush_ns = (uint64_t)(flush_ms ? flush_ms : 1000) * 1000000;
	rc->fl->o.nr_outputs = k;
	/* the host halted (and with guests, their last pages taken) before the flight's last
	 * search: flight_stop() runs with every page written */
	rc->fl->o.complete_at_stop = true;
	rc->f = k == ng + 1 ? hgt_flight_start(&rc->fl->o) : NULL;
	for (i = 1; i < k; i++)
		free((char *)outs[i]);
	free(outs);
	rc->fl->o.outputs = NULL;
	if (!rc->f) {
		cmd_error("record: the flight recorder cannot start");
		return 1;
	}
	cmd_flight_signal(rc->f);
	return 0;
}

/* Once every page is written, before the files are: the flight recorder's last search
 * and its windows. */
static void flight_stop(void *ctx)
{
	struct run_ctx *rc = ctx;

	if (!rc->f)
		return;
	cmd_flight_signal(NULL);
	rc->flight_ret = hgt_flight_stop(rc->f);
	rc->f = NULL;
}

static int run_session(struct hgt_record_opts *host, struct gopt *gs, int ng, unsigned int interval,
		       const char *kvm_debugfs, struct run_ctx *rc)
{
	HGT_OPTS(hgt_session_opts, so, .host = host, .nr_guests = ng, .sync_interval_ms = interval,
		 .log = stderr, .stop = &session_stop, .started = started, .ctx = rc,
		 .kvm_debugfs = kvm_debugfs, .received = flight_stop);
	struct hgt_session_guest *g = calloc((size_t)ng, sizeof(*g));
	int i, ret;

	if (!g)
		return 1;
	for (i = 0; i < ng; i++) {
		gs[i].ro.sz = sizeof(gs[i].ro);
		gs[i].ro.events = gs[i].nev ? gs[i].events : host->events;
		gs[i].ro.nr_events = gs[i].nev ? gs[i].nev : host->nr_events;
		gs[i].ro.filters = gs[i].nev ? gs[i].filters : host->filters;
		gs[i].g.record = &gs[i].ro;
		gs[i].g.peer_args = gs[i].peer_args;
		gs[i].g.nr_peer_args = gs[i].npa;
		if (gs[i].npa && !gs[i].g.trace_cmd) {
			fprintf(stderr,
				"hgtrace: record: guest %s: --peer-arg without --peer trace-cmd\n",
				gs[i].g.name);
			free(g);
			return 2;
		}
		g[i] = gs[i].g;
	}
	so.guests = g;
	if (flight_start(rc, host->output, host->flush_ms, gs, ng)) {
		free(g);
		return 1;
	}
	cmd_child_watch(&session_stop);
	if (!rc->cmd || !rc->cmd[0])
		fprintf(stderr,
			"hgtrace: record: recording host and guests; Ctrl-C (SIGINT), SIGTERM or SIGHUP stops\n");
	ret = hgt_session_run(&so);
	flight_stop(rc); /* a session that failed before its stop */
	cmd_child_end();
	free(g);
	if (!ret && rc->flight_ret)
		return 1;
	if (ret) {
		cmd_error("record failed");
		return 1;
	}
	return 0;
}

enum {
	O_GUEST_PID = 256,
	O_INTERVAL,
	O_KVM,
	O_FLUSH,
	O_FSYNC,
	O_MMAP,
	O_PEER,
	O_PEER_ARG,
	O_FLIGHT
};

static int push(void *arrp, int *n, size_t size)
{
	void **arr = arrp;
	void *na = realloc(*arr, size * (size_t)(*n + 1));

	if (!na)
		return -1;
	*arr = na;
	return 0;
}

/* What the command line asked for, beyond struct hgt_record_opts. */
struct record_args {
	struct hgt_record_opts *o;
	struct gopt *gs, *cur; /* -A, ng of them; cur: the last (its options follow it) */
	int ng;
	unsigned long interval; /* --sync-interval */
	const char *kvm_debugfs;
	const char **events; /* -e before any -A */
	const char **filters;
	int nev;
	int *pids; /* -P */
	int npid;
	bool flight; /* --flight */
	struct cmd_flight_args fl;
	bool fl_opts; /* a flight option given */
};

/* -e: for the host, or for the guest of the last -A. Returns 0 or -ENOMEM. */
static int event_arg(const char *arg, struct record_args *a)
{
	const char ***ev = a->cur ? &a->cur->events : &a->events;
	const char ***fl = a->cur ? &a->cur->filters : &a->filters;
	int *n = a->cur ? &a->cur->nev : &a->nev;

	if (push(ev, n, sizeof(**ev)) || push(fl, n, sizeof(**fl)))
		return -ENOMEM;
	(*ev)[*n] = arg;
	(*fl)[(*n)++] = NULL;
	return 0;
}

/* -f FILTER: of the -e before it (trace-cmd's order). Returns 0 or 1 (error said). */
static int filter_arg(const char *arg, struct record_args *a)
{
	int n = a->cur ? a->cur->nev : a->nev;

	if (!n) {
		fprintf(stderr, "hgtrace: record: -f '%s': after the -e whose events it filters\n",
			arg);
		return 1;
	}
	(a->cur ? a->cur->filters : a->filters)[n - 1] = arg;
	return 0;
}

/* -A NAME..., and the options that follow it. Returns 0, 1 (error said) or -ENOMEM. */
static int guest_arg(int c, const char *arg, struct record_args *a)
{
	char *end;
	long v;

	if (c == 'A') {
		if (push(&a->gs, &a->ng, sizeof(*a->gs)))
			return -ENOMEM;
		a->cur = &a->gs[a->ng++];
		memset(a->cur, 0, sizeof(*a->cur));
		return parse_guest(arg, a->cur) ? 1 : 0;
	}
	errno = 0; /* --guest-pid */
	v = strtol(arg, &end, 10);
	if (!a->cur || errno || *end || v <= 0 || v > INT_MAX) {
		fprintf(stderr, "hgtrace: record: --guest-pid '%s': a PID, after -A\n", arg);
		return 1;
	}
	a->cur->g.pid = (int)v;
	return 0;
}

/* --peer trace-cmd and --peer-arg ARG, after -A. Returns 0, 1 (error said) or -ENOMEM. */
static int peer_arg(int c, const char *arg, struct record_args *a)
{
	if (!a->cur) {
		fprintf(stderr, "hgtrace: record: --%s: after -A, for that guest\n",
			c == O_PEER ? "peer" : "peer-arg");
		return 1;
	}
	if (c == O_PEER) {
		if (strcmp(arg, "trace-cmd")) {
			fprintf(stderr, "hgtrace: record: --peer '%s': only trace-cmd is known\n",
				arg);
			return 1;
		}
		a->cur->g.trace_cmd = true;
		return 0;
	}
	if (push(&a->cur->peer_args, &a->cur->npa, sizeof(*a->cur->peer_args)))
		return -ENOMEM;
	a->cur->peer_args[a->cur->npa++] = arg;
	return 0;
}

/* One option of cmd_record() (cmd_parse_opts() calls it). */
static int record_opt(int c, char *arg, void *ctx)
{
	struct record_args *a = ctx;
	struct hgt_record_opts *o = a->o;
	long long v;
	int ms, ret = cmd_flight_opt("record", c, arg, &a->fl);

	if (ret != -ENOENT) {
		a->fl_opts = true;
		return ret;
	}
	switch (c) {
	case O_FLIGHT:
		a->flight = true;
		return 0;
	case 'e':
		return event_arg(arg, a);
	case 'f':
		return filter_arg(arg, a);
	case 'A':
	case O_GUEST_PID:
		return guest_arg(c, arg, a);
	case 'C':
		*(a->cur ? &a->cur->ro.clock : &o->clock) = arg;
		return 0;
	case O_KVM:
		a->kvm_debugfs = arg;
		return 0;
	case O_PEER:
	case O_PEER_ARG:
		return peer_arg(c, arg, a);
	case O_INTERVAL:
		if (cmd_num_arg("record", "--sync-interval", arg, 1, 3600000, "1 to 3600000 ms",
				&v))
			return 1;
		a->interval = (unsigned long)v;
		return 0;
	case O_FLUSH:
		if (cmd_int_arg("record", "--flush-ms", arg, 10, 3600000, &ms))
			return 1;
		o->flush_ms = (unsigned int)ms;
		return 0;
	case O_FSYNC:
		o->sync = true;
		return 0;
	case O_MMAP:
		o->mmap = true;
		return 0;
	case 'b':
		if (cmd_num_arg("record", "-b", arg, 1, INT_MAX, "KB > 0", &v))
			return 1;
		*(a->cur ? &a->cur->ro.buffer_kb : &o->buffer_kb) = (size_t)v;
		return 0;
	case 'B':
		o->instance = arg;
		return 0;
	case 'o':
		o->output = arg;
		return 0;
	case 'P':
		if (cmd_num_arg("record", "-P", arg, 1, INT_MAX, "a PID", &v))
			return 1;
		if (push(&a->pids, &a->npid, sizeof(*a->pids)))
			return -ENOMEM;
		a->pids[a->npid++] = (int)v;
		return 0;
	case 'M':
		o->cpumask = arg;
		return 0;
	case 'Z':
		return cmd_compression("record", arg, &o->compression) ? 1 : 0;
	}
	return 1;
}

/* Wait for the stop: the workload's end or a signal (blocked between the test and the
 * wait, so that none falls between). */
static void wait_stop(void)
{
	sigset_t block, old;

	sigemptyset(&block);
	sigaddset(&block, SIGCHLD);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!session_stop)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Record this machine alone, around the workload @cmd (NULL: until a signal). Returns the
 * exit status. */
static int record_host(const struct hgt_record_opts *o, struct run_ctx *rc)
{
	char **cmd = rc->cmd;
	struct hgt_record_result res;
	struct hgt_recorder *rec;
	int ret = 0;

	rec = hgt_record_start(o);
	if (!rec) {
		cmd_error("record failed");
		return 1;
	}
	if (flight_start(rc, o->output, o->flush_ms, NULL, 0))
		session_stop = 1; /* the recording stops at once, its file written */
	/* the workload as record -A runs it (child.c): none of the recorder's files (its
	 * trace_pipe_raw fds held the instance after a crash), default signal dispositions;
	 * its end, or a signal, stops the recording */
	cmd_child_watch(&session_stop);
	if (cmd)
		cmd_child_spawn(cmd, "record");
	else
		fprintf(stderr,
			"hgtrace: record: recording; Ctrl-C (SIGINT), SIGTERM or SIGHUP stops\n");
	wait_stop();
	/* the flight recorder's last search with every page there (complete_at_stop); an
	 * error is said once, by hgt_record_stop(), which meets it again */
	if (rc->f)
		(void)hgt_record_halt(rec);
	flight_stop(rc);
	ret = rc->flight_ret ? 1 : 0;
	cmd_child_end();
	if (hgt_record_stop(rec, &res)) {
		cmd_error("record failed");
		ret = 1;
	}
	hgt_record_free(rec);
	return ret;
}

int cmd_record(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "compression", required_argument, NULL, 'Z' },
		{ "guest", required_argument, NULL, 'A' },
		{ "guest-pid", required_argument, NULL, O_GUEST_PID },
		{ "sync-interval", required_argument, NULL, O_INTERVAL },
		{ "kvm-debugfs", required_argument, NULL, O_KVM },
		{ "flush-ms", required_argument, NULL, O_FLUSH },
		{ "fsync", no_argument, NULL, O_FSYNC },
		{ "mmap", no_argument, NULL, O_MMAP },
		{ "peer", required_argument, NULL, O_PEER },
		{ "peer-arg", required_argument, NULL, O_PEER_ARG },
		{ "flight", no_argument, NULL, O_FLIGHT },
		CMD_FLIGHT_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_record_opts, o, .output = "trace.dat", .compression = HGT_COMPRESS_ZSTD,
		 .log = stderr);
	struct record_args a = {
		.o = &o,
		.fl = { .o = { .sz = sizeof(a.fl.o), .log = stderr, .after_ns = 1000000000 } }
	};
	struct run_ctx rc = { 0 };
	int ret = 2;

	if (cmd_parse_opts(argc, argv, "+e:f:C:b:B:o:P:M:A:h", lopts, usage, "record", record_opt,
			   &a, &ret))
		goto out;
	if (!a.nev) {
		fprintf(stderr, "hgtrace: record: no events given (-e SYSTEM[:EVENT])\n");
		goto out;
	}
	o.events = a.events;
	o.filters = a.filters;
	o.nr_events = a.nev;
	o.pids = a.pids;
	o.nr_pids = a.npid;
	if (a.fl_opts && !a.flight) {
		fprintf(stderr,
			"hgtrace: record: --trigger, --window, --after, --tick, --holdoff, --max-triggers, --flight-prefix and --search-max-mb need --flight\n");
		goto out;
	}
	if (a.flight && !a.fl.nt) {
		fprintf(stderr,
			"hgtrace: record: --flight needs a --trigger COND (hgtrace flight -h)\n");
		goto out;
	}
	if (cmd_flight_defaults("record", &a.fl))
		goto out;
	rc.cmd = optind < argc ? argv + optind : NULL;
	rc.fl = a.flight ? &a.fl : NULL;
	/* before any recording starts, -A or not: a stop request ends it with its files
	 * written (and overrides SIGINT ignored in a script's background job); a closed
	 * terminal or pipe must not kill the recorder while it writes the file */
	cmd_catch_stop(&session_stop);
	if (a.ng)
		ret = run_session(&o, a.gs, a.ng, (unsigned int)a.interval, a.kvm_debugfs, &rc);
	else
		ret = record_host(&o, &rc);
out:
	for (int i = 0; i < a.ng; i++) {
		free(a.gs[i].events);
		free(a.gs[i].filters);
		free(a.gs[i].name);
		free(a.gs[i].dir);
		free(a.gs[i].peer_args);
	}
	free(a.gs);
	free(a.events);
	free(a.filters);
	free(a.pids);
	free(a.fl.triggers);
	return ret;
}
