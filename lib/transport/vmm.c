// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Finding a guest on the host: its VMM process from the FIFO path or the guest name in its
 * command line, and its vCPU threads from their names (QEMU with -name ...,debug-threads=on
 * names them "CPU N/KVM", or "CPU N/TCG" under TCG).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/session.h>
#include <hgtrace/tracedat.h>

#include "../common/common-local.h"
#include "../private/vmm.h"
#include "transport-local.h"

ssize_t hgt__read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((size_t)got < cap - 1 && (n = read(fd, buf + got, cap - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = 0;
	return got;
}

/* Whether one of the NUL-separated @args (@n bytes) holds the option @opt ("guest-cid=3")
 * whole, between commas. */
static bool has_option(const char *args, size_t n, const char *opt)
{
	size_t ol = strlen(opt);

	for (const char *a = args; a < args + n; a += strlen(a) + 1)
		for (const char *p = strstr(a, opt); p; p = strstr(p + 1, opt))
			if ((p == a || p[-1] == ',') && (p[ol] == 0 || p[ol] == ','))
				return true;
	return false;
}

/* Whether the NUL-separated @args (@n bytes) name guest @name ("-name NAME[,...]" or
 * "-name guest=NAME[,...]"). */
static bool names_guest(const char *args, size_t n, const char *name)
{
	size_t nl = strlen(name);
	const char *prev = NULL;

	for (const char *a = args; a < args + n; prev = a, a += strlen(a) + 1) {
		const char *v = a;

		if (!prev || strcmp(prev, "-name"))
			continue;
		if (!strncmp(v, "guest=", 6))
			v += 6;
		if (!strncmp(v, name, nl) && (v[nl] == 0 || v[nl] == ','))
			return true;
	}
	return false;
}

/* The directory of an hgtrace FIFO @path ("DIR/agent-ctl-path", "DIR/trace-path-cpuN") as
 * the process of @cwd opened it, resolved, into @dir; false for another path. */
static bool fifo_dir_of(const char *path, size_t len, const char *cwd, char *dir, size_t cap)
{
	char p[4096], tail[32];
	const char *slash;
	int cpu;

	if (len >= sizeof(p) - 1)
		return false;
	memcpy(p, path, len);
	p[len] = 0;
	slash = strrchr(p, '/');
	if (!slash || (strcmp(slash + 1, "agent-ctl-path") &&
		       (sscanf(slash + 1, "trace-path-cpu%d%1s", &cpu, tail) != 1 || cpu < 0)))
		return false;
	p[slash - p] = 0;
	if (p[0] == '/' || !cwd)
		snprintf(dir, cap, "%s", p[0] ? p : "/");
	else
		snprintf(dir, cap, "%s/%s", cwd, p);
	{
		char real[4096];

		if (realpath(dir, real))
			snprintf(dir, cap, "%s", real);
	}
	return true;
}

/* The transports in a VMM's command line against ours: 1 when it holds ours (a FIFO of
 * @fifo_dir, or the option after a leading '='), -1 when it holds one of the same kind
 * for something else, 0 when none. */
static int transport_match(const char *args, size_t n, const char *cwd, const char *fifo_dir)
{
	char opt[64], dir[4096];
	int other = 0;

	if (!fifo_dir)
		return 0;
	if (fifo_dir[0] == '=') {
		/* "=guest-cid=3": another guest-cid=M is another guest's */
		const char *eq = strchr(fifo_dir + 1, '=');
		size_t kl = eq ? (size_t)(eq - fifo_dir) : 0;

		if (has_option(args, n, fifo_dir + 1))
			return 1;
		snprintf(opt, sizeof(opt), "%.*s", (int)kl, fifo_dir + 1);
		for (const char *a = args; kl && a < args + n; a += strlen(a) + 1)
			for (const char *p = strstr(a, opt); p; p = strstr(p + 1, opt))
				if ((p == a || p[-1] == ',') && p[kl - 1] == '=')
					other = -1;
		return other;
	}
	for (const char *a = args; a < args + n; a += strlen(a) + 1)
		for (const char *p = strstr(a, "path="); p; p = strstr(p + 1, "path=")) {
			const char *v = p + 5, *e = strchr(v, ',');

			if (p != a && p[-1] != ',')
				continue;
			if (!fifo_dir_of(v, e ? (size_t)(e - v) : strlen(v), cwd, dir, sizeof(dir)))
				continue;
			if (!strcmp(dir, fifo_dir))
				return 1;
			other = -1;
		}
	return other;
}

struct cand {
	int pid, rank;
};

/* Rank of process @pid for guest @name / @fifo_dir: 2 its transport, 0 its name only (3
 * and 1 with vCPU threads); -1 not it (another transport, or neither). */
static int rank_of(const char *proc, int pid, char *args, const char *fifo_dir, const char *name)
{
	char path[512], cwd[4096];
	struct hgt_vcpu_threads vt;
	ssize_t n, c;
	int rank, t;

	snprintf(path, sizeof(path), "%s/%d/cmdline", proc, pid);
	n = hgt__read_small(path, args, 65536);
	if (n <= 0)
		return -1;
	snprintf(path, sizeof(path), "%s/%d/cwd", proc, pid);
	c = readlink(path, cwd, sizeof(cwd) - 1);
	if (c > 0)
		cwd[c] = 0;
	t = transport_match(args, (size_t)n, c > 0 ? cwd : NULL, fifo_dir);
	if (t > 0)
		rank = 2;
	else if (!t && name && names_guest(args, (size_t)n, name))
		rank = 0; /* a process naming another transport is never taken */
	else
		return -1;
	if (!hgt_vmm_vcpu_threads(proc, pid, &vt)) {
		rank += vt.nr > 0;
		hgt_vcpu_threads_free(&vt);
	}
	return rank;
}

/**
 * hgt_vmm_find - the pid of the VMM running guest @name / FIFO dir @fifo_dir.
 */
int hgt_vmm_find(const char *proc, const char *fifo_dir, const char *name)
{
	char *args, real[4096], list[256] = "";
	struct cand best[8];
	struct dirent *de;
	DIR *d;
	int nb = 0, self = (int)getpid();

	if (!proc)
		proc = "/proc";
	if (fifo_dir && fifo_dir[0] != '=' && realpath(fifo_dir, real))
		fifo_dir = real;
	d = opendir(proc);
	if (!d)
		return -errno;
	args = malloc(65536);
	if (!args) {
		closedir(d);
		return -ENOMEM;
	}
	/* The transport beats the name (a name can be reused, a path cannot), and a process
	 * with vCPU threads beats one without: a wrapper (timeout, sudo, a shell) carries
	 * the same command line. */
	while ((de = readdir(d))) {
		int pid = atoi(de->d_name), rank;

		if (pid <= 0 || pid == self ||
		    (rank = rank_of(proc, pid, args, fifo_dir, name)) < 0)
			continue;
		if (nb && rank < best[0].rank)
			continue;
		if (nb && rank > best[0].rank)
			nb = 0;
		if (nb < (int)(sizeof(best) / sizeof(best[0])))
			best[nb++] = (struct cand){ pid, rank };
	}
	free(args);
	closedir(d);
	if (!nb)
		return -ENOENT;
	if (nb == 1)
		return best[0].pid;
	for (int i = 0; i < nb; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", i ? ", " : "",
			 best[i].pid);
	return hgt__errorf(
		ENOTUNIQ,
		"guest %s: %d VMM processes fit it (pids %s): choose one with --guest-pid",
		name ? name : "?", nb, list);
}

int hgt__vcpu_of_comm(const char *comm)
{
	char kind[8];
	int v;

	if (!comm || sscanf(comm, "CPU %d/%7[A-Z]", &v, kind) != 2 || v < 0 ||
	    (strcmp(kind, "KVM") && strcmp(kind, "TCG") && strcmp(kind, "HVF")))
		return -1;
	return v;
}

int hgt_vmm_vcpu_threads(const char *proc, int pid, struct hgt_vcpu_threads *out)
{
	char path[512], comm[64];
	struct dirent *de;
	DIR *d;

	memset(out, 0, sizeof(*out));
	out->pid = pid;
	snprintf(path, sizeof(path), "%s/%d/task", proc ? proc : "/proc", pid);
	d = opendir(path);
	if (!d)
		return hgt__errorf(errno, "%s: %s", path, strerror(errno));
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name), vcpu, k, *v, *t;

		if (tid <= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%d/task/%d/comm", proc ? proc : "/proc", pid, tid);
		if (hgt__read_small(path, comm, sizeof(comm)) <= 0 ||
		    (vcpu = hgt__vcpu_of_comm(comm)) < 0)
			continue;
		v = realloc(out->vcpu, sizeof(int) * (size_t)(out->nr + 1));
		if (v)
			out->vcpu = v;
		t = realloc(out->tid, sizeof(int) * (size_t)(out->nr + 1));
		if (t)
			out->tid = t;
		if (!v || !t) {
			closedir(d);
			hgt_vcpu_threads_free(out);
			return -ENOMEM;
		}
		/* sorted by vCPU */
		for (k = out->nr; k > 0 && out->vcpu[k - 1] > vcpu; k--) {
			out->vcpu[k] = out->vcpu[k - 1];
			out->tid[k] = out->tid[k - 1];
		}
		out->vcpu[k] = vcpu;
		out->tid[k] = tid;
		out->nr++;
	}
	closedir(d);
	return 0;
}

void hgt_vcpu_threads_free(struct hgt_vcpu_threads *t)
{
	if (!t)
		return;
	free(t->vcpu);
	free(t->tid);
	t->vcpu = t->tid = NULL;
	t->nr = 0;
}

/**
 * hgt__guest_map_append - append a GUEST option (guest @name, its trace id and vCPU
 * threads) to the finished host file @host_path.
 */
int hgt__guest_map_append(const char *host_path, const char *name, uint64_t trace_id,
			  const struct hgt_vcpu_threads *vt)
{
	struct hgt_option_blob ob;
	uint8_t *buf = NULL;
	uint32_t len;
	int ret;

	ret = hgt_guest_option_build(name, trace_id, vt->nr, vt->vcpu, vt->tid, &buf, &len);
	if (ret)
		return ret;
	ob = (struct hgt_option_blob){ HGT_OPT_GUEST, len, buf };
	ret = hgt_tracedat_append_options(host_path, &ob, 1);
	free(buf);
	return ret;
}

/**
 * hgt__vcpus_from_kvm_entry - the vCPU threads among @tids (a VMM's threads, @n of them)
 * from the host's kvm_entry events: each thread's vcpu_id, as trace-cmd maps them when
 * the threads have no names. Returns 0 (@out->nr may be 0: no such events) or -errno.
 */
int hgt__vcpus_from_kvm_entry(struct hgt_input *host, const int *tids, int n,
			      struct hgt_vcpu_threads *out)
{
	struct tep_handle *tep = hgt_input_tep(host);
	struct tep_event *ev = tep ? tep_find_event_by_name(tep, "kvm", "kvm_entry") : NULL;
	int top = hgt_input_top_buffer(host), *vcpu = calloc((size_t)(n ? n : 1), sizeof(int));
	int ret = 0, found = 0;

	memset(out, 0, sizeof(*out));
	if (!vcpu)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		vcpu[i] = -1;
	for (int cpu = 0; ev && top >= 0 && cpu < hgt_input_nr_cpus(host) && found < n; cpu++) {
		struct hgt_cursor *c = hgt_cursor_open(host, top, cpu);
		struct tep_record rec;

		while (c && found < n && hgt_cursor_next(c, &rec) > 0) {
			unsigned long long pid, v;

			if (tep_data_type(tep, &rec) != ev->id ||
			    tep_get_common_field_val(NULL, ev, "common_pid", &rec, &pid, 0) ||
			    tep_get_field_val(NULL, ev, "vcpu_id", &rec, &v, 0))
				continue;
			for (int i = 0; i < n; i++)
				if (tids[i] == (int)pid && vcpu[i] < 0) {
					vcpu[i] = (int)v;
					found++;
				}
		}
		hgt_cursor_close(c);
	}
	out->vcpu = malloc(sizeof(int) * (size_t)(found ? found : 1));
	out->tid = malloc(sizeof(int) * (size_t)(found ? found : 1));
	if (!out->vcpu || !out->tid) {
		ret = -ENOMEM;
		hgt_vcpu_threads_free(out);
	}
	for (int i = 0; !ret && i < n; i++) {
		int k;

		if (vcpu[i] < 0)
			continue;
		/* sorted by vCPU id */
		for (k = out->nr; k > 0 && out->vcpu[k - 1] > vcpu[i]; k--) {
			out->vcpu[k] = out->vcpu[k - 1];
			out->tid[k] = out->tid[k - 1];
		}
		out->vcpu[k] = vcpu[i];
		out->tid[k] = tids[i];
		out->nr++;
	}
	free(vcpu);
	return ret;
}

/**
 * hgt__vmm_tids - every thread of process @pid (its /proc/PID/task). *@tids is
 * allocated (caller frees); returns the count or -errno.
 */
int hgt__vmm_tids(int pid, int **tids)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int n = 0;

	*tids = NULL;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		int tid = atoi(de->d_name), *t;

		if (tid <= 0)
			continue;
		t = realloc(*tids, sizeof(int) * (size_t)(n + 1));
		if (!t) {
			closedir(d);
			free(*tids);
			*tids = NULL;
			return -ENOMEM;
		}
		*tids = t;
		t[n++] = tid;
	}
	closedir(d);
	return n;
}
