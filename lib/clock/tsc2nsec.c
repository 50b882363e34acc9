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
