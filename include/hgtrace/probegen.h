/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * hgtrace/probegen.h - trace-events files (QEMU's grammar) and the code generator behind
 * `hgtrace gen`. See hgtrace-gen(1).
 */
#ifndef HGTRACE_PROBEGEN_H
#define HGTRACE_PROBEGEN_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HGT_TEV_DISABLE 0x1
#define HGT_TEV_VCPU 0x2
#define HGT_TEV_TCG 0x4
#define HGT_TEV_MAX_ARGS 10

struct hgt_tev_arg {
	char *type; /* as declared, e.g. "const char *" */
	char *name;
	int kind; /* enum hgt_probe_kind */
	int tcg;  /* a TCGv argument of a tcg event: a value known at execution only */
};

struct hgt_tev {
	char *name;
	unsigned int props; /* HGT_TEV_* */
	struct hgt_tev_arg *args;
	int nargs;
	char *fmt;	/* C tokens: string literals and PRI macros; NULL when absent */
	char *fmt_exec; /* a tcg event's second format */
	const char *file;
	int line;
};

struct hgt_tev_list {
	struct hgt_tev *ev;
	size_t n;
	char **files; /* owned copies of the file names */
	size_t nfiles;
};

/**
 * hgt_tev_parse - append the events of the trace-events file @path to @l.
 * Returns 0, or a negative errno with "FILE:LINE: what is wrong" in @err.
 */
int hgt_tev_parse(const char *path, struct hgt_tev_list *l, char *err, size_t errsz);

/** hgt_tev_free - free what hgt_tev_parse() appended to @l. */
void hgt_tev_free(struct hgt_tev_list *l);

/**
 * hgt_tev_expand_fmt - the printf format of @ev (its exec format when @exec) as one
 * string, PRI macros expanded for this platform (PRIx64 -> "lx"), into @buf.
 * Returns 0 or -EINVAL.
 */
int hgt_tev_expand_fmt(const struct hgt_tev *ev, int exec, char *buf, size_t sz);

enum hgt_gen_format {
	HGT_GEN_H,
	HGT_GEN_C,
	HGT_GEN_D,
	HGT_GEN_STP,
	HGT_GEN_UST,
	HGT_GEN_LOG_STP,    /* log-stap: PREFIX.log.NAME printf()s the event (qemu-trace-stap) */
	HGT_GEN_SIMPLE_STP, /* simpletrace-stap: PREFIX.simpletrace.NAME, QEMU's binary records */
	HGT_GEN_RS,	    /* rs: trace_NAME() and trace_NAME_enabled() for Rust */
	HGT_GEN_UST_C,	    /* ust-c: defines a provider shared by several groups, once */
};

struct hgt_gen_opts {
	size_t sz; /* sizeof(struct hgt_gen_opts) */
	enum hgt_gen_format format;
	unsigned int backends;	   /* HGT_PROBE_B_* (hgtrace/probes.h); 0: nop only */
	const char *group;	   /* names the group, the dtrace and LTTng provider */
	const char *out_name;	   /* the output's name, for #line */
	const char *header;	   /* C format: the header to include */
	const char *ust_header;	   /* the LTTng provider header to include */
	const char *dtrace_header; /* the header `dtrace -h` makes */
	const char *binary;	   /* stp: the program's path */
	const char *probe_prefix;  /* stp: the tapset prefix */
	const char *provider;	   /* the DTrace and LTTng provider (NULL: the group; QEMU
				    * uses "qemu" for every group) */
};

/**
 * hgt_gen_backends - parse "nop,log,simple,ftrace,syslog,ust,dtrace" into HGT_PROBE_B_*
 * bits. Returns 0, or -EINVAL naming the unknown backend in @err.
 */
int hgt_gen_backends(const char *list, unsigned int *out, char *err, size_t errsz);

/**
 * hgt_gen_format_parse - an output format by its name ("h", "c", "d", "stp", "ust",
 * "ust-c", "log-stap", "simpletrace-stap", "rs") into *@fmt. Returns 0, or -EINVAL.
 */
int hgt_gen_format_parse(const char *name, enum hgt_gen_format *fmt);

/**
 * hgt_gen - write the @o->format output for the events of @l to @out.
 * Returns 0, or a negative errno with the reason in @err.
 */
int hgt_gen(const struct hgt_gen_opts *o, const struct hgt_tev_list *l, FILE *out, char *err,
	    size_t errsz);

#ifdef __cplusplus
}
#endif

#endif
