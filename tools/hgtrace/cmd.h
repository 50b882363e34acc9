/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef HGTRACE_CMD_H
#define HGTRACE_CMD_H

int cmd_report(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_sync_check(int argc, char **argv);
int cmd_record(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_listen(int argc, char **argv);
int cmd_setup_guest(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_simpletrace(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_restore(int argc, char **argv);
int cmd_reset(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_why(int argc, char **argv);
int cmd_view(int argc, char **argv);
int cmd_flight(int argc, char **argv);

/* A recording's workload (child.c): cmd_child_watch() makes its end set *@stop;
 * cmd_child_spawn() runs it (a failure to start sets *@stop too); cmd_child_end() ends
 * one still running. */
void cmd_child_watch(volatile int *stop);
void cmd_child_spawn(char **argv, const char *who);
void cmd_child_end(void);

/* SIGINT, SIGTERM and SIGHUP set *@stop (the command ends as it would on its own); SIGPIPE
 * is ignored (a peer that went away is an error return). */
void cmd_catch_stop(volatile int *stop);

/* Append @ev to the list *@evs of *@n (usage: -e). Returns 0 or -1 (out of memory). */
int cmd_push_event(const char ***evs, int *n, const char *ev);

/* --compression ARG of command @cmd into *@c; on a bad name, one error line and -1. */
enum hgt_compression;
int cmd_compression(const char *cmd, const char *arg, enum hgt_compression *c);

/* getopt_long() with the answers every command gives: -h/--help prints @usage on stdout
 * (*@rc 0), an unknown option or a missing argument prints it on stderr (*@rc 2); both
 * return CMD_OPT_EXIT, for the command to return *@rc. Otherwise the option, or -1. */
#define CMD_OPT_EXIT (-2)
struct option;
int cmd_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
	       void (*usage)(FILE *), int *rc);

/* Every option of argv through cmd_getopt(), each handed to @opt with @ctx (it returns 0,
 * -ENOMEM, or another value once it said what was wrong). Returns 0 with optind at the
 * first operand, or -1 for the command to return *@rc: 0 after -h, 1 out of memory
 * ("hgtrace: @cmd: out of memory" said), 2 for a usage error. */
int cmd_parse_opts(int argc, char **argv, const char *shortopts, const struct option *longopts,
		   void (*usage)(FILE *), const char *cmd, int (*opt)(int c, char *arg, void *ctx),
		   void *ctx, int *rc);

/* Option @opt's ARG @arg of command @cmd as an integer in [@lo, @hi] (decimal, 0x hex or
 * 0 octal) into *@v; otherwise one error line, "hgtrace: CMD: OPT 'ARG': expected
 * @expect" (NULL: "LO to HI"), and -1. */
int cmd_num_arg(const char *cmd, const char *opt, const char *arg, long long lo, long long hi,
		const char *expect, long long *v);
/* cmd_num_arg() into an int. */
int cmd_int_arg(const char *cmd, const char *opt, const char *arg, long lo, long hi, int *v);

/* @s as a number up to @max into *@v; otherwise one error line naming @what ("listen:
 * -b") and -1. */
int cmd_uint_arg(const char *what, const char *s, unsigned long max, unsigned long *v);

/* --silent-timeout S of @cmd (agent, listen) in ms: at least 10 s (a heartbeat goes every
 * HGT_AGENT_HEARTBEAT_MS); otherwise one error line and -1. */
int cmd_silent_arg(const char *cmd, const char *s, unsigned int *ms);

/* "A:B" split at its last colon (in place); otherwise one error line naming @what and -1. */
int cmd_split_pair(const char *what, char *s, char **a, char **b);

/* --ts2secs HZ of command @cmd (why, view, export): 0, or -1 after one error line. */
#include <stdint.h>
int cmd_hz_arg(const char *cmd, const char *arg, uint64_t *hz);

/* -o PATH of command @cmd ("-" or NULL: stdout): a stream to write, backed by a new file
 * that replaces PATH only at cmd_out_close() with @ok (hgt_newfile_open()). NULL after one
 * error line. cmd_out_close() returns 0, or -1 after one error line (PATH unchanged). */
#include <stdbool.h>
#include <stdio.h>
struct hgt_newfile;
FILE *cmd_out_open(const char *cmd, const char *path, struct hgt_newfile **nf);
int cmd_out_close(const char *cmd, const char *path, FILE *f, struct hgt_newfile *nf, bool ok);

/* Print "hgtrace: MESSAGE" for the library's last error, or @fallback. */
void cmd_error(const char *fallback);
/* A command's standard output whose reader went away (@ret is -EPIPE: `hgtrace report | head`)
 * ends it as SIGPIPE ends a program that writes it alone, with no message (its writes may
 * have run in a library thread, where signals are blocked); otherwise, or when the command
 * ignores SIGPIPE, it returns. */
void cmd_end_if_reader_gone(int ret);

/* The flight recorder's options (cmd-flight.c), shared by record --flight and flight. */
#include <stdbool.h>

#include <hgtrace/flight.h>
enum {
	CMD_O_WINDOW = 0x1000,
	CMD_O_AFTER,
	CMD_O_TICK,
	CMD_O_HOLDOFF,
	CMD_O_MAXTRIG,
	CMD_O_PREFIX,
	CMD_O_TRIGGER,
	CMD_O_FLUSH, /* flight's alone: record has --flush-ms */
	CMD_O_SEARCHMAX,
};
#define CMD_FLIGHT_LONGOPTS                                                    \
	{ "window", required_argument, NULL, CMD_O_WINDOW },                   \
		{ "after", required_argument, NULL, CMD_O_AFTER },             \
		{ "tick", required_argument, NULL, CMD_O_TICK },               \
		{ "holdoff", required_argument, NULL, CMD_O_HOLDOFF },         \
		{ "max-triggers", required_argument, NULL, CMD_O_MAXTRIG },    \
		{ "flight-prefix", required_argument, NULL, CMD_O_PREFIX },    \
		{ "search-max-mb", required_argument, NULL, CMD_O_SEARCHMAX }, \
	{                                                                      \
		"trigger", required_argument, NULL, CMD_O_TRIGGER              \
	}
struct cmd_flight_args {
	struct hgt_flight_opts o;
	const char **triggers;
	int nt;
	bool holdoff_set;
};
/* After the options of @cmd: the defaults that depend on others (--holdoff: --after), and
 * the options checked together when there are triggers: 0, or 2 (said). */
int cmd_flight_defaults(const char *cmd, struct cmd_flight_args *a);
/* A flight option @c of @cmd into @a: 0, 1 (said), -ENOMEM, or -ENOENT (not one). */
int cmd_flight_opt(const char *cmd, int c, const char *arg, struct cmd_flight_args *a);
/* SIGUSR1 triggers @f by hand (NULL: ignored again). */
void cmd_flight_signal(struct hgt_flight *f);
/* SIGUSR1 triggers @f too (@on), or no longer: 0, or -ENOSPC (64 at most). */
int cmd_flight_signal_also(struct hgt_flight *f, bool on);

#endif
