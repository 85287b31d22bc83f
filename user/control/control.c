// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include "control/control.h"
#include "host/log.h"
#include "host/privs.h"

static int sock_addr(const char *run_dir, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if ((size_t)snprintf(sun->sun_path, sizeof(sun->sun_path), "%s/%s", run_dir,
			     DW_CONTROL_SOCK) >= sizeof(sun->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/*
 * The socket is root's (0600 in a 0700 dir), or with --group also its
 * group's (0660 in a 0750 dir: connect() needs write permission); what a
 * group member may ask is limited by dw_control_peer_is_root().
 */
int dw_control_listen(const char *run_dir, int group)
{
	struct sockaddr_un sun;
	int fd, dirfd, err;

	if (mkdir(run_dir, 0700) && errno != EEXIST) {
		dw_err("cannot create run dir %s: %s", run_dir, strerror(errno));
		return -errno;
	}
	err = sock_addr(run_dir, &sun);
	if (err) {
		dw_err("run dir path too long: %s", run_dir);
		return err;
	}
	dirfd = open(run_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		dw_err("cannot open run dir %s: %s", run_dir, strerror(errno));
		return -errno;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || dw_own_path(dirfd, NULL, run_dir, group, 0700, 0750)) {
		err = -errno;
		goto fail;
	}
	unlinkat(dirfd, DW_CONTROL_SOCK, 0);	/* the run-dir lock says no live daemon owns it */
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = -errno;
		dw_err("cannot listen on %s: %s", sun.sun_path, strerror(errno));
		goto fail;
	}
	if (dw_own_path(dirfd, DW_CONTROL_SOCK, sun.sun_path, group, 0600, 0660) || listen(fd, 16)) {
		err = -errno;
		goto fail;
	}
	close(dirfd);
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	close(dirfd);
	return err;
}

bool dw_control_peer_is_root(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) && cred.uid == 0;
}

void dw_control_close(int fd, const char *run_dir)
{
	struct sockaddr_un sun;

	if (fd < 0)
		return;
	close(fd);
	if (!sock_addr(run_dir, &sun))
		unlink(sun.sun_path);
}

void dw_clients_init(struct dw_clients *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < DW_CONTROL_CLIENTS; i++)
		t->c[i].fd = -1;
}

void dw_clients_figs(const struct dw_clients *t, struct dw_control_figs *f)
{
	f->clients = 0;
	for (int i = 0; i < DW_CONTROL_CLIENTS; i++)
		f->clients += t->c[i].fd >= 0;
	f->refused = t->refused;
}

/* A full table means a client (or a script) that does not let go: said once a minute. */
static void refuse(struct dw_clients *t, int fd, uint64_t now_ns)
{
	close(fd);
	t->refused++;
	if (t->refused > 1 && now_ns - t->refused_log_ns < 60000000000ULL)
		return;
	dw_warn("control socket: %d clients connected, closed one more unanswered (%llu so far)",
		DW_CONTROL_CLIENTS, (unsigned long long)t->refused);
	t->refused_log_ns = now_ns;
}

/* One per wakeup: poll is level-triggered, the loop comes back at once for the next. */
void dw_control_accept(int listen_fd, struct dw_clients *t, uint64_t now_ns)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	for (int i = 0; i < DW_CONTROL_CLIENTS; i++) {
		struct dw_client *c = &t->c[i];

		if (c->fd < 0) {
			*c = (struct dw_client){ .fd = fd, .deadline_ns = now_ns + DW_REQUEST_NS };
			return;
		}
	}
	refuse(t, fd, now_ns);
}

short dw_client_events(const struct dw_client *c)
{
	return c->writing ? POLLOUT : POLLIN;
}

void dw_client_close(struct dw_client *c)
{
	close(c->fd);
	dw_buf_free(&c->answer);
	*c = (struct dw_client){ .fd = -1 };
}

int dw_client_read(struct dw_client *c)
{
	ssize_t n = read(c->fd, c->req + c->have, sizeof(c->req) - 1 - c->have);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		dw_client_close(c);
		return -1;
	}
	c->have += n;
	c->req[c->have] = 0;
	if (!memchr(c->req, '\n', c->have) && c->have + 1 < sizeof(c->req))
		return 0;
	c->req[strcspn(c->req, "\r\n")] = 0;
	return 1;
}

/* What is left to send, from c->off over the length line and the answer: 0 to 2 pieces. */
static int unsent(struct dw_client *c, struct iovec *iov)
{
	size_t body_off = c->off > c->line_len ? c->off - c->line_len : 0;
	int n = 0;

	if (c->off < c->line_len)
		iov[n++] = (struct iovec){ c->line + c->off, c->line_len - c->off };
	if (body_off < c->answer.len)
		iov[n++] = (struct iovec){ c->answer.data + body_off, c->answer.len - body_off };
	return n;
}

void dw_client_write(struct dw_client *c, uint64_t now_ns)
{
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov };

	if (!c->writing) {
		c->writing = true;
		c->deadline_ns = now_ns + DW_ANSWER_NS;
		c->line_len = dw_answer_line(c->answer.len, c->line);
	}
	while ((msg.msg_iovlen = unsent(c, iov))) {
		/* MSG_NOSIGNAL: a client gone is no SIGPIPE, whoever set what */
		ssize_t n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		c->off += n;
		c->deadline_ns = now_ns + DW_ANSWER_NS;
	}
	dw_client_close(c);
}

int dw_clients_expire(struct dw_clients *t, uint64_t now_ns)
{
	uint64_t next = 0;

	for (int i = 0; i < DW_CONTROL_CLIENTS; i++) {
		struct dw_client *c = &t->c[i];

		if (c->fd < 0)
			continue;
		if (c->deadline_ns <= now_ns) {
			dw_debug("control client closed: %s", c->writing ?
				 "it stopped reading its answer" : "no request line in time");
			dw_client_close(c);
		} else if (!next || c->deadline_ns < next) {
			next = c->deadline_ns;
		}
	}
	/* rounded up: a wakeup just before the deadline would find nothing to do */
	return next ? (int)((next - now_ns + 999999) / 1000000) : -1;
}

void dw_clients_close_all(struct dw_clients *t)
{
	for (int i = 0; i < DW_CONTROL_CLIENTS; i++)
		if (t->c[i].fd >= 0)
			dw_client_close(&t->c[i]);
}

static int read_all(int fd, struct dw_buf *answer)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		dw_buf_write(answer, buf, n);
	if (n < 0)
		return -errno;
	return answer->oom ? -ENOMEM : 0;
}

/* Why an answer that arrived (n bytes) is not a whole one, on stderr. */
static void say_not_whole(int err, size_t n, size_t len, size_t want)
{
	if (err == -EPIPE && !n)
		fprintf(stderr, "depwatch: the daemon closed the connection without an answer (all %d of its client slots taken, or it is stopping)\n",
			DW_CONTROL_CLIENTS);
	else if (err == -EPIPE && !want)
		fprintf(stderr, "depwatch: the daemon's answer was cut inside its length line\n");
	else if (err == -EPIPE)
		fprintf(stderr, "depwatch: the daemon's answer was cut: %zu of %zu bytes arrived (the daemon closes a client that reads nothing for %llu s)\n",
			len, want, DW_ANSWER_NS / 1000000000ULL);
	else if (err == -EMSGSIZE)
		fprintf(stderr, "depwatch: the daemon's answer is longer than its length line says: %zu bytes, not %zu\n",
			len, want);
	else
		fprintf(stderr, "depwatch: the answer on the control socket has no length line: not a depwatch daemon, or one older than this client (restart it)\n");
}

int dw_control_read_answer(int fd, struct dw_buf *answer)
{
	const char *body;
	size_t len, want;
	int err = read_all(fd, answer);

	if (err) {
		fprintf(stderr, "depwatch: reading the daemon's answer: %s\n", strerror(-err));
		return err;
	}
	err = dw_answer_parse(answer->data, answer->len, &body, &len, &want);
	if (err) {
		say_not_whole(err, answer->len, len, want);
		return err;
	}
	memmove(answer->data, body, len);
	answer->len = len;
	answer->data[len] = 0;
	return 0;
}

int dw_control_request(const char *run_dir, const char *request, struct dw_buf *answer)
{
	struct sockaddr_un sun;
	int fd, err;

	err = sock_addr(run_dir, &sun);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		err = -errno;
		fprintf(stderr, "depwatch: cannot reach the daemon at %s: %s (is `depwatch run` running with this --run-dir?)\n",
			sun.sun_path, strerror(errno));
		close(fd);
		return err;
	}
	if (dprintf(fd, "%s\n", request) >= 0) {
		err = dw_control_read_answer(fd, answer);
	} else {
		err = -errno;
		fprintf(stderr, "depwatch: reading the daemon's answer: %s\n", strerror(-err));
	}
	close(fd);
	return err;
}

int dw_control_ask(const char *run_dir, const char *request)
{
	struct dw_buf answer = {};
	int err = dw_control_request(run_dir, request, &answer);
	bool refused = !err && answer.len >= 6 && !strncmp(answer.data, "error:", 6);

	if (!err && answer.len)
		fwrite(answer.data, 1, answer.len, refused ? stderr : stdout);
	dw_buf_free(&answer);
	return err ? err : refused ? -EINVAL : 0;
}
