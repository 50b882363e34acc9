/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What lib/clock offers the other parts beyond the public API: which of a CPU's time sync
 * samples a TIME_SHIFT keeps (lib/clock/syncsel.c).
 */
#ifndef HGT_PRIVATE_CLOCK_H
#define HGT_PRIVATE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* A sample is kept when its bound is at most this many times its CPU's best. */
#define HGT__SYNC_SLACK 4

/* Of one CPU's @n sync samples (at guest times @t, in order, offsets @o, each right to
 * within @b), the ones a TIME_SHIFT keeps: each whose bound is at most HGT__SYNC_SLACK
 * times the best, and each other that the line through its well-measured neighbours
 * cannot explain (the offset moved there). They go to @kt and @ko (room for @n each; both
 * NULL: only counted). Returns how many (at least one when @n > 0); *@bound is the
 * largest bound among them (0 when @n is 0). */
uint32_t hgt__sync_select(const int64_t *t, const int64_t *o, const uint64_t *b, uint32_t n,
			  int64_t *kt, int64_t *ko, uint64_t *bound);

#endif
