// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * hgtrace record -A: the host's recording and its guests' in one session. The host
 * records with the recorder; each guest's agent --serve gets the guest's settings, start
 * and stop over its channel (the listener's loop), and the clocks are synchronised over
 * that channel while both record. At the end the guest files carry their TIME_SHIFT (from
 * the listener) and the host file a GUEST option per guest naming its vCPU threads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/infer.h>
#include <hgtrace/merge.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/session.h>
#include <hgtrace/sync.h>
#include <hgtrace/tracedat.h>
#include <hgtrace/transport.h>

#include "../clock/kvm-local.h"
#include "../record/record-local.h"
#include "../common/common-local.h"
#include "../private/vmm.h"
#include "tchost.h"

struct sguest {
	const struct hgt_session_guest *in;
	struct hgt_record_opts ro;
	struct hgt_vcpu_threads vt;
	bool have_vt;
	/* what the listener said at its end */
	bool done;
	char path[4096];
	char fault[256];
	char sync[200];
	bool sync_failed;
	uint64_t trace_id, bytes, samples, best_rtt, bound, agent_cpu_ns, agent_wall_ns;
	uint64_t early_id; /* its TRACEID as its description ended (0: not yet) */
	uint64_t agent_setup_cpu_ns;
	uint64_t recording_ts; /* its trace clock when its tracing went on (0: unknown) */
	bool ended_after_stop;
	uint32_t rounds;
	int nr_cpus;
	uint64_t *cpu_bytes;
	char clock[64];
	/* KVM: the VM's relations at the start (exact sync) */
	struct hgt_kvm_vm kvm;
	bool have_kvm;
	char kvm_said[300];    /* what the exact sync did, for the summary */
	char refine_said[300]; /* what the refinement by the trace did */
	/* the containment check of the merged files */
	bool checked;
	enum hgt_sync_verdict verdict;
	struct hgt_sync_stats st;
	uint64_t *cpu_out;
	/* a VMM whose threads have no names: all its threads, mapped from kvm_entry */
	int *tids;
	int nr_tids;
	bool from_entry;
	struct hgt__tchost *tc; /* its trace-cmd agent, while it records */
	char *tc_out;		/* and the file it will be written to */
};

struct session {
	const struct hgt_session_opts *o;
	struct sguest *g;
	int n;
	const char *clock; /* the host's trace clock */
	uint64_t cmd_t[2]; /* the command's start and end, in it (when readable) */
	bool cmd_have[2];
	bool stopping_called, received_called;
	uint64_t raw_ns[2];	  /* CLOCK_MONOTONIC_RAW read with each */
	struct hgt_recorder *rec; /* the host's */
};

static uint64_t mono_raw_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* What a file's events span: in host time where its TIME_SHIFT maps it; and when its
 * tracing went on (rec_ts, its own clock), in the same time. */
struct span {
	bool any, host_time;
	uint64_t first, last;
	uint64_t rec_ts, rec;
};

static void logf_(struct session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct session *s, const char *fmt, ...)
{
	va_list ap;

	if (!s->o->log)
		return;
	va_start(ap, fmt);
	fputs("hgtrace record: ", s->o->log);
	vfprintf(s->o->log, fmt, ap);
	fputc('\n', s->o->log);
	va_end(ap);
	fflush(s->o->log);
}

static void on_started(void *ctx)
{
	struct session *s = ctx;

	s->cmd_have[0] = !hgt__sync_clock_read(s->clock, &s->cmd_t[0]);
	s->raw_ns[0] = mono_raw_ns();
	if (s->o->started)
		s->o->started(s->o->ctx);
}

/*
 * A guest's trace id, as its description ended: the GUEST options of every guest whose
 * vCPU threads are known go into the host's recording directory, so that a restore after
 * a kill maps them as the normal end does (which appends them itself: map_guests()).
 */
static void on_guest_id(void *ctx, const char *name, uint64_t trace_id)
{
	struct session *s = ctx;
	struct hgt_option_blob ob[16];
	int n = 0;

	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->g[i].in->name, name))
			s->g[i].early_id = trace_id;
	for (int i = 0; i < s->n && n < 16; i++) {
		struct sguest *g = &s->g[i];
		uint8_t *buf;
		uint32_t len;

		if (!g->early_id || !g->have_vt || !g->vt.nr ||
		    hgt_guest_option_build(g->in->name, g->early_id, g->vt.nr, g->vt.vcpu,
					   g->vt.tid, &buf, &len))
			continue;
		ob[n++] = (struct hgt_option_blob){ HGT_OPT_GUEST, len, buf };
	}
	if (n && s->rec && hgt__record_put_options(s->rec, ob, n))
		logf_(s, "guest %s: its vCPU map cannot be saved for a restore: %s", name,
		      hgt_last_error());
	for (int i = 0; i < n; i++)
		free((void *)ob[i].data);
}

static void on_stopping(void *ctx)
{
	struct session *s = ctx;

	if (s->o->stopping && !s->stopping_called) {
		s->stopping_called = true;
		s->o->stopping(s->o->ctx);
	}
	s->cmd_have[1] = !hgt__sync_clock_read(s->clock, &s->cmd_t[1]);
	s->raw_ns[1] = mono_raw_ns();
}

/* Every guest's last page taken (the trace-cmd agents' too) and the host's tracing halted,
 * no file written yet: the caller's received (a flight recorder's last search). */
static void on_received(void *ctx)
{
	struct session *s = ctx;

	if (!s->o->received || s->received_called)
		return;
	s->received_called = true;
	for (int i = 0; i < s->n; i++)
		if (s->g[i].tc)
			hgt__tchost_halt(s->g[i].tc);
	if (s->rec && hgt_record_halt(s->rec))
		logf_(s, "the host's recording: %s", hgt_last_error());
	s->o->received(s->o->ctx);
}

static void on_guest_done(void *ctx, const struct hgt_listen_result *r)
{
	struct session *s = ctx;
	struct sguest *g = NULL;

	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->g[i].in->name, r->name))
			g = &s->g[i];
	if (!g)
		return;
	g->done = true;
	snprintf(g->path, sizeof(g->path), "%s", r->path ? r->path : "");
	snprintf(g->fault, sizeof(g->fault), "%s", r->fault ? r->fault : "");
	snprintf(g->sync, sizeof(g->sync), "%s", r->sync ? r->sync : "none");
	snprintf(g->clock, sizeof(g->clock), "%s", r->clock ? r->clock : "?");
	g->sync_failed = r->sync_failed;
	g->trace_id = r->trace_id;
	g->bytes = r->bytes;
	g->samples = r->samples;
	g->rounds = r->rounds;
	g->best_rtt = r->best_rtt;
	g->bound = r->bound;
	g->agent_cpu_ns = r->agent_cpu_ns;
	g->agent_wall_ns = r->agent_wall_ns;
	g->agent_setup_cpu_ns = r->agent_setup_cpu_ns;
	g->recording_ts = r->recording_ts;
	g->ended_after_stop = r->ended_after_stop;
	g->nr_cpus = r->nr_cpus;
	free(g->cpu_bytes);
	g->cpu_bytes = r->nr_cpus ? calloc((size_t)r->nr_cpus, 8) : NULL;
	if (g->cpu_bytes)
		memcpy(g->cpu_bytes, r->cpu_bytes, 8 * (size_t)r->nr_cpus);
}

/* BASE of BASE-NAME.dat: the host file's path without its ".dat". */
static char *guest_base(const char *host)
{
	size_t n = strlen(host);
	char *b = strdup(host);

	if (b && n > 4 && !strcmp(host + n - 4, ".dat"))
		b[n - 4] = 0;
	return b;
}

/* Events and losses per CPU of a written file, for the summary. */
static void print_file(struct session *s, const char *what, const char *path,
		       const uint64_t *cpu_bytes, int nr_bytes, struct span *sp)
{
	HGT_OPTS(hgt_open_opts, op, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	struct hgt_input *in = hgt_input_open(path, &op);
	const struct hgt_time_shift *tsh;
	FILE *f = s->o->log;
	struct hgt_clock clk;
	int top;

	if (!f)
		return;
	if (!in) {
		fprintf(f, "  %-14s %s: cannot be read: %s\n", what, path, hgt_last_error());
		return;
	}
	top = hgt_input_top_buffer(in);
	fprintf(f, "  %-14s %s\n", what, path);
	tsh = hgt_input_time_shift(in);
	sp->host_time = tsh && tsh->nr_cpus > 0;
	if (sp->host_time) {
		hgt_clock_init(&clk, in, NULL);
		if (sp->rec_ts)
			sp->rec = hgt_clock_guest_to_host(&clk, sp->rec_ts, 0);
	}
	for (int c = 0; top >= 0 && c < hgt_input_nr_cpus(in); c++) {
		struct hgt_cursor *cu = hgt_cursor_open(in, top, c);
		struct tep_record rec;
		struct hgt_loss l = { 0 };
		uint64_t ev = 0;

		if (!cu)
			continue;
		while (hgt_cursor_next(cu, &rec) > 0) {
			uint64_t ts =
				sp->host_time ? hgt_clock_guest_to_host(&clk, rec.ts, c) : rec.ts;

			if (!sp->any || ts < sp->first)
				sp->first = ts;
			if (!sp->any || ts > sp->last)
				sp->last = ts;
			sp->any = true;
			ev++;
		}
		hgt_cursor_loss(cu, &l);
		hgt_cursor_close(cu);
		fprintf(f, "    cpu%-3d %10llu events %12llu bytes  lost: %llu on %llu pages%s\n",
			c, (unsigned long long)ev,
			(unsigned long long)(cpu_bytes && c < nr_bytes
						     ? cpu_bytes[c]
						     : hgt_input_cpu_uncompressed_size(in, top, c)),
			(unsigned long long)l.events_lost, (unsigned long long)l.pages_with_loss,
			l.pages_unknown_count ? " (some counts unknown)" : "");
	}
	hgt_input_close(in);
}

/* The agent's CPU in the guest: over its recording, per MB of pages it traced (issue 24's
 * measure: 2 ms a MB at most), and its setting up. */
static void print_agent_cost(FILE *f, const struct sguest *g)
{
	uint64_t pages = 0;

	for (int c = 0; g->cpu_bytes && c < g->nr_cpus; c++)
		pages += g->cpu_bytes[c];
	fprintf(f,
		"    agent: %.1f ms of CPU in %.3f s of recording: %.3f%% of one guest CPU (%.3f%% of its %d); %.1f ms to set up and describe\n",
		(double)g->agent_cpu_ns / 1e6, (double)g->agent_wall_ns / 1e9,
		100.0 * (double)g->agent_cpu_ns / (double)g->agent_wall_ns,
		100.0 * (double)g->agent_cpu_ns / (double)g->agent_wall_ns /
			(g->nr_cpus ? g->nr_cpus : 1),
		g->nr_cpus, (double)g->agent_setup_cpu_ns / 1e6);
	if (pages)
		fprintf(f, "    agent: %.3f ms of CPU per MB traced (%.3f MB of pages)\n",
			(double)g->agent_cpu_ns / 1e6 / ((double)pages / 1e6), (double)pages / 1e6);
}

/* @t in the host clock's units as seconds: x86-tsc at the rate measured over the command
 * against CLOCK_MONOTONIC_RAW (the kernel's TSC2NSEC is not always given). */
static double clock_secs(const struct session *s, int64_t t)
{
	if (strcmp(s->clock, "x86-tsc"))
		return (double)t / 1e9;
	return (double)t * (double)(s->raw_ns[1] - s->raw_ns[0]) /
	       (double)(s->cmd_t[1] - s->cmd_t[0]) / 1e9;
}

/* How much of the command's span the guest recorded: from its tracing's start (its
 * RECORDING, else its first event) to its stop (the host's stop, after the command's end,
 * when it ended on it; else its last event). */
static void cmd_share(struct session *s, struct sguest *g, const struct span *sp)
{
	FILE *f = s->o->log;
	uint64_t a = s->cmd_t[0], b = s->cmd_t[1], lo, hi, from, to;
	double share;

	if (!s->cmd_have[0] || !s->cmd_have[1] || b <= a || s->raw_ns[1] <= s->raw_ns[0] ||
	    (!sp->any && !sp->rec))
		return;
	if (!sp->host_time) {
		fprintf(f, "    command's span: not known in the guest's time (not synced)\n");
		return;
	}
	from = sp->rec ? sp->rec : sp->first;
	to = g->ended_after_stop ? b : sp->last;
	lo = from > a ? from : a;
	hi = to < b ? to : b;
	share = hi > lo ? (double)(hi - lo) / (double)(b - a) : 0;
	fprintf(f,
		"    command's span: %.1f%% of its %.3f s recorded (tracing on %.6f s before its start, %s)\n",
		100 * share, clock_secs(s, (int64_t)(b - a)), clock_secs(s, (int64_t)(a - from)),
		g->ended_after_stop ? "stopped after its end" : "stream ended early");
	if (share < 1)
		fprintf(f,
			"hgtrace record: WARNING: guest %s recorded %.1f%% of the command's span: %.3f s of it are missing\n",
			g->in->name, 100 * share,
			clock_secs(s, (int64_t)((b - a) - (hi > lo ? hi - lo : 0))));
}

static void summary(struct session *s, const char *host_path, const char *clock,
		    const struct hgt_record_result *hr)
{
	FILE *f = s->o->log;

	if (!f)
		return;
	fprintf(f, "hgtrace record: session summary (clock %s)\n", clock);
	print_file(s, "host", host_path, NULL, 0, &(struct span){ 0 });
	if (hr && hr->lost)
		fprintf(f, "    host ring buffers overran: %llu events lost (a larger -b)\n",
			(unsigned long long)hr->lost);
	for (int i = 0; i < s->n; i++) {
		struct sguest *g = &s->g[i];
		struct span sp = { .rec_ts = g->recording_ts };
		char what[96];

		snprintf(what, sizeof(what), "guest %s", g->in->name);
		if (!g->path[0]) {
			fprintf(f, "  %-14s no file%s%s\n", what, g->fault[0] ? ": " : "",
				g->fault);
			continue;
		}
		print_file(s, what, g->path, g->cpu_bytes, g->nr_cpus, &sp);
		cmd_share(s, g, &sp);
		if (g->fault[0])
			fprintf(f, "    transport: stream ended early: %s\n", g->fault);
		if (g->kvm_said[0])
			fprintf(f, "    sync: %s\n", g->kvm_said);
		if (g->refine_said[0])
			fprintf(f, "    sync: %s\n", g->refine_said);
		if (g->samples && !g->sync_failed)
			fprintf(f,
				"    sync: %s, clock %s: %llu samples in %u rounds, best round trip %llu, bound +-%llu (%s units)\n",
				g->sync, g->clock, (unsigned long long)g->samples, g->rounds,
				(unsigned long long)g->best_rtt, (unsigned long long)g->bound,
				g->clock);
		else
			fprintf(f, "    sync: %s%s\n",
				g->sync_failed ? "FAILED, not applied: " : "", g->sync);
		if (g->agent_wall_ns)
			print_agent_cost(f, g);
		if (g->have_vt)
			fprintf(f, "    vCPU threads of process %d: %d%s\n", g->vt.pid, g->vt.nr,
				g->from_entry ? " (by their kvm_entry)" : "");
		if (g->checked) {
			fprintf(f,
				"    containment: %llu guest events inside their vCPU thread's windows, %llu outside, %llu unchecked: %s\n",
				(unsigned long long)g->st.inside, (unsigned long long)g->st.outside,
				(unsigned long long)g->st.unchecked,
				hgt_sync_verdict_name(g->verdict));
			if (g->verdict == HGT_SYNC_NOT_SYNCED)
				fprintf(f,
					"hgtrace record: WARNING: guest %s: NOT SYNCED: its events cannot be placed in the host's time\n",
					g->in->name);
			/* a handful outside is a lost host record; more is a wrong sync */
			for (int c = 0; g->cpu_out && c < g->nr_cpus; c++)
				if (g->cpu_out[c] > 5)
					fprintf(f,
						"hgtrace record: WARNING: guest %s, vCPU %d: %llu events outside its thread's windows: the sync is wrong there\n",
						g->in->name, c, (unsigned long long)g->cpu_out[c]);
		}
	}
}

/* The sync check of the session's own files, merged as report merges them: per guest,
 * its events inside and outside their vCPU thread's windows (widened by its bound), and the
 * verdict report prints. */
static void containment(struct session *s, const char *host_path)
{
	HGT_OPTS(hgt_open_opts, op, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	struct hgt_input **in = calloc((size_t)s->n + 1, sizeof(*in));
	int *gi = calloc((size_t)s->n + 1, sizeof(*gi));
	struct hgt_sync_check *sc = NULL;
	int n = 0, i;

	if (!in || !gi)
		goto out;
	in[n] = hgt_input_open(host_path, &op);
	gi[n++] = -1;
	for (i = 0; in[0] && i < s->n; i++) {
		if (!s->g[i].path[0])
			continue;
		in[n] = hgt_input_open(s->g[i].path, &op);
		if (in[n])
			gi[n++] = i;
	}
	if (!in[0] || n < 2)
		goto out;
	sc = hgt_sync_check_inputs(in, n);
	for (i = 1; sc && i < n; i++) {
		struct sguest *g = &s->g[gi[i]];

		if (hgt_sync_check_stats(sc, i, &g->st))
			continue;
		g->verdict = hgt_sync_check_verdict(sc, i);
		g->checked = true;
		if (!g->st.mapped)
			continue;
		g->cpu_out = calloc((size_t)(g->nr_cpus > 0 ? g->nr_cpus : 1), 8);
		for (int c = 0; g->cpu_out && c < g->nr_cpus; c++)
			g->cpu_out[c] = hgt_sync_check_cpu_outside(sc, i, c);
	}
out:
	hgt_sync_check_free(sc);
	for (i = 0; in && i < n; i++)
		hgt_input_close(in[i]);
	free(in);
	free(gi);
}

/* vCPU threads without names: each of the VMM's threads that entered the guest, with the
 * vcpu_id of its kvm_entry (the host recorded kvm:kvm_entry for it). */
static void map_from_kvm_entry(struct session *s, struct sguest *g, const char *host_path)
{
	HGT_OPTS(hgt_open_opts, op, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	struct hgt_input *host = hgt_input_open(host_path, &op);
	struct hgt_vcpu_threads vt;
	int pid = g->vt.pid;

	if (host && !hgt__vcpus_from_kvm_entry(host, g->tids, g->nr_tids, &vt) && vt.nr) {
		hgt_vcpu_threads_free(&g->vt);
		g->vt = vt;
		g->vt.pid = pid;
		g->from_entry = true;
		logf_(s, "guest %s: %d vCPU threads of process %d found by their kvm_entry",
		      g->in->name, vt.nr, pid);
	}
	hgt_input_close(host);
}

/* TSC2NSEC into the host file and every guest file, so both print in ns: perf's mult/shift,
 * else the rate measured against CLOCK_MONOTONIC_RAW over the session (from @t0). Never a
 * mult 0. @said gets what was done. */
static void tsc2nsec(struct session *s, const char *host_path, const char *clock,
		     const struct hgt_tsc_sample *t0, char *said, size_t n)
{
	uint32_t mult = 0, shift = 0;
	uint8_t p[16] = { 0 };
	struct hgt_option_blob ob = { HGT_OPT_TSC2NSEC, 16, p };
	struct hgt_tsc_sample t1;
	char how[160] = "the kernel's (perf)";
	double ppm = 0;
	int ret;

	if (strcmp(clock, "x86-tsc")) {
		said[0] = 0;
		return;
	}
	if (hgt_tsc2nsec_read(&mult, &shift) || !mult) {
		char why[160];

		snprintf(why, sizeof(why), "%s", hgt_last_error());
		if (!t0->tsc || hgt_tsc_sample_read(&t1) ||
		    hgt_tsc2nsec_measure(t0, &t1, &mult, &shift, &ppm)) {
			snprintf(
				said, n,
				"times in x86-tsc cycles, host and guests alike (no TSC2NSEC: %s; %s)",
				why, hgt_last_error());
			return;
		}
		snprintf(how, sizeof(how),
			 "measured against CLOCK_MONOTONIC_RAW over %.3f s, +-%.2f ppm (%.0f Hz)",
			 (double)(t1.ns - t0->ns) / 1e9, ppm,
			 1e9 * (double)(t1.tsc - t0->tsc) / (double)(t1.ns - t0->ns));
	}
	memcpy(p, &mult, 4);
	memcpy(p + 4, &shift, 4);
	ret = hgt_tracedat_append_options(host_path, &ob, 1);
	for (int i = 0; !ret && i < s->n; i++)
		if (s->g[i].path[0])
			ret = hgt_tracedat_append_options(s->g[i].path, &ob, 1);
	if (ret)
		snprintf(said, n, "TSC2NSEC not stored: %s", hgt_last_error());
	else
		snprintf(said, n, "times in ns: TSC2NSEC mult %u shift %u in every file, %s", mult,
			 shift, how);
}

/* GUEST options into the host file: each guest's trace id and vCPU threads. */
static int map_guests(struct session *s, const char *host_path)
{
	int ret = 0;

	for (int i = 0; i < s->n && !ret; i++) {
		struct sguest *g = &s->g[i];

		if (!g->path[0] || !g->trace_id)
			continue;
		if (!g->have_vt || !g->vt.nr) {
			logf_(s,
			      "guest %s: WARNING: its vCPU threads are unknown (no VMM process found, or QEMU without -name %s,debug-threads=on): merged by its sync samples alone, no sync check",
			      g->in->name, g->in->name);
			continue;
		}
		ret = hgt__guest_map_append(host_path, g->in->name, g->trace_id, &g->vt);
	}
	return ret;
}

static bool kvm_event_exists(const char *name)
{
	static const char *dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char p[128];

		snprintf(p, sizeof(p), "%s/events/kvm/%s/format", dirs[i], name);
		if (!access(p, R_OK))
			return true;
	}
	return false;
}

/* The channel's samples refined by the vCPU threads' windows in the host's file: the
 * tightest sync both allow, or a warning naming each vCPU where they disagree. */
static void refine(struct session *s, struct sguest *g, const char *host_path)
{
	struct hgt_refine_result r;
	int ret = hgt_sync_refine(host_path, g->path, NULL, &r);

	if (ret == -EALREADY || (ret && !g->samples)) {
		hgt_refine_result_free(&r);
		return; /* exact (KVM debugfs), or nothing to refine */
	}
	if (ret)
		snprintf(g->refine_said, sizeof(g->refine_said), "not refined: %s",
			 hgt_last_error());
	else
		hgt_refine_summary(&r, g->refine_said, sizeof(g->refine_said));
	for (int c = 0; !ret && c < r.nr_cpus; c++) {
		char line[400];

		hgt_refine_disagreement(&r, c, line, sizeof(line));
		if (*line)
			logf_(s, "%sguest %s, %s",
			      r.cpus[c].status == HGT_REFINE_DISAGREE ? "WARNING: " : "",
			      g->in->name, line);
	}
	hgt_refine_result_free(&r);
}

/* The exact sync of a KVM guest: its relations read at the start, every change the host
 * recorded (kvm_write_tsc_offset), checked against debugfs at the stop; appended to its
 * file as a step TIME_SHIFT (it wins over the channel's), with a CPUSTAT line comparing
 * the channel's samples with it. */
static void kvm_sync(struct session *s, struct sguest *g, const char *host_path, const char *clock,
		     uint64_t t_start, uint64_t host_id)
{
	HGT_OPTS(hgt_open_opts, op, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	struct hgt_input *host = NULL, *guest = NULL;
	struct hgt__tsc_write *w = NULL;
	struct hgt_time_shift_cpu *tc = NULL;
	struct hgt_kvm_vm end = { 0 };
	int64_t *vals = NULL, worst = -1;
	int nw = 0, per, ncpu = g->nr_cpus, changed = 0, ret;
	uint8_t *buf = NULL;
	uint32_t len;
	char line[400];

	if (strcmp(clock, "x86-tsc")) {
		snprintf(g->kvm_said, sizeof(g->kvm_said),
			 "kvm debugfs: not used: the host records with %s, not x86-tsc", clock);
		return;
	}
	if (ncpu > g->kvm.nr) {
		snprintf(g->kvm_said, sizeof(g->kvm_said),
			 "kvm debugfs: not used: %d guest CPUs, %d vCPUs in %s", ncpu, g->kvm.nr,
			 g->kvm.dir);
		return;
	}
	host = hgt_input_open(host_path, &op);
	ret = host ? hgt__tsc_writes(host, &w, &nw) : -errno;
	per = nw + 1;
	tc = calloc((size_t)ncpu, sizeof(*tc));
	vals = calloc((size_t)ncpu * (size_t)per * 4, sizeof(int64_t));
	if (ret || !tc || !vals) {
		snprintf(g->kvm_said, sizeof(g->kvm_said), "kvm debugfs: FAILED: %s",
			 ret ? hgt_last_error() : "out of memory");
		goto out;
	}
	/* debugfs at the stop: a change no event recorded makes the samples wrong after it */
	if (!hgt_kvm_read(s->o->kvm_debugfs, g->kvm.pid, &end))
		for (int i = 0; i < ncpu && i < end.nr; i++) {
			int64_t last = g->kvm.vcpus[i].tsc_offset;

			for (int k = 0; k < nw; k++)
				if ((int)w[k].vcpu == g->kvm.vcpus[i].id)
					last = w[k].next;
			if (end.vcpus[i].tsc_offset != last ||
			    end.vcpus[i].ratio != g->kvm.vcpus[i].ratio)
				changed++;
		}
	for (int i = 0; i < ncpu; i++) {
		int64_t *b = vals + (size_t)i * (size_t)per * 4;
		int n = hgt__kvm_samples(&g->kvm.vcpus[i], true, t_start, w, nw, b, b + per,
					 b + 2 * per, b + 3 * per, per);

		tc[i] = (struct hgt_time_shift_cpu){ (uint32_t)(n > 0 ? n : 0), b, b + per,
						     b + 2 * per, b + 3 * per };
	}
	/* the channel's samples against the exact relation (unscaled guests) */
	guest = hgt_input_open(g->path, &op);
	if (guest && hgt_input_time_shift(guest)) {
		const struct hgt_time_shift *ts = hgt_input_time_shift(guest);

		for (int i = 0; i < ts->nr_cpus && i < ncpu; i++) {
			if (g->kvm.vcpus[i].ratio)
				continue;
			for (uint32_t k = 0; k < ts->cpus[i].count; k++) {
				int64_t exact = tc[i].offset[0], d;

				for (uint32_t j = 0; j < tc[i].count; j++)
					if (tc[i].time[j] <= ts->cpus[i].time[k])
						exact = tc[i].offset[j];
				d = ts->cpus[i].offset[k] - exact;
				if (d < 0)
					d = -d;
				if (d > worst)
					worst = d;
			}
		}
	}
	hgt_input_close(guest);
	{
		struct hgt_time_shift ts = { host_id, 0, ncpu, tc };

		ret = hgt_time_shift_option_build(&ts, &buf, &len);
	}
	snprintf(
		line, sizeof(line),
		"hgtrace sync: kvm debugfs %s, exact: %d offset change%s recorded%s; the agent channel's samples %s%lld cycles from it; bound=0\n",
		g->kvm.dir, nw, nw == 1 ? "" : "s",
		changed ? "; CHANGED WITHOUT AN EVENT on some vCPUs (not exact after it)" : "",
		worst >= 0 ? "within " : "not compared: ", (long long)(worst >= 0 ? worst : 0));
	if (!ret) {
		struct hgt_option_blob ob[2] = {
			{ HGT_OPT_TIME_SHIFT, len, buf },
			{ HGT_OPT_CPUSTAT, (uint32_t)strlen(line) + 1, line },
		};

		ret = hgt_tracedat_append_options(g->path, ob, 2);
	}
	line[strlen(line) - 1] = 0;
	if (ret)
		snprintf(g->kvm_said, sizeof(g->kvm_said), "kvm debugfs: FAILED: %s",
			 hgt_last_error());
	else
		snprintf(g->kvm_said, sizeof(g->kvm_said), "%s", line + 14);
out:
	hgt_input_close(host);
	hgt_kvm_vm_free(&end);
	free(w);
	free(tc);
	free(vals);
	free(buf);
}

/* What the host records for its guests beside its own events: the offsets' changes, to
 * the cycle (kvm_write_tsc_offset), and kvm_entry where vCPU threads have no names. Sets
 * @hro's events to the new list, which the caller frees; NULL when out of memory. */
static const char **guest_events_on_host(struct hgt_record_opts *hro, int nr_kvm, int nr_entry)
{
	/* the events, then as many filters (the -f of each; none of the ones added) */
	size_t cap = (size_t)hro->nr_events + 2;
	const char **ev = calloc(2 * cap, sizeof(*ev)), **fl = ev + cap;

	if (!ev)
		return NULL;
	memcpy(ev, hro->events, sizeof(*ev) * (size_t)hro->nr_events);
	if (hro->filters)
		memcpy(fl, hro->filters, sizeof(*fl) * (size_t)hro->nr_events);
	if (nr_kvm && kvm_event_exists("kvm_write_tsc_offset"))
		ev[hro->nr_events++] = "kvm:kvm_write_tsc_offset";
	if (nr_entry && kvm_event_exists("kvm_entry"))
		ev[hro->nr_events++] = "kvm:kvm_entry";
	hro->events = ev;
	hro->filters = fl;
	return ev;
}

/* Where the listener meets the guests: FIFO/port folders, and peers it dials. */
struct endpoints {
	struct hgt_listen_guest *lg;
	const struct hgt_record_opts **lgr; /* each folder's recording options */
	int nfifo;
	struct hgt_listen_peer *peers;
	int npeers;
	int nr_kvm, nr_entry; /* guests synced from KVM's debugfs; mapped from kvm_entry */
	int ntc;	      /* guests whose agent is trace-cmd's (tchost.c) */
};

/* Whether guest @in's agent listens and the host dials it (TCP, vsock, hybrid vsock). */
static bool dialed(const struct hgt_session_guest *in)
{
	return in->transport == HGT_TRANSPORT_TCP || in->transport == HGT_TRANSPORT_VSOCK ||
	       (in->transport == HGT_TRANSPORT_HVSOCK && in->path);
}

/* Guest @i's name is valid and given once. Returns 0 or -EINVAL (error set). */
static int guest_name_ok(const struct session *s, int i)
{
	const struct hgt_session_guest *in = s->g[i].in;

	if (!hgt__valid_name(in->name) || (!in->dir && !dialed(in)))
		return hgt__errorf(EINVAL, "record: -A '%s': a guest name is [A-Za-z0-9_.-]",
				   in->name ? in->name : "");
	for (int k = 0; k < i; k++)
		if (!strcmp(s->g[k].in->name, in->name))
			return hgt__errorf(EINVAL, "record: guest %s given twice", in->name);
	return 0;
}

/* The VMM process of @g (given, or found by its channel and name) and its vCPU threads.
 * Returns its PID, 0 when none was found, or -ENOTUNIQ when two fit. */
static int guest_vmm(struct session *s, struct sguest *g)
{
	char cid[64];
	const char *channel = g->in->dir;
	int pid;

	if (g->in->transport == HGT_TRANSPORT_VSOCK) {
		snprintf(cid, sizeof(cid), "=guest-cid=%u", g->in->cid);
		channel = cid;
	} else if (g->in->transport == HGT_TRANSPORT_HVSOCK) {
		channel = NULL; /* its socket is set through its API, not its command line */
	}
	pid = g->in->pid > 0 ? g->in->pid : hgt_vmm_find(NULL, channel, g->in->name);
	if (pid == -ENOTUNIQ)
		return pid; /* two VMMs fit: taking either could be the wrong one */
	if (pid > 0 && !hgt_vmm_vcpu_threads(NULL, pid, &g->vt)) {
		g->have_vt = true;
		logf_(s, "guest %s: VMM process %d, %d vCPU threads", g->in->name, pid, g->vt.nr);
	} else {
		logf_(s, "guest %s: WARNING: no VMM process found", g->in->name);
	}
	return pid > 0 ? pid : 0;
}

/* Guest @i: its recording options, its VMM, its endpoint, how it will be mapped and
 * synced. Returns 0 or -errno. */
static int setup_guest(struct session *s, int i, const struct hgt_record_opts *hro,
		       struct endpoints *ep)
{
	struct sguest *g = &s->g[i];
	int pid, ret;

	g->in = &s->o->guests[i];
	ret = guest_name_ok(s, i);
	if (ret)
		return ret;
	g->ro = g->in->record ? *g->in->record : *hro;
	g->ro.sz = sizeof(g->ro);
	g->ro.output = NULL;
	if (!g->ro.clock)
		g->ro.clock = hro->clock;
	pid = guest_vmm(s, g);
	if (pid < 0)
		return pid;
	for (int k = 0; !g->in->trace_cmd && g->ro.filters && k < g->ro.nr_events; k++)
		if (g->ro.filters[k])
			return hgt__errorf(
				EINVAL,
				"record: guest %s: -f '%s': hgtrace's agent protocol carries no event filter (a --peer trace-cmd guest's does)",
				g->in->name, g->ro.filters[k]);
	if (g->in->trace_cmd) {
		if (!dialed(g->in))
			return hgt__errorf(
				EINVAL,
				"record: guest %s: a trace-cmd agent is dialed over TCP, vsock or hybrid vsock (NAME@tcp:HOST:PORT, NAME@vsock:CID:PORT, NAME@unix:PATH:PORT)",
				g->in->name);
		ep->ntc++;
	} else if (dialed(g->in)) {
		ep->peers[ep->npeers++] = (struct hgt_listen_peer){ .name = g->in->name,
								    .transport = g->in->transport,
								    .host = g->in->host,
								    .cid = g->in->cid,
								    .port = g->in->port,
								    .record = &g->ro,
								    .path = g->in->path };
	} else {
		ep->lg[ep->nfifo] =
			(struct hgt_listen_guest){ .name = g->in->name, .dir = g->in->dir };
		ep->lgr[ep->nfifo++] = &g->ro;
	}
	/* unnamed vCPU threads: mapped at the end from kvm_entry's vcpu_id */
	if (pid > 0 && g->have_vt && !g->vt.nr) {
		g->nr_tids = hgt__vmm_tids(pid, &g->tids);
		if (g->nr_tids > 0)
			ep->nr_entry++;
	}
	if (pid > 0 && !hgt_kvm_read(s->o->kvm_debugfs, pid, &g->kvm)) {
		g->have_kvm = true;
		ep->nr_kvm++;
		logf_(s, "guest %s: KVM VM %s, %d vCPUs: exact sync", g->in->name, g->kvm.dir,
		      g->kvm.nr);
	}
	return 0;
}

/* Run the guests' side while the host records: the listener, until the command ends or
 * a stop. Returns hgt_listen_run()'s result. */
static int listen_guests(struct session *s, const char *output, const struct endpoints *ep,
			 const char *base)
{
	char dir[4096], *slash;
	HGT_OPTS(hgt_listen_opts, lo, .guests = ep->lg, .nr_guests = ep->nfifo, .start = true,
		 .log = s->o->log, .stop = s->o->stop, .output_base = base,
		 .sync_clock = hgt__sync_clock_readable(s->clock) ? s->clock : NULL,
		 .sync_interval_ms = s->o->sync_interval_ms,
		 .host_trace_id = hgt__record_trace_id(s->rec), .graceful = true,
		 .on_started = on_started, .on_stopping = on_stopping, .on_received = on_received,
		 .on_guest_done = on_guest_done, .on_guest_id = on_guest_id, .ctx = s,
		 .guest_record = ep->lgr, .peers = ep->peers, .nr_peers = ep->npeers);

	/* the listener's temporary files go beside the output */
	snprintf(dir, sizeof(dir), "%s", output);
	slash = strrchr(dir, '/');
	if (slash)
		slash[slash == dir] = 0;
	lo.output_dir = slash ? dir : ".";
	if (!lo.sync_clock)
		logf_(s,
		      "WARNING: clock %s cannot be read from user space: the guests' clocks are not synchronised (use -C x86-tsc or mono)",
		      s->clock);
	return hgt_listen_run(&lo);
}

/* The host's recording is stopped: map, sync, refine, check and sum up the pair of
 * files. Returns 0 or -errno. */
static int finish_files(struct session *s, const char *output, uint64_t t_start,
			const struct hgt_tsc_sample *rate0, const struct hgt_record_result *hr)
{
	char units[300];
	int i, ret;

	for (i = 0; i < s->n; i++)
		if (s->g[i].nr_tids > 0)
			map_from_kvm_entry(s, &s->g[i], output);
	ret = map_guests(s, output);
	if (ret)
		logf_(s, "%s: cannot add the guests' vCPU map: %s", output, hgt_last_error());
	for (i = 0; i < s->n; i++)
		if (s->g[i].have_kvm && s->g[i].path[0])
			kvm_sync(s, &s->g[i], output, s->clock, t_start,
				 hgt__record_trace_id(s->rec));
	for (i = 0; i < s->n; i++)
		if (s->g[i].path[0])
			refine(s, &s->g[i], output);
	tsc2nsec(s, output, s->clock, rate0, units, sizeof(units));
	containment(s, output);
	summary(s, output, s->clock, hr);
	if (units[0])
		logf_(s, "%s", units);
	return ret;
}

static void session_free(struct session *s)
{
	for (int i = 0; s->g && i < s->n; i++) {
		hgt_vcpu_threads_free(&s->g[i].vt);
		hgt_kvm_vm_free(&s->g[i].kvm);
		free(s->g[i].cpu_out);
		free(s->g[i].tids);
		free(s->g[i].cpu_bytes);
		hgt__tchost_free(s->g[i].tc);
		free(s->g[i].tc_out);
	}
	free(s->g);
}

/* The guests whose agent is trace-cmd's: each dialed, asked and recording, in the host's
 * clock. Returns 0, or -EIO when one could not start (said; the others go on). */
static int start_tc_guests(struct session *s, const char *base, const struct endpoints *ep)
{
	int ret = 0;

	for (int i = 0; ep->ntc && i < s->n; i++) {
		struct sguest *g = &s->g[i];
		struct hgt__tchost_opts to;

		if (!g->in->trace_cmd)
			continue;
		if (asprintf(&g->tc_out, "%s-%s.dat", base, g->in->name) < 0) {
			g->tc_out = NULL;
			return -ENOMEM;
		}
		to = (struct hgt__tchost_opts){ .name = g->in->name,
						.transport = g->in->transport,
						.host = g->in->host,
						.cid = g->in->cid,
						.path = g->in->path,
						.port = g->in->port,
						.record = &g->ro,
						.extra = g->in->peer_args,
						.nr_extra = g->in->nr_peer_args,
						.clock = s->clock,
						.output = g->tc_out,
						.host_trace_id = hgt__record_trace_id(s->rec),
						.sync_interval_ms = s->o->sync_interval_ms,
						.log = s->o->log,
						.stop = s->o->stop };
		g->tc = hgt__tchost_start(&to);
		if (!g->tc) {
			logf_(s, "guest %s: %s", g->in->name, hgt_last_error());
			ret = -EIO;
		}
	}
	return ret;
}

/* Each trace-cmd guest stopped and its file written. Returns 0 or -EIO (said). */
static int stop_tc_guests(struct session *s)
{
	int ret = 0;

	for (int i = 0; i < s->n; i++) {
		struct sguest *g = &s->g[i];
		struct hgt_listen_result r;

		if (!g->tc)
			continue;
		if (hgt__tchost_stop(g->tc, &r)) {
			logf_(s, "guest %s: %s", g->in->name, hgt_last_error());
			ret = -EIO;
		}
		on_guest_done(s, &r);
		hgt__tchost_free(g->tc);
		g->tc = NULL;
	}
	return ret;
}

/* No guest for the listener (only trace-cmd's agents): the command starts now, and the
 * session runs until the stop. */
static void run_until_stop(struct session *s)
{
	on_started(s);
	while (!(s->o->stop && *s->o->stop))
		usleep(20000);
	on_stopping(s);
}

/* Record the host, with the listener beside it for the guests, then finish the files. */
static int record_with_guests(struct session *s, struct hgt_record_opts *hro,
			      const struct endpoints *ep, const char *base)
{
	struct hgt_record_result hr = { 0 };
	struct hgt_tsc_sample rate0 = { 0 };
	const char **host_events;
	uint64_t t_start = 0;
	char *clock = NULL;
	int ret, lret = 0, tret;

	host_events = guest_events_on_host(hro, ep->nr_kvm, ep->nr_entry);
	if (!host_events)
		return -ENOMEM;
	hgt_trace_clock_read("x86-tsc", &t_start);
	if (hgt_tsc_sample_read(&rate0))
		rate0.tsc = 0;
	s->rec = hgt_record_start(hro);
	if (!s->rec) {
		ret = -errno;
		goto out;
	}
	clock = strdup(hgt__record_clock(s->rec));
	s->clock = clock ? clock : "";
	tret = start_tc_guests(s, base, ep);
	if (ep->nfifo + ep->npeers) {
		lret = listen_guests(s, hro->output, ep, base);
		if (lret)
			logf_(s, "guests: %s", hgt_last_error());
	} else {
		run_until_stop(s);
	}
	on_received(s); /* unless the listener did (or failed before its stop) */
	if (ep->ntc && stop_tc_guests(s))
		tret = -EIO;
	if (!lret)
		lret = tret;
	ret = hgt_record_stop(s->rec, &hr);
	if (ret)
		goto out;
	ret = finish_files(s, hro->output, t_start, &rate0, &hr);
	if (!ret && lret)
		ret = hgt__errorf(-lret, "record: not every guest's file could be written");
out:
	hgt_record_free(s->rec);
	s->rec = NULL;
	free(host_events);
	free(clock);
	return ret;
}

int hgt_session_run(const struct hgt_session_opts *opts)
{
	HGT_OPTS(hgt_session_opts, o);
	struct session s = { .o = &o };
	struct hgt_record_opts hro;
	struct endpoints ep = { 0 };
	char *base = NULL;
	int i, ret = 0;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(o) || !opts->host ||
	    !opts->host->output || opts->nr_guests < 1)
		return -EINVAL;
	memcpy(&o, opts, opts->sz);
	hro = *o.host;
	/* x86-tsc on both sides unless told otherwise: exact under KVM, 1:1 under TCG, and
	 * readable from user space for the probes */
	if (!hro.clock && hgt_trace_clock_readable("x86-tsc"))
		hro.clock = "x86-tsc";
	s.n = o.nr_guests;
	s.g = calloc((size_t)s.n, sizeof(*s.g));
	ep.lg = calloc((size_t)s.n, sizeof(*ep.lg));
	ep.lgr = calloc((size_t)s.n, sizeof(*ep.lgr));
	ep.peers = calloc((size_t)s.n, sizeof(*ep.peers));
	base = guest_base(hro.output);
	if (!s.g || !ep.lg || !ep.lgr || !ep.peers || !base)
		ret = -ENOMEM;
	for (i = 0; !ret && i < s.n; i++)
		ret = setup_guest(&s, i, &hro, &ep);
	if (!ret)
		ret = record_with_guests(&s, &hro, &ep, base);
	session_free(&s);
	free(ep.lg);
	free(ep.lgr);
	free(ep.peers);
	free(base);
	return ret;
}
