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
		"usage: hgtrace record -e SYSTEM[:EVENT]... [-C CLOCK] [-b KB] [-B INSTANCE]\n"
		"                      [-o FILE] [-P PID]... [-M CPUMASK] [--compression C]\n"
		"                      [-A NAME[@fifo:DIR] [--guest-pid PID] [-e ...] [-C CLOCK] [-b KB]]...\n"
		"                      [--sync-interval MS] [--flush-ms MS] [--fsync]\n"
		"                      [-- COMMAND ARGS...]\n"
		"  records until COMMAND exits, or until SIGINT/SIGTERM/SIGHUP without one.\n"
		"  Pages reach FILE.recording/ at most --flush-ms (1000) late; after a kill,\n"
		"  'hgtrace restore FILE' writes FILE from it. --fsync: also fsync each interval.\n"
		"  Works in a tracefs instance of its own (or -B NAME) and leaves tracefs as it was.\n"
		"  -A/--guest NAME: also record guest NAME through its agent (hgtrace agent --serve);\n"
		"  the options after it are the guest's. Its file is trace-NAME.dat beside -o.\n");
}

/* The session's guests as the command line gives them. */
struct gopt {
	struct hgt_session_guest g;
	struct hgt_record_opts ro;
	const char **events;
	int nev;
	char *dir;
	char *name;
};

/* NAME[@fifo:DIR], NAME@tcp:HOST:PORT or NAME@vsock:CID[:PORT] (port 8823); a bare NAME
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
			"hgtrace: record: -A '%s': expected NAME[@fifo:DIR], NAME@tcp:HOST:PORT or NAME@vsock:CID[:PORT]\n",
			arg);
		return -1;
	}
	if (!g->dir)
		return -1;
	g->g.name = g->name;
	g->g.dir = g->dir;
	return 0;
}

static void started(void *ctx)
{
	char **argv = ctx;

	if (argv && argv[0])
		cmd_child_spawn(argv, "record");
}

static int run_session(struct hgt_record_opts *host, struct gopt *gs, int ng, unsigned int interval,
		       const char *kvm_debugfs, char **cmd)
{
	HGT_OPTS(hgt_session_opts, so, .host = host, .nr_guests = ng, .sync_interval_ms = interval,
		 .log = stderr, .stop = &session_stop, .started = started, .ctx = cmd,
		 .kvm_debugfs = kvm_debugfs);
	struct hgt_session_guest *g = calloc((size_t)ng, sizeof(*g));
	int i, ret;

	if (!g)
		return 1;
	for (i = 0; i < ng; i++) {
		gs[i].ro.sz = sizeof(gs[i].ro);
		gs[i].ro.events = gs[i].nev ? gs[i].events : host->events;
		gs[i].ro.nr_events = gs[i].nev ? gs[i].nev : host->nr_events;
		gs[i].g.record = &gs[i].ro;
		g[i] = gs[i].g;
	}
	so.guests = g;
	cmd_child_watch(&session_stop);
	if (!cmd || !cmd[0])
		fprintf(stderr,
			"hgtrace: record: recording host and guests; Ctrl-C (SIGINT), SIGTERM or SIGHUP stops\n");
	ret = hgt_session_run(&so);
	cmd_child_end();
	free(g);
	if (ret) {
		cmd_error("record failed");
		return 1;
	}
	return 0;
}

static int push(void *arrp, int *n, size_t size)
{
	void **arr = arrp;
	void *na = realloc(*arr, size * (size_t)(*n + 1));

	if (!na)
		return -1;
	*arr = na;
	return 0;
}

int cmd_record(int argc, char **argv)
{
	enum { O_GUEST_PID = 256, O_INTERVAL, O_KVM, O_FLUSH, O_FSYNC };
	static const struct option lopts[] = {
		{ "compression", required_argument, NULL, 'Z' },
		{ "guest", required_argument, NULL, 'A' },
		{ "guest-pid", required_argument, NULL, O_GUEST_PID },
		{ "sync-interval", required_argument, NULL, O_INTERVAL },
		{ "kvm-debugfs", required_argument, NULL, O_KVM },
		{ "flush-ms", required_argument, NULL, O_FLUSH },
		{ "fsync", no_argument, NULL, O_FSYNC },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gopt *gs = NULL, *cur = NULL;
	int ng = 0, rc;
	unsigned long interval = 0;
	const char *kvm_debugfs = NULL;
	HGT_OPTS(hgt_record_opts, o, .output = "trace.dat", .compression = HGT_COMPRESS_ZSTD,
		 .log = stderr);
	const char **events = NULL;
	int *pids = NULL, nev = 0, npid = 0, c, ret = 2;
	struct hgt_record_result res;
	struct hgt_recorder *rec;
	char *end;
	long long v;

	optind = 1;
	while ((c = cmd_getopt(argc, argv, "+e:C:b:B:o:P:M:A:h", lopts, usage, &rc)) != -1) {
		switch (c) {
		case 'e':
			if (cur) {
				if (push(&cur->events, &cur->nev, sizeof(*cur->events)))
					goto nomem;
				cur->events[cur->nev++] = optarg;
				break;
			}
			if (push(&events, &nev, sizeof(*events)))
				goto nomem;
			events[nev++] = optarg;
			break;
		case 'C':
			*(cur ? &cur->ro.clock : &o.clock) = optarg;
			break;
		case O_KVM:
			kvm_debugfs = optarg;
			break;
		case 'A':
			if (push(&gs, &ng, sizeof(*gs)))
				goto nomem;
			cur = &gs[ng++];
			memset(cur, 0, sizeof(*cur));
			if (parse_guest(optarg, cur))
				goto out;
			break;
		case O_GUEST_PID:
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (!cur || errno || *end || v <= 0) {
				fprintf(stderr,
					"hgtrace: record: --guest-pid '%s': a PID, after -A\n",
					optarg);
				goto out;
			}
			cur->g.pid = (int)v;
			break;
		case O_INTERVAL:
			if (cmd_num_arg("record", "--sync-interval", optarg, 1, 3600000,
					"1 to 3600000 ms", &v))
				goto out;
			interval = (unsigned long)v;
			break;
		case O_FLUSH: {
			int ms;

			if (cmd_int_arg("record", "--flush-ms", optarg, 10, 3600000, &ms))
				goto out;
			o.flush_ms = (unsigned int)ms;
			break;
		}
		case O_FSYNC:
			o.sync = true;
			break;
		case 'b':
			if (cmd_num_arg("record", "-b", optarg, 1, INT_MAX, "KB > 0", &v))
				goto out;
			*(cur ? &cur->ro.buffer_kb : &o.buffer_kb) = (size_t)v;
			break;
		case 'B':
			o.instance = optarg;
			break;
		case 'o':
			o.output = optarg;
			break;
		case 'P':
			if (cmd_num_arg("record", "-P", optarg, 1, INT_MAX, "a PID", &v))
				goto out;
			if (push(&pids, &npid, sizeof(*pids)))
				goto nomem;
			pids[npid++] = (int)v;
			break;
		case 'M':
			o.cpumask = optarg;
			break;
		case 'Z':
			if (cmd_compression("record", optarg, &o.compression))
				goto out;
			break;
		case CMD_OPT_EXIT:
			ret = rc;
			goto out;
		}
	}
	if (!nev) {
		fprintf(stderr, "hgtrace: record: no events given (-e SYSTEM[:EVENT])\n");
		goto out;
	}
	o.events = events;
	o.nr_events = nev;
	o.pids = pids;
	o.nr_pids = npid;
	/* before any recording starts, -A or not: a stop request ends it with its files
	 * written (and overrides SIGINT ignored in a script's background job) */
	/* a closed terminal or pipe must not kill the recorder while it writes the file */
	cmd_catch_stop(&session_stop);
	if (ng) {
		ret = run_session(&o, gs, ng, (unsigned int)interval, kvm_debugfs,
				  optind < argc ? argv + optind : NULL);
		goto out;
	}
	rec = hgt_record_start(&o);
	if (!rec) {
		cmd_error("record failed");
		ret = 1;
		goto out;
	}
	/* the workload as record -A runs it (child.c): none of the recorder's files (its
	 * trace_pipe_raw fds held the instance after a crash), default signal dispositions;
	 * its end, or a signal, stops the recording */
	cmd_child_watch(&session_stop);
	if (optind < argc)
		cmd_child_spawn(argv + optind, "record");
	else
		fprintf(stderr,
			"hgtrace: record: recording; Ctrl-C (SIGINT), SIGTERM or SIGHUP stops\n");
	{
		/* blocked between the test and the wait, so that no signal falls between */
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
	cmd_child_end();
	if (hgt_record_stop(rec, &res)) {
		cmd_error("record failed");
		ret = 1;
	} else {
		ret = 0;
	}
	hgt_record_free(rec);
	goto out;
nomem:
	fprintf(stderr, "hgtrace: record: out of memory\n");
	ret = 1;
out:
	for (int i = 0; i < ng; i++) {
		free(gs[i].events);
		free(gs[i].name);
		free(gs[i].dir);
	}
	free(gs);
	free(events);
	free(pids);
	return ret;
}
