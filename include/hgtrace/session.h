/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/session.h - one session records the host and its guests together (hgtrace
 * record -A): the host's own recording, each guest's agent (hgtrace agent --serve) driven
 * over its channel, the guest clocks synchronised with the host's over that channel and
 * stored as each guest file's TIME_SHIFT, and the vCPU threads of each guest's VMM
 * process stored as the host file's GUEST option, so the files merge with no option.
 */
#ifndef HGTRACE_SESSION_H
#define HGTRACE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hgtrace/record.h>
#include <hgtrace/transport.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hgt_session_guest {
	const char *name; /* guest file BASE-NAME.dat; [A-Za-z0-9_.-] */
	const char *dir;  /* its FIFO pairs (hgtrace setup-guest DIR/NAME), or: */
	const struct hgt_record_opts *record; /* the guest's events, clock and buffer (its
						 output is ignored); clock NULL: the host's */
	int pid; /* its VMM (QEMU) process; 0: found from the FIFO path or the name */
	/* an agent that listens (agent --serve --listen), dialed by the host */
	enum hgt_transport transport; /* 0 (FIFOs), HGT_TRANSPORT_TCP, _VSOCK or _HVSOCK */
	const char *host;	      /* TCP */
	unsigned int cid;	      /* VSOCK (the VMM is then the process with guest-cid=CID) */
	unsigned int port;	      /* TCP, VSOCK; HVSOCK: the guest's vsock port */
	const char *path;	      /* HVSOCK: the VMM's UNIX socket (Firecracker's uds_path) */
	/* TCP, VSOCK: its agent is trace-cmd's own (`trace-cmd agent`, trace-cmd 3.1 on),
	 * driven as `trace-cmd record -A` drives it: ptp time sync; the guest's events, -b
	 * and -M as trace-cmd options, and these, sent as given */
	bool trace_cmd;
	const char *const *peer_args;
	int nr_peer_args;
};

struct hgt_session_opts {
	size_t sz;			    /* sizeof(struct hgt_session_opts); use HGT_OPTS() */
	const struct hgt_record_opts *host; /* the host's recording; ->output names the file;
					       clock NULL: x86-tsc where it can be read */
	const struct hgt_session_guest *guests;
	int nr_guests;
	unsigned int sync_interval_ms; /* between probe rounds (0: 1000) */
	FILE *log;		       /* progress, warnings and the summary (NULL: none) */
	volatile int *stop;	       /* the session stops when it becomes non-zero */
	void (*started)(void *ctx);    /* host and guests are recording (or the guests'
					  start timed out): run the workload now */
	void *ctx;
	const char *kvm_debugfs;     /* where KVM's debugfs is (NULL: /sys/kernel/debug): a guest
					whose VMM has a VM there is synchronised exactly from its
					tsc-offset and TSC scaling (read at start and stop) and the
					host's kvm_write_tsc_offset events, recorded for it */
	void (*stopping)(void *ctx); /* the stop is seen: called once, with @ctx, before
					any recording stops */
	/* set: once the stop is seen, every guest's last page is taken and the host's
	 * tracing halted (its pages all written), this is called once, with @ctx, before any
	 * file is written (a flight recorder's last search, with every page there) */
	void (*received)(void *ctx);
};

/**
 * hgt_session_run - record the host and @opts->guests until *@opts->stop, then write the
 * host file and one file per guest beside it, synchronised and mapped. A guest that does
 * not answer, answers badly or cannot be synchronised is said on @opts->log and does not
 * stop the others or the host. Returns 0 when every file was written, or -errno (reason in
 * hgt_last_error()) after writing what could be.
 */
int hgt_session_run(const struct hgt_session_opts *opts);

/* A VMM's vCPU threads ("CPU N/KVM", "CPU N/TCG": QEMU with -name ...,debug-threads=on). */
struct hgt_vcpu_threads {
	int pid;   /* the VMM process */
	int nr;	   /* threads found */
	int *vcpu; /* vCPU index of each, ascending */
	int *tid;
};

/**
 * hgt_vmm_find - the process of guest @name. Its transport first: the process whose
 * command line holds a FIFO of @fifo_dir (a chardev path=DIR/agent-ctl-path or
 * DIR/trace-path-cpuN, resolved against the process's working directory), or with a
 * leading '=' the option after it (e.g. "=guest-cid=3"); else "-name NAME" or
 * "-name guest=NAME". A process whose command line names another transport of the same
 * kind (another FIFO directory, another guest-cid) is never taken; among equals one with
 * vCPU threads beats one without (a wrapper). @proc is the proc root (NULL: /proc).
 * Returns the pid, -ENOENT, or -ENOTUNIQ when two or more fit equally (their pids in
 * hgt_last_error(); the caller names one, e.g. with --guest-pid).
 */
int hgt_vmm_find(const char *proc, const char *fifo_dir, const char *name);

/**
 * hgt_vmm_vcpu_threads - the vCPU threads of process @pid, from their names. Returns 0
 * (@out->nr may be 0: thread names off) or -errno; free with hgt_vcpu_threads_free().
 */
int hgt_vmm_vcpu_threads(const char *proc, int pid, struct hgt_vcpu_threads *out);

void hgt_vcpu_threads_free(struct hgt_vcpu_threads *t);

#ifdef __cplusplus
}
#endif

#endif
