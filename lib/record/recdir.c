// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A recording in progress, kept where a kill cannot take it: the directory OUTPUT.recording
 * beside the output holds
 *   state      "hgtrace recording", the recorder's pid and tracefs instance
 *   head.dat   a complete trace.dat with the metadata and options and no pages, written
 *              before tracing is switched on
 *   cpuN       the CPU's ring-buffer pages, written as they are read (cpuN.K: the K-th
 *              stream of that CPU)
 *   cmdlines   the task names, refreshed while recording
 *   options    options known only while recording (a session's sync samples so far),
 *              replaced whole as they grow: {u16 id, u32 size, size bytes}...; a restore
 *              adds them to the file as the normal stop would have
 * A normal stop writes OUTPUT from these and removes the directory; after a kill, hgtrace
 * restore does the same with what reached the disk.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hgtrace/output.h>
#include <hgtrace/record.h>

#include "../common/common-local.h"
#include "../private/tracedat.h"
#include "record-local.h"

#define STATE_MAGIC "hgtrace recording\n"

static char *path_in(const char *dir, const char *name)
{
	char *p;

	return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

/**
 * hgt__proc_start - when process @pid started (clock ticks since boot), 0 when it is gone.
 */
uint64_t hgt__proc_start(int pid)
{
	char path[64], buf[1024], *p, state;
	unsigned long long v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	p = strrchr(buf, ')'); /* the name may hold spaces */
	/* after "pid (comm)": state is field 3, starttime field 22; a zombie is gone */
	if (!p ||
	    sscanf(p + 2,
		   "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &state, &v) != 2 ||
	    state == 'Z' || state == 'X')
		return 0;
	return v;
}

/**
 * hgt__owner_alive - whether process @pid, started at @start (0: unknown), still runs.
 */
bool hgt__owner_alive(int pid, uint64_t start)
{
	if (pid <= 0)
		return false;
	if (start)
		return hgt__proc_start(pid) == start;
	return hgt__proc_start(pid) != 0;
}

/* The state file's pid, its start time and instance (any may be left 0 / empty). */
static int read_state(const char *dir, int *pid, uint64_t *start, char *inst, size_t n)
{
	char *p = path_in(dir, "state"), line[256];
	FILE *f = p ? fopen(p, "re") : NULL;
	bool magic = false;

	free(p);
	*pid = 0;
	*start = 0;
	inst[0] = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (!strcmp(line, STATE_MAGIC))
			magic = true;
		else if (!strncmp(line, "pid ", 4))
			*pid = atoi(line + 4);
		else if (!strncmp(line, "start ", 6))
			*start = strtoull(line + 6, NULL, 10);
		else if (!strncmp(line, "instance ", 9))
			snprintf(inst, n, "%.*s", (int)strcspn(line + 9, "\n"), line + 9);
	}
	fclose(f);
	return magic ? 0 : -EBADMSG;
}

static void remove_dir(const char *dir);
static bool was_written(const char *dir, const char *output);

/**
 * hgt__recdir_path - "@output.recording" (caller frees).
 */
char *hgt__recdir_path(const char *output)
{
	char *p;

	return asprintf(&p, "%s.recording", output) < 0 ? NULL : p;
}

/**
 * hgt__recdir_create - make @output's recording directory, after checking that @output
 * can be written; refused while one is there (running, or cut and not yet restored).
 */
int hgt__recdir_create(struct hgt__recdir *d, const char *output, const char *instance)
{
	struct hgt_newfile *probe;
	char *st = NULL, inst[256];
	uint64_t start;
	FILE *f;
	int pid, ret;

	memset(d, 0, sizeof(*d));
	probe = hgt_newfile_open(output, 0); /* a directory, a device, no permission */
	if (!probe)
		return -errno;
	hgt_newfile_abort(probe);
	d->dir = hgt__recdir_path(output);
	d->output = strdup(output);
	if (!d->dir || !d->output) {
		ret = -ENOMEM;
		goto fail;
	}
	if (mkdir(d->dir, 0755)) {
		ret = -errno;
		if (errno != EEXIST) {
			hgt__errorf(-ret, "%s: cannot create: %s", d->dir, strerror(-ret));
			goto fail;
		}
		if (was_written(d->dir, output)) {
			remove_dir(d->dir); /* the last recording to @output was complete */
			if (!mkdir(d->dir, 0755))
				goto made;
		}
		if (!read_state(d->dir, &pid, &start, inst, sizeof(inst)) &&
		    hgt__owner_alive(pid, start))
			ret = hgt__errorf(EBUSY, "%s: process %d is recording to %s now", d->dir,
					  pid, output);
		else
			ret = hgt__errorf(
				EEXIST,
				"%s: a cut recording is there: run 'hgtrace restore %s' first (or remove it)",
				d->dir, output);
		goto fail;
	}
made:
	d->made = true;
	st = path_in(d->dir, "state");
	f = st ? fopen(st, "wxe") : NULL;
	if (!f ||
	    fprintf(f, STATE_MAGIC "pid %d\nstart %llu\ninstance %s\n", (int)getpid(),
		    (unsigned long long)hgt__proc_start((int)getpid()),
		    instance ? instance : "") < 0 ||
	    fclose(f)) {
		ret = hgt__errorf(errno ? errno : EIO, "%s: cannot write: %s", st ? st : d->dir,
				  strerror(errno ? errno : EIO));
		f = NULL;
		goto fail;
	}
	free(st);
	return 0;
fail:
	free(st);
	hgt__recdir_done(d, d->made);
	return ret;
}

/**
 * hgt__recdir_file - create the file of CPU @cpu's @k-th stream of pages.
 */
int hgt__recdir_file(const struct hgt__recdir *d, int cpu, int k)
{
	char name[32], *p;
	int fd;

	if (k)
		snprintf(name, sizeof(name), "cpu%d.%d", cpu, k);
	else
		snprintf(name, sizeof(name), "cpu%d", cpu);
	p = path_in(d->dir, name);
	if (!p)
		return -ENOMEM;
	fd = open(p, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		fd = hgt__errorf(errno, "%s: cannot create: %s", p, strerror(errno));
	free(p);
	return fd;
}

/**
 * hgt__recdir_put - replace the directory's file @name by @len bytes, atomically.
 */
int hgt__recdir_put(const struct hgt__recdir *d, const char *name, const void *p, size_t len)
{
	char *path = path_in(d->dir, name);
	struct hgt_newfile *f = path ? hgt_newfile_open(path, 0) : NULL;
	int ret;

	free(path);
	if (!f)
		return -errno;
	ret = hgt__write_full(hgt_newfile_fd(f), p, len);
	if (ret) {
		hgt_newfile_abort(f);
		return ret;
	}
	return hgt_newfile_commit(f);
}

/**
 * hgt__recdir_put_options - replace the directory's saved options by @o[0..n-1].
 */
int hgt__recdir_put_options(const struct hgt__recdir *d, const struct hgt_option_blob *o, int n)
{
	size_t len = 0, at = 0;
	uint8_t *buf;
	int ret;

	for (int i = 0; i < n; i++)
		len += 6 + o[i].size;
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		memcpy(buf + at, &o[i].id, 2);
		memcpy(buf + at + 2, &o[i].size, 4);
		memcpy(buf + at + 6, o[i].data, o[i].size);
		at += 6 + o[i].size;
	}
	ret = hgt__recdir_put(d, "options", buf, len);
	free(buf);
	return ret;
}

/* A restore: the saved options, added as the recorder's stop would have. */
static int saved_options(void *ctx, struct hgt_output *out)
{
	char *p = path_in(ctx, "options");
	FILE *f = p ? fopen(p, "rb") : NULL;
	uint8_t *buf = NULL;
	long len;
	int ret = 0;

	free(p);
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(buf = malloc((size_t)len + 1)) || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		ret = hgt__errorf(EIO, "%s/options: cannot be read", (const char *)ctx);
		goto out;
	}
	for (long at = 0; !ret && at < len;) {
		uint16_t id;
		uint32_t size;

		if (len - at < 6)
			break;
		memcpy(&id, buf + at, 2);
		memcpy(&size, buf + at + 2, 4);
		if ((uint64_t)size > (uint64_t)(len - at - 6))
			break; /* cut while replaced: what is whole before it stands */
		ret = hgt_output_add_option(out, id, buf + at + 6, size);
		at += 6 + (long)size;
	}
out:
	free(buf);
	fclose(f);
	return ret;
}

/**
 * hgt__recdir_head - start head.dat: a version 7 file with no pages, whose metadata and
 * options the caller gives and which it closes (with hgt_output_close()) before tracing
 * starts. Compressed with @comp, the output's compression: its metadata (kallsyms, the
 * formats: megabytes) is then compressed before tracing starts, and copied as it is at
 * the end (hgt__convert_src.keep_packed), not compressed while the user waits for the file.
 */
struct hgt_output *hgt__recdir_head(const struct hgt__recdir *d, uint32_t page_size, int long_size,
				    enum hgt_compression comp)
{
	HGT_OPTS(hgt_output_opts, oo, .version = 7, .compression = comp, .page_size = page_size,
		 .long_size = long_size);
	char *p = path_in(d->dir, "head.dat");
	struct hgt_output *out = p ? hgt_output_create(p, &oo) : NULL;

	free(p);
	return out;
}

static bool our_file(const char *name, int *cpu, int *k)
{
	char tail[8];
	int n;

	*k = 0;
	if (sscanf(name, "cpu%d%n", cpu, &n) != 1 || *cpu < 0 || strncmp(name, "cpu", 3))
		return false;
	if (!name[n])
		return true;
	return sscanf(name + n, ".%d%1s", k, tail) == 1 && *k > 0;
}

/* A CPU's streams in the order they were opened: cpuN, cpuN.1, cpuN.2, ..., cpuN.10 (by
 * number: strcmp puts cpuN.10 before cpuN.2). */
static int cmp_file(const void *a, const void *b)
{
	const struct hgt__page_file *x = a, *y = b;
	int cx, cy, kx, ky;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	our_file(strrchr(x->name, '/') ? strrchr(x->name, '/') + 1 : x->name, &cx, &kx);
	our_file(strrchr(y->name, '/') ? strrchr(y->name, '/') + 1 : y->name, &cy, &ky);
	return kx < ky ? -1 : kx > ky;
}

/* Remove what this module put in @dir ("written" last), then @dir. */
static void remove_dir(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	char *w;
	int cpu, k;

	while (dp && (e = readdir(dp))) {
		if (our_file(e->d_name, &cpu, &k) || !strcmp(e->d_name, "state") ||
		    !strcmp(e->d_name, "head.dat") || !strcmp(e->d_name, "cmdlines") ||
		    !strcmp(e->d_name, "options")) {
			char *p = path_in(dir, e->d_name);

			if (p)
				unlink(p);
			free(p);
		}
	}
	if (dp)
		closedir(dp);
	w = path_in(dir, "written.new");
	if (w)
		unlink(w);
	free(w);
	w = path_in(dir, "written");
	if (w)
		unlink(w);
	free(w);
	rmdir(dir);
}

/*
 * Whether @output was written from @dir before the directory's removal was cut short:
 * "written" names the file that was about to become @output (note_written()), and @output
 * is that file. One that does not name a file (none did before) was made after @output
 * took its name.
 */
static bool was_written(const char *dir, const char *output)
{
	char *w = path_in(dir, "written"), line[96];
	FILE *f = w ? fopen(w, "re") : NULL;
	unsigned long long dev, ino;
	struct stat st;
	bool yes = f != NULL;

	if (f && fgets(line, sizeof(line), f) && sscanf(line, "dev %llu ino %llu", &dev, &ino) == 2)
		yes = !stat(output, &st) && st.st_dev == dev && st.st_ino == ino;
	if (f)
		fclose(f);
	free(w);
	return yes;
}

struct written_note {
	const char *dir;
	bool sync, noted;
};

/*
 * The output, whole, is about to take its name: "written" in the recording's directory
 * says which file it is (its device and inode), put in place by a rename, so that a cut
 * after the output's rename leaves a directory restore knows it only has to remove, and
 * one before it a recording restore writes out (was_written()). Best effort: without it,
 * an empty "written" is made after the rename, as before.
 */
static int note_written(void *ctx, int fd)
{
	struct written_note *n = ctx;
	char *w = path_in(n->dir, "written"), *tmp = path_in(n->dir, "written.new");
	struct stat st;
	FILE *f = tmp && w && !fstat(fd, &st) ? fopen(tmp, "we") : NULL;

	if (f) {
		bool ok = fprintf(f, "dev %llu ino %llu\n", (unsigned long long)st.st_dev,
				  (unsigned long long)st.st_ino) > 0 &&
			  !fflush(f) && (!n->sync || !fsync(fileno(f)));

		ok &= !fclose(f);
		n->noted = ok && !rename(tmp, w);
		if (!n->noted)
			unlink(tmp);
	}
	free(tmp);
	free(w);
	return 0;
}

/**
 * hgt__recdir_present - whether @d's directory is still there (with its head.dat): what a
 * message says is kept must exist (a user may have removed the output directory).
 */
bool hgt__recdir_present(const struct hgt__recdir *d)
{
	char *p = d->dir ? path_in(d->dir, "head.dat") : NULL;
	struct stat st;
	bool yes = p && !stat(p, &st) && S_ISREG(st.st_mode);

	free(p);
	return yes;
}

/**
 * hgt__recdir_done - free @d's strings; with @remove, also remove the directory.
 */
void hgt__recdir_done(struct hgt__recdir *d, bool remove)
{
	if (remove && d->dir && d->made)
		remove_dir(d->dir);
	free(d->dir);
	free(d->output);
	memset(d, 0, sizeof(*d));
}

/* The cmdlines file as a CMDLINES item (u64 size + text), or NULL when there is none. */
static uint8_t *cmdlines_item(const char *dir, size_t *len)
{
	char *p = path_in(dir, "cmdlines");
	int fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
	struct stat st;
	uint8_t *b = NULL;
	uint64_t n;

	free(p);
	if (fd < 0)
		return NULL;
	if (!fstat(fd, &st) && st.st_size < (1 << 26)) {
		n = (uint64_t)st.st_size;
		b = malloc(8 + n);
		if (b && pread(fd, b + 8, n, 0) == (ssize_t)n) {
			memcpy(b, &n, 8);
			*len = 8 + n;
		} else {
			free(b);
			b = NULL;
		}
	}
	close(fd);
	return b;
}

/* No head.dat and no page: the recorder was cut before it switched tracing on. */
static bool nothing_recorded(const char *dir)
{
	char *head = path_in(dir, "head.dat");
	bool none = head && access(head, F_OK);
	DIR *dp = none ? opendir(dir) : NULL;
	struct dirent *e;
	int cpu, k;

	free(head);
	while (dp && (e = readdir(dp))) {
		struct stat st;

		if (our_file(e->d_name, &cpu, &k) && !fstatat(dirfd(dp), e->d_name, &st, 0) &&
		    st.st_size)
			none = false;
	}
	if (dp)
		closedir(dp);
	return none;
}

/* The CPU files of @dir, sorted as cmp_file() sorts them, opened, into *@out (*@nf of
 * them); @nr_cpus: the CPUs head.dat declares. */
static int open_files(const char *dir, int nr_cpus, struct hgt__page_file **out, int *nf)
{
	struct hgt__page_file *files = NULL;
	DIR *dp = opendir(dir);
	struct dirent *e;
	int n = 0, ret = 0;

	if (!dp)
		return hgt__errorf(errno, "%s: %s", dir, strerror(errno));
	while ((e = readdir(dp))) {
		struct hgt__page_file *g;
		int cpu, k;

		if (!our_file(e->d_name, &cpu, &k))
			continue;
		if (cpu >= nr_cpus) {
			ret = hgt__errorf(EBADMSG, "%s/%s: CPU %d, but head.dat declares %d CPUs",
					  dir, e->d_name, cpu, nr_cpus);
			break;
		}
		g = realloc(files, sizeof(*files) * (size_t)(n + 1));
		if (!g) {
			ret = -ENOMEM;
			break;
		}
		files = g;
		memset(&files[n], 0, sizeof(files[n]));
		files[n].cpu = cpu;
		files[n].name = path_in(dir, e->d_name);
		files[n].fd = files[n].name ? open(files[n].name, O_RDONLY | O_CLOEXEC) : -1;
		n++;
		if (files[n - 1].fd < 0) {
			ret = hgt__errorf(errno, "%s/%s: %s", dir, e->d_name, strerror(errno));
			break;
		}
	}
	closedir(dp);
	if (n) /* an idle guest sent no page at all */
		qsort(files, (size_t)n, sizeof(*files), cmp_file);
	*out = files;
	*nf = n;
	return ret;
}

static void close_files(struct hgt__page_file *files, int nf)
{
	for (int i = 0; i < nf; i++) {
		if (files[i].fd >= 0)
			close(files[i].fd);
		free((char *)files[i].name);
	}
	free(files);
}

static int range_copied(void *ctx, const struct hgt__page_file *f, uint64_t upto)
{
	const struct hgt__recdir_range *r = ctx;

	return r->copied(r->ctx, f->name, upto);
}

/* @output from the recording in @dir: head.dat's metadata and options, @src's options
 * after them, cmdlines, and of each CPU file the pages @range gives (NULL: all). With
 * @log, a line per CPU file that was cut; with @loss_pages, the pages copied whose headers
 * flag missed events are added to it. */
static int write_from(const char *dir, const char *output, const struct hgt_convert_opts *co,
		      struct hgt__convert_src *src, const struct hgt__recdir_range *range,
		      FILE *log, uint64_t *loss_pages)
{
	/* the file is rewritten, never printed: kallsyms are copied, not parsed */
	HGT_OPTS(hgt_open_opts, oo,
		 .flags = HGT_OPEN_QUIET | HGT_OPEN_NO_PLUGINS | HGT_OPEN_NO_KALLSYMS);
	struct hgt__page_file *files = NULL;
	char *head = path_in(dir, "head.dat");
	struct hgt_input *in = NULL;
	uint8_t *cmd = NULL;
	int nf = 0, ret = 0, top;

	if (!head)
		return -ENOMEM;
	if (access(head, F_OK)) {
		ret = hgt__errorf(
			ENOENT,
			"%s: no head.dat: the recording was cut before its metadata was written, so no page was recorded",
			dir);
		goto out;
	}
	in = hgt_input_open(head, &oo);
	if (!in) {
		ret = -errno;
		goto out;
	}
	top = hgt_input_top_buffer(in);
	if (top < 0) {
		ret = hgt__errorf(EBADMSG, "%s: head.dat has no top buffer", dir);
		goto out;
	}
	ret = open_files(dir, hgt_input_nr_cpus(in), &files, &nf);
	for (int i = 0; !ret && range && i < nf; i++)
		ret = range->fn(range->ctx, files[i].name, files[i].cpu, &files[i].from,
				&files[i].to);
	if (ret)
		goto out;
	src->files = files;
	src->nr_files = nf;
	if (range && range->copied) {
		src->copied = range_copied;
		src->copied_ctx = (void *)range;
		/* a copy whose pages go as they are copied: every CPU's oldest first */
		src->together = true;
	}
	src->keep_packed = true;
	src->no_kallsyms = range && range->no_kallsyms;
	cmd = cmdlines_item(dir, &src->cmdlines_len);
	src->cmdlines = cmd;
	ret = hgt__convert(in, output, co, src);
	for (int i = 0; !ret && loss_pages && i < nf; i++)
		*loss_pages += files[i].loss_pages;
	for (int i = 0; !ret && log && i < nf; i++)
		if (files[i].dropped)
			fprintf(log,
				"hgtrace: %s: %llu bytes of pages kept, %llu bytes after them dropped (%s)\n",
				files[i].name, (unsigned long long)files[i].kept,
				(unsigned long long)files[i].dropped,
				files[i].damaged ? "a damaged page" : "a partial page");
out:
	close_files(files, nf);
	free(cmd);
	hgt_input_close(in);
	free(head);
	return ret;
}

/**
 * hgt__recdir_finish - write @output from the recording in @dir (head.dat, the CPU files,
 * cmdlines) and remove @dir. @more adds options after the head's. With @log, a line per
 * CPU file that was cut; with @loss_pages (may be NULL), the pages written whose headers
 * flag missed events, counted as they are copied. On failure @dir is kept and the error
 * names it.
 */
int hgt__recdir_finish(const char *dir, const char *output, const struct hgt_convert_opts *co,
		       int (*more)(void *ctx, struct hgt_output *out), void *ctx, bool sync,
		       FILE *log, uint64_t *loss_pages)
{
	struct written_note note = { .dir = dir, .sync = sync };
	/* without the recorder's own end (a restore), the options it had saved */
	struct hgt__convert_src src = { .more_options = more ? more : saved_options,
					.ctx = more ? ctx : (void *)dir,
					.sync = sync,
					.before_publish = note_written,
					.publish_ctx = &note };
	int ret = write_from(dir, output, co, &src, NULL, log, loss_pages);

	if (!ret) {
		/* from here a cut leaves a directory that restore only removes */
		char *w = note.noted ? NULL : path_in(dir, "written");
		int fd = w ? open(w, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;

		if (fd >= 0)
			close(fd);
		free(w);
		remove_dir(dir);
	}
	return ret;
}

struct snap_more {
	const char *dir;
	int (*more)(void *ctx, struct hgt_output *out);
	void *ctx;
};

static int snap_options(void *ctx, struct hgt_output *out)
{
	struct snap_more *m = ctx;
	int ret = saved_options((void *)m->dir, out);

	return !ret && m->more ? m->more(m->ctx, out) : ret;
}

/**
 * hgt__recdir_snapshot - write @output from a recording in progress in @dir, as a restore
 * would (its saved options, then @more's), with the pages @range gives of each CPU file;
 * @dir stays as it was.
 */
int hgt__recdir_snapshot(const char *dir, const char *output, const struct hgt_convert_opts *co,
			 const struct hgt__recdir_range *range,
			 int (*more)(void *ctx, struct hgt_output *out), void *ctx)
{
	struct snap_more m = { dir, more, ctx };
	struct hgt__convert_src src = { .more_options = snap_options, .ctx = &m };

	return write_from(dir, output, co, &src, range, NULL, NULL);
}

/**
 * hgt_record_restore - finish a recording that was cut.
 */
int hgt_record_restore(const char *output, const struct hgt_restore_opts *opts)
{
	struct hgt_restore_opts o = { .sz = sizeof(o), .compression = HGT_COMPRESS_ZSTD };
	char *dir, inst[256];
	uint64_t start;
	struct stat st;
	int pid, ret;

	if (!output || (opts && (opts->sz < sizeof(size_t) || opts->sz > sizeof(o))))
		return -EINVAL;
	if (opts)
		memcpy(&o, opts, opts->sz);
	dir = hgt__recdir_path(output);
	if (!dir)
		return -ENOMEM;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		ret = hgt__errorf(ENOENT, "%s: no cut recording beside it (%s)%s", output, dir,
				  access(output, F_OK) ? "" : "; the file is complete");
		goto out;
	}
	if (was_written(dir, output)) {
		/* cut while it was being removed: the output was complete */
		remove_dir(dir);
		if (o.log)
			fprintf(o.log, "hgtrace: %s was complete; removed what was left of %s\n",
				output, dir);
		ret = 0;
		goto out;
	}
	if (nothing_recorded(dir)) {
		remove_dir(dir);
		ret = hgt__errorf(
			ENOENT,
			"%s: the recording was cut before tracing started: nothing was recorded (%s removed)",
			output, dir);
		goto out;
	}
	ret = read_state(dir, &pid, &start, inst, sizeof(inst));
	if (ret) {
		ret = hgt__errorf(-ret, "%s/state: %s", dir,
				  ret == -EBADMSG ? "not an hgtrace recording" : strerror(-ret));
		goto out;
	}
	if (hgt__owner_alive(pid, start) && pid != getpid()) {
		ret = hgt__errorf(EBUSY, "%s: process %d is still recording to it: stop it first",
				  output, pid);
		goto out;
	}
	if ((!o.output || hgt_same_file(o.output, output) == 1) && !access(output, F_OK)) {
		ret = hgt__errorf(
			EEXIST,
			"%s: exists: the recording in %s was probably written out before the cut; restore it elsewhere (-o) or remove one",
			output, dir);
		goto out;
	}
	{
		HGT_OPTS(hgt_convert_opts, co, .version = 7, .compression = o.compression);

		ret = hgt__recdir_finish(dir, o.output ? o.output : output, &co, NULL, NULL, false,
					 o.log, NULL);
	}
	if (!ret && o.log)
		fprintf(o.log, "hgtrace: restored %s from %s (recorded by process %d)\n",
			o.output ? o.output : output, dir, pid);
	/* each CPU's pages end where the kill found them: the span they all cover marked */
	if (!ret && hgt__mark_whole_span(o.output ? o.output : output) && o.log)
		fprintf(o.log, "hgtrace: %s: the span every CPU covers is not marked: %s\n",
			o.output ? o.output : output, hgt_last_error());
	if (!ret && inst[0])
		hgt__instance_reap(inst, o.log);
out:
	free(dir);
	return ret;
}
