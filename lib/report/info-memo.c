// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The info text of records already printed, kept for records with the same bytes.
 *
 * Most of a report's time is libtraceevent turning a record's payload into its info text,
 * and real traces repeat payloads a lot (a task's syscalls with the same arguments, the
 * same irq on the same line, a context switch between the same two tasks). The info text
 * is a function of the event, the handle's fixed metadata (formats, kallsyms, printk
 * formats) and the payload bytes alone when the event has no plugin handler, or has one of
 * the sched plugin's handlers, which only read the payload (they also register the comms
 * they print, first registration wins, so printing the same payload again registers
 * nothing new). Plugins that keep state between records (the function tracers) or that
 * look at anything but the payload are never memoized. The key is the whole payload,
 * common fields included, so a print fmt that reads common_pid stays exact.
 *
 * A direct-mapped table: a hit costs one hash and one memcmp of the payload; a miss prints
 * as before and stores the text when it fits. HGT_INFO_MEMO=0 turns it off and
 * HGT_INFO_MEMO=stats prints the hit rate at the end (benchmarks, debugging).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include "report-local.h"

#define MEMO_SLOTS 4096 /* power of two */
#define MEMO_KEY 120	/* payload bytes kept (sched_switch: 64) */
#define MEMO_TEXT 184	/* info text bytes kept */
#define PURE_SLOTS 1024 /* per-event decisions (power of two) */

struct memo_slot {
	const struct tep_handle *tep;
	uint16_t klen, tlen;
	bool raw;
	uint8_t key[MEMO_KEY];
	char text[MEMO_TEXT];
};

struct pure_slot {
	const struct tep_event *ev;
	bool pure;     /* printing it reads nothing but the payload and the fixed metadata */
	bool compiled; /* printed by a compiled format (fmt-compile.c) */
	bool skip;     /* compiled, and its payloads repeat too rarely for the table to pay */
	unsigned int lookups, hits, skipped;
	/* a record of at least this size holds all its fields, when none is dynamic (else
	 * record_short() looks at each) */
	int fixed_size;
	bool walk;
};

struct hgt__info_memo {
	/* hash | 1 of each used slot, 0 when free: a lookup that misses touches only this
	 * compact array (the slots are 1.3 MB, and a cache miss on them cost more than the
	 * hash) */
	uint64_t tag[MEMO_SLOTS];
	struct memo_slot slot[MEMO_SLOTS];
	struct pure_slot pure[PURE_SLOTS];
	unsigned long long hits, lookups, records;
	bool stats;
	bool on;	      /* the table is used (HGT_INFO_MEMO is not 0) */
	struct hgt__fmtc *fc; /* compiled print formats, or NULL */
};

struct hgt__info_memo *hgt__info_memo_new(void)
{
	const char *e = getenv("HGT_INFO_MEMO");
	struct hgt__info_memo *m;

	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->on = !(e && !strcmp(e, "0"));
	m->stats = e && !strcmp(e, "stats");
	e = getenv("HGT_FASTFMT");
	if (e && !strcmp(e, "verify"))
		m->on = false;	 /* every record through the compiled format, checked */
	m->fc = hgt__fmtc_new(); /* NULL: libtraceevent prints every text */
	return m;
}

void hgt__info_memo_free(struct hgt__info_memo *m)
{
	if (m && m->stats && m->records)
		fprintf(stderr, "info memo: %llu records, %llu looked up, %llu hits (%.1f%%)\n",
			m->records, m->lookups, m->hits,
			100.0 * (double)m->hits / (double)m->records);
	if (m)
		hgt__fmtc_free(m->fc);
	free(m);
}

/*
 * The memo's record of @ev, or NULL when @ev's texts are not kept: printing them reads
 * more than the payload and the fixed metadata, or @ev has a compiled format and its
 * payloads repeat too rarely. A compiled format prints a text in about the time a memo
 * lookup that misses costs (the table is 1.3 MB: its cache misses), so the table only pays
 * for them when at least half the lookups hit: that is measured over MEMO_TRIAL lookups,
 * and again after MEMO_TRIAL * 16 records without the table.
 */
#define MEMO_TRIAL 4096
/* @ev's decisions, made the first time. The slots are by the event's address (the inputs
 * of a merge have events of the same ids), probed from there on to a free one; with all in
 * use, the first is taken again. */
static struct pure_slot *event_slot(struct hgt__info_memo *m, const struct tep_event *ev, bool raw)
{
	unsigned int h = (((unsigned int)(uintptr_t)ev >> 4) * 2654435761u) >> 16;
	struct pure_slot *p = NULL;

	for (unsigned int i = 0; i < PURE_SLOTS; i++) {
		p = &m->pure[(h + i) & (PURE_SLOTS - 1)];
		if (p->ev == ev || !p->ev)
			break;
	}
	if (p->ev && p->ev != ev)
		p = &m->pure[h & (PURE_SLOTS - 1)];
	if (p->ev != ev) {
		const struct tep_format_field *lists[2] = { ev->format.common_fields,
							    ev->format.fields };

		memset(p, 0, sizeof(*p));
		p->ev = ev;
		/* -R prints the fields; no handler prints the print fmt */
		p->pure = raw || !ev->handler ||
			  (!strcmp(ev->system, "sched") && (!strcmp(ev->name, "sched_switch") ||
							    !strcmp(ev->name, "sched_wakeup") ||
							    !strcmp(ev->name, "sched_wakeup_new")));
		p->compiled = !raw && hgt__fmtc_has(m->fc, (struct tep_event *)ev);
		for (int k = 0; k < 2; k++)
			for (const struct tep_format_field *f = lists[k]; f; f = f->next) {
				if (f->offset < 0 || f->size < 0 || f->flags & TEP_FIELD_IS_DYNAMIC)
					p->walk = true;
				else if (f->offset + f->size > p->fixed_size)
					p->fixed_size = f->offset + f->size;
			}
	}
	return p;
}

/* @p when its event's texts are looked up in the table */
static struct pure_slot *memo_event(struct pure_slot *p)
{
	if (p->skip && ++p->skipped >= MEMO_TRIAL * 16)
		p->skip = false; /* try again */
	return p->pure && !p->skip ? p : NULL;
}

/* After a lookup of @p's event: whether its texts are worth keeping. */
static void memo_judge(struct pure_slot *p, bool hit)
{
	p->hits += hit;
	if (++p->lookups < MEMO_TRIAL)
		return;
	p->skip = p->compiled && p->hits * 2 < p->lookups;
	p->lookups = p->hits = p->skipped = 0;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 31);
}

static uint64_t payload_hash(const struct tep_handle *tep, const uint8_t *p, size_t n, bool raw)
{
	uint64_t h = mix(0x9e3779b97f4a7c15ULL,
			 (uint64_t)n << 1 | raw); /* no pointer: hits repeat run to run */

	for (; n >= 8; p += 8, n -= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		h = mix(h, v);
	}
	if (n) {
		uint64_t v = 0;

		memcpy(&v, p, n);
		h = mix(h, v);
	}
	return h ^ (h >> 29);
}

/* The bytes @ev's fields need in @rec (fixed fields, and the data a __data_loc or __rel_loc
 * word points at), when @rec is shorter; else 0. libtraceevent 1.7 trusts a record's
 * length: a "char buf[]" past its end becomes a negative length and a wild memcpy. */
static int record_short(struct tep_handle *tep, const struct tep_event *ev,
			const struct tep_record *rec)
{
	struct tep_format_field *lists[2] = { ev->format.common_fields, ev->format.fields };
	int size = rec->size;

	for (int k = 0; k < 2; k++)
		for (struct tep_format_field *f = lists[k]; f; f = f->next) {
			unsigned long long loc, off, len;

			if (f->offset < 0 || f->size < 0 || f->offset + f->size > size)
				return f->offset + f->size;
			if (!(f->flags & TEP_FIELD_IS_DYNAMIC))
				continue;
			if (f->size != 4)
				return 0; /* an older 2-byte form: libtraceevent's own checks */
			loc = tep_read_number(tep, (const char *)rec->data + f->offset, 4);
			off = loc & 0xffff;
			len = loc >> 16;
			if (f->flags & TEP_FIELD_IS_RELATIVE)
				off += (unsigned long long)f->offset + 4;
			if (off + len > (unsigned long long)size)
				return (int)(off + len);
		}
	return 0;
}

/**
 * hgt__info_text - the info text of @rec (event @ev of @tep), without its trailing newline:
 * from the memo @m when the same payload was printed before, else printed by libtraceevent
 * into @seq (and kept in @m when it fits). @m may be NULL. Sets *@len; the text stays valid
 * until the next call.
 */
const char *hgt__info_text(struct hgt__info_memo *m, struct trace_seq *seq, struct tep_handle *tep,
			   const struct tep_event *ev, struct tep_record *rec, bool raw,
			   size_t *len)
{
	return hgt__info_text_to(m, seq, tep, ev, rec, raw, len, NULL);
}

/**
 * hgt__info_text_to - hgt__info_text(), a compiled format's text written into @dst
 * (HGT__INFO_DST bytes, or NULL): the copy a printer would make of it saved.
 */
const char *hgt__info_text_to(struct hgt__info_memo *m, struct trace_seq *seq,
			      struct tep_handle *tep, const struct tep_event *ev,
			      struct tep_record *rec, bool raw, size_t *len, char *dst)
{
	struct memo_slot *s = NULL;
	struct pure_slot *e = NULL, *ps = m && ev ? event_slot(m, ev, raw) : NULL;
	const char *text = NULL;
	unsigned int k = 0;
	uint64_t h = 0;
	size_t n = 0;
	int need;

	if (m)
		m->records++;
	if (ps && m->on && rec->size > 0 && rec->size <= MEMO_KEY && (e = memo_event(ps))) {
		bool hit;

		h = payload_hash(tep, rec->data, (size_t)rec->size, raw) | 1;
		k = (unsigned int)(h >> 1) & (MEMO_SLOTS - 1);
		s = &m->slot[k];
		m->lookups++;
		hit = m->tag[k] == h && s->tep == tep && s->raw == raw &&
		      s->klen == (uint16_t)rec->size && !memcmp(s->key, rec->data, s->klen);
		memo_judge(e, hit);
		if (hit) {
			m->hits++;
			*len = s->tlen;
			return s->text;
		}
	}
	if (ev && (!ps || ps->walk || rec->size < ps->fixed_size) &&
	    (need = record_short(tep, ev, rec)) > 0) {
		trace_seq_reset(seq);
		trace_seq_printf(seq, "[SHORT RECORD: %d bytes, its format needs %d]", rec->size,
				 need);
		s = NULL; /* not kept */
		text = seq->buffer;
		n = seq->len;
	} else if (m && !raw && ev) {
		text = hgt__fmtc_text(m->fc, tep, (struct tep_event *)ev, rec, &n, dst);
	}
	if (!text) {
		trace_seq_reset(seq);
		tep_print_event(tep, seq, rec, "%s", raw ? TEP_PRINT_INFO_RAW : TEP_PRINT_INFO);
		text = seq->buffer;
		n = seq->len;
	}
	if (n && text[n - 1] == '\n')
		n--;
	if (s && n <= MEMO_TEXT) {
		m->tag[k] = h;
		s->tep = tep;
		s->raw = raw;
		s->klen = (uint16_t)rec->size;
		memcpy(s->key, rec->data, s->klen);
		s->tlen = (uint16_t)n;
		memcpy(s->text, text, n);
	}
	*len = n;
	return text;
}
