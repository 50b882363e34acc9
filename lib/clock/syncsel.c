// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which of a CPU's time sync samples a TIME_SHIFT keeps.
 *
 * A sample is an offset measured in one probe's round trip, right to within half of it
 * (its bound). On a machine busy elsewhere a probe or its answer waits for a CPU, for
 * milliseconds: that sample's offset is off by up to its bound, and interpolated as it
 * is, it moves the CPU's events by as much against its other CPUs' and the host's. (Seen:
 * an agent on the host itself, offset 0, best round trip 26 us, samples 4 and 8 ms off
 * while a writer kept both CPUs busy; one thread's markers came out interleaved across
 * its two CPUs.) So a sample whose bound is over HGT__SYNC_SLACK times its CPU's best is
 * left out, and the offset between the samples kept is interpolated as it was between any
 * two. Unless the kept ones cannot explain it: if its interval misses their line (widened
 * by their bounds), the offset moved there, and it stays.
 */
#include "../private/clock.h"

/* Whether sample @i is measured well enough to be kept for its own sake. */
static bool good(const uint64_t *b, uint32_t i, uint64_t best)
{
	return best > UINT64_MAX / HGT__SYNC_SLACK || b[i] <= HGT__SYNC_SLACK * best;
}

/* Whether sample @i fits the line through the well-measured samples beside it, both
 * widened by their bounds. */
static bool explained(const int64_t *t, const int64_t *o, const uint64_t *b, uint32_t n, uint32_t i,
		      uint64_t best)
{
	int64_t p = (int64_t)i - 1, q = (int64_t)i + 1;
	double want, slack;

	while (p >= 0 && !good(b, (uint32_t)p, best))
		p--;
	while (q < (int64_t)n && !good(b, (uint32_t)q, best))
		q++;
	if (p >= 0 && q < (int64_t)n && t[q] > t[p]) {
		double f = ((double)t[i] - (double)t[p]) / ((double)t[q] - (double)t[p]);

		want = (double)o[p] + f * ((double)o[q] - (double)o[p]);
		slack = (double)(b[p] > b[q] ? b[p] : b[q]);
	} else {
		int64_t k = p >= 0 ? p : q;

		want = (double)o[k];
		slack = (double)b[k];
	}
	slack += (double)b[i];
	return (double)o[i] - want <= slack && want - (double)o[i] <= slack;
}

uint32_t hgt__sync_select(const int64_t *t, const int64_t *o, const uint64_t *b, uint32_t n,
			  int64_t *kt, int64_t *ko, uint64_t *bound)
{
	uint64_t best = UINT64_MAX;
	uint32_t kept = 0;

	*bound = 0;
	for (uint32_t i = 0; i < n; i++)
		if (b[i] < best)
			best = b[i];
	for (uint32_t i = 0; i < n; i++) {
		if (!good(b, i, best) && explained(t, o, b, n, i, best))
			continue;
		if (kt) {
			kt[kept] = t[i];
			ko[kept] = o[i];
		}
		kept++;
		if (b[i] > *bound)
			*bound = b[i];
	}
	return kept;
}
