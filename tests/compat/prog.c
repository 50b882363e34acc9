/* A libtracecmd program (unchanged source): a host opened with tracecmd_open, two guests with
 * tracecmd_open_head; print each guest's trace id and the host's cpumap for it. */
#include <stdio.h>
#include <trace-cmd.h>

int main(int argc, char **argv)
{
	struct tracecmd_input *host, *guest[2];
	int i, j;

	if (argc != 4) {
		fprintf(stderr, "usage: %s host.dat guest1.dat guest2.dat\n", argv[0]);
		return 2;
	}
	host = tracecmd_open(argv[1], 0);
	if (!host)
		return 1;
	for (i = 0; i < 2; i++) {
		const char *name;
		const int *cpu_pid;
		int vcpus;
		unsigned long long id;

		guest[i] = tracecmd_open_head(argv[2 + i], 0);
		if (!guest[i])
			return 1;
		id = tracecmd_get_traceid(guest[i]);
		printf("guest %d: trace id 0x%llx\n", i, id);
		if (tracecmd_get_guest_cpumap(host, id, &name, &vcpus, &cpu_pid) < 0) {
			printf("  not in the host\n");
			continue;
		}
		printf("  name '%s', %d vCPUs:", name, vcpus);
		for (j = 0; j < vcpus; j++)
			printf(" %d=%d", j, cpu_pid[j]);
		printf("\n");
	}
	tracecmd_close(guest[0]);
	tracecmd_close(guest[1]);
	tracecmd_close(host);
	return 0;
}
