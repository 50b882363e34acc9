// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The channel's sync refined by the trace. A session's agent channel gives, per guest CPU,
 * offsets each within its bound B of the truth; the host's windows of the vCPU's thread give
 * the offsets that put every guest event inside one (hgt_infer_pair()). Both sets hold the
 * truth, so their intersection does: its middle is stored as the guest's TIME_SHIFT and
 * its half-width as the bound. Where they do not meet, one of them is wrong: the channel's
 * samples are kept and the guest CPU is named.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/infer.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "merge-local.h"

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* The channel's set for guest CPU @c: every sample's offset +- @bound, intersected (a
 * constant offset). False when the samples do not meet (the offset moved). */
static bool channel_set(const struct hgt_time_shift_cpu *c, uint64_t bound, int64_t *lo,
			int64_t *hi)
{
	*lo = INT64_MIN;
	*hi = INT64_MAX;
	for (uint32_t k = 0; k < c->count; k++) {
		if (bound == HGT_REFINE_NO_BOUND) {
			/* the bound is unknown (trace-cmd's): the samples themselves must fit */
			*lo = k ? min64(*lo, c->offset[k]) : c->offset[k];
			*hi = k ? max64(*hi, c->offset[k]) : c->offset[k];
			continue;
		}
		*lo = max64(*lo, c->offset[k] - (int64_t)bound);
		*hi = min64(*hi, c->offset[k] + (int64_t)bound);
	}
	return c->count && *lo <= *hi;
}

static bool scaled(const struct hgt_time_shift *t)
{
	for (int i = 0; i < t->nr_cpus; i++)
		for (uint32_t k = 0; k < t->cpus[i].count; k++)
			if (!(t->cpus[i].scaling[k] == 1 && t->cpus[i].frac[k] == 0) &&
			    !(t->cpus[i].frac[k] < 63 &&
			      t->cpus[i].scaling[k] == (int64_t)1 << t->cpus[i].frac[k]))
				return true;
	return false;
}

/* Per guest CPU: the channel's set, the trace's, and what both allow. */
static void refine_cpu(struct hgt_refine_cpu *o, const struct hgt_time_shift_cpu *c, uint64_t bound,
		       const struct hgt_infer_result *r)
{
	o->channel = channel_set(c, bound, &o->ch_lo, &o->ch_hi);
	o->trace = r->status == HGT_INFER_OK;
	o->tr_lo = r->lo;
	o->tr_hi = r->hi;
	o->events = r->events;
	o->trace_status = r->status;
	o->trace_outside = r->status == HGT_INFER_EMPTY ? r->outside : 0;
	if (!o->channel) {
		o->status = HGT_REFINE_CHANNEL_MOVED;
	} else if (!o->trace) {
		/* the windows were asked within the channel's set (hgt_sync_refine()): no offset
		 * there fitting every event is the two disagreeing */
		o->status = r->status == HGT_INFER_EMPTY && bound != HGT_REFINE_NO_BOUND
				    ? HGT_REFINE_DISAGREE
				    : HGT_REFINE_NO_TRACE;
	} else if (bound == HGT_REFINE_NO_BOUND) {
		/* every sample inside the windows' set: that set, else they disagree */
		o->lo = o->tr_lo;
		o->hi = o->tr_hi;
		o->status = o->ch_lo >= o->tr_lo && o->ch_hi <= o->tr_hi ? HGT_REFINE_OK
									 : HGT_REFINE_DISAGREE;
	} else {
		o->lo = max64(o->ch_lo, o->tr_lo);
		o->hi = min64(o->ch_hi, o->tr_hi);
		o->status = o->lo <= o->hi ? HGT_REFINE_OK : HGT_REFINE_DISAGREE;
	}
	/* the offset stored: the middle of what is kept, moved into the windows' best piece
	 * when it falls in a gap between pieces (there some event would lie outside every
	 * window); as little as can be, so that the bound grows no more than it must */
	o->at = o->lo + (o->hi - o->lo) / 2;
	if (o->status == HGT_REFINE_OK) {
		int64_t a = max64(o->lo, r->best_lo), b = min64(o->hi, r->best_hi);

		if (a <= b)
			o->at = o->at < a ? a : o->at > b ? b : o->at;
	}
}

/* How far the truth can be from @at when it lies in [lo, hi]. */
static uint64_t reach(int64_t at, int64_t lo, int64_t hi)
{
	return (uint64_t)max64(at - lo, hi - at) + 1;
}

/* How far the truth can be from what is stored for guest CPU @o: the refined offset's
 * reach, or, where the channel's samples are kept, the channel's bound (none for a CPU
 * with no event to place). */
static uint64_t cpu_reach(const struct hgt_refine_cpu *o, uint64_t channel_bound)
{
	if (o->status == HGT_REFINE_OK)
		return o->points ? o->reach : reach(o->at, o->lo, o->hi);
	return o->events ? channel_bound : 0;
}

/* What the CPUs refined over time rest on, for the summary ("" when none was). */
static void over_time_said(const struct hgt_refine_result *r, char *buf, size_t n)
{
	if (!r->over_time) {
		*buf = 0;
		return;
	}
	if (r->by_line)
		snprintf(
			buf, n,
			", %d over time (%d as one line through its events, %d in %d slices), interpolated, assuming the offset moves at a steady rate",
			r->over_time, r->by_line, r->over_time - r->by_line, r->slices);
	else
		snprintf(
			buf, n,
			", %d over time in %d slices, interpolated, assuming the offset moves at a steady rate",
			r->over_time, r->slices);
}

/* The refined TIME_SHIFT (one sample per refined CPU, at the channel's first time; the
 * channel's samples for the others) and its CPUSTAT line, appended to @guest. */
static int store(const char *guest, const struct hgt_time_shift *t,
		 const struct hgt_refine_result *res)
{
	int most = res->slices > 1 ? res->slices : 1;
	struct hgt_time_shift_cpu *cpus = calloc((size_t)t->nr_cpus, sizeof(*cpus));
	int64_t *v = calloc((size_t)t->nr_cpus * 4 * (size_t)most, sizeof(*v));
	struct hgt_time_shift ts = { t->peer_id, res->over_time ? HGT_TSYNC_INTERPOLATE : 0,
				     t->nr_cpus, cpus };
	char line[600], ch[32] = "unknown", over[160];
	uint8_t *buf = NULL;
	uint32_t len;
	int ret;

	if (!cpus || !v) {
		free(cpus);
		free(v);
		return -ENOMEM;
	}
	for (int i = 0; i < t->nr_cpus; i++) {
		const struct hgt_refine_cpu *c = &res->cpus[i];
		int64_t *p = v + 4 * (size_t)most * i;
		uint32_t n = c->points ? (uint32_t)c->points : 1;

		if (c->status != HGT_REFINE_OK) {
			cpus[i] = t->cpus[i]; /* not refined: the channel's samples, as they were */
			continue;
		}
		for (uint32_t k = 0; k < n; k++) {
			p[k] = c->points	  ? c->pt_time[k]
			       : t->cpus[i].count ? t->cpus[i].time[0]
						  : 0;
			p[n + k] = c->points ? c->pt_offset[k] : c->at;
			p[2 * n + k] = 1;
			p[3 * n + k] = 0;
		}
		cpus[i] = (struct hgt_time_shift_cpu){ n, p, p + n, p + 2 * n, p + 3 * n };
	}
	ret = hgt_time_shift_option_build(&ts, &buf, &len);
	over_time_said(res, over, sizeof(over));
	if (res->channel_bound != HGT_REFINE_NO_BOUND)
		snprintf(ch, sizeof(ch), "+-%llu", (unsigned long long)res->channel_bound);
	snprintf(
		line, sizeof(line),
		"hgtrace sync: refined by the trace: channel %s, vCPU windows +-%llu, both +-%llu (%d of %d CPUs refined%s); the middle of what both allow; bound=%llu\n",
		ch, (unsigned long long)res->trace_bound, (unsigned long long)res->bound,
		res->refined, res->nr_cpus, over, (unsigned long long)res->bound);
	if (!ret) {
		struct hgt_option_blob ob[2] = {
			{ HGT_OPT_TIME_SHIFT, len, buf },
			{ HGT_OPT_CPUSTAT, (uint32_t)strlen(line) + 1, line },
		};

		ret = hgt_tracedat_append_options(guest, ob, 2);
	}
	free(buf);
	free(cpus);
	free(v);
	return ret;
}

/* Why nothing can be refined, or 0. */
static int refinable(struct hgt_input *host, struct hgt_input *guest,
		     const struct hgt_time_shift **t, uint64_t *bound)
{
	bool inferred;

	*t = hgt_input_time_shift(guest);
	if (!*t || (*t)->nr_cpus <= 0)
		return hgt__errorf(ENOENT, "%s: no TIME_SHIFT to refine", hgt_input_path(guest));
	if (!hgt__sync_stored_bound(guest, bound, &inferred))
		*bound = HGT_REFINE_NO_BOUND; /* trace-cmd's: no bound stored */
	else if (inferred)
		return hgt__errorf(EALREADY, "%s: its offsets were inferred from the trace already",
				   hgt_input_path(guest));
	if (!*bound)
		return hgt__errorf(EALREADY, "%s: its sync is exact (bound 0)",
				   hgt_input_path(guest));
	if (scaled(*t))
		return hgt__errorf(EOPNOTSUPP, "%s: a scaled TSC is not refined",
				   hgt_input_path(guest));
	(void)host;
	return 0;
}

/* The CPUs refined over time (refine-drift.c): every CPU with events, a thread and two
 * samples of a known bound where @opts asks for slices, else those one offset does not
 * fit (the channel's samples moved, or the events fit no constant offset). */
static int over_time(struct hgt_input *host, struct hgt_input *guest,
		     const struct hgt_time_shift *t, struct hgt_infer_cpu *c,
		     const struct hgt_refine_opts *opts, struct hgt_refine_result *res)
{
	int slices = opts && opts->sz > offsetof(struct hgt_refine_opts, drift_slices) &&
				     opts->drift_slices > 1
			     ? opts->drift_slices
			     : 0;
	bool *want = calloc((size_t)res->nr_cpus, sizeof(*want)), any = false;
	int ret = 0;

	if (!want)
		return -ENOMEM;
	for (int i = 0; i < res->nr_cpus && res->channel_bound != HGT_REFINE_NO_BOUND; i++) {
		struct hgt_refine_cpu *o = &res->cpus[i];

		if (!c[i].pid || !o->events || t->cpus[i].count < 2 ||
		    (!slices && o->status == HGT_REFINE_OK))
			continue;
		o->pt_time = calloc((size_t)(slices ?: HGT_REFINE_DRIFT_SLICES), sizeof(int64_t));
		o->pt_offset = calloc((size_t)(slices ?: HGT_REFINE_DRIFT_SLICES), sizeof(int64_t));
		if (!o->pt_time || !o->pt_offset) {
			ret = -ENOMEM;
			break;
		}
		want[i] = any = true;
	}
	res->slices = slices ?: HGT_REFINE_DRIFT_SLICES;
	if (!ret && any)
		ret = hgt__refine_drift(host, guest, t, c, want, res->slices, res);
	if (!ret && any) {
		int *pids = calloc((size_t)res->nr_cpus, sizeof(*pids));

		for (int i = 0; pids && i < res->nr_cpus; i++)
			pids[i] = want[i] ? c[i].pid : 0;
		ret = pids ? hgt__refine_rate(host, guest, t, pids, want, res) : -ENOMEM;
		free(pids);
	}
	free(want);
	return ret;
}

int hgt_sync_refine(const char *host_path, const char *guest_path,
		    const struct hgt_refine_opts *opts, struct hgt_refine_result *res)
{
	HGT_OPTS(hgt_open_opts, op, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	struct hgt_input *host = hgt_input_open(host_path, &op);
	struct hgt_input *guest = host ? hgt_input_open(guest_path, &op) : NULL;
	const struct hgt_time_shift *t = NULL;
	struct hgt_infer_cpu *c = NULL;
	struct hgt_infer_range *within = NULL;
	int ret, ncpu = 0, *pids = NULL;

	memset(res, 0, sizeof(*res));
	if (opts && (opts->sz < sizeof(size_t) || opts->sz > sizeof(*opts))) {
		ret = -EINVAL;
		goto out;
	}
	if (!host || !guest) {
		ret = -errno;
		goto out;
	}
	ret = refinable(host, guest, &t, &res->channel_bound);
	if (ret)
		goto out;
	ncpu = hgt__guest_cpu_threads(host, guest, &pids);
	if (ncpu <= 0) {
		ret = ncpu == -ENOMEM
			      ? ncpu
			      : hgt__errorf(ENOENT,
					    "%s: no GUEST entry names the vCPU threads of %s",
					    host_path, guest_path);
		ncpu = 0;
		goto out;
	}
	if (ncpu > t->nr_cpus)
		ncpu = t->nr_cpus;
	/* every CPU of the TIME_SHIFT: those with no thread known are not refined, but
	 * their events are counted */
	c = calloc((size_t)t->nr_cpus, sizeof(*c));
	res->cpus = calloc((size_t)t->nr_cpus, sizeof(*res->cpus));
	if (!c || !res->cpus) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < ncpu; i++)
		c[i].pid = pids[i];
	ncpu = t->nr_cpus;
	/* the windows' offsets are sought within the channel's set (it holds the truth when
	 * its bound does): every offset there that fits is kept, however weakly the host's
	 * span supports it, so what both allow holds the truth whenever both are right */
	within = calloc((size_t)ncpu, sizeof(*within));
	if (!within) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < ncpu && res->channel_bound != HGT_REFINE_NO_BOUND; i++)
		within[i].on =
			channel_set(&t->cpus[i], res->channel_bound, &within[i].lo, &within[i].hi);
	{
		HGT_OPTS(hgt_infer_pair_opts, po, .within = within);

		ret = hgt_infer_pair(host, guest, c, ncpu, &po);
		if (ret)
			goto out;
	}
	res->nr_cpus = t->nr_cpus;
	for (int i = 0; i < t->nr_cpus; i++) {
		res->cpus[i].pid = c[i].pid;
		refine_cpu(&res->cpus[i], &t->cpus[i], res->channel_bound, &c[i].r);
	}
	ret = over_time(host, guest, t, c, opts, res);
	if (ret)
		goto out;
	for (int i = 0; i < t->nr_cpus; i++) {
		const struct hgt_refine_cpu *o = &res->cpus[i];

		if (o->status == HGT_REFINE_OK) {
			res->refined++;
			res->over_time += o->points > 0;
			res->trace_bound =
				max64((int64_t)res->trace_bound,
				      o->points ? (int64_t)o->reach
						: (int64_t)(o->tr_hi - o->tr_lo + 1) / 2);
		}
		res->disagree += o->status == HGT_REFINE_DISAGREE;
		res->bound = max64((int64_t)res->bound, (int64_t)cpu_reach(o, res->channel_bound));
	}
	if (!res->refined || res->bound >= res->channel_bound || res->disagree)
		goto out; /* nothing tighter, or a disagreement: the channel's samples stay */
	ret = store(guest_path, t, res);
	res->stored = !ret;
out:
	if (c)
		hgt_infer_cpu_free(c, ncpu);
	free(c);
	free(within);
	free(pids);
	hgt_input_close(guest);
	hgt_input_close(host);
	return ret;
}

void hgt_refine_summary(const struct hgt_refine_result *r, char *buf, size_t n)
{
	char ch[32] = "unknown", over[160];

	if (r->channel_bound != HGT_REFINE_NO_BOUND)
		snprintf(ch, sizeof(ch), "+-%llu", (unsigned long long)r->channel_bound);
	over_time_said(r, over, sizeof(over));
	snprintf(
		buf, n,
		"%s by the vCPU windows (%d of %d CPUs%s): channel %s, windows +-%llu, both +-%llu%s",
		r->stored ? "refined" : "not refined", r->refined, r->nr_cpus, over, ch,
		(unsigned long long)r->trace_bound, (unsigned long long)r->bound,
		r->disagree ? "; they DISAGREE on some vCPUs: the channel's kept"
		: !r->stored && r->refined < r->nr_cpus
			? "; a vCPU not refined keeps the channel's bound"
			: "");
}

/* Why the vCPU windows gave no offset, in words. */
static const char *no_trace_why(const struct hgt_refine_cpu *x)
{
	switch (x->trace_status) {
	case HGT_INFER_EMPTY:
		return "no one offset puts all its events inside the thread's windows";
	case HGT_INFER_NO_OVERLAP:
		return "what fits the thread's windows puts its events beside the host's span";
	case HGT_INFER_NO_DATA:
		return "the host has no window of its thread";
	default:
		return "the windows leave too wide a set";
	}
}

void hgt_refine_disagreement(const struct hgt_refine_result *r, int c, char *buf, size_t n)
{
	const struct hgt_refine_cpu *x = &r->cpus[c];

	*buf = 0;
	if (x->status == HGT_REFINE_OK || !x->events)
		return;
	if (x->status == HGT_REFINE_DISAGREE && !x->trace)
		snprintf(
			buf, n,
			"vCPU %d (thread %d): no offset within the channel's %lld..%lld puts all its %llu events inside the thread's windows (%llu outside at the best): one of them is wrong",
			c, x->pid, (long long)x->ch_lo, (long long)x->ch_hi,
			(unsigned long long)x->events, (unsigned long long)x->trace_outside);
	else if (x->status == HGT_REFINE_DISAGREE)
		snprintf(
			buf, n,
			"vCPU %d (thread %d): the channel's offsets %lld..%lld and the vCPU windows' %lld..%lld do not meet: one of them is wrong",
			c, x->pid, (long long)x->ch_lo, (long long)x->ch_hi, (long long)x->tr_lo,
			(long long)x->tr_hi);
	else if (x->status == HGT_REFINE_NO_TRACE && x->trace_status == HGT_INFER_EMPTY)
		snprintf(
			buf, n,
			"vCPU %d (thread %d) not refined: %s (%llu of its %llu events outside at the best): the channel's samples kept",
			c, x->pid, no_trace_why(x), (unsigned long long)x->trace_outside,
			(unsigned long long)x->events);
	else if (x->status == HGT_REFINE_NO_TRACE)
		snprintf(
			buf, n,
			"vCPU %d (thread %d) not refined: %s (%llu events): the channel's samples kept",
			c, x->pid, no_trace_why(x), (unsigned long long)x->events);
	else
		snprintf(
			buf, n,
			"vCPU %d (thread %d) not refined: the channel's samples do not meet (offsets %lld..%lld apart by more than their bound): the channel's samples kept",
			c, x->pid, (long long)x->ch_lo, (long long)x->ch_hi);
}

void hgt_refine_result_free(struct hgt_refine_result *res)
{
	for (int i = 0; res->cpus && i < res->nr_cpus; i++) {
		free(res->cpus[i].pt_time);
		free(res->cpus[i].pt_offset);
	}
	free(res->cpus);
	res->cpus = NULL;
}

const char *hgt_refine_status_name(enum hgt_refine_status s)
{
	switch (s) {
	case HGT_REFINE_OK:
		return "refined";
	case HGT_REFINE_DISAGREE:
		return "DISAGREE: the channel's set and the vCPU windows' do not meet (channel kept)";
	case HGT_REFINE_NO_TRACE:
		return "no offset from the vCPU windows (channel kept)";
	case HGT_REFINE_CHANNEL_MOVED:
		break;
	}
	return "the channel's samples moved during the session (channel kept)";
}
