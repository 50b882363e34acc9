// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * hgtrace why: the worst guest delays of a session (wakeup latency, timer lateness, a pair
 * of events), each split by what the host did with that vCPU's thread meanwhile.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/output.h>
#include <hgtrace/why.h>

#include "cmd.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: hgtrace why [OPTIONS] HOST.dat GUEST.dat...\n"
		"  the worst guest delays, each split by what the host did with its vCPU thread\n"
		"  --wakeup             wakeup latency: sched_wakeup -> sched_switch in (default)\n"
		"  --timer              timer lateness: hrtimer_expire_entry now - expiry (default)\n"
		"  --from EV[:FILTER] --to EV[:FILTER]   a pair of events, matched per task\n"
		"  --per-cpu            match the pair per CPU instead\n"
		"  --top N              the worst N (10)\n"
		"  --threshold US       every delay of at least US microseconds\n"
		"  --ts2secs HZ         TSC cycles per second, for x86-tsc traces without TSC2NSEC\n"
		"                       (default: the rate the trace's timer events show)\n"
		"  --host-only          only the delays the host caused most of\n"
		"  --flight             a flight recorder's window (hgtrace flight): the delay its\n"
		"                       trigger marks first, whatever its length\n"
		"  --json               one JSON object instead of the table\n"
		"  -o FILE              write to FILE\n"
		"  --save PREFIX        each delay's window as files PREFIX-K.dat (the host),\n"
		"                       PREFIX-K-GUEST.dat: a pair trace-cmd and hgtrace read\n"
		"  --save-around MS     that much before and after each delay (100)\n");
}

/* microseconds, decimals allowed: "250", "0.5" */
static int parse_us(const char *s, uint64_t *ns)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > 1e12) {
		fprintf(stderr, "hgtrace: why: --threshold '%s': expected microseconds > 0\n", s);
		return -1;
	}
	*ns = (uint64_t)(v * 1000 + 0.5);
	return 0;
}

int cmd_why(int argc, char **argv)
{
	enum {
		O_WAKEUP = 256,
		O_TIMER,
		O_FROM,
		O_TO,
		O_PERCPU,
		O_TOP,
		O_THRESH,
		O_JSON,
		O_HZ,
		O_HOST,
		O_FLIGHT,
		O_SAVE,
		O_AROUND
	};
	static const struct option lopts[] = {
		{ "wakeup", no_argument, NULL, O_WAKEUP },
		{ "timer", no_argument, NULL, O_TIMER },
		{ "from", required_argument, NULL, O_FROM },
		{ "to", required_argument, NULL, O_TO },
		{ "per-cpu", no_argument, NULL, O_PERCPU },
		{ "top", required_argument, NULL, O_TOP },
		{ "threshold", required_argument, NULL, O_THRESH },
		{ "json", no_argument, NULL, O_JSON },
		{ "ts2secs", required_argument, NULL, O_HZ },
		{ "host-only", no_argument, NULL, O_HOST },
		{ "flight", no_argument, NULL, O_FLIGHT },
		{ "save", required_argument, NULL, O_SAVE },
		{ "save-around", required_argument, NULL, O_AROUND },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	HGT_OPTS(hgt_why_opts, wo);
	HGT_OPTS(hgt_why_save_opts, so, .around_ns = 100000000, .log = stderr);
	const char *out = NULL;
	struct hgt_why_result *r;
	struct hgt_newfile *nf;
	bool json = false;
	FILE *f;
	int c, ret, rc;

	optind = 1;
	while ((c = cmd_getopt(argc, argv, "+o:h", lopts, usage, &rc)) != -1) {
		switch (c) {
		case O_WAKEUP:
			wo.kinds |= HGT_WHY_WAKEUP;
			break;
		case O_TIMER:
			wo.kinds |= HGT_WHY_TIMER;
			break;
		case O_FROM:
			wo.from = optarg;
			break;
		case O_TO:
			wo.to = optarg;
			break;
		case O_PERCPU:
			wo.match_cpu = true;
			break;
		case O_TOP:
			if (cmd_int_arg("why", "--top", optarg, 1, 1000000, &wo.top))
				return 2;
			break;
		case O_THRESH:
			if (parse_us(optarg, &wo.threshold_ns))
				return 2;
			break;
		case O_JSON:
			json = true;
			break;
		case O_FLIGHT:
			wo.flight = true;
			break;
		case O_HOST:
			wo.host_only = true;
			break;
		case O_HZ:
			if (cmd_hz_arg("why", optarg, &wo.ts2secs))
				return 2;
			break;
		case O_SAVE:
			so.prefix = optarg;
			break;
		case O_AROUND: {
			int ms;

			if (cmd_int_arg("why", "--save-around", optarg, 0, 3600000, &ms))
				return 2;
			so.around_ns = (uint64_t)ms * 1000000;
			break;
		}
		case 'o':
			out = optarg;
			break;
		case CMD_OPT_EXIT:
			return rc;
		}
	}
	if (!wo.from != !wo.to) {
		fprintf(stderr, "hgtrace: why: --from and --to go together\n");
		return 2;
	}
	if (wo.match_cpu && !wo.from) {
		fprintf(stderr, "hgtrace: why: --per-cpu is for a --from/--to pair\n");
		return 2;
	}
	if (optind >= argc) {
		fprintf(stderr, "hgtrace: why: give the host's and its guests' trace.dat files\n");
		usage(stderr);
		return 2;
	}
	wo.inputs = (const char *const *)(argv + optind);
	wo.nr_inputs = argc - optind;
	r = hgt_why(&wo);
	if (!r) {
		cmd_error(strerror(errno));
		return 1;
	}
	f = cmd_out_open("why", out, &nf);
	if (!f) {
		hgt_why_free(r);
		return 1;
	}
	ret = hgt_why_print(r, f, json);
	if (ret)
		cmd_error("why: write failed");
	rc = cmd_out_close("why", out, f, nf, !ret) ? 1 : 0;
	so.inputs = wo.inputs;
	so.nr_inputs = wo.nr_inputs;
	for (int k = 0; so.prefix && !rc && k < r->nr; k++)
		if (hgt_why_save(r, k, &so)) {
			cmd_error("why: --save");
			rc = 1;
		}
	hgt_why_free(r);
	return rc;
}
