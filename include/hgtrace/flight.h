/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/flight.h - a flight recorder for host + guest recordings in progress: it keeps
 * only the last seconds of each recording's pages on disk, looks for guest delays in them
 * as hgt_why() finds them while the recording goes on, and when one is longer than a
 * trigger's, saves the window around it as a synced pair that trace-cmd reads.
 */
#ifndef HGTRACE_FLIGHT_H
#define HGTRACE_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_flight_opts {
	size_t sz; /* sizeof(struct hgt_flight_opts); use HGT_OPTS() */
	/* the recordings in progress, by their outputs (OUTPUT.recording is read): the host's
	 * first, then the guests' (hgtrace record -A: BASE-NAME.dat) */
	const char *const *outputs;
	int nr_outputs;
	/* "wakeup>DUR[:COMM|PID]", "timer>DUR", "pair:FROM[:FILTER],TO[:FILTER]>DUR",
	 * "pair-cpu:..." (matched per CPU), "preempt>DUR", "exit:REASON>DUR",
	 * "marker:TEXT"; DUR is a number and ns, us, ms or s (hgt_flight_parse_trigger()) */
	const char *const *triggers;
	int nr_triggers;
	uint64_t window_ns;  /* pages kept: the last WINDOW (0: 10 s) */
	uint64_t after_ns;   /* a trigger's window is saved this long after it */
	uint64_t tick_ns;    /* how often the kept pages are searched (0: 1 s) */
	uint64_t holdoff_ns; /* after a trigger, the next is taken no sooner (0: none) */
	int max_triggers;    /* windows saved at most (0: 10) */
	uint64_t flush_ns;   /* how late the recorders' pages may reach their files (0: 1 s,
				hgtrace record's --flush-ms): a window is saved this long after
				its after time */
	/* the saved windows: PREFIX-N.dat (the host), PREFIX-N-NAME.dat (a guest NAME; or the
	 * name of its output without ".dat"); N goes past files that exist (NULL: "flight" in
	 * the host output's directory) */
	const char *prefix;
	FILE *log; /* triggers, saved files, a trigger's delay explained, the summary */
	/* each line on @log says this after "hgtrace flight: " (NULL: nothing), when several
	 * recorders share it (hgtrace listen: the guest's name) */
	const char *name;
	/* a search reads the newest this many bytes of pages at most (0: 256 MB), so that a
	 * recorder that cannot keep up still punches out old pages in time; what it leaves is
	 * said ("behind: ... unsearched") */
	uint64_t search_max_bytes;
	/* hgt_flight_stop() is called once every recording has stopped and written all its
	 * pages (their files not yet finished; a session: hgt_session_opts.received): its
	 * last search takes the delays up to the last record (else those ending in the last
	 * flush interval and tick are not) */
	bool complete_at_stop;
};

struct hgt_flight;

/**
 * hgt_flight_start - start the flight recorder on @opts->outputs in a thread of its own.
 * Recordings that do not exist yet are taken up when they appear. Returns a handle, or
 * NULL with errno set and the reason in hgt_last_error() (a trigger that does not parse,
 * bad options).
 */
struct hgt_flight *hgt_flight_start(const struct hgt_flight_opts *opts);

/**
 * hgt_flight_trigger - a trigger by hand: the window now is saved @opts->after_ns later.
 * Async-signal-safe (a SIGUSR1 handler may call it).
 */
void hgt_flight_trigger(struct hgt_flight *f);

/**
 * hgt_flight_stop - search what was recorded up to now once more, save the windows still
 * to be saved, print the summary (every trigger, its delay and the host's top cause; the
 * recorder's CPU time) and free @f. Call it before the recordings' files are finished
 * (with @opts->complete_at_stop, once they have written all their pages). Returns 0, or
 * -errno when a window could not be saved (said on the log).
 */
int hgt_flight_stop(struct hgt_flight *f);

/**
 * hgt_flight_parse_trigger - check trigger @text as hgt_flight_start() takes it. Returns 0
 * or -EINVAL with the reason in hgt_last_error().
 */
int hgt_flight_parse_trigger(const char *text);

/**
 * hgt_flight_check_opts - check @opts as hgt_flight_start() does, the outputs aside: the
 * times, and each trigger, which must parse and, but for a marker, be shorter than the
 * window (a delay is found only whole in the window a search reads). Returns 0 or -EINVAL
 * with the reason in hgt_last_error().
 */
int hgt_flight_check_opts(const struct hgt_flight_opts *opts);

#ifdef __cplusplus
}
#endif

#endif
