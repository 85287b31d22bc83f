// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The table of hooks (hooks.h) and the backends' names. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "kernel/bpfstate.h"
#include "kernel/hooks.h"

/*
 * On x86-64, by default: dw_recv reads an h2c connection's received bytes
 * at the read's end (bpf/h2/streams.bpf.h, h2_on_read: the system call's
 * buffers from its saved registers), and dw_h2_copy, a program on every
 * copy of every socket, is not loaded (issue 36). Built with
 * -DDW_H2_AT_COPY (make CPPFLAGS=-DDW_H2_AT_COPY), and elsewhere than
 * x86-64, the copy program reads them, as before.
 */
#if defined(__x86_64__) && !defined(DW_H2_AT_COPY)
#define DW_RECV_READS_H2 "dw_h2_copy"
#else
#define DW_RECV_READS_H2 NULL
#endif

const struct dw_prog_spec dw_prog_specs[] = {
	{ "dw_sendmsg", "tcp_sendmsg_locked", false,
	  "calls start when their send returns (sock_send_length): an answer processed inside the send comes first, and the call is timed short or merges with the next",
	  DW_ON_SOCK, "dw_send" },
	{ "dw_send", "sock_send_length", true, NULL, DW_ON_SOCK, NULL },
	{ "dw_recv", "sock_recv_length", true, NULL, DW_ON_SOCK, DW_RECV_READS_H2 },
	{ "dw_set_state", "inet_sock_set_state", true, NULL, DW_ON_SOCK | DW_ON_SYSCALLS, NULL },
	{ "dw_data_ready", "sk_data_ready", false, "calls complete at the receive, not at data arrival",
	  DW_ON_SOCK, NULL },
	{ "dw_retransmit", "tcp_retransmit_skb", false, "retransmits are not counted",
	  DW_ON_SOCK | DW_ON_SYSCALLS, NULL },
	{ "dw_h2_copy", "skb_copy_datagram_iovec", false,
	  "HTTP/2 calls are not timed per stream: h2c connections are timed as multiplexed bursts",
	  DW_ON_SOCK, NULL },
};

const struct dw_syscall_spec dw_syscall_specs[] = {
	{ "sendto", "dw_sys_enter_sendto", "dw_sys_exit_send", true },
	{ "sendmsg", "dw_sys_enter_sendmsg", "dw_sys_exit_send", true },
	{ "sendmmsg", "dw_sys_enter_sendmmsg", "dw_sys_exit_send", false },
	{ "write", "dw_sys_enter_send_buf", "dw_sys_exit_send", true },
	{ "writev", "dw_sys_enter_send_iov", "dw_sys_exit_send", false },
	{ "pwritev2", "dw_sys_enter_send_iov", "dw_sys_exit_send", false },
	{ "sendfile64", "dw_sys_enter_send", "dw_sys_exit_send", false },
	{ "recvfrom", "dw_sys_enter_recvfrom", "dw_sys_exit_recv", true },
	{ "recvmsg", "dw_sys_enter_recvmsg", "dw_sys_exit_recv", true },
	{ "recvmmsg", "dw_sys_enter_recv_flags3", "dw_sys_exit_recv", false },
	{ "read", "dw_sys_enter_read", "dw_sys_exit_recv", true },
	{ "readv", "dw_sys_enter_readv", "dw_sys_exit_recv", false },
	{ "preadv2", "dw_sys_enter_readv", "dw_sys_exit_recv", false },
	{ "splice", "dw_sys_enter_splice", "dw_sys_exit", false },
};

const char *const dw_syscalls_only[] = {
	"dw_sys_enter_send", "dw_sys_enter_send_buf", "dw_sys_enter_sendto", "dw_sys_enter_send_iov",
	"dw_sys_enter_sendmsg", "dw_sys_enter_sendmmsg",
	"dw_sys_enter_read", "dw_sys_enter_readv", "dw_sys_enter_recvfrom", "dw_sys_enter_recv_flags3",
	"dw_sys_enter_recvmsg", "dw_sys_enter_splice", "dw_sys_exit", "dw_sys_exit_send", "dw_sys_exit_recv",
};



const struct dw_other_hook dw_other_hooks[] = {
	{ HOOK_CONNECT4, "IPv4 connects are not refused while a breaker is open (breakers are still judged)" },
	{ HOOK_CONNECT6, "IPv6 connects are not refused while a breaker is open (breakers are still judged)" },
	{ HOOK_ADOPT, "connections open before the start are not watched, only new ones" },
	{ HOOK_ABORT, "enforce = abort falls back to connect, abort_after aborts nothing" },
	{ HOOK_ABORT_KFUNC, "connections are aborted through sock_diag's SOCK_DESTROY instead (the daemon keeps CAP_NET_ADMIN)" },
	{ HOOK_ABORT_DIAG, "without bpf_sock_destroy too, enforce = abort falls back to connect" },
	{ HOOK_SENDMSG4, "IPv4 DNS queries sent on unconnected UDP sockets are not refused while a resolver's breaker is open" },
	{ HOOK_SENDMSG6, "IPv6 DNS queries sent on unconnected UDP sockets are not refused while a resolver's breaker is open" },
	{ HOOK_DNS, "DNS queries over UDP are not calls" },
	{ HOOK_DNS_CLOSE, "a DNS query whose socket closes unanswered fails at its dns_timeout, not at the close" },
	{ HOOK_TLS, "TLS libraries get no uprobes: calls over TLS are timed from their records (doc/tls.md)" },
};

#define NSPECS(a) (sizeof(a) / sizeof(a[0]))
/* + the four cgroup enforcement hooks, iter/tcp, sock_destroy, DNS's two, tls, and room */
_Static_assert(NSPECS(dw_prog_specs) + NSPECS(dw_syscall_specs) + 10 <= DW_MAX_PROGS,
	       "DW_MAX_PROGS too small");


const size_t dw_nprog_specs = NSPECS(dw_prog_specs);
const size_t dw_nsyscall_specs = NSPECS(dw_syscall_specs);
const size_t dw_nsyscalls_only = NSPECS(dw_syscalls_only);
const size_t dw_nother_hooks = NSPECS(dw_other_hooks);

/* A row of dw_other_hooks by its name, or NULL. */
static const struct dw_other_hook *other_hook(const char *name)
{
	for (size_t i = 0; i < dw_nother_hooks; i++)
		if (!strcmp(name, dw_other_hooks[i].name))
			return &dw_other_hooks[i];
	return NULL;
}

const char *dw_hook_loss(int backend, const char *hook, bool *known)
{
	static char buf[96];
	const struct dw_other_hook *other;

	*known = true;
	for (size_t i = 0; i < dw_nprog_specs; i++)
		if ((dw_prog_specs[i].backends & (1u << backend)) && !strcmp(hook, dw_prog_specs[i].tracepoint))
			return dw_prog_specs[i].without;
	for (size_t i = 0; backend == DW_BACKEND_SYSCALLS && i < dw_nsyscall_specs; i++)
		if (!strncmp(hook, "syscalls/", 9) && !strcmp(hook + 9, dw_syscall_specs[i].name)) {
			if (dw_syscall_specs[i].required)
				return NULL;
			snprintf(buf, sizeof(buf), "calls made with %s() are not seen", dw_syscall_specs[i].name);
			return buf;
		}
	if ((other = other_hook(hook)))
		return other->without;
	*known = false;
	return NULL;
}

const char *dw_other_hook_loss(const char *hook)
{
	const struct dw_other_hook *other = other_hook(hook);

	return other ? other->without : NULL;
}

void dw_hook_off_why(char *buf, size_t len, const char *hook, const char *cause)
{
	const char *loss = dw_other_hook_loss(hook);

	for (size_t i = 0; !loss && i < dw_nprog_specs; i++)
		if (!strcmp(hook, dw_prog_specs[i].tracepoint))
			loss = dw_prog_specs[i].without;

	snprintf(buf, len, "%s: %s", cause ? cause : "absent (--without)", loss ? loss : hook);
}

void dw_bpf_list_hooks(FILE *out)
{
	bool known;

	for (int backend = DW_BACKEND_SOCK; backend <= DW_BACKEND_SYSCALLS; backend++) {
		const char *names[NSPECS(dw_prog_specs) + NSPECS(dw_syscall_specs) + NSPECS(dw_other_hooks)];
		char sys[NSPECS(dw_syscall_specs)][32];
		size_t n = 0;

		for (size_t i = 0; i < dw_nprog_specs; i++)
			names[n++] = dw_prog_specs[i].tracepoint;
		for (size_t i = 0; backend == DW_BACKEND_SYSCALLS && i < dw_nsyscall_specs; i++) {
			snprintf(sys[i], sizeof(sys[i]), "syscalls/%s", dw_syscall_specs[i].name);
			names[n++] = sys[i];
		}
		for (size_t i = 0; i < dw_nother_hooks; i++)
			names[n++] = dw_other_hooks[i].name;
		fprintf(out, "backend %s:\n", dw_backend_name(backend));
		for (size_t i = 0; i < n; i++) {
			const char *loss = dw_hook_loss(backend, names[i], &known);

			if (known)
				fprintf(out, "  %-26s %s\n", names[i], loss ? loss : "required: depwatch refuses to run without it");
		}
	}
}

const char *dw_backend_name(int backend)
{
	return backend == DW_BACKEND_SYSCALLS ? "syscalls" : "sock";
}

int dw_backend_parse(const char *name, int *backend)
{
	if (!strcmp(name, "sock"))
		*backend = DW_BACKEND_SOCK;
	else if (!strcmp(name, "syscalls"))
		*backend = DW_BACKEND_SYSCALLS;
	else
		return -EINVAL;
	return 0;
}

