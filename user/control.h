/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The control socket: <run-dir>/depwatch.sock, a Unix stream socket. A
 * client writes one request line ("status json", "status text"), the daemon
 * answers and closes.
 */
#ifndef DW_CONTROL_H
#define DW_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include "logic/jsonw.h"

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

/* Accepts one client and reads its request line into req. Returns the client fd or -1. */
int dw_control_accept(int listen_fd, char *req, size_t len);
/* Sends the answer and closes the client. */
void dw_control_reply(int client_fd, const struct dw_buf *answer);

/* Client side: sends request, reads the whole answer. 0 or a negative errno (said on stderr). */
int dw_control_request(const char *run_dir, const char *request, struct dw_buf *answer);
/* Same, and prints the answer: to stderr, and -EINVAL, when it starts with "error:". */
int dw_control_ask(const char *run_dir, const char *request);

#endif /* DW_CONTROL_H */
