/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* KVM TSC relations into TIME_SHIFT samples (lib/clock/kvm.c), for attach and sessions. */
#ifndef HGT_KVM_LOCAL_H
#define HGT_KVM_LOCAL_H

#include <stdbool.h>
#include <stdint.h>

#include <hgtrace/clock.h>

struct hgt_input;

/* One kvm_write_tsc_offset: from host time ts on, vCPU vcpu has offset next. */
struct hgt__tsc_write {
	uint32_t vcpu;
	uint64_t ts;
	int64_t prev, next;
};

int hgt__tsc_writes(struct hgt_input *host, struct hgt__tsc_write **w, int *n);
int hgt__kvm_samples(const struct hgt_kvm_vcpu *v, bool at_start, uint64_t t0,
		     const struct hgt__tsc_write *w, int nw, int64_t *time, int64_t *offset,
		     int64_t *scaling, int64_t *frac, int cap);

#endif
