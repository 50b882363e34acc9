/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internals of libhgtrace-probes shared by its files. */
#ifndef HGT_PROBES_LOCAL_H
#define HGT_PROBES_LOCAL_H

#include <hgtrace/probes.h>
#include <hgtrace/probefile.h>
#include <pthread.h>

/* runtime.c */
extern pthread_mutex_t hgt__probe_lock; /* registry and file state */
void hgt__probe_setup(void);		/* once: environment, control socket */
int hgt__probe_wants_file(void);
void hgt__probe_each(void (*fn)(struct hgt_probe_event *ev, void *arg), void *arg);

/* simple.c */
int hgt__probe_file_on_locked(void);
int hgt__probe_file_off_locked(void);
const char *hgt__probe_file_name(void);
int hgt__probe_file_is_on(void);
int hgt__probe_set_clock(const char *name);
int hgt__probe_set_file_format(const char *name);
void hgt__probe_file_default(const char *path);
int hgt__probe_file_describe(struct hgt_probe_group *g);
uint64_t hgt__probe_mono(void);

/* control.c */
int hgt__probe_ctl_start(const char *path);
/* fork(): the child has none of the parent's threads (see hgt__probe_setup()) */
void hgt__probe_file_fork_prepare(void);
void hgt__probe_file_fork_parent(void);
void hgt__probe_file_fork_child(void);
void hgt__probe_ctl_fork_child(void);

#endif
