// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Which process runs a guest: hgt_vmm_find() on a proc tree the test builds (cmdline, cwd,
 * task/TID/comm), so each case says exactly what the host would see. The expected pid is
 * the one the case was built around.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hgtrace/session.h>
#include <hgtrace/tracedat.h>

#include "test-helpers.h"

static char root[PATH_MAX];

static void put(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
}

/* A process @pid with the NUL-separated arguments @args (@n bytes), working directory @cwd
 * (relative to the root), and @vcpus threads named "CPU i/TCG". */
static void vmm(int pid, const char *args, size_t n, const char *cwd, int vcpus)
{
	char p[PATH_MAX + 64], t[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/proc/%d/task/%d", root, pid, pid);
	assert_int_equal(system((snprintf(t, sizeof(t), "mkdir -p '%s'", p), t)), 0);
	snprintf(p, sizeof(p), "%s/proc/%d/task/%d/comm", root, pid, pid);
	put(p, "qemu-system-x86\n", 16);
	for (int i = 0; i < vcpus; i++) {
		char comm[32];

		snprintf(p, sizeof(p), "%s/proc/%d/task/%d", root, pid, pid + 1 + i);
		assert_int_equal(mkdir(p, 0755), 0);
		snprintf(p, sizeof(p), "%s/proc/%d/task/%d/comm", root, pid, pid + 1 + i);
		put(p, comm, (size_t)snprintf(comm, sizeof(comm), "CPU %d/TCG\n", i));
	}
	snprintf(p, sizeof(p), "%s/proc/%d/cmdline", root, pid);
	put(p, args, n);
	snprintf(p, sizeof(p), "%s/proc/%d/cwd", root, pid);
	snprintf(t, sizeof(t), "%s/%s", root, cwd);
	assert_int_equal(symlink(t, p), 0);
}

#define VMM(pid, cwd, vcpus, lit) vmm(pid, lit, sizeof(lit), cwd, vcpus)

static int setup(void **state)
{
	char cmd[PATH_MAX + 64];

	(void)state;
	snprintf(root, sizeof(root), "/tmp/hgt-vmm-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/a/g %s/b/g %s/proc %s/c", root, root, root, root);
	return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	return system(cmd) == 0 ? 0 : -1;
}

static int reset(void **state)
{
	char cmd[PATH_MAX + 32];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/proc' && mkdir '%s/proc'", root, root);
	return system(cmd) == 0 ? 0 : -1;
}

static int find(const char *dir, const char *name)
{
	char proc[PATH_MAX + 8], d[PATH_MAX + 8];

	snprintf(proc, sizeof(proc), "%s/proc", root);
	if (dir && dir[0] != '=')
		snprintf(d, sizeof(d), "%s/%s", root, dir);
	else if (dir)
		snprintf(d, sizeof(d), "%s", dir);
	return hgt_vmm_find(proc, dir ? d : NULL, name);
}

/* Two QEMUs named g, one on a/g and one on b/g (the case, b/g first in the tree):
 * each FIFO directory finds its own, whatever the order. */
static void test_two_named_g_by_fifo(void **state)
{
	(void)state;
	/* absolute paths: the root is made at run time */
	{
		char args[PATH_MAX * 2];
		size_t n;

		n = (size_t)snprintf(
			    args, sizeof(args),
			    "qemu-system-x86_64%c-name%cg,debug-threads=on%c-chardev%cpipe,id=c,path=%s/b/g/trace-path-cpu0",
			    0, 0, 0, 0, root) +
		    1;
		vmm(100, args, n, "c", 2);
		n = (size_t)snprintf(
			    args, sizeof(args),
			    "qemu-system-x86_64%c-name%cg,debug-threads=on%c-chardev%cpipe,id=c,path=%s/a/g/agent-ctl-path",
			    0, 0, 0, 0, root) +
		    1;
		vmm(200, args, n, "c", 2);
	}
	assert_int_equal(find("a/g", "g"), 200);
	assert_int_equal(find("b/g", "g"), 100);
	/* by name alone, two fit: none is taken, both are named */
	assert_int_equal(find(NULL, "g"), -ENOTUNIQ);
	assert_non_null(strstr(hgt_last_error(), "pids 100, 200"));
}

/* The chardev path relative to the VMM's working directory (qemu started in the root with
 * path=a/g/...): its own directory still matches; another's never does. */
static void test_relative_path(void **state)
{
	(void)state;
	VMM(300, ".", 1, "qemu\0-name\0g\0-chardev\0pipe,id=x,path=a/g/agent-ctl-path");
	VMM(400, "b", 1, "qemu\0-name\0g\0-chardev\0pipe,id=x,path=g/agent-ctl-path");
	assert_int_equal(find("a/g", "g"), 300);
	assert_int_equal(find("b/g", "g"), 400);
}

/* A process that names the guest but another FIFO directory is never taken, even when it
 * is the only one with the name; one with no transport at all is, by its name. */
static void test_other_transport_never(void **state)
{
	(void)state;
	VMM(500, ".", 2,
	    "qemu\0-name\0guest=g,debug-threads=on\0-chardev\0pipe,id=x,path=b/g/trace-path-cpu1");
	assert_int_equal(find("a/g", "g"), -ENOENT);
	VMM(600, ".", 2, "qemu\0-name\0g");
	assert_int_equal(find("a/g", "g"), 600);
}

/* vsock: the guest-cid option; another cid is another guest. */
static void test_vsock_cid(void **state)
{
	(void)state;
	VMM(700, ".", 1, "qemu\0-name\0g\0-device\0vhost-vsock-pci,guest-cid=4");
	VMM(800, ".", 1, "qemu\0-name\0g\0-device\0vhost-vsock-pci,guest-cid=3");
	assert_int_equal(find("=guest-cid=3", "g"), 800);
	assert_int_equal(find("=guest-cid=4", "g"), 700);
	assert_int_equal(find("=guest-cid=5", "g"), -ENOENT);
}

/* A wrapper (timeout, sudo) carries the same command line without vCPU threads: the VMM
 * with threads wins, and is no ambiguity. */
static void test_wrapper(void **state)
{
	(void)state;
	VMM(900, ".", 0,
	    "timeout\060\0qemu\0-name\0g\0-chardev\0pipe,id=x,path=a/g/agent-ctl-path");
	VMM(950, ".", 2, "qemu\0-name\0g\0-chardev\0pipe,id=x,path=a/g/agent-ctl-path");
	assert_int_equal(find("a/g", "g"), 950);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_two_named_g_by_fifo, reset),
		cmocka_unit_test_setup(test_relative_path, reset),
		cmocka_unit_test_setup(test_other_transport_never, reset),
		cmocka_unit_test_setup(test_vsock_cid, reset),
		cmocka_unit_test_setup(test_wrapper, reset),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
