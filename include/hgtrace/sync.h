/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/sync.h - the sync check of a host + guests merge: a guest event can only happen
 * while its vCPU's host thread is in guest mode, between that thread's kvm_entry and
 * kvm_exit. Fed with the merged records in time order, the check counts the guest events
 * inside and outside those windows; many outside means the guest's time mapping is wrong.
 */
#ifndef HGTRACE_SYNC_H
#define HGTRACE_SYNC_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_input;
struct tep_record;
struct hgt_sync_check;

/**
 * hgt_sync_check_new - set up the check for inputs @in[0..n-1] (top buffers) merged
 * together. The host is the input with GUEST options (else the first with kvm_entry and
 * kvm_exit formats); guests are the inputs it names or that carry a TIME_SHIFT.
 * @ts_offset: per input, whether --ts-offset was given (may be NULL).
 * Returns NULL (errno ENOENT) when there is no host + guest pair to check.
 */
struct hgt_sync_check *hgt_sync_check_new(struct hgt_input *const *in, int n,
					  const bool *ts_offset);

/**
 * hgt_sync_check_record - account one merged record of input @idx; @rec->ts is the
 * converted (displayed) time and @rec->cpu the input's CPU.
 */
void hgt_sync_check_record(struct hgt_sync_check *sc, int idx, const struct tep_record *rec);

struct hgt_sync_stats {
	bool is_guest;
	const char *mapping; /* how its time was mapped, e.g. "TIME_SHIFT (4 CPUs, ...)" */
	bool mapped;	     /* the host knows this guest's vCPU threads */
	uint64_t inside;     /* events within their vCPU's guest windows */
	uint64_t outside;    /* events outside them */
	uint64_t unchecked;  /* before the vCPU thread's first kvm_entry/kvm_exit */
};

/** hgt_sync_check_stats - the counts of input @idx. Returns 0 or -ENOENT. */
int hgt_sync_check_stats(const struct hgt_sync_check *sc, int idx, struct hgt_sync_stats *st);

/**
 * hgt_sync_check_cpu_outside - the events of guest input @idx on its CPU @cpu that lie
 * outside their vCPU's windows (0 for an unmapped guest or a CPU out of range).
 */
uint64_t hgt_sync_check_cpu_outside(const struct hgt_sync_check *sc, int idx, int cpu);

/*
 * What the check says of a guest, worst last. A guest is consistent only when it was
 * synced (a TIME_SHIFT made for this host, or --ts-offset), the host knows its vCPU
 * threads, none of its events lies outside their windows and some lie inside. report, view
 * and sync-check print the same verdict for the same files.
 */
enum hgt_sync_verdict {
	HGT_SYNC_CONSISTENT,
	HGT_SYNC_UNCHECKED,    /* synced, but nothing could be checked */
	HGT_SYNC_INCONSISTENT, /* events outside their windows: the mapping is wrong there */
	HGT_SYNC_NOT_SYNCED,   /* nothing maps the guest's clock to this host's */
};

/** hgt_sync_check_verdict - the verdict on input @idx (HGT_SYNC_UNCHECKED: not a guest). */
enum hgt_sync_verdict hgt_sync_check_verdict(const struct hgt_sync_check *sc, int idx);

/** hgt_sync_verdict_name - "consistent", "UNCHECKED", "INCONSISTENT" or "NOT SYNCED". */
const char *hgt_sync_verdict_name(enum hgt_sync_verdict v);

/** hgt_sync_check_print - one line per guest on @f with its counts and verdict, and one
 * per guest CPU with events outside. */
void hgt_sync_check_print(const struct hgt_sync_check *sc, FILE *f);

void hgt_sync_check_free(struct hgt_sync_check *sc);

/** hgt_sync_check_host - the index of the input taken as the host. */
int hgt_sync_check_host(const struct hgt_sync_check *sc);

/**
 * hgt_sync_check_inputs - the check of whole inputs @in[0..n-1]: their top buffers merged
 * in host time, as report merges them, and fed to a new check. Returns it (free with
 * hgt_sync_check_free()) or NULL with errno: ENOENT when there is no host + guest pair
 * (reason in hgt_last_error()), or another.
 */
struct hgt_sync_check *hgt_sync_check_inputs(struct hgt_input *const *in, int n);

/**
 * hgt_sync_check_files - the sync check of inputs @in[0..n-1] on its own (hgtrace
 * sync-check): merges their top buffers in host time, prints the check's lines on @out,
 * then per CPU of each guest the host knows the vCPU threads of: the offsets that fit
 * every one of its events (hgt_infer_pair(), in TIME_SHIFT units) and whether each stored
 * TIME_SHIFT offset lies inside them. *@verdict gets the worst of the guests' verdicts,
 * made INCONSISTENT where no offset fits or a stored offset lies outside what fits.
 * Returns 0, -ENOENT when there is no host + guest pair, or another -errno (reason in
 * hgt_last_error()).
 */
int hgt_sync_check_files(struct hgt_input *const *in, int n, FILE *out,
			 enum hgt_sync_verdict *verdict);

#ifdef __cplusplus
}
#endif

#endif
