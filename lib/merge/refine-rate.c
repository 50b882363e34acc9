// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The channel's sync refined as one line through a vCPU's events, for an offset that
 * moves at a steady rate: o(t) = c + rho * (t - tm), tm the middle of its events. Slices
 * (refine-drift.c) need events in every slice; a short session with few events (a TCG
 * guest's sched_switch alone: 20 a slice) leaves some slices as wide as the channel's set,
 * and so the line through them. Here the rate is searched instead:
 *
 *  - the channel bounds it: |rho| <= S (hgt__channel_rate());
 *  - the rates are cut into cells [rho_j - h, rho_j + h]. For one cell, the events moved
 *    by rho_j (g' = g + rho_j (g - tm)) and the windows widened by h * T (T: the farthest
 *    event from tm) give every c for which a line of the cell puts each event in a window;
 *    the channel's samples, each within its bound, limit c as well. A cell where none fits
 *    holds no line that does: it is dropped. The others are cut in four, until the
 *    widening is a few ns, the cells too many, or the searches past a budget (30 M
 *    events looked at, 64 to 4000 searches);
 *  - the truth lies in the cells kept. The line stored is one that puts every event inside
 *    a window with no widening (the rate of a kept cell, the offset in the best piece), and
 *    its reach the farthest any kept line is from it over the events' span.
 *
 * The result is kept where it reaches less than the slices' line or the channel.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/infer.h>
#include <hgtrace/peer.h>

#include "merge-local.h"

#define FIRST_CELLS 32
#define MAX_CELLS 256 /* kept cells beyond this: the rate is not pinned down, stop cutting */
/* offset searches per CPU: at most this many events looked at in all, and 64 searches at
 * least, 4000 at most */
#define MAX_WORK 30000000.0

struct cell {
	double rho, half;
	int64_t lo, hi; /* the offsets at tm that fit (kept cells) */
};

struct rate_ctx {
	const struct hgt_time_shift *t;
	const bool *want;
	struct hgt_refine_result *res;
	int64_t *gv;		     /* the moved events */
	struct hgt_infer_window *wv; /* the widened windows */
};

/* The offsets at @tm that the channel's samples allow to the lines of @x. */
static bool channel_limits(const struct hgt_time_shift_cpu *c, uint64_t b, const struct cell *x,
			   int64_t tm, int64_t *lo, int64_t *hi)
{
	*lo = INT64_MIN;
	*hi = INT64_MAX;
	for (uint32_t k = 0; k < c->count; k++) {
		double d = (double)(c->time[k] - tm);
		int64_t at = c->offset[k] - (int64_t)llround(x->rho * d),
			slack = (int64_t)b + (int64_t)ceil(x->half * fabs(d)) + 1;

		*lo = at - slack > *lo ? at - slack : *lo;
		*hi = at + slack < *hi ? at + slack : *hi;
	}
	return *lo <= *hi;
}

/* The offsets at @tm for which a line of rate @rho puts every event in a window widened
 * by @widen; false when none does. */
static int fits(struct rate_ctx *x, const int64_t *g, size_t n, const struct hgt_infer_window *w,
		size_t nw, int64_t span_lo, int64_t span_hi, int64_t tm, double rho, uint64_t widen,
		int64_t lo, int64_t hi, struct hgt_infer_result *r)
{
	HGT_OPTS(hgt_infer_opts, io, .within = true, .within_lo = lo, .within_hi = hi);

	/* still sorted: |rho| < 1, so a step of 1 ns moves by at most 1 */
	for (size_t k = 0; k < n; k++)
		x->gv[k] = g[k] + (int64_t)llround(rho * (double)(g[k] - tm));
	for (size_t k = 0; k < nw; k++) {
		x->wv[k].start = w[k].start - (int64_t)widen;
		x->wv[k].end = w[k].end + (int64_t)widen;
	}
	if (hgt_infer_offset(x->gv, n, x->wv, nw, span_lo, span_hi, &io, r))
		return -ENOMEM;
	return r->status == HGT_INFER_OK;
}

/* One level: the cells of @cells that hold a line fitting every event, kept in place
 * with their offsets. Returns how many, or -ENOMEM. */
static int level(struct rate_ctx *x, const struct hgt_time_shift_cpu *c, uint64_t b,
		 struct cell *cells, int nc, const int64_t *g, size_t n,
		 const struct hgt_infer_window *w, size_t nw, int64_t span_lo, int64_t span_hi,
		 int64_t tm, double far)
{
	uint64_t widen = (uint64_t)ceil(cells[0].half * far) + 1;
	int kept = 0;

	for (int j = 0; j < nc; j++) {
		struct hgt_infer_result r;
		int64_t lo, hi;
		int ok;

		if (!channel_limits(c, b, &cells[j], tm, &lo, &hi))
			continue;
		ok = fits(x, g, n, w, nw, span_lo, span_hi, tm, cells[j].rho, widen, lo, hi, &r);
		if (ok < 0)
			return ok;
		if (!ok)
			continue;
		cells[kept] = cells[j];
		cells[kept].lo = r.lo;
		cells[kept].hi = r.hi;
		kept++;
	}
	return kept;
}

/* The line stored: of the kept cells' rates, the nearest the middle one that puts every
 * event in a window unwidened, with the middle of its best piece. False when none does. */
static bool exact_line(struct rate_ctx *x, const struct cell *cells, int nc, const int64_t *g,
		       size_t n, const struct hgt_infer_window *w, size_t nw, int64_t span_lo,
		       int64_t span_hi, int64_t tm, double *rho, int64_t *c0)
{
	double mid = (cells[0].rho + cells[nc - 1].rho) / 2;
	bool *tried = calloc((size_t)nc, sizeof(*tried));
	bool found = false;

	for (int round = 0; tried && round < nc && !found; round++) {
		struct hgt_infer_result r;
		int best = -1;

		for (int j = 0; j < nc; j++)
			if (!tried[j] &&
			    (best < 0 || fabs(cells[j].rho - mid) < fabs(cells[best].rho - mid)))
				best = j;
		tried[best] = true;
		if (fits(x, g, n, w, nw, span_lo, span_hi, tm, cells[best].rho, 0, cells[best].lo,
			 cells[best].hi, &r) == 1) {
			*rho = cells[best].rho;
			*c0 = r.best_lo + (r.best_hi - r.best_lo) / 2;
			found = true;
		}
	}
	free(tried);
	return found;
}

/* How far any line of the kept cells can be from (@c0, @rho) over [@first, @last]. */
static uint64_t line_reach(const struct cell *cells, int nc, int64_t c0, double rho, int64_t tm,
			   int64_t first, int64_t last)
{
	double far = fmax((double)(tm - first), (double)(last - tm)), most = 0;

	for (int j = 0; j < nc; j++) {
		double off =
			fmax(fabs((double)(cells[j].lo - c0)), fabs((double)(cells[j].hi - c0)));
		double v = off + (fabs(cells[j].rho - rho) + cells[j].half) * far;

		most = v > most ? v : most;
	}
	return (uint64_t)ceil(most) + 2; /* the rounding of the moved events and of the rate */
}

/* What @o reaches now: its line's, its constant's, or the channel's. */
static uint64_t reach_now(const struct hgt_refine_cpu *o, uint64_t b)
{
	if (o->status != HGT_REFINE_OK)
		return b;
	if (o->points)
		return o->reach;
	return (uint64_t)(o->hi - o->lo) / 2 + 1;
}

static int one_cpu(void *arg, int i, const int64_t *g, size_t n, const struct hgt_infer_window *w,
		   size_t nw, int64_t span_lo, int64_t span_hi)
{
	struct rate_ctx *x = arg;
	struct hgt_refine_cpu *o = &x->res->cpus[i];
	const struct hgt_time_shift_cpu *c = &x->t->cpus[i];
	uint64_t b = x->res->channel_bound, reach;
	int64_t tm = g[0] + (g[n - 1] - g[0]) / 2, c0;
	double far = fmax((double)(tm - g[0]), (double)(g[n - 1] - tm)), s, rho;
	struct cell *cells = NULL;
	int nc = FIRST_CELLS, passes = 0, ret = 0,
	    budget = (int)fmin(4000, fmax(64, MAX_WORK / (double)n));

	if (!x->want[i] || !o->pt_time || c->count < 2 || n < 2 || far <= 0)
		return 0;
	s = hgt__channel_rate(c, b);
	if (!isfinite(s) || s <= 0)
		return 0;
	x->gv = malloc(sizeof(*x->gv) * n);
	x->wv = malloc(sizeof(*x->wv) * (nw + 1));
	cells = malloc(sizeof(*cells) * MAX_CELLS * 4);
	if (!x->gv || !x->wv || !cells) {
		ret = -ENOMEM;
		goto out;
	}
	for (int j = 0; j < nc; j++)
		cells[j] = (struct cell){ -s + (2 * j + 1) * s / nc, s / nc, 0, 0 };
	for (;;) {
		passes += nc;
		nc = level(x, c, b, cells, nc, g, n, w, nw, span_lo, span_hi, tm, far);
		if (nc <= 0 || cells[0].half * far < 4 || nc > MAX_CELLS ||
		    passes + 4 * nc > budget)
			break;
		/* each kept cell cut in four, in place from the end */
		for (int j = nc - 1; j >= 0; j--) {
			struct cell p = cells[j];

			for (int q = 0; q < 4; q++)
				cells[4 * j + q] =
					(struct cell){ p.rho - p.half + (2 * q + 1) * p.half / 4,
						       p.half / 4, 0, 0 };
		}
		nc *= 4;
	}
	if (nc < 0)
		ret = nc;
	if (nc <= 0 || !exact_line(x, cells, nc, g, n, w, nw, span_lo, span_hi, tm, &rho, &c0))
		goto out;
	reach = line_reach(cells, nc, c0, rho, tm, g[0], g[n - 1]);
	if (reach >= reach_now(o, b) || reach >= b)
		goto out;
	o->status = HGT_REFINE_OK;
	o->points = 2;
	o->pt_time[0] = g[0];
	o->pt_time[1] = g[n - 1];
	for (int k = 0; k < 2; k++)
		o->pt_offset[k] = c0 + (int64_t)llround(rho * (double)(o->pt_time[k] - tm));
	o->at = o->pt_offset[0];
	o->reach = reach;
	x->res->by_line++;
out:
	free(cells);
	free(x->gv);
	free(x->wv);
	x->gv = NULL;
	x->wv = NULL;
	return ret;
}

int hgt__refine_rate(struct hgt_input *host, struct hgt_input *guest,
		     const struct hgt_time_shift *t, const int *pids, const bool *want,
		     struct hgt_refine_result *res)
{
	struct rate_ctx x = { t, want, res, NULL, NULL };

	if (res->channel_bound == HGT_REFINE_NO_BOUND)
		return 0;
	return hgt__infer_each(host, guest, pids, res->nr_cpus, one_cpu, &x);
}
