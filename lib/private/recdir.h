/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What lib/record/ offers the flight recorder: a recording in progress read as it grows. */
#ifndef HGT_PRIVATE_RECDIR_H
#define HGT_PRIVATE_RECDIR_H

#include <stdint.h>

/* recdir.c: OUTPUT.recording, the directory a recording of OUTPUT fills (NULL: ENOMEM) */
char *hgt__recdir_path(const char *output);

/* Which pages of a CPU file (@name, of CPU @cpu) to take: [*@from, *@to) ("to" 0: to its
 * end). Returns 0 or -errno, which stops the copy. @copied (may be NULL), as the copy goes:
 * the file's pages before @upto are in the output and not read again. */
struct hgt__recdir_range {
	int (*fn)(void *ctx, const char *name, int cpu, uint64_t *from, uint64_t *to);
	void *ctx;
	int (*copied)(void *ctx, const char *name, uint64_t upto);
	bool no_kallsyms; /* a search's file: its head without kallsyms */
};

struct hgt_output;
struct hgt_convert_opts;
int hgt__recdir_snapshot(const char *dir, const char *output, const struct hgt_convert_opts *co,
			 const struct hgt__recdir_range *range,
			 int (*more)(void *ctx, struct hgt_output *out), void *ctx);

#endif
