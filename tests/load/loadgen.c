// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Load generator for the integration suite (test_load.py): CONNS keep-alive
 * loopback connections, each making request/response calls (1 byte each way)
 * back to back for SECONDS, server side in the same process. WORKERS
 * processes (not threads: each has its own descriptor table, so 20 000
 * connections fit under a hard RLIMIT_NOFILE of 20 000 when the caller may
 * not raise it), each with its own listener, connections and epoll: one
 * destination per worker. Python cannot drive 20 000 connections at full
 * speed; this can.
 *
 *   loadgen -c CONNS -t WORKERS -d SECONDS
 *
 * Prints "port P" per listener, "ready" once every connection is up (the
 * clock starts then), and at the end "calls P N" per listener: the calls
 * completed on its connections (a call counts once its answer is read; once
 * the time is up no new call starts and every outstanding one is awaited),
 * then "total N calls in S s: R calls/s".
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

struct worker {
	int listen_fd, ep, nconns, port;
	int ctl;		/* from the parent: 'g' go, 's' stop */
	int report;		/* to the parent: 'r' ready, then the result line */
	int *clients;
	unsigned long long calls;
	long outstanding;
	int stop;
};

static void die(const char *what)
{
	fprintf(stderr, "loadgen: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* epoll data: the fd, with this bit for the client side of a connection */
#define CLIENT (1ULL << 32)

static void watch(struct worker *w, int fd, unsigned long long tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (unsigned)fd | tag };
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev))
		die("epoll_ctl");
}

/* Accepts what is waiting (the listener is non-blocking); returns how many. */
static int accept_some(struct worker *w)
{
	int n = 0, s;

	while ((s = accept4(w->listen_fd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
		watch(w, s, 0);
		n++;
	}
	if (errno != EAGAIN)
		die("accept");
	return n;
}

static void request(struct worker *w, int fd)
{
	if (write(fd, "Q", 1) != 1)
		die("write request");
	w->outstanding++;
}

static void on_ready(struct worker *w, unsigned long long tag)
{
	int fd = (int)(tag & 0xffffffff);
	char buf[64];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n <= 0)
		die(n ? "read" : "connection closed");
	if (!(tag & CLIENT)) {		/* server side: one answer byte per request byte */
		if (write(fd, buf, n) != n)
			die("write answer");
		return;
	}
	w->calls += n;
	w->outstanding -= n;
	if (!w->stop)
		request(w, fd);
}

static void run(struct worker *w)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				   .sin_port = htons(w->port) };
	struct epoll_event evs[512];
	int accepted = 0;
	char go;

	for (int i = 0; i < w->nconns; i++) {
		w->clients[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (w->clients[i] < 0 || connect(w->clients[i], (struct sockaddr *)&sin, sizeof(sin)))
			die("connect");
		watch(w, w->clients[i], CLIENT);
		accepted += accept_some(w);	/* as we go: the backlog is short next to 20 000 */
	}
	while (accepted < w->nconns) {
		usleep(1000);
		accepted += accept_some(w);
	}
	if (write(w->report, "r", 1) != 1 || read(w->ctl, &go, 1) != 1)
		die("parent pipe");
	for (int i = 0; i < w->nconns; i++)
		request(w, w->clients[i]);
	while (!w->stop || w->outstanding > 0) {
		int n = epoll_wait(w->ep, evs, 512, 100);

		if (n < 0 && errno != EINTR)
			die("epoll_wait");
		for (int i = 0; i < n; i++)
			on_ready(w, evs[i].data.u64);
		if (!w->stop && poll(&(struct pollfd){ .fd = w->ctl, .events = POLLIN }, 1, 0) == 1)
			w->stop = 1;
	}
	dprintf(w->report, "calls %d %llu\n", w->port, w->calls);	/* one write: no interleaving */
}

int main(int argc, char **argv)
{
	int conns = 1000, nthreads = 4, seconds = 10, opt, report[2];
	unsigned long long total = 0;
	struct worker *ws;
	struct rlimit rl;
	FILE *results;
	char line[128];
	double t0;

	while ((opt = getopt(argc, argv, "c:t:d:")) != -1) {
		switch (opt) {
		case 'c': conns = atoi(optarg); break;
		case 't': nthreads = atoi(optarg); break;
		case 'd': seconds = atoi(optarg); break;
		default: conns = 0; break;
		}
	}
	if (conns < 1 || nthreads < 1 || nthreads > 64 || seconds < 1 || conns < nthreads) {
		fprintf(stderr, "usage: loadgen -c CONNS -t THREADS -d SECONDS\n");
		return 2;
	}
	/* both ends of a worker's connections, plus listener, epoll, pipes */
	rl.rlim_cur = rl.rlim_max = 2 * (rlim_t)(conns / nthreads + 1) + 64;
	if (setrlimit(RLIMIT_NOFILE, &rl) && (getrlimit(RLIMIT_NOFILE, &rl) || (rl.rlim_cur = rl.rlim_max,
									      setrlimit(RLIMIT_NOFILE, &rl))))
		die("setrlimit(RLIMIT_NOFILE)");
	if (2 * (rlim_t)(conns / nthreads + 1) + 64 > rl.rlim_cur) {
		fprintf(stderr, "loadgen: RLIMIT_NOFILE %llu is too low for %d connections per worker: use more workers (-t)\n",
			(unsigned long long)rl.rlim_cur, conns / nthreads + 1);
		return 1;
	}
	ws = calloc(nthreads, sizeof(*ws));
	if (!ws || pipe(report))
		die("setup");
	for (int i = 0; i < nthreads; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(sin);
		struct worker *w = &ws[i];

		w->nconns = conns / nthreads + (i < conns % nthreads);
		w->clients = calloc(w->nconns, sizeof(int));
		w->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		w->ep = epoll_create1(0);
		if (!w->clients || w->listen_fd < 0 || w->ep < 0 ||
		    bind(w->listen_fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(w->listen_fd, 4096) ||
		    getsockname(w->listen_fd, (struct sockaddr *)&sin, &len))
			die("listener");
		w->port = ntohs(sin.sin_port);
		printf("port %d\n", w->port);
	}
	fflush(stdout);
	for (int i = 0; i < nthreads; i++) {
		int ctl[2];
		pid_t pid;

		if (pipe(ctl) || (pid = fork()) < 0)
			die("fork");
		ws[i].ctl = ctl[0];
		ws[i].report = report[1];
		if (!pid) {
			close(ctl[1]);
			run(&ws[i]);
			_exit(0);
		}
		close(ctl[0]);
		ws[i].ctl = ctl[1];	/* the parent's end */
		close(ws[i].listen_fd);
		close(ws[i].ep);
	}
	close(report[1]);
	for (int i = 0; i < nthreads; i++)
		if (read(report[0], line, 1) != 1)
			die("a worker died before it was ready");
	printf("ready\n");
	fflush(stdout);
	t0 = now();
	for (int i = 0; i < nthreads; i++)
		if (write(ws[i].ctl, "g", 1) != 1)
			die("go");
	sleep(seconds);
	for (int i = 0; i < nthreads; i++)
		if (write(ws[i].ctl, "s", 1) != 1)
			die("stop");
	results = fdopen(report[0], "r");
	for (int i = 0; i < nthreads; i++) {
		unsigned long long n;
		int port;

		if (!results || !fgets(line, sizeof(line), results) || sscanf(line, "calls %d %llu", &port, &n) != 2)
			die("a worker died before its report");
		fputs(line, stdout);
		total += n;
	}
	for (int i = 0; i < nthreads; i++)
		wait(NULL);
	printf("total %llu calls in %.1f s: %.0f calls/s\n", total, now() - t0, total / (now() - t0));
	return 0;
}
