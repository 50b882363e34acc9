// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The TSC's nanosecond conversion as the kernel gives it to user space: time_mult and
 * time_shift of a perf event's mmap page, on every CPU (they must agree), as trace-cmd's
 * tsc2nsec clock reads them. Needs cap_user_time (a stable TSC the kernel trusts).
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <hgtrace/clock.h>

#include "../tracedat/tracedat-local.h"

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
				ret = hgt__errorf(EOPNOTSUPP, "tsc2nsec: the kernel does not give "
							      "user space the TSC's conversion "
							      "(perf cap_user_time 0)");
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
			return hgt__errorf(errno ? errno : EOPNOTSUPP, "tsc rate: cannot read the "
								       "TSC and "
								       "CLOCK_MONOTONIC_RAW");
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
		return hgt__errorf(EAGAIN,
				   "tsc rate: %.3f s is too short to measure the TSC rate "
				   "(100 ms at least)",
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
