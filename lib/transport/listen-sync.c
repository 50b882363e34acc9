// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The listener's sync over the control channel: probe rounds, the samples they keep, and
 * the TIME_SHIFT and CPUSTAT options made of them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../common/common-local.h"
#include "../private/clock.h"
#include "listen-local.h"

uint64_t hgt__listen_host_clock(struct guest *g)
{
	uint64_t t = 0;

	hgt__sync_clock_read(g->host_clock, &t);
	return t;
}

static void sync_fail(struct listener *l, struct guest *g, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void sync_fail(struct listener *l, struct guest *g, const char *fmt, ...)
{
	va_list ap;

	if (g->sync.failed)
		return;
	va_start(ap, fmt);
	vsnprintf(g->sync.why, sizeof(g->sync.why), fmt, ap);
	va_end(ap);
	g->sync.failed = true;
	g->sync.round_left = 0;
	g->sync.waiting = false;
	hgt__listen_log(l, "guest %s: sync FAILED: %s", g->name, g->sync.why);
}

/* Sync over the control channel: the host stamps a probe's send (t1) and its answer's
 * arrival (t2) in its trace clock, the agent stamps its answer in its own, pinned to the
 * CPU asked for. Per round and CPU the probe with the shortest round trip is kept: the
 * guest clock read g happened within [t1, t2], so offset = (t1 + t2) / 2 - g is right to
 * within half that round trip. */
int hgt__listen_sync_setup(struct listener *l, struct guest *g)
{
	struct sync *s = &g->sync;
	int n = (int)g->nr_cpus;

	if (!g->host_clock)
		return 0;
	if (!hgt__sync_clock_readable(g->host_clock)) {
		snprintf(s->why, sizeof(s->why),
			 "none: the host's clock %s cannot be read from user space", g->host_clock);
		g->host_clock = NULL;
		return 0;
	}
	if (!hgt__sync_clock_readable(g->clock) || strcmp(g->clock, g->host_clock)) {
		snprintf(
			s->why, sizeof(s->why),
			"none: the guest records with clock %s, the host with %s (use one of x86-tsc, mono, mono_raw, boot, tai, local, global, perf on both)",
			g->clock, g->host_clock);
		g->host_clock = NULL;
		return 0;
	}
	s->best_rtt = calloc((size_t)n, 8);
	s->best_g = calloc((size_t)n, 8);
	s->best_mid = calloc((size_t)n, 8);
	s->count = calloc((size_t)n, sizeof(*s->count));
	s->time = calloc((size_t)n, sizeof(*s->time));
	s->offset = calloc((size_t)n, sizeof(*s->offset));
	s->half = calloc((size_t)n, sizeof(*s->half));
	if (!s->best_rtt || !s->best_g || !s->best_mid || !s->count || !s->time || !s->offset ||
	    !s->half)
		return -ENOMEM;
	s->on = true;
	s->best = UINT64_MAX;
	return 0;
}

static void sync_send(struct listener *l, struct guest *g)
{
	struct sync *s = &g->sync;
	uint32_t m[2];

	/* CPU by CPU: the agent moves to a CPU once per round, not once per probe */
	s->round_cpu = (int)g->nr_cpus - 1 - (s->round_left - 1) / (int)s->round_per_cpu;
	m[0] = ++s->seq;
	m[1] = (uint32_t)s->round_cpu;
	s->t1_ms = hgt__now_ms();
	s->t1 = hgt__listen_host_clock(g);
	if (hgt__listen_send_framed(g, HGT__MSG_PROBE, m, sizeof(m))) {
		sync_fail(l, g, "cannot send probes: %s", strerror(errno));
		return;
	}
	s->waiting = true;
}

void hgt__listen_sync_round(struct listener *l, struct guest *g, int per_cpu)
{
	struct sync *s = &g->sync;

	if (!s->on || s->failed || s->round_left)
		return;
	for (uint32_t c = 0; c < g->nr_cpus; c++)
		s->best_rtt[c] = UINT64_MAX;
	s->round_per_cpu = (uint32_t)per_cpu;
	s->round_left = per_cpu * (int)g->nr_cpus;
	s->round_cpu = -1;
	sync_send(l, g);
}

static void sync_round_done(struct listener *l, struct guest *g)
{
	struct sync *s = &g->sync;
	int kept = 0;

	for (uint32_t c = 0; c < g->nr_cpus && !s->failed; c++) {
		uint32_t k = s->count[c];
		int64_t *t, *o;
		uint64_t *h;

		if (s->best_rtt[c] == UINT64_MAX || k >= SYNC_MAX_SAMPLES)
			continue;
		if (k && (int64_t)s->best_g[c] <= s->time[c][k - 1]) {
			sync_fail(l, g,
				  "cpu %u: its clock went back between probes (%llu after %lld)", c,
				  (unsigned long long)s->best_g[c], (long long)s->time[c][k - 1]);
			return;
		}
		if (k) {
			/* Between two rounds the guest's clock must advance at a rate the host's
			 * can explain: TSC scaling gives ratios near 1, never beyond 1/10..10. A
			 * lying agent's numbers fail this even when they happen to increase. */
			double dg = (double)s->best_g[c] - (double)s->time[c][k - 1];
			double dh = (double)s->best_mid[c] -
				    ((double)s->time[c][k - 1] + (double)s->offset[c][k - 1]);
			double slack = 4.0 * (double)s->bound + (double)s->best_rtt[c];

			if (dg > 10 * dh + slack || dh > 10 * dg + slack) {
				sync_fail(
					l, g,
					"cpu %u: its clock advanced %.0f while the host's advanced %.0f between probes (a rate outside 1/10..10)",
					c, dg, dh);
				return;
			}
		}
		t = realloc(s->time[c], sizeof(*t) * (k + 1));
		if (t)
			s->time[c] = t;
		o = realloc(s->offset[c], sizeof(*o) * (k + 1));
		if (o)
			s->offset[c] = o;
		h = realloc(s->half[c], sizeof(*h) * (k + 1));
		if (h)
			s->half[c] = h;
		if (!t || !o || !h) {
			sync_fail(l, g, "out of memory");
			return;
		}
		t[k] = (int64_t)s->best_g[c];
		o[k] = (int64_t)(s->best_mid[c] - s->best_g[c]);
		h[k] = s->best_rtt[c] / 2 + 1;
		s->count[c] = k + 1;
		if (s->best_rtt[c] / 2 + 1 > s->bound)
			s->bound = s->best_rtt[c] / 2 + 1;
		if (s->best_rtt[c] < s->best)
			s->best = s->best_rtt[c];
		kept++;
	}
	if (kept) {
		s->rounds++;
		hgt__listen_save_sync(l, g);
	}
}

/* PROBE_REPLY {u32 seq, u32 cpu, u64 ts}. */
void hgt__listen_sync_reply(struct listener *l, struct guest *g, const uint8_t *p, size_t n)
{
	struct sync *s = &g->sync;
	uint32_t seq, cpu;
	uint64_t ts, rtt;

	if (n != 16) {
		sync_fail(l, g, "a probe answer of %zu bytes", n);
		return;
	}
	memcpy(&seq, p, 4);
	memcpy(&cpu, p + 4, 4);
	memcpy(&ts, p + 8, 8);
	if (!s->on || s->failed)
		return;
	if (seq > s->seq || !seq) {
		sync_fail(l, g, "an answer to probe %u, which was never sent", seq);
		return;
	}
	if (seq != s->seq || !s->waiting)
		return; /* late: its probe was given up */
	s->waiting = false;
	s->lost_run = 0;
	s->round_left--;
	if (cpu == UINT32_MAX) {
		snprintf(s->why, sizeof(s->why),
			 "none: the agent cannot read its clock %s from user space", g->clock);
		s->on = false;
		s->round_left = 0;
		return;
	}
	if (cpu >= g->nr_cpus) {
		sync_fail(l, g, "a probe answered from cpu %u of %u", cpu, g->nr_cpus);
		return;
	}
	rtt = g->t_read - s->t1;
	if (g->t_read < s->t1) {
		sync_fail(l, g, "the host clock went back during a probe");
		return;
	}
	if (rtt < s->best_rtt[cpu]) {
		s->best_rtt[cpu] = rtt;
		s->best_g[cpu] = ts;
		s->best_mid[cpu] = s->t1 + rtt / 2;
	}
	if (s->round_left > 0)
		sync_send(l, g);
	else
		sync_round_done(l, g);
}

/* After a sync round: the samples so far into the guest's recording directory, so that a
 * restore after a kill stores them as the end would have. */
static int sink_add(struct opt_sink *k, uint16_t id, const void *p, uint32_t n)
{
	void *c;

	if (k->out)
		return hgt_output_add_option(k->out, id, p, n);
	if (k->n == 4 || !(c = malloc(n ? n : 1)))
		return -ENOMEM;
	memcpy(c, p, n);
	k->owned[k->n] = c;
	k->list[k->n++] = (struct hgt_option_blob){ id, n, c };
	return 0;
}

void hgt__listen_save_sync(struct listener *l, struct guest *g)
{
	struct opt_sink k = { 0 };

	if (!g->rd.dir || !g->sync.on || g->sync.failed)
		return;
	if (!hgt__listen_add_sync_options(l, g, &k) && hgt__recdir_put_options(&g->rd, k.list, k.n))
		hgt__listen_log(l, "guest %s: its sync samples cannot be saved in %s: %s", g->name,
				g->rd.dir, hgt_last_error());
	for (int i = 0; i < k.n; i++)
		free(k.owned[i]);
}

/* The samples a TIME_SHIFT keeps of CPU @c into @t and @o (room for its count each, or
 * both NULL); returns how many, and raises *@bound to their largest bound. */
static uint32_t select_samples(const struct sync *s, uint32_t c, int64_t *t, int64_t *o,
			       uint64_t *bound)
{
	uint64_t b;
	uint32_t n = hgt__sync_select(s->time[c], s->offset[c], s->half[c], s->count[c], t, o, &b);

	if (b > *bound)
		*bound = b;
	return n;
}

void hgt__listen_sync_kept(const struct guest *g, uint32_t *kept, uint64_t *bound)
{
	const struct sync *s = &g->sync;

	*kept = 0;
	*bound = 0;
	for (uint32_t c = 0; s->on && s->count && c < g->nr_cpus; c++)
		*kept += select_samples(s, c, NULL, NULL, bound);
}

/* The CPUSTAT line of a sync that made no TIME_SHIFT: why. */
static int sync_none(struct sync *s, struct opt_sink *out)
{
	char line[512];

	if (!s->why[0])
		snprintf(s->why, sizeof(s->why), "none: no probe was answered (%llu lost)",
			 (unsigned long long)s->lost);
	snprintf(line, sizeof(line), "hgtrace sync: %s%s\n",
		 s->failed ? "FAILED, not applied: " : "", s->why);
	return sink_add(out, HGT_OPT_CPUSTAT, line, (uint32_t)strlen(line) + 1);
}

/* The kept samples as TIME_SHIFT: a CPU no probe reached takes the best-sampled one's. */
static int sync_shift(struct guest *g, struct opt_sink *out, uint32_t most, uint32_t src,
		      uint32_t *kept, uint64_t *bound)
{
	struct sync *s = &g->sync;
	struct hgt_time_shift_cpu *tc = calloc(g->nr_cpus, sizeof(*tc));
	int64_t *ones = malloc(sizeof(int64_t) * most), *zeros = calloc(most, sizeof(int64_t));
	int64_t *t = malloc(sizeof(int64_t) * most * g->nr_cpus);
	int64_t *o = malloc(sizeof(int64_t) * most * g->nr_cpus);
	struct hgt_time_shift ts;
	uint8_t *buf = NULL;
	uint32_t len;
	int ret = tc && ones && zeros && t && o ? 0 : -ENOMEM;

	for (uint32_t k = 0; !ret && k < most; k++)
		ones[k] = 1;
	for (uint32_t c = 0; !ret && c < g->nr_cpus; c++) {
		uint32_t from = s->count[c] ? c : src;
		uint32_t n = select_samples(s, from, t + c * most, o + c * most, bound);

		tc[c] = (struct hgt_time_shift_cpu){ n, t + c * most, o + c * most, ones, zeros };
		if (from == c)
			*kept += n;
	}
	ts = (struct hgt_time_shift){ g->host_trace_id, HGT_TSYNC_INTERPOLATE, (int)g->nr_cpus,
				      tc };
	if (!ret)
		ret = hgt_time_shift_option_build(&ts, &buf, &len);
	if (!ret)
		ret = sink_add(out, HGT_OPT_TIME_SHIFT, buf, len);
	free(buf);
	free(tc);
	free(ones);
	free(zeros);
	free(t);
	free(o);
	return ret;
}

/* TIME_SHIFT from the kept samples, and a CPUSTAT line saying how they were made (shown by
 * report --stat in both tools; the sync check reads its bound). */
int hgt__listen_add_sync_options(struct listener *l, struct guest *g, struct opt_sink *out)
{
	struct sync *s = &g->sync;
	uint32_t most = 0, src = 0, total = 0, kept = 0;
	uint64_t bound = 0;
	char line[512];
	int ret;

	(void)l;
	if (!s->on && !s->why[0])
		return 0; /* no sync was asked for */
	for (uint32_t c = 0; s->on && c < g->nr_cpus; c++) {
		total += s->count[c];
		if (s->count[c] > most) {
			most = s->count[c];
			src = c;
		}
	}
	if (!s->on || s->failed || !most)
		return sync_none(s, out);
	snprintf(s->why, sizeof(s->why), "agent channel");
	ret = sync_shift(g, out, most, src, &kept, &bound);
	snprintf(
		line, sizeof(line),
		"hgtrace sync: agent channel, clock %s: %u samples in %u rounds, %u kept (a round trip at most %dx its CPU's best, or an offset the others cannot explain), best round trip %llu, bound=%llu\n",
		g->clock, total, s->rounds, kept, HGT__SYNC_SLACK, (unsigned long long)s->best,
		(unsigned long long)bound);
	if (!ret)
		ret = sink_add(out, HGT_OPT_CPUSTAT, line, (uint32_t)strlen(line) + 1);
	if (!ret && g->agent_wall_ns) {
		snprintf(line, sizeof(line),
			 "hgtrace agent: %.1f ms of CPU in %.3f s of recording\n",
			 (double)g->agent_cpu_ns / 1e6, (double)g->agent_wall_ns / 1e9);
		ret = sink_add(out, HGT_OPT_CPUSTAT, line, (uint32_t)strlen(line) + 1);
	}
	return ret;
}

/* Probes given up, and the periodic rounds. */
void hgt__listen_sync_tick(struct listener *l, struct guest *g, uint64_t t)
{
	struct sync *s = &g->sync;

	if (!s->on || s->failed || !g->hello || g->ended || g->done)
		return;
	if (s->waiting && t - s->t1_ms > SYNC_TIMEOUT_MS) {
		s->waiting = false;
		s->lost++;
		s->round_left--;
		if (++s->lost_run >= 3) {
			sync_fail(l, g, "%d probes in a row were not answered within %d ms",
				  s->lost_run, SYNC_TIMEOUT_MS);
			return;
		}
		if (s->round_left > 0)
			sync_send(l, g);
		else
			sync_round_done(l, g);
	}
	if (!s->round_left && !g->stop_sent && !s->final_started && t >= s->next_ms) {
		s->next_ms = t + (l->o.sync_interval_ms ? l->o.sync_interval_ms : 1000);
		hgt__listen_sync_round(l, g, SYNC_PERIODIC);
	}
}
