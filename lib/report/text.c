// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One event line of trace-cmd report:
 *   COMM-PID [CPU] LAT TIME: [TSDIFF] NAME: <pad> INFO
 * The info text comes from libtraceevent (plugins or the event's print fmt); everything
 * around it is formatted here, with the same rules libtraceevent applies.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include <hgtrace/report.h>

#include "../common/common-local.h"
#include "report-local.h"

/* the name printed for a record whose event is not known, as libtraceevent prints it */
#define UNKNOWN_EVENT "[UNKNOWN EVENT]"

#define TRACE_FLAG_IRQS_OFF 0x01
#define TRACE_FLAG_IRQS_NOSUPPORT 0x02
#define TRACE_FLAG_NEED_RESCHED 0x04
#define TRACE_FLAG_HARDIRQ 0x08
#define TRACE_FLAG_SOFTIRQ 0x10

int hgt__line_init(struct hgt__line *l)
{
	l->olen = 0;
	l->grow = false;
	l->oom = false;
	l->werr = 0;
	memset(&l->comm_cache, 0, sizeof(l->comm_cache));
	memset(l->pid_col, 0, sizeof(l->pid_col));
	memset(l->event_cache, 0, sizeof(l->event_cache));
	memset(l->common, 0, sizeof(l->common));
	l->common_next = 0;
	l->tsec_len = 0;
	l->lat_txt[0] = 0;
	l->ocap = HGT__OBUF;
	l->obuf = malloc(HGT__OBUF);
	trace_seq_init(&l->info);
	l->memo = hgt__info_memo_new(); /* NULL: printed every time */
	return l->info.buffer && l->obuf ? 0 : -1;
}

void hgt__line_fini(struct hgt__line *l)
{
	free(l->obuf);
	hgt__info_memo_free(l->memo);
	l->memo = NULL;
	trace_seq_destroy(&l->info);
}

/**
 * hgt_report_format_time - libtraceevent's "%P.Dd" time rendering (1.7).
 */
int hgt_report_format_time(char *buf, uint64_t ts, int prec, unsigned int div)
{
	uint64_t p10 = 1;
	int i;

	if (div)
		ts = (ts + div / 2) / div;
	/* libtraceevent keeps 10^prec in an int: from 10^10 on it wraps, and "%12d" (prec 12)
	 * prints the raw value. Precisions 1-9 always print sec.frac. */
	if (prec <= 0 || prec >= 10)
		return snprintf(buf, 32, "%12" PRIu64, ts);
	for (i = 0; i < prec; i++)
		p10 *= 10;
	return snprintf(buf, 32, "%5" PRIu64 ".%0*" PRIu64, ts / p10, prec, ts % p10);
}

/**
 * hgt_report_latency - irqs-off, need-resched, hard/softirq, preempt count (low, high nibble).
 */
void hgt_report_latency(char *buf, unsigned int flags, unsigned int pc)
{
	static const char hex[] = "0123456789abcdef";
	bool hard = flags & TRACE_FLAG_HARDIRQ, soft = flags & TRACE_FLAG_SOFTIRQ;

	buf[0] = (flags & TRACE_FLAG_IRQS_OFF)	       ? 'd'
		 : (flags & TRACE_FLAG_IRQS_NOSUPPORT) ? 'X'
						       : '.';
	buf[1] = (flags & TRACE_FLAG_NEED_RESCHED) ? 'N' : '.';
	buf[2] = hard && soft ? 'H' : hard ? 'h' : soft ? 's' : '.';
	buf[3] = pc & 0xf ? hex[pc & 0xf] : '.';
	buf[4] = (pc >> 4) & 0xf ? hex[(pc >> 4) & 0xf] : '.';
	buf[5] = 0;
}

void hgt__format_time_col(char *buf, uint64_t ts, bool in_usecs, bool nsec)
{
	if (!in_usecs)
		hgt_report_format_time(buf, ts, 12, 0);
	else if (nsec)
		hgt_report_format_time(buf, ts, 9, 1);
	else
		hgt_report_format_time(buf, ts, 6, 1000);
}

/* @n bytes of @p to @out, unless a write failed before (l->werr says how). */
static void line_write(struct hgt__line *l, FILE *out, const void *p, size_t n)
{
	if (l->werr || !n)
		return;
	errno = 0;
	if (fwrite(p, 1, n, out) != n)
		l->werr = -(errno ? errno : EIO);
}

/* Output buffer: lines are assembled here and written in large pieces. */
static char *obuf_reserve(struct hgt__line *l, FILE *out, size_t n)
{
	if (l->olen + n > l->ocap && l->grow) {
		size_t cap = (l->olen + n) * 2;
		char *b = realloc(l->obuf, cap);

		if (b) {
			l->obuf = b;
			l->ocap = cap;
		} else {
			l->oom = true;
		}
	}
	if (l->olen + n > l->ocap) {
		if (!out)
			return NULL;
		line_write(l, out, l->obuf, l->olen);
		l->olen = 0;
	}
	if (n > l->ocap)
		return NULL;
	return l->obuf + l->olen;
}

void hgt__line_put(struct hgt__line *l, FILE *out, const char *s, size_t n)
{
	char *p = obuf_reserve(l, out, n);

	if (!p) { /* longer than the buffer: write it through */
		if (out)
			line_write(l, out, s, n);
		return;
	}
	memcpy(p, s, n);
	l->olen += n;
}

void hgt__line_flush(struct hgt__line *l, FILE *out)
{
	if (out)
		line_write(l, out, l->obuf, l->olen);
	l->olen = 0;
}

/* Decimal digits of @v, right-aligned in a field of @width (left-aligned when @left). The
 * digits go straight to their place, last first: a copy from a buffer just written two
 * bytes at a time would wait for those stores. */
static size_t put_uint(char *p, uint64_t v, int width, bool left, char pad)
{
	size_t n = (size_t)hgt__ndigits(v), len = n > (size_t)width ? n : (size_t)width, i;
	char *d = p + (left ? 0 : len - n);

	hgt__put_dec_back(d + n, v);
	if (left)
		for (i = n; i < len; i++)
			p[i] = ' ';
	else
		for (i = 0; i < len - n; i++)
			p[i] = pad;
	return len;
}

static size_t put_int(char *p, int64_t v, int width, bool left)
{
	if (v >= 0)
		return put_uint(p, (uint64_t)v, width, left, ' ');
	/* rare (negative pids): printf does it */
	return (size_t)sprintf(p, left ? "%-*lld" : "%*lld", width, (long long)v);
}

/* The time column's text (without the leading space and colon), as libtraceevent 1.7. */
/* @v (< 10^@digits) as exactly @digits digits, zero-padded. */
static void put_digits(char *p, uint32_t v, int digits)
{
	int i = digits;

	if (digits > 4) { /* two chains of divisions, not one: the time column's 6 or 9 */
		uint32_t lo = v % 10000;

		put_digits(p, v / 10000, digits - 4);
		memcpy(p + digits - 4, hgt__digit_pairs + 2 * (lo / 100), 2);
		memcpy(p + digits - 2, hgt__digit_pairs + 2 * (lo % 100), 2);
		return;
	}
	while (i >= 2) {
		unsigned int r = (unsigned int)(v % 100);

		v /= 100;
		i -= 2;
		memcpy(p + i, hgt__digit_pairs + 2 * r, 2);
	}
	if (i)
		p[0] = (char)('0' + v % 10);
}

/* The time column's text (without the leading space and colon), as libtraceevent 1.7. The
 * seconds change rarely from one line to the next: their text is kept. */
static size_t put_time(struct hgt__line *l, char *p, uint64_t ts, bool in_usecs, bool nsec)
{
	uint64_t sec, frac;
	int digits = nsec ? 9 : 6;
	size_t n;

	if (!in_usecs)
		return put_uint(p, ts, 12, false, ' ');
	if (nsec) {
		sec = ts / 1000000000ULL;
		frac = ts % 1000000000ULL;
	} else {
		ts = (ts + 500) / 1000;
		sec = ts / 1000000ULL;
		frac = ts % 1000000ULL;
	}
	if (!l->tsec_len || l->tsec != sec) {
		l->tsec = sec;
		l->tsec_len = put_uint(l->tsec_txt, sec, 5, false, ' ');
	}
	n = l->tsec_len;
	memcpy(p, l->tsec_txt, sizeof(l->tsec_txt)); /* a constant size: no call, no loop */
	p[n++] = '.';
	put_digits(p + n, (uint32_t)frac, digits);
	return n + (size_t)digits;
}

unsigned long long hgt__line_diff_base(const struct hgt__line_ctx *c, unsigned long long ts)
{
	return c->use_trace_clock && !c->nsec ? (ts + 500) / 1000 : ts;
}

/**
 * hgt__comm_cached - tep_data_comm_from_pid(@tep, @pid), remembered in @c once found, with
 * its length (*@len, when @len is not NULL).
 */
const char *hgt__comm_cached(struct hgt__comm_cache *c, struct tep_handle *tep, int pid,
			     size_t *len)
{
	unsigned int k = (unsigned int)pid % (sizeof(c->e) / sizeof(c->e[0]));
	const char *comm;
	size_t n;

	if (c->e[k].tep == tep && c->e[k].pid == pid) {
		if (len)
			*len = c->e[k].len;
		return c->e[k].comm;
	}
	comm = tep_data_comm_from_pid(tep, pid);
	n = strlen(comm);
	if (strcmp(comm, "<...>")) {
		c->e[k].tep = tep;
		c->e[k].pid = pid;
		c->e[k].comm = comm;
		c->e[k].len = n;
	}
	if (len)
		*len = n;
	return comm;
}

/*
 * The common fields (type, flags, preempt count, pid), read straight from the record at
 * the offsets the handle's formats give, when the file and this machine are both little
 * endian and the sizes are plain; libtraceevent's tep_data_*() look the field up and
 * convert on every call, which cost 5% of a report.
 */
enum { CF_TYPE, CF_FLAGS, CF_PC, CF_PID };

static void common_setup(struct hgt__line_common *cm, struct tep_handle *tep,
			 const struct tep_event *ev)
{
	static const char *const names[4] = { "common_type", "common_flags", "common_preempt_count",
					      "common_pid" };
	int i;

	cm->tep = tep;
	cm->fast = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && !tep_is_file_bigendian(tep);
	for (i = 0; i < 4 && cm->fast; i++) {
		struct tep_format_field *f =
			tep_find_common_field((struct tep_event *)ev, names[i]);

		if (!f || f->offset < 0 || f->offset > 64 ||
		    (f->size != 1 && f->size != 2 && f->size != 4))
			cm->fast = false;
		else {
			cm->off[i] = (uint8_t)f->offset;
			cm->size[i] = (uint8_t)f->size;
		}
	}
}

static unsigned int common_read(const struct hgt__line_common *cm, const struct tep_record *rec,
				int i)
{
	const uint8_t *d = (const uint8_t *)rec->data + cm->off[i];
	uint16_t v2;
	uint32_t v4;

	switch (cm->size[i]) {
	case 1:
		return d[0];
	case 2:
		memcpy(&v2, d, 2);
		return v2;
	default:
		memcpy(&v4, d, 4);
		return v4;
	}
}

/* @tep's common fields, set up from @rec's event the first time (NULL: no event to learn
 * them from, libtraceevent reads them) */
static const struct hgt__line_common *common_of(struct hgt__line *l, struct tep_handle *tep,
						struct tep_record *rec)
{
	struct hgt__line_common *cm;
	struct tep_event *ev;

	for (unsigned int i = 0; i < HGT__LINE_TEPS; i++)
		if (l->common[i].tep == tep)
			return &l->common[i];
	ev = tep_find_event(tep, tep_data_type(tep, rec));
	if (!ev)
		return NULL;
	cm = &l->common[l->common_next++ % HGT__LINE_TEPS];
	common_setup(cm, tep, ev);
	return cm;
}

/* @rec's event, or NULL; its name's length into *@nlen (the name printed for no event:
 * "[UNKNOWN EVENT]") */
static struct tep_event *event_of(struct hgt__line *l, const struct hgt__line_common *cm,
				  struct tep_handle *tep, struct tep_record *rec, size_t *nlen)
{
	int type = cm && cm->fast ? (int)common_read(cm, rec, CF_TYPE) : tep_data_type(tep, rec);
	/* each handle's ids from a place of their own: a merge's inputs have the same ids */
	unsigned int k = ((unsigned int)type + (cm ? (unsigned int)(cm - l->common) * 61u : 0)) %
			 (sizeof(l->event_cache) / sizeof(l->event_cache[0]));
	struct tep_event *ev;

	if (l->event_cache[k].tep == tep && l->event_cache[k].type == type) {
		*nlen = l->event_cache[k].name_len;
		return l->event_cache[k].event;
	}
	ev = tep_find_event(tep, type);
	*nlen = strlen(ev ? ev->name : UNKNOWN_EVENT);
	if (ev) {
		l->event_cache[k].tep = tep;
		l->event_cache[k].type = type;
		l->event_cache[k].event = ev;
		l->event_cache[k].name_len = *nlen;
	}
	return ev;
}

/* "%16s-%-5d" of @comm (@clen bytes) and @pid into @p; returns its length */
static size_t put_comm_pid(char *p, const char *comm, size_t clen, int pid)
{
	size_t n = 0;

	if (clen < 16) {
		memset(p, ' ', 16 - clen);
		n = 16 - clen;
	}
	memcpy(p + n, comm, clen);
	n += clen;
	p[n++] = '-';
	return n + put_int(p + n, pid, 5, true);
}

/* The comm and pid columns of @pid, made once its comm is known (NULL before, or when they
 * do not fit: print them from *@comm, *@clen). */
static const char *pid_column(struct hgt__line *l, struct tep_handle *tep, int pid,
			      const char **comm, size_t *clen, size_t *len)
{
	unsigned int k = (unsigned int)pid % (sizeof(l->pid_col) / sizeof(l->pid_col[0]));
	__typeof__(l->pid_col[0]) *e = &l->pid_col[k];

	if (e->tep == tep && e->pid == pid && e->len) {
		*len = e->len;
		return e->text;
	}
	*comm = hgt__comm_cached(&l->comm_cache, tep, pid, clen);
	/* 16 + 1 + 11 (a pid's digits and sign) past the comm's: it fits */
	if (*clen + 12 > sizeof(e->text) || !strcmp(*comm, "<...>"))
		return NULL;
	e->tep = tep;
	e->pid = pid;
	e->len = (uint8_t)put_comm_pid(e->text, *comm, *clen, pid);
	*len = e->len;
	return e->text;
}

void hgt__line_print(struct hgt__line *l, const struct hgt__line_ctx *c, struct tep_record *rec,
		     unsigned long long *last_ts, FILE *out)
{
	const struct hgt__line_common *cm = common_of(l, c->tep, rec);
	size_t clen, nlen, n = 0, ilen;
	struct tep_event *event = event_of(l, cm, c->tep, rec, &nlen);
	const char *name = event ? event->name : UNKNOWN_EVENT;
	bool fast = cm && cm->fast;
	int pid = fast ? (int)common_read(cm, rec, CF_PID) : tep_data_pid(c->tep, rec);
	const char *comm = NULL, *info;
	size_t collen = 0;
	const char *col = pid_column(l, c->tep, pid, &comm, &clen, &collen);
	bool in_place;
	char *p;

	if (col)
		clen = collen;
	/* Everything before the info fits in this bound, and a compiled info text after it. */
	p = obuf_reserve(l, out, clen + nlen + 256 + HGT__INFO_DST + 1);
	in_place = p != NULL;
	if (!p) {
		hgt__line_flush(l, out);
		p = obuf_reserve(l, out, 256);
		if (!p)
			return; /* out of memory while growing (l->oom) */
		col = NULL;
		comm = "<...>";
		clen = 5;
		nlen = 0;
		name = "";
	}
	if (rec->missed_events > 0)
		n += (size_t)sprintf(p + n, "CPU:%d [%lld EVENTS DROPPED]\n", rec->cpu,
				     rec->missed_events);
	else if (rec->missed_events < 0)
		n += (size_t)sprintf(p + n, "CPU:%d [EVENTS DROPPED]\n", rec->cpu);
	if (c->boundary)
		n += (size_t)sprintf(p + n, "CPU:%d [SUBBUFFER START]\n", rec->cpu);
	/* "%16s-%-5d [%03d]" */
	if (col) {
		/* the whole slot (room for it is reserved): a constant size copies in two moves */
		memcpy(p + n, col, sizeof(l->pid_col[0].text));
		n += collen;
	} else {
		n += put_comm_pid(p + n, comm, clen, pid);
	}
	p[n++] = ' ';
	p[n++] = '[';
	if (rec->cpu >= 0 && rec->cpu < 1000) {
		put_digits(p + n, (uint32_t)rec->cpu, 3);
		n += 3;
	} else {
		n += put_uint(p + n, (unsigned int)rec->cpu, 3, false, '0');
	}
	p[n++] = ']';
	if (c->latency && c->raw) {
		n += (size_t)sprintf(p + n, "-0x%x",
				     fast ? common_read(cm, rec, CF_FLAGS)
					  : (unsigned int)tep_data_flags(c->tep, rec));
	} else if (c->latency) {
		unsigned int flags = fast ? common_read(cm, rec, CF_FLAGS)
					  : (unsigned int)tep_data_flags(c->tep, rec);
		unsigned int pc = fast ? common_read(cm, rec, CF_PC)
				       : (unsigned int)tep_data_preempt_count(c->tep, rec);

		if (!l->lat_txt[0] || flags != l->lat_flags || pc != l->lat_pc) {
			hgt_report_latency(l->lat_txt, flags, pc);
			l->lat_flags = flags;
			l->lat_pc = pc;
		}
		p[n++] = ' ';
		memcpy(p + n, l->lat_txt, 5);
		n += 5;
	}
	if (c->in_usecs)
		p[n++] = ' ';
	n += put_time(l, p + n, rec->ts, c->in_usecs, c->nsec);
	p[n++] = ':';
	if (c->ts_diff) {
		unsigned long long ts = hgt__line_diff_base(c, rec->ts);
		char d[50] = "";

		if (*last_ts)
			snprintf(d, sizeof(d), "(+%lld)", (long long)(ts - *last_ts));
		*last_ts = ts;
		n += (size_t)sprintf(p + n, " %-8s", d);
	}
	p[n++] = ' ';
	memcpy(p + n, name, nlen);
	n += nlen;
	p[n++] = ':';
	p[n++] = ' ';
	if (nlen < 20) {
		memset(p + n, ' ', 20 - nlen);
		n += 20 - nlen;
	}
	l->olen += n;

	p = l->obuf + l->olen;
	info = hgt__info_text_to(l->memo, &l->info, c->tep, event, rec, c->raw, &ilen,
				 in_place ? p : NULL);
	if (info != p) { /* not written in place */
		p = obuf_reserve(l, out, ilen + 1);
		if (!p) { /* longer than the buffer */
			hgt__line_put(l, out, info, ilen);
			hgt__line_put(l, out, "\n", 1);
			return;
		}
		memcpy(p, info, ilen);
	}
	p[ilen] = '\n';
	l->olen += ilen + 1;
}
