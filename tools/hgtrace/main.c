// SPDX-License-Identifier: GPL-2.0-or-later
/* hgtrace: trace KVM guests together with their host. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hgtrace/output.h>
#include <hgtrace/tracedat.h>

#include <hgtrace/transport.h>

#include "cmd.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
	{ "report", cmd_report, "print trace.dat files, merged by time (as trace-cmd report)" },
	{ "dump", cmd_dump, "show a trace.dat file's structure: header, sections, options, data" },
	{ "record", cmd_record, "record this machine's ftrace into a trace.dat" },
	{ "restore", cmd_restore, "finish a recording that was cut (killed, terminal closed)" },
	{ "reset", cmd_reset, "remove tracefs instances that killed recorders left behind" },
	{ "agent", cmd_agent,
	  "guest: stream ftrace pages to the host (virtio-serial, vsock, TCP)" },
	{ "listen", cmd_listen, "host: receive guest agents, write trace-NAME.dat per guest" },
	{ "setup-guest", cmd_setup_guest, "host: make a guest's FIFOs, print QEMU/libvirt config" },
	{ "attach", cmd_attach, "tie a guest trace to its host trace (vCPU map, TSC relation)" },
	{ "sync-check", cmd_sync_check,
	  "check an attached host + guest: events in their vCPU windows, offsets that fit" },
	{ "simulate", cmd_simulate, "write a deterministic KVM host + guest session" },
	{ "convert", cmd_convert, "rewrite a trace.dat as version 6 or 7, none/zlib/zstd" },
	{ "gen", cmd_gen, "userspace probes: trace-events files -> header, C, dtrace, stp, ust" },
	{ "simpletrace", cmd_simpletrace, "print a simple-backend trace (ours, or QEMU's v4)" },
	{ "ctl", cmd_ctl, "enable/disable a running program's probes over its control socket" },
	{ "export", cmd_export, "write a session for Perfetto / chrome://tracing (JSON)" },
	{ "why", cmd_why, "guest latency explained by the host: the worst delays, split" },
	{ "view", cmd_view, "write a session as one HTML timeline (host, vCPUs, guests)" },
	{ "flight", cmd_flight,
	  "flight recorder on a recording: save the window when a guest is late" },
};

int cmd_push_event(const char ***evs, int *n, const char *ev)
{
	const char **e = realloc(*evs, sizeof(*e) * (size_t)(*n + 1));

	if (!e)
		return -1;
	*evs = e;
	e[(*n)++] = ev;
	return 0;
}

int cmd_compression(const char *cmd, const char *arg, enum hgt_compression *c)
{
	if (!hgt_compression_parse(arg, c))
		return 0;
	fprintf(stderr, "hgtrace: %s: --compression '%s': expected none, zlib, zstd or any\n", cmd,
		arg);
	return -1;
}

int cmd_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
	       void (*usage)(FILE *), int *rc)
{
	int c = getopt_long(argc, argv, shortopts, longopts, NULL);

	if (c == 'h' || c == '?' || c == ':') {
		usage(c == 'h' ? stdout : stderr);
		*rc = c == 'h' ? 0 : 2;
		return CMD_OPT_EXIT;
	}
	return c;
}

int cmd_parse_opts(int argc, char **argv, const char *shortopts, const struct option *longopts,
		   void (*usage)(FILE *), const char *cmd, int (*opt)(int c, char *arg, void *ctx),
		   void *ctx, int *rc)
{
	int c, err;

	optind = 1;
	while ((c = cmd_getopt(argc, argv, shortopts, longopts, usage, rc)) != -1) {
		if (c == CMD_OPT_EXIT)
			return -1;
		err = opt(c, optarg, ctx);
		if (err == -ENOMEM) {
			fprintf(stderr, "hgtrace: %s: out of memory\n", cmd);
			*rc = 1;
			return -1;
		}
		if (err) {
			*rc = 2;
			return -1;
		}
	}
	return 0;
}

int cmd_num_arg(const char *cmd, const char *opt, const char *arg, long long lo, long long hi,
		const char *expect, long long *v)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(arg, &end, 0);
	if (errno || *end || end == arg || n < lo || n > hi) {
		if (expect)
			fprintf(stderr, "hgtrace: %s: %s '%s': expected %s\n", cmd, opt, arg,
				expect);
		else
			fprintf(stderr, "hgtrace: %s: %s '%s': expected %lld to %lld\n", cmd, opt,
				arg, lo, hi);
		return -1;
	}
	*v = n;
	return 0;
}

int cmd_int_arg(const char *cmd, const char *opt, const char *arg, long lo, long hi, int *v)
{
	long long n;

	if (cmd_num_arg(cmd, opt, arg, lo, hi, NULL, &n))
		return -1;
	*v = (int)n;
	return 0;
}

int cmd_uint_arg(const char *what, const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 0);
	if (errno || end == s || *end || *v > max || *s == '-') {
		fprintf(stderr, "hgtrace: %s '%s': expected a number up to %lu\n", what, s, max);
		return -1;
	}
	return 0;
}

int cmd_silent_arg(const char *cmd, const char *s, unsigned int *ms)
{
	char what[64];
	unsigned long v;

	snprintf(what, sizeof(what), "%s: --silent-timeout", cmd);
	if (cmd_uint_arg(what, s, 86400, &v))
		return -1;
	if (v < 10) {
		fprintf(stderr, "hgtrace: %s %lu: at least 10 s (a heartbeat goes every %d s)\n",
			what, v, HGT_AGENT_HEARTBEAT_MS / 1000);
		return -1;
	}
	*ms = (unsigned int)v * 1000;
	return 0;
}

int cmd_split_pair(const char *what, char *s, char **a, char **b)
{
	char *c = strrchr(s, ':');

	if (!c || c == s || !c[1]) {
		fprintf(stderr, "hgtrace: %s '%s': expected A:B\n", what, s);
		return -1;
	}
	*c = 0;
	*a = s;
	*b = c + 1;
	return 0;
}

int cmd_hz_arg(const char *cmd, const char *arg, uint64_t *hz)
{
	char *end;

	errno = 0;
	*hz = strtoull(arg, &end, 10);
	if (errno || *end || end == arg || !*hz || *arg == '-') {
		fprintf(stderr, "hgtrace: %s: --ts2secs '%s': expected Hz > 0\n", cmd, arg);
		return -1;
	}
	return 0;
}

void cmd_error(const char *fallback)
{
	const char *e = hgt_last_error();

	if (!*e)
		e = fallback;
	if (!strncmp(e, "hgtrace: ", 9))
		fprintf(stderr, "%s\n", e);
	else
		fprintf(stderr, "hgtrace: %s\n", e);
}

void cmd_end_if_reader_gone(int ret)
{
	struct sigaction sa;

	/* a command that ignores SIGPIPE (cmd_catch_stop()) takes EPIPE as an error */
	if (ret != -EPIPE || sigaction(SIGPIPE, NULL, &sa) || sa.sa_handler == SIG_IGN)
		return;
	signal(SIGPIPE, SIG_DFL);
	raise(SIGPIPE);
}

/* Standard output flushed at the end of command @cmd, which returned @ret: a write that
 * failed (a full disk) is an error even when the command did not see it (printf()s). */
static int close_stdout(const char *cmd, int ret)
{
	int err;

	errno = 0;
	if (!fflush(stdout) && !ferror(stdout))
		return ret;
	err = errno ? errno : EIO;
	cmd_end_if_reader_gone(-err);
	if (ret)
		return ret; /* said already */
	fprintf(stderr, "hgtrace: %s: write failed: %s\n", cmd, strerror(err));
	return 1;
}

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: hgtrace COMMAND [OPTIONS]\n\ncommands:\n");
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'hgtrace COMMAND -h' or 'man hgtrace-COMMAND' for details.\n");
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("hgtrace %s\n", HGTRACE_VERSION);
		return 0;
	}
	/* A file size limit (ulimit -f) makes a write fail with EFBIG, said in one line like
	 * any other write error, instead of killing the command mid-file. */
	signal(SIGXFSZ, SIG_IGN);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return close_stdout(cmds[i].name, cmds[i].fn(argc - 1, argv + 1));
	fprintf(stderr, "hgtrace: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
