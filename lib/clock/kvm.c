// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * KVM's exact guest TSC relation: <debugfs>/kvm/<pid>-<fd>/vcpu<id>/tsc-offset,
 * tsc-scaling-ratio and tsc-scaling-ratio-frac-bits, and the TIME_SHIFT samples they and
 * the host's kvm_write_tsc_offset events give: a step function, exact to the cycle,
 * scaling included (the 128-bit inverse of hgt_tsc_guest_to_host() applies them).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/peer.h>
#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../private/tracedat.h"
#include "kvm-local.h"

/* A number file of debugfs; 0 or -errno. */
static int read_num(const char *dir, const char *vcpu, const char *file, bool is_signed, int64_t *v)
{
	char path[1024], buf[64], *end;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, vcpu, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return hgt__errorf(EINVAL, "%s: empty", path);
	buf[n] = 0;
	errno = 0;
	*v = is_signed ? strtoll(buf, &end, 0) : (int64_t)strtoull(buf, &end, 0);
	if (errno || end == buf || (*end && *end != '\n'))
		return hgt__errorf(EINVAL, "%s: '%.*s' is not a number", path, (int)n, buf);
	return 0;
}

static int cmp_vcpu(const void *a, const void *b)
{
	const struct hgt_kvm_vcpu *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/**
 * hgt_kvm_read - read the vCPUs' TSC relations of VM @pid.
 */
int hgt_kvm_read(const char *debugfs, int pid, struct hgt_kvm_vm *vm)
{
	char kvm[600];
	struct dirent *de;
	DIR *d;
	int found = 0, ret = 0;

	memset(vm, 0, sizeof(*vm));
	snprintf(kvm, sizeof(kvm), "%s/kvm", debugfs ? debugfs : "/sys/kernel/debug");
	d = opendir(kvm);
	if (!d)
		return hgt__errorf(errno, "%s: %s", kvm, strerror(errno));
	/* <pid>-<fd>: the first for @pid (trace-cmd does the same); any, if only one */
	while ((de = readdir(d))) {
		int p, fd;
		char c;

		if (sscanf(de->d_name, "%d-%d%c", &p, &fd, &c) != 2)
			continue;
		if (pid && p != pid)
			continue;
		if (found++ && !pid)
			break;
		vm->pid = p;
		snprintf(vm->dir, sizeof(vm->dir), "%s/%s", kvm, de->d_name);
		if (pid)
			break;
	}
	closedir(d);
	if (!found)
		return hgt__errorf(ENOENT, "%s: no VM of process %d", kvm, pid);
	if (found > 1 && !pid)
		return hgt__errorf(EEXIST, "%s: more than one VM: name its VMM process", kvm);
	d = opendir(vm->dir);
	if (!d)
		return hgt__errorf(errno, "%s: %s", vm->dir, strerror(errno));
	while ((de = readdir(d)) && !ret) {
		struct hgt_kvm_vcpu *n, v = { 0 };
		int64_t x;
		char c;

		if (sscanf(de->d_name, "vcpu%d%c", &v.id, &c) != 1 || v.id < 0)
			continue;
		ret = read_num(vm->dir, de->d_name, "tsc-offset", true, &v.tsc_offset);
		if (ret) {
			if (ret == -ENOENT)
				ret = hgt__errorf(ENOENT, "%s/%s: no tsc-offset", vm->dir,
						  de->d_name);
			break;
		}
		/* the scaling files exist only where the hardware scales the TSC */
		if (!read_num(vm->dir, de->d_name, "tsc-scaling-ratio", false, &x)) {
			v.ratio = (uint64_t)x;
			ret = read_num(vm->dir, de->d_name, "tsc-scaling-ratio-frac-bits", false,
				       &x);
			if (ret || x < 1 || x > 63) {
				ret = hgt__errorf(
					EINVAL, "%s/%s: tsc-scaling-ratio without valid frac bits",
					vm->dir, de->d_name);
				break;
			}
			v.frac = (unsigned int)x;
			if (v.ratio == 1ull << v.frac)
				v.ratio = v.frac = 0; /* 1.0: unscaled */
		}
		n = realloc(vm->vcpus, sizeof(*n) * (size_t)(vm->nr + 1));
		if (!n) {
			ret = -ENOMEM;
			break;
		}
		vm->vcpus = n;
		n[vm->nr++] = v;
	}
	closedir(d);
	if (!ret && !vm->nr)
		ret = hgt__errorf(ENOENT, "%s: no vcpu directories", vm->dir);
	if (ret) {
		hgt_kvm_vm_free(vm);
		return ret;
	}
	qsort(vm->vcpus, (size_t)vm->nr, sizeof(*vm->vcpus), cmp_vcpu);
	return 0;
}

void hgt_kvm_vm_free(struct hgt_kvm_vm *vm)
{
	if (!vm)
		return;
	free(vm->vcpus);
	vm->vcpus = NULL;
	vm->nr = 0;
}

static int cmp_write(const void *a, const void *b)
{
	const struct hgt__tsc_write *x = a, *y = b;

	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/**
 * hgt__tsc_writes - every kvm_write_tsc_offset of @host's top buffer, by time.
 * *@w is allocated (caller frees); *@n may be 0.
 */
int hgt__tsc_writes(struct hgt_input *host, struct hgt__tsc_write **w, int *n)
{
	struct tep_handle *tep = hgt_input_tep(host);
	struct tep_event *ev =
		tep ? tep_find_event_by_name(tep, "kvm", "kvm_write_tsc_offset") : NULL;
	int top = hgt_input_top_buffer(host), cap = 0, ret = 0;
	int type_off = tep ? hgt__type_offset(tep) : -1;

	*w = NULL;
	*n = 0;
	if (!ev || top < 0)
		return 0;
	for (int cpu = 0; cpu < hgt_input_nr_cpus(host) && !ret; cpu++) {
		struct hgt_cursor *c = hgt_cursor_open(host, top, cpu);
		struct tep_record rec;

		if (!c)
			continue;
		while ((ret = hgt_cursor_next(c, &rec)) > 0) {
			unsigned long long v, prev, next;

			if (hgt__record_type(tep, type_off, &rec) != ev->id ||
			    tep_get_field_val(NULL, ev, "vcpu_id", &rec, &v, 0) ||
			    tep_get_field_val(NULL, ev, "previous_tsc_offset", &rec, &prev, 0) ||
			    tep_get_field_val(NULL, ev, "next_tsc_offset", &rec, &next, 0))
				continue;
			if (*n == cap) {
				struct hgt__tsc_write *x;

				cap = cap ? 2 * cap : 64;
				x = realloc(*w, sizeof(*x) * (size_t)cap);
				if (!x) {
					ret = -ENOMEM;
					break;
				}
				*w = x;
			}
			(*w)[(*n)++] = (struct hgt__tsc_write){ (uint32_t)v, rec.ts, (int64_t)prev,
								(int64_t)next };
		}
		hgt_cursor_close(c);
	}
	if (ret < 0) {
		free(*w);
		*w = NULL;
		*n = 0;
		return ret;
	}
	if (*n) /* none: *w is NULL, which qsort() must not get */
		qsort(*w, (size_t)*n, sizeof(**w), cmp_write);
	return 0;
}

/**
 * hgt__kvm_samples - TIME_SHIFT samples of guest CPU @cpu (KVM vcpu @v): the relation
 * @v holds from host time @t0 on (@at_start; else @v is what debugfs shows after the
 * recording and the relation before the first write is that write's previous offset),
 * then one sample per write of @w for this vCPU, from its host time on. Arrays of
 * @cap entries; returns the count, or -ENOSPC.
 */
int hgt__kvm_samples(const struct hgt_kvm_vcpu *v, bool at_start, uint64_t t0,
		     const struct hgt__tsc_write *w, int nw, int64_t *time, int64_t *offset,
		     int64_t *scaling, int64_t *frac, int cap)
{
	int64_t off = v->tsc_offset;
	int k = 0;

	if (!at_start)
		for (int i = 0; i < nw; i++)
			if ((int)w[i].vcpu == v->id) {
				off = w[i].prev;
				break;
			}
	for (int i = -1; i < nw; i++) {
		uint64_t h = t0;

		if (i >= 0) {
			if ((int)w[i].vcpu != v->id)
				continue;
			off = w[i].next;
			h = w[i].ts;
		}
		if (k == cap)
			return -ENOSPC;
		/* the guest TSC at that host time: where this relation starts */
		time[k] = (int64_t)hgt_tsc_host_to_guest(h, v->ratio, v->frac, off);
		/* a write at VM creation (previous offset 0) puts the relation before it
		 * after it in guest time: no guest event ran under it, drop it */
		if (k == 1 && !at_start && time[1] <= time[0]) {
			time[0] = time[1];
			k = 0;
		}
		offset[k] = -off;
		scaling[k] = v->ratio ? (int64_t)v->ratio : 1;
		frac[k] = v->ratio ? v->frac : 0;
		k++;
	}
	return k;
}
