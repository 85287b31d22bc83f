// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pingpong: a loopback TCP request/response benchmark.
 *
 * One process, two halves. The server listens on 127.0.0.1 (port chosen by
 * the kernel) and runs one thread per connection that answers every request
 * of SIZE bytes with a response of SIZE bytes. N client threads each own one
 * persistent connection and loop: send the request, read the full response,
 * optionally think. Each call's latency is taken on the client side, from
 * before the send to after the last response byte.
 *
 * With --pin, client thread i and the server thread of its connection both
 * run on the i-th CPU the process may use (modulo their count): each call
 * then stays on one CPU, and no call waits for a wake-up on another CPU.
 *
 * With --churn, every call is a connection of its own (issue 13's connection
 * churn): the client connects, sends SIZE bytes, reads the SIZE-byte answer,
 * waits for the server's end of file and closes. Each client thread has its
 * own listener and server thread (pinned like the pair above), which accepts,
 * answers and closes first: TIME_WAIT lands on the server's side, whose
 * socket the next SYN from a reused client port recycles (RFC 6191, with
 * timestamps), so the run does not use up the client's ephemeral ports (at
 * tens of thousands of connections a second the host's TIME_WAIT table,
 * net.ipv4.tcp_max_tw_buckets, fills within seconds; the kernel then closes
 * further ones without TIME_WAIT). A call's latency is connect() to close(),
 * and calls are connections.
 *
 * With --split, each client thread connects to a listener of its own (one
 * per connection, on its own port), so no two threads call the same
 * destination: a tracer's per-destination rows are then not shared between
 * the threads' CPUs (issue 17's shared-line experiment).
 *
 * Calls that start during the warm-up are made but not counted. Prints one
 * line:
 *   calls=C seconds=S calls_per_s=R p50_us=P p99_us=Q
 * with exact percentiles from the sorted samples (nearest rank). --cpu
 * appends cpu_us_per_call=U: the process's CPU time (user + system, all
 * threads, both ends) over the measured period divided by the calls. Kernel
 * work done on behalf of the calls, BPF programs included, is in it, and it
 * moves much less than calls_per_s when other processes compete for the CPUs.
 *
 * Every wait is bounded: the run stops at its deadline, and each socket has
 * send and receive timeouts, so a stuck peer ends the run with an error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256
#define MAX_SIZE (64u << 20)
#define MAX_SECONDS 3600.0
#define MAX_THINK_US 10000000L
#define MAX_WARMUP_MS 60000L
#define CALLS_MODE_SECONDS 60.0	/* time bound for --calls when --seconds is not given */
#define IO_TIMEOUT_S 10		/* a peer silent this long is stuck */
#define NSEC_PER_SEC 1000000000ull

struct opts {
	int threads;
	size_t size;
	double seconds;
	int seconds_set;
	long calls;		/* 0: run for --seconds */
	long think_us;
	long warmup_ms;
	int pin;
	int cpu;
	int churn;
	int split;		/* each connection to a listener (a destination) of its own */
};

struct client {
	pthread_t tid;
	int cpu;		/* with --pin: the CPU of this thread and its server thread */
	int fd;
	struct sockaddr_in addr;	/* --churn: the listener of this thread's server */
	char *buf;
	long quota;		/* measured calls to make; 0: until the deadline */
	uint64_t *lat;		/* nanoseconds, one per measured call */
	size_t n;
	size_t cap;
	uint64_t last_done;	/* when the last measured call completed */
	int err;		/* errno of the failure that stopped this client */
};

struct server_conn {
	pthread_t tid;
	int cpu;
	int fd;			/* --churn: the listener */
	char *buf;
	int err;
};

static struct opts opt = {
	.threads = 1,
	.size = 64,
	.seconds = 3.0,
	.warmup_ms = 300,
};

/* Set before any client thread starts, read-only afterwards. */
static uint64_t t_measure;	/* calls starting at or after this are counted */
static uint64_t t_end;		/* no call starts at or after this */

static int stopping;		/* --churn: the clients are done; servers leave accept() */

static uint64_t cpu_ns;		/* the process's CPU time from t_measure until the clients ended */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_now_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * NSEC_PER_SEC +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { .tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Returns 0 when all of buf went out, -1 with errno set otherwise. */
static int write_full(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Returns 0 when buf is full, 1 on end of file before the first byte, -1 with
 * errno set otherwise (end of file mid-message is EPIPE).
 */
static int read_full(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0 && got == 0)
			return 1;
		if (n == 0) {
			errno = EPIPE;
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

static int set_timeouts(int fd, long extra_us)
{
	long us = IO_TIMEOUT_S * 1000000L + extra_us;
	struct timeval tv = { .tv_sec = us / 1000000, .tv_usec = us % 1000000 };
	int one = 1;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		return -1;
	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The listener on 127.0.0.1, on a port the kernel picks; returns the fd or -1. */
static int listen_loopback(struct sockaddr_in *addr)
{
	socklen_t len = sizeof(*addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) ||
	    listen(fd, MAX_THREADS) ||
	    getsockname(fd, (struct sockaddr *)addr, &len)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int connect_loopback(const struct sockaddr_in *addr)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (set_timeouts(fd, 0) || connect(fd, (const struct sockaddr *)addr, sizeof(*addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	errno = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	return errno ? -1 : 0;
}

/* The n-th CPU (modulo their count) this process may run on; -1 if unknown. */
static int nth_cpu(int n)
{
	cpu_set_t set;
	int count, seen = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	count = CPU_COUNT(&set);
	if (!count)
		return -1;
	n %= count;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		if (seen++ == n)
			return cpu;
	}
	return -1;
}

/* The server side of one connection: echo SIZE bytes back per request until end of file. */
static void *server_main(void *arg)
{
	struct server_conn *s = arg;
	int r;

	if (pin_self(s->cpu)) {
		s->err = errno;
		return NULL;
	}
	for (;;) {
		r = read_full(s->fd, s->buf, opt.size);
		if (r == 1)
			return NULL;
		if (r < 0 || write_full(s->fd, s->buf, opt.size)) {
			s->err = errno;
			return NULL;
		}
	}
}

/*
 * --churn: accept a connection, answer its one request, close first. A
 * connection closed before its request is skipped; leaves when finish_all()
 * shuts the listener down (accept then fails with EINVAL).
 */
static void *churn_server_main(void *arg)
{
	struct server_conn *s = arg;
	int fd, r;

	if (pin_self(s->cpu)) {
		s->err = errno;
		return NULL;
	}
	for (;;) {
		fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0 && errno == EINTR)
			continue;
		if (fd < 0) {
			if (!__atomic_load_n(&stopping, __ATOMIC_ACQUIRE))
				s->err = errno;
			return NULL;
		}
		r = set_timeouts(fd, 0);
		if (!r)
			r = read_full(fd, s->buf, opt.size);
		if (!r)
			r = write_full(fd, s->buf, opt.size);
		if (r < 0) {
			s->err = errno;
			close(fd);
			return NULL;
		}
		close(fd);
	}
}

static int record(struct client *c, uint64_t lat, uint64_t done)
{
	uint64_t *p;

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 65536;
		p = realloc(c->lat, c->cap * sizeof(*p));
		if (!p) {
			c->err = ENOMEM;
			return -1;
		}
		c->lat = p;
	}
	c->lat[c->n++] = lat;
	c->last_done = done;
	return 0;
}

/* --churn: one call on a connection of its own, end of file awaited; 0 or -1 with errno set. */
static int churn_call(struct client *c)
{
	char eof;
	int fd, r;

	fd = connect_loopback(&c->addr);
	if (fd < 0)
		return -1;
	r = write_full(fd, c->buf, opt.size);
	if (!r)
		r = read_full(fd, c->buf, opt.size);
	if (r == 1) {
		errno = EPIPE;
		r = -1;
	}
	if (!r) {
		ssize_t n;

		do
			n = recv(fd, &eof, 1, 0);
		while (n < 0 && errno == EINTR);
		if (n > 0)
			errno = EPROTO;	/* more than the answer */
		if (n)
			r = -1;
	}
	if (close(fd) && !r)
		r = -1;
	return r;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	uint64_t t0, t1;
	int r;

	if (pin_self(c->cpu)) {
		c->err = errno;
		return NULL;
	}
	for (;;) {
		t0 = now_ns();
		if (t0 >= t_end || (c->quota && (long)c->n >= c->quota))
			return NULL;
		if (opt.churn) {
			if (churn_call(c))
				break;
		} else {
			if (write_full(c->fd, c->buf, opt.size))
				break;
			r = read_full(c->fd, c->buf, opt.size);
			if (r == 1)
				errno = EPIPE;
			if (r)
				break;
		}
		t1 = now_ns();
		if (t0 >= t_measure && record(c, t1 - t0, t1))
			return NULL;
		if (opt.think_us)
			sleep_us(opt.think_us);
	}
	c->err = errno;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted samples, in microseconds. */
static double pct_us(const uint64_t *v, size_t n, double p)
{
	size_t rank = (size_t)(p * (double)n + 0.999999);

	if (!n)
		return 0;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return (double)v[rank - 1] / 1000.0;
}

static int report(struct client *cl, int n)
{
	uint64_t *all, last = 0;
	size_t total = 0, off = 0;
	double secs;

	for (int i = 0; i < n; i++)
		total += cl[i].n;
	all = malloc((total ? total : 1) * sizeof(*all));
	if (!all)
		return -1;
	for (int i = 0; i < n; i++) {
		memcpy(all + off, cl[i].lat, cl[i].n * sizeof(*all));
		off += cl[i].n;
		if (cl[i].last_done > last)
			last = cl[i].last_done;
	}
	qsort(all, total, sizeof(*all), cmp_u64);
	secs = (double)(t_end - t_measure) / 1e9;
	if (opt.calls)
		secs = last > t_measure ? (double)(last - t_measure) / 1e9 : 0;
	printf("calls=%zu seconds=%.3f calls_per_s=%.1f p50_us=%.2f p99_us=%.2f", total, secs,
	       secs > 0 ? (double)total / secs : 0.0, pct_us(all, total, 0.50),
	       pct_us(all, total, 0.99));
	if (opt.cpu)
		printf(" cpu_us_per_call=%.3f",
		       total ? (double)cpu_ns / 1000.0 / (double)total : 0.0);
	printf("\n");
	free(all);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pingpong [--threads N] [--size BYTES] [--seconds T | --calls N]\n"
		"                [--think-us U] [--warmup-ms MS] [--pin] [--cpu] [--churn] [--split]\n"
		"  --threads N     client threads, one connection each (1..%d, default 1)\n"
		"  --size BYTES    request and response size (1..%u, default 64)\n"
		"  --seconds T     measure for T seconds after the warm-up (default 3)\n"
		"  --calls N       measure N calls in total instead; --seconds then bounds\n"
		"                  the run (default %.0f)\n"
		"  --think-us U    sleep U microseconds after each call (default 0)\n"
		"  --warmup-ms MS  calls in the first MS milliseconds are not counted (default 300)\n"
		"  --pin           run client thread i and its server thread on the i-th CPU\n"
		"  --cpu           also print cpu_us_per_call (process CPU time per measured call)\n"
		"  --churn         a new connection per call: connect, one request, answer, the\n"
		"                  server closes first; each client thread has its own listener\n"
		"  --split         each connection to a listener of its own (a destination per\n"
		"                  thread); without it all connect to one listener\n"
		"prints: calls=C seconds=S calls_per_s=R p50_us=P p99_us=Q [cpu_us_per_call=U]\n",
		MAX_THREADS, MAX_SIZE, CALLS_MODE_SECONDS);
}

/* Parses a number in [lo, hi]; returns -1 when s is not one. */
static int parse_num(const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || *out < lo || *out > hi)
		return -1;
	return 0;
}

static int parse_opt(int c, const char *arg)
{
	double v;

	switch (c) {
	case 'p':
		opt.pin = 1;
		return 0;
	case 'u':
		opt.cpu = 1;
		return 0;
	case 'C':
		opt.churn = 1;
		return 0;
	case 'S':
		opt.split = 1;
		return 0;
	case 'n':
		if (parse_num(arg, 1, MAX_THREADS, &v))
			return -1;
		opt.threads = (int)v;
		return 0;
	case 's':
		if (parse_num(arg, 1, MAX_SIZE, &v))
			return -1;
		opt.size = (size_t)v;
		return 0;
	case 't':
		opt.seconds_set = 1;
		return parse_num(arg, 0.001, MAX_SECONDS, &opt.seconds);
	case 'c':
		if (parse_num(arg, 1, 1e12, &v))
			return -1;
		opt.calls = (long)v;
		return 0;
	case 'k':
		if (parse_num(arg, 0, MAX_THINK_US, &v))
			return -1;
		opt.think_us = (long)v;
		return 0;
	case 'w':
		if (parse_num(arg, 0, MAX_WARMUP_MS, &v))
			return -1;
		opt.warmup_ms = (long)v;
		return 0;
	}
	return -1;
}

static int parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 't' },
		{ "calls", required_argument, NULL, 'c' },
		{ "think-us", required_argument, NULL, 'k' },
		{ "warmup-ms", required_argument, NULL, 'w' },
		{ "pin", no_argument, NULL, 'p' },
		{ "cpu", no_argument, NULL, 'u' },
		{ "churn", no_argument, NULL, 'C' },
		{ "split", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			exit(0);
		}
		if (c == '?' || parse_opt(c, optarg)) {
			if (c != '?')
				fprintf(stderr, "pingpong: bad value for an option: %s\n", optarg);
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return -1;
	}
	if (opt.calls && !opt.seconds_set)
		opt.seconds = CALLS_MODE_SECONDS;
	return 0;
}

/* --split: connection i to a listener of its own, closed once the connection is accepted. */
static int open_split(struct client *c, struct server_conn *s)
{
	struct sockaddr_in addr;
	int lfd = listen_loopback(&addr);
	int err = -1;

	if (lfd < 0)
		return -1;
	if (set_timeouts(lfd, 0))
		goto close_lfd;
	c->fd = connect_loopback(&addr);
	if (c->fd < 0)
		goto close_lfd;
	s->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (s->fd < 0)
		goto close_lfd;
	err = set_timeouts(s->fd, opt.think_us);
close_lfd:
	close(lfd);
	return err;
}

/* Connection i: the client end in c, the server end in s. */
static int open_pair(int lfd, const struct sockaddr_in *addr, int i, struct client *c,
		     struct server_conn *s)
{
	c->cpu = s->cpu = opt.pin ? nth_cpu(i) : -1;
	if (opt.pin && c->cpu < 0)
		return -1;
	c->buf = calloc(1, opt.size);
	s->buf = calloc(1, opt.size);
	if (!c->buf || !s->buf)
		return -1;
	memset(c->buf, 'q', opt.size);
	if (opt.churn) {
		/* its own listener, kept open by its server thread */
		s->fd = listen_loopback(&c->addr);
		return s->fd < 0 || set_timeouts(s->fd, 0) ? -1 : 0;
	}
	if (opt.split)
		return open_split(c, s);
	c->fd = connect_loopback(addr);
	if (c->fd < 0)
		return -1;
	s->fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (s->fd < 0)
		return -1;
	return set_timeouts(s->fd, opt.think_us);
}

static int open_all(struct client *cl, struct server_conn *sv)
{
	struct sockaddr_in addr;
	int lfd = listen_loopback(&addr);
	int err = 0;

	if (lfd < 0)
		return -1;
	/* accept() is bounded too: the connection is already queued, or this fails */
	if (set_timeouts(lfd, 0))
		err = -1;
	for (int i = 0; i < opt.threads && !err; i++) {
		cl[i].quota = opt.calls / opt.threads + (i < opt.calls % opt.threads);
		err = open_pair(lfd, &addr, i, &cl[i], &sv[i]);
	}
	close(lfd);
	return err;
}

static int start_all(struct client *cl, struct server_conn *sv)
{
	int err;

	for (int i = 0; i < opt.threads; i++) {
		err = pthread_create(&sv[i].tid, NULL, opt.churn ? churn_server_main : server_main,
				     &sv[i]);
		if (err) {
			errno = err;
			return -1;
		}
	}
	t_measure = now_ns() + (uint64_t)opt.warmup_ms * 1000000ull;
	t_end = t_measure + (uint64_t)(opt.seconds * 1e9);
	for (int i = 0; i < opt.threads; i++) {
		err = pthread_create(&cl[i].tid, NULL, client_main, &cl[i]);
		if (err) {
			errno = err;
			return -1;
		}
	}
	return 0;
}

/*
 * Joins the clients, then closes their write side so the servers see end of
 * file (--churn: shuts the listeners down, which ends the servers' accept()).
 * Takes the CPU time of the measured period on the way.
 */
static int finish_all(struct client *cl, struct server_conn *sv)
{
	uint64_t cpu0;
	int failed = 0;

	sleep_until(t_measure);
	cpu0 = cpu_now_ns();
	for (int i = 0; i < opt.threads; i++)
		pthread_join(cl[i].tid, NULL);
	cpu_ns = cpu_now_ns() - cpu0;
	__atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < opt.threads; i++)
		shutdown(opt.churn ? sv[i].fd : cl[i].fd, opt.churn ? SHUT_RDWR : SHUT_WR);
	for (int i = 0; i < opt.threads; i++)
		pthread_join(sv[i].tid, NULL);
	for (int i = 0; i < opt.threads; i++) {
		if (cl[i].err)
			fprintf(stderr, "pingpong: client %d: %s\n", i, strerror(cl[i].err));
		if (sv[i].err)
			fprintf(stderr, "pingpong: server %d: %s\n", i, strerror(sv[i].err));
		failed |= cl[i].err || sv[i].err;
	}
	for (int i = 0; i < opt.threads && opt.calls && !failed; i++)
		if ((long)cl[i].n < cl[i].quota) {
			fprintf(stderr, "pingpong: --calls not reached in %.3f s\n", opt.seconds);
			failed = 1;
		}
	return failed ? -1 : 0;
}

static void free_all(struct client *cl, struct server_conn *sv)
{
	for (int i = 0; i < MAX_THREADS; i++) {
		if (cl[i].fd >= 0)
			close(cl[i].fd);
		if (sv[i].fd >= 0)
			close(sv[i].fd);
		free(cl[i].buf);
		free(cl[i].lat);
		free(sv[i].buf);
	}
}

/* Thread creation failing midway leaves threads running: exit() ends them. */
static int run(struct client *cl, struct server_conn *sv)
{
	if (open_all(cl, sv)) {
		perror("pingpong: cannot set up the loopback connections");
		return 1;
	}
	if (start_all(cl, sv)) {
		perror("pingpong: cannot start the threads");
		exit(1);
	}
	if (finish_all(cl, sv))
		return 1;
	if (report(cl, opt.threads)) {
		perror("pingpong: cannot compute the percentiles");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct client cl[MAX_THREADS];
	static struct server_conn sv[MAX_THREADS];
	int rc;

	if (parse_args(argc, argv))
		return 2;
	for (int i = 0; i < MAX_THREADS; i++)
		cl[i].fd = sv[i].fd = -1;
	rc = run(cl, sv);
	free_all(cl, sv);
	return rc;
}
