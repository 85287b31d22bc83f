// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * An HTTPS keep-alive client whose OpenSSL session reaches its socket through
 * a BIO it sets itself (issue 48): the ways database drivers and other
 * libraries do it, instead of SSL_set_fd.
 *
 *   bioclient setbio|method PORT N
 *
 * setbio: SSL_set_bio() with a socket BIO the client made (BIO_new_socket).
 * method: a BIO method of its own (BIO_meth_new), whose read and write call
 * recv() and send() on the socket kept as the BIO's data, as libpq's and
 * MariaDB Connector/C's do.
 *
 * N requests "GET /" on one connection to 127.0.0.1:PORT, each answer read
 * to its end (Content-Length); prints {"ok": 2xx answers, "p50_ms": the
 * median of its own request-to-answer times}. Built by make
 * (build/bioclient); test_tls.py runs it against nginx.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

static void die(const char *what)
{
	fprintf(stderr, "bioclient: %s\n", what);
	ERR_print_errors_fp(stderr);
	exit(1);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* The method's callbacks: the socket is the BIO's data (an int stored in the pointer). */
static int sock_of(BIO *b)
{
	return (int)(long)BIO_get_data(b);
}

static int m_write(BIO *b, const char *buf, int len)
{
	ssize_t n = send(sock_of(b), buf, len, MSG_NOSIGNAL);

	BIO_clear_retry_flags(b);
	return n < 0 ? -1 : (int)n;
}

static int m_read(BIO *b, char *buf, int len)
{
	ssize_t n = recv(sock_of(b), buf, len, 0);

	BIO_clear_retry_flags(b);
	return n < 0 ? -1 : (int)n;
}

static long m_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b, (void)num, (void)ptr;
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int m_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

static BIO *method_bio(int fd)
{
	BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "bioclient socket");
	BIO *b;

	if (!m || !BIO_meth_set_write(m, m_write) || !BIO_meth_set_read(m, m_read) ||
	    !BIO_meth_set_ctrl(m, m_ctrl) || !BIO_meth_set_create(m, m_create))
		die("BIO_meth_new");
	b = BIO_new(m);
	if (!b)
		die("BIO_new");
	BIO_set_data(b, (void *)(long)fd);
	return b;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Reads one answer to its end: its status, or -1. */
static int read_answer(SSL *ssl)
{
	char buf[16384];
	size_t have = 0;
	char *end, *cl;
	long body;
	int n;

	for (;;) {
		if (have == sizeof(buf) - 1)
			return -1;
		n = SSL_read(ssl, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return -1;
		have += n;
		buf[have] = 0;
		end = strstr(buf, "\r\n\r\n");
		if (!end)
			continue;
		cl = strcasestr(buf, "\r\ncontent-length:");
		body = cl && cl < end ? strtol(cl + 17, NULL, 10) : 0;
		while ((long)(have - (end + 4 - buf)) < body) {
			n = SSL_read(ssl, buf + have, sizeof(buf) - 1 - have);
			if (n <= 0)
				return -1;
			have += n;
		}
		return atoi(buf + 9);
	}
}

int main(int argc, char **argv)
{
	static const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd, one = 1, n, ok = 0;
	double *times;
	SSL_CTX *ctx;
	SSL *ssl;
	BIO *b;

	if (argc != 4 || (strcmp(argv[1], "setbio") && strcmp(argv[1], "method")))
		die("usage: bioclient setbio|method PORT N");
	sin.sin_port = htons(atoi(argv[2]));
	n = atoi(argv[3]);
	times = calloc(n > 0 ? n : 1, sizeof(*times));
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)))
		die("connect");
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ctx = SSL_CTX_new(TLS_client_method());
	ssl = ctx ? SSL_new(ctx) : NULL;
	if (!ssl)
		die("SSL_new");
	b = !strcmp(argv[1], "setbio") ? BIO_new_socket(fd, BIO_NOCLOSE) : method_bio(fd);
	if (!b)
		die("BIO_new_socket");
	SSL_set_bio(ssl, b, b);
	if (SSL_connect(ssl) != 1)
		die("SSL_connect");
	for (int i = 0; i < n; i++) {
		double t = now_ms();

		if (SSL_write(ssl, req, sizeof(req) - 1) != (int)sizeof(req) - 1)
			die("SSL_write");
		ok += read_answer(ssl) / 100 == 2;
		times[i] = now_ms() - t;
	}
	SSL_shutdown(ssl);
	close(fd);
	qsort(times, n, sizeof(*times), cmp);
	printf("{\"ok\": %d, \"p50_ms\": %.3f}\n", ok, n > 0 ? times[n / 2] : 0.0);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	free(times);
	return 0;
}
