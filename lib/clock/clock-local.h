/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The TSC rate a recorder stores with an x86-tsc recording (lib/clock/tsc2nsec.c). */
#ifndef HGT_CLOCK_LOCAL_H
#define HGT_CLOCK_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hgtrace/clock.h>

struct hgt_input;

/* The CPUSTAT line that carries it: "hgtrace clock: x86-tsc at HZ Hz, HOW" */
#define HGT__TSC_RATE_TAG "hgtrace clock: x86-tsc at "

int hgt__tsc_rate_line(const struct hgt_tsc_sample *t0, char *line, size_t n);
bool hgt__stored_tsc_hz(const struct hgt_input *in, uint64_t *hz);

#endif
