/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The control socket: <run-dir>/depwatch.sock, a Unix stream socket. A
 * client writes one request line ("status json", "status text"), the daemon
 * answers and closes; the request's verbs and the answer's length line are
 * logic/view/control_wire.h's.
 *
 * The daemon's one poll loop serves the clients without ever waiting on one
 * (the breakers are judged in that loop): their sockets are non-blocking,
 * each in a slot of a small table with a deadline, and a client past its
 * deadline is closed.
 */
#ifndef DW_CONTROL_H
#define DW_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "control/control_figs.h"
#include "logic/view/control_wire.h"
#include "logic/base/jsonw.h"

#define DW_CONTROL_SOCK "depwatch.sock"
#define DW_REQUEST_MAX 256

/*
 * Creates the run dir and listens: dir 0700 and socket 0600 root's, or with
 * group >= 0 (--group) 0750 and 0660 root:group. Returns the socket or a
 * negative errno.
 */
int dw_control_listen(const char *run_dir, int group);
/* Whether the client on fd runs as root: only root may force breakers. */
bool dw_control_peer_is_root(int fd);
void dw_control_close(int fd, const char *run_dir);

/* At most this many clients at once: one more is closed unanswered. */
#define DW_CONTROL_CLIENTS 16
/*
 * From the connect, for the whole request line: it is one short line, but
 * the client may lose its CPU between its connect and its write on a
 * loaded host (200 ms was seen to close `status` on one emulated CPU, and
 * the client read a reset). The table's other slots stay free meanwhile.
 */
#define DW_REQUEST_NS 2000000000ULL
/*
 * For the answer, from its start and again from each write that goes
 * through: a client that stops reading is closed, one that reads a large
 * answer slowly (a loaded machine) is not.
 */
#define DW_ANSWER_NS 2000000000ULL

struct dw_client {
	int fd;				/* -1: a free slot */
	bool writing;			/* false: reading the request */
	size_t have;			/* bytes of req read */
	char req[DW_REQUEST_MAX];
	struct dw_buf answer;
	char line[DW_ANSWER_LINE_MAX];	/* its length line, sent first */
	size_t line_len;
	size_t off;			/* bytes of line and answer written */
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC */
};

struct dw_clients {
	struct dw_client c[DW_CONTROL_CLIENTS];
	uint64_t refused;		/* closed at once: the table was full */
	uint64_t refused_log_ns;	/* the last log line about them */
};

void dw_clients_init(struct dw_clients *t);

/* What status and /metrics say of the clients (control_figs.h). */
void dw_clients_figs(const struct dw_clients *t, struct dw_control_figs *f);
/* Accepts one client into a free slot, or closes it at once when none is left. */
void dw_control_accept(int listen_fd, struct dw_clients *t, uint64_t now_ns);
/* What to poll the client for. */
short dw_client_events(const struct dw_client *c);
/*
 * Reads what the client sent. 1: its request line is in req, without the
 * line end (a longer line is cut at DW_REQUEST_MAX - 1 bytes and taken as it
 * is); 0: more is to come; -1: it closed or failed first, and is closed.
 */
int dw_client_read(struct dw_client *c);
/*
 * Sends what the socket takes of the answer, after its length line (taken
 * at the first call); closes the client once all is out or it is gone.
 */
void dw_client_write(struct dw_client *c, uint64_t now_ns);
void dw_client_close(struct dw_client *c);
/* Closes the clients past their deadline; the poll timeout in ms to the next one, -1: none. */
int dw_clients_expire(struct dw_clients *t, uint64_t now_ns);
void dw_clients_close_all(struct dw_clients *t);

/*
 * Client side: what the daemon sent on fd until it closed, into answer
 * without its length line. 0, or a negative errno said on stderr: -EPIPE
 * the answer was cut (or never came), -EPROTO it has no length line.
 */
int dw_control_read_answer(int fd, struct dw_buf *answer);
/* Sends request, reads the whole answer. 0 or a negative errno (said on stderr), as above. */
int dw_control_request(const char *run_dir, const char *request, struct dw_buf *answer);
/* Same, and prints the answer: to stderr, and -EINVAL, when it starts with "error:". */
int dw_control_ask(const char *run_dir, const char *request);

#endif /* DW_CONTROL_H */
