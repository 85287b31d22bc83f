/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef DW_PRIVS_H
#define DW_PRIVS_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Once everything is loaded and attached, the daemon keeps CAP_BPF (map
 * access) and CAP_PERFMON and drops every other capability, from the
 * bounding set too. netns: also keep CAP_SYS_ADMIN and CAP_SYS_PTRACE, to
 * enter other network namespaces (setns on /proc/PID/ns/net) and run the
 * abort iterator there (enforce = abort, abort_after; doc/enforcement.md).
 * net_admin: also keep CAP_NET_ADMIN, which sock_diag's SOCK_DESTROY checks
 * (the abort path of kernels without bpf_sock_destroy). tls: also keep
 * CAP_SYS_PTRACE (reading other processes' maps and their files through
 * /proc/PID/root) and CAP_SYS_ADMIN (the uprobes attached after an exec),
 * only when the TLS discovery runs (doc/tls.md).
 */
int dw_drop_privileges(bool netns, bool net_admin, bool tls);

/*
 * Makes dirfd itself (name NULL) or the entry name in it owned by root with
 * root_mode, or by root:group with group_mode when group >= 0 (--group).
 * Set explicitly, whatever an earlier daemon or the admin left there.
 * shown names it in the error line. Returns 0, or -1 with errno set.
 */
int dw_own_path(int dirfd, const char *name, const char *shown, int group, mode_t root_mode,
		mode_t group_mode);

/* The gid of a group name (or number) for --group; -1 with a message if there is none. */
int dw_group_parse(const char *name);

#endif /* DW_PRIVS_H */
