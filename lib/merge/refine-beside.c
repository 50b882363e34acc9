// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The refinement a session's end does, for a file written later (hgtrace restore): the
 * pairs the file forms with the complete files beside it, found by trace id (a host file's
 * GUEST option names its guest's TRACEID; a guest's TIME_SHIFT names its host's), refined
 * by hgt_sync_refine(). Whichever of the pair is restored second refines it.
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hgtrace/infer.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "merge-local.h"

/* At most this many files of the directory are looked into. */
#define MAX_BESIDE 256

/* What pairing needs of one file. */
struct ids {
	uint64_t id;   /* TRACEID (0: none) */
	uint64_t peer; /* its TIME_SHIFT's host id (0: none) */
	bool refined;  /* its last sync is already a refinement */
	struct hgt_input *in;
};

static int open_ids(const char *path, struct ids *x)
{
	HGT_OPTS(hgt_open_opts, op, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	const struct hgt_time_shift *t;

	memset(x, 0, sizeof(*x));
	x->in = hgt_input_open(path, &op);
	if (!x->in)
		return -errno;
	if (!hgt_input_trace_id(x->in, &x->id))
		x->id = 0;
	t = hgt_input_time_shift(x->in);
	x->peer = t ? t->peer_id : 0;
	x->refined = hgt__sync_last_refined(x->in);
	return 0;
}

/* Whether @host names guest @guest and @guest's TIME_SHIFT names @host. */
static bool pair_of(const struct ids *host, const struct ids *guest)
{
	struct hgt_guest g;

	return host->id && guest->id && guest->peer == host->id &&
	       !hgt_input_guest_by_id(host->in, guest->id, &g);
}

/* A complete regular file: no recording beside it, not a symlink. */
static bool complete(const char *path)
{
	struct stat st;
	char *d;
	bool yes;

	if (asprintf(&d, "%s.recording", path) < 0) /* the recorder's directory (recdir.c) */
		return false;
	yes = access(d, F_OK) && !lstat(path, &st) && S_ISREG(st.st_mode);
	free(d);
	return yes;
}

static void refine_one(const char *host, const char *guest, FILE *log, int *refined)
{
	struct hgt_refine_result r;
	char line[400];
	int ret = hgt_sync_refine(host, guest, NULL, &r);

	if (ret == -EALREADY) {
		hgt_refine_result_free(&r);
		return; /* exact (KVM debugfs): nothing to narrow */
	}
	if (ret)
		snprintf(line, sizeof(line), "not refined: %s", hgt_last_error());
	else
		hgt_refine_summary(&r, line, sizeof(line));
	if (log)
		fprintf(log, "hgtrace: %s + %s: sync %s\n", host, guest, line);
	for (int c = 0; !ret && log && c < r.nr_cpus; c++) {
		hgt_refine_disagreement(&r, c, line, sizeof(line));
		if (*line)
			fprintf(log, "hgtrace: %s%s: %s\n",
				r.cpus[c].status == HGT_REFINE_DISAGREE ? "WARNING: " : "", guest,
				line);
	}
	*refined += !ret && r.stored;
	hgt_refine_result_free(&r);
}

/* The directory of @path, and the name of each .dat file in it but @path (at most
 * MAX_BESIDE), complete. */
static int beside(const char *path, char ***names, int *n)
{
	char *dir = strdup(path), *s;
	DIR *dp;
	struct dirent *e;

	*names = NULL;
	*n = 0;
	if (!dir)
		return -ENOMEM;
	s = strrchr(dir, '/');
	if (s)
		s[s == dir] = 0;
	else
		strcpy(dir, ".");
	dp = opendir(dir);
	if (!dp) {
		free(dir);
		return 0; /* nothing beside it to pair with */
	}
	*names = calloc(MAX_BESIDE, sizeof(**names));
	while (*names && *n < MAX_BESIDE && (e = readdir(dp))) {
		size_t l = strlen(e->d_name);
		char *p;

		if (l < 5 || strcmp(e->d_name + l - 4, ".dat"))
			continue;
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			break;
		if (hgt_same_file(p, path) == 1 || !complete(p)) {
			free(p);
			continue;
		}
		(*names)[(*n)++] = p;
	}
	closedir(dp);
	free(dir);
	return *names ? 0 : -ENOMEM;
}

int hgt_sync_refine_beside(const char *path, const struct hgt_refine_opts *opts)
{
	FILE *log = opts && opts->sz > offsetof(struct hgt_refine_opts, log) ? opts->log : NULL;
	char **names = NULL;
	struct ids me;
	int n = 0, refined = 0, ret;

	if (opts && (opts->sz < sizeof(size_t) || opts->sz > sizeof(*opts)))
		return -EINVAL;
	ret = open_ids(path, &me);
	if (ret)
		return ret;
	if (me.id && (hgt_input_nr_guests(me.in) > 0 || me.peer))
		ret = beside(path, &names, &n);
	for (int i = 0; !ret && i < n; i++) {
		struct ids x;
		const char *host = NULL, *guest = NULL;

		if (open_ids(names[i], &x))
			continue; /* not a trace.dat it can read: not a partner */
		if (pair_of(&me, &x) && !x.refined) {
			host = path;
			guest = names[i];
		} else if (pair_of(&x, &me) && !me.refined) {
			host = names[i];
			guest = path;
		}
		hgt_input_close(x.in);
		if (host)
			refine_one(host, guest, log, &refined);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	hgt_input_close(me.in);
	return ret ? ret : refined;
}
