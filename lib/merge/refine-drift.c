// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The channel's sync refined over time, for an offset that moves (a long session, clocks
 * that drift). One constant offset then fits neither the channel's samples (each within
 * its bound B of the truth at its time) nor the guest's events in the vCPU windows. With
 * the offset moving at a steady rate (the one assumption, said in the summary):
 *
 *  - the rate is at most S = (|o_last - o_first| + 2B) / (t_last - t_first), from the
 *    channel's first and last samples;
 *  - the guest's events are cut into slices of length L; within one, the truth moves by at
 *    most D = S * L / 2 from its value at the slice's middle m, so with every window
 *    widened by D that value puts each of the slice's events inside one: the windows' set
 *    of the slice holds o(m);
 *  - the channel's samples around m, interpolated, hold o(m) within B (extrapolated
 *    beyond the samples: B + S * the distance);
 *  - their intersection gives a point (m, its middle) within its reach r of the truth.
 * The points are stored as a TIME_SHIFT interpolated between them; the truth is within the
 * largest r of that line between points, and, beyond the outer points (extrapolated on
 * the outer pair's line), within r_a + (r_a + r_b) * x / (m_b - m_a) at distance x. The
 * points give a narrower rate bound than the channel's, and the slices are cut again with
 * it (eight rounds at most).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/infer.h>
#include <hgtrace/peer.h>

#include "merge-local.h"

#define ROUNDS 8

static int64_t abs64(int64_t v)
{
	return v < 0 ? -v : v;
}

/* Cycles, rounded up, with a cycle to spare for the double's rounding. */
static uint64_t up(double v)
{
	return v <= 0 ? 1 : (uint64_t)ceil(v) + 1;
}

/* The rate bound from the channel's first and last samples of @c. */
double hgt__channel_rate(const struct hgt_time_shift_cpu *c, uint64_t b)
{
	uint32_t l = c->count - 1;
	int64_t dt = c->time[l] - c->time[0];

	if (dt <= 0)
		return INFINITY;
	return ((double)abs64(c->offset[l] - c->offset[0]) + 2.0 * (double)b) / (double)dt;
}

/* The channel's set for o(@m): its samples interpolated +- @b, or beyond them the
 * nearest +- (@b + @rate * the distance). */
void hgt__channel_at(const struct hgt_time_shift_cpu *c, uint64_t b, double rate, int64_t m,
		     int64_t *lo, int64_t *hi)
{
	uint32_t l = c->count - 1, k = 0;
	uint64_t ext = 0;
	int64_t v;

	if (m <= c->time[0]) {
		v = c->offset[0];
		ext = up(rate * (double)(c->time[0] - m));
	} else if (m >= c->time[l]) {
		v = c->offset[l];
		ext = up(rate * (double)(m - c->time[l]));
	} else {
		while (k + 1 < l && c->time[k + 1] <= m)
			k++;
		__int128 num = (__int128)(m - c->time[k]) * (c->offset[k + 1] - c->offset[k]);
		int64_t dt = c->time[k + 1] - c->time[k];

		v = c->offset[k] + (int64_t)(dt ? num / dt : 0);
		ext = 1; /* the division's rounding */
	}
	*lo = v - (int64_t)(b + ext);
	*hi = v + (int64_t)(b + ext);
}

/* The points of CPU @o from its slices (@ic) and the channel (@c), each point's reach in
 * @r; false when the two sets of some slice do not meet (kept in @o for the warning). */
static bool points(struct hgt_refine_cpu *o, const struct hgt_infer_cpu *ic,
		   const struct hgt_time_shift_cpu *c, uint64_t b, double rate, uint64_t *r)
{
	o->points = 0;
	for (int s = 0; s < ic->nr_slices; s++) {
		const struct hgt_infer_result *x = &ic->slice[s];
		int64_t m = ic->slice_time[s], clo, chi, a, z, at;

		if (x->status != HGT_INFER_OK)
			continue;
		hgt__channel_at(c, b, rate, m, &clo, &chi);
		a = x->lo > clo ? x->lo : clo;
		z = x->hi < chi ? x->hi : chi;
		if (a > z) {
			o->ch_lo = clo;
			o->ch_hi = chi;
			o->tr_lo = x->lo;
			o->tr_hi = x->hi;
			o->trace = true; /* this slice's windows' set is known */
			return false;
		}
		at = a + (z - a) / 2;
		o->pt_time[o->points] = m;
		o->pt_offset[o->points] = at;
		r[o->points++] = (uint64_t)(z - at > at - a ? z - at : at - a) + 1;
	}
	return true;
}

/* How far the line through the points can be from the truth over [@first, @last]. */
static uint64_t line_reach(const struct hgt_refine_cpu *o, const uint64_t *r, int64_t first,
			   int64_t last)
{
	int n = o->points;
	uint64_t most = 0;
	double lo_x = (double)(o->pt_time[0] - first), hi_x = (double)(last - o->pt_time[n - 1]);
	double lo_d = (double)(o->pt_time[1] - o->pt_time[0]);
	double hi_d = (double)(o->pt_time[n - 1] - o->pt_time[n - 2]);

	for (int k = 0; k < n; k++)
		most = r[k] > most ? r[k] : most;
	if (lo_x > 0) {
		uint64_t e = up((double)r[0] + (double)(r[0] + r[1]) * lo_x / lo_d);

		most = e > most ? e : most;
	}
	if (hi_x > 0) {
		uint64_t e = up((double)r[n - 1] + (double)(r[n - 1] + r[n - 2]) * hi_x / hi_d);

		most = e > most ? e : most;
	}
	return most;
}

/* A narrower rate bound from the outer points, or @rate. */
static double points_rate(const struct hgt_refine_cpu *o, const uint64_t *r, double rate)
{
	int l = o->points - 1;
	double v = ((double)abs64(o->pt_offset[l] - o->pt_offset[0]) + (double)(r[0] + r[l])) /
		   (double)(o->pt_time[l] - o->pt_time[0]);

	return v < rate ? v : rate;
}

/* One round: the slices of every wanted CPU with windows widened for @rate[]. */
static int one_round(struct hgt_input *host, struct hgt_input *guest, struct hgt_infer_cpu *ic,
		     int n, const bool *want, const double *rate, int slices)
{
	HGT_OPTS(hgt_infer_pair_opts, po, .drift_slices = slices);

	for (int i = 0; i < n; i++) {
		double len = (double)(ic[i].last - ic[i].first + 1) / slices;
		uint64_t d = want[i] ? up(rate[i] * len / 2) : 0;

		po.widen = d > po.widen ? d : po.widen;
		if (!want[i])
			ic[i].pid = 0; /* not this CPU: its events are only counted */
	}
	hgt_infer_cpu_free(ic, n);
	return hgt_infer_pair(host, guest, ic, n, &po);
}

/**
 * hgt__refine_drift - refine over time each CPU @want[i] of @res (the constant pass done:
 * @ic[i] its pid, first and last events; @t the channel's samples): it gets its points and
 * reach and HGT_REFINE_OK, or HGT_REFINE_DISAGREE, or stays as it was (fewer than two
 * slices with an offset). Returns 0 or -errno.
 */
int hgt__refine_drift(struct hgt_input *host, struct hgt_input *guest,
		      const struct hgt_time_shift *t, struct hgt_infer_cpu *ic, const bool *want,
		      int slices, struct hgt_refine_result *res)
{
	int n = res->nr_cpus, ret = 0;
	double *rate = calloc((size_t)n, sizeof(*rate));
	uint64_t *r = calloc((size_t)slices, sizeof(*r));
	int *pid = calloc((size_t)n, sizeof(*pid));
	int64_t *span = calloc((size_t)n * 2, sizeof(*span));
	enum hgt_refine_status *was = calloc((size_t)n, sizeof(*was));

	if (!rate || !r || !pid || !span || !was) {
		ret = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		rate[i] = want[i] ? hgt__channel_rate(&t->cpus[i], res->channel_bound) : 0;
		pid[i] = ic[i].pid;
		span[2 * i] = ic[i].first;
		span[2 * i + 1] = ic[i].last;
		was[i] = res->cpus[i].status;
	}
	for (int round = 0; round < ROUNDS && !ret; round++) {
		bool narrower = false;

		for (int i = 0; i < n; i++)
			ic[i].pid = pid[i];
		ret = one_round(host, guest, ic, n, want, rate, slices);
		for (int i = 0; !ret && i < n; i++) {
			struct hgt_refine_cpu *o = &res->cpus[i];
			double v;

			if (!want[i] || !o->pt_time)
				continue;
			if (!points(o, &ic[i], &t->cpus[i], res->channel_bound, rate[i], r)) {
				o->status = HGT_REFINE_DISAGREE;
				o->points = 0;
				continue;
			}
			if (o->points < 2) {
				o->status = was[i]; /* too few slices placed: as it was */
				o->points = 0;
				continue;
			}
			o->status = HGT_REFINE_OK;
			o->reach = line_reach(o, r, span[2 * i], span[2 * i + 1]);
			o->at = o->pt_offset[0];
			v = points_rate(o, r, rate[i]);
			narrower |= v < 0.9 * rate[i];
			rate[i] = v;
		}
		if (!narrower)
			break;
	}
out:
	for (int i = 0; pid && i < n; i++)
		ic[i].pid = pid[i];
	free(rate);
	free(r);
	free(pid);
	free(span);
	free(was);
	return ret;
}
