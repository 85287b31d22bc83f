// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * What a tracer on the receive copy costs a socket it does not watch
 * (issue 23): one thread writes 1 byte into a unix stream socket pair and
 * reads it back, N times. Every read copies to user space through
 * skb_copy_datagram_iter(), where the sock backend's dw_h2_copy runs (and
 * sock_recv_length, where dw_recv runs, for every socket family); no TCP,
 * so no other depwatch program runs. The time per iteration with a daemon
 * attached against none is what each such read pays.
 *
 *   copyloop [--count N] [--cpu C]
 *
 * prints "iterations=N seconds=S ns_per_iter=X cpu_ns_per_iter=Y".
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	long count = 2000000, i;
	int sv[2], cpu = -1;
	double t0, t1, c0, c1;
	char b = 'x';

	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "--count") && a + 1 < argc)
			count = atol(argv[++a]);
		else if (!strcmp(argv[a], "--cpu") && a + 1 < argc)
			cpu = atoi(argv[++a]);
		else {
			fprintf(stderr, "usage: %s [--count N] [--cpu C]\n", argv[0]);
			return 2;
		}
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			perror("sched_setaffinity");
			return 1;
		}
	}
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
		perror("socketpair");
		return 1;
	}
	t0 = now_s();
	c0 = cpu_s();
	for (i = 0; i < count; i++) {
		if (write(sv[0], &b, 1) != 1 || read(sv[1], &b, 1) != 1) {
			perror("write/read");
			return 1;
		}
	}
	t1 = now_s();
	c1 = cpu_s();
	printf("iterations=%ld seconds=%.3f ns_per_iter=%.1f cpu_ns_per_iter=%.1f\n", count, t1 - t0,
	       (t1 - t0) * 1e9 / count, (c1 - c0) * 1e9 / count);
	return 0;
}
