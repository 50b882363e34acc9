// SPDX-License-Identifier: LGPL-2.1-or-later
/* setup-guest: a guest's FIFO pairs and the QEMU and libvirt configuration naming them. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <hgtrace/transport.h>

#include "../common/common-local.h"
#include "listen-local.h"

/* virtio-trace's port names: -1 is the control port, N the data port of CPU N. */
static void port_name(char *buf, size_t n, int i)
{
	if (i < 0)
		snprintf(buf, n, "agent-ctl-path");
	else
		snprintf(buf, n, "trace-path-cpu%d", i);
}

/**
 * hgt_setup_guest - FIFO pairs for guest @name and the QEMU/libvirt configuration.
 */
int hgt_setup_guest(const char *dir, const char *name, int cpus, FILE *out)
{
	char path[4096], d[4096];
	int i, k;

	if (!hgt__valid_name(name) || cpus < 1 || cpus > MAX_CPUS)
		return hgt__errorf(EINVAL,
				   "setup-guest: name [A-Za-z0-9_.-] (not . or ..), 1 to %d CPUs",
				   MAX_CPUS);
	snprintf(d, sizeof(d), "%s/%s", dir, name);
	if (mkdir(d, 0700) && errno != EEXIST)
		return hgt__errorf(errno, "setup-guest: %s: %s", d, strerror(errno));
	for (i = -1; i < cpus; i++) {
		const char *sfx[2] = { ".in", ".out" };

		char port[64];

		port_name(port, sizeof(port), i);
		for (k = 0; k < 2; k++) {
			snprintf(path, sizeof(path), "%s/%s%s", d, port, sfx[k]);
			if (mkfifo(path, 0600) && errno != EEXIST)
				return hgt__errorf(errno, "setup-guest: %s: %s", path,
						   strerror(errno));
		}
	}
	/* debug-threads names the vCPU threads "CPU N/KVM" (or /TCG): how record -A finds
	 * them, and what the sync check needs */
	fprintf(out,
		"# QEMU arguments\n-name %s,debug-threads=on \\\n"
		"-device virtio-serial-pci,id=hgtrace0 \\\n",
		name);
	for (i = -1; i < cpus; i++) {
		char port[64];

		port_name(port, sizeof(port), i);
		fprintf(out,
			"-chardev pipe,id=hgt-%s,path=%s/%s \\\n"
			"-device virtserialport,bus=hgtrace0.0,nr=%d,chardev=hgt-%s,name=%s \\\n",
			port, d, port, i + 2, port, port);
	}
	fprintf(out, "\n<!-- libvirt: inside <devices> -->\n");
	for (i = -1; i < cpus; i++) {
		char port[64];

		port_name(port, sizeof(port), i);
		fprintf(out,
			"<channel type='pipe'>\n  <source path='%s/%s'/>\n  <target type='virtio' name='%s'/>\n</channel>\n",
			d, port, port);
	}
	return 0;
}
