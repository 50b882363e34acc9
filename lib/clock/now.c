// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace clocks read from user space, for sync probes: each side stamps its half of an
 * exchange in the clock its ring buffer uses. x86-tsc is the TSC itself (what the kernel's
 * x86-tsc trace clock returns); mono, mono_raw, boot and tai are the kernel's
 * ktime_get_*_fast_ns() clocks, which clock_gettime() reads through the vDSO.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include <hgtrace/clock.h>

#include <hgtrace/tracedat.h>

#include "../common/common-local.h"

static int clock_id(const char *clock, clockid_t *id)
{
	static const struct {
		const char *name;
		clockid_t id;
	} map[] = {
		{ "mono", CLOCK_MONOTONIC },
		{ "mono_raw", CLOCK_MONOTONIC_RAW },
		{ "boot", CLOCK_BOOTTIME },
		{ "tai", CLOCK_TAI },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(clock, map[i].name)) {
			*id = map[i].id;
			return 0;
		}
	return -EOPNOTSUPP;
}

bool hgt_trace_clock_readable(const char *clock)
{
	clockid_t id;

	if (!clock)
		return false;
#if defined(__x86_64__) || defined(__i386__)
	if (!strcmp(clock, "x86-tsc"))
		return true;
#endif
	return clock_id(clock, &id) == 0;
}

/**
 * hgt_trace_clock_read - the current value of trace clock @clock.
 */
int hgt_trace_clock_read(const char *clock, uint64_t *ts)
{
	struct timespec t;
	clockid_t id;

	if (!clock)
		return -EINVAL;
#if defined(__x86_64__) || defined(__i386__)
	if (!strcmp(clock, "x86-tsc")) {
		*ts = __rdtsc();
		return 0;
	}
#endif
	if (clock_id(clock, &id) || clock_gettime(id, &t))
		return -EOPNOTSUPP;
	*ts = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	return 0;
}
