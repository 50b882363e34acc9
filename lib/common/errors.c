// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The thread's last error: one line, "WHAT: why", set where a failure is found and read
 * by the caller through hgt_last_error().
 */
#include <stdarg.h>
#include <stdio.h>

#include <hgtrace/tracedat.h>

#include "common-local.h"

static __thread char last_error[HGT__ERRLEN];

const char *hgt_last_error(void)
{
	return last_error;
}

void hgt__set_last_error(const char *msg)
{
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

/**
 * hgt__errorf - record a formatted error line as the thread's last error; returns -@err.
 */
int hgt__errorf(int err, const char *fmt, ...)
{
	char line[HGT__ERRLEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	hgt__set_last_error(line);
	return -err;
}
