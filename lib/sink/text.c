// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * One event line of trace-cmd report:
 *   COMM-PID [CPU] LAT TIME: [TSDIFF] NAME: <pad> INFO
 * The info text comes from libtraceevent (plugins or the event's print fmt); everything
 * around it is formatted here, with the same rules libtraceevent applies.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <traceevent/event-parse.h>

#include <hgtrace/report.h>

#include "sink-local.h"

#define TRACE_FLAG_IRQS_OFF 0x01
#define TRACE_FLAG_IRQS_NOSUPPORT 0x02
#define TRACE_FLAG_NEED_RESCHED 0x04
#define TRACE_FLAG_HARDIRQ 0x08
#define TRACE_FLAG_SOFTIRQ 0x10

int hgt__line_init(struct hgt__line *l)
{
	trace_seq_init(&l->info);
	return l->info.buffer ? 0 : -1;
}

void hgt__line_fini(struct hgt__line *l)
{
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

	buf[0] = (flags & TRACE_FLAG_IRQS_OFF)		? 'd' :
		 (flags & TRACE_FLAG_IRQS_NOSUPPORT) ? 'X' :
						       '.';
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

void hgt__line_print(struct hgt__line *l, const struct hgt__line_ctx *c, struct tep_record *rec,
		     unsigned long long *last_ts, FILE *out)
{
	static const char spaces[] = "                    ";
	struct tep_event *event = tep_find_event_by_record(c->tep, rec);
	char head[256], tbuf[40];
	const char *name = event ? event->name : "[UNKNOWN EVENT]";
	size_t len, nlen;
	int pid = tep_data_pid(c->tep, rec), n;

	if (rec->missed_events > 0)
		fprintf(out, "CPU:%d [%lld EVENTS DROPPED]\n", rec->cpu, rec->missed_events);
	else if (rec->missed_events < 0)
		fprintf(out, "CPU:%d [EVENTS DROPPED]\n", rec->cpu);
	if (c->boundary)
		fprintf(out, "CPU:%d [SUBBUFFER START]\n", rec->cpu);

	n = snprintf(head, sizeof(head), "%16s-%-5d [%03d]", tep_data_comm_from_pid(c->tep, pid),
		     pid, rec->cpu);
	len = n < (int)sizeof(head) ? (size_t)n : sizeof(head) - 1;
	if (c->latency && c->raw) {
		len += snprintf(head + len, sizeof(head) - len, "-0x%x",
				tep_data_flags(c->tep, rec));
	} else if (c->latency) {
		head[len++] = ' ';
		hgt_report_latency(head + len, (unsigned int)tep_data_flags(c->tep, rec),
				   (unsigned int)tep_data_preempt_count(c->tep, rec));
		len += 5;
	}
	hgt__format_time_col(tbuf, rec->ts, c->in_usecs, c->nsec);
	len += snprintf(head + len, sizeof(head) - len, "%s%s:", c->in_usecs ? " " : "", tbuf);
	if (c->ts_diff) {
		unsigned long long ts = rec->ts;
		char d[50] = "";

		if (c->use_trace_clock && !c->nsec)
			ts = (ts + 500) / 1000;
		if (*last_ts)
			snprintf(d, sizeof(d), "(+%lld)", (long long)(ts - *last_ts));
		*last_ts = ts;
		len += snprintf(head + len, sizeof(head) - len, " %-8s", d);
	}
	fwrite(head, 1, len, out);
	nlen = strlen(name);
	fprintf(out, " %s: ", name);
	if (nlen < 20)
		fwrite(spaces, 1, 20 - nlen, out);

	trace_seq_reset(&l->info);
	tep_print_event(c->tep, &l->info, rec, "%s", c->raw ? TEP_PRINT_INFO_RAW : TEP_PRINT_INFO);
	len = l->info.len;
	if (len && l->info.buffer[len - 1] == '\n')
		len--;
	fwrite(l->info.buffer, 1, len, out);
	fputc('\n', out);
}
