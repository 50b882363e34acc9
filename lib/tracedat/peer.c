// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Peer options: TIME_SHIFT (in a guest file) and GUEST (in a host file), decoded at open
 * and built for writing; trace id generation.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hgtrace/peer.h>

#include "tracedat-local.h"

struct hgt__tsync {
	struct hgt_time_shift pub;
	struct hgt_time_shift_cpu *cpus;
	int64_t *vals; /* all arrays of all CPUs */
};

struct hgt__guest {
	char *name;
	uint64_t trace_id;
	int nr_vcpus;
	int *cpu_pid;
};

static int64_t get_i64(const struct hgt_input *in, const uint8_t *p)
{
	return (int64_t)hgt__get64(in, p);
}

struct sample {
	int64_t t, o, s, f;
};

static int cmp_sample(const void *a, const void *b)
{
	const struct sample *x = a, *y = b;

	return x->t < y->t ? -1 : x->t > y->t;
}

/* Decode one TIME_SHIFT payload; on success replace in->tsync. */
static int parse_time_shift(struct hgt_input *in, const struct hgt_option *op)
{
	const uint8_t *p = op->data;
	uint64_t size = op->size, pos = 16, total = 0, need;
	struct hgt__tsync *ts;
	uint32_t ncpu, i, j;
	bool has_frac;
	int64_t *v;

	if (size < 16)
		return 0; /* ignored, as trace-cmd does */
	ncpu = hgt__get32(in, p + 12);
	if (ncpu > HGT__MAX_CPUS)
		return hgt__error(in, op->file_offset, EBADMSG,
				  "TIME_SHIFT claims %u CPUs (limit %d)", ncpu, HGT__MAX_CPUS);
	for (i = 0; i < ncpu; i++) {
		uint32_t count;

		if (size - pos < 4)
			return hgt__error(in, op->file_offset + pos, EBADMSG,
					  "TIME_SHIFT cpu %u: no sample count (%u-byte option)", i,
					  op->size);
		count = hgt__get32(in, p + pos);
		if ((uint64_t)count * 24 > size - pos - 4)
			return hgt__error(
				in, op->file_offset + pos, EBADMSG,
				"TIME_SHIFT cpu %u claims %u samples, %llu bytes remain (trace-cmd 3.1.6 writes such an option when its guest CPUs' sample counts differ)",
				i, count, (unsigned long long)(size - pos - 4));
		pos += 4 + (uint64_t)count * 24;
		total += count;
	}
	need = total * 8;
	has_frac = size - pos >= need && total;
	ts = calloc(1, sizeof(*ts));
	if (!ts)
		return -ENOMEM;
	ts->cpus = calloc(ncpu ? ncpu : 1, sizeof(*ts->cpus));
	ts->vals = calloc(total ? total * 4 : 1, sizeof(int64_t));
	if (!ts->cpus || !ts->vals) {
		free(ts->cpus);
		free(ts->vals);
		free(ts);
		return -ENOMEM;
	}
	ts->pub.peer_id = hgt__get64(in, p);
	ts->pub.flags = hgt__get32(in, p + 8);
	ts->pub.nr_cpus = (int)ncpu;
	ts->pub.cpus = ts->cpus;
	v = ts->vals;
	{
		uint64_t fpos = pos; /* fractions follow all samples */

		pos = 16;
		for (i = 0; i < ncpu; i++) {
			uint32_t count = hgt__get32(in, p + pos);
			struct sample *s = malloc(sizeof(*s) * (count ? count : 1));
			uint32_t n = 0;

			if (!s) {
				free(ts->cpus);
				free(ts->vals);
				free(ts);
				return -ENOMEM;
			}
			pos += 4;
			for (j = 0; j < count; j++) {
				s[j].t = get_i64(in, p + pos + 8ULL * j);
				s[j].o = get_i64(in, p + pos + 8ULL * (count + j));
				s[j].s = get_i64(in, p + pos + 8ULL * (2 * count + j));
				s[j].f = has_frac ? get_i64(in, p + fpos + 8ULL * j) : 0;
			}
			pos += 24ULL * count;
			fpos += 8ULL * count;
			/* sorted by time, equal times collapsed (the first kept) */
			qsort(s, count, sizeof(*s), cmp_sample);
			for (j = 0; j < count; j++)
				if (!n || s[j].t != s[n - 1].t)
					s[n++] = s[j];
			ts->cpus[i].count = n;
			ts->cpus[i].time = v;
			ts->cpus[i].offset = v + n;
			ts->cpus[i].scaling = v + 2 * n;
			ts->cpus[i].frac = v + 3 * n;
			for (j = 0; j < n; j++) {
				v[j] = s[j].t;
				v[n + j] = s[j].o;
				v[2 * n + j] = s[j].s;
				v[3 * n + j] = s[j].f;
				if (s[j].f < 0 || s[j].f > 63) {
					long long bad = (long long)s[j].f;

					free(s);
					free(ts->cpus);
					free(ts->vals);
					free(ts);
					return hgt__error(
						in, op->file_offset, EBADMSG,
						"TIME_SHIFT cpu %u sample %u: %lld fraction bits (expected 0 to 63)",
						i, j, bad);
				}
			}
			v += 4 * n;
			free(s);
		}
	}
	hgt__tsync_free(in->tsync);
	in->tsync = ts;
	return 0;
}

void hgt__tsync_free(struct hgt__tsync *ts)
{
	if (!ts)
		return;
	free(ts->cpus);
	free(ts->vals);
	free(ts);
}

static int parse_guest(struct hgt_input *in, const struct hgt_option *op)
{
	const uint8_t *p = op->data, *nul;
	struct hgt__guest *g, *n;
	uint32_t cnt, i;
	uint64_t pos;

	nul = memchr(p, 0, op->size);
	if (!nul)
		return hgt__error(in, op->file_offset, EBADMSG, "GUEST option: name has no NUL");
	pos = (uint64_t)(nul - p) + 1;
	if (op->size - pos < 12)
		return hgt__error(in, op->file_offset, EBADMSG,
				  "GUEST option: %u bytes, too short for id and count", op->size);
	cnt = hgt__get32(in, p + pos + 8);
	if (cnt > HGT__MAX_CPUS || (uint64_t)cnt * 8 > op->size - pos - 12)
		return hgt__error(in, op->file_offset, EBADMSG,
				  "GUEST option claims %u vCPUs in %u bytes", cnt, op->size);
	n = realloc(in->guests, sizeof(*n) * (size_t)(in->nr_guests + 1));
	if (!n)
		return -ENOMEM;
	in->guests = n;
	g = &n[in->nr_guests];
	g->name = strndup((const char *)p, (size_t)(nul - p));
	g->trace_id = hgt__get64(in, p + pos);
	g->nr_vcpus = (int)cnt;
	g->cpu_pid = calloc(cnt ? cnt : 1, sizeof(int));
	if (!g->name || !g->cpu_pid) {
		free(g->name);
		free(g->cpu_pid);
		return -ENOMEM;
	}
	in->nr_guests++;
	for (i = 0; i < cnt; i++) {
		uint32_t vcpu = hgt__get32(in, p + pos + 12 + 8ULL * i);
		uint32_t pid = hgt__get32(in, p + pos + 16 + 8ULL * i);

		if (vcpu >= cnt) {
			/* trace-cmd drops such an option entirely; so do we, saying so */
			if (!(in->flags & HGT_OPEN_QUIET))
				fprintf(stderr,
					"hgtrace: %s: offset 0x%llx: GUEST option maps vCPU %u but counts %u vCPUs: skipped\n",
					in->path, (unsigned long long)op->file_offset, vcpu, cnt);
			in->nr_guests--;
			free(g->name);
			free(g->cpu_pid);
			return 0;
		}
		g->cpu_pid[vcpu] = (int)pid;
	}
	return 0;
}

/**
 * hgt__parse_peer_options - decode TIME_SHIFT (last wins) and every GUEST option.
 */
int hgt__parse_peer_options(struct hgt_input *in)
{
	int i, ret = 0;

	for (i = 0; !ret && i < in->nr_opts; i++) {
		if (in->opts[i].id == HGT_OPT_TIME_SHIFT)
			ret = parse_time_shift(in, &in->opts[i]);
		else if (in->opts[i].id == HGT_OPT_GUEST)
			ret = parse_guest(in, &in->opts[i]);
	}
	return ret;
}

void hgt__guests_free(struct hgt_input *in)
{
	int i;

	for (i = 0; i < in->nr_guests; i++) {
		free(in->guests[i].name);
		free(in->guests[i].cpu_pid);
	}
	free(in->guests);
	hgt__tsync_free(in->tsync);
}

const struct hgt_time_shift *hgt_input_time_shift(const struct hgt_input *in)
{
	return in->tsync ? &in->tsync->pub : NULL;
}

int hgt_input_nr_guests(const struct hgt_input *in)
{
	return in->nr_guests;
}

int hgt_input_guest(const struct hgt_input *in, int i, struct hgt_guest *g)
{
	if (i < 0 || i >= in->nr_guests)
		return -ENOENT;
	g->name = in->guests[i].name;
	g->trace_id = in->guests[i].trace_id;
	g->nr_vcpus = in->guests[i].nr_vcpus;
	g->cpu_pid = in->guests[i].cpu_pid;
	return 0;
}

int hgt_input_guest_by_id(const struct hgt_input *in, uint64_t trace_id, struct hgt_guest *g)
{
	int i;

	for (i = in->nr_guests - 1; i >= 0; i--)
		if (in->guests[i].trace_id == trace_id)
			return hgt_input_guest(in, i, g);
	return -ENOENT;
}

static void put(uint8_t **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

int hgt_guest_option_build(const char *name, uint64_t trace_id, int n, const int *vcpu,
			   const int *pid, uint8_t **buf, uint32_t *len)
{
	size_t nl = strlen(name) + 1;
	uint32_t cnt = 0, v;
	uint8_t *p;
	int i;

	if (n < 0 || n > HGT__MAX_CPUS)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (vcpu[i] < 0 || vcpu[i] >= HGT__MAX_CPUS)
			return -EINVAL;
		if ((uint32_t)vcpu[i] + 1 > cnt)
			cnt = (uint32_t)vcpu[i] + 1;
	}
	*len = (uint32_t)(nl + 12 + 8 * (size_t)cnt);
	*buf = p = malloc(*len);
	if (!p)
		return -ENOMEM;
	put(&p, name, nl);
	put(&p, &trace_id, 8);
	put(&p, &cnt, 4);
	/* one entry per vCPU id up to the largest: ids without a thread get pid 0 */
	for (v = 0; v < cnt; v++) {
		uint32_t q = 0;

		for (i = 0; i < n; i++)
			if ((uint32_t)vcpu[i] == v)
				q = (uint32_t)pid[i];
		put(&p, &v, 4);
		put(&p, &q, 4);
	}
	return 0;
}

int hgt_time_shift_option_build(const struct hgt_time_shift *ts, uint8_t **buf, uint32_t *len)
{
	uint64_t size = 16, total = 0;
	uint32_t ncpu = (uint32_t)ts->nr_cpus;
	uint8_t *p;
	int i;

	if (ts->nr_cpus < 0 || ts->nr_cpus > HGT__MAX_CPUS)
		return -EINVAL;
	for (i = 0; i < ts->nr_cpus; i++)
		total += ts->cpus[i].count;
	size += 4ULL * ncpu + 32 * total;
	if (size > UINT32_MAX)
		return -EFBIG;
	*len = (uint32_t)size;
	*buf = p = malloc(size);
	if (!p)
		return -ENOMEM;
	put(&p, &ts->peer_id, 8);
	put(&p, &ts->flags, 4);
	put(&p, &ncpu, 4);
	for (i = 0; i < ts->nr_cpus; i++) {
		const struct hgt_time_shift_cpu *c = &ts->cpus[i];

		put(&p, &c->count, 4);
		put(&p, c->time, 8 * (size_t)c->count);
		put(&p, c->offset, 8 * (size_t)c->count);
		put(&p, c->scaling, 8 * (size_t)c->count);
	}
	for (i = 0; i < ts->nr_cpus; i++)
		put(&p, ts->cpus[i].frac, 8 * (size_t)ts->cpus[i].count);
	return 0;
}

uint64_t hgt_trace_id_generate(void)
{
	struct timespec t;
	char host[256] = "";
	uint64_t h = 0xcbf29ce484222325ULL;
	uint64_t v[3];
	const uint8_t *b;
	size_t i;

	clock_gettime(CLOCK_REALTIME, &t);
	gethostname(host, sizeof(host) - 1);
	v[0] = (uint64_t)t.tv_sec;
	v[1] = (uint64_t)t.tv_nsec;
	v[2] = (uint64_t)getpid();
	b = (const uint8_t *)v;
	for (i = 0; i < sizeof(v); i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	for (i = 0; host[i]; i++)
		h = (h ^ (uint8_t)host[i]) * 0x100000001b3ULL;
	return h ? h : 1;
}
