/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal definitions of the host+guest session simulator. */
#ifndef HGT_SIM_LOCAL_H
#define HGT_SIM_LOCAL_H

#include <stddef.h>

struct hgt__sim_format {
	const char *system;
	const char *event;
	const char *format;
};

extern const char hgt__sim_header_page[];
extern const char hgt__sim_header_event[];
extern const struct hgt__sim_format hgt__sim_formats[];

#endif
