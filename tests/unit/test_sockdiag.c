// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * sock_diag's SOCK_DESTROY (user/kernel/sockdiag.c): the requests built from what
 * the abort iterator wrote, byte for byte as the kernel's inet_diag reads
 * them, and the answers the kernel gives, parsed. No socket is opened.
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "dwtest.h"

#include "enforce/abortrec.h"
#include "kernel/sockdiag.h"

struct req {
	struct nlmsghdr nlh;
	struct inet_diag_req_v2 r;
};

static struct dw_abort_sock v4_sock(void)
{
	struct dw_abort_sock s = {
		.cookie = 0x1122334455667788ULL,
		.family = AF_INET,
		.sport = htons(40000),
		.dport = htons(8080),
	};

	inet_pton(AF_INET, "127.0.0.1", s.saddr);
	inet_pton(AF_INET, "10.1.2.3", s.daddr);
	return s;
}

static void test_destroy_v4(void **state)
{
	struct dw_abort_sock s = v4_sock();
	union { char buf[DW_SOCKDIAG_REQ_LEN]; struct req q; } u;
	__be32 want_src, want_dst;
	size_t len;

	(void)state;
	memset(u.buf, 0xee, sizeof(u.buf));
	len = dw_sockdiag_destroy_req(u.buf, &s, 7);
	assert_int_equal(len, sizeof(struct req));
	assert_int_equal(u.q.nlh.nlmsg_len, len);
	assert_int_equal(u.q.nlh.nlmsg_type, SOCK_DESTROY);
	assert_int_equal(u.q.nlh.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	assert_int_equal(u.q.nlh.nlmsg_seq, 7);
	assert_int_equal(u.q.nlh.nlmsg_pid, 0);
	assert_int_equal(u.q.r.sdiag_family, AF_INET);
	assert_int_equal(u.q.r.sdiag_protocol, IPPROTO_TCP);
	assert_int_equal(u.q.r.idiag_ext, 0);
	/* the socket's view: source is the local end, destination the peer */
	assert_int_equal(ntohs(u.q.r.id.idiag_sport), 40000);
	assert_int_equal(ntohs(u.q.r.id.idiag_dport), 8080);
	inet_pton(AF_INET, "127.0.0.1", &want_src);
	inet_pton(AF_INET, "10.1.2.3", &want_dst);
	assert_int_equal(u.q.r.id.idiag_src[0], want_src);
	assert_int_equal(u.q.r.id.idiag_dst[0], want_dst);
	/* the rest of an IPv4 address is zero, not what the buffer held */
	for (int i = 1; i < 4; i++) {
		assert_int_equal(u.q.r.id.idiag_src[i], 0);
		assert_int_equal(u.q.r.id.idiag_dst[i], 0);
	}
	assert_int_equal(u.q.r.id.idiag_if, 0);
	/* sock_diag_check_cookie: [0] the low 32 bits, [1] the high */
	assert_int_equal(u.q.r.id.idiag_cookie[0], 0x55667788u);
	assert_int_equal(u.q.r.id.idiag_cookie[1], 0x11223344u);
}

static void test_destroy_v6_and_device(void **state)
{
	struct dw_abort_sock s = { .cookie = 5, .family = AF_INET6, .sport = htons(1), .dport = htons(443),
				   .ifindex = 3 };
	union { char buf[DW_SOCKDIAG_REQ_LEN]; struct req q; } u;

	(void)state;
	inet_pton(AF_INET6, "::ffff:127.0.0.1", s.saddr);	/* an IPv4-mapped peer: as the socket has it */
	inet_pton(AF_INET6, "2001:db8::1", s.daddr);
	assert_int_equal(dw_sockdiag_destroy_req(u.buf, &s, 1), sizeof(struct req));
	assert_int_equal(u.q.r.sdiag_family, AF_INET6);
	assert_memory_equal(u.q.r.id.idiag_src, s.saddr, 16);
	assert_memory_equal(u.q.r.id.idiag_dst, s.daddr, 16);
	assert_int_equal(u.q.r.id.idiag_if, 3);
	assert_int_equal(u.q.r.id.idiag_cookie[0], 5);
	assert_int_equal(u.q.r.id.idiag_cookie[1], 0);
}

static void test_destroy_other_family(void **state)
{
	struct dw_abort_sock s = v4_sock();
	char buf[DW_SOCKDIAG_REQ_LEN];

	(void)state;
	s.family = AF_UNIX;
	assert_int_equal(dw_sockdiag_destroy_req(buf, &s, 1), 0);
}

static void test_probe_request(void **state)
{
	union { char buf[DW_SOCKDIAG_REQ_LEN]; struct req q; } u;

	(void)state;
	memset(u.buf, 0xee, sizeof(u.buf));
	assert_int_equal(dw_sockdiag_probe_req(u.buf, 9), sizeof(struct req));
	assert_int_equal(u.q.nlh.nlmsg_type, SOCK_DIAG_BY_FAMILY);
	assert_int_equal(u.q.nlh.nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
	assert_int_equal(u.q.nlh.nlmsg_seq, 9);
	assert_int_equal(u.q.r.sdiag_family, AF_INET);
	assert_int_equal(u.q.r.sdiag_protocol, IPPROTO_TCP);
	/* no state: the dump lists nothing */
	assert_int_equal(u.q.r.idiag_states, 0);
}

/* One answer message of type (NLMSG_ERROR or NLMSG_DONE) carrying err, at buf + off. */
static size_t put(char *buf, size_t off, uint16_t type, uint32_t seq, int err)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)(buf + off);
	size_t len = type == NLMSG_ERROR ? NLMSG_LENGTH(sizeof(struct nlmsgerr)) : NLMSG_LENGTH(sizeof(int));

	memset(nlh, 0, NLMSG_ALIGN(len));
	nlh->nlmsg_len = len;
	nlh->nlmsg_type = type;
	nlh->nlmsg_seq = seq;
	memcpy(NLMSG_DATA(nlh), &err, sizeof(err));
	return off + NLMSG_ALIGN(len);
}

static void test_answers(void **state)
{
	char buf[1024] __attribute__((aligned(4)));
	size_t n;

	(void)state;
	n = put(buf, 0, NLMSG_ERROR, 3, 0);
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), 0);		/* acknowledged */
	n = put(buf, 0, NLMSG_ERROR, 3, -ENOENT);
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), -ENOENT);	/* no such socket (now) */
	n = put(buf, 0, NLMSG_ERROR, 3, -EPERM);
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), -EPERM);	/* no CAP_NET_ADMIN */
	n = put(buf, 0, NLMSG_DONE, 3, 0);
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), 0);		/* a dump's end */
	n = put(buf, 0, NLMSG_DONE, 3, -ENOENT);
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), -ENOENT);	/* a dump that failed */
}

static void test_answers_not_ours(void **state)
{
	char buf[1024] __attribute__((aligned(4)));
	size_t n;

	(void)state;
	n = put(buf, 0, NLMSG_ERROR, 4, -ENOENT);
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), -EPROTO);	/* another request's */
	n = put(buf, 0, NLMSG_ERROR, 3, 0);
	assert_int_equal(dw_sockdiag_answer(buf, n - 1, 3), -EPROTO);	/* cut short */
	assert_int_equal(dw_sockdiag_answer(buf, 0, 3), -EPROTO);
	n = put(buf, 0, NLMSG_ERROR, 3, 5);
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), -EPROTO);	/* no errno is positive */
	/* a message of another type alone: no answer */
	n = put(buf, 0, NLMSG_ERROR, 3, 0);
	((struct nlmsghdr *)buf)->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), -EPROTO);
}

static void test_answer_after_other_messages(void **state)
{
	char buf[1024] __attribute__((aligned(4)));
	size_t n;

	(void)state;
	/* a dump row of the same request, an older request's answer, then the end */
	n = put(buf, 0, NLMSG_ERROR, 3, 0);
	((struct nlmsghdr *)buf)->nlmsg_type = SOCK_DIAG_BY_FAMILY;
	n = put(buf, n, NLMSG_ERROR, 2, -EPERM);
	n = put(buf, n, NLMSG_DONE, 3, 0);
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), 0);
	/* a length that runs past what was read ends the walk */
	n = put(buf, 0, NLMSG_ERROR, 3, 0);
	((struct nlmsghdr *)buf)->nlmsg_len = 4096;
	assert_int_equal(dw_sockdiag_answer(buf, n, 3), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_destroy_v4),
		cmocka_unit_test(test_destroy_v6_and_device),
		cmocka_unit_test(test_destroy_other_family),
		cmocka_unit_test(test_probe_request),
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_answers_not_ours),
		cmocka_unit_test(test_answer_after_other_messages),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
