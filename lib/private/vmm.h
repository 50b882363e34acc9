/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What lib/transport/vmm.c offers the other parts: a VMM's vCPU threads and the GUEST
 * option that names them in a host file.
 */
#ifndef HGT_PRIVATE_VMM_H
#define HGT_PRIVATE_VMM_H

#include <stdint.h>

struct hgt_input;
struct hgt_vcpu_threads;
/* GUEST option for guest @name into a finished host file. */
int hgt__guest_map_append(const char *host_path, const char *name, uint64_t trace_id,
			  const struct hgt_vcpu_threads *vt);
/* The vCPU number of a thread named "CPU N/KVM" (TCG, HVF): QEMU's names; else -1. */
int hgt__vcpu_of_comm(const char *comm);
/* vCPU threads among a VMM's @tids from the host's kvm_entry. */
int hgt__vcpus_from_kvm_entry(struct hgt_input *host, const int *tids, int n,
			      struct hgt_vcpu_threads *out);
int hgt__vmm_tids(int pid, int **tids);

#endif
