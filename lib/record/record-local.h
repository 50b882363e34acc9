/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The recorder's pieces, for the guest agent (lib/transport/agent.c). */
#ifndef HGT_RECORD_LOCAL_H
#define HGT_RECORD_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hgtrace/record.h>

#include "../private/recdir.h"

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
void hgt__record_set_log(struct hgt_recorder *r, FILE *log);
void hgt__record_set_stall(struct hgt_recorder *r, unsigned int ms);
int hgt__record_wait_read(struct hgt_recorder *r, unsigned int stall_ms, const volatile int *stop);
/* Page bytes a CPU's reader moved (after hgt__record_halt()). */
uint64_t hgt__record_cpu_bytes(const struct hgt_recorder *r, int cpu);
int hgt__record_nr_cpus(const struct hgt_recorder *r);
const char *hgt__record_clock(const struct hgt_recorder *r);
const char *hgt__record_how(const struct hgt_recorder *r);
uint64_t hgt__record_trace_id(const struct hgt_recorder *r);

/* The recording directory beside an output (lib/record/recdir.c). */
struct hgt__recdir {
	char *dir;    /* OUTPUT.recording */
	char *output; /* OUTPUT */
	bool made;    /* created by us */
};
struct hgt_output;
struct hgt_convert_opts;
int hgt__recdir_create(struct hgt__recdir *d, const char *output, const char *instance);
int hgt__recdir_file(const struct hgt__recdir *d, int cpu, int k);
int hgt__recdir_put(const struct hgt__recdir *d, const char *name, const void *p, size_t len);
struct hgt_option_blob;
int hgt__recdir_put_options(const struct hgt__recdir *d, const struct hgt_option_blob *o, int n);
/* Options a restore of @r's recording adds (its stop does not: its caller appends them):
 * replaced whole. 0 also when @r keeps no recording directory. */
int hgt__record_put_options(struct hgt_recorder *r, const struct hgt_option_blob *o, int n);
struct hgt_output *hgt__recdir_head(const struct hgt__recdir *d, uint32_t page_size, int long_size,
				    enum hgt_compression comp);
int hgt__recdir_finish(const char *dir, const char *output, const struct hgt_convert_opts *co,
		       int (*more)(void *ctx, struct hgt_output *out), void *ctx, bool sync,
		       FILE *log, uint64_t *loss_pages);
void hgt__recdir_done(struct hgt__recdir *d, bool remove);
bool hgt__recdir_present(const struct hgt__recdir *d);
uint64_t hgt__proc_start(int pid);

/* Trace clocks for sync probes, the kernel-only ones through the trace (clockread.c). */
bool hgt__sync_clock_readable(const char *clock);
int hgt__sync_clock_read(const char *clock, uint64_t *ts);
void hgt__sync_clock_close(void);
bool hgt__owner_alive(int pid, uint64_t start);

/* Instances hgtrace created, and those whose creator is gone (lib/record/stale.c). */
void hgt__instance_register(const char *name);
void hgt__instance_unregister(const char *name);
void hgt__instance_note_pipe(const char *name, int fd);
int hgt__instance_reap(const char *name, FILE *log);

#endif
