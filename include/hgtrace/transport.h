/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/transport.h - the guest agent and the host listener.
 *
 * The agent (in the guest) records with the recorder of hgtrace/record.h, but its per-CPU
 * readers splice whole ring-buffer pages straight into the transport (one data channel per
 * CPU); a control channel carries what the host needs for a complete trace.dat (header
 * page, formats, kallsyms, printk formats, cmdlines, clock, CPU count, trace id, stats) and
 * the host's start ('1') and stop ('0') orders, as in the kernel's virtio-trace agent.
 *
 * Transports: virtio-serial ports (/dev/virtio-ports/<name>, virtio-trace's names:
 * agent-ctl-path, trace-path-cpuN), FIFO pairs (<dir>/<name>.in host -> guest,
 * <dir>/<name>.out guest -> host, as QEMU's pipe chardev uses them), vsock and TCP.
 *
 * The listener treats the guest as hostile: every length and count is bounded, nothing the
 * guest sends chooses a path, each guest has a disk limit, and a broken stream ends that
 * guest's file cleanly (its CPU statistics say where the data stopped).
 */
#ifndef HGTRACE_TRANSPORT_H
#define HGTRACE_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hgtrace/record.h>

#ifdef __cplusplus
extern "C" {
#endif

enum hgt_transport {
	HGT_TRANSPORT_PORTS = 1, /* virtio-serial ports in a directory (/dev/virtio-ports) */
	HGT_TRANSPORT_FIFOS,	 /* FIFO pairs NAME.in / NAME.out in a directory */
	HGT_TRANSPORT_TCP,	 /* host:port (unauthenticated) */
	HGT_TRANSPORT_VSOCK,	 /* cid:port */
	HGT_TRANSPORT_STDOUT,	 /* debug (virtio-trace's -o): every CPU's raw pages to stdout,
				    interleaved; starts at once, stops on *stop */
	HGT_TRANSPORT_HVSOCK,	 /* hybrid vsock (Firecracker, Cloud Hypervisor): the VMM's UNIX
				    socket, "CONNECT PORT\n" answered "OK ...\n" (host side) */
};

struct hgt_agent_opts {
	size_t sz; /* sizeof(struct hgt_agent_opts); use HGT_OPTS() */
	enum hgt_transport transport;
	const char *dir;  /* PORTS / FIFOS: the directory */
	const char *host; /* TCP host name or address */
	unsigned int cid; /* VSOCK */
	unsigned int port;
	bool now;			      /* start at once, without waiting for '1' */
	const struct hgt_record_opts *record; /* events, clock, buffer, instance... */
	FILE *log;
	volatile int *stop; /* set by a signal handler to stop (may be NULL) */
	bool serve;	    /* a service: run every session a host asks for (CONFIG, '1', '0'), then
			       wait for the next; ports and FIFOs only */
	unsigned int host_silent_ms; /* serve: end a session whose host is silent this long
					(0: 30000; the host probes every second) */
	/* now: called once recording, after the host's '1' (a listen --record-host is then
	 * recording too) or 3 s without it: the guest's workload starts here */
	void (*started)(void *ctx);
	void *ctx;
	/* serve over a network (transport TCP or VSOCK): the agent listens on port (TCP:
	 * on host, an address; NULL: every address) and a host dials it, one session at a
	 * time: control first, then one data connection per CPU */
	bool listen;
	/* listen: speak trace-cmd's agent protocol, as `trace-cmd agent` does: hosts are
	 * `trace-cmd record -A` (ptp time sync, data over TCP or vsock) */
	bool trace_cmd;
};

/**
 * hgt_agent_run - run the agent until the host says stop ('0'), the control channel
 * closes, or *@opts->stop becomes non-zero. Returns 0 or -errno (reason in
 * hgt_last_error()).
 */
int hgt_agent_run(const struct hgt_agent_opts *opts);

struct hgt_listen_guest {
	const char *name; /* file name part: trace-NAME.dat ([A-Za-z0-9_.-] only) */
	const char *dir;  /* FIFO pairs made by hgt_setup_guest() */
};

/* How a guest's clock was synchronised with the host's, and what the guest sent. */
struct hgt_listen_result {
	const char *name;
	const char *path;  /* the file written, NULL if none could be */
	const char *fault; /* why its stream ended early, NULL if it did not */
	uint64_t trace_id; /* its TRACEID (0: none) */
	int nr_cpus;
	const char *clock;
	uint64_t bytes;		   /* everything received */
	const uint64_t *cpu_bytes; /* page bytes per CPU (nr_cpus entries) */
	/* sync over the agent's channel */
	const char *sync; /* "agent channel": samples stored; else why there are none */
	bool sync_failed; /* the guest's answers could not be trusted (said in sync) */
	uint64_t samples; /* stored in the TIME_SHIFT */
	uint32_t rounds;
	uint64_t best_rtt; /* host clock units */
	uint64_t bound;	   /* half the worst kept round trip: every stored offset is within it */
	uint64_t agent_cpu_ns, agent_wall_ns; /* the agent's own CPU time while recording
						 (from its first metadata sent to the stop) */
	uint64_t agent_setup_cpu_ns;	      /* and to set up, describe and finish */
	/* when its tracing went on, in its trace clock (its RECORDING message; 0: unknown) */
	uint64_t recording_ts;
	bool ended_after_stop; /* it stopped tracing on the host's stop, after it (its END,
				  and no fault) */
};

/* A guest whose agent listens (agent --serve --listen): the host dials it. Initialise
 * whole (designated initialisers): fields may be added at the end. */
struct hgt_listen_peer {
	const char *name;		      /* its file name part, as for FIFO guests */
	enum hgt_transport transport;	      /* HGT_TRANSPORT_TCP, _VSOCK or _HVSOCK */
	const char *host;		      /* TCP */
	unsigned int cid;		      /* VSOCK */
	unsigned int port;		      /* TCP, VSOCK; HVSOCK: the guest's vsock port */
	const struct hgt_record_opts *record; /* its settings (CONFIG) */
	const char *path; /* HVSOCK: the VMM's UNIX socket (Firecracker's uds_path) */
};

/* An agent never goes longer than this without a control message (a heartbeat when it has
 * nothing else to say), from its first message on. */
#define HGT_AGENT_HEARTBEAT_MS 5000

struct hgt_listen_opts {
	size_t sz;			       /* sizeof(struct hgt_listen_opts); use HGT_OPTS() */
	const char *output_dir;		       /* where trace-NAME.dat go (default ".") */
	const struct hgt_listen_guest *guests; /* FIFO guests */
	int nr_guests;
	unsigned int tcp_port;	    /* 0: none */
	unsigned int vsock_port;    /* 0: none */
	bool start;		    /* send '1' to each guest as it appears */
	unsigned int stop_after_ms; /* send '0' to each guest this long after its start */
	uint64_t max_bytes;	    /* per guest (0: 1 GiB) */
	unsigned int idle_ms;	    /* a stopped guest silent this long is finished (0: 500) */
	FILE *log;
	volatile int *stop; /* finish every guest when it becomes non-zero */
	/* sessions (hgtrace record -A) */
	const char *output_base;       /* guest files are BASE-NAME.dat (NULL: DIR/trace) */
	const char *sync_clock;	       /* the host's trace clock: probe guests with it */
	unsigned int sync_interval_ms; /* between probe rounds (0: 1000) */
	uint64_t host_trace_id;	       /* the TIME_SHIFT's peer */
	bool graceful; /* a stop sends '0' and waits for the guests' end; the listener runs
			  until *stop even when every guest has ended */
	unsigned int start_timeout_ms; /* on_started at the latest this long after the start
					  (0: 15000) */
	void (*on_started)(void *ctx); /* every guest said its tracing is on (or the timeout
					  passed: each one late is named in the log) */
	void (*on_guest_done)(void *ctx, const struct hgt_listen_result *r);
	void *ctx;
	/* guest-driven sessions (listen --record-host): when a guest starts recording on its
	 * own (agent --now), record the host with these settings (clock: the guest's) into
	 * OUTPUT_DIR/NAME-host.dat until the guest ends, sync the guest over its channel and
	 * map its vCPU threads */
	const struct hgt_record_opts *record_host;
	/* sessions with an agent --serve: per FIFO guest (same index as guests), the
	 * settings sent to it before its start (NULL, or a NULL entry: none) */
	const struct hgt_record_opts *const *guest_record;
	/* guests to dial (sessions over TCP or vsock) */
	const struct hgt_listen_peer *peers;
	int nr_peers;
	const char *bind_addr; /* the TCP port listens on this IPv4 address (NULL: all) */
	/* all guests' control streams held in memory together (0: 4 x max_bytes): past it,
	 * the guest holding the most is cut */
	uint64_t max_total_bytes;
	/* a network guest (TCP, vsock) that sends nothing for this long after its HELLO
	 * (its agent's heartbeat: HGT_AGENT_HEARTBEAT_MS) is ended and written (0: 30000) */
	unsigned int silent_ms;
	/* called once, when the listener first sees *stop set (the end of a session's
	 * command, where the stop is its exit) */
	void (*on_stopping)(void *ctx);
	/* called when guest @name's description ends with its TRACEID (before its pages): a
	 * session can then write the host's GUEST option where a kill leaves it (restore) */
	void (*on_guest_id)(void *ctx, const char *name, uint64_t trace_id);
	/* guests that connect through a hybrid-vsock VMM: the UNIX socket it forwards their
	 * connections to (Firecracker: uds_path + "_" + the port they connect to; NULL:
	 * none). Made here, removed at the end; a path that exists and is not a stale
	 * socket is refused */
	const char *hvsock_path;
	/* --record-host: the host's recording of guest @name started into @host_path, beside
	 * the guest's @guest_path (both recordings in progress: OUTPUT.recording) */
	void (*on_host_started)(void *ctx, const char *name, const char *host_path,
				const char *guest_path);
	/* --record-host: guest @name's recordings end next (called once the guest's stream
	 * came to its end and the host's tracing is halted, its pages all written, before
	 * both files are written; in the thread that writes them: it may
	 * take its time, the listener reads the other guests meanwhile; calls for different
	 * guests may run at once, and beside on_host_started of others) */
	void (*on_host_ending)(void *ctx, const char *name);
	/* called once after the stop is seen, when every guest's stream has come to its end
	 * (its last page received) or was given up, before any of their files is written
	 * at the stop (they wait for it): a flight recorder's last search, with every page
	 * there */
	void (*on_received)(void *ctx);
};

/**
 * hgt_listen_run - serve guests until every FIFO guest has finished (and, with a TCP or
 * vsock port, until *@opts->stop). Returns 0 when every guest's file was written, or
 * -errno after the others were served.
 */
int hgt_listen_run(const struct hgt_listen_opts *opts);

/**
 * hgt_setup_guest - create the FIFO pairs of guest @name with @cpus CPUs in @dir/@name
 * (made if missing) and print QEMU's -chardev/-device arguments and libvirt's <channel>
 * XML to @out. Returns 0 or -errno.
 */
int hgt_setup_guest(const char *dir, const char *name, int cpus, FILE *out);

#ifdef __cplusplus
}
#endif

#endif
