/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Aborting connections in the kernel (enforce = abort, abort_after): when
 * to run the abort iterator (bpf/enforce/abort.bpf.c), running it, and telling what
 * it did (syslog, --events). Without the bpf_sock_destroy kfunc the
 * iterator only chooses, and each connection it writes out is destroyed
 * here through sock_diag (sockdiag.h), in the same namespace. The iterator decides per connection from the
 * kernel's own state (the breakers map and its leases, each call's start);
 * this module only decides when it runs:
 * - after every judgement (a poll, a wakeup for a call turning slow, an
 *   operator's override) while a dependency with enforce = abort is open:
 *   the transition's own wakeup, and each poll while open;
 * - when an outstanding call to a dependency with abort_after reaches that
 *   age: the pending table is scanned (in place, no system call per entry)
 *   for the first such deadline, and the daemon's wakeup for calls turning
 *   slow is armed for it too.
 * Nothing runs while the daemon does not: fail-open.
 */
#ifndef DW_ABORT_H
#define DW_ABORT_H

#include <stdbool.h>
#include <stdint.h>
#include "logic/base/ratelimit.h"

struct dw_bpf;
struct dw_deps;

/* Per dependency (index in struct dw_deps): its open period's line, its abort_after rate limit. */
struct dw_abort_dep {
	uint64_t logged_since_ns;	/* breaker.since_ns of the open period already announced */
	uint64_t passed_since_ns;	/* of the open period whose first pass ran */
	struct dw_ratelimit after_lines;	/* abort_after lines: as the breaker alerts' (deps.c) */
};

struct dw_abort {
	bool on;			/* the kernel can abort (the iterator's link exists) */
	bool diag;			/* the sock_diag path: the iterator chooses, sockdiag.c destroys */
	bool diag_warned;		/* a sock_diag destroy failed: logged once */
	uint64_t interval_ns;
	uint64_t *slot_after;		/* per slot: abort_after; UINT64_MAX: unknown */
	unsigned nslots;
	uint64_t min_after_ns;		/* shortest abort_after configured, 0: none */
	uint64_t last_scan_ns;
	uint64_t next_deadline_ns;	/* first known abort_after deadline, 0: none */
	uint64_t eject_pass_ns;		/* the last pass that was for an ejected destination */
	struct dw_abort_dep *per_dep;
	unsigned ndeps;
	uint64_t passes, aborted, failed;
	/* network namespaces: the iterator walks the reader's; others are entered with setns */
	int own_ns_fd;			/* the daemon's own, to come back to; -1: none */
	__u32 own_netns;		/* its inode */
	__u32 *ns;			/* to visit in this pass */
	unsigned nns, ns_cap;
	struct { __u32 netns; int pid; } *ns_pid;	/* where each was found last */
	unsigned nns_pid;
	bool ns_warned;			/* a namespace could not be entered: logged once */
};

/* After the BPF side and the deps are up; warns once if abort must fall back to connect. */
void dw_abort_init(struct dw_abort *a, struct dw_deps *deps, struct dw_bpf *b,
		   uint64_t interval_ns);
/* After a reload: settings per slot are looked up again. */
void dw_abort_reload(struct dw_abort *a, struct dw_deps *deps);
void dw_abort_free(struct dw_abort *a);
/* After a judgement: runs the iterator if an abort breaker is open, a destination ejected or a deadline due. */
void dw_abort_check(struct dw_abort *a, struct dw_deps *deps, struct dw_bpf *b, uint64_t now);
/*
 * Whether the daemon should keep CAP_SYS_ADMIN and CAP_SYS_PTRACE after
 * start: the config asks for aborts and the kernel can do them, and
 * connections in other network namespaces are reached only with setns.
 */
bool dw_abort_wants_netns(const struct dw_abort *a, const struct dw_deps *deps);
/*
 * Whether the daemon should keep CAP_NET_ADMIN after start: aborts go
 * through sock_diag, whose destroy checks it. Whatever the config asks for
 * now: a reload may ask for aborts (or abort_after) later.
 */
bool dw_abort_wants_net_admin(const struct dw_abort *a);
/* When dw_abort_check should run next for abort_after (CLOCK_MONOTONIC), 0: no need. */
uint64_t dw_abort_next(const struct dw_abort *a);

#endif /* DW_ABORT_H */
