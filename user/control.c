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
#include <sys/un.h>
#include "control.h"
#include "log.h"
#include "privs.h"

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

/* A client gets 200 ms to send its request line: the daemon's loop must not wait on it. */
static int read_request(int fd, char *req, size_t len)
{
	size_t have = 0;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	while (have + 1 < len) {
		ssize_t n;

		if (poll(&pfd, 1, 200) <= 0)
			return -ETIMEDOUT;
		n = read(fd, req + have, len - 1 - have);
		if (n <= 0)
			return -EIO;
		have += n;
		if (memchr(req, '\n', have))
			break;
	}
	req[have] = 0;
	req[strcspn(req, "\r\n")] = 0;
	return 0;
}

int dw_control_accept(int listen_fd, char *req, size_t len)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
	struct timeval tv = { .tv_sec = 1 };

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (read_request(fd, req, len)) {
		close(fd);
		return -1;
	}
	return fd;
}

void dw_control_reply(int fd, const struct dw_buf *answer)
{
	size_t off = 0;

	while (answer->data && off < answer->len) {
		ssize_t n = write(fd, answer->data + off, answer->len - off);

		if (n <= 0)
			break;
		off += n;
	}
	close(fd);
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
	if (dprintf(fd, "%s\n", request) < 0)
		err = -errno;
	else
		err = read_all(fd, answer);
	close(fd);
	if (err)
		fprintf(stderr, "depwatch: reading the daemon's answer: %s\n", strerror(-err));
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
