// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The TSC's nanosecond conversion as the kernel gives it to user space: time_mult and
 * time_shift of a perf event's mmap page, on every CPU (they must agree), as trace-cmd's
 * tsc2nsec clock reads them. Needs cap_user_time (a stable TSC the kernel trusts).
 */
#include <errno.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <hgtrace/clock.h>

#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "clock-local.h"

int hgt_tsc2nsec_read(uint32_t *mult, uint32_t *shift)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN), page = sysconf(_SC_PAGESIZE);
	int ret = 0, seen = 0;

	for (long cpu = 0; cpu < ncpu && !ret; cpu++) {
		struct perf_event_attr pe = { .type = PERF_TYPE_SOFTWARE,
					      .size = sizeof(pe),
					      .config = PERF_COUNT_SW_CPU_CLOCK,
					      .disabled = 1,
					      .exclude_kernel = 1,
					      .exclude_hv = 1 };
		struct perf_event_mmap_page *pg;
		int fd = (int)syscall(__NR_perf_event_open, &pe, -1, (int)cpu, -1, 0);

		if (fd < 0) {
			if (errno == ENODEV || errno == EINVAL)
				continue; /* an offline CPU */
			return hgt__errorf(errno, "tsc2nsec: perf_event_open on cpu %ld: %s", cpu,
					   strerror(errno));
		}
		pg = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
		if (pg == MAP_FAILED) {
			ret = hgt__errorf(errno, "tsc2nsec: perf mmap: %s", strerror(errno));
		} else {
			if (!pg->cap_user_time)
				ret = hgt__errorf(
					EOPNOTSUPP,
					"tsc2nsec: the kernel does not give user space the TSC's conversion (perf cap_user_time 0)");
			else if (seen && (pg->time_mult != *mult || pg->time_shift != *shift))
				ret = hgt__errorf(EINVAL, "tsc2nsec: CPUs disagree on mult/shift");
			*mult = pg->time_mult;
			*shift = pg->time_shift;
			seen++;
			munmap(pg, (size_t)page);
		}
		close(fd);
	}
	if (!ret && !seen)
		ret = hgt__errorf(ENODEV, "tsc2nsec: no CPU");
	return ret;
}

/* One (TSC, CLOCK_MONOTONIC_RAW) pair: of 16 tries, the TSC read between the two clock
 * reads closest together, so that the pair is within a few tens of ns of one instant. */
int hgt_tsc_sample_read(struct hgt_tsc_sample *s)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 16; i++) {
		struct timespec a, b;
		uint64_t tsc, na, nb;

		if (clock_gettime(CLOCK_MONOTONIC_RAW, &a) ||
		    hgt_trace_clock_read("x86-tsc", &tsc) || clock_gettime(CLOCK_MONOTONIC_RAW, &b))
			return hgt__errorf(errno ? errno : EOPNOTSUPP,
					   "tsc rate: cannot read the TSC and CLOCK_MONOTONIC_RAW");
		na = (uint64_t)a.tv_sec * 1000000000ULL + (uint64_t)a.tv_nsec;
		nb = (uint64_t)b.tv_sec * 1000000000ULL + (uint64_t)b.tv_nsec;
		if (nb - na < best) {
			best = nb - na;
			s->tsc = tsc;
			s->ns = na + (nb - na) / 2;
			s->err_ns = (nb - na) / 2 + 1;
		}
	}
	return 0;
}

int hgt_tsc2nsec_measure(const struct hgt_tsc_sample *a, const struct hgt_tsc_sample *b,
			 uint32_t *mult, uint32_t *shift, double *ppm)
{
	uint64_t dns = b->ns - a->ns, dtsc = b->tsc - a->tsc;
	double ns_per_tick;
	unsigned int sh = 32;

	if (b->ns <= a->ns || b->tsc <= a->tsc || dns < 100000000ULL)
		return hgt__errorf(
			EAGAIN,
			"tsc rate: %.3f s is too short to measure the TSC rate (100 ms at least)",
			(double)dns / 1e9);
	ns_per_tick = (double)dns / (double)dtsc;
	/* the largest shift (at most 32, as trace-cmd's mul_u64_u32_shr takes) whose mult fits */
	while (sh > 0 && ns_per_tick * (double)(1ULL << sh) >= 4294967295.0)
		sh--;
	*mult = (uint32_t)(ns_per_tick * (double)(1ULL << sh) + 0.5);
	*shift = sh;
	if (ppm)
		*ppm = 1e6 * (double)(a->err_ns + b->err_ns) / (double)dns;
	return *mult ? 0 : hgt__errorf(ERANGE, "tsc rate: no conversion fits");
}

/**
 * hgt__tsc_rate_line - the CPUSTAT line an x86-tsc recording stores so that why, view and
 * export can show ns where the report (as trace-cmd's) shows cycles: the kernel's TSC2NSEC
 * rate where perf gives it, else the rate measured against CLOCK_MONOTONIC_RAW since @t0
 * (a sample taken when tracing began). Returns 0 or -errno (nothing to say).
 */
int hgt__tsc_rate_line(const struct hgt_tsc_sample *t0, char *line, size_t n)
{
	struct hgt_tsc_sample t1;
	uint32_t mult = 0, shift = 0;
	double ppm = 0;

	if (!hgt_tsc2nsec_read(&mult, &shift) && mult) {
		snprintf(line, n,
			 HGT__TSC_RATE_TAG "%.0f Hz, the kernel's (perf mult %u shift %u)\n",
			 1e9 * (double)(1ULL << shift) / (double)mult, mult, shift);
		return 0;
	}
	if (!t0->tsc || hgt_tsc_sample_read(&t1) ||
	    hgt_tsc2nsec_measure(t0, &t1, &mult, &shift, &ppm))
		return -EAGAIN;
	snprintf(line, n,
		 HGT__TSC_RATE_TAG
		 "%.0f Hz, measured against CLOCK_MONOTONIC_RAW over %.3f s, +-%.2f ppm\n",
		 1e9 * (double)(t1.tsc - t0->tsc) / (double)(t1.ns - t0->ns),
		 (double)(t1.ns - t0->ns) / 1e9, ppm);
	return 0;
}

/** hgt__stored_tsc_hz - the rate of @in's last "hgtrace clock:" CPUSTAT line, if any. */
bool hgt__stored_tsc_hz(const struct hgt_input *in, uint64_t *hz)
{
	const char *p = hgt_input_cpustat(in), *b = NULL;
	unsigned long long v;

	while (p && (p = strstr(p, HGT__TSC_RATE_TAG))) {
		b = p + strlen(HGT__TSC_RATE_TAG);
		p = b;
	}
	if (!b || sscanf(b, "%llu Hz", &v) != 1 || v < 1000000 || v > 100000000000ULL)
		return false;
	*hz = v;
	return true;
}
