/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The writer's pieces for other parts of the library (lib/tracedat/output.c). */
#ifndef HGT_TRACEDAT_OUTPUT_LOCAL_H
#define HGT_TRACEDAT_OUTPUT_LOCAL_H

#include <stdint.h>
#include <sys/types.h>

struct hgt_output;

/*
 * hgt__output_head - write what comes before the first CPU's pages (version 6: the header,
 * the metadata items, the CPU count and the options, ended) and hand a copy of those bytes
 * in *@head (free() it): what a trace-cmd agent sends its host, which appends the rest.
 * The metadata and buffers must all be given first. Returns the length or -errno.
 */
ssize_t hgt__output_head(struct hgt_output *o, uint8_t **head);

/*
 * hgt__head_copy - the metadata items and options (the file layout's own left out) of the
 * head at @path (a file cut before its first page: what trace-cmd's agent sends its host,
 * version 6 or 7) into @out; *@nr_cpus: its CPU count. 0 or -errno (said).
 */
int hgt__head_copy(const char *path, struct hgt_output *out, int *nr_cpus);

#endif
