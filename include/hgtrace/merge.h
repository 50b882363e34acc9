/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/merge.h - order events of many per-CPU cursors (of one or many files) by their
 * converted time. Ties go to the source added first, as trace-cmd orders them (earlier
 * file, then lower CPU).
 */
#ifndef HGTRACE_MERGE_H
#define HGTRACE_MERGE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tep_record;
struct hgt_cursor;
struct hgt_clock;
struct hgt_merge;

/**
 * hgt_merge_new - an empty merge. Free with hgt_merge_free().
 */
struct hgt_merge *hgt_merge_new(void);

/**
 * hgt_merge_add - add a source; sources added earlier win ties.
 * @cursor: owned by the caller, must outlive the merge
 * @clock: conversion applied to the cursor's raw times; owned by the caller
 * @user: handed back with each of this source's events
 * Returns the source index (>= 0) or a negative errno.
 */
int hgt_merge_add(struct hgt_merge *m, struct hgt_cursor *cursor, const struct hgt_clock *clock,
		  void *user);

/**
 * hgt_merge_next - the next event in time order.
 * @rec: set to the event (rec->ts converted); valid until the next call
 * @user: set to the source's user pointer
 * @source: set to the source index
 * Returns 1, 0 at the end, or the negative errno of a failing cursor.
 */
int hgt_merge_next(struct hgt_merge *m, struct tep_record **rec, void **user, int *source);

void hgt_merge_free(struct hgt_merge *m);

#ifdef __cplusplus
}
#endif

#endif
