// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Aborting TCP connections through sock_diag's SOCK_DESTROY (sockdiag.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include "enforce/abortrec.h"
#include "kernel/sockdiag.h"

struct request {
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 req;
};

_Static_assert(sizeof(struct request) <= DW_SOCKDIAG_REQ_LEN, "DW_SOCKDIAG_REQ_LEN too small");

static size_t request(void *buf, uint16_t type, uint16_t flags, uint32_t seq,
		      const struct inet_diag_req_v2 *req)
{
	struct request *r = buf;

	memset(r, 0, sizeof(*r));
	r->nlh.nlmsg_len = sizeof(*r);
	r->nlh.nlmsg_type = type;
	r->nlh.nlmsg_flags = NLM_F_REQUEST | flags;
	r->nlh.nlmsg_seq = seq;
	r->req = *req;
	return sizeof(*r);
}

size_t dw_sockdiag_destroy_req(void *buf, const struct dw_abort_sock *s, uint32_t seq)
{
	struct inet_diag_req_v2 req = {
		.sdiag_family = s->family,
		.sdiag_protocol = IPPROTO_TCP,
		.idiag_states = ~0u,	/* not read by an exact lookup */
		.id = {
			.idiag_sport = s->sport,
			.idiag_dport = s->dport,
			.idiag_if = s->ifindex,
			.idiag_cookie = { (uint32_t)s->cookie, (uint32_t)(s->cookie >> 32) },
		},
	};
	size_t alen = s->family == AF_INET ? 4 : 16;

	if (s->family != AF_INET && s->family != AF_INET6)
		return 0;
	memcpy(req.id.idiag_src, s->saddr, alen);
	memcpy(req.id.idiag_dst, s->daddr, alen);
	return request(buf, SOCK_DESTROY, NLM_F_ACK, seq, &req);
}

size_t dw_sockdiag_probe_req(void *buf, uint32_t seq)
{
	struct inet_diag_req_v2 req = { .sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP };

	return request(buf, SOCK_DIAG_BY_FAMILY, NLM_F_DUMP, seq, &req);
}

int dw_sockdiag_answer(const void *buf, size_t len, uint32_t seq)
{
	const struct nlmsghdr *nlh = buf;
	int n = (int)len;	/* NLMSG_OK's arithmetic is on int */

	if (len > 1 << 20)
		return -EPROTO;
	for (; NLMSG_OK(nlh, n); nlh = NLMSG_NEXT(nlh, n)) {
		int err;

		if (nlh->nlmsg_seq != seq)
			continue;
		if (nlh->nlmsg_type != NLMSG_ERROR && nlh->nlmsg_type != NLMSG_DONE)
			continue;	/* a dump's row: the probe's asks for none */
		if (nlh->nlmsg_len < NLMSG_LENGTH(sizeof(err)))
			return -EPROTO;
		memcpy(&err, NLMSG_DATA(nlh), sizeof(err));
		return err > 0 ? -EPROTO : err;
	}
	return -EPROTO;
}

int dw_sockdiag_open(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);

	return fd < 0 ? -errno : fd;
}

/* Sends the request in buf and reads the answer, which the kernel queued inside the send. */
static int ask(int fd, const void *buf, size_t len, uint32_t seq)
{
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	char answer[8192] __attribute__((aligned(4)));
	ssize_t n;

	if (sendto(fd, buf, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)) != (ssize_t)len)
		return -errno;
	n = recv(fd, answer, sizeof(answer), MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	return dw_sockdiag_answer(answer, n, seq);
}

int dw_sockdiag_destroy(int fd, const struct dw_abort_sock *s)
{
	static uint32_t seq;
	char req[DW_SOCKDIAG_REQ_LEN] __attribute__((aligned(4)));
	size_t len = dw_sockdiag_destroy_req(req, s, ++seq);

	return len ? ask(fd, req, len, seq) : -EAFNOSUPPORT;
}

/*
 * First a dump that lists nothing, which answers only when tcp_diag is
 * there (built in or loaded on demand); then the destroy of a socket that
 * cannot exist (port 0 both sides): not found (ENOENT) where the kernel can
 * destroy, EOPNOTSUPP where it was built without CONFIG_INET_DIAG_DESTROY.
 */
int dw_sockdiag_probe(char *why, size_t len)
{
	static const struct dw_abort_sock none = { .family = AF_INET };
	char req[DW_SOCKDIAG_REQ_LEN] __attribute__((aligned(4)));
	int fd = dw_sockdiag_open(), err;

	if (fd < 0) {
		snprintf(why, len, "no NETLINK_SOCK_DIAG socket: %s", strerror(-fd));
		return fd;
	}
	err = ask(fd, req, dw_sockdiag_probe_req(req, 1), 1);
	if (err) {
		snprintf(why, len, "sock_diag has no TCP (tcp_diag): %s", strerror(-err));
		goto out;
	}
	err = ask(fd, req, dw_sockdiag_destroy_req(req, &none, 2), 2);
	if (err == -ENOENT) {
		err = 0;
	} else if (err == -EOPNOTSUPP) {
		snprintf(why, len, "sock_diag cannot destroy (a kernel without CONFIG_INET_DIAG_DESTROY)");
	} else {
		snprintf(why, len, "sock_diag's SOCK_DESTROY answered %s to a socket that cannot exist",
			 strerror(-err));
		err = err ? err : -EPROTO;
	}
out:
	close(fd);
	return err;
}
