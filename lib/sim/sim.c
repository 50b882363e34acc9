// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A deterministic KVM host + guest session: host CPUs run time slices of vCPU threads,
 * host workers and idle; a vCPU slice is a chain of kvm_entry -> guest run -> kvm_exit ->
 * host handling; guest events are placed inside the guest runs and stamped with KVM's
 * TSC relation. Pages are encoded as the kernel's ring buffer lays them out, streamed to
 * one temporary file per CPU, then written with the trace.dat writer.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <traceevent/event-parse.h>

#include <hgtrace/clock.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/simulate.h>

#include "../common/common-local.h"
#include "../private/tracedat.h"
#include "sim-local.h"

#define PAGE 4096
#define PAGE_HDR 16
#define TS_MAX ((1ULL << 27) - 1)

enum ev_id {
	EV_PRINT,
	EV_KVM_ENTRY,
	EV_KVM_EXIT,
	EV_KVM_WRITE_TSC_OFFSET,
	EV_SCHED_SWITCH,
	EV_SCHED_WAKING,
	EV_IRQ_ENTRY,
	EV_IRQ_EXIT,
	EV_HRTIMER_START,
	EV_HRTIMER_EXPIRE_ENTRY,
	EV_HRTIMER_EXPIRE_EXIT,
	EV_LOCAL_TIMER_ENTRY,
	EV_LOCAL_TIMER_EXIT,
	EV_SOFTIRQ_ENTRY,
	EV_SOFTIRQ_EXIT,
	EV_MAX
};

/* A CPU's ring-buffer pages being built, spilled to a temporary file. */
struct stream {
	uint8_t page[PAGE];
	uint32_t used; /* bytes of event data */
	uint64_t last_ts;
	bool open;
	FILE *tmp;
	uint64_t events;
};

struct sim {
	struct hgt_sim_opts o;
	struct tep_handle *tep;
	struct tep_event *ev[EV_MAX];
	uint64_t rng;
	struct stream *host, *guest;
	FILE *truth;
	struct hgt_newfile *truth_nf;
	char err[256];

	uint64_t t0, t_end;
	uint32_t mult, shift;
	int64_t off0; /* tsc_offset at start */
	struct vcpu {
		int id, pid, last_cpu;
		uint64_t avail_at;
		bool stepped;	     /* offset_step applied */
		uint64_t step_at;    /* host TSC of the step */
		int64_t tsc_off;     /* current tsc_offset */
		int task;	     /* guest task now running (index), -1 idle */
		unsigned int woken;  /* tasks woken that have not run since (bit per index) */
		bool timer_armed;    /* guest armed its TSC deadline: the next run starts with it */
		uint64_t last_guest; /* last guest timestamp emitted (strictly increasing) */
	} * vc;
	uint64_t host_events, guest_events;
	/* per host CPU: when its next slice starts (its records so far are before), and the
	 * task it runs (simulate()'s, for an injection that wakes from another CPU) */
	uint64_t *free_at;
	int *cur;
	struct hgt_sim_injected inj[HGT_SIM_MAX_INJECT];
	bool inj_done[HGT_SIM_MAX_INJECT];
};

static uint64_t rnd(struct sim *s)
{
	uint64_t x = s->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	s->rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* uniform in [lo, hi] */
static uint64_t range(struct sim *s, uint64_t lo, uint64_t hi)
{
	return hi <= lo ? lo : lo + rnd(s) % (hi - lo + 1);
}

static uint64_t us(const struct sim *s, uint64_t v)
{
	return v * s->o.tsc_khz / 1000;
}

/* Host TSC -> ns, as the report converts it (the host file's TSC2NSEC). The guest's
 * hrtimer times (now, expires) use it too: only their differences matter. */
static uint64_t ns(const struct sim *s, uint64_t tsc)
{
	return hgt_mul_u64_u32_shr(tsc, s->mult, s->shift);
}

static int sim_error(struct sim *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int sim_error(struct sim *s, int err, const char *fmt, ...)
{
	va_list ap;
	char line[HGT__ERRLEN];

	va_start(ap, fmt);
	vsnprintf(s->err, sizeof(s->err), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "simulate: %s", s->err);
	hgt__set_last_error(line);
	return -err;
}

/* ---- ring-buffer page encoding ---- */

static int flush_page(struct sim *s, struct stream *st)
{
	uint64_t commit = st->used;

	if (!st->open)
		return 0;
	memcpy(st->page + 8, &commit, 8);
	memset(st->page + PAGE_HDR + st->used, 0, PAGE - PAGE_HDR - st->used);
	if (fwrite(st->page, PAGE, 1, st->tmp) != 1)
		return sim_error(s, EIO, "cannot write a temporary page file");
	st->open = false;
	return 0;
}

/* Append one event of @len payload bytes (a multiple of 4, at most 112) at @ts. */
static int emit(struct sim *s, struct stream *st, uint64_t ts, const void *payload, uint32_t len)
{
	uint64_t delta;
	uint32_t need, w;
	int ret;

	if (st->open && ts < st->last_ts)
		return sim_error(s, EINVAL, "internal error: time went back on a CPU");
	delta = st->open ? ts - st->last_ts : 0;
	need = 4 + len + (delta > TS_MAX ? 8 : 0);
	if (st->open && st->used + need > PAGE - PAGE_HDR) {
		ret = flush_page(s, st);
		if (ret)
			return ret;
	}
	if (!st->open) {
		memcpy(st->page, &ts, 8);
		st->used = 0;
		st->open = true;
		delta = 0;
	}
	if (delta > TS_MAX) {
		uint32_t hi = (uint32_t)(delta >> 27);

		w = (uint32_t)((delta & TS_MAX) << 5) | 30;
		memcpy(st->page + PAGE_HDR + st->used, &w, 4);
		memcpy(st->page + PAGE_HDR + st->used + 4, &hi, 4);
		st->used += 8;
		delta = 0;
	}
	w = (uint32_t)(delta << 5) | (len / 4);
	memcpy(st->page + PAGE_HDR + st->used, &w, 4);
	memcpy(st->page + PAGE_HDR + st->used + 4, payload, len);
	st->used += 4 + len;
	st->last_ts = ts;
	st->events++;
	return 0;
}

/* ---- event payloads, laid out from the real formats ---- */

struct rec {
	uint8_t b[128];
	uint32_t len;
	struct tep_event *ev;
};

/* Start a record of event @id: common fields set, length = end of its last field. */
static void rec_start(struct sim *s, struct rec *r, enum ev_id id, int pid)
{
	struct tep_format_field *f;
	uint32_t end = 8; /* the common fields */
	uint16_t type;

	memset(r, 0, sizeof(*r));
	r->ev = s->ev[id];
	for (f = r->ev->format.fields; f; f = f->next)
		if ((uint32_t)(f->offset + f->size) > end)
			end = (uint32_t)(f->offset + f->size);
	r->len = (end + 3) & ~3U;
	type = (uint16_t)r->ev->id;
	memcpy(r->b, &type, 2);
	memcpy(r->b + 4, &pid, 4);
}

static void set_num(struct rec *r, const char *name, uint64_t v)
{
	struct tep_format_field *f = tep_find_field(r->ev, name);

	if (f && f->size <= 8)
		memcpy(r->b + f->offset, &v, (size_t)f->size);
}

static void set_str(struct rec *r, const char *name, const char *v)
{
	struct tep_format_field *f = tep_find_field(r->ev, name);

	if (!f)
		return;
	if (f->flags & TEP_FIELD_IS_DYNAMIC) {
		uint32_t n = (uint32_t)strlen(v) + 1, loc = (n << 16) | r->len;

		if (r->len + n > sizeof(r->b))
			return;
		memcpy(r->b + f->offset, &loc, 4);
		memcpy(r->b + r->len, v, n);
		r->len = (r->len + n + 3) & ~3U;
		return;
	}
	strncpy((char *)r->b + f->offset, v, (size_t)f->size - 1);
}

/* ---- host and guest tasks ---- */

static const char *const guest_comms[] = { "rt-app", "kworker", "sshd", "systemd-journal" };

static int guest_pid(int cpu, int task)
{
	return task < 0 ? 0 : 1000 + 10 * cpu + task;
}

static void guest_comm(char *buf, size_t n, int cpu, int task)
{
	if (task < 0)
		snprintf(buf, n, "swapper/%d", cpu);
	else
		snprintf(buf, n, "%s", guest_comms[task % 4]);
}

static int truth_line(struct sim *s, int cpu, uint64_t g, uint64_t h, const char *name)
{
	if (s->truth && fprintf(s->truth, "%d %llu %llu %s\n", cpu, (unsigned long long)g,
				(unsigned long long)h, name) < 0)
		return sim_error(s, EIO, "cannot write the ground truth");
	return 0;
}

/* Offset in effect for a drifting guest (embed_sync + drift_ppb): linear in guest time
 * between the samples at the start and the end, computed as the reader interpolates. */
static int64_t drift_offset(const struct sim *s, uint64_t host)
{
	__int128 d = (__int128)(int64_t)(host - s->t0) * s->o.drift_ppb / 1000000000;

	return s->off0 + (int64_t)d;
}

/* Samples of a drifting vCPU (guest time, TIME_SHIFT offset) at the start and end. */
static void drift_samples(const struct sim *s, int64_t t[2], int64_t o[2])
{
	int64_t a = drift_offset(s, s->t0), b = drift_offset(s, s->t_end);

	t[0] = (int64_t)(s->t0 + (uint64_t)a);
	t[1] = (int64_t)(s->t_end + (uint64_t)b);
	o[0] = -a;
	o[1] = -b;
}

/* The reader's native interpolation, for the drift model's ground truth. */
static uint64_t drift_to_host(const struct sim *s, uint64_t g)
{
	int64_t t[2], o[2];
	__int128 num, delta;

	drift_samples(s, t, o);
	delta = (__int128)t[1] - t[0];
	num = ((__int128)(int64_t)g - t[0]) * ((__int128)o[1] - o[0]);
	return g + (uint64_t)(int64_t)(o[0] + (num + delta / 2) / delta);
}

/*
 * Put one guest event on guest CPU @cpu at (about) host time @h. Returns the host time
 * actually used (the ground truth), or 0 when the event cannot be placed.
 */
static uint64_t guest_event(struct sim *s, int cpu, uint64_t h, struct rec *r, int *ret)
{
	struct vcpu *v = &s->vc[cpu];
	uint64_t g, truth;

	*ret = 0;
	if (s->o.drift_ppb) {
		g = h + (uint64_t)drift_offset(s, h);
		truth = drift_to_host(s, g);
	} else {
		g = hgt_tsc_host_to_guest(h, s->o.ratio, s->o.frac, v->tsc_off);
		/* the smallest host TSC with this guest value: the instant, canonically */
		truth = h;
		while (hgt_tsc_host_to_guest(truth - 1, s->o.ratio, s->o.frac, v->tsc_off) == g)
			truth--;
	}
	if (g <= v->last_guest)
		return 0;
	v->last_guest = g;
	*ret = emit(s, &s->guest[cpu], g, r->b, r->len);
	if (!*ret)
		*ret = truth_line(s, cpu, g, truth, r->ev->name);
	s->guest_events++;
	return truth;
}

/* VMX exit reasons the simulator uses, with weights. */
static const struct {
	unsigned int code;
	const char *name;
	int weight;
} exits[] = {
	{ 1, "EXTERNAL_INTERRUPT", 25 },
	{ 12, "HLT", 20 },
	{ 32, "MSR_WRITE", 20 },
	{ 30, "IO_INSTRUCTION", 10 },
	{ 48, "EPT_VIOLATION", 10 },
	{ 31, "MSR_READ", 5 },
	{ 10, "CPUID", 3 },
	{ 52, "PREEMPTION_TIMER", 5 },
	{ 49, "EPT_MISCONFIG", 2 },
};

/**
 * hgt_sim_exit_code - the VMX exit reason code of @name (one the simulator uses, e.g.
 * "IO_INSTRUCTION", or a number). Returns it, or -EINVAL.
 */
int hgt_sim_exit_code(const char *name)
{
	char *end;
	unsigned long v;

	for (size_t i = 0; i < sizeof(exits) / sizeof(exits[0]); i++)
		if (!strcasecmp(name, exits[i].name))
			return (int)exits[i].code;
	errno = 0;
	v = strtoul(name, &end, 0);
	return errno || end == name || *end || v > 0xffff ? -EINVAL : (int)v;
}

static int pick_exit(struct sim *s)
{
	int total = 0, i, x;

	for (i = 0; i < (int)(sizeof(exits) / sizeof(exits[0])); i++)
		total += exits[i].weight;
	x = (int)(rnd(s) % (uint64_t)total);
	for (i = 0; x >= exits[i].weight; i++)
		x -= exits[i].weight;
	return i;
}

/* Guest CPU @cpu's current task wakes task @next. */
static void rec_waking(struct sim *s, struct rec *r, int cpu, int next)
{
	char comm[32];

	rec_start(s, r, EV_SCHED_WAKING, guest_pid(cpu, s->vc[cpu].task));
	guest_comm(comm, sizeof(comm), cpu, next);
	set_str(r, "comm", comm);
	set_num(r, "pid", (uint64_t)guest_pid(cpu, next));
	set_num(r, "prio", 120);
	set_num(r, "target_cpu", (uint64_t)cpu);
}

/* Guest CPU @cpu switches from its current task (which sleeps) to task @next. */
static void rec_switch(struct sim *s, struct rec *r, int cpu, int next)
{
	int prev = s->vc[cpu].task;
	char comm[32];

	rec_start(s, r, EV_SCHED_SWITCH, guest_pid(cpu, prev));
	guest_comm(comm, sizeof(comm), cpu, prev);
	set_str(r, "prev_comm", comm);
	set_num(r, "prev_pid", (uint64_t)guest_pid(cpu, prev));
	set_num(r, "prev_prio", 120);
	set_num(r, "prev_state", 1);
	guest_comm(comm, sizeof(comm), cpu, next);
	set_str(r, "next_comm", comm);
	set_num(r, "next_pid", (uint64_t)guest_pid(cpu, next));
	set_num(r, "next_prio", 120);
}

/* A timer event of guest CPU @cpu (its one hrtimer): @v is the time of an expiry
 * ("now") or the deadline of a start, in ns. */
static void rec_timer(struct sim *s, struct rec *r, int cpu, enum ev_id id, uint64_t v)
{
	rec_start(s, r, id, guest_pid(cpu, s->vc[cpu].task));
	set_num(r, "vector", 236);
	set_num(r, "hrtimer", 0xffff888007a1c000ULL + (uint64_t)cpu * 0x100);
	set_num(r, "function", 0xffffffff81100000ULL);
	set_num(r, "now", v);
	set_num(r, "expires", v);
	set_num(r, "softexpires", v);
}

static const enum ev_id timer_fire[4] = { EV_LOCAL_TIMER_ENTRY, EV_HRTIMER_EXPIRE_ENTRY,
					  EV_HRTIMER_EXPIRE_EXIT, EV_LOCAL_TIMER_EXIT };

/* Guest events of one run [en, ex] on guest CPU @cpu ending with exit @xi. */
static int guest_run(struct sim *s, int cpu, uint64_t en, uint64_t ex, int xi)
{
	struct vcpu *v = &s->vc[cpu];
	uint64_t eg = s->o.entry_gap ? s->o.entry_gap : 300;
	uint64_t xg = s->o.exit_gap ? s->o.exit_gap : 300;
	uint64_t t = en + eg, end = ex - xg;
	struct rec r;
	int ret = 0, n, i;

	if (ex - en < 2 * (eg + xg))
		return 0;
#define STEP() (t += range(s, 200, (end - t) / 4 + 200))
#define PUT(REC)                                     \
	do {                                         \
		if (t >= end)                        \
			return 0;                    \
		guest_event(s, cpu, t, (REC), &ret); \
		if (ret)                             \
			return ret;                  \
	} while (0)
	if (v->timer_armed) {
		v->timer_armed = false;
		for (i = 0; i < 4; i++) {
			rec_timer(s, &r, cpu, timer_fire[i], ns(s, t));
			PUT(&r);
			STEP();
		}
	}
	n = (int)range(s, 0, 3);
	for (i = 0; i < n; i++) {
		int next = (int)range(s, 0, 3);

		switch (rnd(s) % 3) {
		case 0:
			rec_waking(s, &r, cpu, next);
			PUT(&r);
			if (next != v->task)
				v->woken |= 1u << next;
			break;
		case 1:
			if (next == v->task)
				break;
			rec_switch(s, &r, cpu, next);
			PUT(&r);
			v->task = next;
			v->woken &= ~(1u << next);
			break;
		default:
			rec_start(s, &r, EV_IRQ_ENTRY, guest_pid(cpu, v->task));
			set_num(&r, "irq", 24);
			set_str(&r, "name", "virtio0-input.0");
			PUT(&r);
			STEP();
			rec_start(s, &r, EV_IRQ_EXIT, guest_pid(cpu, v->task));
			set_num(&r, "irq", 24);
			set_num(&r, "ret", 1);
			PUT(&r);
			break;
		}
		STEP();
	}
	if (exits[xi].code == 32) { /* MSR_WRITE: the TSC deadline of a new hrtimer */
		t = end - 100;
		/* the deadline is 1 us away: it passes before the next guest run */
		rec_timer(s, &r, cpu, EV_HRTIMER_START, ns(s, t) + 1000);
		PUT(&r);
		v->timer_armed = true;
	} else if (exits[xi].code == 12 && v->task >= 0) { /* HLT: the CPU went idle */
		t = end - 100;
		rec_switch(s, &r, cpu, -1);
		PUT(&r);
		v->task = -1;
	} else if (exits[xi].code == 1 || exits[xi].code == 52) {
		v->timer_armed = true; /* the interrupt is delivered at the next entry */
	}
#undef PUT
#undef STEP
	return 0;
}

static int host_emit(struct sim *s, int hcpu, uint64_t ts, struct rec *r)
{
	if (s->o.tcg && !strcmp(r->ev->system, "kvm"))
		return 0; /* TCG: the host has no kvm events */
	s->host_events++;
	return emit(s, &s->host[hcpu], ts, r->b, r->len);
}

static void host_comm(const struct sim *s, char *buf, size_t n, int task, int hcpu)
{
	/* task: >= 0 vCPU index, -1 idle, -2 kworker of that CPU, -3 an injected hog */
	if (task >= 0)
		snprintf(buf, n, "CPU %d/%s", task, s->o.tcg ? "TCG" : "KVM");
	else if (task == -1)
		snprintf(buf, n, "swapper/%d", hcpu);
	else if (task == -2)
		snprintf(buf, n, "kworker/%d:1", hcpu);
	else
		snprintf(buf, n, "stress-ng");
}

static int host_pid(const struct sim *s, int task, int hcpu)
{
	return task >= 0 ? s->vc[task].pid : task == -1 ? 0 : task == -2 ? 200 + hcpu : 4000 + hcpu;
}

static int sched_switch(struct sim *s, int hcpu, uint64_t ts, int prev, int next, bool sleeping)
{
	struct rec r;
	char a[32], b[32];

	if (prev == -1 && hcpu < 64 && (s->o.no_idle_exit >> hcpu & 1))
		return 0; /* left out, as some kernels do */
	host_comm(s, a, sizeof(a), prev, hcpu);
	host_comm(s, b, sizeof(b), next, hcpu);
	rec_start(s, &r, EV_SCHED_SWITCH, host_pid(s, prev, hcpu));
	set_str(&r, "prev_comm", a);
	set_num(&r, "prev_pid", (uint64_t)host_pid(s, prev, hcpu));
	set_num(&r, "prev_prio", prev == -1 ? 120 : 120);
	set_num(&r, "prev_state", sleeping ? 1 : 0);
	set_str(&r, "next_comm", b);
	set_num(&r, "next_pid", (uint64_t)host_pid(s, next, hcpu));
	set_num(&r, "next_prio", 120);
	return host_emit(s, hcpu, ts, &r);
}

static int write_tsc_offset(struct sim *s, int hcpu, uint64_t ts, int vi, int64_t prev,
			    int64_t next)
{
	struct rec r;

	rec_start(s, &r, EV_KVM_WRITE_TSC_OFFSET, s->vc[vi].pid);
	set_num(&r, "vcpu_id", (uint64_t)s->vc[vi].id);
	set_num(&r, "previous_tsc_offset", (uint64_t)prev);
	set_num(&r, "next_tsc_offset", (uint64_t)next);
	return host_emit(s, hcpu, ts, &r);
}

static int kvm_entry(struct sim *s, int hcpu, int vi, uint64_t t)
{
	struct rec r;

	rec_start(s, &r, EV_KVM_ENTRY, s->vc[vi].pid);
	set_num(&r, "vcpu_id", (uint64_t)s->vc[vi].id);
	set_num(&r, "rip", 0xffffffff81000000ULL + (rnd(s) & 0xfffff));
	return host_emit(s, hcpu, t, &r);
}

static int kvm_exit(struct sim *s, int hcpu, int vi, uint64_t t, unsigned int code)
{
	struct rec r;

	rec_start(s, &r, EV_KVM_EXIT, s->vc[vi].pid);
	set_num(&r, "exit_reason", code);
	set_num(&r, "guest_rip", 0xffffffff81000000ULL + (rnd(s) & 0xfffff));
	set_num(&r, "isa", 1);
	set_num(&r, "info1", code == 48 ? 0x181 : 0);
	set_num(&r, "info2", code == 48 ? 0xfee00000ULL : 0);
	set_num(&r, "intr_info", code == 1 ? 0x800000ec : 0);
	set_num(&r, "vcpu_id", (uint64_t)s->vc[vi].id);
	return host_emit(s, hcpu, t, &r);
}

/* A host interrupt on @hcpu from @t lasting @dur, vCPU thread @vi interrupted; *@end is
 * set to its end. */
static int host_irq(struct sim *s, int hcpu, int vi, uint64_t t, int irq, const char *name,
		    uint64_t *end, uint64_t dur)
{
	struct rec r;
	int ret;

	rec_start(s, &r, EV_IRQ_ENTRY, s->vc[vi].pid);
	set_num(&r, "irq", (uint64_t)irq);
	set_str(&r, "name", name);
	ret = host_emit(s, hcpu, t, &r);
	rec_start(s, &r, EV_IRQ_EXIT, s->vc[vi].pid);
	set_num(&r, "irq", (uint64_t)irq);
	set_num(&r, "ret", 1);
	*end = t + dur;
	return ret ?: host_emit(s, hcpu, *end, &r);
}

/* A host softirq of vector @vec on @hcpu from @t lasting @dur, vCPU thread @vi interrupted. */
static int host_softirq(struct sim *s, int hcpu, int vi, uint64_t t, unsigned int vec,
			uint64_t *end, uint64_t dur)
{
	struct rec r;
	int ret;

	rec_start(s, &r, EV_SOFTIRQ_ENTRY, s->vc[vi].pid);
	set_num(&r, "vec", vec);
	ret = host_emit(s, hcpu, t, &r);
	rec_start(s, &r, EV_SOFTIRQ_EXIT, s->vc[vi].pid);
	set_num(&r, "vec", vec);
	*end = t + dur;
	return ret ?: host_emit(s, hcpu, *end, &r);
}

/* A guest event at host time @h that must be placed (inside a guest run, after the
 * last one); its host time in ns (the report's) in *@at. */
static int guest_at(struct sim *s, int cpu, uint64_t h, struct rec *r, uint64_t *at)
{
	int ret;
	uint64_t truth = guest_event(s, cpu, h, r, &ret);

	if (!ret && !truth)
		return sim_error(s, EINVAL, "internal error: an injected guest event not placed");
	if (at)
		*at = ns(s, truth);
	return ret;
}

/*
 * WOKEN on vCPU thread @vi, in guest mode on @hcpu from @t: the guest arms its timer and
 * halts; the thread blocks and a host task (the hog) takes the CPU, its switch from idle
 * left out where no_idle_exit says so; at the timer's expiry the thread is woken from the
 * next host CPU (after that CPU's records so far, which its next slice then follows), and
 * waits @dur for the hog; then the guest runs and its timer fires @dur late and more.
 * The end of the guest run in *@end.
 */
static int woken(struct sim *s, struct hgt_sim_injected *d, int hcpu, int vi, uint64_t t,
		 uint64_t dur, uint64_t *end)
{
	int h2 = (hcpu + 1) % s->o.nr_host_cpus, hog = -3, ret;
	uint64_t u = us(s, 1), x = t + 2 * u, tw = x + 3 * u, run;
	char comm[32];
	struct rec r;

	if (s->free_at[h2] + u > tw)
		tw = s->free_at[h2] + u;
	if (s->host[h2].open && s->host[h2].last_ts + u > tw)
		tw = s->host[h2].last_ts + u;
	d->timer = true;
	d->guest_pid = guest_pid(vi, s->vc[vi].task);
	d->host_pid = host_pid(s, hog, hcpu);
	d->from_ns = ns(s, tw);
	rec_timer(s, &r, vi, EV_HRTIMER_START, ns(s, tw));
	ret = guest_at(s, vi, t + u, &r, NULL);
	ret = ret ?: kvm_exit(s, hcpu, vi, x, 12); /* HLT */
	ret = ret ?: sched_switch(s, hcpu, x + u / 2, vi, -1, true);
	ret = ret ?: sched_switch(s, hcpu, x + u, -1, hog, false);
	/* the waker: whatever runs on the other CPU (a vCPU thread kicking this one) */
	rec_start(s, &r, EV_SCHED_WAKING, host_pid(s, s->cur[h2], h2));
	host_comm(s, comm, sizeof(comm), vi, hcpu);
	set_str(&r, "comm", comm);
	set_num(&r, "pid", (uint64_t)s->vc[vi].pid);
	set_num(&r, "prio", 120);
	set_num(&r, "target_cpu", (uint64_t)hcpu);
	ret = ret ?: host_emit(s, h2, tw, &r);
	if (s->free_at[h2] < tw)
		s->free_at[h2] = tw;
	ret = ret ?: sched_switch(s, hcpu, tw + dur, hog, vi, false);
	d->cause_ns = ns(s, tw + dur) - ns(s, tw);
	run = tw + dur + u;
	ret = ret ?: kvm_entry(s, hcpu, vi, run);
	for (int i = 0; !ret && i < 4; i++) {
		rec_timer(s, &r, vi, timer_fire[i], ns(s, run + u / 2));
		ret = guest_at(s, vi, run + (uint64_t)(i + 1) * u / 4, &r,
			       i == 1 ? &d->to_ns : NULL);
	}
	s->vc[vi].timer_armed = false;
	*end = run + 2 * u;
	return ret;
}

/*
 * Inject cause @k of the options on vCPU thread @vi, running in host mode on @hcpu at
 * *@tp (moved to the end). Each cause delays a guest task woken in the first guest run
 * (or, for exits, a timer due at the first exit); the guest events sit inside the runs.
 */
static int inject(struct sim *s, int k, int hcpu, int vi, uint64_t *tp)
{
	const struct hgt_sim_inject *in = &s->o.inject[k];
	struct hgt_sim_injected *d = &s->inj[k];
	struct vcpu *v = &s->vc[vi];
	uint64_t u = us(s, 1), t = *tp + u, x, e = t, dur = us(s, in->us);
	struct rec r;
	int ret, victim;

	d->cause = in->cause;
	d->guest_cpu = vi;
	ret = kvm_entry(s, hcpu, vi, t);
	if (!ret && in->cause == HGT_SIM_GUEST && v->task < 0) {
		rec_switch(s, &r, vi, 0); /* something to run instead of the woken task */
		ret = guest_at(s, vi, t + u / 8, &r, NULL);
		v->task = 0;
		v->woken &= ~1u;
	}
	/* the task to wake must not be waiting already: its delay would start earlier */
	for (victim = 0; victim < 4 && (victim == v->task || (v->woken >> victim & 1)); victim++)
		;
	/* all are: run them until one has run and sleeps, and wake that one */
	for (int i = 2; victim == 4 && !ret; i++) {
		int next = __builtin_ctz(v->woken);

		victim = v->task; /* -1 (idle) goes round once more */
		rec_switch(s, &r, vi, next);
		ret = guest_at(s, vi, t + (uint64_t)i * u / 8, &r, NULL);
		v->task = next;
		v->woken &= ~(1u << next);
		if (victim < 0)
			victim = 4;
	}
	if (in->cause == HGT_SIM_WOKEN) {
		ret = ret ?: woken(s, d, hcpu, vi, t, dur, &e);
	} else if (in->cause == HGT_SIM_EXITS) {
		/* a timer due at the first exit; the guest does I/O with interrupts off */
		x = t + 3 * u;
		d->timer = true;
		d->guest_pid = guest_pid(vi, v->task);
		d->from_ns = ns(s, x);
		rec_timer(s, &r, vi, EV_HRTIMER_START, ns(s, x));
		ret = ret ?: guest_at(s, vi, t + u, &r, NULL);
		for (unsigned int i = 0; !ret && i < in->count; i++) {
			ret = kvm_exit(s, hcpu, vi, x, in->exit_reason);
			d->cause_ns += ns(s, x + dur) - ns(s, x);
			x += dur;
			ret = ret ?: kvm_entry(s, hcpu, vi, x);
			if (i + 1 < in->count)
				x += u; /* a microsecond of guest run to the next exit */
		}
		for (int i = 0; !ret && i < 4; i++) {
			rec_timer(s, &r, vi, timer_fire[i], ns(s, x + u / 2));
			ret = guest_at(s, vi, x + (uint64_t)(i + 1) * u / 4, &r,
				       i == 1 ? &d->to_ns : NULL);
		}
		v->timer_armed = false;
		e = x + 2 * u;
	} else {
		d->guest_pid = guest_pid(vi, victim);
		rec_waking(s, &r, vi, victim);
		ret = ret ?: guest_at(s, vi, t + u, &r, &d->from_ns);
		v->woken |= 1u << victim;
		if (in->cause == HGT_SIM_GUEST) {
			x = t + u + dur; /* the guest's own task runs on: no exit */
			d->cause_ns = ns(s, x) - ns(s, t + u);
		} else {
			x = t + 3 * u;
			ret = ret ?: kvm_exit(s, hcpu, vi, x, 1);
			x += u;
		}
		if (in->cause == HGT_SIM_PREEMPT) {
			d->host_pid = host_pid(s, -3, hcpu);
			ret = ret ?: sched_switch(s, hcpu, x, vi, -3, false);
			ret = ret ?: sched_switch(s, hcpu, x + dur, -3, vi, false);
			d->cause_ns = ns(s, x + dur) - ns(s, x);
			x += dur + u;
		} else if (in->cause == HGT_SIM_IRQS || in->cause == HGT_SIM_SOFTIRQS) {
			bool soft = in->cause == HGT_SIM_SOFTIRQS;

			d->host_pid = soft ? 3 : 40; /* NET_RX, or irq 40 */
			for (unsigned int i = 0; !ret && i < in->count; i++) {
				ret = soft ? host_softirq(s, hcpu, vi, x, 3, &e, dur)
					   : host_irq(s, hcpu, vi, x, 40, "eth0-rx", &e, dur);
				d->cause_ns += ns(s, e) - ns(s, x);
				x = e + u / 10;
			}
			x += u / 2;
		}
		if (in->cause != HGT_SIM_GUEST)
			ret = ret ?: kvm_entry(s, hcpu, vi, x);
		rec_switch(s, &r, vi, victim);
		ret = ret ?: guest_at(s, vi, x + u / 2, &r, &d->to_ns);
		v->task = victim;
		v->woken &= ~(1u << victim);
		e = x + 2 * u;
	}
	ret = ret ?: kvm_exit(s, hcpu, vi, e, 48);
	*tp = e + u;
	return ret;
}

/* Is cause @k due at @t? At (k + 1) / (n + 1) of the run: of its time, or with an event
 * budget (whose run length is not known in advance), of its events. */
static bool inject_due(const struct sim *s, int k, uint64_t t)
{
	uint64_t n = (uint64_t)s->o.nr_inject + 1;

	if (s->o.max_events)
		return s->host_events + s->guest_events >= s->o.max_events / n * (uint64_t)(k + 1);
	return t >= s->t0 + (s->t_end - s->t0) / n * (uint64_t)(k + 1);
}

/* One slice of vCPU thread @vi on host CPU @hcpu from @t: entries, runs, exits. Returns
 * the end time in *@end and whether the thread went to sleep (halted). */
static int vcpu_slice(struct sim *s, int hcpu, int vi, uint64_t t, uint64_t *end, bool *slept)
{
	struct vcpu *v = &s->vc[vi];
	uint64_t stop = t + range(s, us(s, 100), us(s, 2000));
	int ret;

	*slept = false;
	if (s->o.offset_step > 0 && !v->stepped && t >= s->t0 + (s->t_end - s->t0) / 2) {
		int64_t n = v->tsc_off + s->o.offset_step;

		t += us(s, 1);
		ret = write_tsc_offset(s, hcpu, t, vi, v->tsc_off, n);
		if (ret)
			return ret;
		v->tsc_off = n;
		v->stepped = true;
		v->step_at = t;
	}
	for (int k = 0; k < s->o.nr_inject; k++)
		if (!s->inj_done[k] && k % s->o.nr_vcpus == vi && inject_due(s, k, t)) {
			s->inj_done[k] = true;
			ret = inject(s, k, hcpu, vi, &t);
			if (ret)
				return ret;
		}
	t += range(s, us(s, 1), us(s, 5));
	while (t < stop) {
		int xi = pick_exit(s);
		uint64_t run = exits[xi].code == 12 ? range(s, us(s, 20), us(s, 400))
						    : range(s, us(s, 2), us(s, 150));
		uint64_t ex = t + run;

		ret = kvm_entry(s, hcpu, vi, t);
		if (!ret)
			ret = guest_run(s, vi, t, ex, xi);
		if (!ret)
			ret = kvm_exit(s, hcpu, vi, ex, exits[xi].code);
		if (ret)
			return ret;
		t = ex;
		if (exits[xi].code == 1) { /* the host handles the interrupt */
			t += range(s, 200, us(s, 2));
			ret = host_irq(s, hcpu, vi, t, 30 + hcpu, "nvme0q1", &t,
				       range(s, us(s, 1), us(s, 5)));
			if (ret)
				return ret;
		}
		t += exits[xi].code == 30 ? range(s, us(s, 10), us(s, 50))
					  : range(s, us(s, 1), us(s, 8));
		if (exits[xi].code == 12 && rnd(s) % 2) {
			*slept = true; /* halted: the thread blocks until the guest is woken */
			break;
		}
	}
	*end = t;
	return 0;
}

static int simulate(struct sim *s)
{
	int M = s->o.nr_host_cpus, N = s->o.nr_vcpus, h, i, ret;
	uint64_t *free_at = calloc((size_t)M, sizeof(uint64_t));
	int *cur = calloc((size_t)M, sizeof(int));
	bool *done = calloc((size_t)M, sizeof(bool));
	bool *running = calloc((size_t)N, sizeof(bool));

	if (!free_at || !cur || !done || !running) {
		ret = -ENOMEM;
		goto out;
	}
	for (h = 0; h < M; h++) {
		free_at[h] = s->t0 + us(s, 1) * (uint64_t)(h + 1);
		cur[h] = -1;
	}
	s->free_at = free_at;
	s->cur = cur;
	if (s->o.write_tsc_offset)
		for (i = 0; i < N; i++) {
			ret = write_tsc_offset(s, i % M, s->t0 + (uint64_t)i, i, 0,
					       s->vc[i].tsc_off);
			if (ret)
				goto out;
		}
	for (;;) {
		uint64_t T, end;
		int best = -1, next = -1, cands = 0;
		bool slept = false;

		for (h = 0; h < M; h++)
			if (!done[h] && (best < 0 || free_at[h] < free_at[best]))
				best = h;
		if (best < 0)
			break;
		h = best;
		T = free_at[h];
		if (T >= s->t_end ||
		    (s->o.max_events && s->host_events + s->guest_events >= s->o.max_events)) {
			done[h] = true;
			continue;
		}
		/* the thread that ran here keeps the CPU if it can, else an affine one */
		if (cur[h] >= 0 && s->vc[cur[h]].avail_at <= T && rnd(s) % 8)
			next = cur[h];
		for (i = 0; next < 0 && i < N; i++) {
			int vi = (int)((rnd(s) + (uint64_t)i) % (uint64_t)N);

			if (running[vi] || s->vc[vi].avail_at > T)
				continue;
			cands++;
			if (s->vc[vi].last_cpu == h || rnd(s) % 4 == 0)
				next = vi;
		}
		if (next < 0 && cands)
			for (i = 0; next < 0 && i < N; i++)
				if (!running[i] && s->vc[i].avail_at <= T)
					next = i;
		if (next >= 0 && rnd(s) % 10 == 0)
			next = -2; /* a host worker preempts */
		if (next < 0 && next != -2)
			next = -1;
		if (next != cur[h]) {
			bool sleeping = cur[h] >= 0 && s->vc[cur[h]].avail_at > T;

			ret = sched_switch(s, h, T, cur[h], next, sleeping);
			if (ret)
				goto out;
		}
		if (cur[h] >= 0)
			running[cur[h]] = false;
		cur[h] = next;
		if (next >= 0) {
			running[next] = true;
			ret = vcpu_slice(s, h, next, T, &end, &slept);
			if (ret)
				goto out;
			s->vc[next].last_cpu = h;
			s->vc[next].avail_at = slept ? end + range(s, us(s, 20), us(s, 500)) : end;
			if (slept) {
				/* it blocks now: switch to idle at once */
				ret = sched_switch(s, h, end, next, -1, true);
				if (ret)
					goto out;
				running[next] = false;
				cur[h] = -1;
				end += range(s, us(s, 1), us(s, 3));
			}
		} else if (next == -2) {
			end = T + range(s, us(s, 5), us(s, 40));
		} else {
			end = T + range(s, us(s, 5), us(s, 60));
		}
		free_at[h] = end;
	}
	ret = 0;
out:
	free(free_at);
	free(cur);
	free(done);
	free(running);
	return ret;
}

/* ---- metadata ---- */

static int bput(struct hgt__blob *b, const void *v, size_t n)
{
	return hgt__blob_put(b, v, n);
}

static int bput_item(struct hgt__blob *b, const char *text, int size_bytes)
{
	return hgt__blob_item(b, text, strlen(text), size_bytes);
}

static bool in_role(const struct sim *s, const char *system, bool host)
{
	if (!strcmp(system, "kvm"))
		return host && !s->o.tcg;
	if (!strcmp(system, "timer") || !strcmp(system, "irq_vectors"))
		return !host;
	return true;
}

static int write_meta(struct sim *s, struct hgt_output *out, bool host)
{
	struct hgt__blob b = { 0 };
	const char *systems[] = { "kvm", "sched", "irq", "timer", "irq_vectors" };
	char cmd[8192];
	int ret = 0, i, k, len = 0;
	uint32_t n;

	/* HEADER_INFO */
	ret = bput(&b, "header_page", 12) ?: bput_item(&b, hgt__sim_header_page, 8);
	ret = ret ?: bput(&b, "header_event", 13) ?: bput_item(&b, hgt__sim_header_event, 8);
	ret = ret ?: hgt_output_set_meta(out, HGT_OPT_HEADER_INFO, b.p, b.len);
	/* FTRACE_EVENTS: ftrace/print */
	b.len = 0;
	n = 1;
	ret = ret ?: bput(&b, &n, 4) ?: bput_item(&b, hgt__sim_formats[0].format, 8);
	ret = ret ?: hgt_output_set_meta(out, HGT_OPT_FTRACE_EVENTS, b.p, b.len);
	/* EVENT_FORMATS */
	b.len = 0;
	n = 0;
	for (k = 0; k < 5; k++)
		n += in_role(s, systems[k], host);
	ret = ret ?: bput(&b, &n, 4);
	for (k = 0; !ret && k < 5; k++) {
		if (!in_role(s, systems[k], host))
			continue;
		n = 0;
		for (i = 1; hgt__sim_formats[i].system; i++)
			n += !strcmp(hgt__sim_formats[i].system, systems[k]);
		ret = bput(&b, systems[k], strlen(systems[k]) + 1) ?: bput(&b, &n, 4);
		for (i = 1; !ret && hgt__sim_formats[i].system; i++)
			if (!strcmp(hgt__sim_formats[i].system, systems[k]))
				ret = bput_item(&b, hgt__sim_formats[i].format, 8);
	}
	ret = ret ?: hgt_output_set_meta(out, HGT_OPT_EVENT_FORMATS, b.p, b.len);
	/* KALLSYMS, PRINTK, CMDLINES */
	b.len = 0;
	ret = ret
		      ?: bput_item(&b,
				   "ffffffff81000000 T _stext\n"
				   "ffffffff81100000 T tick_nohz_handler\n"
				   "ffffffff81200000 T hrtimer_wakeup\n",
				   4);
	ret = ret ?: hgt_output_set_meta(out, HGT_OPT_KALLSYMS, b.p, b.len);
	b.len = 0;
	ret = ret ?: bput_item(&b, "", 4) ?: hgt_output_set_meta(out, HGT_OPT_PRINTK, b.p, b.len);
	if (host) {
		for (i = 0; i < s->o.nr_vcpus && len < (int)sizeof(cmd) - 64; i++)
			len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, "%d CPU %d/%s\n",
					s->vc[i].pid, i, s->o.tcg ? "TCG" : "KVM");
		for (i = 0; i < s->o.nr_host_cpus && len < (int)sizeof(cmd) - 64; i++)
			len += snprintf(cmd + len, sizeof(cmd) - (size_t)len,
					"%d kworker/%d:1\n%d stress-ng\n", 200 + i, i, 4000 + i);
	} else {
		for (i = 0; i < s->o.nr_vcpus && len < (int)sizeof(cmd) - 256; i++)
			for (k = 0; k < 4; k++)
				len += snprintf(cmd + len, sizeof(cmd) - (size_t)len, "%d %s\n",
						guest_pid(i, k), guest_comms[k]);
	}
	cmd[len] = 0;
	b.len = 0;
	ret = ret ?: bput_item(&b, cmd, 8) ?: hgt_output_set_meta(out, HGT_OPT_CMDLINES, b.p, b.len);
	free(b.p);
	return ret;
}

static int add_str_option(struct hgt_output *out, unsigned int id, const char *v)
{
	return hgt_output_add_option(out, id, v, (uint32_t)strlen(v) + 1);
}

/* TIME_SHIFT and GUEST as a recording with time sync would write them. */
static int embed_sync(struct sim *s, struct hgt_output *guest, struct hgt_output *host,
		      uint64_t host_id, uint64_t guest_id)
{
	int N = s->o.nr_vcpus, i, ret;
	struct hgt_time_shift_cpu *cpus = calloc((size_t)N, sizeof(*cpus));
	int64_t *v = calloc((size_t)N * 8, sizeof(int64_t));
	int ids[HGT_SIM_MAX_VCPUS], pids[HGT_SIM_MAX_VCPUS];
	struct hgt_time_shift ts = { .peer_id = host_id, .nr_cpus = N, .cpus = cpus };
	uint8_t *buf;
	uint32_t len;

	if (!cpus || !v) {
		free(cpus);
		free(v);
		return -ENOMEM;
	}
	ts.flags = s->o.drift_ppb ? HGT_TSYNC_INTERPOLATE : 0;
	for (i = 0; i < N; i++) {
		int64_t *c = v + 8 * i;
		struct vcpu *vc = &s->vc[i];

		cpus[i].time = c;
		cpus[i].offset = c + 2;
		cpus[i].scaling = c + 4;
		cpus[i].frac = c + 6;
		c[4] = c[5] = s->o.ratio ? (int64_t)s->o.ratio : 1;
		c[6] = c[7] = s->o.ratio ? s->o.frac : 0;
		if (s->o.drift_ppb) {
			int64_t t[2], o[2];

			drift_samples(s, t, o);
			cpus[i].count = 2;
			c[0] = t[0];
			c[1] = t[1];
			c[2] = o[0];
			c[3] = o[1];
			if (s->o.channel_bound > 0) {
				/* a channel's samples of the moving offset: each within the bound
				 */
				uint64_t b = (uint64_t)s->o.channel_bound;

				c[2] += (int64_t)range(s, 0, 2 * b) - (int64_t)b +
					s->o.channel_bias;
				c[3] += (int64_t)range(s, 0, 2 * b) - (int64_t)b +
					s->o.channel_bias;
			}
		} else if (vc->stepped) {
			cpus[i].count = 2;
			c[0] = (int64_t)hgt_tsc_host_to_guest(s->t0, s->o.ratio, s->o.frac,
							      s->off0);
			c[1] = (int64_t)hgt_tsc_host_to_guest(vc->step_at, s->o.ratio, s->o.frac,
							      vc->tsc_off);
			c[2] = -s->off0;
			c[3] = -vc->tsc_off;
		} else if (s->o.channel_bound > 0) {
			/* a channel's samples: at the start and the end, each within the bound */
			uint64_t b = (uint64_t)s->o.channel_bound;

			cpus[i].count = 2;
			c[0] = (int64_t)hgt_tsc_host_to_guest(s->t0, s->o.ratio, s->o.frac,
							      s->off0);
			c[1] = (int64_t)hgt_tsc_host_to_guest(s->t_end, s->o.ratio, s->o.frac,
							      s->off0);
			c[2] = -s->off0 + (int64_t)range(s, 0, 2 * b) - (int64_t)b +
			       s->o.channel_bias;
			c[3] = -s->off0 + (int64_t)range(s, 0, 2 * b) - (int64_t)b +
			       s->o.channel_bias;
		} else {
			cpus[i].count = 1;
			c[0] = (int64_t)hgt_tsc_host_to_guest(s->t0, s->o.ratio, s->o.frac,
							      s->off0);
			c[2] = -s->off0;
		}
		ids[i] = vc->id;
		pids[i] = vc->pid;
	}
	ret = s->o.embed_sync ? hgt_time_shift_option_build(&ts, &buf, &len) : 0;
	if (!ret && s->o.embed_sync) {
		ret = hgt_output_add_option(guest, HGT_OPT_TIME_SHIFT, buf, len);
		free(buf);
	}
	if (!ret && s->o.embed_sync && s->o.channel_bound > 0) {
		char line[160];

		snprintf(
			line, sizeof(line),
			"hgtrace sync: agent channel (simulated), clock x86-tsc: %d samples, bound=%lld\n",
			2 * N, (long long)s->o.channel_bound);
		ret = hgt_output_add_option(guest, HGT_OPT_CPUSTAT, line,
					    (uint32_t)strlen(line) + 1);
	}
	if (!ret && s->o.embed_sync) {
		uint32_t t2n[4] = { s->mult, s->shift, 0, 0 };

		ret = hgt_output_add_option(guest, HGT_OPT_TSC2NSEC, t2n, 16);
	}
	if (!ret)
		ret = hgt_guest_option_build("sim-guest", guest_id, N, ids, pids, &buf, &len);
	if (!ret) {
		ret = hgt_output_add_option(host, HGT_OPT_GUEST, buf, len);
		free(buf);
	}
	free(cpus);
	free(v);
	return ret;
}

static int copy_streams(struct sim *s, struct hgt_output *out, struct stream *st, int n)
{
	static uint8_t buf[PAGE * 64];
	int i, ret = 0;

	for (i = 0; !ret && i < n; i++) {
		size_t k;

		ret = flush_page(s, &st[i]);
		if (ret)
			break;
		rewind(st[i].tmp);
		while (!ret && (k = fread(buf, PAGE, 64, st[i].tmp)) > 0)
			ret = hgt_output_write_cpu(out, 0, i, buf, k * PAGE);
	}
	return ret;
}

static int write_file(struct sim *s, const char *path, bool host, uint64_t my_id,
		      struct hgt_output **outp)
{
	HGT_OPTS(hgt_output_opts, oo, .version = s->o.version, .compression = s->o.compression);
	struct hgt_output *out = hgt_output_create(path, &oo);
	static const char clocks[] =
		"local global counter uptime perf mono mono_raw boot [x86-tsc]\n";
	char uname[128];
	int ret;

	if (!out)
		return -errno;
	*outp = out;
	snprintf(uname, sizeof(uname), "Linux %s 6.1.0-sim x86_64", host ? "host" : "guest");
	ret = write_meta(s, out, host);
	ret = ret ?: add_str_option(out, HGT_OPT_TRACECLOCK, clocks);
	ret = ret ?: add_str_option(out, HGT_OPT_UNAME, uname);
	ret = ret ?: add_str_option(out, HGT_OPT_VERSION, "hgtrace-simulate");
	ret = ret ?: hgt_output_add_option(out, HGT_OPT_TRACEID, &my_id, 8);
	if (!ret && host) {
		uint32_t t2n[4] = { s->mult, s->shift, 0, 0 };

		ret = hgt_output_add_option(out, HGT_OPT_TSC2NSEC, t2n, 16);
	}
	return ret;
}

static int finish_file(struct sim *s, struct hgt_output *out, bool host)
{
	int n = host ? s->o.nr_host_cpus : s->o.nr_vcpus;
	int ret = hgt_output_add_buffer(out, "", host ? "tsc2nsec" : "x86-tsc", n);

	if (ret >= 0)
		ret = copy_streams(s, out, host ? s->host : s->guest, n);
	if (ret) {
		hgt_output_abort(out);
		return ret;
	}
	return hgt_output_close(out);
}

static int setup(struct sim *s)
{
	int i;

	s->tep = tep_alloc();
	if (!s->tep)
		return -ENOMEM;
	for (i = 0; hgt__sim_formats[i].system; i++) {
		struct tep_event *e = NULL;
		int bad;

		hgt__parse_lock();
		bad = tep_parse_format(s->tep, &e, hgt__sim_formats[i].format,
				       strlen(hgt__sim_formats[i].format),
				       hgt__sim_formats[i].system);
		hgt__parse_unlock();
		if (bad)
			return sim_error(s, EINVAL, "cannot parse the embedded format of %s",
					 hgt__sim_formats[i].event);
		s->ev[i] = e;
	}
	if (i != EV_MAX)
		return sim_error(s, EINVAL, "internal error: %d embedded formats, expected %d", i,
				 EV_MAX);
	return 0;
}

static int open_streams(struct sim *s, struct stream **st, int n)
{
	int i;

	*st = calloc((size_t)n, sizeof(**st));
	if (!*st)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		(*st)[i].tmp = tmpfile();
		if (!(*st)[i].tmp)
			return sim_error(s, errno, "cannot create a temporary file: %s",
					 strerror(errno));
	}
	return 0;
}

static void close_streams(struct stream *st, int n)
{
	int i;

	if (!st)
		return;
	for (i = 0; i < n; i++)
		if (st[i].tmp)
			fclose(st[i].tmp);
	free(st);
}

/**
 * hgt_simulate - generate one host + guest session.
 */
int hgt_simulate(const struct hgt_sim_opts *opts, struct hgt_sim_result *res)
{
	struct sim *s = calloc(1, sizeof(*s));
	struct hgt_output *hout = NULL, *gout = NULL;
	uint64_t hid, gid;
	int ret, i;

	if (!s)
		return -ENOMEM;
	if (!opts || opts->sz < sizeof(size_t) || opts->sz > sizeof(s->o)) {
		free(s);
		return -EINVAL;
	}
	memcpy(&s->o, opts, opts->sz);
	if (!s->o.nr_vcpus)
		s->o.nr_vcpus = 4;
	if (!s->o.nr_host_cpus)
		s->o.nr_host_cpus = 4;
	if (!s->o.duration_us)
		s->o.duration_us = 200000;
	if (!s->o.tsc_khz)
		s->o.tsc_khz = 2600000;
	if (s->o.nr_vcpus < 1 || s->o.nr_vcpus > HGT_SIM_MAX_VCPUS || s->o.nr_host_cpus < 1 ||
	    s->o.nr_host_cpus > 1024 || !s->o.host_path || !s->o.guest_path ||
	    (s->o.ratio && (s->o.frac > 63 || s->o.ratio < (1ULL << s->o.frac) / 4 ||
			    s->o.ratio > (1ULL << s->o.frac) * 4)) ||
	    (s->o.drift_ppb && (s->o.ratio || s->o.offset_step)) || s->o.offset_step < 0 ||
	    (s->o.nr_host_cpus < 64 && s->o.no_idle_exit >> s->o.nr_host_cpus)) {
		ret = sim_error(
			s, EINVAL,
			"bad parameters: 1-%d vCPUs, 1-1024 host CPUs, both paths, a ratio within 1/4..4 of 1 << frac (frac <= 63), drift with neither scaling nor an offset step, no-idle-exit CPUs among the host's",
			HGT_SIM_MAX_VCPUS);
		free(s);
		return ret;
	}
	for (i = 0; i < s->o.nr_inject || s->o.nr_inject < 0; i++) {
		const struct hgt_sim_inject *in = s->o.inject + i;

		if (s->o.nr_inject < 0 || s->o.nr_inject > HGT_SIM_MAX_INJECT || !s->o.inject ||
		    in->cause < HGT_SIM_PREEMPT || in->cause > HGT_SIM_WOKEN || !in->us ||
		    in->us > 10000000 || (in->cause == HGT_SIM_WOKEN && s->o.nr_host_cpus < 2) ||
		    ((in->cause == HGT_SIM_EXITS || in->cause == HGT_SIM_IRQS ||
		      in->cause == HGT_SIM_SOFTIRQS) &&
		     (!in->count || in->count > 100000))) {
			ret = sim_error(
				s, EINVAL,
				"bad injection %d: at most %d, each 1 us to 10 s, exits and irqs 1 to 100000 of them, woken with 2 host CPUs or more",
				i + 1, HGT_SIM_MAX_INJECT);
			free(s);
			return ret;
		}
	}
	if (s->o.ratio == (1ULL << s->o.frac))
		s->o.ratio = 0;
	s->rng = s->o.seed * 0x9e3779b97f4a7c15ULL + 0x1234567;
	rnd(s);
	s->t0 = 3000000000000ULL + range(s, 0, 1000000000); /* ~19 min of host uptime */
	s->t_end = s->t0 + us(s, s->o.duration_us);
	s->shift = 24;
	s->mult = (uint32_t)(((uint64_t)1000000 << 24) / s->o.tsc_khz);
	/* the VM started 60 s ago: its TSC counts from there */
	s->off0 = s->o.tsc_offset ? s->o.tsc_offset
				  : -(int64_t)hgt_tsc_host_to_guest(s->t0 - us(s, 60000000),
								    s->o.ratio, s->o.frac, 0);
	s->vc = calloc((size_t)s->o.nr_vcpus, sizeof(*s->vc));
	ret = s->vc ? setup(s) : -ENOMEM;
	for (i = 0; !ret && i < s->o.nr_vcpus; i++) {
		s->vc[i].id = s->o.sparse_vcpu_ids ? 2 * i : i;
		s->vc[i].pid = 5001 + i;
		s->vc[i].last_cpu = i % s->o.nr_host_cpus;
		s->vc[i].tsc_off = s->off0;
		s->vc[i].task = i % 4;
	}
	ret = ret ?: open_streams(s, &s->host, s->o.nr_host_cpus);
	ret = ret ?: open_streams(s, &s->guest, s->o.nr_vcpus);
	if (!ret && s->o.truth_path) {
		int fd;

		/* replaced only when all is written, like the two trace files */
		s->truth_nf = hgt_newfile_open(s->o.truth_path, 0);
		fd = s->truth_nf ? dup(hgt_newfile_fd(s->truth_nf)) : -1;
		s->truth = fd >= 0 ? fdopen(fd, "w") : NULL;
		if (!s->truth) {
			if (fd >= 0)
				close(fd);
			ret = s->truth_nf ? sim_error(s, errno, "%s: %s", s->o.truth_path,
						      strerror(errno))
					  : -errno;
		}
	}
	hid = rnd(s) | 1;
	gid = rnd(s) | 1;
	if (!ret && s->truth) {
		fprintf(s->truth,
			"# hgtrace simulate ground truth: guest_cpu guest_ts host_tsc event\n"
			"# seed %llu vcpus %d host_cpus %d ratio %llu frac %u tsc_khz %llu\n"
			"# host_trace_id 0x%llx guest_trace_id 0x%llx tsc_offset %lld\n",
			(unsigned long long)s->o.seed, s->o.nr_vcpus, s->o.nr_host_cpus,
			(unsigned long long)s->o.ratio, s->o.frac, (unsigned long long)s->o.tsc_khz,
			(unsigned long long)hid, (unsigned long long)gid, (long long)s->off0);
		for (i = 0; i < s->o.nr_vcpus; i++)
			fprintf(s->truth, "# vcpu %d id %d pid %d\n", i, s->vc[i].id, s->vc[i].pid);
	}
	ret = ret ?: simulate(s);
	ret = ret ?: write_file(s, s->o.host_path, true, hid, &hout);
	ret = ret ?: write_file(s, s->o.guest_path, false, gid, &gout);
	if (!ret && (s->o.embed_sync || s->o.embed_guest))
		ret = embed_sync(s, gout, hout, hid, gid);
	if (!ret) {
		ret = finish_file(s, hout, true);
		hout = NULL;
	}
	if (!ret) {
		ret = finish_file(s, gout, false);
		gout = NULL;
	}
	if (s->truth && fclose(s->truth) && !ret)
		ret = sim_error(s, EIO, "cannot write the ground truth");
	s->truth = NULL;
	if (!ret && s->truth_nf)
		ret = hgt_newfile_commit(s->truth_nf);
	else
		hgt_newfile_abort(s->truth_nf);
	s->truth_nf = NULL;
	if (!ret && res) {
		memset(res, 0, sizeof(*res));
		res->host_events = s->host_events;
		res->guest_events = s->guest_events;
		res->host_trace_id = hid;
		res->guest_trace_id = gid;
		res->nr_vcpus = s->o.nr_vcpus;
		res->tsc_offset = s->off0;
		for (i = 0; i < s->o.nr_vcpus; i++) {
			res->vcpu_id[i] = s->vc[i].id;
			res->vcpu_pid[i] = s->vc[i].pid;
		}
		for (i = 0; i < s->o.nr_inject; i++)
			if (s->inj_done[i])
				res->injected[res->nr_injected++] = s->inj[i];
	}
	hgt_output_abort(hout);
	hgt_output_abort(gout);
	close_streams(s->host, s->o.nr_host_cpus);
	close_streams(s->guest, s->o.nr_vcpus);
	if (s->tep)
		tep_free(s->tep);
	free(s->vc);
	free(s);
	return ret;
}
