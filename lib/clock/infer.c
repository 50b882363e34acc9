// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The offset inferred by containment (see hgtrace/infer.h). The feasible set F is a sorted
 * list of disjoint offset intervals; each event g replaces every interval [a, b] by its
 * parts whose host times [a + g, b + g] lie in the allowed set. Events are taken far apart
 * first (first, last, then bisection order), so that F, which starts as one piece per
 * window, collapses after a few dozen events and the rest cost a binary search each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <hgtrace/infer.h>

#include "../common/common-local.h"

#define HINTS 8 /* pieces few enough to search from the previous event's windows */

struct hgt_infer_result;
static void by_gaps(struct hgt_infer_result *res, uint64_t entry_gap, uint64_t exit_gap);

struct piece {
	int64_t lo, hi;
};

struct set {
	struct piece *p;
	size_t n, cap;
};

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int64_t sat_sub(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

static int set_add(struct set *s, int64_t lo, int64_t hi)
{
	if (lo > hi)
		return 0;
	if (s->n && s->p[s->n - 1].hi != INT64_MAX && s->p[s->n - 1].hi + 1 >= lo) {
		if (hi > s->p[s->n - 1].hi)
			s->p[s->n - 1].hi = hi;
		return 0;
	}
	if (hgt__grow(&s->p, &s->cap, s->n + 1, sizeof(*s->p), 64))
		return -ENOMEM;
	s->p[s->n++] = (struct piece){ lo, hi };
	return 0;
}

struct allowed {
	const struct hgt_infer_window *w; /* sorted, disjoint */
	size_t nw;
	int64_t span_lo, span_hi;
};

/* First window in [@lo, @hi) whose end is >= @t (@hi if none). */
static size_t first_window_in(const struct allowed *al, int64_t t, size_t lo, size_t hi)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (al->w[mid].end < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* First window whose end is >= @t. */
static size_t first_window(const struct allowed *al, int64_t t)
{
	return first_window_in(al, t, 0, al->nw);
}

/*
 * First window whose end is >= @t, searched from *@hint (galloping: events taken in time
 * order move it a little each time); *@hint is set to the answer.
 */
static size_t first_window_from(const struct allowed *al, int64_t t, size_t *hint)
{
	size_t lo, hi, h = *hint < al->nw ? *hint : 0, step = 1;

	if (al->w[h].end < t) { /* forward: the answer is past h */
		lo = h + 1;
		while (lo + step < al->nw && al->w[lo + step - 1].end < t)
			step *= 2;
		hi = lo + step < al->nw ? lo + step : al->nw;
	} else { /* backward: the answer is h or before */
		hi = h;
		while (step <= h && al->w[h - step].end >= t)
			step *= 2;
		lo = step <= h ? h - step : 0;
	}
	*hint = first_window_in(al, t, lo, hi);
	return *hint;
}

/* Whether host time @t is allowed. */
static bool allowed_at(const struct allowed *al, int64_t t)
{
	size_t k;

	if (t < al->span_lo || t > al->span_hi)
		return true;
	k = first_window(al, t);
	return k < al->nw && al->w[k].start <= t;
}

/* @out = the offsets of @in that put @g in the allowed set. */
static int constrain(const struct allowed *al, const struct set *in, int64_t g, struct set *out,
		     size_t *hints)
{
	size_t run = 0; /* pieces ascend: each search starts where the previous one ended */

	out->n = 0;
	for (size_t i = 0; i < in->n; i++) {
		int64_t a = sat_add(in->p[i].lo, g), b = sat_add(in->p[i].hi, g);
		size_t k = hints ? first_window_from(al, a, &hints[i])
			   : i	 ? first_window_from(al, a, &run)
				 : (run = first_window(al, a));
		int ret = 0;

		if (a < al->span_lo)
			ret = set_add(out, a, b < al->span_lo ? b : al->span_lo - 1);
		for (; !ret && k < al->nw && al->w[k].start <= b; k++)
			ret = set_add(out, a > al->w[k].start ? a : al->w[k].start,
				      b < al->w[k].end ? b : al->w[k].end);
		if (!ret && b > al->span_hi)
			ret = set_add(out, a > al->span_hi ? a : al->span_hi + 1, b);
		if (ret)
			return ret;
	}
	/* back to offsets */
	for (size_t i = 0; i < out->n; i++) {
		out->p[i].lo = sat_sub(out->p[i].lo, g);
		out->p[i].hi = sat_sub(out->p[i].hi, g);
	}
	return 0;
}

/* Events g with span_lo <= g + c <= span_hi (@g sorted). */
static uint64_t in_span(const int64_t *g, size_t n, const struct allowed *al, int64_t c)
{
	int64_t lo = sat_sub(al->span_lo, c), hi = sat_sub(al->span_hi, c);
	size_t a = 0, b = n, x, y;

	while (a < b) { /* first g >= lo */
		size_t mid = a + (b - a) / 2;

		if (g[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	x = a;
	b = n;
	while (a < b) { /* first g > hi */
		size_t mid = a + (b - a) / 2;

		if (g[mid] <= hi)
			a = mid + 1;
		else
			b = mid;
	}
	y = a;
	return y - x;
}

/*
 * Whether an interval whose offsets put at most @m events in the host's span is too weakly
 * supported to be the answer: under 3/4 of the @reach events any offset could put there.
 * Host and guest recorded together overlap; an offset that leaves a quarter of what could
 * overlap outside the host's recording fits only because those events were not checked
 * (a TCG thread running for seconds on end fits half a guest shifted by 2 s).
 */
static bool weak(uint64_t m, uint64_t reach)
{
	return 4 * m < 3 * reach;
}

/*
 * Drop the pieces that cannot put enough of @reach events in the span (they could never
 * be kept); true when none is left, with the most any of them could in *@best.
 */
static bool prune(const int64_t *g, size_t n, const struct allowed *al, struct set *s,
		  uint64_t reach, uint64_t *best, uint32_t *dropped)
{
	size_t k = 0, x = 0, y = 0;

	/*
	 * The events in [span_lo - hi, span_hi - lo] of each piece: from the last piece to
	 * the first both ends only grow, so two pointers walk the events once. Kept pieces
	 * are marked by lo > hi swapped back after.
	 */
	for (size_t i = s->n; i-- > 0;) {
		int64_t from = sat_sub(al->span_lo, s->p[i].hi),
			to = sat_sub(al->span_hi, s->p[i].lo);
		uint64_t m;

		while (x < n && g[x] < from)
			x++;
		if (y < x)
			y = x;
		while (y < n && g[y] <= to)
			y++;
		m = y - x;
		if (weak(m, reach)) {
			if (m > *best)
				*best = m;
			s->p[i].lo = 1; /* dropped */
			s->p[i].hi = 0;
			(*dropped)++;
		}
	}
	for (size_t i = 0; i < s->n; i++)
		if (s->p[i].lo <= s->p[i].hi)
			s->p[k++] = s->p[i];
	s->n = k;
	return k == 0;
}

static int64_t mid(int64_t lo, int64_t hi)
{
	return (int64_t)(((__int128)lo + hi) / 2);
}

static int cmp_window(const void *a, const void *b)
{
	const struct hgt_infer_window *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* Sorted, overlapping windows merged; windows entirely outside the span dropped. */
static struct hgt_infer_window *normalize(const struct hgt_infer_window *w, size_t nw,
					  int64_t span_lo, int64_t span_hi, size_t *nout)
{
	struct hgt_infer_window *c = malloc(sizeof(*c) * (nw ? nw : 1));
	size_t n = 0;

	if (!c)
		return NULL;
	for (size_t i = 0; i < nw; i++)
		if (w[i].start <= w[i].end && w[i].end >= span_lo && w[i].start <= span_hi)
			c[n++] = w[i];
	qsort(c, n, sizeof(*c), cmp_window);
	*nout = 0;
	for (size_t i = 0; i < n; i++) {
		if (*nout && c[*nout - 1].end != INT64_MAX && c[i].start <= c[*nout - 1].end + 1) {
			if (c[i].end > c[*nout - 1].end)
				c[*nout - 1].end = c[i].end;
			continue;
		}
		c[(*nout)++] = c[i];
	}
	return c;
}

static unsigned int bitrev(size_t v, unsigned int bits)
{
	unsigned int r = 0;

	for (unsigned int i = 0; i < bits; i++, v >>= 1)
		r = (r << 1) | (unsigned int)(v & 1);
	return r;
}

/* Events outside the allowed set at offset @c. */
static uint64_t outside_at(const int64_t *g, size_t n, const struct allowed *al, int64_t c)
{
	uint64_t out = 0;

	for (size_t i = 0; i < n; i++)
		out += !allowed_at(al, sat_add(g[i], c));
	return out;
}

/**
 * hgt_infer_offset - offsets that put every guest event inside the host's windows.
 */
/* The most events any offset could put in the span: what fits must come close. */
static uint64_t max_reach(const int64_t *g, size_t n, int64_t span_lo, int64_t span_hi)
{
	uint64_t reach = 0;

	for (size_t i = 0, j = 0; i < n; i++) {
		while ((__int128)g[i] - g[j] > (__int128)span_hi - span_lo)
			j++;
		if (i - j + 1 > reach)
			reach = i - j + 1;
	}
	return reach;
}

/*
 * The order events constrain the set in: far apart ones first (first, last, bisection
 * order) until the set is down to a few pieces (*@sorted becomes true), then every event
 * in time order. The event of @step in *@i; returns 0 to use it, 1 to skip the step, -1
 * when every event was seen. @step may move on (to the start of the time order).
 */
static int event_at(size_t *step, unsigned int bits, size_t n, size_t pieces, bool *sorted,
		    size_t *i)
{
	size_t order = (size_t)1 << bits;

	if (*step == 0) {
		*i = 0;
	} else if (*step == 1) {
		*i = n - 1;
	} else if (!*sorted && *step < order + 2) {
		if ((*i = bitrev(*step - 2, bits)) == 0 || *i >= n - 1)
			return 1;
		if ((*step >= 66 && pieces == 1) || (*step >= 4096 && pieces <= HINTS)) {
			*sorted = true; /* the rest in time order */
			*step = order + 1;
		}
	} else {
		if (!*sorted)
			return -1; /* the bisection order saw every event */
		*i = *step - (order + 2);
		if (*i >= n)
			return -1;
	}
	return 0;
}

/* The piece of @cur holding the most events in the span (the first of equals; @first_wins
 * false: a later piece must hold more), its count in *@best_n. */
static size_t best_piece(const int64_t *g, size_t n, const struct allowed *al,
			 const struct set *cur, uint64_t *best_n, bool first_wins)
{
	size_t best = 0;

	for (size_t k = 0; k < cur->n; k++) {
		uint64_t s = in_span(g, n, al, mid(cur->p[k].lo, cur->p[k].hi));

		if (s > *best_n || (first_wins && k == 0)) {
			*best_n = s;
			best = k;
		}
	}
	return best;
}

/* The set left after every event: the best-supported piece, the hull of those with
 * enough support, and whether that is narrow enough. */
static void conclude(const int64_t *g, size_t n, const struct allowed *al, const struct set *cur,
		     const struct hgt_infer_opts *o, struct hgt_infer_result *res)
{
	uint64_t best_n = 0, alt_n = 0;
	size_t best = best_piece(g, n, al, cur, &best_n, false), alt = SIZE_MAX;

	res->in_span = best_n;
	if (!o->within && weak(best_n, res->reach)) {
		res->status = HGT_INFER_NO_OVERLAP;
		res->best = mid(cur->p[best].lo, cur->p[best].hi);
		return;
	}
	res->lo = res->best_lo = cur->p[best].lo;
	res->hi = res->best_hi = cur->p[best].hi;
	for (size_t k = 0; k < cur->n; k++) {
		uint64_t s = in_span(g, n, al, mid(cur->p[k].lo, cur->p[k].hi));

		if (!o->within && weak(s, res->reach)) {
			res->weak_pieces++;
			continue;
		}
		if (cur->p[k].lo < res->lo)
			res->lo = cur->p[k].lo;
		if (cur->p[k].hi > res->hi)
			res->hi = cur->p[k].hi;
		res->pieces++;
		if (k != best && (alt == SIZE_MAX || s > alt_n)) {
			alt = k;
			alt_n = s;
		}
	}
	res->estimate = mid(res->lo, res->hi);
	res->bound = (uint64_t)(((__int128)res->hi - res->lo + 1) / 2);
	if (o->gaps)
		by_gaps(res, o->entry_gap, o->exit_gap);
	res->status = HGT_INFER_OK;
	if (o->within || !o->max_bound || res->bound <= o->max_bound)
		return;
	res->status = alt != SIZE_MAX ? HGT_INFER_AMBIGUOUS : HGT_INFER_TOO_WIDE;
	if (alt != SIZE_MAX) {
		/* the two best-supported pieces, for the message */
		res->lo = cur->p[best].lo;
		res->hi = cur->p[best].hi;
		res->alt_lo = cur->p[alt].lo;
		res->alt_hi = cur->p[alt].hi;
		res->alt_in_span = alt_n;
	}
}

/*
 * Constrain the set of offsets by every event (each must fall in a window or outside the
 * span). Returns 0 with the set in *@cur, 1 when a verdict was reached early (res set: the
 * set emptied, or only pieces beside the host's recording were left), or -errno.
 */
static int narrow(const int64_t *g, size_t n, const struct allowed *al, struct set **cur,
		  struct set **next, bool keep_weak, struct hgt_infer_result *res)
{
	size_t hints[HINTS], nhints = 0;
	uint64_t best_n = 0, pruned_best = 0;
	unsigned int bits = 0;
	bool sorted = false;
	int ret = 0, r;

	while (((size_t)1 << bits) < n)
		bits++;
	for (size_t step = 0, end = ((size_t)1 << bits) + 2 + n; !ret && step < end; step++) {
		size_t i, best;
		struct set *t;

		r = event_at(&step, bits, n, (*cur)->n, &sorted, &i);
		if (r < 0)
			break;
		if (r > 0)
			continue;
		if (sorted && (*cur)->n != nhints) { /* pieces changed: searches start afresh */
			nhints = (*cur)->n;
			memset(hints, 0, sizeof(hints));
		}
		ret = constrain(al, *cur, g[i], *next, sorted && (*cur)->n <= HINTS ? hints : NULL);
		if (ret)
			return ret;
		if (!(*next)->n) {
			/* the last non-empty set: its best-supported offset */
			best = best_piece(g, n, al, *cur, &best_n, true);
			res->status = HGT_INFER_EMPTY;
			res->best = mid((*cur)->p[best].lo, (*cur)->p[best].hi);
			res->outside = outside_at(g, n, al, res->best);
			res->in_span = best_n;
			return 1;
		}
		if (!keep_weak && (*next)->n > 1 && (*next)->n != (*cur)->n &&
		    prune(g, n, al, *next, res->reach, &pruned_best, &res->weak_pieces)) {
			/* only pieces beside the host's recording were left */
			res->status = HGT_INFER_NO_OVERLAP;
			res->in_span = pruned_best;
			return 1;
		}
		t = *cur;
		*cur = *next;
		*next = t;
	}
	return ret;
}

/*
 * @o->within: the offsets of the range that put no event in the span (below @lo or above
 * @hi, those that put at least one there) fit every window trivially: they join the
 * result, whose hull grows to hold them (a set that was empty becomes them).
 */
static void add_beside(struct hgt_infer_result *res, const struct hgt_infer_opts *o, int64_t lo,
		       int64_t hi)
{
	bool below = o->within_lo<lo, above = o->within_hi> hi;
	/* the two parts of the range beside [lo, hi] */
	int64_t b_lo = o->within_lo, b_hi = lo - 1 < o->within_hi ? lo - 1 : o->within_hi;
	int64_t a_lo = hi + 1 > o->within_lo ? hi + 1 : o->within_lo, a_hi = o->within_hi;

	if (!below && !above)
		return;
	if (res->status != HGT_INFER_OK) {
		/* nothing that puts an event in the span fits: only what puts none does */
		res->status = HGT_INFER_OK;
		res->best_lo = below ? b_lo : a_lo;
		res->best_hi = below ? b_hi : a_hi;
		res->lo = below ? b_lo : a_lo;
		res->hi = above ? a_hi : b_hi;
		res->pieces = (uint32_t)below + above;
		res->in_span = 0;
	} else {
		res->lo = below ? b_lo : res->lo;
		res->hi = above ? a_hi : res->hi;
		res->pieces += (uint32_t)below + above;
	}
	res->estimate = mid(res->lo, res->hi);
	res->bound = (uint64_t)(((__int128)res->hi - res->lo + 1) / 2);
	res->by_gaps = false;
}

/* Distance from @m to [@lo, @hi] (0 inside). */
static uint64_t away(int64_t m, int64_t lo, int64_t hi)
{
	return m < lo ? (uint64_t)lo - (uint64_t)m : m > hi ? (uint64_t)m - (uint64_t)hi : 0;
}

/*
 * @o->within: every piece fits every event (none is weak), so the one to store an offset
 * in is the one nearest the middle of the hull, where the bound grows least: it becomes
 * best_lo..best_hi. The pieces: those of @cur (NULL: none) and the range's offsets that
 * put no event in the span (below @lo, above @hi).
 */
static void nearest_piece(struct hgt_infer_result *res, const struct set *cur,
			  const struct hgt_infer_opts *o, int64_t lo, int64_t hi)
{
	int64_t m = mid(res->lo, res->hi);
	uint64_t best = away(m, res->best_lo, res->best_hi), d;

	for (size_t k = 0; cur && k < cur->n; k++)
		if ((d = away(m, cur->p[k].lo, cur->p[k].hi)) < best) {
			best = d;
			res->best_lo = cur->p[k].lo;
			res->best_hi = cur->p[k].hi;
		}
	if (o->within_lo < lo) {
		int64_t z = lo - 1 < o->within_hi ? lo - 1 : o->within_hi;

		if ((d = away(m, o->within_lo, z)) < best) {
			best = d;
			res->best_lo = o->within_lo;
			res->best_hi = z;
		}
	}
	if (o->within_hi > hi) {
		int64_t a = hi + 1 > o->within_lo ? hi + 1 : o->within_lo;

		if (away(m, a, o->within_hi) < best) {
			res->best_lo = a;
			res->best_hi = o->within_hi;
		}
	}
}

int hgt_infer_offset(const int64_t *g, size_t n, const struct hgt_infer_window *w, size_t nw,
		     int64_t span_lo, int64_t span_hi, const struct hgt_infer_opts *opts,
		     struct hgt_infer_result *res)
{
	struct hgt_infer_opts o = { 0 };
	struct set a = { 0 }, b = { 0 }, *cur = &a, *next = &b;
	struct allowed al = { .span_lo = span_lo, .span_hi = span_hi };
	struct hgt_infer_window *nwin = NULL;
	int64_t lo, hi;
	int ret = 0;

	if (opts) {
		if (opts->sz < sizeof(size_t) || opts->sz > sizeof(o))
			return -EINVAL;
		memcpy(&o, opts, opts->sz);
	}
	memset(res, 0, sizeof(*res));
	res->events = n;
	if (!n || span_lo > span_hi) {
		res->status = HGT_INFER_NO_DATA;
		return 0;
	}
	for (size_t i = 1; i < n; i++)
		if (g[i] < g[i - 1])
			return -EINVAL;
	nwin = normalize(w, nw, span_lo, span_hi, &al.nw);
	if (!nwin)
		return -ENOMEM;
	al.w = nwin;
	if (!al.nw) {
		res->status = HGT_INFER_NO_DATA;
		goto out;
	}
	res->reach = max_reach(g, n, span_lo, span_hi);
	/* at least one event in the span (within the range given, if one is) */
	lo = sat_sub(span_lo, g[n - 1]);
	hi = sat_sub(span_hi, g[0]);
	if (o.within && o.within_lo > o.within_hi) {
		ret = -EINVAL;
		goto out;
	}
	if (o.within && (lo = lo > o.within_lo ? lo : o.within_lo) >
				(hi = hi < o.within_hi ? hi : o.within_hi)) {
		res->status = HGT_INFER_EMPTY; /* none: what puts none there is added below */
		ret = 1;
	}
	if (!ret)
		ret = set_add(cur, lo, hi);
	if (!ret)
		ret = narrow(g, n, &al, &cur, &next, o.within, res);
	if (!ret)
		conclude(g, n, &al, cur, &o, res);
	if (ret >= 0 && o.within) {
		add_beside(res, &o, sat_sub(span_lo, g[n - 1]), sat_sub(span_hi, g[0]));
		if (res->status == HGT_INFER_OK)
			nearest_piece(res, ret == 0 ? cur : NULL, &o, sat_sub(span_lo, g[n - 1]),
				      sat_sub(span_hi, g[0]));
	}
	if (ret > 0)
		ret = 0;
out:
	free(a.p);
	free(b.p);
	free(nwin);
	return ret;
}

/* lo = truth - entry gap, hi = truth + exit gap: with both known, the truth is their
 * average (@res->estimate moved by half their difference), kept within [lo, hi]. */
static void by_gaps(struct hgt_infer_result *res, uint64_t entry_gap, uint64_t exit_gap)
{
	__int128 e = ((__int128)res->lo + entry_gap + (__int128)res->hi - exit_gap) / 2;

	if (e < res->lo)
		e = res->lo;
	if (e > res->hi)
		e = res->hi;
	res->estimate = (int64_t)e;
	res->bound = (uint64_t)(e - res->lo > res->hi - e ? e - res->lo : res->hi - e);
	res->by_gaps = true;
}
