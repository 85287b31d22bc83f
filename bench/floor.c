// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * floor: loads bench/floor.bpf.c's trivial programs, attaches every one,
 * prints one "floor: ready" line naming the hooks, and holds them until
 * SIGTERM or SIGINT; then prints the invocations per hook and exits. make
 * bench's 'floor' arm (issue 17). Needs root.
 */
#include <errno.h>
#include <fcntl.h>
#include <mntent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return level == LIBBPF_DEBUG ? 0 : vfprintf(stderr, fmt, args);
}

/* The cgroup v2 mount, where depwatch attaches its connect hooks too. */
static int cgroup2_root(char *buf, size_t len)
{
	FILE *f = setmntent("/proc/mounts", "r");
	struct mntent *m;
	int err = -1;

	if (!f)
		return -1;
	while ((m = getmntent(f)))
		if (!strcmp(m->mnt_type, "cgroup2")) {
			snprintf(buf, len, "%s", m->mnt_dir);
			err = 0;
			break;
		}
	endmntent(f);
	return err;
}

static const char *const hook_names[] = { "tcp_sendmsg_locked", "sock_recv_length", "sk_data_ready",
					  "inet_sock_set_state", "tcp_retransmit_skb", "cgroup/connect4|6" };

static void print_counts(struct floor_bpf *skel)
{
	int ncpu = libbpf_num_possible_cpus();
	unsigned long long v[1024];

	if (ncpu <= 0 || ncpu > 1024)
		return;
	fprintf(stderr, "floor: invocations:");
	for (__u32 i = 0; i < sizeof(hook_names) / sizeof(hook_names[0]); i++) {
		unsigned long long sum = 0;

		if (bpf_map__lookup_elem(skel->maps.fl_counts, &i, sizeof(i), v, sizeof(v[0]) * ncpu, 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			sum += v[c];
		fprintf(stderr, " %s=%llu", hook_names[i], sum);
	}
	fprintf(stderr, "\n");
}

int main(void)
{
	struct bpf_link *links[2] = { NULL, NULL };
	struct floor_bpf *skel;
	sigset_t mask, old;
	char cg[4096];
	int cgfd = -1, rc = 1;

	libbpf_set_print(quiet_print);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	skel = floor_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "floor: cannot load bench/floor.bpf.c: %s\n", strerror(errno));
		return 1;
	}
	/* the tracepoints; the cgroup programs need a target, below */
	bpf_program__set_autoattach(skel->progs.fl_connect4, false);
	bpf_program__set_autoattach(skel->progs.fl_connect6, false);
	if (floor_bpf__attach(skel)) {
		fprintf(stderr, "floor: cannot attach the tracepoints: %s\n", strerror(errno));
		goto destroy;
	}
	if (cgroup2_root(cg, sizeof(cg))) {
		fprintf(stderr, "floor: no cgroup v2 mount\n");
		goto destroy;
	}
	cgfd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0) {
		fprintf(stderr, "floor: %s: %s\n", cg, strerror(errno));
		goto destroy;
	}
	links[0] = bpf_program__attach_cgroup(skel->progs.fl_connect4, cgfd);
	links[1] = bpf_program__attach_cgroup(skel->progs.fl_connect6, cgfd);
	if (!links[0] || !links[1]) {
		fprintf(stderr, "floor: cannot attach to cgroup %s: %s\n", cg, strerror(errno));
		goto detach;
	}
	printf("floor: ready (pid %d); attached: tcp_sendmsg_locked sock_recv_length sk_data_ready "
	       "inet_sock_set_state tcp_retransmit_skb cgroup/connect4 cgroup/connect6 (at %s)\n",
	       (int)getpid(), cg);
	fflush(stdout);
	/* blocked until sigsuspend: a signal between the test and the wait is not lost */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, &old);
	while (!stop)
		sigsuspend(&old);
	print_counts(skel);
	rc = 0;
detach:
	bpf_link__destroy(links[1]);
	bpf_link__destroy(links[0]);
	close(cgfd);
destroy:
	floor_bpf__destroy(skel);
	return rc;
}
