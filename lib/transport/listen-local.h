/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The host listener's state, shared by its parts: the poll loop and the guests' streams
 * (listen.c), the sync over the control channel (listen-sync.c), and the network
 * (listen-net.c: listening, dialing, classifying new connections).
 */
#ifndef HGT_LISTEN_LOCAL_H
#define HGT_LISTEN_LOCAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <hgtrace/clock.h>
#include <hgtrace/output.h>
#include <hgtrace/peer.h>
#include <hgtrace/session.h>
#include <hgtrace/sync.h>
#include <hgtrace/transport.h>

#include "../record/record-local.h"
#include "proto.h"

#define MAX_GUESTS 64
#define MAX_CPUS 1024
#define MAX_PENDING 64
#define RBUF_SIZE (1 << 20)    /* a data channel's read at most; a FIFO's pipe */
#define HELLO_TIMEOUT_MS 10000 /* a network guest's first words */
#define SYNC_FIRST 16	       /* probes per CPU in the first and the last round */
#define SYNC_PERIODIC 8	       /* in the others */
#define SYNC_TIMEOUT_MS 1000   /* a probe not answered in time is lost */
#define SYNC_MAX_SAMPLES 4096
#define END_TIMEOUT_MS 10000	/* a guest told to stop sends its end within this */
#define REFUSED_LINGER_MS 2000	/* a refused connection is read until its peer closes */
#define BATCH_BYTES (256 << 10) /* a TCP data channel wakes the poll once this much waits */
#define BATCH_POKE_MS 100	/* ... and is read anyway when not read for so long */

enum { FIN_NONE, FIN_RUNNING, FIN_DONE };

struct chan {
	int fd;
	int cpu;
	uint8_t hdr[HGT__DATA_HDR];
	size_t hdr_got;
	uint64_t bytes; /* page bytes received */
	size_t part;	/* bytes of the current, incomplete page */
	int tmp;	/* the CPU's file in the guest's recording directory (-1: not yet) */
	bool eof;
	bool no_splice;	 /* splice refused: read and write from now on */
	uint64_t stale;	 /* bytes before this session's header (a dead host's agent's) */
	bool batched;	 /* TCP: the poll woken at BATCH_BYTES (SO_RCVLOWAT), not per segment */
	uint64_t t_read; /* when it was last read (ms): a batched channel's poke */
};

struct opt {
	uint16_t id;
	uint32_t size;
	uint8_t *data;
};

struct guest {
	char name[80];
	bool fifo;
	int ctl_r, ctl_w;
	/* control message being received */
	uint8_t mhdr[HGT__MSG_HDR];
	size_t mhdr_got;
	bool ctl_skip;	    /* the message being read is an earlier session's: dropped */
	uint64_t ctl_stale; /* control bytes of an earlier session dropped before READY */
	uint8_t *msg;
	size_t msg_len, msg_got, msg_cap;
	/* what the guest said */
	bool hello, ended, ready;
	bool recording;	       /* its tracing is on: RECORDING (TRACEID of a version 2 agent) */
	uint32_t proto;	       /* its HELLO's protocol version */
	uint64_t recording_ts; /* its trace clock when its tracing went on (0: unknown) */
	struct hgt_tsc_sample rate0; /* --record-host: TSC and CLOCK_MONOTONIC_RAW at its start */
	uint32_t nr_cpus, page_size, long_size;
	uint64_t session;
	char clock[64];
	uint8_t *meta[6];
	size_t meta_len[6];
	/* each item compressed once, for every rewrite of head.dat (NULL: not yet) */
	uint8_t *zmeta[6];
	size_t zmeta_len[6];
	struct opt *opts;
	int nr_opts;
	struct chan *data;
	int nr_data;
	uint64_t bytes;	     /* everything received */
	uint64_t mem;	     /* of it, control stream bytes: held in memory */
	uint64_t held_check; /* bytes received when held() looks at the files again */
	bool over_limit;
	char fault[256];
	uint64_t t_start, t_last;
	uint64_t t_sent;      /* the last bytes sent to its agent (a serving agent's host check) */
	uint64_t quiet_since; /* since when polls find none of its channels readable (0: not) */
	bool start_sent, stop_sent, done;
	bool ctl_eof; /* the control channel ended (after END: the data may still come) */
	/* its file is written in a thread of its own, so the others go on meanwhile */
	pthread_t fin_thread;
	int fin_state; /* FIN_NONE, FIN_RUNNING, FIN_DONE (set by the thread) */
	int fin_ret;
	char fin_err[HGT__ERRLEN];
	int fin_missing; /* the description item that never came (-1: none; 6: HELLO) */
	/* --record-host: the host's side, stopped in the same thread (host_stopped) */
	bool host_stopped;
	int host_ret;
	char host_err[HGT__ERRLEN];
	/* sessions */
	const struct hgt_record_opts *record; /* CONFIG to send before the start */
	uint64_t t_read;		      /* host clock when the last control read returned */
	uint64_t t_stop_sent;
	const char *dir;		    /* FIFO guests: where their FIFOs are */
	const struct hgt_listen_peer *peer; /* a guest we dialed (its agent listens) */
	int src;			    /* FIFO guests: index in opts->guests */
	int seq;			    /* --record-host: its session number (1, 2, ...) */
	const char *host_clock;		    /* the host's trace clock for probes (NULL: no sync) */
	uint64_t host_trace_id;		    /* the TIME_SHIFT's peer */
	struct hgt_recorder *host_rec;	    /* --record-host: the host's side of this guest */
	char host_path[4096];
	char host_clock_buf[64];
	struct hgt_vcpu_threads vt; /* its VMM's vCPU threads, found when it started */
	struct hgt__recdir rd;	    /* PATH.recording: its pages and head.dat as they come */
	bool head_written;
	char path[4096];     /* its file (set with rd) */
	uint64_t *end_bytes; /* END: each CPU's page bytes sent (NULL: not said) */
	uint64_t agent_cpu_ns, agent_wall_ns, agent_setup_cpu_ns;
	struct sync {
		bool on, failed, final_started, final_done;
		uint64_t final_ms;
		int lost_run; /* probes lost in a row */
		char why[160];
		uint32_t rounds, round_per_cpu;
		int round_cpu, round_left; /* probes left in the round (0: none running) */
		uint32_t seq;
		bool waiting;
		uint64_t t1, t1_ms;
		uint64_t next_ms;
		uint64_t lost;
		/* the round's best probe per CPU */
		uint64_t *best_rtt, *best_g, *best_mid;
		/* the samples: per CPU, guest time, offset and its bound (half the probe's
		 * round trip); a TIME_SHIFT keeps those hgt__sync_select() picks */
		uint32_t *count;
		int64_t **time, **offset;
		uint64_t **half;
		uint64_t bound, best; /* of all the samples */
	} sync;
};

struct pending {
	int fd;
	uint8_t hdr[HGT__DATA_HDR];
	size_t got;
	uint64_t t;
};

struct listener {
	struct hgt_listen_opts o;
	uint8_t *rbuf; /* RBUF_SIZE bytes: a data channel's read (64 KB when it is NULL) */
	int spipe[2];  /* a socket's pages are spliced through it to the file (-1: not yet) */
	bool started_called;
	bool stop_seen; /* on_stopping called */
	bool received;	/* on_received called (or none to call) */
	uint64_t t_begin;
	struct guest *g[MAX_GUESTS];
	int nr_g;
	int tcp_fd, vsock_fd;
	int unix_fd;	   /* o.hvsock_path's, or -1 */
	uint64_t unix_ino; /* its inode: removed at the end if still there */
	struct pending pend[MAX_PENDING];
	uint64_t mem; /* the guests' mem, together */
	int nr_pend;
	int tcp_count;
	int failures;
	/* refused connections: read and dropped until their peer closes (or
	 * REFUSED_LINGER_MS), so the refusal is not lost to a reset */
	struct pending refused[MAX_PENDING];
	int nr_refused;
	uint64_t accept_paused; /* accept() found no file descriptor: until then */
	bool accept_failing;
};

/* Where add_sync_options() puts its options: the file being written, or a list saved in
 * the recording directory. */
struct opt_sink {
	struct hgt_output *out;
	struct hgt_option_blob list[4];
	void *owned[4];
	int n;
};

/* listen.c */
int hgt__listen_add_chan(struct listener *l, struct guest *g, int fd, int cpu);
void hgt__listen_batch(struct chan *c, bool on);
void hgt__listen_ctl_bytes(struct listener *l, struct guest *g, const uint8_t *buf, ssize_t r);
void hgt__listen_fault(struct listener *l, struct guest *g, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void hgt__listen_log(struct listener *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int hgt__listen_named_guest(struct listener *l, const char *name, struct guest **g);
struct guest *hgt__listen_new_guest(struct listener *l, const char *name);
void hgt__listen_send_cmd(struct guest *g, const char *c);
int hgt__listen_send_config(struct guest *g);
int hgt__listen_send_framed(struct guest *g, uint16_t type, const void *p, size_t n);

/* listen-sync.c */
int hgt__listen_add_sync_options(struct listener *l, struct guest *g, struct opt_sink *out);
/* How many samples the TIME_SHIFT keeps, and their largest bound. */
void hgt__listen_sync_kept(const struct guest *g, uint32_t *kept, uint64_t *bound);
uint64_t hgt__listen_host_clock(struct guest *g);
void hgt__listen_save_sync(struct listener *l, struct guest *g);
void hgt__listen_sync_reply(struct listener *l, struct guest *g, const uint8_t *p, size_t n);
void hgt__listen_sync_round(struct listener *l, struct guest *g, int per_cpu);
int hgt__listen_sync_setup(struct listener *l, struct guest *g);
void hgt__listen_sync_tick(struct listener *l, struct guest *g, uint64_t t);

/* listen-net.c */
void hgt__listen_accept_one(struct listener *l, int lfd);
void hgt__listen_dial_data(struct listener *l, struct guest *g, const uint8_t *p);
int hgt__listen_socket(struct listener *l, int family, unsigned int port);
int hgt__listen_unix_socket(const char *path);
int hgt__listen_open_peer(struct listener *l, const struct hgt_listen_peer *pr);
void hgt__listen_pending_read(struct listener *l, struct pending *p);
void hgt__listen_pending_tick(struct listener *l);
void hgt__listen_refused_tick(struct listener *l, uint64_t t);

#endif
