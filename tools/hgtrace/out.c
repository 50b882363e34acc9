// SPDX-License-Identifier: GPL-2.0-or-later
/* -o of the commands that write text (gen, export): a file replaced only when complete. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <hgtrace/output.h>

#include "cmd.h"

/* Outputs of hundreds of MB (export) went out in 4 KB writes: 1 MB each instead. */
static char out_buf[1 << 20];

FILE *cmd_out_open(const char *cmd, const char *path, struct hgt_newfile **nf)
{
	FILE *f;
	int c;

	*nf = NULL;
	if (!path || !strcmp(path, "-")) {
		if (!isatty(STDOUT_FILENO)) /* before its first output */
			setvbuf(stdout, out_buf, _IOFBF, sizeof(out_buf));
		return stdout;
	}
	/* written beside the target, which it replaces only when complete */
	*nf = hgt_newfile_open(path, HGT_NEWFILE_IN_PLACE);
	c = *nf ? dup(hgt_newfile_fd(*nf)) : -1;
	if (c < 0 || !(f = fdopen(c, "w"))) {
		fprintf(stderr, "hgtrace: %s: %s\n", cmd, *nf ? strerror(errno) : hgt_last_error());
		if (c >= 0)
			close(c);
		hgt_newfile_abort(*nf);
		*nf = NULL;
		return NULL;
	}
	setvbuf(f, out_buf, _IOFBF, sizeof(out_buf));
	return f;
}

int cmd_out_close(const char *cmd, const char *path, FILE *f, struct hgt_newfile *nf, bool ok)
{
	if (f == stdout)
		return ok && !fflush(stdout) ? 0 : -1;
	if (fclose(f) && ok) {
		fprintf(stderr, "hgtrace: %s: %s: %s\n", cmd, path, strerror(errno));
		ok = false;
	}
	if (!ok) {
		hgt_newfile_abort(nf);
		return -1;
	}
	if (hgt_newfile_commit(nf) < 0) {
		fprintf(stderr, "hgtrace: %s: %s\n", cmd, hgt_last_error());
		return -1;
	}
	return 0;
}
