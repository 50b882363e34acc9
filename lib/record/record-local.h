/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recorder's pieces, for the guest agent (lib/transport/agent.c). */
#ifndef HGT_RECORD_LOCAL_H
#define HGT_RECORD_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hgtrace/record.h>

/* Where metadata items (16..21, v6 encoding) and options go. */
struct hgt__meta_sink {
	int (*meta)(void *ctx, unsigned int id, const void *p, size_t n);
	int (*option)(void *ctx, unsigned int id, const void *p, uint32_t n);
	void *ctx;
};

/* @before_on (may be NULL) runs once the instance is set up and the readers run, just
 * before tracing is switched on; a non-zero return fails the start. */
struct hgt_recorder *hgt__record_start(const struct hgt_record_opts *opts, const int *cpu_fds,
				       int (*before_on)(void *ctx, struct hgt_recorder *r),
				       void *ctx);
int hgt__record_halt(struct hgt_recorder *r);
#define HGT__DESCRIBE_STATS 1u /* and the per-CPU statistics */
#define HGT__DESCRIBE_END 2u   /* of the items only the cmdlines */
int hgt__record_describe(struct hgt_recorder *r, const struct hgt__meta_sink *sink,
			 unsigned int what);
/* Page bytes a CPU's reader moved (after hgt__record_halt()). */
uint64_t hgt__record_cpu_bytes(const struct hgt_recorder *r, int cpu);
int hgt__record_nr_cpus(const struct hgt_recorder *r);
const char *hgt__record_clock(const struct hgt_recorder *r);
uint64_t hgt__record_trace_id(const struct hgt_recorder *r);

#endif
