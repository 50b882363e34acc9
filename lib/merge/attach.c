// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * hgt_attach(): trace-cmd attach's semantics with its faults fixed.
 *  - vCPU ids stored as they are (trace-cmd stores the loop index);
 *  - a version 6 file is rewritten as version 7 (trace-cmd cannot append to it);
 *  - every check happens before anything is written, and a failure while writing puts
 *    both files back;
 *  - without -c the guest CPU count comes from the PIDs that ran vCPUs (trace-cmd writes a
 *    TIME_SHIFT with no CPUs, which shifts nothing);
 *  - without -s the offsets come from KVM's debugfs, the host's kvm_write_tsc_offset
 *    events (one sample per write, a step function), or are inferred from the trace
 *    (hgtrace/infer.h) with an error bound, or attach refuses with the reason;
 *  - without PIDs the vCPU threads come from the host's GUEST entry or the threads' names;
 *  - a guest file with no trace id gets one; a host with no TSC2NSEC gives the guest none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/attach.h>
#include <hgtrace/infer.h>
#include <hgtrace/clock.h>
#include <hgtrace/merge.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>

#include "../clock/kvm-local.h"
#include "merge-local.h"
#include "../common/common-local.h"
#include "../private/tracedat.h"
#include "../private/vmm.h"

static int parse_num(const char *s, const char **end, int64_t *v)
{
	char *e;

	errno = 0;
	if (*s == '-')
		*v = strtoll(s, &e, 0);
	else
		*v = (int64_t)strtoull(s, &e, 0);
	if (errno || e == s)
		return -EINVAL;
	*end = e;
	return 0;
}

int hgt_attach_parse_sample(const char *s, struct hgt_attach_sample *out)
{
	int64_t *f[4] = { &out->offset, &out->scaling, &out->frac, &out->timestamp };
	const char *p = s;
	int i;

	out->scaling = 1;
	out->frac = 0;
	out->timestamp = 0;
	for (i = 0; i < 4; i++) {
		if (parse_num(p, &p, f[i]))
			return -EINVAL;
		if (!*p)
			break;
		if (*p != ',' || i == 3)
			return -EINVAL;
		p++;
	}
	if (out->scaling <= 0 || out->frac < 0 || out->frac > 63)
		return -EINVAL;
	return 0;
}

struct tsc_write {
	uint32_t vcpu;
	uint64_t ts;
	int64_t next;
};

struct scan {
	int *vcpu_of; /* per listed pid: vCPU id or -1 */
	int mapped;
	struct tsc_write *w;
	int nr_w, max_w;
};

static bool clock_is_tsc(const char *c)
{
	return c && (!strcmp(c, "x86-tsc") || !strcmp(c, "tsc2nsec"));
}

/* Walk the host's top buffer in time order over kvm_entry/kvm_exit/kvm_write_tsc_offset. */
static int scan_host(struct hgt_input *host, const struct hgt_attach_opts *o, struct scan *sc,
		     bool need_writes)
{
	struct tep_handle *tep = hgt_input_tep(host);
	struct tep_event *entry = tep_find_event_by_name(tep, "kvm", "kvm_entry");
	struct tep_event *exit = tep_find_event_by_name(tep, "kvm", "kvm_exit");
	struct tep_event *wto = tep_find_event_by_name(tep, "kvm", "kvm_write_tsc_offset");
	int top = hgt_input_top_buffer(host), i, ret = 0, type_off = hgt__type_offset(tep);
	const struct hgt_buffer *b = hgt_input_buffer(host, top);
	struct hgt_cursor **cur = NULL;
	struct hgt_merge *m = NULL;
	struct tep_record *rec;
	int want = o->nr_cpus > 0 && o->nr_cpus < o->nr_pids ? o->nr_cpus : o->nr_pids;

	if (!entry && !exit)
		return 0; /* no kvm events: the caller maps by thread names */
	if (!b)
		return hgt__errorf(EINVAL, "%s: the host file has no top-level trace data",
				   hgt_input_path(host));
	m = hgt_merge_new();
	cur = calloc((size_t)b->nr_cpus + 1, sizeof(*cur));
	if (!m || !cur) {
		ret = -ENOMEM;
		goto out;
	}
	ret = hgt__merge_add_top(m, host, &hgt__raw_clock, cur, NULL);
	if (ret < 0)
		goto out;
	while ((ret = hgt_merge_next(m, &rec, NULL, NULL)) > 0) {
		int type = hgt__record_type(tep, type_off, rec);
		unsigned long long v, pid;
		struct tep_event *ev;
		int k;

		if (entry && type == entry->id)
			ev = entry;
		else if (exit && type == exit->id)
			ev = exit;
		else if (wto && type == wto->id)
			ev = wto;
		else
			continue;
		if (tep_get_field_val(NULL, ev, "vcpu_id", rec, &v, 0))
			continue;
		if (ev == wto) {
			unsigned long long next;

			if (tep_get_field_val(NULL, ev, "next_tsc_offset", rec, &next, 0))
				continue;
			if (sc->nr_w == sc->max_w) {
				int n = sc->max_w ? 2 * sc->max_w : 64;
				struct tsc_write *w = realloc(sc->w, sizeof(*w) * (size_t)n);

				if (!w) {
					ret = -ENOMEM;
					goto out;
				}
				sc->w = w;
				sc->max_w = n;
			}
			sc->w[sc->nr_w++] =
				(struct tsc_write){ (uint32_t)v, rec->ts, (int64_t)next };
			continue;
		}
		if (tep_get_common_field_val(NULL, ev, "common_pid", rec, &pid, 0))
			continue;
		for (k = 0; k < o->nr_pids; k++) {
			if (o->pids[k] != (int)pid || sc->vcpu_of[k] >= 0)
				continue;
			sc->vcpu_of[k] = (int)v;
			sc->mapped++;
		}
		if (sc->mapped >= want && !need_writes)
			break;
	}
	if (ret > 0)
		ret = 0;
out:
	hgt_merge_free(m);
	for (i = 0; cur && i < b->nr_cpus; i++)
		hgt_cursor_close(cur[i]);
	free(cur);
	return ret;
}

/* The host's first timestamp (raw), where the first sample's relation starts. */
static uint64_t first_ts(struct hgt_input *host)
{
	int top = hgt_input_top_buffer(host);
	uint64_t t = UINT64_MAX;

	for (int cpu = 0; top >= 0 && cpu < hgt_input_nr_cpus(host); cpu++) {
		struct hgt_cursor *c = hgt_cursor_open(host, top, cpu);
		struct tep_record rec;

		if (c && hgt_cursor_next(c, &rec) > 0 && rec.ts < t)
			t = rec.ts;
		hgt_cursor_close(c);
	}
	return t == UINT64_MAX ? 0 : t;
}

/* Samples of guest CPUs 0..ncpu-1 (vCPU ids @ids) from KVM's debugfs and the host's
 * kvm_write_tsc_offset events: exact, a step per write. *@vals holds the arrays. */
static int kvm_samples(struct hgt_input *host, const struct hgt_kvm_vm *vm, const int *ids,
		       int ncpu, struct hgt_time_shift_cpu *tcpu, int64_t **vals)
{
	struct hgt__tsc_write *w = NULL;
	int nw = 0, ret, i, per;
	uint64_t t0 = first_ts(host);

	ret = hgt__tsc_writes(host, &w, &nw);
	if (ret)
		return ret;
	per = nw + 1;
	*vals = calloc((size_t)ncpu * (size_t)per * 4, sizeof(int64_t));
	if (!*vals) {
		free(w);
		return -ENOMEM;
	}
	for (i = 0; i < ncpu; i++) {
		const struct hgt_kvm_vcpu *v = NULL;
		int64_t *b = *vals + (size_t)i * (size_t)per * 4;
		int n;

		for (int k = 0; k < vm->nr; k++)
			if (vm->vcpus[k].id == ids[i])
				v = &vm->vcpus[k];
		if (!v) {
			ret = hgt__errorf(ENOENT, "%s has no vcpu%d (guest CPU %d)", vm->dir,
					  ids[i], i);
			break;
		}
		n = hgt__kvm_samples(v, false, t0, w, nw, b, b + per, b + 2 * per, b + 3 * per,
				     per);
		if (n < 0) {
			ret = n;
			break;
		}
		tcpu[i] = (struct hgt_time_shift_cpu){ (uint32_t)n, b, b + per, b + 2 * per,
						       b + 3 * per };
	}
	free(w);
	return ret;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* Rewrite a v6 file as v7 next to it; *tmp gets the new path (caller frees). */
static int to_v7(const char *path, char **tmp, FILE *log)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = HGT_COMPRESS_NONE);
	struct hgt_input *in = hgt_input_open(path, &oo);
	size_t n = strlen(path) + 32;
	int ret;

	if (!in)
		return -errno;
	*tmp = malloc(n);
	if (!*tmp) {
		hgt_input_close(in);
		return -ENOMEM;
	}
	snprintf(*tmp, n, "%s.hgtrace-v7.%d", path, (int)getpid());
	ret = hgt_tracedat_convert(in, *tmp, &co);
	hgt_input_close(in);
	if (ret) {
		free(*tmp);
		*tmp = NULL;
		return ret;
	}
	if (log)
		fprintf(log, "%s: version 6 cannot be appended to: rewriting it as version 7\n",
			path);
	return 0;
}

struct plan {
	uint8_t *guest_opt, *shift_opt;
	uint32_t guest_len, shift_len;
	uint32_t t2n[4];
	bool has_t2n;
	uint64_t new_id;
	char cpustat[512];
};

/* The host threads named as vCPUs ("CPU N/KVM", "CPU N/TCG"): *@ids and *@pids. */
static int threads_by_name(struct hgt_input *host, int **ids, int **pids, int *n)
{
	static const char *const kinds[] = { "KVM", "TCG", "HVF" };
	struct tep_handle *tep = hgt_input_tep(host);
	int miss = 0;

	*n = 0;
	for (int v = 0; v < HGT__MAX_CPUS && miss < 64; v++) {
		int found = 0;

		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			struct tep_cmdline *cl = NULL;
			char comm[32];

			snprintf(comm, sizeof(comm), "CPU %d/%s", v, kinds[k]);
			while ((cl = tep_data_pid_from_comm(tep, comm, cl))) {
				int *ni, *np;

				if (found++)
					return hgt__errorf(
						EINVAL,
						"%s: several threads are named '%s' (several VMs?): give the vCPU thread PIDs of this guest",
						hgt_input_path(host), comm);
				ni = realloc(*ids, sizeof(int) * (size_t)(*n + 1));
				if (ni)
					*ids = ni;
				np = realloc(*pids, sizeof(int) * (size_t)(*n + 1));
				if (np)
					*pids = np;
				if (!ni || !np)
					return -ENOMEM;
				(*ids)[*n] = v;
				(*pids)[*n] = tep_cmdline_pid(tep, cl);
				(*n)++;
			}
		}
		miss = found ? 0 : miss + 1;
	}
	return 0;
}

/* The limit of an inferred bound: @o's, else 1 ms in the host's TSC units. */
static uint64_t max_bound(struct hgt_input *host, const struct hgt_attach_opts *o)
{
	uint32_t mult = 0, shift = 0;

	if (o->infer_max_bound)
		return o->infer_max_bound;
	if ((!hgt_input_tsc2nsec(host, &mult, &shift, NULL) || !mult) &&
	    hgt_tsc2nsec_read(&mult, &shift))
		return 3000000; /* 1 ms at 3 GHz */
	return (uint64_t)(((unsigned __int128)1000000 << shift) / mult);
}

static const char *infer_source(enum hgt_infer_source s)
{
	return s == HGT_INFER_KVM ? "kvm_entry/kvm_exit windows" : "sched_switch running intervals";
}

/* One clear line for a vCPU whose offset cannot be inferred. */
static int infer_refusal(const char *gpath, int cpu, int id, const struct hgt_infer_cpu *c,
			 uint64_t limit)
{
	const struct hgt_infer_result *r = &c->r;

	switch (r->status) {
	case HGT_INFER_EMPTY:
		return hgt__errorf(
			ERANGE,
			"%s: guest CPU %d (vCPU %d, host thread %d): no offset puts all %llu events inside the thread's %s: at the best offset of those that agree (%lld) %llu events disagree: another guest's file, the wrong threads, host records missing, or an offset that drifts (try --drift)",
			gpath, cpu, id, c->pid, (unsigned long long)r->events,
			infer_source(c->source), (long long)r->best,
			(unsigned long long)r->outside);
	case HGT_INFER_NO_OVERLAP:
		return hgt__errorf(
			ERANGE,
			"%s: guest CPU %d (vCPU %d, host thread %d): every offset that fits the thread's %s puts at most %llu of the guest's events in the host's span, where %llu could be: the events do not match this thread (another guest's file, the wrong threads), or the offset drifts (try --drift)",
			gpath, cpu, id, c->pid, infer_source(c->source),
			(unsigned long long)r->in_span, (unsigned long long)r->reach);
	case HGT_INFER_AMBIGUOUS:
		return hgt__errorf(
			ERANGE,
			"%s: guest CPU %d (vCPU %d): offsets %lld..%lld (%llu events in the host's span) and %lld..%lld (%llu) both fit: ambiguous, give -s OFFSET",
			gpath, cpu, id, (long long)r->lo, (long long)r->hi,
			(unsigned long long)r->in_span, (long long)r->alt_lo, (long long)r->alt_hi,
			(unsigned long long)r->alt_in_span);
	case HGT_INFER_TOO_WIDE:
		return hgt__errorf(
			ERANGE,
			"%s: guest CPU %d (vCPU %d): the offsets that fit all %llu events span %lld..%lld, a bound of +-%llu, over the limit %llu (--max-bound): too few events to pin it, give -s OFFSET",
			gpath, cpu, id, (unsigned long long)r->events, (long long)r->lo,
			(long long)r->hi, (unsigned long long)r->bound, (unsigned long long)limit);
	default:
		return hgt__errorf(
			ENOENT,
			"%s: guest CPU %d (vCPU %d, host thread %d): the host has no %s of that thread: nothing to infer its offset from",
			gpath, cpu, id, c->pid, infer_source(c->source));
	}
}

static int64_t to_offset(int64_t c, uint64_t ratio, unsigned int frac)
{
	if (!ratio)
		return c;
	return (int64_t)(((__int128)c * (__int128)ratio) >> frac);
}

/* A CPU's inference gives samples: the whole trace fits, or two time slices do. */
static bool usable(const struct hgt_infer_cpu *c)
{
	int ok = 0;

	if (c->r.status == HGT_INFER_OK)
		return true;
	for (int s = 0; s < c->nr_slices; s++)
		ok += c->slice[s].status == HGT_INFER_OK;
	return ok >= 2;
}

/* What an inferred estimate rests on, said with it (the bound holds either way). */
static const char *assumption(const struct hgt_attach_opts *o, enum hgt_infer_source src)
{
	static __thread char buf[200];

	if (o->infer_gaps) {
		snprintf(buf, sizeof(buf), "estimate from the given gaps (entry %llu, exit %llu)",
			 (unsigned long long)o->infer_entry_gap,
			 (unsigned long long)o->infer_exit_gap);
		return buf;
	}
	return src == HGT_INFER_KVM
		       ? "estimate: the middle, which assumes the gap after kvm_entry equals the gap before kvm_exit (--gaps to correct it)"
		       : "estimate: the middle, which assumes the gap after a switch-in equals the gap before a switch-out (--gaps to correct it)";
}

/*
 * TIME_SHIFT samples inferred from the trace, per guest CPU (*@vals holds the arrays):
 * one sample, or with drift slices one per slice that could be inferred, interpolated.
 */
static int infer_samples(struct hgt_input *host, struct hgt_input *guest, const char *gpath,
			 const int *ids, const int *pids, int ncpu, const struct hgt_attach_opts *o,
			 bool sched, struct hgt_time_shift_cpu *tcpu, int64_t **vals,
			 uint32_t *flags, struct hgt_attach_result *res, struct plan *pl)
{
	HGT_OPTS(hgt_infer_pair_opts, po, .ratio = o->infer_ratio, .frac = o->infer_frac,
		 .max_bound = max_bound(host, o), .sched = sched || o->infer_sched,
		 .drift_slices = o->infer_drift_slices, .gaps = o->infer_gaps,
		 .entry_gap = o->infer_entry_gap, .exit_gap = o->infer_exit_gap);
	struct hgt_infer_cpu *c = calloc((size_t)ncpu, sizeof(*c));
	uint64_t events = 0, worst = 0;
	int ret, per = o->infer_drift_slices > 1 ? o->infer_drift_slices : 1, ok = -1;

	*vals = calloc((size_t)ncpu * (size_t)per * 4, sizeof(int64_t));
	if (!c || !*vals) {
		free(c);
		return -ENOMEM;
	}
	for (int i = 0; i < ncpu; i++)
		c[i].pid = i < res->nr_mapped ? pids[i] : 0;
	ret = hgt_infer_pair(host, guest, c, ncpu, &po);
	for (int i = 0; !ret && i < ncpu; i++) {
		const struct hgt_infer_result *r = &c[i].r;

		if (usable(&c[i])) {
			ok = i;
			events += r->events;
			continue;
		}
		/* a guest CPU with no events: its offset changes nothing */
		if (r->events == 0 && c[i].pid > 0)
			continue;
		ret = infer_refusal(gpath, i, i < res->nr_mapped ? ids[i] : -1, &c[i],
				    po.max_bound);
	}
	if (!ret && ok < 0)
		ret = hgt__errorf(
			ENOENT, "%s: the guest file has no events to infer its offset from", gpath);
	for (int i = 0; !ret && i < ncpu; i++) {
		const struct hgt_infer_cpu *x = usable(&c[i]) ? &c[i] : &c[ok];
		int64_t *b = *vals + (size_t)i * (size_t)per * 4;
		uint64_t bound = x->r.bound;
		uint32_t n = 0;

		for (int s = 0; per > 1 && s < x->nr_slices; s++) {
			if (x->slice[s].status != HGT_INFER_OK)
				continue;
			if (!n || x->slice[s].bound > bound)
				bound = x->slice[s].bound;
			b[n] = (int64_t)hgt_tsc_host_to_guest((uint64_t)x->slice_time[s],
							      o->infer_ratio, o->infer_frac, 0);
			b[per + n] = to_offset(x->slice[s].estimate, o->infer_ratio, o->infer_frac);
			n++;
		}
		if (n < 2) { /* one offset for the whole trace */
			n = 1;
			b[0] = 0;
			b[per] = to_offset(x->r.estimate, o->infer_ratio, o->infer_frac);
		} else {
			*flags |= HGT_TSYNC_INTERPOLATE;
		}
		for (uint32_t k = 0; k < n; k++) {
			b[2 * per + k] = o->infer_ratio ? (int64_t)o->infer_ratio : 1;
			b[3 * per + k] = o->infer_ratio ? o->infer_frac : 0;
		}
		tcpu[i] = (struct hgt_time_shift_cpu){ n, b, b + per, b + 2 * per, b + 3 * per };
		if (bound > worst)
			worst = bound;
		if (o->log) {
			fprintf(o->log,
				"guest CPU %d: offset %lld +- %lld (inferred from %llu events in %llu %s of thread %d%s)",
				i, (long long)b[per],
				(long long)to_offset((int64_t)bound, o->infer_ratio,
						     o->infer_frac) +
					(o->infer_ratio ? 1 : 0),
				(unsigned long long)x->r.events, (unsigned long long)x->windows,
				infer_source(x->source), x->pid,
				x != &c[i] ? "; this CPU has no events: guest CPU's taken" : "");
			if (x != &c[i])
				fprintf(o->log, " %d", ok);
			if (n > 1)
				fprintf(o->log, "; %u samples over time", n);
			fprintf(o->log, "; %s\n", assumption(o, x->source));
		}
	}
	if (!ret) {
		res->inferred = true;
		res->infer_bound = worst;
		snprintf(
			pl->cpustat, sizeof(pl->cpustat),
			"hgtrace sync: inferred from the trace (%s), %llu events on %d CPUs%s, %s; bound=%llu\n",
			infer_source(c[ok].source), (unsigned long long)events, ncpu,
			*flags & HGT_TSYNC_INTERPOLATE ? ", offset over time" : "",
			assumption(o, c[ok].source), (unsigned long long)worst);
	}
	hgt_infer_cpu_free(c, ncpu);
	free(c);
	return ret;
}

/* One attach: the two inputs, what is found in them, and what will be written. */
struct attach {
	struct hgt_attach_opts o;
	const char *host_path, *guest_path;
	struct hgt_input *host, *guest;
	FILE *log;
	struct scan sc;
	struct plan pl;
	struct hgt_attach_result r;
	struct hgt_time_shift ts;
	struct hgt_time_shift_cpu *tcpu; /* per guest CPU */
	int64_t *vals;			 /* the samples tcpu points into */
	int64_t *exact_off;		 /* kvm_write_tsc_offset's, beside inferred ones */
	int *ids, *pids;		 /* vCPU id and host thread per guest CPU */
	int *found_pids, *named_ids;	 /* from the GUEST entry or the threads' names */
	int ncpu;
	uint64_t host_id, guest_id;
	char *htmp, *gtmp; /* version 7 rewrites of version 6 files */
	bool by_name, have_writes;
};

static int check_opts(const struct hgt_attach_opts *o)
{
	if (o->nr_pids < 0 || (o->nr_pids && !o->pids))
		return hgt__errorf(EINVAL, "attach: bad PID list");
	if (o->nr_cpus < 0 || o->nr_cpus > HGT__MAX_CPUS)
		return hgt__errorf(EINVAL, "attach: -c %d: out of range", o->nr_cpus);
	if (o->infer_frac > 63 || o->infer_drift_slices < 0 || o->infer_drift_slices > 4096)
		return hgt__errorf(EINVAL, "attach: inference options out of range");
	for (int i = 0; i < o->nr_samples; i++)
		if (o->samples[i].scaling <= 0 || o->samples[i].frac < 0 || o->samples[i].frac > 63)
			return hgt__errorf(
				EINVAL,
				"attach: -s #%d: scaling must be > 0 and fraction bits 0 to 63",
				i + 1);
	return 0;
}

/* The guest's trace id: its own (not the host's), or a new one for a file without. */
static int trace_ids(struct attach *a)
{
	hgt_input_trace_id(a->host, &a->host_id);
	if (hgt_input_trace_id(a->guest, &a->guest_id) && a->guest_id) {
		if (a->guest_id != a->host_id)
			return 0;
		return hgt__errorf(
			EINVAL,
			"%s: the guest file has the host's trace id 0x%llx: the same recording twice?",
			a->guest_path, (unsigned long long)a->guest_id);
	}
	/* older trace-cmd and other writers: give it one */
	while (!a->guest_id || a->guest_id == a->host_id)
		if (getrandom(&a->guest_id, sizeof(a->guest_id), 0) != sizeof(a->guest_id))
			return hgt__errorf(errno, "attach: getrandom: %s", strerror(errno));
	a->pl.new_id = a->guest_id;
	a->r.new_trace_id = true;
	return 0;
}

static const char *top_clock(struct hgt_input *in)
{
	int top = hgt_input_top_buffer(in);

	return top >= 0 ? hgt_input_buffer(in, top)->clock : NULL;
}

/* Both files opened, two recordings (not one twice), both in TSC cycles. */
static int open_pair(struct attach *a)
{
	HGT_OPTS(hgt_open_opts, oo, .flags = HGT_OPEN_NO_PLUGINS | HGT_OPEN_QUIET);
	const char *hclock, *gclock;
	int ret;

	a->host = hgt_input_open(a->host_path, &oo);
	if (!a->host)
		return -errno;
	a->guest = hgt_input_open(a->guest_path, &oo);
	if (!a->guest)
		return -errno;
	if (hgt_same_file(a->host_path, a->guest_path) == 1)
		return hgt__errorf(
			EINVAL,
			"%s: the same file as the host file %s: attach needs the guest's own recording",
			a->guest_path, a->host_path);
	ret = trace_ids(a);
	if (ret)
		return ret;
	hclock = top_clock(a->host);
	gclock = top_clock(a->guest);
	if (!clock_is_tsc(hclock))
		return hgt__errorf(
			EINVAL,
			"%s: host trace clock is '%s': attach needs x86-tsc or tsc2nsec (record the host with -C x86-tsc or -C tsc2nsec)",
			a->host_path, hclock ? hclock : "");
	if (!clock_is_tsc(gclock))
		return hgt__errorf(
			EINVAL,
			"%s: guest trace clock is '%s', the host's is '%s': the guest must be recorded with -C x86-tsc to be mapped onto the host's TSC",
			a->guest_path, gclock ? gclock : "", hclock);
	return 0;
}

/* No PIDs given: the host's map of this guest, else threads named as vCPUs. */
static int pids_from_host(struct attach *a)
{
	struct hgt_guest existing;
	int nf = 0, ret;

	if (!a->r.new_trace_id && !hgt_input_guest_by_id(a->host, a->guest_id, &existing)) {
		a->named_ids = malloc(sizeof(int) * (size_t)(existing.nr_vcpus + 1));
		a->found_pids = malloc(sizeof(int) * (size_t)(existing.nr_vcpus + 1));
		if (!a->named_ids || !a->found_pids)
			return -ENOMEM;
		for (int i = 0; i < existing.nr_vcpus; i++)
			if (existing.cpu_pid[i] > 0) {
				a->named_ids[nf] = i;
				a->found_pids[nf++] = existing.cpu_pid[i];
			}
	} else {
		ret = threads_by_name(a->host, &a->named_ids, &a->found_pids, &nf);
		if (ret)
			return ret;
	}
	if (!nf)
		return hgt__errorf(
			ESRCH,
			"%s: no PIDs given, the host has no GUEST entry for this guest and no thread named 'CPU N/KVM' or 'CPU N/TCG': give the vCPU thread PIDs",
			a->host_path);
	a->o.pids = a->found_pids;
	a->o.nr_pids = nf;
	return 0;
}

/* Which vCPU each PID ran: from the host's kvm events, else from the threads' names. */
static int find_vcpus(struct attach *a)
{
	struct scan *sc = &a->sc;
	int i, ret;

	if (!a->o.nr_pids) {
		ret = pids_from_host(a);
		if (ret)
			return ret;
	}
	sc->vcpu_of = malloc(sizeof(int) * (size_t)a->o.nr_pids);
	if (!sc->vcpu_of)
		return -ENOMEM;
	for (i = 0; i < a->o.nr_pids; i++)
		sc->vcpu_of[i] = -1;
	ret = scan_host(a->host, &a->o, sc, a->o.nr_samples == 0);
	if (ret)
		return ret;
	if (!sc->mapped) {
		/* no kvm events of them (QEMU TCG, or not recorded): their names say */
		struct tep_handle *tep = hgt_input_tep(a->host);

		for (i = 0; i < a->o.nr_pids; i++) {
			const char *comm = tep_data_comm_from_pid(tep, a->o.pids[i]);
			int v = a->named_ids ? a->named_ids[i] : hgt__vcpu_of_comm(comm);

			if (v >= 0) {
				sc->vcpu_of[i] = v;
				sc->mapped++;
			}
		}
		a->by_name = sc->mapped > 0;
	}
	if (!sc->mapped)
		return hgt__errorf(
			ESRCH,
			"%s: none of the %d PIDs given ran a vCPU (no kvm_entry/kvm_exit with their common_pid, and none is named 'CPU N/KVM' or 'CPU N/TCG')",
			a->host_path, a->o.nr_pids);
	return 0;
}

/* Guest CPU i <-> the i-th vCPU id in ascending order (trace-cmd's convention). */
static int map_ids(struct attach *a)
{
	const struct scan *sc = &a->sc;
	int i, k;

	a->ids = malloc(sizeof(int) * (size_t)sc->mapped);
	a->pids = malloc(sizeof(int) * (size_t)sc->mapped);
	if (!a->ids || !a->pids)
		return -ENOMEM;
	for (i = 0, k = 0; i < a->o.nr_pids; i++)
		if (sc->vcpu_of[i] >= 0)
			a->ids[k++] = sc->vcpu_of[i];
	qsort(a->ids, (size_t)sc->mapped, sizeof(int), cmp_int);
	for (i = 0; i < sc->mapped; i++)
		for (k = 0; k < a->o.nr_pids; k++)
			if (sc->vcpu_of[k] == a->ids[i])
				a->pids[i] = a->o.pids[k];
	for (i = 1; i < sc->mapped; i++)
		if (a->ids[i] == a->ids[i - 1])
			return hgt__errorf(
				EINVAL,
				"%s: PIDs %d and %d both ran vCPU %d: give the PIDs of one guest only",
				a->host_path, a->pids[i - 1], a->pids[i], a->ids[i]);
	a->ncpu = a->o.nr_cpus ? a->o.nr_cpus : sc->mapped;
	a->r.nr_mapped = sc->mapped;
	a->tcpu = calloc((size_t)a->ncpu, sizeof(*a->tcpu));
	if (!a->tcpu)
		return -ENOMEM;
	/* every guest CPU has a kvm_write_tsc_offset */
	a->have_writes = a->ncpu <= sc->mapped;
	for (i = 0; a->have_writes && i < a->ncpu; i++) {
		for (k = 0; k < sc->nr_w && (int)sc->w[k].vcpu != a->ids[i]; k++)
			;
		a->have_writes = k < sc->nr_w;
	}
	return 0;
}

/* -s: the samples given, the last one for the CPUs after them. */
static int samples_given(struct attach *a)
{
	a->vals = calloc((size_t)a->ncpu * 4, sizeof(int64_t));
	if (!a->vals)
		return -ENOMEM;
	for (int i = 0; i < a->ncpu; i++) {
		const struct hgt_attach_sample *s =
			&a->o.samples[i < a->o.nr_samples ? i : a->o.nr_samples - 1];
		int64_t *v = a->vals + 4 * i;

		v[0] = s->timestamp;
		v[1] = s->offset;
		v[2] = s->scaling;
		v[3] = s->frac;
		a->tcpu[i] = (struct hgt_time_shift_cpu){ 1, v, v + 1, v + 2, v + 3 };
	}
	return 0;
}

/* One sample per kvm_write_tsc_offset: from the write on, guest = host + next_tsc_offset. */
static int samples_from_writes(struct attach *a)
{
	const struct scan *sc = &a->sc;
	int total = sc->nr_w, off = 0;
	int64_t *vals = calloc((size_t)(total ? total : 1) * 4, sizeof(int64_t));

	if (!vals)
		return -ENOMEM;
	a->vals = vals;
	for (int i = 0; i < a->ncpu; i++) {
		struct hgt_time_shift_cpu *t = &a->tcpu[i];
		int n = 0;

		for (int k = 0; k < sc->nr_w; k++)
			n += (int)sc->w[k].vcpu == a->ids[i];
		*t = (struct hgt_time_shift_cpu){ (uint32_t)n, vals + off, vals + total + off,
						  vals + 2 * total + off, vals + 3 * total + off };
		n = 0;
		for (int k = 0; k < sc->nr_w; k++) {
			if ((int)sc->w[k].vcpu != a->ids[i])
				continue;
			vals[off + n] = (int64_t)(sc->w[k].ts + (uint64_t)sc->w[k].next);
			vals[total + off + n] = -sc->w[k].next;
			vals[2 * total + off + n] = 1;
			vals[3 * total + off + n] = 0;
			n++;
		}
		off += n;
	}
	a->r.from_write_tsc_offset = true;
	return 0;
}

/* Offsets inferred from the trace; kvm_write_tsc_offset's, where known, printed beside. */
static int samples_inferred(struct attach *a)
{
	int i, k, ret;

	if (a->ncpu > a->sc.mapped)
		return hgt__errorf(
			EINVAL,
			"attach: -c %d but only %d PIDs ran vCPUs: without -s the offsets of the others are unknown",
			a->ncpu, a->sc.mapped);
	if (a->have_writes) {
		a->exact_off = calloc((size_t)a->ncpu, sizeof(int64_t));
		for (i = 0; a->exact_off && i < a->ncpu; i++)
			for (k = 0; k < a->sc.nr_w; k++)
				if ((int)a->sc.w[k].vcpu == a->ids[i]) {
					a->exact_off[i] = -a->sc.w[k].next;
					break;
				}
	}
	ret = infer_samples(a->host, a->guest, a->guest_path, a->ids, a->pids, a->ncpu, &a->o,
			    a->by_name, a->tcpu, &a->vals, &a->ts.flags, &a->r, &a->pl);
	if (ret)
		return ret;
	for (i = 0; a->exact_off && a->log && i < a->ncpu; i++) {
		int64_t d = a->tcpu[i].offset[0] - a->exact_off[i];

		fprintf(a->log,
			"guest CPU %d: kvm_write_tsc_offset says %lld: %lld from the inferred offset, %s its bound\n",
			i, (long long)a->exact_off[i], (long long)d,
			(uint64_t)(d < 0 ? -d : d) <= a->r.infer_bound ? "within" : "OUTSIDE");
	}
	return 0;
}

/* TIME_SHIFT samples per guest CPU, from the first source that has them. */
static int find_samples(struct attach *a)
{
	int ret;

	if (a->o.nr_samples)
		return samples_given(a);
	if (a->o.kvm && !a->o.infer) {
		ret = kvm_samples(a->host, a->o.kvm, a->ids, a->ncpu, a->tcpu, &a->vals);
		a->r.from_kvm = !ret;
		return ret;
	}
	if (a->have_writes && !a->o.infer)
		return samples_from_writes(a);
	return samples_inferred(a);
}

/* The options to append: TIME_SHIFT and TSC2NSEC for the guest, GUEST for the host. */
static int build_options(struct attach *a)
{
	uint32_t mult = 0, shift = 0;
	uint64_t toff = 0;
	struct hgt_guest existing;
	int ret;

	a->ts.peer_id = a->host_id;
	a->ts.nr_cpus = a->ncpu;
	a->ts.cpus = a->tcpu;
	ret = hgt_time_shift_option_build(&a->ts, &a->pl.shift_opt, &a->pl.shift_len);
	if (ret)
		return ret;
	/* a host without TSC2NSEC shows cycles: so must the guest (trace-cmd writes a
	 * {0,0,0} option that prints the guest in sec.usec and the host in cycles) */
	a->pl.has_t2n = hgt_input_tsc2nsec(a->host, &mult, &shift, &toff) && mult;
	a->pl.t2n[0] = mult;
	a->pl.t2n[1] = shift;
	memcpy(&a->pl.t2n[2], &toff, 8);
	a->r.host_already_mapped = !hgt_input_guest_by_id(a->host, a->guest_id, &existing);
	a->r.nr_cpus = a->ncpu;
	if (a->r.host_already_mapped)
		return 0;
	return hgt_guest_option_build("", a->guest_id, a->sc.mapped, a->ids, a->pids,
				      &a->pl.guest_opt, &a->pl.guest_len);
}

/* Append to both files, or to neither: a failure on the host's puts the guest's back. */
static int append_both(struct attach *a, const char *gp, const char *hp)
{
	const struct plan *pl = &a->pl;
	struct hgt_option_blob gopts[4];
	struct hgt_option_blob hopt = { HGT_OPT_GUEST, pl->guest_len, pl->guest_opt };
	struct hgt__append_undo gundo;
	int ng = 0, ret;

	if (pl->new_id)
		gopts[ng++] = (struct hgt_option_blob){ HGT_OPT_TRACEID, 8, &pl->new_id };
	gopts[ng++] = (struct hgt_option_blob){ HGT_OPT_TIME_SHIFT, pl->shift_len, pl->shift_opt };
	if (pl->has_t2n)
		gopts[ng++] = (struct hgt_option_blob){ HGT_OPT_TSC2NSEC, 16, pl->t2n };
	if (pl->cpustat[0])
		gopts[ng++] =
			(struct hgt_option_blob){ HGT_OPT_CPUSTAT,
						  (uint32_t)strlen(pl->cpustat) + 1, pl->cpustat };
	ret = hgt__append_options(gp, gopts, ng, &gundo);
	if (ret || a->r.host_already_mapped)
		return ret;
	ret = hgt__append_options(hp, &hopt, 1, NULL);
	if (ret) {
		char keep[HGT__ERRLEN + 64];
		bool lost = !a->gtmp && hgt__append_undo(gp, &gundo);

		snprintf(keep, sizeof(keep), "%s%s", hgt_last_error(),
			 lost ? " (and the guest file could not be restored)" : "");
		hgt__set_last_error(keep);
	}
	return ret;
}

/* Everything is known: version 6 files rewritten as 7 beside them, appended, renamed. */
static int write_pair(struct attach *a)
{
	int ret;

	if (hgt_input_version(a->guest) < 7) {
		ret = to_v7(a->guest_path, &a->gtmp, a->log);
		if (ret)
			return ret;
		a->r.converted_guest = true;
	}
	if (!a->r.host_already_mapped && hgt_input_version(a->host) < 7) {
		ret = to_v7(a->host_path, &a->htmp, a->log);
		if (ret)
			return ret;
		a->r.converted_host = true;
	}
	hgt_input_close(a->host);
	hgt_input_close(a->guest);
	a->host = a->guest = NULL;
	ret = append_both(a, a->gtmp ? a->gtmp : a->guest_path, a->htmp ? a->htmp : a->host_path);
	if (ret)
		return ret;
	if (a->gtmp && rename(a->gtmp, a->guest_path))
		return hgt__errorf(errno, "%s: cannot replace it: %s", a->guest_path,
				   strerror(errno));
	free(a->gtmp);
	a->gtmp = NULL;
	if (a->htmp && rename(a->htmp, a->host_path))
		return hgt__errorf(errno, "%s: cannot replace it: %s", a->host_path,
				   strerror(errno));
	return 0;
}

static void log_result(const struct attach *a)
{
	const struct hgt_attach_result *r = &a->r;
	int i;

	if (r->new_trace_id)
		fprintf(a->log, "%s: no trace id: wrote one, 0x%llx\n", a->guest_path,
			(unsigned long long)a->guest_id);
	if (r->host_already_mapped)
		fprintf(a->log, "Guest is already mapped in host (id=0x%llx) .. skipping ...\n",
			(unsigned long long)a->guest_id);
	for (i = 0; i < a->sc.mapped; i++)
		fprintf(a->log, "guest CPU %d = vCPU %d, host thread %d%s\n", i, a->ids[i],
			a->pids[i], a->by_name ? " (by its name)" : "");
	for (i = 0; i < a->ncpu && !r->inferred; i++)
		fprintf(a->log, "guest CPU %d: %u sample%s, first offset %lld%s\n", i,
			a->tcpu[i].count, a->tcpu[i].count == 1 ? "" : "s",
			(long long)a->tcpu[i].offset[0],
			r->from_kvm		   ? " (KVM debugfs, exact)"
			: r->from_write_tsc_offset ? " (from kvm_write_tsc_offset)"
						   : "");
}

static void attach_free(struct attach *a)
{
	if (a->htmp) {
		unlink(a->htmp);
		free(a->htmp);
	}
	if (a->gtmp) {
		unlink(a->gtmp);
		free(a->gtmp);
	}
	hgt_input_close(a->host);
	hgt_input_close(a->guest);
	free(a->sc.vcpu_of);
	free(a->sc.w);
	free(a->ids);
	free(a->pids);
	free(a->found_pids);
	free(a->named_ids);
	free(a->exact_off);
	free(a->tcpu);
	free(a->vals);
	free(a->pl.guest_opt);
	free(a->pl.shift_opt);
}

/**
 * hgt_attach - attach a guest file to its host file.
 */
int hgt_attach(const char *host_path, const char *guest_path, const struct hgt_attach_opts *opts,
	       struct hgt_attach_result *res)
{
	struct attach a = { .host_path = host_path, .guest_path = guest_path };
	int ret;

	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(a.o))
		return -EINVAL;
	memcpy(&a.o, opts, opts->sz);
	a.log = a.o.log;
	ret = check_opts(&a.o);
	if (!ret)
		ret = open_pair(&a);
	if (!ret)
		ret = find_vcpus(&a);
	if (!ret)
		ret = map_ids(&a);
	if (!ret)
		ret = find_samples(&a);
	if (!ret)
		ret = build_options(&a);
	if (!ret)
		ret = write_pair(&a);
	if (!ret && a.log)
		log_result(&a);
	if (!ret && res)
		*res = a.r;
	attach_free(&a);
	return ret;
}
