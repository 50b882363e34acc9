// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * K-way merge of per-CPU cursors with a binary heap keyed on (converted ts, source index).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/merge.h>
#include <hgtrace/tracedat.h>

#include "merge-local.h"

struct source {
	struct hgt_cursor *cursor;
	const struct hgt_clock *clock;
	void *user;
	struct tep_record rec;
};

/* A heap entry: its source's current time beside its index, so that the sifts compare
 * within the heap's own array. */
struct slot {
	unsigned long long ts;
	int src;
};

struct hgt_merge {
	struct source *src;
	int nr_src;
	struct slot *heap;
	int nr_heap;
	bool primed;
	int pending; /* source whose event was returned last and must advance, or -1 */
};

struct hgt_merge *hgt_merge_new(void)
{
	struct hgt_merge *m = calloc(1, sizeof(*m));

	if (m)
		m->pending = -1;
	return m;
}

int hgt_merge_add(struct hgt_merge *m, struct hgt_cursor *cursor, const struct hgt_clock *clock,
		  void *user)
{
	struct source *s;
	struct slot *h;

	if (m->primed)
		return -EBUSY;
	s = realloc(m->src, sizeof(*s) * (m->nr_src + 1));
	if (!s)
		return -ENOMEM;
	m->src = s;
	h = realloc(m->heap, sizeof(*h) * (m->nr_src + 1));
	if (!h)
		return -ENOMEM;
	m->heap = h;
	s = &m->src[m->nr_src];
	memset(s, 0, sizeof(*s));
	s->cursor = cursor;
	s->clock = clock;
	s->user = user;
	return m->nr_src++;
}

static bool before(const struct slot *a, const struct slot *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->src < b->src);
}

static void sift_down(struct hgt_merge *m, int i)
{
	struct slot *h = m->heap, t = h[i];

	for (;;) {
		int l = 2 * i + 1, r = l + 1, best;

		if (l >= m->nr_heap)
			break;
		best = r < m->nr_heap && before(&h[r], &h[l]) ? r : l;
		if (!before(&h[best], &t))
			break;
		h[i] = h[best];
		i = best;
	}
	h[i] = t;
}

static void sift_up(struct hgt_merge *m, int i)
{
	struct slot *h = m->heap, t = h[i];

	while (i > 0) {
		int p = (i - 1) / 2;

		if (!before(&t, &h[p]))
			break;
		h[i] = h[p];
		i = p;
	}
	h[i] = t;
}

/* Read the source's next event; 1 when it has one. */
static int advance(struct hgt_merge *m, int i)
{
	struct source *s = &m->src[i];
	int ret = hgt_cursor_next(s->cursor, &s->rec);

	if (ret > 0)
		s->rec.ts = hgt_clock_convert(s->clock, s->rec.ts, s->rec.cpu);
	return ret;
}

int hgt_merge_next(struct hgt_merge *m, struct tep_record **rec, void **user, int *source)
{
	int ret, top;

	if (!m->primed) {
		int i;

		m->primed = true;
		for (i = 0; i < m->nr_src; i++) {
			ret = advance(m, i);
			if (ret < 0)
				return ret;
			if (ret > 0) {
				m->heap[m->nr_heap++] = (struct slot){ m->src[i].rec.ts, i };
				sift_up(m, m->nr_heap - 1);
			}
		}
	} else if (m->pending >= 0) {
		ret = advance(m, m->pending);
		if (ret < 0)
			return ret;
		if (ret == 0)
			m->heap[0] = m->heap[--m->nr_heap];
		else
			m->heap[0].ts = m->src[m->pending].rec.ts;
		if (m->nr_heap)
			sift_down(m, 0);
		m->pending = -1;
	}
	if (!m->nr_heap)
		return 0;
	top = m->heap[0].src;
	m->pending = top;
	*rec = &m->src[top].rec;
	if (user)
		*user = m->src[top].user;
	if (source)
		*source = top;
	return 1;
}

void hgt_merge_free(struct hgt_merge *m)
{
	if (!m)
		return;
	free(m->src);
	free(m->heap);
	free(m);
}

const struct hgt_clock hgt__raw_clock = { .raw = true };

int hgt__merge_add_top(struct hgt_merge *m, struct hgt_input *in, const struct hgt_clock *clk,
		       struct hgt_cursor **cur, void *user)
{
	int top = hgt_input_top_buffer(in);
	const struct hgt_buffer *b = top >= 0 ? hgt_input_buffer(in, top) : NULL;

	for (int c = 0; b && c < b->nr_cpus; c++) {
		int ret;

		cur[c] = NULL;
		if (!b->cpus[c].present)
			continue;
		cur[c] = hgt_cursor_open(in, top, c);
		if (!cur[c])
			return -errno;
		ret = hgt_merge_add(m, cur[c], clk, user);
		if (ret < 0)
			return ret;
	}
	return 0;
}
