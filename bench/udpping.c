// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * UDP round trips for the DNS hook's cost (issue 35, bench/dns.py):
 *   udpping echo PORT SECONDS     a 32-byte ping-pong with its own echo thread on 127.0.0.1:PORT
 *                                 (a port that is no DNS port: what other UDP pays)
 *   udpping dns ADDR SECONDS      A queries for a.test, one at a time, to ADDR:53 (unbound)
 * Prints "round_trips_per_s N". One connected client socket, blocking, no think time.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int echo_fd;

static void *echo(void *arg)
{
	char buf[512];
	struct sockaddr_in peer;
	socklen_t len;
	ssize_t n;

	(void)arg;
	for (;;) {
		len = sizeof(peer);
		n = recvfrom(echo_fd, buf, sizeof(buf), 0, (struct sockaddr *)&peer, &len);
		if (n > 0)
			sendto(echo_fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, len);
	}
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const unsigned char query[] = {
		0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0,
		1, 'a', 4, 't', 'e', 's', 't', 0, 0, 1, 0, 1,
	};
	unsigned char msg[512], buf[512];
	struct sockaddr_in to = { .sin_family = AF_INET };
	size_t len;
	double end, start;
	unsigned long n = 0;
	pthread_t t;
	int fd;

	if (argc != 4 || (strcmp(argv[1], "echo") && strcmp(argv[1], "dns"))) {
		fprintf(stderr, "usage: udpping echo PORT SECONDS | udpping dns ADDR SECONDS\n");
		return 2;
	}
	if (!strcmp(argv[1], "echo")) {
		to.sin_port = htons((unsigned short)atoi(argv[2]));
		to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		echo_fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (bind(echo_fd, (struct sockaddr *)&to, sizeof(to))) {
			perror("bind");
			return 1;
		}
		pthread_create(&t, NULL, echo, NULL);
		memset(msg, 'x', 32);
		len = 32;
	} else {
		to.sin_port = htons(53);
		if (inet_pton(AF_INET, argv[2], &to.sin_addr) != 1) {
			fprintf(stderr, "udpping: %s: not an IPv4 address\n", argv[2]);
			return 2;
		}
		memcpy(msg, query, sizeof(query));
		len = sizeof(query);
	}
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (connect(fd, (struct sockaddr *)&to, sizeof(to))) {
		perror("connect");
		return 1;
	}
	start = now_s();
	end = start + atof(argv[3]);
	while (now_s() < end) {
		/* a new id each query: each one a call of its own */
		msg[0] = (unsigned char)(n >> 8), msg[1] = (unsigned char)n;
		if (send(fd, msg, len, 0) < 0 || recv(fd, buf, sizeof(buf), 0) < 0) {
			perror("round trip");
			return 1;
		}
		n++;
	}
	printf("round_trips_per_s %.0f\n", n / (now_s() - start));
	return 0;
}
