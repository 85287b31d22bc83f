/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The hooks depwatch can attach, table-driven: which program feeds which
 * backend, and what is lost without each (the start line, --without,
 * `depwatch run --without list`). probe.c probes them, loader.c attaches them.
 */
#ifndef DW_HOOKS_H
#define DW_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include "logic/base/dwtypes.h"

#define DW_ON_SOCK (1u << DW_BACKEND_SOCK)
#define DW_ON_SYSCALLS (1u << DW_BACKEND_SYSCALLS)

struct dw_prog_spec {
	const char *name;
	const char *tracepoint;	/* its btf_trace_<tp> typedef must be in the kernel's BTF */
	bool required;
	const char *without;	/* what is lost without it */
	unsigned backends;	/* DW_ON_SOCK, DW_ON_SYSCALLS: loaded only for those */
	const char *instead_of;	/* the program it stands in for, not loaded beside it */
};

extern const struct dw_prog_spec dw_prog_specs[];
extern const size_t dw_nprog_specs;

/*
 * The syscalls backend: classic tracepoints syscalls/sys_enter_<name> and
 * sys_exit_<name>. One entry program per argument layout (bpf/core/syscalls.bpf.c),
 * dw_sys_exit for every exit. What a socket can be driven by without these
 * (io_uring, 32-bit processes) is in doc/callmodel.md's support matrix.
 */
struct dw_syscall_spec {
	const char *name;
	const char *enter;	/* the program attached to its entry */
	const char *exit;	/* and to its exit */
	bool required;		/* on every architecture since long before BPF */
};

extern const struct dw_syscall_spec dw_syscall_specs[];
extern const size_t dw_nsyscall_specs;

/* Programs that belong to the syscalls backend only, besides dw_prog_specs. */
extern const char *const dw_syscalls_only[];
extern const size_t dw_nsyscalls_only;

/* Hooks outside the tables above, by the names the start line gives them. */
#define HOOK_CONNECT4 "cgroup/connect4"
#define HOOK_CONNECT6 "cgroup/connect6"
/* an unconnected UDP socket's sendmsg() to a resolver (issue 35) */
#define HOOK_SENDMSG4 "cgroup/sendmsg4"
#define HOOK_SENDMSG6 "cgroup/sendmsg6"
#define HOOK_ADOPT "iter/tcp"
/* the abort iterator (iter/tcp; bpf_sock_destroy, or sock_diag): enforce = abort, abort_after */
#define HOOK_ABORT "sock_destroy"
/* its two ways of destroying, each withheld on its own to test the other */
#define HOOK_ABORT_KFUNC "bpf_sock_destroy"
#define HOOK_ABORT_DIAG "sock_diag_destroy"
/*
 * DNS over UDP as calls (issue 35): where queries and answers are read, off the packet path
 * (issue 46: the sock backend's dw_dns_send on sock_send_length and sk_data_ready's UDP branch;
 * the syscalls backend's system call programs), and the sweep that times queries out
 */
#define HOOK_DNS "dns"
/* a UDP socket's close: its queries still unanswered fail there (issue 48) */
#define HOOK_DNS_CLOSE "cgroup/sock_release"
/* the TLS uprobes and the exec watch that finds them libraries (user/discovery/tls/, doc/tls.md) */
#define HOOK_TLS "tls"
/* the cause parts.c gives when the kernel refused them (tests/unit/test_hooks.c checks the whole text) */
#define HOOK_TLS_REFUSED "the kernel refused the TLS uprobe programs"
/* dw_prog_specs' HTTP/2 receive program (the sock backend's copy of a receive's bytes) */
#define HOOK_H2_COPY "skb_copy_datagram_iovec"

struct dw_other_hook {
	const char *name;
	const char *without;	/* NULL: depwatch cannot run without it */
};

/* The hooks outside the two tables above; read by name (dw_other_hook_loss), never by row. */
extern const struct dw_other_hook dw_other_hooks[];
extern const size_t dw_nother_hooks;

/*
 * What is lost without one of dw_other_hooks, looked up by its name (HOOK_TLS, ...): a
 * row's index moves when a feature adds rows before it (issue 47: DNS's rows made [6],
 * once TLS's, the sendmsg4 row). NULL: no such hook, or depwatch cannot run without it.
 */
const char *dw_other_hook_loss(const char *hook);

/*
 * Why one of dw_other_hooks (or dw_prog_specs' tracepoints) is off, as the start line and
 * status say it: "CAUSE: LOSS", with the hook's own LOSS looked up by its name
 * (dw_other_hook_loss, then the tracepoints'); cause NULL: "absent (--without): LOSS".
 */
void dw_hook_off_why(char *buf, size_t len, const char *hook, const char *cause);

/*
 * What is lost without hook on this backend; NULL if depwatch cannot run
 * without it, or it is no hook of this backend (*known false).
 */
const char *dw_hook_loss(int backend, const char *hook, bool *known);

/* The hook names --without accepts, one per line with what is lost without it. */
void dw_bpf_list_hooks(FILE *out);

/* "sock" or "syscalls". */
const char *dw_backend_name(int backend);
/* 0 if name is a backend (*backend set), -EINVAL if not. */
int dw_backend_parse(const char *name, int *backend);

#endif /* DW_HOOKS_H */
