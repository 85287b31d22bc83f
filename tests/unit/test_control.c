// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The control socket's client table (user/control/control.c) on real sockets: a
 * listener in the abstract namespace, the test's end of each client a
 * plain socket. Time is the test's: every call takes now_ns, so deadlines
 * are checked exactly. dw_log and dw_own_path are this file's.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "dwtest.h"

#include "control/control.h"
#include "host/privs.h"

#define MS 1000000ULL
#define SEC (1000ULL * MS)
#define T0 (100 * SEC)

static int warnings;
static char last_log[512];

void dw_log(int level, const char *fmt, ...)
{
	va_list ap;

	if (level == 4)
		warnings++;
	va_start(ap, fmt);
	vsnprintf(last_log, sizeof(last_log), fmt, ap);
	va_end(ap);
}

int dw_own_path(int dirfd, const char *name, const char *shown, int group, mode_t root_mode,
		mode_t group_mode)
{
	(void)dirfd, (void)name, (void)shown, (void)group, (void)root_mode, (void)group_mode;
	return 0;
}

struct fixture {
	int lfd;
	struct sockaddr_un sun;
	struct dw_clients t;
};

static int setup(void **state)
{
	static struct fixture f;

	memset(&f, 0, sizeof(f));
	f.sun.sun_family = AF_UNIX;
	snprintf(f.sun.sun_path + 1, sizeof(f.sun.sun_path) - 1, "dwtest-control-%d", getpid());
	f.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (f.lfd < 0 || bind(f.lfd, (struct sockaddr *)&f.sun, sizeof(f.sun)) || listen(f.lfd, 64))
		return -1;
	dw_clients_init(&f.t);
	warnings = 0;
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	dw_clients_close_all(&f->t);
	for (int i = 0; i < DW_CONTROL_CLIENTS; i++)
		assert_int_equal(f->t.c[i].fd, -1);
	close(f->lfd);
	return 0;
}

/* A client connected and accepted at now; returns the test's end, the slot in *c. */
static int client(struct fixture *f, uint64_t now, struct dw_client **c)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	assert_int_equal(connect(fd, (struct sockaddr *)&f->sun, sizeof(f->sun)), 0);
	for (int i = 0; i < DW_CONTROL_CLIENTS; i++) {
		if (f->t.c[i].fd < 0) {
			dw_control_accept(f->lfd, &f->t, now);
			assert_true(f->t.c[i].fd >= 0);
			*c = &f->t.c[i];
			return fd;
		}
	}
	dw_control_accept(f->lfd, &f->t, now);
	*c = NULL;
	return fd;
}

static bool is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* What the daemon sent until it closed (the test's end is blocking). */
static size_t drain(int fd)
{
	char buf[65536];
	size_t total = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	assert_int_equal(n, 0);
	return total;
}

static void say(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void test_request_in_pieces(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);

	assert_int_equal(c->deadline_ns, T0 + DW_REQUEST_NS);
	assert_int_equal(dw_client_events(c), POLLIN);
	assert_int_equal(dw_client_read(c), 0);		/* nothing yet: EAGAIN */
	say(peer, "sta");
	assert_int_equal(dw_client_read(c), 0);
	say(peer, "tus text\r\nmore");
	assert_int_equal(dw_client_read(c), 1);
	assert_string_equal(c->req, "status text");
	close(peer);
}

/* As before: a line longer than DW_REQUEST_MAX - 1 bytes is taken cut there. */
static void test_long_request_cut(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);
	char line[400];

	memset(line, 'x', sizeof(line) - 1);
	line[sizeof(line) - 1] = 0;
	say(peer, line);
	assert_int_equal(dw_client_read(c), 1);
	assert_int_equal(strlen(c->req), DW_REQUEST_MAX - 1);
	close(peer);
}

/* As before: a client that closes before its line end is closed unanswered. */
static void test_closed_before_line_end(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);
	int fd = c->fd;

	say(peer, "status json");
	shutdown(peer, SHUT_WR);
	assert_int_equal(dw_client_read(c), 0);
	assert_int_equal(dw_client_read(c), -1);
	assert_int_equal(c->fd, -1);
	assert_false(is_open(fd));
	assert_int_equal(drain(peer), 0);
	close(peer);
}

static void test_request_deadline(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);

	assert_int_equal(dw_clients_expire(&f->t, T0), DW_REQUEST_NS / MS);
	/* rounded up: a poll that ends before the deadline would find nothing to close */
	assert_int_equal(dw_clients_expire(&f->t, T0 + DW_REQUEST_NS - MS + 1), 1);
	assert_int_equal(c->fd >= 0, true);
	assert_int_equal(dw_clients_expire(&f->t, T0 + DW_REQUEST_NS), -1);
	assert_int_equal(c->fd, -1);
	assert_int_equal(drain(peer), 0);
	close(peer);
}

/* The nearest deadline of several wins. */
static void test_nearest_deadline(void **state)
{
	struct fixture *f = *state;
	struct dw_client *a, *b;
	int pa = client(f, T0, &a), pb = client(f, T0 + 50 * MS, &b);

	assert_int_equal(dw_clients_expire(&f->t, T0 + 10 * MS), DW_REQUEST_NS / MS - 10);
	assert_int_equal(dw_clients_expire(&f->t, T0 + DW_REQUEST_NS), 50);
	assert_int_equal(a->fd, -1);
	assert_true(b->fd >= 0);
	close(pa);
	close(pb);
}

/* An answer goes out after its length line; the client reads it whole, without the line. */
static void test_short_answer_written_and_closed(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);
	static const char sent[] = "depwatch-answer 3\nok\n";
	char buf[64];
	struct dw_buf ans = {};

	say(peer, "breaker open x\n");
	assert_int_equal(dw_client_read(c), 1);
	dw_buf_printf(&c->answer, "ok\n");
	dw_client_write(c, T0 + MS);
	assert_int_equal(c->fd, -1);
	assert_null(c->answer.data);
	assert_int_equal(recv(peer, buf, sizeof(buf), MSG_PEEK), sizeof(sent) - 1);
	assert_memory_equal(buf, sent, sizeof(sent) - 1);
	assert_int_equal(dw_control_read_answer(peer, &ans), 0);
	assert_int_equal(ans.len, 3);
	assert_string_equal(ans.data, "ok\n");
	dw_buf_free(&ans);
	close(peer);
}

/* An empty answer is whole too: its length line says 0. */
static void test_empty_answer_is_whole(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);
	struct dw_buf ans = {};

	say(peer, "status text\n");
	assert_int_equal(dw_client_read(c), 1);
	dw_client_write(c, T0);
	assert_int_equal(c->fd, -1);
	assert_int_equal(dw_control_read_answer(peer, &ans), 0);
	assert_int_equal(ans.len, 0);
	dw_buf_free(&ans);
	close(peer);
}

/* len bytes of 'j' as the answer to a client that has sent its request. */
static char *queue_big_answer(struct dw_client *c, int peer, size_t len)
{
	char *big = malloc(len);

	assert_non_null(big);
	memset(big, 'j', len);
	say(peer, "status json\n");
	assert_int_equal(dw_client_read(c), 1);
	dw_buf_write(&c->answer, big, len);
	return big;
}

/*
 * An answer larger than the socket takes: written as the client reads, the
 * deadline moved by each write that goes through; a client that stops
 * reading is closed DW_ANSWER_NS after the last one, and what it got says
 * so: fewer bytes than the length line.
 */
static void test_large_answer_to_a_slow_reader(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);
	size_t len = 8 << 20, body, want;
	char *big = queue_big_answer(c, peer, len), buf[65536];
	struct dw_buf got = {};
	const char *p;

	dw_client_write(c, T0);
	assert_true(c->writing);
	assert_true(c->off > 0 && c->off < len);
	assert_int_equal(dw_client_events(c), POLLOUT);
	assert_int_equal(c->deadline_ns, T0 + DW_ANSWER_NS);

	/* still open just before; a read by the client and a write that goes through move it */
	assert_int_equal(dw_clients_expire(&f->t, T0 + DW_ANSWER_NS - MS), 1);
	for (ssize_t n; (n = recv(peer, buf, sizeof(buf), MSG_DONTWAIT)) > 0;)
		dw_buf_write(&got, buf, n);
	assert_true(got.len > 0);
	dw_client_write(c, T0 + DW_ANSWER_NS - MS);
	assert_int_equal(c->deadline_ns, T0 + 2 * DW_ANSWER_NS - MS);
	assert_int_equal(dw_clients_expire(&f->t, T0 + DW_ANSWER_NS), DW_ANSWER_NS / MS - 1);

	/* a write that finds the socket full leaves it */
	dw_client_write(c, T0 + DW_ANSWER_NS + MS);
	assert_int_equal(c->deadline_ns, T0 + 2 * DW_ANSWER_NS - MS);
	assert_int_equal(dw_clients_expire(&f->t, T0 + 2 * DW_ANSWER_NS - MS), -1);
	assert_int_equal(c->fd, -1);
	for (ssize_t n; (n = read(peer, buf, sizeof(buf))) > 0;)
		dw_buf_write(&got, buf, n);
	assert_int_equal(dw_answer_parse(got.data, got.len, &p, &body, &want), -EPIPE);
	assert_int_equal(want, len);
	assert_true(body > 0 && body < len);
	assert_memory_equal(p, big, body);
	dw_buf_free(&got);
	free(big);
	close(peer);
}

/* What dw_control_read_answer says on stderr, read back from a file. */
static int read_answer_quoting(int fd, struct dw_buf *ans, char *said, size_t len)
{
	FILE *tmp = tmpfile();
	int saved = dup(STDERR_FILENO), err;
	size_t n;

	assert_non_null(tmp);
	fflush(stderr);
	dup2(fileno(tmp), STDERR_FILENO);
	err = dw_control_read_answer(fd, ans);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = fread(said, 1, len - 1, tmp);
	said[n] = 0;
	fclose(tmp);
	return err;
}

/* The client of a cut answer: an error that says how much came, and no answer. */
static void test_cut_answer_is_an_error(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);
	size_t len = 8 << 20;
	char *big = queue_big_answer(c, peer, len), said[512], want[128];
	struct dw_buf ans = {};

	dw_client_write(c, T0);
	assert_int_equal(dw_clients_expire(&f->t, T0 + DW_ANSWER_NS), -1);
	assert_int_equal(c->fd, -1);
	assert_int_equal(read_answer_quoting(peer, &ans, said, sizeof(said)), -EPIPE);
	snprintf(want, sizeof(want), " of %zu bytes arrived (the daemon closes a client that reads nothing for 2 s)\n",
		 len);
	assert_non_null(strstr(said, "depwatch: the daemon's answer was cut: "));
	assert_non_null(strstr(said, want));
	dw_buf_free(&ans);
	free(big);
	close(peer);
}

/* Closed unanswered (the table full) and a peer that is no daemon are errors too. */
static void test_no_answer_and_not_an_answer(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c), pair[2];
	struct dw_buf ans = {};
	char said[512];

	dw_client_close(c);
	assert_int_equal(read_answer_quoting(peer, &ans, said, sizeof(said)), -EPIPE);
	assert_non_null(strstr(said, "closed the connection without an answer"));
	dw_buf_free(&ans);
	close(peer);

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
	say(pair[1], "{\"dependencies\":[]}\n");
	close(pair[1]);
	assert_int_equal(read_answer_quoting(pair[0], &ans, said, sizeof(said)), -EPROTO);
	assert_non_null(strstr(said, "has no length line"));
	dw_buf_free(&ans);
	close(pair[0]);
}

/* A client gone while answered is closed, and no SIGPIPE (the test does not ignore it). */
static void test_client_gone_while_answered(void **state)
{
	struct fixture *f = *state;
	struct dw_client *c;
	int peer = client(f, T0, &c);

	say(peer, "status text\n");
	assert_int_equal(dw_client_read(c), 1);
	close(peer);
	dw_buf_printf(&c->answer, "an answer nobody reads\n");
	dw_client_write(c, T0);
	assert_int_equal(c->fd, -1);
}

static void test_full_table_refuses(void **state)
{
	struct fixture *f = *state;
	int peers[DW_CONTROL_CLIENTS + 3];
	struct dw_client *c;
	struct dw_control_figs figs;

	dw_clients_figs(&f->t, &figs);
	assert_int_equal(figs.clients, 0);
	assert_int_equal(figs.refused, 0);
	for (int i = 0; i < DW_CONTROL_CLIENTS; i++) {
		peers[i] = client(f, T0, &c);
		assert_non_null(c);
	}
	assert_int_equal(warnings, 0);
	peers[DW_CONTROL_CLIENTS] = client(f, T0, &c);
	assert_null(c);
	assert_int_equal(f->t.refused, 1);
	dw_clients_figs(&f->t, &figs);
	assert_int_equal(figs.clients, DW_CONTROL_CLIENTS);
	assert_int_equal(figs.refused, 1);
	assert_int_equal(warnings, 1);
	assert_string_equal(last_log,
			    "control socket: 16 clients connected, closed one more unanswered (1 so far)");
	assert_int_equal(drain(peers[DW_CONTROL_CLIENTS]), 0);

	/* at most a line a minute */
	peers[DW_CONTROL_CLIENTS + 1] = client(f, T0 + 59 * SEC, &c);
	assert_int_equal(f->t.refused, 2);
	assert_int_equal(warnings, 1);
	peers[DW_CONTROL_CLIENTS + 2] = client(f, T0 + 60 * SEC, &c);
	assert_int_equal(f->t.refused, 3);
	assert_int_equal(warnings, 2);

	/* a slot left is taken again */
	dw_client_close(&f->t.c[5]);
	close(peers[5]);
	dw_clients_figs(&f->t, &figs);
	assert_int_equal(figs.clients, DW_CONTROL_CLIENTS - 1);
	assert_int_equal(figs.refused, 3);
	peers[5] = client(f, T0 + 61 * SEC, &c);
	assert_ptr_equal(c, &f->t.c[5]);
	assert_int_equal(f->t.refused, 3);
	for (int i = 0; i < DW_CONTROL_CLIENTS + 3; i++)
		close(peers[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_request_in_pieces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_long_request_cut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_closed_before_line_end, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nearest_deadline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_short_answer_written_and_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_answer_is_whole, setup, teardown),
		cmocka_unit_test_setup_teardown(test_large_answer_to_a_slow_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cut_answer_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_answer_and_not_an_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_client_gone_while_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_full_table_refuses, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
